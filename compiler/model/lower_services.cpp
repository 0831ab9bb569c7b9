#include "model/lowerer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "model/catalog.h"

namespace trainc::lowering {

namespace {

/// How long vLLM may take to start when the spec does not say: it downloads or streams the
/// weights, then compiles the model and captures CUDA graphs before its port opens.
constexpr int kVllmStartupSeconds = 1200;

}  // namespace

Triton Lowerer::triton(const System& sys, const json& t, const std::string& ptr, bool serves_steps) {
  Triton out;
  out.repository = gcs_ref(sys, t["repository"], ptr_key(ptr, "repository"), "Triton");
  if (t.contains("models")) out.models = string_list(t["models"]);
  if (t.contains("args")) out.args = string_list(t["args"]);
  if (t.contains("source")) {
    // The repository's one StoreContents: what each model of `models` needs, in their order.
    const std::vector<StoreContents> contents = out.store_contents();
    std::vector<NeededObject> needs = contents.empty() ? std::vector<NeededObject>{} : contents.front().needs;
    // A service that serves steps' output gets its models' versions from them, when they have run.
    if (serves_steps)
      for (auto& n : needs) n.versions_in.clear();
    out.source = content_source(t["source"], ptr_key(ptr, "source"), out.repository, needs, ptr_key(ptr, "models"));
  }
  return out;
}

Vllm Lowerer::vllm(const System& sys, const json& s, const std::string& ptr, Service& svc) {
  const json& v = s["vllm"];
  Vllm out;
  const bool hf = v.contains("model"), gcs = v.contains("weights");
  if (hf && gcs)
    doc_.error(diags_, ptr_key(ptr, "weights"),
               "'model' (from Hugging Face) and 'weights' (from a GCS store) both say what to serve; keep one",
               Anchor::key, {doc_.note(ptr_key(ptr, "model"), "'model' is set here", Anchor::key)});
  else if (!hf && !gcs)
    doc_.error(diags_, ptr,
               fmt::format("service '{}' names no model for vLLM; add 'model: <owner>/<name>' (a Hugging Face id) "
                           "or 'weights: \"<store>:/path\"' (a folder in a GCS store)",
                           svc.name),
               Anchor::key);
  if (hf) out.model = v["model"];
  else if (gcs) out.weights = gcs_ref(sys, v["weights"], ptr_key(ptr, "weights"), "vLLM");
  out.revision = get_or<std::string>(v, "revision", "");
  for (const char* key : {"revision", "hfToken"})
    if (gcs && !hf && v.contains(key))
      doc_.error(diags_, ptr_key(ptr, key),
                 fmt::format("'{}' is for a model downloaded from Hugging Face, but these weights come from a GCS "
                             "store; remove it",
                             key),
                 Anchor::key, {doc_.note(ptr_key(ptr, "weights"), "'weights' is set here", Anchor::key)});
  if (v.contains("hfToken")) {
    const json& t = v["hfToken"];
    if (!t.is_object())
      doc_.error(diags_, ptr_key(ptr, "hfToken"),
                 "the Hugging Face token is written in the spec, where anyone who can read the spec can use it; put "
                 "it in a Kubernetes Secret and write 'hfToken: {secretRef: {name: <secret>, key: <key>}}'");
    else if (svc.env.count("HF_TOKEN") || svc.secret_env.count("HF_TOKEN"))
      doc_.error(diags_, ptr_key(ptr_key(svc.ptr, "env"), "HF_TOKEN"), "'hfToken' sets HF_TOKEN already; remove it here",
                 Anchor::key, {doc_.note(ptr_key(ptr, "hfToken"), "'hfToken' is set here", Anchor::key)});
    else
      svc.secret_env["HF_TOKEN"] = SecretEnv{t["secretRef"]["name"], t["secretRef"]["key"]};
  }
  out.served_name = get_or<std::string>(v, "servedModelName", "");
  if (out.served_name.empty() && hf) out.served_name = out.model;
  if (out.served_name.empty() && gcs && !out.weights.url.empty()) {
    // The weights' folder names the model: "models:/qwen2.5-0.5b" serves "qwen2.5-0.5b".
    std::string path = out.weights.path;
    while (path.size() > 1 && path.ends_with("/")) path.pop_back();
    out.served_name = path.substr(path.rfind('/') + 1);
    // The name clients write: what servedModelName's schema allows, without '/'.
    const bool plain = !out.served_name.empty() && std::isalnum(static_cast<unsigned char>(out.served_name[0])) &&
                       std::all_of(out.served_name.begin(), out.served_name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                       });
    if (!plain)
      doc_.error(diags_, ptr_key(ptr, "weights"),
                 out.served_name.empty()
                     ? "the weights are the whole store, whose path gives the model no name; add 'servedModelName'"
                     : fmt::format("the weights' folder '{}' is no model name a client can write (letters, digits, "
                                   "'-', '_' and '.'); add 'servedModelName'",
                                   out.served_name));
  }
  out.tensor_parallel = integer(v, "tensorParallelSize", std::max(1, svc.gpus), ptr);
  if (v.contains("args")) out.args = string_list(v["args"]);
  out.args_reason = get_or<std::string>(v, "argsReason", "");
  out.params = get_or<std::string>(v, "params", "");
  out.dtype = get_or<std::string>(v, "dtype", "");
  out.require_fit = get_or<bool>(v, "requireFit", false);
  if (!s.contains("startupTimeout")) svc.startup_seconds = kVllmStartupSeconds;
  return out;
}

ServerKind Lowerer::server_kind(const System& sys, const json& s, Service& svc) {
  std::vector<std::string_view> set;
  for (std::string_view name : alternative_names<ServerKind>::value)
    if (s.contains(std::string(name))) set.push_back(name);
  if (set.size() > 1)
    doc_.error(diags_, ptr_key(svc.ptr, std::string(set[1])),
               fmt::format("service '{}' sets both '{}' and '{}'; keep one", svc.name, set[0], set[1]), Anchor::key,
               {doc_.note(ptr_key(svc.ptr, std::string(set[0])), fmt::format("'{}' is set here", set[0]), Anchor::key)});
  if (set.empty()) {
    doc_.error(diags_, svc.ptr,
               fmt::format("service '{}' says nothing to serve; add 'triton: {{repository: \"<store>:/path\"}}' or 'vllm: "
                           "{{model: <owner>/<name>}}'",
                           svc.name),
               Anchor::key);
    return Triton{};
  }
  const std::string kptr = ptr_key(svc.ptr, std::string(set.front()));
  const json& k = s[std::string(set.front())];
  return make_alternative<ServerKind>(set.front(),
                                      [&](std::type_identity<Triton>) { return triton(sys, k, kptr, s.contains("needs") && !s["needs"].empty()); },
                                      [&](std::type_identity<Vllm>) { return vllm(sys, s, kptr, svc); });
}

Service Lowerer::service(const System& sys, const std::string& name, const json& s) {
  Service out;
  out.name = name;
  out.ptr = ptr_key("/services", name);
  out.image_pull_policy = get_or<std::string>(s, "imagePullPolicy", "IfNotPresent");
  const Pool* pool = nullptr;
  if (s.contains("pool")) {
    out.pool = s["pool"];
    pool = pool_ref(sys, out.pool, ptr_key(out.ptr, "pool"));
  }
  if (s.contains("needs")) out.needs = string_list(s["needs"]);
  if (s.contains("autoscaling")) {
    const json& a = s["autoscaling"];
    const std::string aptr = ptr_key(out.ptr, "autoscaling");
    out.min = integer(a, "min", 1, aptr);
    out.max = integer(a, "max", 1, aptr);
    out.pending_requests = integer(a, "pendingRequests", 10, aptr);
    out.replicas = out.min;
  } else {
    out.replicas = integer(s, "replicas", 1, out.ptr);
    out.min = out.max = out.replicas;
  }
  const bool gpu_pool = pool && pool->accelerator;
  out.gpus = integer(s, "gpus", gpu_pool ? pool->accelerator->count : 0, out.ptr);
  if (s.contains("resources")) {
    out.resources.requests = string_map(s["resources"], "requests");
    out.resources.limits = string_map(s["resources"], "limits");
  } else if (pool && pool->vcpus > 0) {
    // The pod's share of a node (the pods that fit on it by GPUs share what its DaemonSets leave),
    // less the mesh's sidecar. It asks for half of that and may use all the memory: the other half
    // leaves room for a rolling update's new pod beside the old one.
    const int per_node = out.gpus > 0 && gpu_pool ? std::max(1, pool->accelerator->count / out.gpus) : 1;
    const auto& proxy = catalog().istio_proxy();
    const bool sidecar = sys.istio.has_value();
    const double cpu = pool->room_cpu() / per_node - (sidecar ? proxy.cores : 0);
    const double mem = pool->room_memory() / per_node - (sidecar ? proxy.bytes : 0);
    auto millis = [](double cores) { return fmt::format("{}m", static_cast<long long>(std::floor(cores * 1000))); };
    auto mebis = [](double bytes) { return fmt::format("{}Mi", static_cast<long long>(std::floor(bytes / (1 << 20)))); };
    out.resources.requests = {{"cpu", millis(cpu / 2)}, {"memory", mebis(mem / 2)}};
    out.resources.limits = {{"memory", mebis(mem)}};
  } else {
    out.resources.requests = {{"cpu", "2"}, {"memory", "8Gi"}};
    out.resources.limits = {{"memory", "8Gi"}};
  }
  out.shm = s.contains("shm") ? scalar_text(s["shm"]) : fmt::format("{}Gi", std::max(1, 2 * out.gpus));
  out.startup_seconds = duration(s, "startupTimeout", kDefaultStartupSeconds, out.ptr);
  if (s.contains("expose") && s["expose"].contains("gateway")) {
    const json& g = s["expose"]["gateway"];
    out.expose.gateway = true;
    out.expose.ptr = ptr_key(ptr_key(out.ptr, "expose"), "gateway");
    out.expose.hosts = g.contains("hosts") ? string_list(g["hosts"]) : std::vector<std::string>{"*"};
    out.expose.path_prefix = get_or<std::string>(g, "pathPrefix", "");
  }
  const json id = s.value("identity", json::object());
  out.identity = identity(id, ptr_key(out.ptr, "identity"), name, sys.name + "-" + name);
  split_env(s, out.env, out.secret_env);
  out.labels = string_map(s, "labels");
  out.security = pod_security(s, out.ptr);
  // The server last: what it runs may follow the pod's GPUs, env and startup budget.
  out.server = server_kind(sys, s, out);
  out.image = s.contains("build") ? built_image(sys, s, out.ptr, name, "service", "/workspace")
                                  : get_or<std::string>(s, "image", catalog().server_image(out.kind()));
  match(
      out.server,
      [&](const Triton& t) {
        if (t.repository.url.empty()) return;
        // Read-only: the objects, and the bucket's metadata, which Triton's GCS client asks for first.
        out.identity.grants.push_back({t.repository.store, "roles/storage.objectViewer"});
        out.identity.grants.push_back({t.repository.store, "roles/storage.legacyBucketReader"});
      },
      [&](const Vllm& v) {
        // Read-only: the Run:ai Model Streamer lists the folder and reads its objects.
        if (!v.weights.url.empty()) out.identity.grants.push_back({v.weights.store, "roles/storage.objectViewer"});
      });
  return out;
}

}  // namespace trainc::lowering
