#include "model/lowerer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/spelling.h"
#include "base/units.h"
#include "model/catalog.h"

namespace trainc::lowering {

Step Lowerer::step(const System& sys, const json& s, const std::string& ptr) {
  Step out;
  out.ptr = ptr;
  out.name = s["name"];
  out.image = get_or<std::string>(s, "image", "");
  out.image_pull_policy = get_or<std::string>(s, "imagePullPolicy", "IfNotPresent");
  if (s.contains("needs")) out.needs = s["needs"].get<std::vector<std::string>>();
  const Pool* pool = nullptr;
  if (s.contains("pool")) {
    out.pool = s["pool"];
    pool = pool_ref(sys, out.pool, ptr_key(ptr, "pool"));
  }
  if (s.contains("cluster")) {
    out.cluster = s["cluster"];
    cluster_ref(sys, out.cluster, ptr_key(ptr, "cluster"));
  }
  // A TPU step runs one pod per host of each slice it spans.
  out.nodes = integer(s, "nodes", pool && pool->tpu && pool->tpu->hosts > 0 ? pool->tpu->hosts : 1, ptr);
  out.slices = integer(s, "slices", 1, ptr);
  out.gpus = integer(s, "gpus", pool && pool->accelerator ? pool->accelerator->count : 0, ptr);
  out.procs_per_node = integer(s, "procsPerNode", std::max(out.gpus, 1), ptr);
  out.workdir = pod_path("/", get_or<std::string>(s, "workdir", "/workspace"));
  out.run = kind(sys, s, ptr, out);
  if (s.contains("build")) out.image = built_image(sys, s, ptr, out.name, "step", out.workdir);
  // A client of a cluster runs the cluster's image unless it names its own: the versions match.
  if (const ComputeCluster* c = sys.compute_cluster(out.cluster); c && out.image.empty()) out.image = c->image;
  if (out.uses_trainrt()) {
    if (out.image.empty()) out.image = sys.runtime_image;
    add_store_mounts(sys, out);
  }
  split_env(s, out.env, out.secret_env);
  if (s.contains("resources")) {
    out.resources.requests = string_map(s["resources"], "requests");
    out.resources.limits = string_map(s["resources"], "limits");
  }
  // PyTorch data loaders pass batches through /dev/shm: 2Gi per GPU, at least 1Gi.
  out.shm = s.contains("shm") ? scalar_text(s["shm"]) : fmt::format("{}Gi", std::max(1, 2 * out.gpus));
  out.retries = integer(s, "retries", 2, ptr);
  if (s.contains("noRetryExitCodes")) {
    for (const json& c : s["noRetryExitCodes"])
      if (c.is_number_integer()) out.no_retry_exit_codes.push_back(c.get<int>());
  } else {
    out.no_retry_exit_codes.assign(std::begin(kDefaultNoRetryExitCodes), std::end(kDefaultNoRetryExitCodes));
  }
  out.no_retry_exit_codes.push_back(kPreflightExit);
  std::sort(out.no_retry_exit_codes.begin(), out.no_retry_exit_codes.end());
  out.no_retry_exit_codes.erase(std::unique(out.no_retry_exit_codes.begin(), out.no_retry_exit_codes.end()),
                                out.no_retry_exit_codes.end());
  out.history = integer(s, "history", 3, ptr);
  if (s.contains("timeout")) out.timeout_seconds = duration(s, "timeout", 0, ptr);
  if (s.contains("schedule")) {
    const json& sc = s["schedule"];
    const std::string sptr = ptr_key(ptr, "schedule");
    out.schedule = Schedule{.cron = get_or<std::string>(sc, "cron", ""),
                            .time_zone = get_or<std::string>(sc, "timeZone", "Etc/UTC"),
                            .starting_deadline_seconds = duration(sc, "startingDeadline", 3600, sptr),
                            .replace = get_or<std::string>(sc, "overlap", "skip") == "replace",
                            .ptr = sptr};
  }
  json hb = s.value("heartbeat", json::object());
  out.heartbeat.max_age_seconds = duration(hb, "maxAge", 3600, ptr_key(ptr, "heartbeat"));
  out.heartbeat.file = hb.contains("file") ? pod_path(out.workdir, hb["file"]) : std::string(kStepLogPath);
  // The step's mounts as written ({store, path}): a GCS store named where a sync belongs is
  // answered with a mount at a path they leave free (store_ref).
  std::vector<std::pair<std::string, std::string>> mounted;
  if (s.contains("mounts"))
    for (const json& m : s["mounts"])
      if (m.is_object() && m.contains("store") && m.contains("path") && m["store"].is_string() && m["path"].is_string())
        mounted.emplace_back(m["store"].get<std::string>(), pod_path("/", m["path"]));
  if (s.contains("inputs")) {
    for (size_t i = 0; i < s["inputs"].size(); ++i) {
      const json& in = s["inputs"][i];
      std::string iptr = ptr_index(ptr_key(ptr, "inputs"), i);
      out.inputs.push_back(Sync{store_ref(sys, in["from"], ptr_key(iptr, "from"), mounted), pod_path(out.workdir, in["to"]), iptr});
    }
  }
  if (s.contains("mounts")) {
    for (size_t i = 0; i < s["mounts"].size(); ++i) {
      const json& m = s["mounts"][i];
      std::string mptr = ptr_index(ptr_key(ptr, "mounts"), i);
      out.mounts.push_back(mount(sys, m, mptr));
    }
  }
  // A client of a cluster whose steps run pods of their own (Dask) sees the cluster's mounts at
  // the same paths, as its workers do: dask.dataframe reads a dataset's metadata (Parquet footers,
  // the file list) in the client, so a client without them fails on data the workers can read.
  if (const ComputeCluster* c = sys.compute_cluster(out.cluster); c && c->steps_have_own_pods())
    for (const Mount& m : c->mounts)
      if (std::none_of(out.mounts.begin(), out.mounts.end(), [&](const Mount& own) { return own.path == m.path; }))
        out.mounts.push_back(m);
  if (s.contains("outputs")) {
    const json& o = s["outputs"];
    std::string optr = ptr_key(ptr, "outputs");
    out.outputs = Outputs{pod_path(out.workdir, o["path"]), store_ref(sys, o["to"], ptr_key(optr, "to"), mounted),
                          duration(o, "every", 600, optr), optr};
    out.outputs->log = get_or<bool>(o, "log", true);
  }
  if (s.contains("checkpoints")) {
    const json& c = s["checkpoints"];
    const std::string cptr = ptr_key(ptr, "checkpoints");
    auto seconds = [&](const char* key) {
      return c.contains(key) ? std::optional<int>(duration(c, key, 0, cptr)) : std::nullopt;
    };
    // "run", "previous", or a file a new run starts from (checks/steps.cpp judges where it is).
    const std::string resume_from = get_or<std::string>(c, "resumeFrom", "run");
    const bool named = resume_from == "run" || resume_from == "previous";
    out.checkpoints = Checkpoints{.path = pod_path(out.workdir, c["path"]),
                                  .pattern = get_or<std::string>(c, "pattern", "*"),
                                  .resume_flag = get_or<std::string>(c, "resumeFlag", ""),
                                  .resume_previous = resume_from == "previous",
                                  .start_from = named ? "" : pod_path(out.workdir, resume_from),
                                  .ptr = cptr,
                                  .every_seconds = seconds("every"),
                                  .cost_seconds = seconds("cost")};
  }
  out.labels = string_map(s, "labels");
  out.annotations = string_map(s, "annotations");
  if (s.contains("placement")) out.placement = placement_of(s["placement"], ptr_key(out.ptr, "placement"));
  out.security = pod_security(s, out.ptr);
  // A generated image runs as uid 1000: it must own the folders the entry script writes.
  if (auto b = builds_.find(out.name); s.contains("build") && b != builds_.end() && b->second.generated()) {
    std::set<std::string> dirs;
    for (const auto& in : out.inputs) dirs.insert(in.to);
    if (out.outputs) dirs.insert(out.outputs->path);
    if (!out.heartbeat.file.empty()) dirs.insert(std::filesystem::path(out.heartbeat.file).parent_path().generic_string());
    for (const auto& d : dirs)
      if (!d.empty() && d != "/" && !d.starts_with("/tmp") && d != out.workdir && !d.starts_with(out.workdir + "/"))
        b->second.writable.push_back(d);
  }
  return out;
}

void Lowerer::size_steps(System& sys) {
  auto millis = [](double cores) { return fmt::format("{}m", static_cast<long long>(std::floor(cores * 1000))); };
  auto mebis = [](double bytes) { return fmt::format("{}Mi", static_cast<long long>(std::floor(bytes / (1 << 20)))); };
  for (Step& st : sys.steps) {
    // A RayJob runs in its cluster's pods: no pod of its own to size.
    if (const ComputeCluster* c = sys.compute_cluster(st.cluster); c && !c->steps_have_own_pods()) continue;
    const Pool* pool = sys.pool(st.pool);
    // What is added beside the step's container: the GCS FUSE sidecar.
    const Sidecar& fuse = catalog().gcsfuse_sidecar();
    const double added_cores = st.mounts.empty() ? 0 : fuse.cores, added_bytes = st.mounts.empty() ? 0 : fuse.bytes;
    // A pod with accelerators: its share of the node by GPUs (a TPU pod takes all of its host's chips).
    const double fraction = !pool                              ? 0
                            : pool->tpu                        ? 1
                            : pool->accelerator && st.gpus > 0 ? static_cast<double>(st.gpus) / pool->accelerator->count
                                                               : 0;
    if (fraction > 1) continue;  // more GPUs than a node has: the checks refuse it, nothing to size
    double cores = catalog().cpu_pod().cores, bytes = catalog().cpu_pod().bytes;
    if (pool && pool->vcpus > 0) {
      if (fraction > 0) {
        std::tie(cores, bytes) = share(sys, *pool, fraction);
        cores -= added_cores;
        bytes -= added_bytes;
      } else {  // at most what a node leaves it
        const auto [room_cores, room_bytes] = share(sys, *pool, 1.0);
        cores = std::min(cores, room_cores - added_cores);
        bytes = std::min(bytes, room_bytes - added_bytes);
      }
    }
    if (cores <= 0 || bytes <= 0) continue;  // a node too small for anything: the checks say so
    // /dev/shm is memory the container is charged for: a default that it would fill asks for the
    // process's own memory on top of it.
    const double shm = parse_quantity(st.shm).value_or(0);
    if (shm >= bytes && (!pool || pool->vcpus == 0 || shm + catalog().cpu_pod().bytes <= share(sys, *pool, 1.0).second))
      bytes = shm + catalog().cpu_pod().bytes;
    // The spec's own keys win; a key with only a limit asks for it (as Kubernetes would default it).
    auto fill = [&](const std::string& key, const std::string& value, bool limit) {
      if (st.resources.requests.count(key)) return;
      if (auto it = st.resources.limits.find(key); it != st.resources.limits.end()) {
        st.resources.requests[key] = it->second;
        return;
      }
      st.resources.requests[key] = value;
      if (limit) st.resources.limits[key] = value;
    };
    // The catalog's own words when its default stands ("2", "8Gi"), else whole millicores and MiB.
    const Sidecar& dflt = catalog().cpu_pod();
    fill("cpu", fraction == 0 && cores == dflt.cores ? dflt.cpu : millis(cores), false);
    fill("memory", fraction == 0 && bytes == dflt.bytes ? dflt.memory : mebis(bytes), true);  // see podDefaults
  }
}

StepKind Lowerer::kind(const System& sys, const json& s, const std::string& ptr, const Step& step) {
  std::vector<std::string_view> set;
  for (std::string_view name : alternative_names<StepKind>::value)
    if (s.contains(std::string(name))) set.push_back(name);
  if (set.size() > 1) {
    doc_.error(diags_, ptr_key(ptr, std::string(set[1])),
               fmt::format("step '{}' sets both '{}' and '{}'; keep one", step.name, set[0], set[1]), Anchor::key,
               {doc_.note(ptr_key(ptr, std::string(set[0])), fmt::format("'{}' is set here", set[0]), Anchor::key)});
  } else if (set.empty()) {
    doc_.error(diags_, ptr,
               fmt::format("step '{}' says nothing to run; add 'torchrun: {{script: ...}}', 'command: [...]', "
                           "'datagen: {{...}}' or 'xgboost: {{...}}'",
                           step.name));
    return Command{};
  }
  const json& k = s[std::string(set.front())];
  const std::string kptr = ptr_key(ptr, std::string(set.front()));
  return make_alternative<StepKind>(
      set.front(),
      [&](std::type_identity<Torchrun>) {
        Torchrun tr;
        tr.script = pod_path(step.workdir, k["script"]);
        if (k.contains("args")) tr.args = string_list(k["args"]);
        tr.port = integer(k, "port", 29500, kptr);
        return tr;
      },
      [&](std::type_identity<Command>) {
        return Command{string_list(k)};
      },
      [&](std::type_identity<Datagen>) { return datagen(sys, k, kptr, step.nodes); },
      [&](std::type_identity<XGBoost>) { return xgboost(sys, k, kptr, step.gpus); });
}

Datagen Lowerer::datagen(const System& sys, const json& g, const std::string& ptr, int nodes) {
  Datagen d;
  d.rows = integer<long long>(g, "rows", 0, ptr);
  d.size = get_or<std::string>(g, "size", "");
  d.features = integer(g, "features", 0, ptr);
  const std::optional<double> bytes = d.size.empty() ? std::nullopt : parse_byte_size(d.size);
  if (!d.size.empty() && !bytes)
    doc_.error(diags_, ptr_key(ptr, "size"),
               fmt::format("'{}' is not a size of at most 2^63 bytes such as 6TB, 500GB or 64GiB", d.size));
  else if (bytes)
    d.rows = static_cast<long long>(std::floor(*bytes / ((d.features + 1) * 4.0)));
  d.task = get_or<std::string>(g, "task", "classification");
  d.informative = integer(g, "informative", std::min(2, d.features), ptr);
  d.redundant = integer(g, "redundant", d.task == "classification" ? std::min(2, d.features - d.informative) : 0, ptr);
  d.repeated = integer(g, "repeated", 0, ptr);
  d.classes = integer(g, "classes", 2, ptr);
  d.clusters_per_class = integer(g, "clustersPerClass", 2, ptr);
  d.class_sep = get_or(g, "classSep", 1.0);
  d.flip_y = get_or(g, "flipY", 0.01);
  d.hypercube = get_or(g, "hypercube", true);
  if (g.contains("weights")) d.weights = g["weights"].get<std::vector<double>>();
  d.shards = integer(g, "shards", nodes, ptr);
  d.seed = integer<long long>(g, "seed", 0, ptr);
  d.format = get_or<std::string>(g, "format", "native");
  d.to = store_loc(sys, g["to"], ptr_key(ptr, "to"));
  return d;
}

XGBoost Lowerer::xgboost(const System& sys, const json& x, const std::string& ptr, int gpus) {
  XGBoost out;
  out.from = store_loc(sys, x["from"], ptr_key(ptr, "from"));
  out.to = store_loc(sys, x["to"], ptr_key(ptr, "to"));
  out.rounds = integer(x, "rounds", 0, ptr);
  out.checkpoint_every = integer(x, "checkpointEvery", 100, ptr);
  out.params = string_map(x, "params");
  out.params.emplace("tree_method", "hist");
  if (gpus > 0) out.params.emplace("device", "cuda");
  return out;
}

void Lowerer::objectives_from_tables(const System& sys, std::vector<Step>& steps) {
  const auto same = [](const StoreLoc& a, const StoreLoc& b) {
    auto trim = [](std::string p) {
      while (p.size() > 1 && p.ends_with("/")) p.pop_back();
      return p;
    };
    return !a.store.empty() && a.store == b.store && trim(a.path) == trim(b.path);
  };
  // Which tables the datagen steps write is known when none was left out (a schema error, a cycle)
  // and each writes to a store of the system; else a step that reads none of them is not told to
  // set its objective (the error that left one out comes first).
  bool tables_known = true;
  for (const auto& other : in_cycles_) tables_known = tables_known && !other.as<Datagen>();
  for (const auto& other : steps)
    if (const auto* g = other.as<Datagen>(); g && !sys.store(g->to.store)) tables_known = false;
  if (auto p = doc_.root.find("pipeline"); p != doc_.root.end() && p->is_array())
    for (size_t i = 0; i < p->size(); ++i)
      if (doc_.pruned.count(ptr_index("/pipeline", i)) && (*p)[i].is_object() && (*p)[i].contains("datagen"))
        tables_known = false;
  for (auto& st : steps) {
    auto* x = std::get_if<XGBoost>(&st.run);
    if (!x) continue;
    const Step* maker = nullptr;
    for (const auto& other : steps)
      if (const auto* g = other.as<Datagen>(); g && same(g->to, x->from)) maker = &other;
    if (!maker) {
      // XGBoost's own default, reg:squarederror, would train a regression on a 0/1 label without a
      // word; the table's task is known only for a datagen step's table.
      if (tables_known && !x->params.count("objective"))
        doc_.error(diags_, x->from.ptr,
                   fmt::format("'{}:{}' is not a table a datagen step of the system writes, so trainc cannot tell "
                               "its task and XGBoost would train a regression (reg:squarederror) whatever its label "
                               "holds; set 'params.objective', e.g. 'binary:logistic' for a 0/1 label, "
                               "'multi:softprob' with 'num_class' for classes, 'reg:squarederror' for a number",
                               x->from.store, x->from.path),
                   Anchor::value);
      continue;
    }
    const Datagen& g = *maker->as<Datagen>();
    const bool regression = g.task == "regression", binary = !regression && g.classes == 2;
    const std::string table = regression ? "a regression table"
                              : binary   ? "a binary classification table"
                                         : fmt::format("a {}-class classification table", g.classes);
    const std::string objective = regression ? "reg:squarederror" : binary ? "binary:logistic" : "multi:softprob";
    const std::string optr = ptr_key(ptr_key(x->from.ptr.substr(0, x->from.ptr.rfind('/')), "params"), "objective");
    const auto note = doc_.note(ptr_key(maker->ptr, "datagen"), fmt::format("step '{}' writes the table here", maker->name));
    if (auto it = x->params.find("objective"); it != x->params.end()) {
      const std::string& given = it->second;
      const bool fits = regression ? given.starts_with("reg:") && given != "reg:logistic"
                        : binary   ? given.starts_with("binary:") || given == "reg:logistic"
                                   : given.starts_with("multi:");
      if (!fits)
        doc_.error(diags_, optr,
                   fmt::format("objective '{}' does not fit '{}:{}', {} written by step '{}'; use '{}' or remove "
                               "'objective' (trainc sets it from the table)",
                               given, x->from.store, x->from.path, table, maker->name, objective),
                   Anchor::value, {note});
    }
    x->params.emplace("objective", objective);
    if (!regression && !binary) {
      const std::string classes = std::to_string(g.classes);
      auto [it, fresh] = x->params.emplace("num_class", classes);
      if (!fresh && it->second != classes)
        doc_.error(diags_, ptr_key(optr.substr(0, optr.rfind('/')), "num_class"),
                   fmt::format("num_class {} does not match the {} classes of the table step '{}' writes; remove "
                               "'num_class' (trainc sets it from the table)",
                               it->second, g.classes, maker->name),
                   Anchor::value, {note});
    }
    x->params.emplace("eval_metric", regression ? "rmse" : binary ? "logloss" : "mlogloss");
  }
}

void Lowerer::add_store_mounts(const System& sys, Step& step) {
  for (const StoreLoc* loc : store_locs(step.run)) {
    const Store* st = sys.store(loc->store);
    if (!st || st->kind != Store::Kind::gcs) continue;
    bool present = std::any_of(step.mounts.begin(), step.mounts.end(), [&](const Mount& m) { return m.store == loc->store; });
    if (present) continue;
    step.mounts.push_back(Mount{loc->store, fmt::format("{}/{}", kStoreMountRoot, loc->store), st->bucket, st->prefix,
                                false, loc->ptr});
  }
}

void Lowerer::resolve_needs(const std::vector<Step>& steps) {
  std::set<std::string> seen;
  std::vector<std::string> names;
  for (const auto& st : steps)
    if (seen.insert(st.name).second) names.push_back(st.name);
  for (const auto& st : steps) {
    for (size_t i = 0; i < st.needs.size(); ++i) {
      if (st.needs[i] != st.name && !seen.count(st.needs[i]) && !pruned("step", st.needs[i]))
        doc_.error(diags_, ptr_index(ptr_key(st.ptr, "needs"), i),
                   fmt::format("unknown step '{}' in needs{}", st.needs[i], did_you_mean(st.needs[i], names)));
    }
  }
}

}  // namespace trainc::lowering
