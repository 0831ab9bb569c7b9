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

}  // namespace

void check_security(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& step : sys.steps) {
    if (!step.cluster.empty()) continue;  // its pods are the cluster's
    check_level(doc, diags, fmt::format("step '{}'", step.name), step.ptr, step.security,
                security_need(sys.pool(step.pool), step.multislice()));
  }
  for (const auto& [name, c] : sys.clusters) {
    check_level(doc, diags, fmt::format("cluster '{}'", name), c.ptr, c.security, security_need(sys, c));
  }
  for (const auto& [_, s] : sys.services)
    check_level(doc, diags, fmt::format("service '{}'", s.name), s.ptr, s.security,
                security_need(sys.pool(s.pool), false));
}

}  // namespace trainc
