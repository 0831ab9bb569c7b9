#pragma once
// A readable summary of how an output folder on disk differs from what its spec compiles to, shown
// before the unified diff: Kubernetes objects matched by kind, namespace and name with their changed
// leaf fields, Terraform blocks added, removed or changed, and other files by changed line count.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainc {

/// One file that differs between an output folder and a fresh compile.
struct FileDrift {
  std::string path;                   ///< relative to the output folder, '/'-separated
  std::optional<std::string> before;  ///< on disk; nullopt when the file is missing
  std::optional<std::string> after;   ///< compiled; nullopt when the spec no longer generates it
};

/// One line per change, without indentation or newline, e.g.
///   "~ Job mnist-train: spec.parallelism 4 → 8", "+ ServiceAccount mnist-runner",
///   "- ConfigMap old-entry", "+ terraform/node_pools.tf: node pool tpu-v5e", "~ README.md (3 lines)".
/// Objects in k8s/*.yaml are matched across the folder's files (an object that moved between files
/// is not a change); at most `max_per_object` changed fields are listed per object or file, then
/// "… and N more".
std::vector<std::string> summarize_drift(const std::vector<FileDrift>& files, size_t max_per_object = 5);

/// How many lines differ between two texts: per run of changed lines, the larger of the lines
/// removed and added (a line edited in place counts once).
size_t changed_lines(std::string_view before, std::string_view after);

}  // namespace trainc
