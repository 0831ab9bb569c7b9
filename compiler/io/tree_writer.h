#pragma once
// The only code that writes output to disk: a compiled folder is written to a temporary folder
// and renamed into place, and only over a folder trainc made itself.
#include <filesystem>
#include <optional>
#include <string>

#include "emit/output_sink.h"

namespace trainc {

inline constexpr std::string_view kManifestName = ".trainc-manifest";

/// Adds .trainc-manifest, listing every file of the folder; its presence marks a folder as trainc's.
void add_manifest(OutputSink& files);

/// Writes `files` to `root/name`, replacing a previous trainc output there. Returns an error
/// message (and writes nothing) when the folder holds anything trainc did not generate.
std::optional<std::string> write_tree(const std::filesystem::path& root, const std::string& name,
                                      const OutputSink& files);

/// A unified diff from `root/name` to `files`; empty when identical. Sets `error` when `root/name`
/// cannot be read.
std::string diff_tree(const std::filesystem::path& root, const std::string& name, const OutputSink& files,
                      std::string& error);

}  // namespace trainc
