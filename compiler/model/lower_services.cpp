#include "model/lowerer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "model/catalog.h"

namespace trainc::lowering {

namespace {

/// Flags trainc sets on tritonserver itself, which `args` may not repeat.
constexpr std::array<std::string_view, 5> kTritonOwnFlags = {"--model-repository", "--model-store", "--http-port",
                                                            "--grpc-port", "--metrics-port"};

}  // namespace

Triton Lowerer::triton(const System& sys, const json& t, const std::string& ptr) {
  Triton out;
  out.repository = gcs_ref(sys, t["repository"], ptr_key(ptr, "repository"), "Triton");
  if (t.contains("models")) out.models = string_list(t["models"]);
  if (t.contains("args")) out.args = string_list(t["args"]);
  for (size_t i = 0; i < out.args.size(); ++i) {
    const std::string flag = out.args[i].substr(0, out.args[i].find('='));
    // tritonserver reads its flags with getopt_long, which takes any unambiguous prefix of one:
    // a prefix of an owned flag either sets it or stops the server as ambiguous.
    std::vector<std::string> owned;
    for (std::string_view own : kTritonOwnFlags)
      if (flag.size() > 2 && own.starts_with(flag)) owned.push_back(fmt::format("'{}'", own));
    if (owned.empty()) continue;
    const std::string what =
        owned.size() == 1 && owned[0] == "'" + flag + "'"
            ? owned[0] + " is"
            : fmt::format("'{}' is short for {} (tritonserver takes any unambiguous prefix of a flag), which {}", flag,
                          fmt::join(owned, " or "), owned.size() == 1 ? "is" : "are");
    doc_.error(diags_, ptr_index(ptr_key(ptr, "args"), i),
               fmt::format("{} trainc's to set: the repository comes from 'repository' and the ports are "
                           "fixed (http 8000, grpc 8001, metrics 8002) so probes, Service and gateway agree; "
                           "remove it",
                           what));
  }
  return out;
}

ServerKind Lowerer::server_kind(const System& sys, const json& s, const Service& svc) {
  std::vector<std::string_view> set;
  for (std::string_view name : alternative_names<ServerKind>::value)
    if (s.contains(std::string(name))) set.push_back(name);
  if (set.size() > 1)
    doc_.error(diags_, ptr_key(svc.ptr, std::string(set[1])),
               fmt::format("service '{}' sets both '{}' and '{}'; keep one", svc.name, set[0], set[1]), Anchor::key,
               {doc_.note(ptr_key(svc.ptr, std::string(set[0])), fmt::format("'{}' is set here", set[0]), Anchor::key)});
  if (set.empty()) {
    doc_.error(diags_, svc.ptr,
               fmt::format("service '{}' says nothing to serve; add 'triton: {{repository: \"<store>:/path\"}}'",
                           svc.name),
               Anchor::key);
    return Triton{};
  }
  const std::string kptr = ptr_key(svc.ptr, std::string(set.front()));
  const json& k = s[std::string(set.front())];
  return make_alternative<ServerKind>(set.front(),
                                      [&](std::type_identity<Triton>) { return triton(sys, k, kptr); });
}

Service Lowerer::service(const System& sys, const std::string& name, const json& s) {
  Service out;
  out.name = name;
  out.ptr = ptr_key("/services", name);
  out.server = server_kind(sys, s, out);
  out.image = s.contains("build") ? built_image(sys, s, out.ptr, name, "service", "/workspace")
                                  : get_or<std::string>(s, "image", catalog().server_image(out.kind()));
  out.image_pull_policy = get_or<std::string>(s, "imagePullPolicy", "IfNotPresent");
  const Pool* pool = nullptr;
  if (s.contains("pool")) {
    out.pool = s["pool"];
    pool = pool_ref(sys, out.pool, ptr_key(out.ptr, "pool"));
  }
  if (s.contains("autoscaling")) {
    const json& a = s["autoscaling"];
    const std::string aptr = ptr_key(out.ptr, "autoscaling");
    if (s.contains("replicas"))
      doc_.error(diags_, ptr_key(out.ptr, "replicas"),
                 "with 'autoscaling' the autoscaler sets the replicas; remove 'replicas' (autoscaling.min is where "
                 "it starts)",
                 Anchor::key, {doc_.note(aptr, "'autoscaling' is set here", Anchor::key)});
    out.min = integer(a, "min", 1, aptr);
    out.max = integer(a, "max", 1, aptr);
    out.pending_requests = integer(a, "pendingRequests", 10, aptr);
    if (out.min > out.max)
      doc_.error(diags_, ptr_key(aptr, "min"), fmt::format("autoscaling: min {} is above max {}", out.min, out.max),
                 Anchor::value, {doc_.note(ptr_key(aptr, "max"), "max set here")});
    else if (out.min == out.max && a.contains("pendingRequests"))
      doc_.error(diags_, ptr_key(aptr, "pendingRequests"),
                 fmt::format("min and max are both {}, so nothing scales on 'pendingRequests'; raise max or remove it",
                             out.min),
                 Anchor::key);
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
    // The pod's share of a node (the pods that fit on it by GPUs share its allocatable), less the
    // mesh's sidecar. It asks for half of that and may use all the memory: the other half leaves
    // room for GKE's own DaemonSets, whose requests depend on the cluster's features.
    const int per_node = out.gpus > 0 && gpu_pool ? std::max(1, pool->accelerator->count / out.gpus) : 1;
    const auto& proxy = catalog().istio_proxy();
    const bool sidecar = sys.istio.has_value();
    const double cpu = pool->allocatable_cpu / per_node - (sidecar ? proxy.cores : 0);
    const double mem = pool->allocatable_memory / per_node - (sidecar ? proxy.bytes : 0);
    auto millis = [](double cores) { return fmt::format("{}m", static_cast<long long>(std::floor(cores * 1000))); };
    auto mebis = [](double bytes) { return fmt::format("{}Mi", static_cast<long long>(std::floor(bytes / (1 << 20)))); };
    out.resources.requests = {{"cpu", millis(cpu / 2)}, {"memory", mebis(mem / 2)}};
    out.resources.limits = {{"memory", mebis(mem)}};
  } else {
    out.resources.requests = {{"cpu", "2"}, {"memory", "8Gi"}};
    out.resources.limits = {{"memory", "8Gi"}};
  }
  out.shm = s.contains("shm") ? scalar_text(s["shm"]) : fmt::format("{}Gi", std::max(1, 2 * out.gpus));
  out.startup_seconds = duration(s, "startupTimeout", 600, out.ptr);
  if (s.contains("expose") && s["expose"].contains("gateway")) {
    const json& g = s["expose"]["gateway"];
    out.expose.gateway = true;
    out.expose.ptr = ptr_key(ptr_key(out.ptr, "expose"), "gateway");
    out.expose.hosts = g.contains("hosts") ? string_list(g["hosts"]) : std::vector<std::string>{"*"};
    out.expose.path_prefix = get_or<std::string>(g, "pathPrefix", "");
  }
  const json id = s.value("identity", json::object());
  out.identity = identity(sys, id, ptr_key(out.ptr, "identity"), name, sys.name + "-" + name);
  match(out.server, [&](const Triton& t) {
    if (t.repository.url.empty()) return;
    // Read-only: the objects, and the bucket's metadata, which Triton's GCS client asks for first.
    out.identity.grants.push_back({t.repository.store, "roles/storage.objectViewer"});
    out.identity.grants.push_back({t.repository.store, "roles/storage.legacyBucketReader"});
  });
  split_env(s, out.env, out.secret_env);
  out.labels = string_map(s, "labels");
  out.security = pod_security(s, out.ptr);
  return out;
}

}  // namespace trainc::lowering
