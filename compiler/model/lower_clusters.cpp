#include "model/lowerer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/spelling.h"
#include "base/units.h"
#include "model/build_context.h"
#include "model/catalog.h"
#include "model/placement.h"

namespace trainc::lowering {

namespace {

/// The Ray version the image's tag names ("rayproject/ray:2.52.0-gpu" -> "2.52.0"), or "".
std::string tag_version(const std::string& image) {
  auto colon = image.rfind(':');
  if (colon == std::string::npos || image.find('/', colon) != std::string::npos) return "";
  static const std::regex re(R"(^([0-9]+\.[0-9]+\.[0-9]+)(-.*)?$)");
  std::smatch m;
  const std::string tag = image.substr(colon + 1);
  return std::regex_match(tag, m, re) ? m[1].str() : "";
}

}  // namespace

Pool Lowerer::pool(const std::string& name, const json& p) {
  Pool out;
  out.name = name;
  out.ptr = ptr_key("/cluster/pools", name);
  out.machine = p["machine"];
  if (p.contains("accelerator"))
    out.accelerator = Accelerator{p["accelerator"]["type"], integer(p["accelerator"], "count", 0, ptr_key(out.ptr, "accelerator"))};
  const MachineType* m = catalog().machine(out.machine);
  if (!m) {
    doc_.error(diags_, ptr_key(out.ptr, "machine"),
               fmt::format("unknown machine type '{}'{}", out.machine, did_you_mean(out.machine, catalog().machine_names())) +
                   (suggest(out.machine, catalog().machine_names()) ? "" : "; the catalog (stdlib/catalog.yaml) lists the machine types trainc knows"));
  } else {
    out.vcpus = m->vcpus;
    out.memory_gib = m->memory_gib;
    out.arm = m->arm;
    out.allocatable_cpu = catalog().allocatable_cpu(*m);
    out.allocatable_memory = catalog().allocatable_memory(*m);
    // Built-in GPUs come from the catalog; checks compare them with any the spec wrote.
    if (m->gpus > 0) out.accelerator = Accelerator{m->accelerator, m->gpus};
    if (m->tpu_chips > 0 && p.contains("tpu")) {
      std::string topo = p["tpu"]["topology"];
      int chips = topology_chips(topo);
      out.tpu = TpuSlice{m->tpu_generation, m->tpu_accelerator, topo, m->tpu_chips,
                         chips > 0 && chips % m->tpu_chips == 0 ? chips / m->tpu_chips : 0,
                         integer(p["tpu"], "slices", 1, ptr_key(out.ptr, "tpu"))};
    }
  }
  out.nodes = integer(p, "nodes", out.tpu ? out.tpu->hosts : 1, out.ptr);
  if (p.contains("autoscaling")) {
    const std::string aptr = ptr_key(out.ptr, "autoscaling");
    out.autoscaling = std::pair<int, int>{integer(p["autoscaling"], "min", 0, aptr), integer(p["autoscaling"], "max", 0, aptr)};
  }
  out.provisioning = get_or<std::string>(p, "provisioning", "standard");
  out.reservation = get_or<std::string>(p, "reservation", "");
  out.provisioning_set = p.contains("provisioning");
  if (p.contains("capacity")) {
    for (const char* key : {"provisioning", "reservation", "autoscaling"})
      if (p.contains(key))
        doc_.error(diags_, ptr_key(out.ptr, key),
                   fmt::format("`capacity` replaces `{}`: each rung says how it gets its nodes and how many "
                               "(a reservation rung is its `nodes`, the others scale from 0 to theirs)",
                               key),
                   Anchor::key, {doc_.note(ptr_key(out.ptr, "capacity"), "capacity set here", Anchor::key)});
    ladder(out, p["capacity"]);
  }
  out.rdma = get_or(p, "rdma", false);
  out.disk_gb = integer(p, "diskSizeGb", 0, out.ptr);
  out.labels = string_map(p, "labels");
  if (p.contains("taints"))
    for (const auto& t : p["taints"]) out.taints.push_back({t["key"], get_or<std::string>(t, "value", ""), t["effect"]});
  placement(out, p);
  return out;
}

void Lowerer::ladder(Pool& out, const json& rungs) {
  const std::string cptr = ptr_key(out.ptr, "capacity");
  // A rung's node pool is named by its kind; reservations, the one kind a ladder may hold more
  // than once (check refuses other repeats), are numbered from the second.
  static const std::map<std::string, std::string> suffix{
      {"reservation", "reserved"}, {"queued", "queued"}, {"flex-start", "flex"}, {"spot", "spot"}, {"standard", "ondemand"}};
  std::map<std::string, int> seen;
  for (size_t i = 0; i < rungs.size(); ++i) {
    const json& r = rungs[i];
    Rung rung;
    rung.ptr = cptr + "/" + std::to_string(i);
    if (r.is_string()) {
      rung.provisioning = r.get<std::string>();
    } else {
      rung.reservation = get_or<std::string>(r, "reservation", "");
      rung.provisioning = get_or<std::string>(r, "provisioning", rung.reservation.empty() ? "standard" : "reservation");
      rung.project = get_or<std::string>(r, "project", "");
      rung.block = get_or<std::string>(r, "block", "");
      rung.sub_block = get_or<std::string>(r, "subBlock", "");
      rung.nodes = integer(r, "nodes", 0, rung.ptr);
      rung.max_run_seconds = duration(r, "maxRunDuration", 0, rung.ptr);
    }
    auto it = suffix.find(rung.provisioning);
    rung.suffix = it == suffix.end() ? rung.provisioning : it->second;
    if (const int n = ++seen[rung.provisioning]; n > 1) rung.suffix += "-" + std::to_string(n);
    out.ladder.push_back(std::move(rung));
  }
  if (!out.ladder.empty()) {
    out.provisioning = out.ladder.front().provisioning;
    out.reservation = out.ladder.front().provisioning == "reservation" ? out.ladder.front().reservation_path() : "";
  }
}

TopologyPlacement Lowerer::placement_of(const json& pl, const std::string& ptr) {
  TopologyPlacement out;
  out.ptr = ptr;
  if (const std::string level = get_or<std::string>(pl, "level", "none"); level != "none") {
    out.level = level;
    out.required = get_or(pl, "required", false);
  }
  return out;
}

void Lowerer::placement(Pool& out, const json& p) {
  const MachineType* m = catalog().machine(out.machine);
  out.topology_labels = m && m->topology_labels;
  if (p.contains("placement")) {
    out.placement = placement_of(p["placement"], ptr_key(out.ptr, "placement"));
    return;
  }
  if (!root_.contains("queue") || !out.topology_labels) return;
  if (out.laddered()) {
    out.placement.why_none = fmt::format(
        "Pool '{}' gets no topology-aware placement: its rungs after the first start with no nodes, and Kueue "
        "places by topology only on nodes that exist (a step that asks for it is never admitted there); its "
        "steps run where each rung's nodes are",
        out.name);
    return;
  }
  // Kueue's TAS counts only the nodes that exist: a pool that may be smaller than its largest
  // would hold a queued Job suspended, podless, and so never scaled up for.
  const Pool::NodeRange r = out.node_range();
  if (r.min < r.max) {
    out.placement.why_none = fmt::format(
        "Pool '{}' gets no topology-aware placement: it may have {} node{} of its {}, and Kueue places by "
        "topology only on nodes that exist, while the autoscaler adds none for a Job Kueue holds back; give it "
        "a fixed size (`nodes`, e.g. from a reservation) and its multi-node steps prefer one {}",
        out.name, r.min, r.min == 1 ? "" : "s", r.max, catalog().topology().default_level);
    return;
  }
  out.placement.level = catalog().topology().default_level;
  out.placement.required = catalog().topology().default_required;
}

void Lowerer::node_reserves(System& sys) {
  // Multi-networking (RDMA pools) puts the whole cluster on Dataplane V2; services turn on
  // Managed Prometheus, whose collector runs on every node.
  bool dataplane_v2 = false;
  for (const auto& entry : sys.pools) dataplane_v2 = dataplane_v2 || entry.second.rdma;
  const json services = root_.value("services", json::object());
  for (auto& entry : sys.pools) {
    Pool& p = entry.second;
    p.reserve = catalog().node_reserve(
        {p.accelerator.has_value(), p.tpu.has_value(), dataplane_v2, services.is_object() && !services.empty(), p.rdma});
  }
}

void Lowerer::size_whole_nodes(System& sys) {
  for (auto& [name, c] : sys.clusters) {
    const auto added = c.added_containers();
    const bool fuse = !c.mounts.empty();
    // A lead the spec does not size (a Dask scheduler) leaves room beside itself for the largest
    // of the cluster's client steps (in pods of their own; sized already by size_steps), GCS FUSE
    // sidecar included, on each pool they may land on: what trainc sizes fits together. Whatever
    // the pools' node counts, so that a fix that adds nodes sizes nothing anew.
    std::map<std::string, std::pair<double, double>> clients;
    if (c.steps_have_own_pods())
      for (const Step& st : sys.steps) {
        if (st.cluster != name) continue;
        const Sidecar& sidecar = catalog().gcsfuse_sidecar();
        // A step without a pool lands on a pool open to it (placement.h open_pools).
        for (const auto& p : st.pool.empty() ? open_pools(sys, st.gpus) : std::vector<std::string>{st.pool}) {
          auto& [cores, bytes] = clients[p];
          cores = std::max(cores, st.resources.requested("cpu") + (st.mounts.empty() ? 0 : sidecar.cores));
          bytes = std::max(bytes, st.resources.requested("memory") + (st.mounts.empty() ? 0 : sidecar.bytes));
        }
      }
    auto size = [&](PodGroup& g, bool lead) {
      const Pool* pool = sys.pool(g.pool);
      if (!g.whole_node || !pool) return;
      // The containers the engine's operator adds to the group's pods (KubeRay's autoscaler
      // beside the head), and, on a pool the system pods may use, room for all of them; and the
      // catalog's slack, so a pod the model does not know still fits beside it.
      auto [cores, bytes] = system_share(sys, *pool);
      cores += catalog().whole_node_slack().cores;
      bytes += catalog().whole_node_slack().bytes;
      for (const AddedContainer& a : added) {
        if (a.group != g.name || a.init) continue;  // an init container's requests do not add
        const Resources r{a.requests, a.limits};
        cores += r.requested("cpu");
        bytes += r.requested("memory");
      }
      if (const auto client = clients.find(g.pool); lead && client != clients.end()) {
        const double room_cores = pool->room_cpu() - cores - (fuse ? catalog().gcsfuse_sidecar().cores : 0);
        const double room_bytes = pool->room_memory() - bytes - (fuse ? catalog().gcsfuse_sidecar().bytes : 0);
        // Only where the lead keeps at least half of what it would have: else it takes the node, and
        // the placement check says where the client steps find no room.
        if (client->second.first <= room_cores / 2 && client->second.second <= room_bytes / 2) {
          cores += client->second.first;
          bytes += client->second.second;
        }
      }
      if (auto whole = whole_node(pool, lead, fuse, cores, bytes)) g.resources = *whole;
    };
    std::visit([&](auto& e) { size(e.lead(), true); }, c.engine);
    for (auto& g : c.workers) size(g, false);
  }
}

const Pool* Lowerer::pool_ref(const System& sys, const std::string& name, const std::string& ptr) {
  const Pool* pool = sys.pool(name);
  if (!pool && !pruned("pools", name)) {
    std::string hint = declared(sys.pools, "pools").empty() ? "; no pools are declared under 'cluster.pools'"
                                         : did_you_mean(name, declared(sys.pools, "pools"));
    doc_.error(diags_, ptr, fmt::format("unknown pool '{}'{}", name, hint));
  }
  return pool;
}

void Lowerer::cluster_ref(const System& sys, const std::string& name, const std::string& ptr) {
  if (sys.compute_cluster(name) || pruned("clusters", name)) return;
  const auto names = declared(sys.clusters, "clusters");
  doc_.error(diags_, ptr, fmt::format("unknown cluster '{}'{}", name,
                                      names.empty() ? "; declare it under 'clusters'" : did_you_mean(name, names)));
}

std::pair<double, double> Lowerer::share(const System& sys, const Pool& pool, double fraction) {
  if (pool.vcpus == 0) return {0, 0};
  const auto [sys_cores, sys_bytes] = system_share(sys, pool);
  const Sidecar& slack = catalog().whole_node_slack();
  return {std::max(0.0, (pool.room_cpu() - slack.cores - sys_cores) * fraction),
          std::max(0.0, (pool.room_memory() - slack.bytes - sys_bytes) * fraction)};
}

std::optional<Resources> Lowerer::whole_node(const Pool* pool, bool lead, bool fuse, double cores, double bytes) {
  if (!pool || pool->vcpus == 0 || (lead && pool->accelerator)) return std::nullopt;
  // What the node leaves after its DaemonSets, less the containers beside it in the pod: the GCS
  // FUSE sidecar, and what the engine's operator adds (`cores`, `bytes`).
  const auto& sidecar = catalog().gcsfuse_sidecar();
  const double cpu = pool->room_cpu() - (fuse ? sidecar.cores : 0) - cores;
  const double mem = pool->room_memory() - (fuse ? sidecar.bytes : 0) - bytes;
  const std::string cpu_q = fmt::format("{}m", static_cast<long long>(std::floor(cpu * 1000)));
  const std::string mem_q = fmt::format("{}Mi", static_cast<long long>(std::floor(mem / (1 << 20))));
  Resources r;
  r.requests = {{"cpu", cpu_q}, {"memory", mem_q}};
  r.limits = {{"cpu", cpu_q}, {"memory", mem_q}};
  return r;
}

PodGroup Lowerer::pod_group(const System& sys, const std::string& name, const json& g, const std::string& ptr, bool lead,
                            bool fuse) {
  PodGroup out;
  out.name = name;
  out.ptr = ptr;
  const Pool* pool = nullptr;
  if (g.contains("pool")) {
    out.pool = g["pool"];
    pool = pool_ref(sys, out.pool, ptr_key(ptr, "pool"));
  }
  out.replicas = lead ? 1 : integer(g, "replicas", 1, ptr);
  out.min = integer(g, "min", out.replicas, ptr);
  out.max = integer(g, "max", out.replicas, ptr);
  const bool gpu_pool = pool && pool->accelerator;
  out.gpus = integer(g, "gpus", gpu_pool && !lead ? pool->accelerator->count : 0, ptr);
  if (g.contains("resources")) {
    out.resources.requests = string_map(g["resources"], "requests");
    out.resources.limits = string_map(g["resources"], "limits");
  } else if (auto whole = whole_node(pool, lead, fuse)) {
    out.resources = *whole;  // sized again once the whole system is known (size_whole_nodes)
    out.whole_node = true;
  } else {
    out.resources.requests = {{"cpu", "2"}, {"memory", "8Gi"}};
    out.resources.limits = {{"memory", "8Gi"}};
  }
  out.shm = g.contains("shm") ? scalar_text(g["shm"]) : fmt::format("{}Gi", std::max(1, 2 * out.gpus));
  return out;
}

ComputeCluster Lowerer::compute_cluster(const System& sys, const std::string& name, const json& c) {
  ComputeCluster out;
  out.name = name;
  out.ptr = ptr_key("/clusters", name);
  if (c.contains("build"))
    out.image = built_image(sys, c, out.ptr, name, "cluster", "/workspace");
  else if (c.contains("image"))
    out.image = c["image"];
  out.image_pull_policy = get_or<std::string>(c, "imagePullPolicy", "IfNotPresent");
  split_env(c, out.env, out.secret_env);
  out.labels = string_map(c, "labels");
  out.security = pod_security(c, out.ptr);
  if (c.contains("mounts"))
    for (size_t i = 0; i < c["mounts"].size(); ++i)
      out.mounts.push_back(mount(sys, c["mounts"][i], ptr_index(ptr_key(out.ptr, "mounts"), i)));
  const bool fuse = !out.mounts.empty();
  const std::string engine = c["engine"];
  // The lead pod's key is the engine's own word.
  const char* lead_key = engine == Ray::kName ? "head" : "scheduler";
  PodGroup lead = pod_group(sys, lead_key, c.value(lead_key, json::object()), ptr_key(out.ptr, lead_key), true, fuse);
  for (const auto& [g, spec] : c["workers"].items())
    out.workers.push_back(pod_group(sys, g, spec, ptr_key(ptr_key(out.ptr, "workers"), g), false, fuse));
  out.engine = make_alternative<Engine>(
      engine,
      [&](std::type_identity<Ray>) {
        Ray r;
        r.head = lead;
        r.per_job = get_or(c, "perJob", false);
        r.ttl_after_finished = duration(c, "ttlAfterFinished", 600, out.ptr);
        // A build runs on its base image, whose tag names the Ray version: a generated build's
        // `base`, or the FROM of the user's Dockerfile.
        const Build* built = nullptr;
        if (auto b = builds_.find(name); c.contains("build") && b != builds_.end()) built = &b->second;
        std::string image = out.image, source = fmt::format("the image tag '{}'", out.image), problem;
        std::string image_at = ptr_key(out.ptr, "image"), named = "the image is named here";
        if (built && built->generated()) {
          image = built->base;
          source = fmt::format("the tag of its base image '{}'", image);
          image_at = ptr_key(ptr_key(out.ptr, "build"), "base");
        } else if (built) {
          auto spec_dir = std::filesystem::path(doc_.file->name()).parent_path();
          const DockerfileBase from = dockerfile_base(spec_dir.empty() ? std::filesystem::path(".") : spec_dir, *built);
          image = from.image;
          source = fmt::format("the tag of '{}', the image its Dockerfile '{}' builds FROM", image, from.path);
          if (!from.problem.empty()) problem = fmt::format("its Dockerfile '{}' {}", from.path, from.problem);
          image_at = ptr_key(ptr_key(out.ptr, "build"), "dockerfile");
          named = fmt::format("the Dockerfile, which builds FROM {}", image);
        }
        const std::string from_tag = tag_version(image);
        r.version = get_or<std::string>(c, "version", from_tag);
        // A build with errors has no image; its own error says why (and a missing Dockerfile's).
        const bool unknown = c.contains("build") && (!built || (!built->generated() && image.empty() && problem.empty()));
        if (r.version.empty() && !unknown)
          doc_.error(diags_, out.ptr,
                     fmt::format("cluster '{}': the Ray version {}; set 'version' (e.g. 2.52.0) to the Ray version "
                                 "the image holds",
                                 name,
                                 problem.empty() ? "is not in " + source
                                                 : "cannot be told from the image: " + problem),
                     Anchor::key);
        else if (!from_tag.empty() && r.version != from_tag)
          doc_.error(diags_, ptr_key(out.ptr, "version"),
                     fmt::format("version {} disagrees with {}, which holds Ray {}; KubeRay and the autoscaler need "
                                 "the version the image runs",
                                 r.version, built ? source : "the image tag", from_tag),
                     Anchor::value, {doc_.note(image_at, named)});
        return r;
      },
      [&](std::type_identity<Dask>) {
        Dask d;
        d.scheduler = lead;
        d.threads = integer(c, "threads", 0, out.ptr);
        d.rmm_pool_size = get_or<std::string>(c, "rmmPoolSize", "");
        return d;
      });
  return out;
}

}  // namespace trainc::lowering
