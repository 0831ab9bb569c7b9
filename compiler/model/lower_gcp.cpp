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

Ci Lowerer::ci(const System& sys, const json& c) {
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
  if (!sys.gcp)
    doc_.error(diags_, out.ptr, "'ci' deploys to Google Cloud and needs 'gcp' (project, region and state)", Anchor::key);
  else if (!sys.gcp->state)
    doc_.error(diags_, out.ptr,
               "'ci' runs Terraform on machines that forget local state: set 'gcp.state' (a GCS bucket for "
               "Terraform's state, e.g. state: {bucket: my-project-tf-state})",
               Anchor::key);
  return out;
}

Identity Lowerer::identity(const System& sys, const json& i, const std::string& ptr, const std::string& of,
                           const std::string& default_gsa) {
  Identity out;
  out.ptr = ptr;
  out.of = of;
  out.ksa = get_or<std::string>(i, "serviceAccount", of + "-server");
  // A named Kubernetes account names the Google one too, unless the spec says otherwise.
  out.gsa = get_or<std::string>(i, "gcpServiceAccount",
                                default_gsa.empty() || i.contains("serviceAccount") ? out.ksa : default_gsa);
  if (!of.empty()) {
    if (!sys.gcp)
      doc_.error(diags_, ptr_key("/services", of),
                 fmt::format("service '{}' reads its models from GCS as its own Google service account, which "
                             "needs 'gcp' (project and region)",
                             of),
                 Anchor::key);
  } else {
    if (!sys.gcp)
      doc_.error(diags_, out.ptr, "'identity' binds a Google service account and needs 'gcp' (project and region)",
                 Anchor::key);
    if (!sys.service_account.empty())
      doc_.error(diags_, "/serviceAccount",
                 "set either 'serviceAccount' (an existing account) or 'identity' (one trainc creates), not both",
                 Anchor::key, {doc_.note(out.ptr, "'identity' is set here", Anchor::key)});
  }
  if (out.gsa.size() < 6 || out.gsa.size() > 30) {
    const std::string at = i.contains("gcpServiceAccount") ? ptr_key(ptr, "gcpServiceAccount")
                            : i.contains("serviceAccount") ? ptr_key(ptr, "serviceAccount")
                                                           : ptr_key("/services", of);
    doc_.error(diags_, at,
               fmt::format("Google service account ids are 6 to 30 characters; '{}' has {}: set {}", out.gsa,
                           out.gsa.size(), of.empty() ? "'gcpServiceAccount'" : "'identity.gcpServiceAccount'"),
               i.contains("gcpServiceAccount") || i.contains("serviceAccount") ? Anchor::value : Anchor::key);
  }
  return out;
}

}  // namespace trainc::lowering
