#include "frontend/schema_check.h"

#include <doctest/doctest.h>

#include "frontend/yaml_loader.h"

namespace trainc {

static std::vector<Diagnostic> schema_errors(const std::string& text) {
  Diagnostics diags;
  auto src = std::make_shared<SourceFile>("s.yaml", text);
  auto doc = load_yaml(src, diags);
  REQUIRE(doc);
  check_schema(*doc, diags);
  return diags.sorted();
}

static const char* kHead = "apiVersion: trainc/v1\nkind: TrainingSystem\nname: x\n";

TEST_CASE("a minimal spec is valid") {
  CHECK(schema_errors(std::string(kHead) + "pipeline:\n  - {name: a, image: i, command: [run]}\n").empty());
}

TEST_CASE("unknown keys get a suggestion at the key's position") {
  auto errs = schema_errors(std::string(kHead) + "pipeline:\n  - name: a\n    image: i\n    nodez: 2\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].message == "unknown key 'nodez' in pipeline[0]; did you mean 'nodes'?");
  CHECK(errs[0].loc == Loc{7, 5, 5});
  CHECK(errs[0].path == "/pipeline/0/nodez");
}

TEST_CASE("wrong types, enums and minimums say what is expected") {
  auto errs = schema_errors(std::string(kHead) +
                            "pipeline:\n  - {name: a, image: i, nodes: 0, imagePullPolicy: Allways, retries: x}\n");
  REQUIRE(errs.size() == 3);
  std::vector<std::string> msgs;
  for (const auto& e : errs) msgs.push_back(e.message);
  CHECK(std::count(msgs.begin(), msgs.end(), "0 is too small; the minimum is 1") == 1);
  CHECK(std::count(msgs.begin(), msgs.end(), "'Allways' is not allowed here; did you mean 'Always'?") == 1);
  CHECK(std::count(msgs.begin(), msgs.end(), "expected an integer, found the string 'x'") == 1);
}

TEST_CASE("subschemas are found through $ref, items and maps") {
  nlohmann::json schema = nlohmann::json::parse(spec_schema_text());
  nlohmann::json doc = {{"pipeline", {{{"name", "a"}, {"env", {{"X", "1"}}}}}}};
  const auto* s = subschema_at(schema, doc, "/pipeline/0");
  REQUIRE(s);
  CHECK((*s)["properties"].contains("torchrun"));
  CHECK(subschema_at(schema, doc, "/pipeline/0/env/X") != nullptr);
}

}  // namespace trainc

namespace trainc {

TEST_CASE("map keys are checked against propertyNames, at the key") {
  auto errs = schema_errors(std::string(kHead) + "pipeline:\n  - {name: a, image: i, command: [x], env: {9X: y}}\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].message.rfind("key '9X' is not a valid environment variable name", 0) == 0);
  CHECK(errs[0].path == "/pipeline/0/env/9X");
  CHECK(errs[0].loc.col == 45);
}

}  // namespace trainc
