#pragma once
// The only code that writes output to disk: a compiled folder is written to a temporary folder
// and renamed into place, and only over a folder trainc made itself.
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/output_sink.h"
#include "io/drift_summary.h"

namespace trainc {

inline constexpr std::string_view kManifestName = ".trainc-manifest";

/// Adds .trainc-manifest, listing every file of the folder; its presence marks a folder as trainc's.
/// `source` (the spec, relative to the root of its git work tree) is recorded in a `# source: `
/// line when not empty, so that a folder whose spec was deleted can be found.
void add_manifest(OutputSink& files, const std::string& source = "");

/// The spec recorded in a .trainc-manifest's text; "" when none is recorded.
std::string manifest_source(const std::string& manifest_text);

/// A folder directly under an output root that trainc made (it holds .trainc-manifest).
struct OutputFolder {
  std::string name;
  std::string source;  ///< as recorded in its manifest; "" for none
};

/// trainc's folders directly under `root`, by name; none when `root` does not exist.
std::vector<OutputFolder> output_folders(const std::filesystem::path& root);

/// Something under an output root that trainc did not generate.
struct UnknownEntry {
  std::string path;   ///< relative to the root: a file in one of trainc's folders, or an entry of the root
  std::string first;  ///< for a folder that is not trainc's: the first file in it ("" when empty)
  size_t files = 0;   ///< how many files it holds (1 for a file)
};

/// What `root` holds that trainc did not generate: every entry that is not one of its folders
/// (a symbolic link to one included), and in each of its folders not named in `compared` (whose
/// extra files compare_tree reports), every file its manifest does not list.
std::vector<UnknownEntry> unknown_entries(const std::filesystem::path& root, const std::set<std::string>& compared);

/// Writes `files` to `root/name`, replacing a previous trainc output there. Returns an error
/// message (and writes nothing) when the folder holds anything trainc did not generate. The files
/// go to a temporary folder beside it (".NAME.tmp-PID") that is then exchanged with the previous
/// tree atomically, so an interrupted compile leaves `root/name` either as it was or complete; the
/// temporaries an interrupted compile left are cleaned up by the next write of `name`.
std::optional<std::string> write_tree(const std::filesystem::path& root, const std::string& name,
                                      const OutputSink& files);

/// Writes one generated file (`trainc graph -o`) through a temporary file renamed into place. An
/// existing file is replaced only when its text holds `marker` (trainc wrote it); otherwise an
/// error message is returned and nothing is written.
std::optional<std::string> write_generated_file(const std::filesystem::path& path, const std::string& content,
                                                const std::string& marker);

/// The files of `root/name` that differ from `files` (missing, changed, or not generated), in path
/// order; empty when identical. Sets `error` when `root/name` is not a folder.
std::vector<FileDrift> compare_tree(const std::filesystem::path& root, const std::string& name, const OutputSink& files,
                                    std::string& error);

/// A unified diff of `drift` (from compare_tree), labelled with paths under `root/name`.
std::string unified_diff(const std::filesystem::path& root, const std::string& name,
                         const std::vector<FileDrift>& drift);

/// A unified diff from `root/name` to `files`; empty when identical. Sets `error` when `root/name`
/// cannot be read.
std::string diff_tree(const std::filesystem::path& root, const std::string& name, const OutputSink& files,
                      std::string& error);

}  // namespace trainc
