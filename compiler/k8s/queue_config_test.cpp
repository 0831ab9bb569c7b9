// Kueue's configuration as apply.sh installs it (k8s/queue.h): the pinned release's, plus
// waitForPodsReady derived from the spec, with only fields Kueue v0.19.2's Configuration has
// (the controller decodes it strictly: an unknown field stops it).
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "k8s/queue.h"
#include "model/catalog.h"
#include "model/test_lowered.h"

namespace trainc::k8s {
namespace {

const char* kSpec = R"(apiVersion: trainc/v1
kind: TrainingSystem
name: sys
gcp: {project: p, region: us-central1, zone: us-central1-c}
queue: {name: team}
cluster:
  pools:
    t4: {machine: n1-standard-8, accelerator: {type: nvidia-tesla-t4, count: 1}, autoscaling: {min: 0, max: 4}}
pipeline:
  - name: train
    image: us-docker.pkg.dev/p/ml/train:1.0
    pool: t4
    nodes: NODES
    torchrun: {script: train.py}
)";

System with(const std::string& nodes, const std::string& queue_extra = "") {
  std::string spec = kSpec;
  spec.replace(spec.find("NODES"), 5, nodes);
  if (!queue_extra.empty()) spec.replace(spec.find("{name: team}"), 12, "{name: team, " + queue_extra + "}");
  return testing::lowered(spec);
}

// The json tags of kubernetes-sigs/kueue@8eab68778fc1b52affe165fdf5af29d1e9b4f3cb (v0.19.2)
// apis/config/v1beta2/configuration_types.go: Configuration (with the inlined ControllerManager),
// WaitForPodsReady and RequeuingStrategy.
const std::set<std::string> kConfigurationFields = {
    "apiVersion", "kind", "namespace", "manageJobsWithoutQueueName", "managedJobsNamespaceSelector",
    "internalCertManagement", "waitForPodsReady", "clientConnection", "integrations", "multiKueue",
    "fairSharing", "admissionFairSharing", "resources", "featureGates", "objectRetentionPolicies",
    "webhook", "leaderElection", "metrics", "health", "controller"};
const std::set<std::string> kWaitForPodsReadyFields = {"timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"};
const std::set<std::string> kRequeuingFields = {"timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"};

void only_known(const YAML::Node& map, const std::set<std::string>& known, const std::string& where) {
  REQUIRE(map.IsMap());
  for (const auto& kv : map) {
    INFO(where << "." << kv.first.as<std::string>());
    CHECK(known.count(kv.first.as<std::string>()) == 1);
  }
}

}  // namespace

TEST_CASE("Kueue's configuration: the release's, plus waitForPodsReady, with only the pinned version's fields") {
  const System sys = with("4");
  const YAML::Node cfg = YAML::Load(kueue_configuration(sys));
  CHECK(cfg["apiVersion"].as<std::string>() == "config.kueue.x-k8s.io/v1beta2");
  CHECK(cfg["kind"].as<std::string>() == "Configuration");
  only_known(cfg, kConfigurationFields, "Configuration");
  only_known(cfg["waitForPodsReady"], kWaitForPodsReadyFields, "waitForPodsReady");
  only_known(cfg["waitForPodsReady"]["requeuingStrategy"], kRequeuingFields, "requeuingStrategy");
  // The release's defaults kept: every framework of config/components/manager/controller_manager_config.yaml.
  std::vector<std::string> frameworks;
  for (const auto& f : cfg["integrations"]["frameworks"]) frameworks.push_back(f.as<std::string>());
  CHECK(frameworks == std::vector<std::string>{"batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster",
                                               "ray.io/rayservice", "jobset.x-k8s.io/jobset",
                                               "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob", "pod",
                                               "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"});
  CHECK(cfg["leaderElection"]["resourceName"].as<std::string>() == "c1f6bfd2.kueue.x-k8s.io");
  CHECK(cfg["clientConnection"]["qps"].as<int>() == 300);
  // Derived: the pull margin (900 s) plus a service's default startup window (600 s).
  const YAML::Node w = cfg["waitForPodsReady"];
  CHECK(catalog().pull_margin_seconds() + kDefaultStartupSeconds == 1500);
  CHECK(w["timeout"].as<std::string>() == "25m");
  CHECK(w["recoveryTimeout"].as<std::string>() == "25m");
  CHECK(w["blockAdmission"].as<bool>());  // a 4-pod gang
  CHECK(w["requeuingStrategy"]["timestamp"].as<std::string>() == "Eviction");
  CHECK(w["requeuingStrategy"]["backoffBaseSeconds"].as<int>() == 60);
  CHECK(w["requeuingStrategy"]["backoffMaxSeconds"].as<int>() == 3600);
  CHECK(!w["requeuingStrategy"]["backoffLimitCount"]);  // requeued until it starts
  CHECK(pods_ready(sys).gang == "step `train` (4 pods)");
}

TEST_CASE("waitForPodsReady: single-pod workloads admit freely; the spec's timeout wins") {
  CHECK_FALSE(pods_ready(with("1")).block_admission);
  const System sys = with("2", "podsReadyTimeout: 1h30m");
  const PodsReady p = pods_ready(sys);
  CHECK(p.timeout_seconds == 5400);
  CHECK_FALSE(p.derived);
  const YAML::Node cfg = YAML::Load(kueue_configuration(sys));
  CHECK(cfg["waitForPodsReady"]["timeout"].as<std::string>() == "1h30m");
  // Another timeout is another configuration: apply.sh rolls Kueue's pods for it, and only for it.
  CHECK(kueue_config_digest(sys) != kueue_config_digest(with("2")));
  CHECK(kueue_config_digest(with("2")) == kueue_config_digest(with("2")));
}

TEST_CASE("go_duration writes what Go's time.ParseDuration reads") {
  CHECK(go_duration(1500) == "25m");
  CHECK(go_duration(5400) == "1h30m");
  CHECK(go_duration(90) == "1m30s");
  CHECK(go_duration(45) == "45s");
  CHECK(go_duration(3600) == "1h");
  CHECK(go_duration(0) == "0s");
}

TEST_CASE("the ConfigMap is the release's: its name, namespace, labels and key") {
  const ojson cm = kueue_config_map(with("4"));
  CHECK(cm["metadata"]["name"] == "kueue-manager-config");
  CHECK(cm["metadata"]["namespace"] == "kueue-system");
  CHECK(cm["metadata"]["labels"]["app.kubernetes.io/name"] == "kueue");
  CHECK(cm["data"].contains("controller_manager_config.yaml"));
}

}  // namespace trainc::k8s
