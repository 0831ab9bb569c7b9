// `trainc plan`'s placement table: per pool what a node holds (allocatable), what its DaemonSets
// take, the room left for trainc's pods, and which pods each node gets at the pool's largest,
// long-lived pods first and each step's on top of them, with the headroom left.
#include <fmt/format.h>

#include <cmath>

#include "inspect/plan.h"
#include "model/catalog.h"

namespace trainc {
namespace {

std::string gib(double bytes) { return fmt::format("{:.2f}Gi", bytes / (1 << 30)); }

std::string amounts(double cores, double bytes, long long gpus, long long chips) {
  // A whole-node pod leaves rounding dust (its requests are whole millicores and MiB): no "-0.000".
  cores = std::abs(cores) < 5e-4 ? 0 : cores;
  bytes = std::abs(bytes) < 5e3 ? 0 : bytes;
  std::string s = fmt::format("{:.3f} cores, {}", cores, gib(bytes));
  if (gpus > 0) s += fmt::format(", {} GPU", gpus);
  if (chips > 0) s += fmt::format(", {} TPU chips", chips);
  return s;
}

/// One entry of pods on a run of `nodes` nodes: "w[3] ..." for one pod on one node, else "2 of
/// w[0-7] ..." (each node of the run takes the next `count` of them); amounts are one pod's.
std::string pod_line(const FinalPod& p, long long nodes = 1) {
  const long long last = p.index + p.count * nodes - 1;
  std::string s = p.count == 1 && nodes == 1
                      ? fmt::format("{}[{}] ", p.workload, p.index)
                      : fmt::format("{} of {}[{}-{}] ", p.count, p.workload, p.index, last);
  s += amounts(p.cores(), p.bytes(), p.gpus, p.chips);
  std::string added;
  for (const auto& c : p.containers)
    if (!c.added_by.empty())
      added += fmt::format("{}{}{} {}", added.empty() ? "" : ", ", c.init ? "init " : "", c.name, amounts(c.cores, c.bytes, 0, 0));
  return added.empty() ? s : s + " (with " + added + ")";
}

using ojson = nlohmann::ordered_json;

/// Cores to 1/1000 and bytes whole, so that goldens hold no floating-point noise.
double cores(double v) { return std::round(v * 1e3) / 1e3; }
long long bytes(double v) { return static_cast<long long>(std::floor(v + 0.5)); }

ojson amounts_json(double c, double b, long long gpus, long long chips) {
  return {{"cpu", cores(c)}, {"memory", bytes(b)}, {"gpus", gpus}, {"tpuChips", chips}};
}

ojson pod_json(const FinalPod& p) {
  ojson o = {{"workload", p.workload}, {"kind", p.kind}, {"index", p.index}, {"count", p.count}};
  const ojson amounts = amounts_json(p.cores(), p.bytes(), p.gpus, p.chips);  // alive through the loop
  for (const auto& [k, v] : amounts.items()) o[k] = v;
  o["containers"] = ojson::array();
  for (const auto& c : p.containers)
    o["containers"].push_back(
        {{"name", c.name}, {"cpu", cores(c.cores)}, {"memory", bytes(c.bytes)}, {"addedBy", c.added_by}, {"init", c.init}});
  return o;
}

}  // namespace

std::string render_placement_text(const Placement& placed) {
  if (placed.pools.empty() && placed.nowhere.empty()) return "";
  std::string out =
      "Placement at each pool's largest (pods as the cluster runs them: sidecars and operators' containers "
      "included)\n";
  for (const auto& pp : placed.pools) {
    const Pool& p = *pp.pool;
    out += fmt::format("  pool {}: {} node(s) of {}\n", p.name, pp.nodes, p.machine);
    const Sidecar& slack = catalog().whole_node_slack();
    out += fmt::format("    per node: allocatable {}; DaemonSets {} ({}; margin {}); room {}; a pod sized by "
                       "trainc to the whole node (or its GPUs' share of it) leaves {} of it free beyond that, "
                       "for pods the model does not know and the autoscaler's node template\n",
                       amounts(p.allocatable_cpu, p.allocatable_memory, pp.room_gpus, pp.room_chips),
                       amounts(p.reserve.cores, p.reserve.bytes, 0, 0), fmt::join(p.reserve.daemonsets, ", "),
                       amounts(p.reserve.margin_cores, p.reserve.margin_bytes, 0, 0),
                       amounts(pp.room_cores, pp.room_bytes, pp.room_gpus, pp.room_chips),
                       amounts(slack.cores, slack.bytes, 0, 0));
    for (size_t ph = 0; ph < pp.phases.size(); ++ph) {
      const Phase& phase = pp.phases[ph];
      out += fmt::format("    {}:\n", phase.name);
      long long first = 1;  // the run's first node
      for (const NodeLoad& n : phase.nodes) {
        const long long at = first;
        first += n.count;
        // A step's phase shows only the nodes its pods go to; the rest are as in the long-lived one.
        std::vector<const FinalPod*> shown;
        for (const auto& pod : n.pods)
          if (ph == 0 || "step " + pod.workload == phase.name) shown.push_back(&pod);
        if (ph > 0 && shown.empty()) continue;
        out += n.count == 1 ? fmt::format("      node {}: ", at) : fmt::format("      nodes {}-{}, each: ", at, first - 1);
        if (shown.empty()) out += "empty";
        for (size_t k = 0; k < shown.size(); ++k) out += (k ? "; " : "") + pod_line(*shown[k], n.count);
        out += fmt::format("; headroom {}\n", amounts(pp.room_cores - n.cores, pp.room_bytes - n.bytes,
                                                      pp.room_gpus - n.gpus, pp.room_chips - n.chips));
      }
      for (const auto& pod : phase.unplaced) out += "      would stay Pending: " + pod_line(pod) + "\n";
    }
  }
  for (const auto& [phase, pod] : placed.nowhere)
    out += fmt::format("  no pool ({}): would stay Pending: {}\n", phase, pod_line(pod));
  return out + "\n";
}

nlohmann::ordered_json placement_json(const Placement& placed) {
  ojson a = ojson::array();
  for (const auto& pp : placed.pools) {
    const Pool& p = *pp.pool;
    ojson o = {{"pool", p.name}, {"machine", p.machine}, {"nodes", pp.nodes}};
    o["allocatable"] = amounts_json(p.allocatable_cpu, p.allocatable_memory, pp.room_gpus, pp.room_chips);
    o["daemonSets"] = {{"cpu", cores(p.reserve.cores)},
                       {"memory", bytes(p.reserve.bytes)},
                       {"names", p.reserve.daemonsets},
                       {"margin", {{"cpu", cores(p.reserve.margin_cores)}, {"memory", bytes(p.reserve.margin_bytes)}}}};
    o["room"] = amounts_json(pp.room_cores, pp.room_bytes, pp.room_gpus, pp.room_chips);
    const Sidecar& slack = catalog().whole_node_slack();
    o["slack"] = {{"cpu", cores(slack.cores)}, {"memory", bytes(slack.bytes)}};
    o["phases"] = ojson::array();
    for (const auto& phase : pp.phases) {
      ojson ph = {{"name", phase.name}, {"nodes", ojson::array()}, {"unplaced", ojson::array()}};
      for (const auto& n : phase.nodes) {
        ojson node = {{"count", n.count}, {"pods", ojson::array()}};
        for (const auto& pod : n.pods) node["pods"].push_back(pod_json(pod));
        node["headroom"] = amounts_json(pp.room_cores - n.cores, pp.room_bytes - n.bytes, pp.room_gpus - n.gpus,
                                        pp.room_chips - n.chips);
        ph["nodes"].push_back(node);
      }
      for (const auto& pod : phase.unplaced) ph["unplaced"].push_back(pod_json(pod));
      o["phases"].push_back(ph);
    }
    a.push_back(o);
  }
  return a;
}

}  // namespace trainc
