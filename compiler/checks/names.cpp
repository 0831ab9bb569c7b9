#include <fmt/format.h>

#include "base/data_path.h"
#include "checks/checks.h"
#include "emit/k8s_names.h"
#include "model/catalog.h"

namespace trainc {

constexpr size_t kMaxLabel = 63;

void check_names(const System& sys, const Document& doc, Diagnostics& diags) {
  // The namespace the pods run in: never one the cluster or an installed operator owns, whose
  // Secrets and service accounts the system's pods would share.
  if (const std::string why = catalog().system_namespace(sys.ns); !why.empty()) {
    if (sys.owns_namespace)
      doc.error(diags, "/name",
                fmt::format("the system's namespace would be '{}', but {}; name the system otherwise, or deploy "
                            "into a namespace of your own with 'namespace'",
                            sys.ns, why));
    else
      doc.error(diags, "/namespace",
                fmt::format("namespace '{}' is not one to deploy into: {}; name a namespace of your own, or remove "
                            "'namespace' and trainc creates one named after the system",
                            sys.ns, why));
  }
  for (const auto& step : sys.steps) {
    for (const auto& n : k8s::step_names(sys, step)) {
      if (n.name.size() <= kMaxLabel) continue;
      size_t budget = kMaxLabel - (n.name.size() - sys.name.size() - step.name.size());
      doc.error(diags, ptr_key(step.ptr, "name"),
                fmt::format("the {} '{}' would be {} characters, over the limit of {}; shorten the system name "
                            "and the step name to {} characters together",
                            n.what, n.name, n.name.size(), kMaxLabel, budget),
                Anchor::value, {doc.note("/name", fmt::format("system name '{}' is part of it", sys.name))});
      break;  // one report per step: the longest name decides
    }
  }
  // A cluster's object names are also its pods' instance label.
  for (const auto& [name, c] : sys.clusters) {
    std::string longest;
    for (const auto& n : k8s::cluster_names(sys, c))
      if (n.name.size() > longest.size()) longest = n.name;
    if (longest.size() <= kMaxLabel) continue;
    doc.error(diags, c.ptr,
              fmt::format("the name '{}' of cluster '{}' would be {} characters, over the limit of {} for labels; "
                          "shorten the system, cluster or worker group names",
                          longest, name, longest.size(), kMaxLabel),
              Anchor::key, {doc.note("/name", fmt::format("system name '{}' is part of it", sys.name))});
  }
  for (const auto& [name, s] : sys.services)
    for (const auto& n : k8s::service_names(sys, s)) {
      if (n.name.size() <= kMaxLabel) continue;
      doc.error(diags, s.ptr,
                fmt::format("the {} '{}' of service '{}' would be {} characters, over the limit of {}; shorten the "
                            "system or service name",
                            n.what, n.name, name, n.name.size(), kMaxLabel),
                Anchor::key, {doc.note("/name", fmt::format("system name '{}' is part of it", sys.name))});
      break;
    }
}

}  // namespace trainc
