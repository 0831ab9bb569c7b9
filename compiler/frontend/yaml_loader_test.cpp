#include "frontend/yaml_loader.h"

#include <doctest/doctest.h>

namespace trainc {

static std::optional<Document> load(const std::string& text, Diagnostics& diags) {
  auto src = std::make_shared<SourceFile>("t.yaml", text);
  diags.add_source(src);
  return load_yaml(src, diags);
}

TEST_CASE("YAML scalars are typed by the core schema; quoted ones stay strings") {
  Diagnostics diags;
  auto doc = load("a: 4\nb: \"4\"\nc: true\nd: yes\ne: 0.5\nf: ~\ng: 'x'\nh: 0x1f\n", diags);
  REQUIRE(doc);
  CHECK(doc->root["a"] == 4);
  CHECK(doc->root["b"] == "4");
  CHECK(doc->root["c"] == true);
  CHECK(doc->root["d"] == "yes");
  CHECK(doc->root["e"] == 0.5);
  CHECK(doc->root["f"].is_null());
  CHECK(doc->root["g"] == "x");
  CHECK(doc->root["h"] == 31);
}

TEST_CASE("text that is not UTF-8 is refused at its first bad byte, before the schema check decodes it") {
  // Found by the yaml_frontend fuzzer: a long run of continuation bytes made valijson's UTF-8
  // decoder index out of bounds (tests/fuzz/yaml_frontend/regressions/).
  for (const std::string bad : {"name: \"a\x80\x80\x80\x80\x80\x80\x80\x80\"\n", "name: \xC0\xAF\n", "name: \xED\xA0\x80\n",
                                "name: \xF4\x90\x80\x80\n", "name: \xE2\x82\n"}) {
    Diagnostics diags;
    CHECK_FALSE(load("apiVersion: trainc/v1\n" + bad, diags));
    REQUIRE(diags.sorted().size() == 1);
    CHECK(diags.sorted()[0].loc.line == 2);
    CHECK(diags.sorted()[0].message.find("is not valid UTF-8") != std::string::npos);
  }
  Diagnostics diags;
  CHECK(load("name: \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"\n", diags));
  CHECK_FALSE(diags.has_errors());
}

TEST_CASE("every key and value keeps its line and column") {
  Diagnostics diags;
  auto doc = load("name: x\npipeline:\n  - name: train\n    nodes: 4\n", diags);
  REQUIRE(doc);
  CHECK(doc->loc("/pipeline/0/nodes", Anchor::key) == Loc{4, 5, 5});
  CHECK(doc->loc("/pipeline/0/nodes") == Loc{4, 12, 1});
  CHECK(doc->loc("/pipeline/0/missing").line == 3);  // falls back to the nearest ancestor
}

TEST_CASE("duplicate keys are errors that point at both places") {
  Diagnostics diags;
  CHECK_FALSE(load("a: 1\nb: 2\na: 3\n", diags));
  auto all = diags.sorted();
  REQUIRE(all.size() == 1);
  CHECK(all[0].loc.line == 3);
  REQUIRE(all[0].notes.size() == 1);
  CHECK(all[0].notes[0].loc.line == 1);
}

TEST_CASE("syntax errors, empty files and several documents are reported") {
  Diagnostics d1, d2, d3;
  CHECK_FALSE(load("a: [1, 2\nb: 3\n", d1));
  CHECK(d1.sorted()[0].message.rfind("YAML syntax error", 0) == 0);
  CHECK_FALSE(load("", d2));
  CHECK(d2.sorted()[0].message.find("empty") != std::string::npos);
  CHECK_FALSE(load("a: 1\n---\nb: 2\n", d3));
  CHECK(d3.sorted()[0].loc.line == 3);
}

}  // namespace trainc
