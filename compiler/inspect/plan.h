#pragma once
// `trainc plan`: what a system will hold before anyone pays for it. Per pool the machines, nodes,
// accelerators, the Compute Engine quota metrics they count against and an hourly price range
// (stdlib/prices.yaml); per step, cluster and service the pods and accelerators they ask for, and
// for steps with a timeout an upper bound on accelerator-hours. Rendered as text or as JSON
// (schemas/plan.v1.schema.json).
#include <nlohmann/json.hpp>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "model/goodput.h"
#include "model/model.h"
#include "model/placement.h"

namespace trainc {

/// One quota metric's need, summed over pools in the region at their largest.
struct QuotaNeed {
  std::string metric;
  long long amount = 0;
  std::vector<std::string> pools;  ///< the pools that count against it
};

struct PoolPlan {
  std::string name, machine, provisioning;
  std::string ladder_of;  ///< a rung's node pool: the laddered pool it belongs to
  std::vector<std::string> node_pools;  ///< GKE node pools (one per TPU slice)
  int min_nodes = 0, max_nodes = 0;     ///< over all of its node pools
  /// The nodes that stay up at the least: min_nodes, and at least the nodes that hold the pods
  /// that never go away at their fewest (GKE's system pods, compute clusters' leads and worker
  /// groups at their minimum, services at their minimum replicas), which the cluster autoscaler
  /// cannot remove.
  int floor_nodes = 0;
  std::vector<std::string> floor_pods;  ///< which workloads keep floor_nodes up ("system" for GKE's)
  int vcpus_per_node = 0;
  double memory_gib_per_node = 0;
  std::string accelerator;  ///< GPU label or TPU accelerator label; "" for CPU pools
  int gpus_per_node = 0, chips_per_node = 0;
  std::string tpu_topology;          ///< "" unless a TPU pool
  int disk_gb = 0;                   ///< boot disk per node as GKE creates it
  bool disks_counted = true;         ///< false when the boot disk's quota metric is not known
  std::vector<QuotaNeed> quota;      ///< this pool's needs at max scale
  std::optional<double> node_price;  ///< per node per hour; nullopt = not in the price table
  std::string price_basis;           ///< which price applies (on-demand, spot, ...), or why there is none
  std::string price_source, price_date;
  long long max_gpus() const { return static_cast<long long>(gpus_per_node) * max_nodes; }
  long long max_chips() const { return static_cast<long long>(chips_per_node) * max_nodes; }
};

/// A long GPU step's expected failures and the share of its GPU time they cost (plan_goodput.cpp,
/// model/goodput.h); each triple is at the low, central and high rate of stdlib/failures.yaml.
struct GoodputPlan {
  long long gpus = 0;
  std::optional<int> length_seconds;  ///< the step's timeout; nullopt = no bound
  std::string provisioning = "standard";  ///< its pool's: spot adds preemptions to `failures`
  long long spot_nodes = 0;               ///< the nodes whose preemption ends an attempt (spot only)
  StepFailures failures;
  /// How it checkpoints: "declared" (checkpoints.every), "undeclared" (checkpoints without every),
  /// "none", "rounds" (trainrt xgboost's checkpointEvery), "shards" (datagen resumes by shard).
  std::string checkpoints;
  std::optional<int> every_seconds;
  int cost_seconds = 0, restart_seconds = 0;
  bool cost_estimated = true;  ///< the spec gives no checkpoints.cost: stdlib/failures.yaml's estimate
  /// Share of GPU time lost (restart, recompute, checkpoint writes); nullopt when the interval (or,
  /// without checkpoints, the length) is not known.
  std::optional<std::array<double, 3>> lost;
  std::array<double, 3> best_interval{}, best_lost{};  ///< Daly's interval (seconds) and what it loses
};

/// A step, a compute cluster's pod group, or a service's replicas.
struct WorkloadPlan {
  std::string kind;     ///< step/<kind>, cluster/<engine>, service/<server>
  std::string name;     ///< step name; cluster or service name, with "/<group>" for a pod group
  std::string pool;     ///< "" = anywhere
  std::string cluster;  ///< steps on a compute cluster: its name
  int min_pods = 0, max_pods = 0;
  int gpus_per_pod = 0, chips_per_pod = 0;
  std::optional<int> timeout_seconds;  ///< steps only
  int retries = 0;
  /// The attempts its timeout bounds one at a time: 1 for a Job (its activeDeadlineSeconds spans
  /// its retries and disruptions), retries + 1 for a JobSet (a TPU step or a gang), whose every
  /// restart makes new Jobs with a fresh activeDeadlineSeconds.
  int attempts = 1;
  /// A JobSet restarts on a disruption without counting it against maxRestarts: each one may add
  /// another timeout's accelerator-hours, which no controller bounds.
  bool disruptions_unbounded = false;
  /// Steps with a timeout: GPUs (or TPU chips) x timeout x attempts, the most the step can hold
  /// them for, disruptions of a JobSet aside (disruptions_unbounded).
  std::optional<double> accelerator_hours;
  std::optional<double> cost_bound;  ///< accelerator-hours priced at the pool's per-accelerator rate
  /// What its Kueue PodSet asks of topology-aware placement (TopologyRequest::describe()); "" = nothing.
  std::string topology;
  std::optional<GoodputPlan> goodput;  ///< long GPU steps only
};

/// A pool's capacity ladder as the plan shows it (plan_ladder.cpp): per rung its node pool, what a
/// node costs there, what is known of the wait, and what each step on the pool costs on it.
struct RungPlan {
  std::string node_pool, provisioning, reservation;
  int min_nodes = 0, max_nodes = 0;
  std::optional<double> node_price;
  std::string price_basis;
  std::string wait, wait_source;
};
struct LadderPlan {
  std::string pool;
  std::vector<RungPlan> rungs;
  /// Per step on the pool: its name and its cost bound on each rung (nullopt: no bound or no price).
  std::vector<std::pair<std::string, std::vector<std::optional<double>>>> step_costs;
  std::string moving_back;  ///< what happens when a better rung frees, and what it costs
};

struct ResourcePlan {
  std::string system, project, region, zone;
  bool region_assumed = false;  ///< no `gcp:`: priced and counted as in `region`
  std::string currency;
  std::vector<PoolPlan> pools;
  std::vector<WorkloadPlan> workloads;
  std::vector<QuotaNeed> quota;  ///< summed over pools, in metric order
  int min_nodes = 0, max_nodes = 0;
  long long max_gpus = 0, max_chips = 0, max_vcpus = 0;
  double min_price = 0, max_price = 0;      ///< per hour; pools without a price are left out (and named)
  std::vector<std::string> unpriced;        ///< pools the price table has no row for
  std::optional<double> accelerator_hours;  ///< sum of the steps' bounds; nullopt if any step has none
  bool disruptions_unbounded = false;       ///< a JobSet step's disruptions may add to the bound
  std::vector<LadderPlan> ladders;           ///< the pools with a capacity ladder, by name
  std::vector<std::string> notes;
  /// Every pod on its pool's nodes (model/placement.h); its pools point into the System planned.
  Placement placement;
};

/// The region plans are priced in when a spec has no `gcp:`.
inline constexpr const char* kDefaultPlanRegion = "us-central1";

ResourcePlan make_plan(const System& sys);
std::string render_plan_text(const ResourcePlan& plan);
nlohmann::ordered_json plan_json(const ResourcePlan& plan);
/// Rows of cells as an aligned table, two spaces between columns, indented by two.
std::string render_table(const std::vector<std::vector<std::string>>& rows);
/// The goodput of `step` if it is a long GPU step (plan_goodput.cpp), on `pool` (its provisioning
/// decides the preemptions; nullptr: none).
std::optional<GoodputPlan> plan_goodput(const Step& step, const Pool* pool = nullptr);
/// The goodput table, one line per long GPU step; "" when there is none.
std::string render_goodput_text(const ResourcePlan& plan);
nlohmann::ordered_json goodput_json(const GoodputPlan& g);
/// The failure rates the goodput lines use, with their sources.
nlohmann::ordered_json failure_rates_json();
/// The capacity ladders of `sys` into plan.ladders, from its rung pools' rows of plan.pools and its
/// steps' accelerator-hour bounds (plan_ladder.cpp); the text section and JSON of them.
void plan_ladders(const System& sys, ResourcePlan& plan);
std::string render_ladders_text(const ResourcePlan& plan);
nlohmann::ordered_json ladders_json(const ResourcePlan& plan);
/// The placement table: per pool the room per node and each node's pods (plan_placement.cpp).
std::string render_placement_text(const Placement& placed);
nlohmann::ordered_json placement_json(const Placement& placed);

}  // namespace trainc
