#include "io/work_tree.h"

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace trainc {

/// Absolute and normalized, with symlinks in the folders above resolved (so that the current
/// directory, which the system reports resolved, and a path given through a symlink agree) but not
/// the last element itself.
static fs::path normal_absolute(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p.empty() ? fs::path(".") : p, ec);
  if (ec) abs = p;
  abs = abs.lexically_normal();
  // "/a/b/" normalizes to "/a/b/" (an empty last element); drop it so parent_path() walks up.
  if (!abs.has_filename() && abs.has_relative_path()) abs = abs.parent_path();
  if (!abs.has_relative_path()) return abs;
  fs::path parent = fs::weakly_canonical(abs.parent_path(), ec);
  return ec ? abs : parent / abs.filename();
}

/// `start` when it is a folder, else the folder holding it (which need not exist yet).
static fs::path folder_of(const fs::path& start) {
  std::error_code ec;
  fs::path dir = normal_absolute(start);
  return fs::is_directory(dir, ec) ? dir : dir.parent_path();
}

std::optional<fs::path> git_work_tree(const fs::path& start) {
  std::error_code ec;
  for (fs::path dir = folder_of(start);; dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) return dir;
    if (dir == dir.root_path() || !dir.has_relative_path()) return std::nullopt;
  }
}

/// The deepest folder holding both `a` and `b` (absolute, normalized folders).
static fs::path common_ancestor(const fs::path& a, const fs::path& b) {
  fs::path out;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end() && *i == *j; ++i, ++j) out /= *i;
  return out;
}

RecordRoot record_root(const fs::path& spec, const fs::path& out_root) {
  const fs::path spec_dir = normal_absolute(spec).parent_path();
  const fs::path out_dir = normal_absolute(out_root);
  const auto spec_tree = git_work_tree(spec_dir);
  const auto out_tree = git_work_tree(out_dir);
  if (spec_tree && out_tree && *spec_tree == *out_tree) return {*spec_tree, ""};
  std::string why;
  if (!spec_tree && !out_tree)
    why = "neither the spec nor the output folder is inside a git work tree";
  else if (spec_tree && !out_tree)
    why = fmt::format("the output folder '{}' is outside the git work tree '{}' that holds the spec",
                      out_dir.generic_string(), spec_tree->generic_string());
  else if (!spec_tree)
    why = fmt::format("the spec is outside the git work tree '{}' that holds the output folder",
                      out_tree->generic_string());
  else
    why = fmt::format("the spec and the output folder are in different git work trees ('{}' and '{}')",
                      spec_tree->generic_string(), out_tree->generic_string());
  return {common_ancestor(spec_dir, out_dir), why};
}

std::optional<fs::path> find_recorded_spec(const fs::path& out_root, const std::string& source) {
  if (source.empty()) return std::nullopt;
  // The record root holds the output root: it is the output root's git work tree, or the output
  // root itself or a folder above it.
  std::error_code ec;
  const fs::path out_dir = normal_absolute(out_root);
  for (fs::path dir = out_dir;; dir = dir.parent_path()) {
    const fs::path spec = (dir / source).lexically_normal();
    if (fs::is_regular_file(spec, ec) && relative_to(spec, record_root(spec, out_dir).dir) == source) return spec;
    if (dir == dir.root_path() || !dir.has_relative_path()) return std::nullopt;
  }
}

std::string relative_to(const fs::path& path, const fs::path& root) {
  fs::path rel = normal_absolute(path).lexically_relative(normal_absolute(root));
  if (rel.empty()) return normal_absolute(path).generic_string();  // another root name (not on POSIX)
  return rel.generic_string();
}

}  // namespace trainc
