#pragma once
// Front end for Jsonnet specs, through libjsonnet. Imports are jailed to the spec's own folder and
// the stdlib embedded in the binary; Jsonnet errors become diagnostics.
#include <optional>

#include "frontend/document.h"

namespace trainc {

/// Evaluates `file` and parses its JSON output. Positions are recovered by finding each key's
/// first occurrence in the spec's text after its parent's (best effort: values computed in
/// imported files point at the nearest enclosing key written in the spec).
std::optional<Document> load_jsonnet(SourcePtr file, Diagnostics& diags);

/// Jsonnet specs are evaluated in one child process per invocation, started with the first spec.
/// Starting it before anything else (when a Jsonnet spec is coming) lets its start overlap the
/// rest and keeps trainc's later memory out of the child's copy-on-write share.
void start_jsonnet_server();

}  // namespace trainc
