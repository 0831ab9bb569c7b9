#include "k8s/plan.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "frontend/yaml_loader.h"
#include "model/lower.h"
#include "model/test_lowered.h"

namespace trainc {
namespace {

using testing::lowered;

const char* kTwoSteps =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
    "pipeline:\n"
    "  - {name: train, image: i, nodes: 2, needs: [prep], torchrun: {script: t.py}}\n"
    "  - {name: prep, image: i, command: [python, prep.py]}\n";

std::vector<std::string> files(const std::vector<const k8s::Object*>& objects) {
  std::vector<std::string> out;
  for (const auto* o : objects) out.push_back(o->file);
  return out;
}

}  // namespace

TEST_CASE("the plan lists each workload's objects in dependency order") {
  System sys = lowered(kTwoSteps);
  const k8s::Plan plan = k8s::plan(sys);
  CHECK(files(plan.apply_order()) == std::vector<std::string>{"k8s/namespace.yaml", "k8s/prep-configmap.yaml",
                                                               "k8s/prep-job.yaml", "k8s/train-configmap.yaml",
                                                               "k8s/train-jobset.yaml"});
  auto teardown = files(plan.teardown_order());
  CHECK(teardown.front() == "k8s/train-jobset.yaml");
  CHECK(teardown.back() == "k8s/namespace.yaml");
  const k8s::Workload* train = plan.workload("train");
  REQUIRE(train != nullptr);
  CHECK(train->needs == std::vector<std::string>{"prep"});
  // Two torchrun pods are a gang: a JobSet (which makes their headless Service) restarts them as one.
  CHECK(train->done().kind == "JobSet");
  CHECK(train->done().ready == k8s::Ready::kJobSetCompleted);
  CHECK(k8s::logs_ref(train->done()) == "job/sys-train-node-0");
  CHECK(plan.needs_jobset);
  CHECK(plan.workload("prep")->done().ready == k8s::Ready::kJobComplete);
  CHECK(k8s::kubectl_ref(plan.workload("prep")->done()) == "job/sys-prep");
  CHECK(k8s::wait_condition(k8s::Ready::kJobComplete) == "condition=complete");
  CHECK(k8s::wait_condition(k8s::Ready::kApplied).empty());
  CHECK(plan.object_in("k8s/train-service.yaml") == nullptr);
  CHECK(plan.object_in("k8s/nothing.yaml") == nullptr);
}

TEST_CASE("the entry script's ConfigMap is named as the step's run, and holds the script") {
  System sys = lowered(kTwoSteps);
  for (auto& st : sys.steps)
    if (st.name == "prep") st.run_id = "0123456789";
  const k8s::Plan plan = k8s::plan(sys);
  const k8s::Workload* prep = plan.workload("prep");
  CHECK(prep->objects.front().role == k8s::Role::kEntryScript);
  CHECK(prep->objects.front().name == "sys-prep-0123456789");
  CHECK(prep->done().name == "sys-prep-0123456789");
  CHECK(prep->entry_script.find("python") != std::string::npos);
  CHECK(prep->objects.size() == 2);  // a single pod needs no rendezvous Service
}

TEST_CASE("an existing namespace is not in the plan") {
  System sys = lowered(std::string(kTwoSteps) + "namespace: shared\n");
  CHECK(k8s::plan(sys).shared.empty());
}

const char* kRay =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
    "cluster:\n  pools:\n    gpu: {machine: n1-standard-8, accelerator: {type: nvidia-tesla-t4, count: 4}}\n"
    "clusters:\n  ray:\n    engine: ray\n    image: rayproject/ray:2.52.0-gpu\n    workers: {gpu: {pool: gpu}}\n";

TEST_CASE("a Ray cluster is applied before its steps, which wait for it to be ready") {
  System sys = lowered(std::string(kRay) + "pipeline:\n  - {name: train, cluster: ray, command: [python, t.py]}\n");
  const k8s::Plan plan = k8s::plan(sys);
  CHECK(plan.needs_kuberay);
  REQUIRE(plan.cluster("ray") != nullptr);
  CHECK(plan.cluster("ray")->done().kind == "RayCluster");
  CHECK(k8s::wait_condition(plan.cluster("ray")->done().ready) == "jsonpath={.status.state}=ready");
  const k8s::Workload* train = plan.workload("train");
  CHECK(train->on == "ray");
  CHECK(train->objects.size() == 1);
  CHECK(train->done().kind == "RayJob");
  CHECK_THROWS(k8s::logs_ref(train->done()));  // HTTPMode: KubeRay makes no submitter Job
  CHECK(files(plan.apply_order()) == std::vector<std::string>{"k8s/namespace.yaml", "k8s/cluster-ray-raycluster.yaml",
                                                               "k8s/train-rayjob.yaml"});
}

TEST_CASE("a per-job Ray cluster is no object of its own") {
  System sys = lowered(std::string(kRay) + "    perJob: true\n" +
                       "pipeline:\n  - {name: train, cluster: ray, command: [python, t.py]}\n");
  const k8s::Plan plan = k8s::plan(sys);
  CHECK(plan.needs_kuberay);
  CHECK(plan.clusters.empty());
  CHECK(plan.workload("train")->done().kind == "RayJob");
}

}  // namespace trainc

namespace trainc {

TEST_CASE("an autoscaled service whose pool is full only at its largest surges below that, never stops its only pod") {
  auto rollout_at = [](int pool_max) {
    const System sys = lowered(fmt::format(
        "apiVersion: trainc/v1\nkind: TrainingSystem\nname: s\n"
        "gcp: {{project: p, region: us-central1, zone: us-central1-a}}\n"
        "cluster: {{pools: {{system: {{machine: e2-standard-4}}, "
        "l4: {{machine: g2-standard-8, autoscaling: {{min: 1, max: {}}}}}}}}}\n"
        "services: {{chat: {{pool: l4, vllm: {{model: m/m}}, autoscaling: {{min: 1, max: 3}}}}}}\n",
        pool_max));
    const k8s::Plan plan = k8s::plan(sys);
    for (const auto& o : plan.services.at(0).objects)
      if (o.role == k8s::Role::kServer) return o.rollout;
    return std::optional<k8s::Rollout>{};
  };
  // One L4 per pod, three nodes at most: full at three replicas, room for a surge pod below.
  const auto three = rollout_at(3);
  REQUIRE(three);
  CHECK(three->max_surge == 1);
  CHECK(three->max_unavailable_percent == 34);
  // The Deployment controller rounds maxUnavailable's percentage down per replica count
  // (deployment/util ResolveFenceposts): none at 1 and 2, where a surge pod fits; one at 3.
  for (const auto& [replicas, stopped] : std::vector<std::pair<int, int>>{{1, 0}, {2, 0}, {3, 1}})
    CHECK(replicas * three->max_unavailable_percent / 100 == stopped);
  CHECK_FALSE(three->outage(1));
  // Room for a fourth pod at the largest: Kubernetes' default (25% surge, rounded up) fits.
  CHECK_FALSE(rollout_at(4));
}

}  // namespace trainc
