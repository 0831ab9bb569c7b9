// The services' startup timing, end to end: the startup probe's window, the Deployment's progress
// deadline and scripts/apply.sh's wait for the rollout, as emitted.
#include <doctest/doctest.h>

#include <regex>

#include <yaml-cpp/yaml.h>

#include "emit/emitter.h"
#include "frontend/yaml_loader.h"
#include "k8s/plan.h"
#include "model/lower.h"
#include "model/test_lowered.h"

namespace trainc {
namespace {

using testing::lowered;

/// Services with a long, a short and the default startup budget: vLLM and Triton.
const char* kServices =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: timing\n"
    "gcp: {project: p, region: us-central1, zone: us-central1-a}\n"
    "cluster:\n"
    "  pools:\n"
    "    system: {machine: e2-standard-4}\n"
    "    l4: {machine: g2-standard-8, autoscaling: {min: 1, max: 3}}\n"
    "storage: {models: {gcs: {bucket: timing-models}}}\n"
    "services:\n"
    "  slow: {pool: l4, vllm: {model: Qwen/Qwen2.5-0.5B-Instruct}, startupTimeout: 20m}\n"
    "  quick: {pool: l4, vllm: {model: Qwen/Qwen2.5-0.5B-Instruct}, startupTimeout: 45s}\n"
    "  triton: {pool: l4, triton: {repository: 'models:/', models: [densenet_onnx]}}\n";

}  // namespace

TEST_CASE("no Deployment's progress deadline is shorter than its startup window, nor apply.sh's wait than it") {
  const System sys = lowered(kServices);
  const k8s::Plan plan = k8s::plan(sys);
  OutputSink out;
  new_k8s_emitter()->emit(sys, plan, out);
  new_scripts_emitter()->emit(sys, plan, out);
  const std::string apply = out.files().at("scripts/apply.sh");
  int deployments = 0;
  for (const auto& [path, text] : out.under("k8s/")) {
    for (const YAML::Node& doc : YAML::LoadAll(text)) {
      if (!doc.IsMap() || doc["kind"].as<std::string>("") != "Deployment") continue;
      ++deployments;
      const std::string name = doc["metadata"]["name"].as<std::string>();
      CAPTURE(name);
      REQUIRE(doc["spec"]["progressDeadlineSeconds"]);
      const int deadline = doc["spec"]["progressDeadlineSeconds"].as<int>();
      for (const YAML::Node& c : doc["spec"]["template"]["spec"]["containers"]) {
        const YAML::Node probe = c["startupProbe"];
        if (!probe) continue;
        const int window = probe["periodSeconds"].as<int>() * probe["failureThreshold"].as<int>();
        CHECK(deadline >= window);
        // The window covers the spec's startupTimeout.
        if (name.ends_with("slow")) CHECK(window >= 20 * 60);
        if (name.ends_with("quick")) CHECK(window >= 45);
      }
      // apply.sh waits for this Deployment's rollout at least as long as its deadline.
      std::smatch m;
      const std::regex wait("wait_rollout '?deployment/" + name + "'? ([0-9]+)s");
      REQUIRE_MESSAGE(std::regex_search(apply, m, wait), "apply.sh does not wait for deployment/" << name);
      CHECK(std::stoi(m[1].str()) >= deadline);
    }
  }
  CHECK(deployments == 3);
}

}  // namespace trainc
