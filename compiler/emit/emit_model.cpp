// model.yaml: the lowered model, so a golden diff shows exactly what lowering did.
#include <fmt/format.h>

#include "base/units.h"
#include "emit/emitter.h"
#include "emit/yaml_writer.h"

namespace trainc {
namespace {

using ojson = nlohmann::ordered_json;

ojson map_json(const StringMap& m) {
  ojson o = ojson::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

ojson ref_json(const StoreRef& r) { return {{"store", r.store}, {"path", r.path}, {"url", r.url}}; }

ojson step_json(const Step& s) {
  ojson j;
  j["name"] = s.name;
  j["needs"] = s.needs;
  j["image"] = s.image;
  j["imagePullPolicy"] = s.image_pull_policy;
  j["pool"] = s.pool.empty() ? ojson(nullptr) : ojson(s.pool);
  j["nodes"] = s.nodes;
  j["gpus"] = s.gpus;
  j["procsPerNode"] = s.procs_per_node;
  j["workdir"] = s.workdir;
  if (s.torchrun) j["torchrun"] = {{"script", s.torchrun->script}, {"args", s.torchrun->args}, {"port", s.torchrun->port}};
  else j["command"] = s.command;
  j["env"] = map_json(s.env);
  j["resources"] = {{"requests", map_json(s.resources.requests)}, {"limits", map_json(s.resources.limits)}};
  j["shm"] = s.shm;
  j["retries"] = s.retries;
  j["timeout"] = s.timeout_seconds ? ojson(format_duration(*s.timeout_seconds)) : ojson(nullptr);
  j["heartbeat"] = {{"maxAge", format_duration(s.heartbeat.max_age_seconds)}, {"file", s.heartbeat.file}};
  ojson inputs = ojson::array();
  for (const auto& in : s.inputs) inputs.push_back({{"from", ref_json(in.from)}, {"to", in.to}});
  j["inputs"] = inputs;
  j["outputs"] = s.outputs ? ojson{{"path", s.outputs->path}, {"to", ref_json(s.outputs->to)},
                                   {"every", format_duration(s.outputs->every_seconds)}}
                           : ojson(nullptr);
  j["checkpoints"] = s.checkpoints ? ojson{{"path", s.checkpoints->path}, {"pattern", s.checkpoints->pattern},
                                           {"resumeFlag", s.checkpoints->resume_flag}}
                                   : ojson(nullptr);
  j["labels"] = map_json(s.labels);
  j["annotations"] = map_json(s.annotations);
  return j;
}

class ModelEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "model"; }

  void emit(const System& sys, OutputSink& out) const override {
    ojson m;
    m["name"] = sys.name;
    m["namespace"] = {{"name", sys.ns}, {"managedByTrainc", sys.owns_namespace}};
    m["serviceAccount"] = sys.service_account.empty() ? ojson(nullptr) : ojson(sys.service_account);
    m["labels"] = map_json(sys.labels);
    ojson pools = ojson::object();
    for (const auto& [name, p] : sys.pools) {
      pools[name] = {{"machine", p.machine}, {"nodes", p.nodes}};
      pools[name]["accelerator"] =
          p.accelerator ? ojson{{"type", p.accelerator->type}, {"count", p.accelerator->count}} : ojson(nullptr);
    }
    m["pools"] = pools;
    ojson stores = ojson::object();
    for (const auto& [name, s] : sys.stores)
      stores[name] = {{"kind", "s3"}, {"bucket", s.bucket}, {"prefix", s.prefix}, {"region", s.region},
                      {"endpoint", s.endpoint}, {"credentialsSecret", s.credentials_secret}};
    m["storage"] = stores;
    ojson steps = ojson::array();
    for (const auto& s : sys.steps) steps.push_back(step_json(s));
    m["pipeline"] = steps;
    out.add("model.yaml", to_yaml(m, fmt::format("{}\nthe lowered model of system '{}': every default applied, "
                                                 "steps in dependency order",
                                                 kGeneratedNotice, sys.name)));
  }
};

}  // namespace

std::unique_ptr<Emitter> new_model_emitter() { return std::make_unique<ModelEmitter>(); }

}  // namespace trainc
