#pragma once
// Front end for Jsonnet specs, through libjsonnet. Imports are jailed to the spec's own folder and
// the stdlib embedded in the binary; Jsonnet errors become diagnostics.
// One file pair per job behind it: jsonnet_vm (libjsonnet and its import jail), jsonnet_sandbox (the
// evaluation server, a child process), jsonnet_prefetch (specs evaluated ahead) and
// jsonnet_positions (where each key was written).
#include <optional>
#include <vector>

#include "frontend/document.h"

namespace trainc {

/// Both functions fork (the Jsonnet servers): call them from one thread only, never while holding
/// base/background.h's fork gate.
///
/// Evaluates `file` and parses its JSON output. Positions are recovered by finding each key's
/// first occurrence in the spec's text after its parent's (best effort: values computed in
/// imported files point at the nearest enclosing key written in the spec).
std::optional<Document> load_jsonnet(SourcePtr file, Diagnostics& diags);

/// Starts evaluating these Jsonnet specs ahead, in order, in child processes side by side (as many
/// as the machine has cores, at most 4); load_jsonnet of one of them then takes its result. Call it
/// first, before trainc's own memory grows: the children are forked from it.
void expect_jsonnet(const std::vector<SourcePtr>& files);

}  // namespace trainc
