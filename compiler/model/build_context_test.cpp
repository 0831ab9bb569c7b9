#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "model/build_context.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("trainc-build-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel, std::ios::binary) << text;
  }
};

std::string tag_of(const fs::path& dir, const Build& b, std::string_view tmpl = "FROM @BASE@") {
  auto r = build_tag(dir, b, tmpl);
  if (auto* e = std::get_if<BuildInputError>(&r)) FAIL(e->message);
  return std::get<std::string>(r);
}

Build generated() {
  Build b;
  b.name = "train";
  b.context = ".";
  b.base = "python:3.12-slim";
  b.requirements = "requirements.txt";
  b.copy = {"train.py", "conf"};
  b.ptr = "/pipeline/0/build";
  return b;
}

TEST_CASE("build tag: a digest of what a generated build reads, and of nothing else") {
  TempDir d;
  d.write("requirements.txt", "torch==2.5.1\n");
  d.write("train.py", "print(1)\n");
  d.write("conf/a.yaml", "a: 1\n");
  d.write("notes.md", "not copied\n");
  const Build b = generated();
  const std::string t0 = tag_of(d.path, b);
  CHECK(t0.size() == 18);
  CHECK(t0.rfind("c-", 0) == 0);
  CHECK(tag_of(d.path, b) == t0);  // stable
  d.write("notes.md", "edited, still not copied\n");
  CHECK(tag_of(d.path, b) == t0);
  d.write("conf/a.yaml", "a: 2\n");  // a file inside a copied folder
  const std::string t1 = tag_of(d.path, b);
  CHECK(t1 != t0);
  d.write("requirements.txt", "torch==2.5.0\n");
  CHECK(tag_of(d.path, b) != t1);
  // The template and the settings count too.
  CHECK(tag_of(d.path, b, "FROM @BASE@\nUSER 1000") != tag_of(d.path, b));
  Build other = b;
  other.workdir = "/app";
  CHECK(tag_of(d.path, other) != tag_of(d.path, b));
}

TEST_CASE("build tag: a user's Dockerfile digests the whole context but not .git or trainc's output") {
  TempDir d;
  d.write("Dockerfile", "FROM python:3.12-slim\nCOPY . /app\n");
  d.write("app.py", "print(1)\n");
  Build b;
  b.name = "app";
  b.context = ".";
  b.dockerfile = "Dockerfile";
  const std::string t0 = tag_of(d.path, b, "");
  d.write(".git/HEAD", "ref: refs/heads/main\n");
  d.write("out/app/.trainc-manifest", "# trainc\n");
  d.write("out/app/k8s/job.yaml", "kind: Job\n");
  CHECK(tag_of(d.path, b, "") == t0);
  d.write("extra.txt", "x\n");
  CHECK(tag_of(d.path, b, "") != t0);
}

TEST_CASE("build tag: missing inputs are reported at their spec key") {
  TempDir d;
  d.write("train.py", "print(1)\n");
  Build b = generated();
  b.requirements.clear();
  b.copy = {"train.py", "trian.py"};
  auto r = build_tag(d.path, b, "");
  REQUIRE(std::holds_alternative<BuildInputError>(r));
  CHECK(std::get<BuildInputError>(r).ptr == "/pipeline/0/build/copy/1");
  CHECK(std::get<BuildInputError>(r).message.find("did you mean 'train.py'") != std::string::npos);
  b.context = "nowhere";
  r = build_tag(d.path, b, "");
  REQUIRE(std::holds_alternative<BuildInputError>(r));
  CHECK(std::get<BuildInputError>(r).ptr == "/pipeline/0/build/context");
}

TEST_CASE("build paths stay inside their folder") {
  CHECK(stays_inside("."));
  CHECK(stays_inside("image"));
  CHECK(stays_inside("a/../b"));
  CHECK_FALSE(stays_inside(".."));
  CHECK_FALSE(stays_inside("a/../../b"));
  CHECK_FALSE(stays_inside("/etc"));
  CHECK_FALSE(stays_inside(""));
}

TEST_CASE("build tag: symbolic links may not lead out of the context; a linked context is read through") {
  TempDir d, outside;
  outside.write("secret.py", "print(1)\n");
  d.write("ctx/train.py", "print(2)\n");
  fs::create_symlink(outside.path / "secret.py", d.path / "ctx" / "link.py");
  Build b = generated();
  b.context = "ctx";
  b.requirements.clear();
  b.copy = {"link.py"};
  auto r = build_tag(d.path, b, "");
  REQUIRE(std::holds_alternative<BuildInputError>(r));
  CHECK(std::get<BuildInputError>(r).message.find("outside the build context") != std::string::npos);
  // A context that is itself a link to a folder inside the spec's folder is digested by content.
  fs::create_symlink(d.path / "ctx", d.path / "linked");
  b.context = "linked";
  b.copy = {"train.py"};
  const std::string t0 = tag_of(d.path, b);
  d.write("ctx/train.py", "print(3)\n");
  CHECK(tag_of(d.path, b) != t0);
}

TEST_CASE("build tag: the folders a step writes and the executable bit count") {
  TempDir d;
  d.write("train.py", "print(1)\n");
  Build b = generated();
  b.requirements.clear();
  b.copy = {"train.py"};
  const std::string t0 = tag_of(d.path, b);
  b.writable = {"/results"};
  CHECK(tag_of(d.path, b) != t0);
  b.writable.clear();
  fs::permissions(d.path / "train.py", fs::perms::owner_exec, fs::perm_options::add);
  CHECK(tag_of(d.path, b) != t0);
}

TEST_CASE("build tag: in a git work tree, untracked files of the context do not count") {
  TempDir d;
  d.write("Dockerfile", "FROM python:3.12-slim\nCOPY . /app\n");
  d.write("app.py", "print(1)\n");
  const std::string git = "git -C '" + d.path.string() + "' ";
  REQUIRE(std::system((git + "init -q && " + git + "add Dockerfile app.py").c_str()) == 0);
  Build b;
  b.name = "app";
  b.context = ".";
  b.dockerfile = "Dockerfile";
  const std::string t0 = tag_of(d.path, b, "");
  d.write("__pycache__/app.cpython-311.pyc", "junk");  // a developer's run leaves this behind
  CHECK(tag_of(d.path, b, "") == t0);
  d.write("app.py", "print(2)\n");  // a tracked file's content still counts
  CHECK(tag_of(d.path, b, "") != t0);
}

TEST_CASE("build tag: a copied path behind a folder that links out of the context is refused") {
  TempDir d, outside;
  outside.write("data/a.csv", "1\n");
  d.write("train.py", "print(1)\n");
  fs::create_symlink(outside.path, d.path / "ext");
  Build b = generated();
  b.requirements.clear();
  b.copy = {"train.py", "ext/data"};
  auto r = build_tag(d.path, b, "FROM @BASE@");
  REQUIRE(std::holds_alternative<BuildInputError>(r));
  const auto& e = std::get<BuildInputError>(r);
  CHECK(e.ptr == "/pipeline/0/build/copy/1");
  CHECK(e.message.find("'ext/data' leads out of the build context through a symbolic link") != std::string::npos);
}

TEST_CASE("build tag: a FIFO in the context is refused, not read (which would wait forever)") {
  TempDir d;
  d.write("Dockerfile", "FROM python:3.12-slim\n");
  REQUIRE(mkfifo((d.path / "pipe").c_str(), 0600) == 0);
  Build b;
  b.name = "train";
  b.context = ".";
  b.dockerfile = "Dockerfile";
  b.ptr = "/pipeline/0/build";
  auto r = build_tag(d.path, b, "");
  REQUIRE(std::holds_alternative<BuildInputError>(r));
  CHECK(std::get<BuildInputError>(r).message == "'pipe' is a FIFO (named pipe), not a file docker can copy; move it "
                                               "out of the build context");
}

}  // namespace
TEST_CASE("dockerfile_base: the image the user's Dockerfile builds its last stage FROM") {
  TempDir d;
  Build b;
  b.name = "ray";
  b.context = "image";
  b.dockerfile = "Dockerfile";
  const auto base = [&](const std::string& text) {
    d.write("image/Dockerfile", text);
    return dockerfile_base(d.path, b);
  };
  CHECK(base("FROM rayproject/ray:2.52.0-gpu\nRUN pip install torch\n").image == "rayproject/ray:2.52.0-gpu");
  // ARG defaults before the first FROM, flags, a stage's name followed back, lower-case keywords.
  const DockerfileBase staged = base(
      "# syntax=docker/dockerfile:1\nARG RAY=2.52.0 PY=\"py312\"\nFROM --platform=linux/amd64 \\\n"
      "  rayproject/ray:${RAY}-$PY-gpu AS deps\nRUN true\nfrom deps\nCOPY . /workspace\n");
  CHECK(staged.image == "rayproject/ray:2.52.0-py312-gpu");
  CHECK(staged.problem.empty());
  CHECK(staged.path == "image/Dockerfile");
  // $VER is not $VERSION.
  CHECK(base("ARG VER=1\nARG VERSION=2.52.0\nFROM rayproject/ray:$VERSION\n").image == "rayproject/ray:2.52.0");
  const DockerfileBase unset = base("ARG BASE\nFROM ${BASE}\n");
  CHECK(unset.image.empty());
  CHECK(unset.problem == "builds FROM '${BASE}', a build argument with no default");
  CHECK(base("RUN true\n").problem == "has no FROM line");
  // A missing Dockerfile is build_tag's to report.
  b.dockerfile = "Missing.Dockerfile";
  const DockerfileBase missing = dockerfile_base(d.path, b);
  CHECK(missing.image.empty());
  CHECK(missing.problem.empty());
}

}  // namespace trainc
