// Pod security: every workload runs under the "restricted" Pod Security Standard unless its spec
// opts out, with a reason, to the level its pods need (host folders, the host network, devices
// opened as root). A workload that needs more than it declares is reported with the fix.
#include <fmt/format.h>

#include "base/data_path.h"
#include "checks/checks.h"

namespace trainc {
namespace {

void check_level(const Document& doc, Diagnostics& diags, const std::string& what, const std::string& ptr,
                 const PodSecurity& declared, const SecurityNeed& need) {
  if (declared.level >= need.level) return;
  const std::string& at = declared.ptr.empty() ? ptr : declared.ptr;
  doc.error(diags, at,
            fmt::format("{} needs Pod Security level '{}', and {} '{}': its pods {}. Add `security: {{level: {}, "
                        "reason: \"...\"}}` to it to accept that (the reason goes into the output's README)",
                        what, level_name(need.level), declared.ptr.empty() ? "the default is" : "its level is",
                        level_name(declared.level), need.why, level_name(need.level)),
            Anchor::key);
}

/// A pod that talks to the Kubernetes API keeps its service account's token. When that account is
/// `serviceAccount`, which trainc did not create and whose rights it cannot see, the spec must
/// accept that with a reason; without `serviceAccount`, KubeRay makes the head an account of its
/// own with only the autoscaler's rights.
void check_borrowed_token(const System& sys, const Document& doc, Diagnostics& diags) {
  const bool borrowed = !sys.identity && !sys.service_account.empty();
  std::vector<std::string> users;
  for (const auto& [name, c] : sys.clusters)
    if (c.head_uses_api()) users.push_back(name);
  if (borrowed && !users.empty() && sys.service_account_token_reason.empty())
    for (const auto& name : users)
      doc.error(diags, sys.clusters.at(name).ptr,
                fmt::format("the head of cluster '{}' talks to the Kubernetes API (Ray's autoscaler), so it would keep "
                            "a token of service account '{}', which trainc did not create and whose rights it cannot "
                            "see; remove 'serviceAccount' (KubeRay then gives the head an account with only the "
                            "autoscaler's rights), or accept it with `serviceAccountToken: {{reason: \"...\"}}` (the "
                            "reason goes into the output's README)",
                            name, sys.service_account),
                Anchor::key, {doc.note("/serviceAccount", "the account is named here", Anchor::value)});
  if (!sys.service_account_token_reason.empty() && (!borrowed || users.empty()))
    doc.error(diags, "/serviceAccountToken",
              borrowed ? "no pod keeps a token of 'serviceAccount' (none talks to the Kubernetes API); remove "
                         "'serviceAccountToken'"
                       : "'serviceAccountToken' accepts a token of 'serviceAccount', an account trainc did not create, "
                         "but there is none (no 'serviceAccount', or 'identity' makes the account); remove it",
              Anchor::key);
}

}  // namespace

void check_step_security(const System& sys, const Document& doc, Diagnostics& diags, const std::set<std::string>* only) {
  for (const auto& step : sys.steps) {
    if (!step.cluster.empty()) continue;  // its pods are the cluster's
    if (only && !only->count(step.name)) continue;
    // Slices take the host network only on a TPU pool; elsewhere 'slices' is an error of its own.
    const Pool* pool = sys.pool(step.pool);
    check_level(doc, diags, fmt::format("step '{}'", step.name), step.ptr, step.security,
                security_need(pool, step.multislice() && pool && pool->tpu));
  }
}

void check_security(const System& sys, const Document& doc, Diagnostics& diags) {
  check_borrowed_token(sys, doc, diags);
  check_step_security(sys, doc, diags);
  for (const auto& [name, c] : sys.clusters) {
    check_level(doc, diags, fmt::format("cluster '{}'", name), c.ptr, c.security, security_need(sys, c));
  }
  for (const auto& [_, s] : sys.services)
    check_level(doc, diags, fmt::format("service '{}'", s.name), s.ptr, s.security,
                security_need(sys.pool(s.pool), false));
}

}  // namespace trainc
