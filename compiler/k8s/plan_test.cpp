#include "k8s/plan.h"

#include <doctest/doctest.h>

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
