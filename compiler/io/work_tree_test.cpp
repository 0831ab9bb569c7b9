#include "io/work_tree.h"

#include <unistd.h>

#include <fstream>

#include <doctest/doctest.h>

namespace trainc {

namespace fs = std::filesystem;

TEST_CASE("paths are recorded relative to the git work tree, whatever the current directory") {
  char tmpl[] = "/tmp/trainc-worktree-XXXXXX";
  fs::path root = fs::canonical(mkdtemp(tmpl));
  fs::create_directories(root / "repo/.git");
  fs::create_directories(root / "repo/examples/a");
  fs::create_directories(root / "linked/sub");
  std::ofstream(root / "linked/.git") << "gitdir: /elsewhere\n";  // a worktree or submodule: .git is a file
  std::ofstream(root / "repo/examples/a/spec.yaml") << "name: a\n";

  const fs::path before = fs::current_path();
  CHECK(work_tree_root(root / "repo/examples/a/spec.yaml") == root / "repo");
  CHECK(work_tree_root(root / "repo/examples/a") == root / "repo");
  CHECK(work_tree_root(root / "repo/examples/a/") == root / "repo");
  CHECK(work_tree_root(root / "linked/sub/x.yaml") == root / "linked");

  fs::current_path(root / "repo/examples");
  CHECK(work_tree_root("a/spec.yaml") == root / "repo");
  CHECK(relative_to("a/spec.yaml", work_tree_root("a/spec.yaml")) == "examples/a/spec.yaml");
  CHECK(relative_to("../out", root / "repo") == "out");
  CHECK(relative_to("./a/../a/spec.yaml", root / "repo") == "examples/a/spec.yaml");
  CHECK(relative_to("../../elsewhere", root / "repo") == "../elsewhere");

  // No .git above: relative to the current directory.
  fs::create_directories(root / "plain/x");
  fs::current_path(root / "plain");
  CHECK(work_tree_root("x/spec.yaml") == root / "plain");
  CHECK(relative_to("x/spec.yaml", work_tree_root("x/spec.yaml")) == "x/spec.yaml");

  fs::current_path(before);
  fs::remove_all(root);
}

}  // namespace trainc
