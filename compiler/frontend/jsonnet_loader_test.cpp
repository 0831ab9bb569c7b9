#include "frontend/jsonnet_loader.h"

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

namespace trainc {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/trainc-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

static std::optional<Document> load_file(const std::string& file, Diagnostics& diags) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto src = std::make_shared<SourceFile>(file, text);
  diags.add_source(src);
  return load_jsonnet(src, diags);
}

TEST_CASE("Jsonnet evaluates with the embedded stdlib and files beside the spec") {
  TempDir dir;
  dir.write("lib/common.libsonnet", "{ image: 'img:1' }");
  auto spec = dir.write("spec.jsonnet",
                        "local t = import 'trainc.libsonnet';\nlocal c = import 'lib/common.libsonnet';\n"
                        "{\n  name: 'x',\n  image: c.image,\n  kind: t.system('x', []).kind,\n}\n");
  Diagnostics diags;
  auto doc = load_file(spec, diags);
  REQUIRE_MESSAGE(doc, diags.render_text());
  CHECK(doc->root["image"] == "img:1");
  CHECK(doc->root["kind"] == "TrainingSystem");
  CHECK(doc->loc("/name", Anchor::key) == Loc{4, 3, 4});
}

TEST_CASE("imports outside the spec's folder are refused") {
  TempDir dir;
  dir.write("secret.libsonnet", "{ s: 1 }");
  auto spec = dir.write("sub/spec.jsonnet", "local s = import '../secret.libsonnet';\n{ name: s.s }\n");
  Diagnostics diags;
  CHECK_FALSE(load_file(spec, diags));
  auto all = diags.sorted();
  REQUIRE(all.size() == 1);
  CHECK(all[0].message.find("outside the spec's folder") != std::string::npos);
  CHECK(all[0].loc.line == 1);
}

TEST_CASE("runtime errors point at the spec line") {
  TempDir dir;
  auto spec = dir.write("spec.jsonnet", "local x = {};\n{\n  name: x.missing,\n}\n");
  Diagnostics diags;
  CHECK_FALSE(load_file(spec, diags));
  auto all = diags.sorted();
  REQUIRE(all.size() == 1);
  CHECK(all[0].loc.line == 3);
  CHECK(all[0].message.find("missing") != std::string::npos);
}

}  // namespace trainc
