#pragma once
// Paths as trainc records them in its output (the manifest's source, the paths CI pipelines and
// Dockerfile comments name): relative to a folder that the current directory does not choose, so
// the same spec and output folder give the same bytes from wherever trainc runs.
#include <filesystem>
#include <optional>
#include <string>

namespace trainc {

/// The nearest folder at or above `start`'s folder (or `start` itself, when it is a folder) that
/// holds a `.git` folder or file; nullopt when there is none.
std::optional<std::filesystem::path> git_work_tree(const std::filesystem::path& start);

/// The folder paths are recorded relative to, for `spec` compiled into the output root `out_root`.
struct RecordRoot {
  std::filesystem::path dir;  ///< absolute
  /// Why a pipeline could not name the spec and the output as paths of one repository ("" when it
  /// can: both are inside the same git work tree).
  std::string outside_repository;
};

/// The git work tree holding both `spec` and `out_root`; when no one work tree holds both, the
/// nearest folder that does (their common ancestor), and `outside_repository` says why.
RecordRoot record_root(const std::filesystem::path& spec, const std::filesystem::path& out_root);

/// The spec a folder of `out_root` records as `source` (relative to its RecordRoot), when it still
/// exists: the file that, compiled into `out_root`, would record that same source. nullopt when no
/// such file exists.
std::optional<std::filesystem::path> find_recorded_spec(const std::filesystem::path& out_root,
                                                        const std::string& source);

/// `path` relative to `root`, '/'-separated (both made absolute and normalized first, with symlinks
/// in the folders above them resolved).
std::string relative_to(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace trainc
