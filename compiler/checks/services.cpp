// Model servers: their pods fit the pools they are placed on, as many of them as the pools can
// hold, and the gateway they are exposed through exists and routes each host to one service.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "checks/checks.h"
#include "model/catalog.h"
#include "model/images.h"
#include "model/triton_config.h"

namespace trainc {
namespace {

/// Whether two gateway host patterns can name the same host ("*", "*.example.com", exact names).
bool hosts_overlap(const std::string& a, const std::string& b) {
  if (a == "*" || b == "*" || a == b) return true;
  auto covers = [](const std::string& wild, const std::string& host) {
    return wild.starts_with("*.") && host.size() > wild.size() - 1 && host.ends_with(wild.substr(1));
  };
  return covers(a, b) || covers(b, a);
}

/// The paths the gateway routes to `s`, as a list for a message.
std::string routed_paths(const Service& s) {
  const GatewayRoutes routes = s.routes();
  std::string out;
  for (std::string_view http : routes.http) out += (out.empty() ? "" : ", ") + s.expose.path_prefix + std::string(http);
  if (std::string_view grpc = routes.grpc; !grpc.empty() && s.expose.path_prefix.empty())
    out += ", " + std::string(grpc.ends_with('/') ? grpc.substr(0, grpc.size() - 1) : grpc);
  return out;
}

void check_placement(const System& sys, const Service& s, const Document& doc, Diagnostics& diags) {
  const Pool* pool = sys.pool(s.pool);
  if (!pool) return;  // none named, or unknown (reported by lowering)
  const int per_node_gpus = pool->accelerator ? pool->accelerator->count : 0;
  if (s.gpus > per_node_gpus) {
    doc.error(diags, ptr_key(s.ptr, "gpus"),
              per_node_gpus == 0
                  ? fmt::format("service '{}' asks for {} GPU(s) but pool '{}' ({}) has no GPUs; set gpus: 0 to serve "
                                "on CPUs or place it on a GPU pool",
                                s.name, s.gpus, pool->name, pool->machine)
                  : fmt::format("service '{}' asks for {} GPUs per pod but a node of pool '{}' ({}) has {}; use gpus: {} "
                                "or a larger machine",
                                s.name, s.gpus, pool->name, pool->machine, per_node_gpus, per_node_gpus),
              Anchor::value, {doc.note(pool->ptr, fmt::format("pool '{}' declared here", pool->name), Anchor::key)});
    return;
  }
  if (pool->tpu)
    doc.error(diags, ptr_key(s.ptr, "pool"),
              fmt::format("service '{}' is placed on TPU pool '{}', but its {} server runs on GPUs or CPUs; place it on "
                          "a GPU or CPU pool",
                          s.name, pool->name, s.kind()));
  if (pool->vcpus == 0) return;  // unknown machine, reported by lowering
  // Pods per node: by GPUs when the server takes some, else by CPU and memory.
  const double proxy_cpu = sys.istio ? catalog().istio_proxy().cores : 0;
  const double proxy_mem = sys.istio ? catalog().istio_proxy().bytes : 0;
  const double cpu = s.resources.requested("cpu") + proxy_cpu, mem = s.resources.requested("memory") + proxy_mem;
  int per_node = s.gpus > 0 ? per_node_gpus / s.gpus : 1000;
  if (cpu > 0) per_node = std::min(per_node, static_cast<int>(pool->room_cpu() / cpu + 1e-9));
  if (mem > 0) per_node = std::min(per_node, static_cast<int>(pool->room_memory() / mem));
  if (per_node == 0) {
    doc.error(diags, s.ptr,
              fmt::format("a pod of service '{}' asks for {:.2f} CPU and {:.2f}Gi{}, but a node of pool '{}' ({}) "
                          "leaves {:.2f} cores and {:.2f}Gi for pods after its DaemonSets; it would stay Pending",
                          s.name, cpu, mem / (1 << 30), sys.istio ? " with its Istio sidecar" : "", pool->name,
                          pool->machine, pool->room_cpu(), pool->room_memory() / (1 << 30)),
              Anchor::key);
    return;
  }
  const long long capacity = static_cast<long long>(per_node) * pool->max_nodes();
  if (s.max > capacity)
    doc.error(diags, s.autoscaled() ? ptr_key(ptr_key(s.ptr, "autoscaling"), "max") : ptr_key(s.ptr, "replicas"),
              fmt::format("service '{}' {} {} pods but pool '{}' holds {} ({} node(s), {} pod(s) each); the rest would "
                          "stay Pending: raise the pool's {} or lower the service's",
                          s.name, s.autoscaled() ? "grows to" : "runs", s.max, pool->name, capacity, pool->max_nodes(),
                          per_node, pool->autoscaling ? "autoscaling.max" : "nodes"),
              Anchor::value,
              {doc.note(ptr_key(pool->ptr, pool->autoscaling ? "autoscaling" : "nodes"),
                        fmt::format("pool '{}' size", pool->name), Anchor::key)});
}

/// A machine of the catalog with GPUs, as the model-fit message offers it.
struct GpuMachine {
  std::string what;  ///< "a2-ultragpu-2g", or "an n1 machine with 4 x nvidia-tesla-t4"
  std::string accelerator;
  int gpus = 0;
  double gib = 0;  ///< per GPU
  int vcpus = 0;   ///< 0 for attached GPUs (the host is the user's choice)
};

/// The catalog's GPU machines (and N1 hosts with attached GPUs) whose memory is known.
std::vector<GpuMachine> gpu_machines() {
  std::vector<GpuMachine> out;
  for (const auto& type : catalog().machine_names()) {
    const MachineType* m = catalog().machine(type);
    if (m && m->gpus > 0 && m->gpu_memory_gib > 0)
      out.push_back({type, m->accelerator, m->gpus, m->gpu_memory_gib, m->vcpus});
  }
  for (const auto& a : catalog().attachable_gpus())
    if (a.memory_gib > 0)
      for (const auto& [count, _] : a.max_vcpus)
        out.push_back({fmt::format("an {} machine with {} x {}", a.machine_family, count, a.accelerator),
                       a.accelerator, count, a.memory_gib, 0});
  return out;
}

/// vLLM's weights plus its KV-cache floor must fit the pod's GPUs at its tensor parallelism;
/// else the smallest machine of the catalog that holds them is named. A model whose size is
/// unknown is a warning, or an error when the spec asks (ModelMemory::require_known).
void check_model_fits(const System& sys, const Service& s, const Document& doc, Diagnostics& diags) {
  const ModelMemory mm = s.model_memory();
  const ServerMemory* sm = catalog().server_memory(s.kind());
  if (!mm.sized || !sm || s.gpus == 0) return;
  const std::string at = ptr_key(s.ptr, s.kind());
  if (mm.weight_bytes <= 0) {
    const std::string msg = fmt::format(
        "trainc cannot tell whether the model of service '{}' fits its GPUs: {}; give its size, e.g. '{}: 7B'{}", s.name,
        mm.how, mm.params_key, mm.require_known ? "" : " (with 'requireFit: true' this is an error)");
    if (mm.require_known) doc.error(diags, at, msg, Anchor::key);
    else doc.warning(diags, at, msg, Anchor::key);
    return;
  }
  const Pool* pool = sys.pool(s.pool);
  if (!pool || !pool->accelerator) return;  // no GPU pool: reported with the placement
  const double gib = catalog().gpu_memory_gib(pool->accelerator->type);
  if (gib <= 0) return;  // the catalog does not know this GPU's memory
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const double util = mm.utilization > 0 ? mm.utilization : sm->utilization;
  auto need = [&](int gpus) { return mm.weight_bytes + gpus * sm->kv_floor_gib * kGiB; };
  auto have = [&](int gpus, double per_gpu) { return gpus * per_gpu * kGiB * util; };
  if (need(s.gpus) <= have(s.gpus, gib)) return;
  const GpuMachine* best = nullptr;
  const auto machines = gpu_machines();
  std::set<std::string> no_dtype;  // GPUs that would hold it but cannot run its dtype
  for (const auto& m : machines) {
    if (need(m.gpus) > have(m.gpus, m.gib)) continue;
    if (std::find(sm->unsupported.begin(), sm->unsupported.end(), m.accelerator) != sm->unsupported.end()) continue;
    if (const std::optional<int> cc = image_book().compute_capability(m.accelerator);
        cc && *cc < mm.min_compute_capability) {
      no_dtype.insert(fmt::format("{} ({}.{})", m.accelerator, *cc / 10, *cc % 10));
      continue;
    }
    auto key = [](const GpuMachine& g) { return std::tuple(g.gpus * g.gib, g.gpus, g.vcpus == 0, g.vcpus, g.what); };
    if (!best || key(m) < key(*best)) best = &m;
  }
  const std::string fix =
      best ? fmt::format("the smallest machine in the catalog that holds it is {} ({} x {:g} GiB; tensor parallelism {}): "
                         "place the service on a pool of it with gpus: {}, or serve a smaller or quantized model "
                         "('dtype')",
                         best->what, best->gpus, best->gib, best->gpus, best->gpus)
           : std::string("no machine in the catalog holds it: serve a smaller or quantized model ('dtype')");
  const std::string skipped =
      no_dtype.empty() ? ""
                       : fmt::format(" ({} left out: {} needs compute capability {}.{} or higher)",
                                     fmt::join(no_dtype, ", "), mm.dtype, mm.min_compute_capability / 10,
                                     mm.min_compute_capability % 10);
  doc.error(diags, at,
            fmt::format("the model of service '{}' cannot load: its weights take {:.1f} GiB ({}), and with vLLM's "
                        "KV-cache floor of {:g} GiB per GPU it needs {:.1f} GiB, but {} x {} ({:g} GiB each) on pool "
                        "'{}' ({}) give vLLM {:.1f} GiB at --gpu-memory-utilization={:g}; {}{}",
                        s.name, mm.weight_bytes / kGiB, mm.how, sm->kv_floor_gib, need(s.gpus) / kGiB, s.gpus,
                        pool->accelerator->type, gib, pool->name, pool->machine, have(s.gpus, gib) / kGiB, util, fix,
                        skipped),
            Anchor::key, {doc.note(pool->ptr, fmt::format("pool '{}' declared here", pool->name), Anchor::key)});
}

/// A store path without its leading and trailing slashes, to compare two of them.
std::string trim(std::string p) {
  while (!p.empty() && p.back() == '/') p.pop_back();
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  return p;
}

/// Triton's FIL backend loads <model>/<version>/<file>: config.pbtxt's default_model_filename, else
/// the name its model_type implies (xgboost.model, xgboost.json, xgboost.ubj, model.txt,
/// checkpoint.tl, as fil_backend defaults them). trainrt's xgboost step writes model.ubj, XGBoost's
/// UBJSON: a version folder it fills serves only when the config names that file and xgboost_ubj.
void check_fil_files(const System& sys, const Service& s, const Triton& t, const Document& doc, Diagnostics& diags) {
  if (!t.source || t.source->folder.empty() || s.needs.empty()) return;
  std::filesystem::path spec_dir = std::filesystem::path(doc.file->name()).parent_path();
  if (spec_dir.empty()) spec_dir = ".";
  static const std::map<std::string, std::string> kDefaultFile{{"xgboost", "xgboost.model"},
                                                               {"xgboost_json", "xgboost.json"},
                                                               {"xgboost_ubj", "xgboost.ubj"},
                                                               {"lightgbm", "model.txt"},
                                                               {"treelite_checkpoint", "checkpoint.tl"}};
  for (size_t i = 0; i < t.models.size(); ++i) {
    const std::string& m = t.models[i];
    const auto config = read_triton_model_config(spec_dir / t.source->folder / m / "config.pbtxt");
    if (!config || config->backend != "fil") continue;
    const std::string type = config->model_type.empty() ? "xgboost" : config->model_type;  // FIL's default
    const auto known = kDefaultFile.find(type);
    const std::string file = !config->file.empty() ? config->file : known == kDefaultFile.end() ? "" : known->second;
    if (file == "model.ubj" && type == "xgboost_ubj") continue;
    const std::string prefix = trim(t.repository.path).empty() ? m + "/" : trim(t.repository.path) + "/" + m + "/";
    for (const auto& need : s.needs)
      for (const auto& st : sys.steps) {
        if (st.name != need) continue;
        const StoreLoc* to = match(
            st.run, [](const XGBoost& x) { return &x.to; }, [](const Torchrun&) -> const StoreLoc* { return nullptr; },
            [](const Command&) -> const StoreLoc* { return nullptr; },
            [](const Datagen&) -> const StoreLoc* { return nullptr; });
        if (!to || to->store != t.repository.store) continue;
        const std::string path = trim(to->path);
        if (!path.starts_with(prefix)) continue;
        const std::string version = path.substr(prefix.size());
        if (version.empty() || version.find_first_not_of("0123456789") != std::string::npos) continue;
        doc.warning(diags, ptr_index(ptr_key(ptr_key(s.ptr, "triton"), "models"), i),
                    fmt::format("model '{0}' is served by Triton's FIL backend, which loads {0}/{1}/{2} (model_type "
                                "{3}{4}), but step '{5}' writes {0}/{1}/model.ubj, XGBoost's UBJSON: set "
                                "`default_model_filename: \"model.ubj\"` and model_type xgboost_ubj in {6}/{0}/config.pbtxt",
                                m, version, file.empty() ? "?" : file, type,
                                config->file.empty() ? ", no default_model_filename" : "", st.name, t.source->folder),
                    Anchor::value);
      }
  }
}

/// A service that serves steps' output: its model folder should be what one of them writes, to
/// its outputs' folder or through a writable mount of the same store. A warning: the steps may
/// write it another way (their own upload), which trainc cannot see.
void check_served_output(const System& sys, const Service& s, const Document& doc, Diagnostics& diags) {
  if (s.needs.empty()) return;
  const auto overlap = [&](const StoreRef& a, const std::string& store, const std::string& path) {
    if (a.store != store) return false;
    const std::string x = trim(a.path), y = trim(path);
    return x.empty() || y.empty() || x == y || x.starts_with(y + "/") || y.starts_with(x + "/");
  };
  for (const StoreRef* ref : s.store_refs()) {
    if (ref->store.empty()) continue;
    bool found = false;
    std::vector<std::string> written;
    for (const auto& need : s.needs)
      for (const auto& st : sys.steps) {
        if (st.name != need) continue;
        // Its outputs' folder, what trainrt writes (datagen's and xgboost's `to`), a writable mount.
        if (st.outputs) {
          found = found || overlap(*ref, st.outputs->to.store, st.outputs->to.path);
          written.push_back(fmt::format("'{}' writes {}", st.name, st.outputs->to.url));
        }
        const auto reads = store_reads(st.run);
        for (const StoreLoc* loc : store_locs(st.run)) {
          if (std::find(reads.begin(), reads.end(), loc) != reads.end()) continue;
          found = found || overlap(*ref, loc->store, loc->path);
          written.push_back(fmt::format("'{}' writes {}:{}", st.name, loc->store, loc->path));
        }
        // A user's program may write anywhere through a writable mount of the store; trainrt writes
        // only its `to` (the mounts trainc adds for it say nothing more).
        if (store_locs(st.run).empty())
          for (const auto& m : st.mounts) found = found || (m.store == ref->store && !m.read_only);
      }
    if (!found)
      doc.warning(diags, ref->ptr,
                  fmt::format("service '{}' serves {} and needs {}, but no step it needs writes there ({}): it would "
                              "serve what an earlier run or a person left; point `outputs.to` of the training step "
                              "at this folder",
                              s.name, ref->url.empty() ? ref->store + ":" + ref->path : ref->url,
                              fmt::format("'{}'", fmt::join(s.needs, "', '")),
                              written.empty() ? "they have no `outputs`" : fmt::format("{}", fmt::join(written, "; "))));
  }
}

}  // namespace

void check_services(const System& sys, const Document& doc, Diagnostics& diags) {
  // Each identity is its own pair of accounts: a shared one would carry the other's grants.
  const auto ids = sys.identities();
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const bool ksa = ids[i]->ksa == ids[j]->ksa;
      if (!ksa && ids[i]->gsa != ids[j]->gsa) continue;
      const std::string owner = ids[j]->of.empty() ? "the system's identity" : fmt::format("service '{}'", ids[j]->of);
      // A service identity comes second (System::identities), so ids[i] is a service's.
      doc.error(diags, ptr_key("/services", ids[i]->of),
                fmt::format("service '{}' would run as {} service account '{}', which {} uses too; a service's "
                            "account may read only its model bucket, so give it one of its own with "
                            "'identity.serviceAccount'{}",
                            ids[i]->of, ksa ? "Kubernetes" : "Google", ksa ? ids[i]->ksa : ids[i]->gsa, owner,
                            ksa ? "" : " and 'identity.gcpServiceAccount'"),
                Anchor::key,
                {doc.note(ids[j]->of.empty() ? ids[j]->ptr : ptr_key("/services", ids[j]->of),
                          fmt::format("{} is set here", owner), Anchor::key)});
      break;
    }
  for (const auto& entry : sys.services) {
    // Named, not structured bindings: a lambda below uses them, which clang before 16 refuses.
    const auto& name = entry.first;
    const auto& s = entry.second;
    check_placement(sys, s, doc, diags);
    check_model_fits(sys, s, doc, diags);
    check_served_output(sys, s, doc, diags);
    match(s.server, [&](const Triton& t) { check_fil_files(sys, s, t, doc, diags); }, [](const Vllm&) {});
    if (s.pool.empty() && !sys.pools.empty() && s.gpus > 0)
      doc.error(diags, s.ptr,
                fmt::format("service '{}' asks for {} GPU(s) but names no pool; set 'pool' to a GPU pool", name, s.gpus),
                Anchor::key);
    if (!s.expose.gateway) continue;
    // Not an error: a demo may want it; the runbook says how to close it.
    doc.warning(diags, s.expose.ptr,
                fmt::format("service '{}' is exposed on the Istio ingress gateway, a public load balancer (HTTP on "
                              "port 80) that trainc puts no authentication on{}: anyone who finds the address can "
                              "call it; restrict it before real traffic (the runbook's Services section says how)",
                              name,
                              std::find(s.expose.hosts.begin(), s.expose.hosts.end(), "*") != s.expose.hosts.end()
                                  ? ", for any host name (hosts: *)"
                                  : ""),
                Anchor::key);
    if (!sys.istio)
      doc.error(diags, s.expose.ptr,
                fmt::format("service '{}' is exposed through the Istio ingress gateway, but the system does not enable "
                            "Istio; add 'istio: {{}}' (apply.sh installs it) or 'istio: {{install: false}}' for a "
                            "mesh that is already there",
                            name),
                Anchor::key);
    // A server's paths are fixed (its routes), so two services on the gateway must differ by host
    // or path prefix.
    auto clash = [&]() -> std::optional<std::tuple<std::string, std::string, const Service*>> {
      for (const auto& [other_name, other] : sys.services) {
        if (other_name == name) break;
        if (!other.expose.gateway || other.expose.path_prefix != s.expose.path_prefix) continue;
        for (const auto& mine : s.expose.hosts)
          for (const auto& theirs : other.expose.hosts)
            if (hosts_overlap(mine, theirs)) return std::tuple{mine, theirs, &other};
      }
      return std::nullopt;
    }();
    if (clash) {
      const auto& [mine, theirs, other] = *clash;
      doc.error(diags, s.expose.ptr,
                fmt::format("host '{}' of service '{}' overlaps host '{}' of service '{}' on the gateway, and both serve "
                            "the same paths ({}); give each service hosts of its own, or a 'pathPrefix' of its own",
                            mine, name, theirs, other->name, routed_paths(s)),
                Anchor::key, {doc.note(other->expose.ptr, fmt::format("service '{}' is exposed here", other->name), Anchor::key)});
    }
  }
}

}  // namespace trainc
