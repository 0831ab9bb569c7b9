#include "inspect/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "k8s/names.h"
#include "model/catalog.h"
#include "model/pricing.h"

namespace trainc {
namespace {

/// GKE's boot disk when a pool sets no diskSizeGb.
constexpr int kDefaultDiskGb = 100;

void add_need(std::vector<QuotaNeed>& needs, const std::string& metric, long long amount, const std::string& pool) {
  if (metric.empty() || amount <= 0) return;
  for (auto& n : needs)
    if (n.metric == metric) {
      n.amount += amount;
      if (std::find(n.pools.begin(), n.pools.end(), pool) == n.pools.end()) n.pools.push_back(pool);
      return;
    }
  needs.push_back({metric, amount, {pool}});
}

/// Which price of a row a pool pays, and what the plan says about it.
std::optional<double> pick(const Price& p, const std::string& provisioning, std::string& basis) {
  if (provisioning == "spot") {
    basis = "spot";
    return p.spot;
  }
  if (provisioning == "flex-start" || provisioning == "queued") {  // both Dynamic Workload Scheduler's
    if (p.flex_start) {
      basis = "flex-start";
      return p.flex_start;
    }
    basis =
        "on-demand (no flex-start price in the table; flex-start is billed at a lower rate, so this is an upper "
        "bound)";
    return p.on_demand;
  }
  basis =
      provisioning == "reservation" ? "on-demand (a reservation is billed whether or not its VMs run)" : "on-demand";
  return p.on_demand;
}

/// How many pods of a long-lived workload stay while the system is up: a service's minimum
/// replicas, a compute cluster's lead and its worker groups' minimum (none for a per-job Ray
/// cluster, which exists only while a job runs); every system pod.
long long fewest_pods(const System& sys, const FinalPod& pod) {
  if (pod.kind.starts_with("service/")) {
    auto it = sys.services.find(pod.workload);
    return it == sys.services.end() ? pod.of : it->second.min;
  }
  if (pod.kind.starts_with("cluster/")) {
    const auto slash = pod.workload.find('/');
    const ComputeCluster* c = sys.compute_cluster(pod.workload.substr(0, slash));
    if (!c || slash == std::string::npos) return pod.of;
    if (c->per_job()) return 0;
    const std::string group = pod.workload.substr(slash + 1);
    if (group == c->lead_name()) return 1;
    for (const auto& g : c->workers)
      if (g.name == group) return g.min;
    return pod.of;
  }
  return pod.of;
}

/// The nodes of pool `name` that stay up at the least because long-lived pods hold them: the
/// system pods GKE and the add-ons run there (kube-dns and the controllers keep the node they run
/// on from scaling down), compute clusters' pods and services' replicas at their fewest, packed as
/// tightly as the pool allows. The placement spreads them over the pool at its largest, so it says
/// where, not how few; `who` gets the workloads that count ("system" for GKE's pods).
long long held_nodes(const System& sys, const Placement& placement, const std::string& name, long long limit,
                     std::vector<std::string>& who) {
  const PoolPlacement* p = placement.pool(name);
  if (!p) return 0;
  std::vector<FinalPod> pods;  // one entry per workload, its pods on this pool at their fewest
  long long occupied = 0;      // nodes the placement at the largest puts them on
  for (const Phase& phase : p->phases) {
    if (phase.name != "long-lived") continue;
    for (const NodeLoad& n : phase.nodes) {
      if (!n.pods.empty()) occupied += n.count;
      for (const FinalPod& pod : n.pods) {
        auto it = std::find_if(pods.begin(), pods.end(),
                               [&](const FinalPod& q) { return q.kind == pod.kind && q.workload == pod.workload; });
        if (it == pods.end()) {
          pods.push_back(pod);
          pods.back().index = 0;
          pods.back().count = 0;
          it = pods.end() - 1;
        }
        it->count += pod.count * n.count;  // placed here
      }
    }
  }
  std::vector<FinalPod> fewest;
  for (FinalPod pod : pods) {
    pod.count = std::min(pod.count, fewest_pods(sys, pod));
    if (pod.count <= 0) continue;
    const std::string w = pod.kind == "system" ? "system" : pod.workload;
    if (std::find(who.begin(), who.end(), w) == who.end()) who.push_back(w);
    fewest.push_back(std::move(pod));
  }
  if (fewest.empty()) return 0;
  // Fewer nodes than the placement uses, when they hold the pods; else as the placement has them.
  return nodes_needed(*p, fewest, std::max(limit, occupied), 1).value_or(occupied);
}

PoolPlan plan_pool(const Pool& pool, const std::string& region) {
  const PriceBook& book = price_book();
  PoolPlan out;
  out.name = pool.name;
  out.machine = pool.machine;
  out.provisioning = pool.provisioning;
  out.node_pools = pool.node_pools();
  const int slices = pool.tpu ? pool.tpu->slices : 1;
  const Pool::NodeRange range = pool.node_range();  // per GKE node pool, as Terraform sizes it
  out.min_nodes = range.min * slices;
  out.max_nodes = range.max * slices;
  out.vcpus_per_node = pool.vcpus;
  out.memory_gib_per_node = pool.memory_gib;
  out.disk_gb = pool.disk_gb > 0 ? pool.disk_gb : kDefaultDiskGb;
  out.ladder_of = pool.ladder_of;
  const bool preemptible = pool.provisioning == "spot" ||
                           ((pool.provisioning == "flex-start" || pool.provisioning == "queued") && book.flex_start_uses_spot_quota());
  auto metric = [&](const QuotaPair* q) { return !q ? std::string() : preemptible ? q->spot : q->on_demand; };
  if (pool.accelerator) {
    out.accelerator = pool.accelerator->type;
    out.gpus_per_node = pool.accelerator->count;
  }
  if (pool.tpu) {
    out.accelerator = pool.tpu->accelerator;
    out.chips_per_node = pool.tpu->chips_per_host;
    out.tpu_topology = pool.tpu->topology;
  }
  const long long n = out.max_nodes;
  add_need(out.quota, book.cpu_quota(pool.machine, preemptible), static_cast<long long>(pool.vcpus) * n, pool.name);
  if (pool.accelerator) add_need(out.quota, metric(book.gpu_quota(pool.accelerator->type)), out.max_gpus(), pool.name);
  if (pool.tpu) add_need(out.quota, metric(book.tpu_quota(pool.tpu->generation)), out.max_chips(), pool.name);
  add_need(out.quota, book.addresses_quota(), n, pool.name);
  const std::string disks = book.disks_quota(pool.machine);
  add_need(out.quota, disks, static_cast<long long>(out.disk_gb) * n, pool.name);
  out.disks_counted = !disks.empty();

  // The price of one node: the machine's row, plus attached GPUs' rows (N1 + T4).
  const Price* machine = book.machine(region, pool.machine);
  if (!machine) {
    out.price_basis = fmt::format("stdlib/prices.yaml has no row for {} in {}", pool.machine, region);
    return out;
  }
  std::string basis;
  std::optional<double> price = pick(*machine, pool.provisioning, basis);
  if (!price) {
    out.price_basis = fmt::format("no {} list price for {} in {}{}", basis.substr(0, basis.find(' ')), pool.machine,
                                  region, machine->note.empty() ? "" : " (stdlib/prices.yaml says why)");
    return out;
  }
  out.price_source = machine->source;
  out.price_date = machine->date;
  const MachineType* m = catalog().machine(pool.machine);
  const bool attached = pool.accelerator && m && m->gpus == 0;
  if (attached) {
    const Price* gpu = book.gpu(region, pool.accelerator->type);
    std::string gpu_basis;
    std::optional<double> each = gpu ? pick(*gpu, pool.provisioning, gpu_basis) : std::nullopt;
    if (!each) {
      out.price_basis = fmt::format("no {} list price for {} in {}", basis.substr(0, basis.find(' ')),
                                    pool.accelerator->type, region);
      return out;
    }
    *price += *each * pool.accelerator->count;
    if (gpu->date != out.price_date) out.price_date += "; " + gpu->date;
    if (gpu->source != machine->source) out.price_source += "; " + gpu->source;
  }
  out.node_price = price;
  out.price_basis = basis;
  return out;
}

/// Why the multi-pod queued steps on a pool are not placed by topology, as notes.
void topology_notes(const System& sys, std::vector<std::string>& notes) {
  if (!sys.queue) return;
  for (const auto& [name, pool] : sys.pools) {
    if (!pool.placement.why_none.empty()) {
      notes.push_back(pool.placement.why_none + ".");
      continue;
    }
    // A TPU slice is its own node pool, and a step's slice Jobs are placed one per node pool.
    if (pool.tas() || pool.topology_labels || pool.tpu) continue;
    for (const auto& st : sys.steps)
      if (st.pool == name && st.cluster.empty() && st.nodes * st.slices > 1) {
        notes.push_back(fmt::format("Pool '{}' is not placed by topology: GKE labels nodes with their block, sub-block "
                                    "and host only on {}, not {}; Kueue admits its steps by quota alone.",
                                    name, fmt::join(catalog().topology().machines, ", "), pool.machine));
        break;
      }
  }
}

/// On a ladder with a spot rung, that rung: where a step's nodes may be preempted, the worst case
/// its goodput is judged by.
std::optional<Pool> spot_rung(const System& sys, const std::string& name) {
  const Pool* p = sys.pool(name);
  if (!p || !p->laddered()) return std::nullopt;
  for (Pool& r : p->rung_pools())
    if (r.provisioning == "spot") return std::move(r);
  return std::nullopt;
}

WorkloadPlan group_plan(const System& sys, std::string kind, std::string name, const PodGroup& g) {
  WorkloadPlan w;
  w.kind = std::move(kind);
  w.name = std::move(name);
  w.pool = g.pool;
  w.min_pods = g.min;
  w.max_pods = g.max;
  w.gpus_per_pod = g.gpus;
  if (const Pool* p = sys.pool(g.pool); p && p->tpu) w.chips_per_pod = p->tpu->chips_per_host;
  return w;
}

}  // namespace

ResourcePlan make_plan(const System& sys) {
  ResourcePlan plan;
  plan.system = sys.name;
  plan.placement = place(sys);
  plan.notes = plan.placement.notes;  // steps that may start together and wait for each other
  plan.currency = price_book().currency();
  if (sys.gcp) {
    plan.project = sys.gcp->project;
    plan.region = sys.gcp->region;
    plan.zone = sys.gcp->zone;
  } else {
    plan.region = kDefaultPlanRegion;
    plan.region_assumed = true;
    if (!sys.pools.empty())
      plan.notes.push_back(
          fmt::format("The spec has no `gcp:`, so its cluster's region is not known; quota and prices "
                      "are given as in {}.",
                      kDefaultPlanRegion));
  }
  if (!price_book().has_region(plan.region))
    plan.notes.push_back(fmt::format("The price table has no rows for {} (it has {}); pools are not priced.",
                                     plan.region, fmt::join(price_book().regions(), ", ")));

  std::map<std::string, const PoolPlan*> by_name;
  for (const Pool& pool : sys.gke_pools()) plan.pools.push_back(plan_pool(pool, plan.region));
  for (auto& p : plan.pools) {
    const long long held = held_nodes(sys, plan.placement, p.name, p.max_nodes, p.floor_pods);
    p.floor_nodes = static_cast<int>(std::clamp<long long>(held, p.min_nodes, std::max(p.min_nodes, p.max_nodes)));
    if (p.floor_nodes <= p.min_nodes) continue;
    std::vector<std::string> others;
    for (const auto& w : p.floor_pods)
      if (w != "system") others.push_back(w);
    if (others.empty())
      plan.notes.push_back(fmt::format("Pool {} may scale to {} node(s), but GKE's system pods (kube-dns and the "
                                       "controllers) run on it and keep {} node(s) up: the minimum price counts them.",
                                       p.name, p.min_nodes, p.floor_nodes));
    else
      plan.notes.push_back(fmt::format(
          "Pool {} may scale to {} node(s), but pods that stay while the system is up ({}{}, at their fewest) hold {} "
          "node(s) the autoscaler cannot remove: the minimum price counts them.",
          p.name, p.min_nodes, others.size() < p.floor_pods.size() ? "GKE's system pods, " : "",
          fmt::join(others, ", "), p.floor_nodes));
  }
  for (const auto& p : plan.pools) {
    by_name[p.name] = &p;
    plan.min_nodes += p.min_nodes;
    plan.max_nodes += p.max_nodes;
    plan.max_gpus += p.max_gpus();
    plan.max_chips += p.max_chips();
    plan.max_vcpus += static_cast<long long>(p.vcpus_per_node) * p.max_nodes;
    for (const auto& q : p.quota) add_need(plan.quota, q.metric, q.amount, p.name);
    if (p.node_price) {
      plan.min_price += *p.node_price * p.floor_nodes;
      plan.max_price += *p.node_price * p.max_nodes;
    } else {
      plan.unpriced.push_back(p.name);
    }
  }
  std::sort(plan.quota.begin(), plan.quota.end(), [](const auto& a, const auto& b) { return a.metric < b.metric; });
  if (price_book().has_region(plan.region))
    for (const auto& p : plan.pools)
      if (!p.node_price)
        plan.notes.push_back(fmt::format("Pool {} is not priced: {}; the totals leave it out.", p.name, p.price_basis));
  for (const auto& p : plan.pools)
    if (!p.disks_counted)
      plan.notes.push_back(
          fmt::format("The boot disks of pool {} are not counted: the quota metric of {}'s default "
                      "boot disk type is not in stdlib/quotas.yaml.",
                      p.name, p.machine));

  // Steps: the accelerators each holds, and for how long at most.
  double hours_total = 0;
  bool bounded = true;
  for (const auto& st : sys.steps) {
    WorkloadPlan w;
    w.kind = "step/" + st.kind();
    w.name = st.name;
    w.pool = st.pool;
    w.cluster = st.cluster;
    w.min_pods = w.max_pods = st.nodes * st.slices;
    w.gpus_per_pod = st.gpus;
    const PoolPlan* pool = by_name.count(st.pool) ? by_name[st.pool] : nullptr;
    // On a ladder, the dearest rung bounds the cost (plan_ladder.cpp prices each).
    for (const auto& p : plan.pools)
      if (!st.pool.empty() && p.ladder_of == st.pool && (!pool || (p.node_price && (!pool->node_price || *p.node_price > *pool->node_price))))
        pool = &p;
    if (pool && pool->chips_per_node > 0) w.chips_per_pod = pool->chips_per_node;
    w.timeout_seconds = st.timeout_seconds;
    w.retries = st.retries;
    const std::optional<Pool> spot = spot_rung(sys, st.pool);
    w.goodput = plan_goodput(st, spot ? &*spot : sys.pool(st.pool));
    // A step's own Job (a Dask client's too); a RayJob's pods are its cluster's, below.
    if (const ComputeCluster* c = sys.compute_cluster(st.cluster); !c || c->steps_have_own_pods())
      w.topology = topology_request(sys, st).describe();
    const long long accelerators = static_cast<long long>(w.max_pods) * (w.gpus_per_pod + w.chips_per_pod);
    if (accelerators > 0) {
      if (st.timeout_seconds) {
        // A Job's activeDeadlineSeconds spans its retries and the pods a disruption replaces. A JobSet
        // (a TPU step, a gang) recreates its Jobs, each with a fresh deadline, on every restart: up to
        // `retries` counted ones, and one per disruption, which its failure policy does not count
        // (k8s/failure.cpp: RestartJobSetAndIgnoreMaxRestarts).
        if (k8s::runs_as_jobset(sys, st)) {
          w.attempts = st.retries + 1;
          w.disruptions_unbounded = true;
          plan.disruptions_unbounded = true;
        }
        w.accelerator_hours = static_cast<double>(accelerators) * w.attempts * *st.timeout_seconds / 3600.0;
        hours_total += *w.accelerator_hours;
        const int per_node = pool ? pool->gpus_per_node + pool->chips_per_node : 0;
        if (pool && pool->node_price && per_node > 0)
          w.cost_bound = *w.accelerator_hours * *pool->node_price / per_node;
      } else {
        bounded = false;
      }
    }
    plan.workloads.push_back(std::move(w));
  }
  plan_ladders(sys, plan);
  if (hours_total > 0 || bounded) plan.accelerator_hours = bounded ? std::optional<double>(hours_total) : std::nullopt;
  bool any_accelerator_step = false;
  for (const auto& w : plan.workloads)
    any_accelerator_step = any_accelerator_step || w.gpus_per_pod + w.chips_per_pod > 0;
  if (!any_accelerator_step) plan.accelerator_hours.reset();

  for (const auto& [name, cl] : sys.clusters) {
    const std::string kind = "cluster/" + cl.kind();
    plan.workloads.push_back(group_plan(sys, kind, name + "/" + std::string(cl.lead_name()), cl.lead()));
    if (cl.per_job()) plan.workloads.back().topology = topology_request(sys, sys.pool(cl.lead().pool), 1).describe();
    for (const auto& g : cl.workers) {
      plan.workloads.push_back(group_plan(sys, kind, name + "/" + g.name, g));
      if (cl.per_job()) plan.workloads.back().topology = topology_request(sys, sys.pool(g.pool), g.replicas).describe();
    }
    if (cl.per_job())
      plan.notes.push_back(
          fmt::format("Ray cluster '{}' is made per job: its pods exist only while a RayJob runs.", name));
  }
  for (const auto& [name, s] : sys.services) {
    WorkloadPlan w;
    w.kind = "service/" + s.kind();
    w.name = name;
    w.pool = s.pool;
    w.min_pods = s.min;
    w.max_pods = s.max;
    w.gpus_per_pod = s.gpus;
    plan.workloads.push_back(std::move(w));
  }
  topology_notes(sys, plan.notes);
  return plan;
}

namespace {

std::string money(double v) { return fmt::format("${:.2f}", v); }

std::string hours(double h) { return h >= 100 ? fmt::format("{:.0f}", h) : fmt::format("{:.1f}", h); }

std::string range(int lo, int hi) { return lo == hi ? std::to_string(hi) : fmt::format("{}-{}", lo, hi); }

}  // namespace

std::string render_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line = " ";
    for (size_t i = 0; i < r.size(); ++i)
      line += " " + r[i] + (i + 1 < r.size() ? std::string(width[i] - r[i].size() + 1, ' ') : "");
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

namespace {

std::string table(const std::vector<std::vector<std::string>>& rows) { return render_table(rows); }

std::string accelerators(const PoolPlan& p) {
  if (p.gpus_per_node) return fmt::format("{} x {}", p.gpus_per_node, p.accelerator);
  if (p.chips_per_node) return fmt::format("{} chips {} ({})", p.chips_per_node, p.accelerator, p.tpu_topology);
  return "-";
}

std::string duration(int s) {
  if (s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

}  // namespace

std::string render_plan_text(const ResourcePlan& plan) {
  std::string out = fmt::format("System {}", plan.system);
  if (!plan.project.empty())
    out += fmt::format(": project {}, {} {}", plan.project, plan.zone.empty() ? "region" : "zone",
                       plan.zone.empty() ? plan.region : plan.zone);
  out += "\n\n";
  if (!plan.pools.empty()) {
    out += "Pools (nodes: fixed, or min-max when autoscaled)\n";
    std::vector<std::vector<std::string>> rows{
        {"pool", "machine", "nodes", "per node", "accelerators at max", "provisioning"}};
    for (const auto& p : plan.pools) {
      std::string at_max = p.gpus_per_node    ? fmt::format("{} GPUs", p.max_gpus())
                           : p.chips_per_node ? fmt::format("{} TPU chips", p.max_chips())
                                              : "-";
      std::string name = p.name;
      if (p.node_pools.size() > 1) name += fmt::format(" ({} slices)", p.node_pools.size());
      rows.push_back({name, p.machine, range(p.min_nodes, p.max_nodes),
                      fmt::format("{} vCPU, {:g} GiB, {}", p.vcpus_per_node, p.memory_gib_per_node, accelerators(p)),
                      at_max, p.provisioning});
    }
    out += table(rows) + "\n";
  }
  if (!plan.workloads.empty()) {
    out += "Workloads\n";
    std::vector<std::vector<std::string>> rows{{"kind", "name", "pool", "pods", "per pod", "time bound"}};
    const bool topology = std::any_of(plan.workloads.begin(), plan.workloads.end(), [](const auto& w) { return !w.topology.empty(); });
    if (topology) rows[0].push_back("topology (Kueue)");
    for (const auto& w : plan.workloads) {
      std::string per_pod = w.gpus_per_pod    ? fmt::format("{} GPU", w.gpus_per_pod)
                            : w.chips_per_pod ? fmt::format("{} TPU chips", w.chips_per_pod)
                                              : "-";
      std::string bound = "-";
      if (w.kind.starts_with("step/")) {
        if (!w.timeout_seconds)
          bound = w.gpus_per_pod + w.chips_per_pod > 0 ? "no timeout: unbounded" : "no timeout";
        else if (w.accelerator_hours)
          bound = fmt::format("{}{}: <= {} {}-hours{}{}", duration(*w.timeout_seconds),
                              w.attempts > 1 ? fmt::format(" x {} attempts", w.attempts) : "",
                              hours(*w.accelerator_hours), w.gpus_per_pod ? "GPU" : "chip",
                              w.cost_bound ? fmt::format(", <= {}", money(*w.cost_bound)) : "",
                              w.disruptions_unbounded
                                  ? fmt::format(", +{} per disruption", hours(*w.accelerator_hours / w.attempts))
                                  : "");
        else
          bound = duration(*w.timeout_seconds);
      }
      const std::string where = !w.pool.empty()      ? w.pool
                                : !w.cluster.empty() ? "(client of " + w.cluster + ")"
                                                     : "(any)";
      rows.push_back({w.kind, w.name, where, range(w.min_pods, w.max_pods), per_pod, bound});
      if (topology) rows.back().push_back(w.topology.empty() ? "-" : w.topology);
    }
    out += table(rows) + "\n";
  }
  out += render_ladders_text(plan);
  out += render_goodput_text(plan);
  out += render_placement_text(plan.placement);
  if (!plan.quota.empty()) {
    out += fmt::format("Compute Engine quota in {} at max scale (check: gcloud compute regions describe {})\n",
                       plan.region, plan.region);
    std::vector<std::vector<std::string>> rows{{"metric", "needed", "pools"}};
    for (const auto& q : plan.quota)
      rows.push_back({q.metric, std::to_string(q.amount), fmt::format("{}", fmt::join(q.pools, ", "))});
    out += table(rows) + "\n";
  }
  if (!plan.pools.empty()) {
    out += fmt::format("Price per hour ({} list prices in {}; no discounts)\n", plan.currency, plan.region);
    std::vector<std::vector<std::string>> rows{{"pool", "per node", "min", "max", "basis", "price as of"}};
    for (const auto& p : plan.pools) {
      if (!p.node_price) {
        rows.push_back({p.name, "no price", "-", "-", "-", "-"});
        continue;
      }
      rows.push_back({p.name, money(*p.node_price), money(*p.node_price * p.floor_nodes),
                      money(*p.node_price * p.max_nodes), p.price_basis.substr(0, p.price_basis.find(' ')),
                      p.price_date});
    }
    if (plan.unpriced.size() < plan.pools.size())
      rows.push_back({"total", "", money(plan.min_price), money(plan.max_price), "", ""});
    else  // nothing priced: an unknown price is not $0
      rows.push_back({"total", "", "unknown", "unknown", "", ""});
    out += table(rows) + "\n";
  }
  if (plan.pools.empty()) {
    out +=
        "Totals: the spec names no pools (it runs on an existing cluster), so there are no nodes, quota or "
        "prices to count\n";
  } else {
    const std::string per_hour = money(plan.min_price) == money(plan.max_price)
                                     ? money(plan.max_price)
                                     : money(plan.min_price) + " to " + money(plan.max_price);
    out += fmt::format("Totals: {} nodes, {} vCPUs, {} GPUs, {} TPU chips at max scale; ",
                       range(plan.min_nodes, plan.max_nodes), plan.max_vcpus, plan.max_gpus, plan.max_chips);
    // A pool without a price is unknown, never $0: with none priced there is no total to give.
    if (plan.unpriced.size() == plan.pools.size())
      out += fmt::format("price unknown for {}", plan.region);
    else
      out += per_hour + " per hour";
    if (!plan.unpriced.empty() && plan.unpriced.size() < plan.pools.size())
      out += fmt::format(" (without {})", fmt::join(plan.unpriced, ", "));
    out += "\n";
  }
  bool accelerator_steps = false;
  for (const auto& w : plan.workloads)
    accelerator_steps = accelerator_steps || (w.kind.starts_with("step/") && w.gpus_per_pod + w.chips_per_pod > 0);
  if (accelerator_steps)
    out += plan.accelerator_hours
               ? fmt::format("Steps hold accelerators for at most {} accelerator-hours (their timeouts; a JobSet "
                             "step's, TPU or gang, once per attempt{}; a Job Kueue suspends starts its deadline again "
                             "when resumed)\n",
                             hours(*plan.accelerator_hours),
                             plan.disruptions_unbounded
                                 ? ", and once more per disruption (preemption, node drain), which JobSet restarts "
                                   "without counting"
                                 : "")
               : "Steps' accelerator-hours are unbounded: a step on GPUs or TPUs has no timeout\n";
  for (const auto& p : plan.pools)
    if (p.node_price && p.price_basis.find(' ') != std::string::npos)
      out += fmt::format("Note: {} is priced {}.\n", p.name, p.price_basis);
  for (const auto& n : plan.notes) out += "Note: " + n + "\n";
  return out;
}

nlohmann::ordered_json plan_json(const ResourcePlan& plan) {
  using ojson = nlohmann::ordered_json;
  auto opt = [](const auto& v) { return v ? ojson(*v) : ojson(nullptr); };
  // Money to 1/100 cent and hours to 1/1000, so that goldens do not hold floating-point noise.
  auto usd = [](double v) { return std::round(v * 1e4) / 1e4; };
  auto usd_opt = [&](const std::optional<double>& v) { return v ? ojson(usd(*v)) : ojson(nullptr); };
  auto hrs_opt = [](const std::optional<double>& v) { return v ? ojson(std::round(*v * 1e3) / 1e3) : ojson(nullptr); };
  auto quota = [](const std::vector<QuotaNeed>& needs) {
    ojson a = ojson::array();
    for (const auto& q : needs) a.push_back({{"metric", q.metric}, {"amount", q.amount}, {"pools", q.pools}});
    return a;
  };
  ojson j;
  j["apiVersion"] = "trainc/plan-v1";
  j["system"] = plan.system;
  j["project"] = plan.project.empty() ? ojson(nullptr) : ojson(plan.project);
  j["region"] = plan.region;
  j["zone"] = plan.zone.empty() ? ojson(nullptr) : ojson(plan.zone);
  j["regionAssumed"] = plan.region_assumed;
  j["currency"] = plan.currency;
  j["pools"] = ojson::array();
  for (const auto& p : plan.pools) {
    ojson o;
    o["name"] = p.name;
    o["machine"] = p.machine;
    o["provisioning"] = p.provisioning;
    o["nodePools"] = p.node_pools;
    if (!p.ladder_of.empty()) o["ladderOf"] = p.ladder_of;
    o["nodes"] = {{"min", p.min_nodes}, {"max", p.max_nodes}};
    o["perNode"] = {{"vcpus", p.vcpus_per_node},
                    {"memoryGiB", p.memory_gib_per_node},
                    {"gpus", p.gpus_per_node},
                    {"tpuChips", p.chips_per_node},
                    {"bootDiskGB", p.disk_gb}};
    o["accelerator"] = p.accelerator.empty() ? ojson(nullptr) : ojson(p.accelerator);
    o["tpuTopology"] = p.tpu_topology.empty() ? ojson(nullptr) : ojson(p.tpu_topology);
    o["quota"] = quota(p.quota);
    if (p.node_price)
      o["price"] = {{"perNodeHour", usd(*p.node_price)},
                    {"minHour", usd(*p.node_price * p.floor_nodes)},
                    {"maxHour", usd(*p.node_price * p.max_nodes)},
                    {"basis", p.price_basis},
                    {"source", p.price_source},
                    {"date", p.price_date}};
    else
      o["price"] = nullptr;
    j["pools"].push_back(std::move(o));
  }
  j["workloads"] = ojson::array();
  for (const auto& w : plan.workloads) {
    ojson o;
    o["kind"] = w.kind;
    o["name"] = w.name;
    o["pool"] = w.pool.empty() ? ojson(nullptr) : ojson(w.pool);
    if (w.kind.starts_with("step/")) o["cluster"] = w.cluster.empty() ? ojson(nullptr) : ojson(w.cluster);
    o["pods"] = {{"min", w.min_pods}, {"max", w.max_pods}};
    o["perPod"] = {{"gpus", w.gpus_per_pod}, {"tpuChips", w.chips_per_pod}};
    o["topology"] = w.topology.empty() ? ojson(nullptr) : ojson(w.topology);
    if (w.kind.starts_with("step/")) {
      o["timeoutSeconds"] = opt(w.timeout_seconds);
      o["retries"] = w.retries;
      o["attempts"] = w.attempts;
      o["acceleratorHours"] = hrs_opt(w.accelerator_hours);
      o["acceleratorHoursPerDisruption"] =
          w.disruptions_unbounded && w.accelerator_hours ? hrs_opt(*w.accelerator_hours / w.attempts) : ojson(nullptr);
      o["costBound"] = usd_opt(w.cost_bound);
      o["goodput"] = w.goodput ? goodput_json(*w.goodput) : ojson(nullptr);
    }
    j["workloads"].push_back(std::move(o));
  }
  j["placement"] = placement_json(plan.placement);
  j["quota"] = quota(plan.quota);
  j["totals"] = {{"nodes", {{"min", plan.min_nodes}, {"max", plan.max_nodes}}},
                 {"vcpus", plan.max_vcpus},
                 {"gpus", plan.max_gpus},
                 {"tpuChips", plan.max_chips},
                 {"pricePerHour", plan.pools.empty() || plan.unpriced.size() < plan.pools.size()
                                      ? ojson{{"min", usd(plan.min_price)}, {"max", usd(plan.max_price)}}
                                      : ojson{{"min", nullptr}, {"max", nullptr}}},
                 {"unpriced", plan.unpriced},
                 {"acceleratorHours", hrs_opt(plan.accelerator_hours)}};
  if (!plan.ladders.empty()) j["ladders"] = ladders_json(plan);
  j["failureRates"] = failure_rates_json();
  j["notes"] = plan.notes;
  return j;
}

}  // namespace trainc
