#include "io/work_tree.h"

#include <unistd.h>

#include <fstream>

#include <doctest/doctest.h>

namespace trainc {

namespace fs = std::filesystem;

namespace {

/// A fresh folder under /tmp, removed (and the current directory restored) at the end of the test.
struct Scratch {
  fs::path root, before = fs::current_path();
  Scratch() {
    char tmpl[] = "/tmp/trainc-worktree-XXXXXX";
    root = fs::canonical(mkdtemp(tmpl));
  }
  ~Scratch() {
    fs::current_path(before);
    fs::remove_all(root);
  }
  void file(const fs::path& rel) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << "name: a\n";
  }
};

}  // namespace

TEST_CASE("the git work tree is the nearest folder above holding .git, a folder or a file") {
  Scratch s;
  fs::create_directories(s.root / "repo/.git");
  s.file("repo/examples/a/spec.yaml");
  fs::create_directories(s.root / "linked/sub");
  std::ofstream(s.root / "linked/.git") << "gitdir: /elsewhere\n";  // a worktree or submodule: .git is a file
  CHECK(git_work_tree(s.root / "repo/examples/a/spec.yaml") == s.root / "repo");
  CHECK(git_work_tree(s.root / "repo/examples/a") == s.root / "repo");
  CHECK(git_work_tree(s.root / "repo/examples/a/") == s.root / "repo");
  CHECK(git_work_tree(s.root / "repo/not-yet/out") == s.root / "repo");
  CHECK(git_work_tree(s.root / "linked/sub/x.yaml") == s.root / "linked");
  fs::current_path(s.root / "repo/examples");
  CHECK(git_work_tree("a/spec.yaml") == s.root / "repo");
  CHECK(relative_to("a/spec.yaml", *git_work_tree("a/spec.yaml")) == "examples/a/spec.yaml");
  CHECK(relative_to("../out", s.root / "repo") == "out");
  CHECK(relative_to("./a/../a/spec.yaml", s.root / "repo") == "examples/a/spec.yaml");
  CHECK(relative_to("../../elsewhere", s.root / "repo") == "../elsewhere");
}

TEST_CASE("inside one git work tree, paths are recorded relative to its root, whatever the current directory") {
  Scratch s;
  fs::create_directories(s.root / "repo/.git");
  s.file("repo/examples/a/spec.yaml");
  for (const fs::path cwd : {s.root / "repo", s.root / "repo/examples/a", s.root}) {
    CAPTURE(cwd);
    fs::current_path(cwd);
    const RecordRoot r = record_root(s.root / "repo/examples/a/spec.yaml", s.root / "repo/golden");
    CHECK(r.dir == s.root / "repo");
    CHECK(r.outside_repository.empty());
    CHECK(find_recorded_spec(s.root / "repo/golden", "examples/a/spec.yaml") == s.root / "repo/examples/a/spec.yaml");
    CHECK_FALSE(find_recorded_spec(s.root / "repo/golden", "examples/gone/spec.yaml"));
  }
}

TEST_CASE("outside a git work tree, paths are recorded relative to the nearest folder holding spec and output") {
  Scratch s;
  s.file("a/specs/x/spec.yaml");
  const fs::path spec = s.root / "a/specs/x/spec.yaml";
  // Two current directories, one inside the other, and a third elsewhere: the same root.
  for (const fs::path cwd : {s.root / "a", s.root / "a/specs", s.root}) {
    CAPTURE(cwd);
    fs::current_path(cwd);
    const RecordRoot r = record_root(fs::relative(spec), fs::relative(s.root / "a/out"));
    CHECK(r.dir == s.root / "a");
    CHECK(r.outside_repository == "neither the spec nor the output folder is inside a git work tree");
    CHECK(relative_to(spec, r.dir) == "specs/x/spec.yaml");
    CHECK(find_recorded_spec(fs::relative(s.root / "a/out"), "specs/x/spec.yaml") == spec);
  }
  // The output beside the spec: the spec's folder.
  CHECK(record_root(spec, s.root / "a/specs/x/out").dir == s.root / "a/specs/x");
  CHECK(find_recorded_spec(s.root / "a/specs/x/out", "spec.yaml") == spec);
  // A file found under the recorded name is taken only if it would record that name: from a/specs,
  // "x/spec.yaml" is a/specs/x/spec.yaml, but compiled into a/specs/x/out that spec records "spec.yaml".
  CHECK_FALSE(find_recorded_spec(s.root / "a/specs/x/out", "x/spec.yaml"));
}

TEST_CASE("a spec and an output folder in different places: no repository, the common ancestor") {
  Scratch s;
  fs::create_directories(s.root / "repo/.git");
  s.file("repo/examples/a/spec.yaml");
  const RecordRoot r = record_root(s.root / "repo/examples/a/spec.yaml", s.root / "tmp/x");
  CHECK(r.dir == s.root);
  CHECK(r.outside_repository.find("is outside the git work tree") != std::string::npos);
  CHECK(find_recorded_spec(s.root / "tmp/x", "repo/examples/a/spec.yaml") == s.root / "repo/examples/a/spec.yaml");
  fs::create_directories(s.root / "other/.git");
  CHECK(record_root(s.root / "repo/examples/a/spec.yaml", s.root / "other/out").outside_repository.find(
            "different git work trees") != std::string::npos);
}

}  // namespace trainc
