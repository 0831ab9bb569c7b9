#pragma once
// The Jsonnet VM: one spec evaluated in this process through libjsonnet, its imports jailed to the
// spec's own folder and the stdlib embedded in the binary; and libjsonnet's error text read back
// as a diagnostic.
#include <filesystem>
#include <string>

#include "base/diagnostics.h"
#include "base/source.h"

namespace trainc::jsonnet {

/// What evaluating a spec gave: its JSON, or libjsonnet's error text, or why the evaluation was
/// stopped (a limit of limits.h; only the sandbox, jsonnet_sandbox.h, stops one).
struct Evaluation {
  enum class Outcome { json, jsonnet_error, stopped } outcome = Outcome::stopped;
  std::string text;
};

/// Evaluates `text`, read from `name`, with imports jailed to `root`. Only ever called in the
/// Jsonnet server (jsonnet_sandbox.h): libjsonnet has no bound of its own on time or memory.
Evaluation evaluate_here(const std::string& name, const std::string& text, const std::filesystem::path& root);

/// Turns libjsonnet's error text into one diagnostic at the first location it names.
void report_error(const SourceFile& file, const std::string& raw, Diagnostics& diags);

}  // namespace trainc::jsonnet
