// Settings that need another part of the spec: what deploys to Google Cloud needs `gcp`, an
// identity is one account, of an id Google accepts; and each workload's `security` is consistent.
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/data_path.h"
#include "checks/checks.h"

namespace trainc {
namespace {

void check_ci(const System& sys, const Ci& ci, const Document& doc, Diagnostics& diags) {
  if (!sys.gcp)
    doc.error(diags, ci.ptr, "'ci' deploys to Google Cloud and needs 'gcp' (project, region and state)", Anchor::key);
  else if (!sys.gcp->state)
    doc.error(diags, ci.ptr,
              "'ci' runs Terraform on machines that forget local state: set 'gcp.state' (a GCS bucket for "
              "Terraform's state, e.g. state: {bucket: my-project-tf-state})",
              Anchor::key);
}

/// The Google service accounts the `ci:` section names, with their spec positions.
std::vector<std::pair<std::string, std::string>> ci_accounts(const Ci& ci) {
  std::vector<std::pair<std::string, std::string>> out;
  if (const auto& g = ci.github) {
    out.emplace_back(ptr_key(g->ptr, "serviceAccount"), g->service_account);
    if (!g->plan_service_account.empty())
      out.emplace_back(ptr_key(g->ptr, "planServiceAccount"), g->plan_service_account);
  }
  if (const auto& b = ci.cloudbuild; b && !b->service_account.empty())
    out.emplace_back(ptr_key(b->ptr, "serviceAccount"), b->service_account);
  return out;
}

/// The system's identity (`of` empty) or a service's.
void check_identity(const System& sys, const Identity& id, const Document& doc, Diagnostics& diags) {
  if (!id.of.empty()) {
    if (!sys.gcp)
      doc.error(diags, ptr_key("/services", id.of),
                fmt::format("service '{}' reads its models from GCS as its own Google service account, which "
                            "needs 'gcp' (project and region)",
                            id.of),
                Anchor::key);
  } else {
    if (!sys.gcp)
      doc.error(diags, id.ptr, "'identity' binds a Google service account and needs 'gcp' (project and region)",
                Anchor::key);
    if (!sys.service_account.empty())
      doc.error(diags, "/serviceAccount",
                "set either 'serviceAccount' (an existing account) or 'identity' (one trainc creates), not both",
                Anchor::key, {doc.note(id.ptr, "'identity' is set here", Anchor::key)});
  }
  const bool gsa_written = written(doc, ptr_key(id.ptr, "gcpServiceAccount")) != nullptr;
  const bool ksa_written = written(doc, ptr_key(id.ptr, "serviceAccount")) != nullptr;
  const std::string at = gsa_written   ? ptr_key(id.ptr, "gcpServiceAccount")
                         : ksa_written ? ptr_key(id.ptr, "serviceAccount")
                                       : ptr_key("/services", id.of);
  // The nodes' own account (NodeAccount) is named after the cluster; a workload's may not take it.
  if (sys.gcp && id.gsa == node_account(sys).id)
    doc.error(diags, at,
              fmt::format("Google service account '{}' is the one trainc makes for the nodes of cluster '{}', which "
                          "a workload must not run as: set {} to another",
                          id.gsa, sys.cluster.name,
                          id.of.empty() ? "'gcpServiceAccount'" : "'identity.gcpServiceAccount'"),
              gsa_written || ksa_written ? Anchor::value : Anchor::key);
  // CI's own accounts: pods bound to one act with the deployer's rights, and down.sh deletes it.
  if (sys.ci)
    for (const auto& [ci_ptr, email] : ci_accounts(*sys.ci)) {
      if (email.substr(0, email.find('@')) != id.gsa) continue;
      doc.error(diags, at,
                fmt::format("Google service account '{}' is the one CI signs in as ('{}' is {}): pods running as it "
                            "would hold CI's rights, and down.sh would delete it; set {} to an account of the "
                            "workload's own",
                            id.gsa, ptr_display(ci_ptr), email,
                            id.of.empty() ? "'gcpServiceAccount'" : "'identity.gcpServiceAccount'"),
                gsa_written || ksa_written ? Anchor::value : Anchor::key,
                {doc.note(ci_ptr, "CI's account is named here", Anchor::value)});
    }
  if (id.gsa.size() >= 6 && id.gsa.size() <= 30) return;
  doc.error(diags, at,
            fmt::format("Google service account ids are 6 to 30 characters; '{}' has {}: set {}", id.gsa, id.gsa.size(),
                        id.of.empty() ? "'gcpServiceAccount'" : "'identity.gcpServiceAccount'"),
            gsa_written || ksa_written ? Anchor::value : Anchor::key);
}

/// `security:` of a step, cluster or service: a reason for every exception to 'restricted', and
/// only there; a user only where the pods do not run as the image's.
void check_security_settings(const PodSecurity& sec, const Document& doc, Diagnostics& diags) {
  if (sec.ptr.empty()) return;
  const std::string_view level = level_name(sec.level);
  if (!sec.restricted() && sec.reason.empty())
    doc.error(diags, ptr_key(sec.ptr, "level"),
              fmt::format("security level '{}' needs a 'reason': say why the pods cannot run under 'restricted'; it is "
                          "written into the output's README",
                          level),
              Anchor::key);
  if (!sec.restricted() && sec.run_as)
    doc.error(diags, ptr_key(sec.ptr, "runAsUser"),
              fmt::format("'runAsUser' applies at level 'restricted'; at '{}' the pods run as the image's own user: "
                          "remove it",
                          level),
              Anchor::key);
  if (sec.restricted() && !sec.reason.empty())
    doc.error(diags, ptr_key(sec.ptr, "reason"),
              "'reason' explains an exception to 'restricted'; at level 'restricted' there is none: remove it",
              Anchor::key);
}

}  // namespace

void check_system_settings(const System& sys, const Document& doc, Diagnostics& diags) {
  if (sys.ci) check_ci(sys, *sys.ci, doc, diags);
  if (sys.identity) check_identity(sys, *sys.identity, doc, diags);
  for (const auto& [name, st] : sys.stores)
    if (st.kind == Store::Kind::gcs && st.create && !sys.gcp)
      doc.error(diags, st.ptr,
                fmt::format("store '{}' is a GCS bucket for trainc to create, which needs 'gcp' (project and region); "
                            "add 'gcp' or set 'create: false' for an existing bucket",
                            name),
                Anchor::key);
  for (const auto& [name, c] : sys.clusters) check_security_settings(c.security, doc, diags);
  for (const auto& [name, s] : sys.services) {
    check_identity(sys, s.identity, doc, diags);
    check_security_settings(s.security, doc, diags);
  }
  for (const auto& st : sys.steps) check_security_settings(st.security, doc, diags);
}

}  // namespace trainc
