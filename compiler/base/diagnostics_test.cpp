#include "base/diagnostics.h"

#include <doctest/doctest.h>

#include "base/data_path.h"

namespace trainc {

TEST_CASE("data paths display like the spec reads") {
  std::string p = ptr_index(ptr_key("", "pipeline"), 0);
  p = ptr_key(p, "nodes");
  CHECK(p == "/pipeline/0/nodes");
  CHECK(ptr_display(p) == "pipeline[0].nodes");
  CHECK(ptr_display(ptr_key(ptr_key("", "env"), "a/b")) == "env[\"a/b\"]");
  CHECK(ptr_segments(ptr_key("", "a/b~c")) == std::vector<std::string>{"a/b~c"});
  CHECK(ptr_parent(p) == "/pipeline/0");
  CHECK(ptr_display("") == "(document)");
}

TEST_CASE("diagnostics are sorted, de-duplicated and quote the source line") {
  Diagnostics diags;
  diags.add_source(std::make_shared<SourceFile>("s.yaml", "name: x\npipeline:\n  - nodes: 0\n"));
  diags.report({Severity::error, "s.yaml", {3, 12, 1}, "/pipeline/0/nodes", "nodes must be at least 1", {}});
  diags.report({Severity::error, "s.yaml", {1, 7, 1}, "/name", "first", {}});
  diags.report({Severity::error, "s.yaml", {1, 7, 1}, "/name", "first", {}});
  REQUIRE(diags.sorted().size() == 2);
  CHECK(diags.sorted()[0].message == "first");
  std::string text = diags.render_text();
  CHECK(text.find("s.yaml:3:12: error: nodes must be at least 1\n    3 |   - nodes: 0\n      |            ^\n") !=
        std::string::npos);
  CHECK(text.find("= at pipeline[0].nodes") != std::string::npos);
  CHECK(text.substr(text.size() - 9) == "2 errors\n");
}

TEST_CASE("GitHub workflow commands escape messages and properties") {
  CHECK(github_escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext");
  CHECK(github_escape_property("a:b,c%") == "a%3Ab%2Cc%25");
  CHECK(github_command("error", "", 0, 0, "", "x") == "::error::x\n");
  CHECK(github_command("error", "d/f,1.yaml", 0, 0, "trainc", "m") == "::error file=d/f%2C1.yaml,title=trainc::m\n");

  Diagnostics diags;
  diags.add_source(std::make_shared<SourceFile>("s.yaml", "name: x\npipeline:\n  - nodes: 0\n"));
  diags.report({Severity::error, "s.yaml", {3, 12, 1}, "/pipeline/0/nodes", "nodes must be at least 1: 100% sure",
                {{"s.yaml", {1, 7, 1}, "named here"}}});
  diags.report({Severity::warning, "s.yaml", {}, "", "a warning", {}});
  CHECK(diags.render_github() ==
        "::warning file=s.yaml,title=trainc::a warning\n"
        "::error file=s.yaml,line=3,col=12,title=trainc::nodes must be at least 1: 100%25 sure (at pipeline[0].nodes)"
        "%0As.yaml:1:7: note: named here\n");
}

}  // namespace trainc
