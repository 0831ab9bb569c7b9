#include "model/placement.h"

#include <doctest/doctest.h>

#include "frontend/yaml_loader.h"
#include "model/catalog.h"
#include "model/lower.h"
#include "model/test_lowered.h"

namespace trainc {
namespace {

using testing::lowered;

/// A system whose CPU pool of `nodes` e2-standard-8 holds one Dask worker group per entry of
/// `cores` (each group one pod asking for that many cores and 1Gi), under one scheduler elsewhere.
/// The pool is tainted, so the system pods (kube-dns, ...) go to the other one.
std::string spec(int nodes, const std::vector<double>& cores) {
  std::string s =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    sys: {machine: e2-standard-4}\n    cpu: {machine: e2-standard-8, nodes: " +
      std::to_string(nodes) +
      ", taints: [{key: dedicated, value: d, effect: NoSchedule}]}\n"
      "clusters:\n  d:\n    engine: dask\n    image: i\n    scheduler: {pool: sys, resources: {requests: {cpu: '1', "
      "memory: 1Gi}}}\n    workers:\n";
  for (size_t i = 0; i < cores.size(); ++i)
    s += "      w" + std::to_string(i) + ": {pool: cpu, resources: {requests: {cpu: '" + std::to_string(cores[i]) +
         "', memory: 1Gi}}}\n";
  return s;
}

const Phase& lived(const Placement& p, const std::string& pool) {
  const PoolPlacement* pp = p.pool(pool);
  REQUIRE(pp != nullptr);
  return pp->phases.front();
}

}  // namespace

TEST_CASE("a node's room is allocatable less the DaemonSets its configuration runs, margin included") {
  const System sys = lowered(spec(1, {1}));
  const Pool& cpu = sys.pools.at("cpu");
  CHECK(cpu.reserve.cores > cpu.reserve.margin_cores);  // kube-proxy and the rest, on top of the margin
  CHECK(cpu.room_cpu() == doctest::Approx(cpu.allocatable_cpu - cpu.reserve.cores));
  CHECK(std::find(cpu.reserve.daemonsets.begin(), cpu.reserve.daemonsets.end(), "kube-system/kube-proxy") !=
        cpu.reserve.daemonsets.end());
  // No GPU DaemonSets on a CPU pool.
  CHECK(std::find(cpu.reserve.daemonsets.begin(), cpu.reserve.daemonsets.end(), "kube-system/nvidia-gpu-device-plugin") ==
        cpu.reserve.daemonsets.end());
}

TEST_CASE("the exact search places what first fit leaves out") {
  // Two nodes; pods of 40%, 40%, 30% x4 of a node's room. First fit decreasing puts both 40%s
  // on node 1 and leaves a 30% out; 40+30+30 on each node holds them all.
  const System probe = lowered(spec(2, {1}));
  const double room = probe.pools.at("cpu").room_cpu();
  auto share = [&](double f) { return std::floor(room * f * 1000) / 1000; };
  const System sys = lowered(spec(2, {share(0.4), share(0.4), share(0.3), share(0.3), share(0.3), share(0.3)}));
  const Placement p = place(sys);
  const Phase& ph = lived(p, "cpu");
  CHECK(ph.unplaced.empty());
  CHECK(ph.proven);
  for (const auto& n : ph.nodes) {
    CHECK(n.pods.size() == 3);
    CHECK(n.cores <= room + 1e-9);
  }
}

TEST_CASE("pods that no placement holds are left out, and the nodes that would hold them are counted") {
  const System probe = lowered(spec(2, {1}));
  const double room = probe.pools.at("cpu").room_cpu();
  const double big = std::floor(room * 0.6 * 1000) / 1000;
  const System sys = lowered(spec(2, {big, big, big}));  // three 60% pods, two nodes
  const Placement p = place(sys);
  const Phase& ph = lived(p, "cpu");
  REQUIRE(ph.unplaced.size() == 1);
  CHECK(ph.proven);
  std::vector<FinalPod> all = ph.unplaced;
  for (const auto& n : ph.nodes) all.insert(all.end(), n.pods.begin(), n.pods.end());
  CHECK(nodes_needed(*p.pool("cpu"), all, 5) == 3);
}

TEST_CASE("whole-node pods fill their node's room exactly, with their sidecars and the operator's containers") {
  const System sys = lowered(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    head: {machine: e2-standard-8}\n"
      "    gpu: {machine: n1-standard-8, accelerator: {type: nvidia-tesla-t4, count: 4}, nodes: 1}\n"
      "storage:\n  data: {gcs: {bucket: some-bucket}}\n"
      "clusters:\n  ray:\n    engine: ray\n    image: rayproject/ray:2.9.0\n    head: {pool: head}\n"
      "    workers: {gpu: {pool: gpu, min: 0, max: 1}}\n    mounts: [{store: data, path: /data}]\n");
  const Placement p = place(sys);
  const Phase& head = lived(p, "head");
  REQUIRE(head.nodes.size() == 1);
  // The head pool is the system's only untainted CPU pool: the system pods share its node.
  const FinalPod* found = nullptr;
  bool system = false;
  for (const auto& pod : head.nodes[0].pods) {
    if (pod.kind == "system") system = true;
    else found = &pod;
  }
  CHECK(system);
  REQUIRE(found != nullptr);
  const FinalPod& pod = *found;
  bool autoscaler = false, fuse = false;
  for (const auto& c : pod.containers) {
    autoscaler = autoscaler || c.name == "autoscaler";
    fuse = fuse || c.name == "gke-gcsfuse-sidecar";
  }
  CHECK(autoscaler);
  CHECK(fuse);
  const Pool& pool = sys.pools.at("head");
  // It leaves room for every system pod that may land on its pool and the catalog's slack, and
  // fills the rest.
  const double share = system_share(sys, pool).first + catalog().whole_node_slack().cores;
  CHECK(share > catalog().whole_node_slack().cores);
  CHECK(pod.cores() <= pool.room_cpu() - share + 1e-9);
  CHECK(pod.cores() > pool.room_cpu() - share - 0.001);  // whole millicores
  CHECK(head.nodes[0].cores <= pool.room_cpu() + 1e-9);
  CHECK(head.nodes[0].bytes <= pool.room_memory() + 0.5);
  CHECK(head.unplaced.empty());
  CHECK(lived(p, "gpu").unplaced.empty());
}

TEST_CASE("a CPU pod that names no pool never goes to a tainted pool, nor to a GPU pool beside a CPU pool") {
  const std::string head =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    gpu: {machine: n1-standard-4, accelerator: {type: nvidia-tesla-t4, count: 1}, nodes: 1}\n";
  const std::string step = "pipeline:\n  - name: prep\n    image: i\n    command: [x]\n";
  // GKE taints GPU nodes beside a CPU pool; this one is tainted too.
  const System tainted =
      lowered(head + "    cpu: {machine: e2-standard-4, taints: [{key: k, value: v, effect: NoSchedule}]}\n" + step);
  CHECK(gpu_pools_tainted(tainted));
  const Placement p = place(tainted);
  bool prep_nowhere = false;
  for (const auto& entry : p.nowhere) prep_nowhere = prep_nowhere || entry.second.workload == "prep";
  CHECK(prep_nowhere);
  // Without a CPU pool GKE leaves the GPU nodes untainted, and the pod may run there.
  const System gpu_only = lowered(head + step);
  CHECK_FALSE(gpu_pools_tainted(gpu_only));
  CHECK(place(gpu_only).nowhere.empty());
}

}  // namespace trainc

namespace trainc {

TEST_CASE("a step of many pods is one entry, packed a run of nodes at a time, numbered in order") {
  // 1000 nodes; 2500 pods of 40% of a node's room: two fit a node, so 2000 are placed, two per
  // node, as one run of 1000 nodes, and 500 are left.
  const System probe = lowered(spec(1, {1}));
  const double room = probe.pools.at("cpu").room_cpu();
  const std::string cores = std::to_string(std::floor(room * 0.4 * 1000) / 1000);
  const System sys = lowered(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    sys: {machine: e2-standard-4}\n"
      "    cpu: {machine: e2-standard-8, nodes: 1000, taints: [{key: dedicated, value: d, effect: NoSchedule}]}\n"
      "pipeline:\n  - {name: s, image: i, command: [x], pool: cpu, nodes: 2500, resources: {requests: {cpu: '" +
      cores + "'}}}\n");
  const std::vector<FinalPod> pods = step_pods(sys, sys.steps.front());
  REQUIRE(pods.size() == 1);
  CHECK(pods.front().count == 2500);
  const Placement p = place(sys);
  const PoolPlacement& pool = *p.pool("cpu");
  REQUIRE(pool.phases.size() == 2);
  const Phase& step = pool.phases[1];
  REQUIRE(step.nodes.size() == 1);
  CHECK(step.nodes[0].count == 1000);
  REQUIRE(step.nodes[0].pods.size() == 1);
  CHECK(step.nodes[0].pods[0].count == 2);  // node t holds s[2t] and s[2t+1]
  CHECK(step.nodes[0].pods[0].index == 0);
  REQUIRE(step.unplaced.size() == 1);
  CHECK(step.unplaced[0].count == 500);
  CHECK(step.unplaced[0].index == 2000);
  CHECK(step.proven);  // more than the nodes hold of them alone: known without a search
  // The nodes that would hold them: 1250, from the sum, not by trying each count.
  CHECK(nodes_needed(pool, pods, 100000) == 1250);
  CHECK_FALSE(nodes_needed(pool, pods, 1249).has_value());
}

TEST_CASE("a node runs at most GKE's pods per node, its DaemonSets' included") {
  const System sys = lowered(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    cpu: {machine: e2-standard-8, nodes: 1}\n"
      "pipeline:\n  - {name: s, image: i, command: [x], pool: cpu, nodes: 500,\n"
      "     resources: {requests: {cpu: 1m, memory: 1Mi}}}\n");  // pods that ask next to nothing
  const Placement p = place(sys);
  const PoolPlacement& pool = *p.pool("cpu");
  const Pool& cpu = sys.pools.at("cpu");
  CHECK(pool.room_pods == 110 - static_cast<long long>(cpu.reserve.daemonsets.size()));
  const Phase& step = pool.phases[1];
  REQUIRE(step.nodes.size() == 1);
  CHECK(step.nodes[0].slots == pool.room_pods);  // the system pods and as many of the step's as fit
  CHECK(pod_count(step.unplaced) == 500 - (pool.room_pods - pool.phases[0].nodes[0].slots));
}

TEST_CASE("first fit over runs of nodes places exactly as pod by pod over single nodes") {
  // Pods of 30% and 45% on 3 nodes: 45, 45 | 45, 45 | 30, 30, 30 by first fit decreasing.
  const System probe = lowered(spec(1, {1}));
  const double room = probe.pools.at("cpu").room_cpu();
  auto share = [&](double f) { return std::floor(room * f * 1000) / 1000; };
  std::string s = spec(3, {});
  s += "      big: {pool: cpu, replicas: 4, resources: {requests: {cpu: '" + std::to_string(share(0.45)) +
       "', memory: 1Gi}}}\n      small: {pool: cpu, replicas: 3, resources: {requests: {cpu: '" +
       std::to_string(share(0.3)) + "', memory: 1Gi}}}\n";
  const Placement p = place(lowered(s));
  const Phase& ph = lived(p, "cpu");
  CHECK(ph.unplaced.empty());
  REQUIRE(ph.nodes.size() == 2);
  CHECK(ph.nodes[0].count == 2);
  REQUIRE(ph.nodes[0].pods.size() == 1);
  CHECK(ph.nodes[0].pods[0].workload == "d/big");
  CHECK(ph.nodes[0].pods[0].count == 2);
  CHECK(ph.nodes[1].count == 1);
  REQUIRE(ph.nodes[1].pods.size() == 1);
  CHECK(ph.nodes[1].pods[0].workload == "d/small");
  CHECK(ph.nodes[1].pods[0].count == 3);
}

TEST_CASE("surge room: what the long-lived phase still holds beside a group, and nothing for one not placed") {
  // Three e2-standard-8 nodes; group w0 asks for 5 cores a pod, w1 for 1 core. Each node holds one
  // 5-core pod; after w0's pod and w1's the nodes have room for two more w0 pods.
  const System three = lowered(spec(3, {5, 1}));
  const Placement p = place(three);
  CHECK(surge_room(p, "d/w0", 10) == 2);
  CHECK(surge_room(p, "d/w0", 1) == 1);  // at most the limit
  CHECK(surge_room(p, "d/none", 10) == std::nullopt);
  // One node: the 5-core pod and the 1-core pod leave no room for another 5 cores.
  const System one = lowered(spec(1, {5, 1}));
  CHECK(surge_room(place(one), "d/w0", 10) == 0);
}

}  // namespace trainc

namespace trainc {

TEST_CASE("a Dask scheduler the spec does not size leaves its client steps room on their one node") {
  // Seed 000 as a newcomer writes it: the scheduler and the client steps on one e2-standard-8.
  const System sys = testing::lowered(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: s\n"
      "gcp: {project: p, region: us-central1, zone: us-central1-b}\n"
      "cluster: {pools: {system: {machine: e2-standard-8}, "
      "a4: {machine: a4-highgpu-8g, provisioning: flex-start, autoscaling: {min: 0, max: 2}}}}\n"
      "storage: {data: {gcs: {bucket: b}}}\n"
      "identity: {serviceAccount: ksa, gcpServiceAccount: gsa}\n"
      "clusters: {dask: {engine: dask, image: img, scheduler: {pool: system}, workers: {b200: {pool: a4, replicas: 2}},\n"
      "  mounts: [{store: data, path: /data}]}}\n"
      "pipeline:\n"
      "  - {name: datagen, cluster: dask, command: [python, datagen.py], mounts: [{store: data, path: /data}]}\n"
      "  - {name: train, needs: [datagen], cluster: dask, command: [python, train.py], mounts: [{store: data, path: /data}]}\n");
  const Placement placed = place(sys);
  for (const auto& pp : placed.pools)
    for (const auto& ph : pp.phases) CHECK_MESSAGE(ph.unplaced.empty(), pp.pool->name << " " << ph.name);
  // Still the most of the node: the whole node less one client step (2 cores and its GCS FUSE sidecar).
  const double scheduler = std::get<Dask>(sys.clusters.at("dask").engine).scheduler.resources.requested("cpu");
  CHECK(scheduler > 3.5);
  CHECK(scheduler < 5);
}

}  // namespace trainc
