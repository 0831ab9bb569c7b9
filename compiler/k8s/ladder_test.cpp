// A capacity ladder (spec `capacity`) as GKE and Kueue get it: one node pool and one flavor per rung,
// in order, and queued provisioning's admission check limited to its rung's flavor.
#include <doctest/doctest.h>

#include "k8s/clusters.h"
#include "k8s/names.h"
#include "k8s/plan.h"
#include "k8s/queue.h"
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
    cpu: {machine: e2-standard-4}
    h100:
      machine: a3-highgpu-8g
      nodes: 4
      capacity:
        - {reservation: r1, project: other-project, block: b1, nodes: 2}
        - {reservation: r2}
        - {provisioning: queued, maxRunDuration: 2h}
        - spot
pipeline:
  - name: train
    image: us-docker.pkg.dev/p/ml/train:1.0
    pool: h100
    nodes: 2
    gpus: 8
    command: [python3, train.py]
    timeout: 30m
)";

}  // namespace

TEST_CASE("a ladder is one GKE node pool per rung, named by kind, sized by rung, in order") {
  const System sys = testing::lowered(kSpec);
  const Pool& h = sys.pools.at("h100");
  REQUIRE(h.laddered());
  const auto rungs = h.rung_pools();
  REQUIRE(rungs.size() == 4);
  CHECK(rungs[0].name == "h100-reserved");
  CHECK(rungs[0].reservation == "projects/other-project/reservations/r1/reservationBlocks/b1");
  CHECK(rungs[0].node_range().min == 2);
  CHECK(rungs[0].node_range().max == 2);
  CHECK(rungs[1].name == "h100-reserved-2");
  CHECK(rungs[1].reservation == "r2");
  CHECK(rungs[1].node_range().max == 4);  // the pool's nodes
  CHECK(rungs[2].name == "h100-queued");
  CHECK(rungs[2].provisioning == "queued");
  CHECK(rungs[2].node_range().min == 0);
  CHECK(rungs[3].name == "h100-spot");
  CHECK(rungs[3].node_range().max == 4);
  CHECK(h.node_pools() == std::vector<std::string>{"h100-reserved", "h100-reserved-2", "h100-queued", "h100-spot"});
  // Every node pool of the system, pools by name: cpu, then h100's rungs.
  const auto all = sys.gke_pools();
  REQUIRE(all.size() == 5);
  CHECK(all[0].name == "cpu");
  CHECK(all[4].ladder_of == "h100");
}

TEST_CASE("the ClusterQueue lists the rungs' flavors in order, asks GKE for nodes only on the queued rung") {
  const System sys = testing::lowered(kSpec);
  Object cq_obj{Role::kClusterQueue, "kueue.x-k8s.io/v1beta2", "ClusterQueue", cluster_queue_name(sys), "k8s/clusterqueue.yaml", ""};
  const ojson cq = cluster_queue(sys, cq_obj);
  const ojson& flavors = cq["spec"]["resourceGroups"][0]["flavors"];
  REQUIRE(flavors.size() == 5);
  const auto rungs = sys.pools.at("h100").rung_pools();
  CHECK(flavors[0]["name"] == queue_flavor_name(sys, sys.pools.at("cpu")));
  for (size_t i = 0; i < rungs.size(); ++i) CHECK(flavors[i + 1]["name"] == queue_flavor_name(sys, rungs[i]));
  CHECK(cq["spec"]["flavorFungibility"]["whenCanPreempt"] == "TryNextFlavor");
  const ojson& checks = cq["spec"]["admissionChecksStrategy"]["admissionChecks"];
  REQUIRE(checks.size() == 1);
  CHECK(checks[0]["name"] == queued_check_name(sys));
  CHECK(checks[0]["onFlavors"] == ojson::array({queue_flavor_name(sys, rungs[2])}));
}

TEST_CASE("a queued step asks for the rung's maxRunDuration; without one, its timeout") {
  System sys = testing::lowered(kSpec);
  CHECK(provisioning_annotations(sys, sys.steps[0])["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "7200");
  sys.pools.at("h100").ladder[2].max_run_seconds = 0;
  CHECK(provisioning_annotations(sys, sys.steps[0])["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "1800");
  sys.steps[0].pool = "cpu";
  CHECK(provisioning_annotations(sys, sys.steps[0]).empty());
}

TEST_CASE("a RayJob that brings its own cluster onto a queued pool carries the request's parameters; a shared one none") {
  const std::string spec = R"(apiVersion: trainc/v1
kind: TrainingSystem
name: sys
gcp: {project: p, region: us-central1, zone: us-central1-c}
queue: {name: team}
cluster:
  pools:
    cpu: {machine: e2-standard-8}
    h100: {machine: a3-highgpu-8g, provisioning: queued, autoscaling: {min: 0, max: 2}}
clusters:
  ray:
    engine: ray
    image: rayproject/ray:2.52.0-py310-gpu
    perJob: true
    head: {pool: cpu}
    workers:
      gpu: {pool: h100, replicas: 2}
pipeline:
  - {name: train, cluster: ray, command: [python, train.py], timeout: 2h}
)";
  System sys = testing::lowered(spec);
  const Plan p = plan(sys);
  const ojson rj = ray_job(sys, sys.steps[0], p.workload("train")->done());
  REQUIRE(rj["metadata"].contains("annotations"));
  CHECK(rj["metadata"]["annotations"]["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "7200");
  // Its head alone on the queued pool is enough; on no queued pool, nothing.
  CHECK(provisioning_annotations(sys, sys.steps[0], {"cpu"}).empty());
  CHECK(provisioning_annotations(sys, sys.steps[0], {"h100"}).size() == 1);
}

}  // namespace trainc::k8s
