#pragma once
// Paths as trainc records them in its output: relative to the root of the git work tree holding
// them, so the output is the same whatever the current directory.
#include <filesystem>
#include <string>

namespace trainc {

/// The nearest folder at or above `start`'s folder (or `start` itself, when it is a folder) that
/// holds a `.git` folder or file; the current directory when there is none.
std::filesystem::path work_tree_root(const std::filesystem::path& start);

/// `path` relative to `root`, '/'-separated (both made absolute and normalized first, with symlinks
/// in the folders above them resolved).
std::string relative_to(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace trainc
