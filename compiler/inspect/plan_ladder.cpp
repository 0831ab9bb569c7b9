// The plan's capacity ladders (spec `capacity`): per rung its node pool, its price, what a step
// costs there and what is known of the wait, each with its source; and what happens when a better
// rung frees.
#include <cmath>

#include <fmt/format.h>

#include "inspect/plan.h"
#include "k8s/queue.h"
#include "model/catalog.h"

namespace trainc {
namespace {

/// What is known of the wait for a rung's nodes, and where that is from.
std::pair<std::string, std::string> wait_of(const Pool& rung, int max_run_seconds) {
  const std::string consumption = "cloud.google.com/ai-hypercomputer/docs/consumption-models";
  if (rung.provisioning == "reservation")
    return {"none while the reservation has room: its nodes are there already (Kueue admits a step here while "
            "this rung's quota has room, else tries the next rung)",
            consumption + " (reservations: capacity assured); kueue v0.19.2 flavor order"};
  if (rung.provisioning == "queued")
    return {fmt::format("until GKE has all of a step's nodes at once (no bound is published); the step asks to keep them "
                        "{}; a failed request is retried 3 times, then the step is deactivated, and the rungs after this "
                        "one are tried only while its quota is taken",
                        max_run_seconds > 0 ? fmt::format("at most {} s", max_run_seconds) : "as long as its timeout, at most 7 days"),
            catalog().queued_provisioning().source};
  if (rung.provisioning == "flex-start")
    return {"until capacity is found, node by node (no bound is published); each VM runs at most 7 days",
            consumption + " (flex-start: best effort, up to 7 days)"};
  if (rung.provisioning == "spot")
    return {"none when Compute Engine has spare capacity, else a stockout (the nodes never come); preempted at any "
            "time (the goodput section counts it)",
            consumption + " (Spot: best effort, preemptible)"};
  return {"none when the zone has capacity, else a stockout (on-demand is best effort)",
          "cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability"};
}

}  // namespace

void plan_ladders(const System& sys, ResourcePlan& plan) {
  const k8s::PodsReady ready = k8s::pods_ready(sys);
  for (const auto& [name, pool] : sys.pools) {
    if (!pool.laddered()) continue;
    LadderPlan l;
    l.pool = name;
    const auto rungs = pool.rung_pools();
    for (size_t i = 0; i < rungs.size(); ++i) {
      const Pool& r = rungs[i];
      RungPlan rp;
      rp.node_pool = r.name;
      rp.provisioning = r.provisioning;
      rp.reservation = r.reservation;
      rp.min_nodes = r.node_range().min;
      rp.max_nodes = r.node_range().max;
      for (const auto& p : plan.pools)
        if (p.name == r.name) {
          rp.node_price = p.node_price;
          rp.price_basis = p.price_basis;
        }
      std::tie(rp.wait, rp.wait_source) = wait_of(r, pool.ladder[i].max_run_seconds);
      l.rungs.push_back(std::move(rp));
    }
    for (const auto& w : plan.workloads) {
      if (w.pool != name || !w.kind.starts_with("step/")) continue;
      std::vector<std::optional<double>> costs;
      const int per_node = pool.accelerator ? pool.accelerator->count : pool.tpu ? pool.tpu->chips_per_host : 0;
      for (const auto& rp : l.rungs)
        costs.push_back(w.accelerator_hours && rp.node_price && per_node > 0
                            ? std::optional<double>(*w.accelerator_hours * *rp.node_price / per_node)
                            : std::nullopt);
      l.step_costs.emplace_back(w.name, std::move(costs));
    }
    l.moving_back = fmt::format(
        "A step stays on the rung it was admitted on until it ends: Kueue v0.19.2 moves a running workload to a "
        "better flavor only with ConcurrentAdmission, an alpha feature that is off, and trainc turns on no alpha "
        "features. When its nodes go (a spot preemption) and its pods are not Ready again within waitForPodsReady's "
        "recoveryTimeout ({} s), Kueue evicts it and queues it again; it is then admitted from the first rung with "
        "room, so it moves back up, restarting from its last checkpoint (the goodput section prices a restart).",
        ready.recovery_seconds);
    plan.ladders.push_back(std::move(l));
  }
}

std::string render_ladders_text(const ResourcePlan& plan) {
  std::string out;
  auto money = [](const std::optional<double>& v) { return v ? fmt::format("${:.2f}", *v) : std::string("-"); };
  for (const auto& l : plan.ladders) {
    out += fmt::format("Capacity ladder of pool {} (Kueue admits each step on the first rung with room)\n", l.pool);
    std::vector<std::vector<std::string>> rows{{"rung", "node pool", "provisioning", "nodes", "per node"}};
    for (const auto& [step, _] : l.step_costs) rows[0].push_back("step " + step);
    for (size_t i = 0; i < l.rungs.size(); ++i) {
      const RungPlan& r = l.rungs[i];
      std::vector<std::string> row{std::to_string(i + 1), r.node_pool,
                                   r.provisioning + (r.reservation.empty() ? "" : " " + r.reservation),
                                   r.min_nodes == r.max_nodes ? std::to_string(r.max_nodes)
                                                              : fmt::format("{}-{}", r.min_nodes, r.max_nodes),
                                   money(r.node_price)};
      for (const auto& [_, costs] : l.step_costs) row.push_back(costs[i] ? "<= " + money(costs[i]) : "-");
      rows.push_back(std::move(row));
    }
    out += render_table(rows);
    out += "  The wait on each rung:\n";
    for (size_t i = 0; i < l.rungs.size(); ++i)
      out += fmt::format("  {}. {}: {} [{}]\n", i + 1, l.rungs[i].node_pool, l.rungs[i].wait, l.rungs[i].wait_source);
    out += "  " + l.moving_back + "\n\n";
  }
  return out;
}

nlohmann::ordered_json ladders_json(const ResourcePlan& plan) {
  using ojson = nlohmann::ordered_json;
  auto usd = [](const std::optional<double>& v) { return v ? ojson(std::round(*v * 1e4) / 1e4) : ojson(nullptr); };
  ojson out = ojson::array();
  for (const auto& l : plan.ladders) {
    ojson rungs = ojson::array();
    for (size_t i = 0; i < l.rungs.size(); ++i) {
      const RungPlan& r = l.rungs[i];
      ojson costs = ojson::object();
      for (const auto& [step, c] : l.step_costs) costs[step] = usd(c[i]);
      rungs.push_back({{"nodePool", r.node_pool},
                       {"provisioning", r.provisioning},
                       {"reservation", r.reservation.empty() ? ojson(nullptr) : ojson(r.reservation)},
                       {"nodes", {{"min", r.min_nodes}, {"max", r.max_nodes}}},
                       {"pricePerNodeHour", usd(r.node_price)},
                       {"priceBasis", r.price_basis},
                       {"stepCostBounds", costs},
                       {"wait", r.wait},
                       {"waitSource", r.wait_source}});
    }
    out.push_back({{"pool", l.pool}, {"rungs", rungs}, {"movingBack", l.moving_back}});
  }
  return out;
}

}  // namespace trainc
