#include "io/tree_writer.h"

#include <unistd.h>

#include <fstream>

#include <doctest/doctest.h>

namespace trainc {

namespace fs = std::filesystem;

static OutputSink sink(const std::string& readme) {
  OutputSink s;
  s.add("README.md", readme);
  s.add("k8s/job.yaml", "kind: Job\n");
  add_manifest(s);
  return s;
}

TEST_CASE("the writer replaces its own folder and refuses anyone else's") {
  char tmpl[] = "/tmp/trainc-writer-XXXXXX";
  fs::path root = mkdtemp(tmpl);
  CHECK_FALSE(write_tree(root, "sys", sink("one\n")).has_value());
  CHECK_FALSE(write_tree(root, "sys", sink("two\n")).has_value());
  std::ifstream in(root / "sys/README.md");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CHECK(text == "two\n");

  std::string error;
  CHECK(diff_tree(root, "sys", sink("two\n"), error).empty());
  std::string d = diff_tree(root, "sys", sink("three\n"), error);
  CHECK(d.find("-two") != std::string::npos);
  CHECK(d.find("+three") != std::string::npos);

  std::ofstream(root / "sys/notes.txt") << "mine";
  auto refused = write_tree(root, "sys", sink("four\n"));
  REQUIRE(refused.has_value());
  CHECK(refused->find("notes.txt") != std::string::npos);
  CHECK(fs::exists(root / "sys/notes.txt"));

  fs::create_directories(root / "theirs");
  std::ofstream(root / "theirs/a.txt") << "keep";
  CHECK(write_tree(root, "theirs", sink("x\n")).has_value());
  CHECK(fs::exists(root / "theirs/a.txt"));
  CHECK_FALSE(fs::exists(root / "theirs/README.md"));

  // No temporary folders are left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(root)) ++entries;
  CHECK(entries == 2);
  fs::remove_all(root);
}

}  // namespace trainc
