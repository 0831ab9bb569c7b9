#include "io/work_tree.h"

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

fs::path work_tree_root(const fs::path& start) {
  std::error_code ec;
  fs::path dir = normal_absolute(start);
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  for (;;) {
    if (fs::exists(dir / ".git", ec)) return dir;
    if (dir == dir.root_path() || !dir.has_relative_path()) break;
    dir = dir.parent_path();
  }
  return normal_absolute(fs::current_path(ec));
}

std::string relative_to(const fs::path& path, const fs::path& root) {
  fs::path rel = normal_absolute(path).lexically_relative(normal_absolute(root));
  if (rel.empty()) return normal_absolute(path).generic_string();  // another root name (not on POSIX)
  return rel.generic_string();
}

}  // namespace trainc
