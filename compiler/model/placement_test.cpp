#include "model/placement.h"

#include <doctest/doctest.h>

#include "frontend/yaml_loader.h"
#include "model/lower.h"

namespace trainc {
namespace {

System lowered(const std::string& text) {
  Diagnostics diags;
  auto doc = load_yaml(std::make_shared<SourceFile>("s.yaml", text), diags);
  REQUIRE(doc);
  auto sys = lower(*doc, diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  return std::move(*sys);
}

/// A system whose CPU pool of `nodes` e2-standard-8 holds one Dask worker group per entry of
/// `cores` (each group one pod asking for that many cores and 1Gi), under one scheduler elsewhere.
std::string spec(int nodes, const std::vector<double>& cores) {
  std::string s =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    sys: {machine: e2-standard-4}\n    cpu: {machine: e2-standard-8, nodes: " +
      std::to_string(nodes) +
      "}\n"
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
  REQUIRE(head.nodes[0].pods.size() == 1);
  const FinalPod& pod = head.nodes[0].pods[0];
  bool autoscaler = false, fuse = false;
  for (const auto& c : pod.containers) {
    autoscaler = autoscaler || c.name == "autoscaler";
    fuse = fuse || c.name == "gke-gcsfuse-sidecar";
  }
  CHECK(autoscaler);
  CHECK(fuse);
  const Pool& pool = sys.pools.at("head");
  CHECK(pod.cores() <= pool.room_cpu() + 1e-9);
  CHECK(pod.cores() > pool.room_cpu() - 0.001);  // whole millicores
  CHECK(head.unplaced.empty());
  CHECK(lived(p, "gpu").unplaced.empty());
}

TEST_CASE("a CPU pod that names no pool goes to an untainted CPU pool, never to a GPU pool") {
  const System sys = lowered(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    gpu: {machine: n1-standard-4, accelerator: {type: nvidia-tesla-t4, count: 1}, nodes: 1}\n"
      "pipeline:\n  - name: prep\n    image: i\n    command: [x]\n");
  const Placement p = place(sys);
  REQUIRE(p.nowhere.size() == 1);
  CHECK(p.nowhere[0].second.workload == "prep");
}

}  // namespace trainc
