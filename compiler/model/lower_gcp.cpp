#include "model/lowerer.h"

#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

namespace trainc::lowering {

void Lowerer::gcp_extras(const std::string& system, const json& g, Gcp& gcp) {
  if (g.contains("state"))
    gcp.state = TerraformState{g["state"]["bucket"], get_or<std::string>(g["state"], "prefix", system)};
  if (g.contains("network")) {
    const json& n = g["network"];
    Network net;
    net.name = n["name"];
    net.subnet = get_or<std::string>(n, "subnet", net.name + "-" + gcp.region);
    net.cidr = get_or<std::string>(n, "cidr", net.cidr);
    net.pods = get_or<std::string>(n, "pods", net.pods);
    net.services = get_or<std::string>(n, "services", net.services);
    net.create = get_or(n, "create", true);
    net.ptr = "/gcp/network";
    gcp.network = net;
  }
  auto builds = [](const json& list) {
    if (list.is_array()) return std::any_of(list.begin(), list.end(), [](const json& w) { return w.is_object() && w.contains("build"); });
    if (list.is_object()) {
      for (const auto& [_, w] : list.items())
        if (w.is_object() && w.contains("build")) return true;
    }
    return false;
  };
  const bool any_build = builds(root_.value("pipeline", json::array())) || builds(root_.value("clusters", json::object())) ||
                         builds(root_.value("services", json::object()));
  if (g.contains("registry") || any_build) {
    const json r = g.value("registry", json::object());
    gcp.registry = Registry{get_or<std::string>(r, "repository", system), get_or<std::string>(r, "location", gcp.region),
                            get_or(r, "create", true), g.contains("registry") ? "/gcp/registry" : "/gcp"};
  }
}

Ci Lowerer::ci(const json& c) {
  Ci out;
  out.ptr = "/ci";
  if (c.contains("github")) {
    const json& g = c["github"];
    GithubCi gh;
    gh.ptr = "/ci/github";
    gh.provider = g["workloadIdentityProvider"];
    gh.service_account = g["serviceAccount"];
    gh.plan_service_account = get_or<std::string>(g, "planServiceAccount", "");
    gh.branch = get_or<std::string>(g, "branch", "main");
    gh.environment = get_or<std::string>(g, "environment", "");
    gh.trainc_image = g["traincImage"];
    out.github = gh;
  }
  if (c.contains("cloudbuild")) {
    const json& b = c["cloudbuild"];
    CloudBuildCi cb;
    cb.ptr = "/ci/cloudbuild";
    cb.service_account = get_or<std::string>(b, "serviceAccount", "");
    cb.timeout_seconds = duration(b, "timeout", 7200, cb.ptr);
    if (b.contains("machineType")) {
      std::string m = b["machineType"];
      std::transform(m.begin(), m.end(), m.begin(), [](char ch) { return ch == '-' ? '_' : static_cast<char>(std::toupper(ch)); });
      cb.machine_type = m;
    }
    out.cloudbuild = cb;
  }
  return out;
}

Identity Lowerer::identity(const json& i, const std::string& ptr, const std::string& of,
                           const std::string& default_gsa) {
  Identity out;
  out.ptr = ptr;
  out.of = of;
  out.ksa = get_or<std::string>(i, "serviceAccount", of + "-server");
  // A named Kubernetes account names the Google one too, unless the spec says otherwise.
  out.gsa = get_or<std::string>(i, "gcpServiceAccount",
                                default_gsa.empty() || i.contains("serviceAccount") ? out.ksa : default_gsa);
  return out;
}

}  // namespace trainc::lowering
