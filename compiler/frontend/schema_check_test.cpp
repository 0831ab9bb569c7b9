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

namespace trainc {

static std::vector<std::string> messages(const std::vector<Diagnostic>& errs) {
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.message);
  return out;
}

TEST_CASE("a value above its maximum names the field, the limit and the schema's reason") {
  auto errs = schema_errors(std::string(kHead) +
                            "pipeline:\n  - name: a\n    image: i\n    command: [x]\n    nodes: 99999999999\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].message ==
        "99999999999 is above the maximum of 100000 for 'nodes' (Kubernetes' limit on an Indexed Job's parallelism)");
  CHECK(errs[0].path == "/pipeline/0/nodes");
  CHECK(errs[0].loc == Loc{8, 12, 11});
  // A list item without a reason of its own.
  errs = schema_errors(std::string(kHead) + "pipeline:\n  - {name: a, datagen: {features: 4, rows: 9, to: 'd:/', "
                                            "weights: [0.5, 1.5]}}\n");
  CHECK(messages(errs) == std::vector<std::string>{"1.5 is above the maximum of 1 for an item of 'weights'"});
}

TEST_CASE("an exclusive minimum says the value must be above it") {
  auto errs = schema_errors(std::string(kHead) +
                            "pipeline:\n  - {name: a, datagen: {features: 4, rows: 9, to: 'd:/', classSep: 0}}\n");
  CHECK(messages(errs) == std::vector<std::string>{"0 is too small; it must be above 0"});
}

TEST_CASE("a duplicate list item is reported at its second copy") {
  auto errs = schema_errors(std::string(kHead) + "pipeline:\n  - {name: a, image: i, command: [x], needs: [b, c, b]}\n");
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].message == "'b' is already listed in 'needs'; remove the duplicate");
  CHECK(errs[0].path == "/pipeline/0/needs/2");
}

TEST_CASE("a store with both or neither kind lists the kinds") {
  CHECK(messages(schema_errors(std::string(kHead) + "storage:\n  d: {s3: {bucket: abc}, gcs: {bucket: abc}}\n")) ==
        std::vector<std::string>{"give only one of 'gcs' and 's3'"});
  CHECK(messages(schema_errors(std::string(kHead) + "storage:\n  d: {}\n")) ==
        std::vector<std::string>{"give one of 'gcs' or 's3'"});
}

/// Every integer in a spec ends up in a C++ int or a Kubernetes int32: each needs a bound.
static void integers_without_maximum(const nlohmann::json& s, const std::string& where, std::vector<std::string>& out) {
  if (s.is_object()) {
    if (s.value("type", nlohmann::json()) == "integer" && (!s.contains("maximum") || !s.contains("x-maximum-reason")))
      out.push_back(where);
    for (const auto& [k, v] : s.items()) integers_without_maximum(v, where + "/" + k, out);
  } else if (s.is_array()) {
    for (size_t i = 0; i < s.size(); ++i) integers_without_maximum(s[i], where + "/" + std::to_string(i), out);
  }
}

TEST_CASE("every integer field has a maximum and a reason for it") {
  std::vector<std::string> missing;
  integers_without_maximum(nlohmann::json::parse(spec_schema_text()), "", missing);
  std::string list;
  for (const auto& where : missing) list += " " + where;
  CHECK_MESSAGE(missing.empty(), "integer fields without maximum or x-maximum-reason:" << list);
}

}  // namespace trainc
