#include <doctest/doctest.h>

#include "checks/checks.h"
#include "frontend/yaml_loader.h"
#include "model/lower.h"

namespace trainc {
namespace {

/// The messages of the driver's checking phases (no schema validation, so that settings the
/// schema would stop first reach the checks): lowering with the checks of settings, then the rest.
std::vector<std::string> check_text(const std::string& text) {
  Diagnostics diags;
  auto doc = load_yaml(std::make_shared<SourceFile>("s.yaml", text), diags);
  REQUIRE(doc);
  if (auto sys = lower_for_checks(*doc, diags, check_lowered)) run_checks(*sys, *doc, diags);
  std::vector<std::string> out;
  for (const auto& d : diags.sorted()) out.push_back(d.message);
  return out;
}

const char* kHead =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
    "gcp: {project: my-project, region: us-central1, zone: us-central1-a}\n"
    "cluster:\n  pools:\n    cpu: {machine: e2-standard-4, nodes: 2}\n";

bool has(const std::vector<std::string>& messages, const std::string& part) {
  for (const auto& m : messages)
    if (m.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the settings of each entity are checked on the system lowering built") {
  const auto messages = check_text(std::string(kHead) +
                                   "clusters:\n"
                                   "  d: {engine: dask, version: 2.52.0, workers: {w: {pool: cpu}}}\n"
                                   "pipeline:\n"
                                   "  - {name: a, image: i, command: []}\n"
                                   "  - {name: b, image: i, command: [x], outputs: {path: /, to: 'nope:/o'}}\n");
  CHECK(has(messages, "'version' applies to ray clusters only; remove it"));
  CHECK(has(messages, "cluster 'd' needs 'image' (or 'build')"));
  CHECK(has(messages, "'command' is empty; name the program to run"));
  CHECK(has(messages, "'/' is the container's root"));
  // Lowering still reports what it cannot build: the unknown store.
  CHECK(has(messages, "unknown store 'nope'"));
}

TEST_CASE("lowering alone builds a system whose settings the checks reject") {
  Diagnostics diags;
  auto doc = load_yaml(std::make_shared<SourceFile>("s.yaml", std::string(kHead) +
                                                                  "ci: {cloudbuild: {}}\n"
                                                                  "pipeline: [{name: a, image: i, command: [x]}]\n"),
                       diags);
  REQUIRE(doc);
  auto sys = lower(*doc, diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  check_lowered(*sys, *doc, diags);
  REQUIRE(diags.error_count() == 1);
  CHECK(diags.sorted()[0].message.find("set 'gcp.state'") != std::string::npos);
}

TEST_CASE("an entity whose settings are wrong is left out of the later checks, as after a lowering error") {
  const std::string services =
      "storage:\n  models: {gcs: {bucket: models-bkt, create: false}}\n"
      "services:\n  model:\n    pool: cpu\n    gpus: 4\n    triton: {repository: 'models:/m'}\n";
  // Only the placement check objects to the GPUs...
  CHECK(has(check_text(std::string(kHead) + services), "asks for 4 GPU(s)"));
  // ...and it does not judge a service whose autoscaling is wrong.
  const auto messages = check_text(std::string(kHead) + services + "    autoscaling: {min: 3, max: 2}\n");
  CHECK(has(messages, "autoscaling: min 3 is above max 2"));
  CHECK_FALSE(has(messages, "asks for 4 GPU(s)"));
}

TEST_CASE("the steps of a needs cycle are judged on their settings too") {
  const auto messages = check_text(std::string(kHead) +
                                   "pipeline:\n"
                                   "  - {name: a, image: i, command: [x], needs: [b]}\n"
                                   "  - {name: b, image: i, command: [x], needs: [a], heartbeat: {file: /etc/hb}}\n");
  CHECK(has(messages, "steps form a cycle through needs"));
  CHECK(has(messages, "'/etc/hb' is inside the system folder /etc"));
}

}  // namespace trainc
