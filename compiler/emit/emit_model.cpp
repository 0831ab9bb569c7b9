// model.yaml: the lowered model, so a golden diff shows exactly what lowering did.
#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/units.h"
#include "emit/emitter.h"
#include "base/yaml_writer.h"

namespace trainc {
namespace {

using ojson = nlohmann::ordered_json;

/// Plain env values, then each Secret reference as the spec gives it.
ojson env_json(const StringMap& env, const SecretEnvMap& secrets);

ojson map_json(const StringMap& m) {
  ojson o = ojson::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

ojson env_json(const StringMap& env, const SecretEnvMap& secrets) {
  ojson j = map_json(env);
  for (const auto& [k, s] : secrets) j[k] = {{"secretRef", {{"name", s.secret}, {"key", s.key}}}};
  return j;
}

ojson ref_json(const StoreRef& r) { return {{"store", r.store}, {"path", r.path}, {"url", r.url}}; }

ojson loc_json(const StoreLoc& l) { return {{"store", l.store}, {"path", l.path}, {"podPath", l.pod_path}}; }

ojson datagen_json(const Datagen& d) {
  return {{"rows", d.rows}, {"size", d.size}, {"features", d.features}, {"task", d.task},
          {"informative", d.informative}, {"redundant", d.redundant}, {"repeated", d.repeated},
          {"classes", d.classes}, {"clustersPerClass", d.clusters_per_class}, {"classSep", d.class_sep},
          {"flipY", d.flip_y}, {"hypercube", d.hypercube}, {"weights", d.weights}, {"shards", d.shards},
          {"seed", d.seed}, {"format", d.format}, {"to", loc_json(d.to)}};
}

ojson pool_json(const Pool& p) {
  ojson j;
  j["machine"] = p.machine;
  j["vcpus"] = p.vcpus;
  j["memoryGiB"] = p.memory_gib;
  j["allocatable"] = {{"cpu", fmt::format("{:.2f}", p.allocatable_cpu)},
                      {"memory", fmt::format("{:.2f}Gi", p.allocatable_memory / (1 << 30))}};
  j["accelerator"] = p.accelerator ? ojson{{"type", p.accelerator->type}, {"count", p.accelerator->count}} : ojson(nullptr);
  j["tpu"] = p.tpu ? ojson{{"generation", p.tpu->generation}, {"accelerator", p.tpu->accelerator},
                           {"topology", p.tpu->topology}, {"chipsPerHost", p.tpu->chips_per_host}, {"hosts", p.tpu->hosts}}
                   : ojson(nullptr);
  // Only a multislice pool says so, so single-slice pools read as they always have.
  if (p.tpu && p.tpu->slices > 1) {
    j["tpu"]["slices"] = p.tpu->slices;
    j["nodePools"] = p.node_pools();
  }
  j["nodes"] = p.nodes;
  j["autoscaling"] = p.autoscaling ? ojson{{"min", p.autoscaling->first}, {"max", p.autoscaling->second}} : ojson(nullptr);
  j["provisioning"] = p.provisioning;
  j["reservation"] = p.reservation;
  j["rdma"] = p.rdma;
  j["diskSizeGb"] = p.disk_gb;
  j["labels"] = map_json(p.labels);
  ojson taints = ojson::array();
  for (const auto& t : p.taints) taints.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
  j["taints"] = taints;
  return j;
}

ojson step_json(const Step& s) {
  ojson j;
  j["name"] = s.name;
  j["needs"] = s.needs;
  j["image"] = s.image;
  j["imagePullPolicy"] = s.image_pull_policy;
  j["pool"] = s.pool.empty() ? ojson(nullptr) : ojson(s.pool);
  if (!s.cluster.empty()) j["cluster"] = s.cluster;
  j["nodes"] = s.nodes;
  j["gpus"] = s.gpus;
  j["procsPerNode"] = s.procs_per_node;
  j["workdir"] = s.workdir;
  j[s.kind()] = match(
      s.run,
      [](const Torchrun& t) { return ojson{{"script", t.script}, {"args", t.args}, {"port", t.port}}; },
      [](const Command& c) { return ojson(c.argv); }, [](const Datagen& d) { return datagen_json(d); },
      [](const XGBoost& x) {
        return ojson{{"from", loc_json(x.from)}, {"to", loc_json(x.to)}, {"rounds", x.rounds},
                     {"checkpointEvery", x.checkpoint_every}, {"params", map_json(x.params)}};
      });
  j["env"] = env_json(s.env, s.secret_env);
  j["resources"] = {{"requests", map_json(s.resources.requests)}, {"limits", map_json(s.resources.limits)}};
  j["shm"] = s.shm;
  j["retries"] = s.retries;
  j["noRetryExitCodes"] = s.no_retry_exit_codes;
  j["timeout"] = s.timeout_seconds ? ojson(format_duration(*s.timeout_seconds)) : ojson(nullptr);
  j["heartbeat"] = {{"maxAge", format_duration(s.heartbeat.max_age_seconds)}, {"file", s.heartbeat.file}};
  ojson inputs = ojson::array();
  for (const auto& in : s.inputs) inputs.push_back({{"from", ref_json(in.from)}, {"to", in.to}});
  j["inputs"] = inputs;
  ojson mounts = ojson::array();
  for (const auto& m : s.mounts)
    mounts.push_back({{"store", m.store}, {"bucket", m.bucket}, {"onlyDir", m.only_dir}, {"path", m.path}, {"readOnly", m.read_only}});
  j["mounts"] = mounts;
  j["outputs"] = s.outputs ? ojson{{"path", s.outputs->path}, {"to", ref_json(s.outputs->to)},
                                   {"every", format_duration(s.outputs->every_seconds)}, {"log", s.outputs->log}}
                           : ojson(nullptr);
  j["checkpoints"] = s.checkpoints ? ojson{{"path", s.checkpoints->path}, {"pattern", s.checkpoints->pattern},
                                           {"resumeFlag", s.checkpoints->resume_flag}}
                                   : ojson(nullptr);
  // Written only when the spec gives them (the plan's goodput line reads them; no object does).
  if (s.checkpoints && s.checkpoints->resume_previous) j["checkpoints"]["resumeFrom"] = "previous";
  if (s.checkpoints && !s.checkpoints->start_from.empty()) j["checkpoints"]["resumeFrom"] = s.checkpoints->start_from;
  if (s.checkpoints && s.checkpoints->every_seconds) j["checkpoints"]["every"] = format_duration(*s.checkpoints->every_seconds);
  if (s.checkpoints && s.checkpoints->cost_seconds) j["checkpoints"]["cost"] = format_duration(*s.checkpoints->cost_seconds);
  j["labels"] = map_json(s.labels);
  j["annotations"] = map_json(s.annotations);
  return j;
}

ojson group_json(const PodGroup& g) {
  return {{"pool", g.pool.empty() ? ojson(nullptr) : ojson(g.pool)}, {"replicas", g.replicas}, {"min", g.min},
          {"max", g.max}, {"gpus", g.gpus},
          {"resources", {{"requests", map_json(g.resources.requests)}, {"limits", map_json(g.resources.limits)}}},
          {"shm", g.shm}};
}

ojson cluster_json(const ComputeCluster& c) {
  ojson j;
  j["engine"] = c.kind();
  j["image"] = c.image;
  j["imagePullPolicy"] = c.image_pull_policy;
  match(
      c.engine,
      [&](const Ray& r) {
        j["version"] = r.version;
        j["head"] = group_json(r.head);
      },
      [&](const Dask& d) {
        j["scheduler"] = group_json(d.scheduler);
        j["threads"] = d.threads;
        j["rmmPoolSize"] = d.rmm_pool_size;
      });
  ojson workers = ojson::object();
  for (const auto& g : c.workers) workers[g.name] = group_json(g);
  j["workers"] = workers;
  j["env"] = env_json(c.env, c.secret_env);
  ojson mounts = ojson::array();
  for (const auto& m : c.mounts)
    mounts.push_back({{"store", m.store}, {"bucket", m.bucket}, {"onlyDir", m.only_dir}, {"path", m.path}, {"readOnly", m.read_only}});
  j["mounts"] = mounts;
  j["labels"] = map_json(c.labels);
  return j;
}

ojson service_json(const System& sys, const Service& s) {
  ojson j;
  j["kind"] = s.kind();
  match(
      s.server,
      [&](const Triton& t) {
        j["triton"] = {{"repository", t.repository.url}, {"models", t.models}, {"args", t.args}};
        if (!t.source) return;
        ojson src, fetch = ojson::array();
        if (!t.source->folder.empty()) src["folder"] = t.source->folder;
        if (!t.source->gcs.empty()) src["gcs"] = t.source->gcs;
        for (const FetchedFile& f : t.source->fetch) fetch.push_back({{"url", f.url}, {"sha256", f.sha256}, {"to", f.to}});
        if (!fetch.empty()) src["fetch"] = fetch;
        j["triton"]["source"] = src;
      },
      [&](const Vllm& v) {
        ojson m;
        if (!v.model.empty()) m["model"] = v.model;
        if (!v.weights.url.empty()) m["weights"] = v.weights.url;
        if (!v.revision.empty()) m["revision"] = v.revision;
        m["servedModelName"] = v.served_name;
        m["tensorParallelSize"] = v.tensor_parallel;
        m["args"] = v.args;
        j["vllm"] = m;
      });
  j["image"] = s.image;
  j["imagePullPolicy"] = s.image_pull_policy;
  j["pool"] = s.pool.empty() ? ojson(nullptr) : ojson(s.pool);
  j["replicas"] = {{"min", s.min}, {"max", s.max}};
  if (s.autoscaled()) j["autoscaling"] = {{"metric", s.scaling_metric().name}, {"target", s.pending_requests}};
  j["gpus"] = s.gpus;
  j["resources"] = {{"requests", map_json(s.resources.requests)}, {"limits", map_json(s.resources.limits)}};
  j["shm"] = s.shm;
  j["startupTimeoutSeconds"] = s.startup_seconds;
  j["expose"] = s.expose.gateway ? ojson{{"gateway", {{"hosts", s.expose.hosts}}}} : ojson("cluster-internal");
  ojson grants = ojson::array();
  for (const auto& g : s.identity.grants) grants.push_back({{"store", g.store}, {"role", g.role}});
  j["identity"] = {{"kubernetesServiceAccount", s.identity.ksa},
                   {"gcpServiceAccount", sys.gcp ? ojson(s.identity.gsa_email(*sys.gcp)) : ojson(nullptr)},
                   {"bucketRoles", grants}};
  j["env"] = env_json(s.env, s.secret_env);
  j["labels"] = map_json(s.labels);
  return j;
}

ojson gcp_json(const Gcp& g) {
  ojson j{{"project", g.project}, {"region", g.region}, {"zone", g.zone}};
  if (g.state) j["state"] = {{"bucket", g.state->bucket}, {"prefix", g.state->prefix}};
  if (g.network)
    j["network"] = {{"name", g.network->name},         {"subnet", g.network->subnet},
                    {"cidr", g.network->cidr},         {"pods", g.network->pods},
                    {"services", g.network->services}, {"create", g.network->create}};
  if (g.registry)
    j["registry"] = {{"repository", g.registry->repository}, {"location", g.registry->location},
                     {"create", g.registry->create}};
  return j;
}

class ModelEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "model"; }

  void emit(const System& sys, const Planned&, OutputSink& out) const override {
    ojson m;
    m["name"] = sys.name;
    m["gcp"] = sys.gcp ? gcp_json(*sys.gcp) : ojson(nullptr);
    m["cluster"] = {{"name", sys.cluster.name}, {"releaseChannel", sys.cluster.release_channel}};
    if (sys.gcp) {  // the nodes' own account and the repositories it may read (NodeAccount)
      const NodeAccount nodes = node_account(sys);
      ojson repos = ojson::array();
      for (const auto& r : nodes.repositories) repos.push_back(fmt::format("{}/{}/{}", r.host(), r.project, r.repository));
      m["cluster"]["nodeServiceAccount"] = {{"email", nodes.email(*sys.gcp)}, {"readsRepositories", repos}};
    }
    m["namespace"] = {{"name", sys.ns}, {"managedByTrainc", sys.owns_namespace}};
    m["serviceAccount"] = sys.pod_service_account().empty() ? ojson(nullptr) : ojson(sys.pod_service_account());
    m["identity"] = sys.identity && sys.gcp ? ojson{{"kubernetesServiceAccount", sys.identity->ksa},
                                                   {"gcpServiceAccount", sys.identity->gsa_email(*sys.gcp)}}
                                           : ojson(nullptr);
    m["labels"] = map_json(sys.labels);
    ojson pools = ojson::object();
    // By GKE node pool: a laddered pool's rungs each (with `ladderOf`), as plan --against compares them.
    for (const Pool& p : sys.gke_pools()) {
      pools[p.name] = pool_json(p);
      if (!p.ladder_of.empty()) pools[p.name]["ladderOf"] = p.ladder_of;
    }
    m["pools"] = pools;
    ojson stores = ojson::object();
    for (const auto& [name, s] : sys.stores) {
      if (s.kind == Store::Kind::s3)
        stores[name] = {{"kind", "s3"}, {"bucket", s.bucket}, {"prefix", s.prefix}, {"region", s.region},
                        {"endpoint", s.endpoint}, {"credentialsSecret", s.credentials_secret}};
      else
        stores[name] = {{"kind", "gcs"}, {"bucket", s.bucket}, {"prefix", s.prefix}, {"location", s.location},
                        {"versioning", s.versioning}, {"create", s.create}, {"readOnly", s.read_only}};
    }
    m["storage"] = stores;
    if (!sys.clusters.empty()) {
      ojson clusters = ojson::object();
      for (const auto& [name, c] : sys.clusters) clusters[name] = cluster_json(c);
      m["clusters"] = clusters;
    }
    if (sys.istio) m["istio"] = {{"install", sys.istio->install}};
    if (!sys.services.empty()) {
      ojson services = ojson::object();
      for (const auto& [name, s] : sys.services) services[name] = service_json(sys, s);
      m["services"] = services;
    }
    ojson steps = ojson::array();
    for (const auto& s : sys.steps) steps.push_back(step_json(s));
    m["pipeline"] = steps;
    if (!sys.builds.empty()) {
      ojson builds = ojson::object();
      for (const auto& [name, b] : sys.builds)
        builds[name] = {{"of", b.of},
                        {"context", b.context},
                        {"dockerfile", b.generated() ? ojson(b.output_dockerfile() + " (generated)") : ojson(b.dockerfile)},
                        {"base", b.base},
                        {"requirements", b.requirements},
                        {"copy", b.copy},
                        {"workdir", b.workdir},
                        {"tag", b.tag},
                        {"image", b.image}};
      m["builds"] = builds;
    }
    if (sys.ci) {
      ojson ci = ojson::object();
      if (const auto& g = sys.ci->github)
        ci["github"] = {{"workloadIdentityProvider", g->provider}, {"serviceAccount", g->service_account},
                        {"branch", g->branch}, {"environment", g->environment}, {"traincImage", g->trainc_image}};
      if (const auto& c = sys.ci->cloudbuild)
        ci["cloudbuild"] = {{"serviceAccount", c->service_account}, {"timeoutSeconds", c->timeout_seconds},
                            {"machineType", c->machine_type}};
      m["ci"] = ci;
    }
    out.add("model.yaml", to_yaml(m, fmt::format("{}\nthe lowered model of system '{}': every default applied, "
                                                 "steps in dependency order",
                                                 kGeneratedNotice, sys.name)));
  }
};

}  // namespace

std::unique_ptr<Emitter> new_model_emitter() { return std::make_unique<ModelEmitter>(); }

}  // namespace trainc
