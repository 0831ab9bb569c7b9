#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/data_path.h"
#include "checks/checks.h"
#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc {

constexpr size_t kMaxLabel = 63;

namespace {

/// Whether `prefix` is `domain` or a subdomain of it.
bool in_domain(std::string_view prefix, std::string_view domain) {
  return prefix == domain || (prefix.size() > domain.size() && prefix.ends_with(domain) &&
                              prefix[prefix.size() - domain.size() - 1] == '.');
}

/// Why a user label may not use `key` ("" when it may): keys that Kubernetes, the operators or
/// trainc itself read to select, queue or inject pods. A user value there would make a Service's
/// selector miss its pods, queue a workload in another team's queue, or inject a sidecar that keeps
/// a Job's pod running.
std::string reserved_label(const std::string& key) {
  const auto slash = key.find('/');
  const std::string_view prefix = slash == std::string::npos ? std::string_view() : std::string_view(key).substr(0, slash);
  if (in_domain(prefix, "kubernetes.io") || in_domain(prefix, "k8s.io") || prefix.ends_with("x-k8s.io"))
    return "the kubernetes.io and k8s.io prefixes are Kubernetes' and its projects' (trainc sets the "
           "app.kubernetes.io labels, Kueue reads kueue.x-k8s.io/queue-name, which comes from 'queue')";
  if (in_domain(prefix, "istio.io") || key == "istio-injection")
    return "Istio reads it to inject its sidecar, which trainc decides (a sidecar keeps a finished Job's pod "
           "running)";
  if (in_domain(prefix, "ray.io")) return "KubeRay reads the ray.io labels to find a cluster's pods";
  return "";
}

/// The Kueue annotations a step may set: those whose values trainc validates as Kueue's webhooks do
/// (checks/operators.cpp, check_kueue_annotations).
constexpr std::string_view kStepKueueAnnotations[] = {
    "kueue.x-k8s.io/elastic-job", "kueue.x-k8s.io/prebuilt-workload-name", "kueue.x-k8s.io/admission-gated-by",
    "kueue.x-k8s.io/job-min-parallelism", "kueue.x-k8s.io/job-completions-equal-parallelism"};

/// Why a step's annotation may not use `key` ("" when it may): the operators read their own
/// domains' annotations as they read labels. Kueue takes its queue from the
/// kueue.x-k8s.io/queue-name annotation when the label is absent, so a step could run on another
/// team's quota; Istio's and KubeRay's change what they inject and manage.
std::string reserved_annotation(const std::string& key) {
  for (const auto allowed : kStepKueueAnnotations)
    if (key == allowed) return "";
  const auto slash = key.find('/');
  const std::string_view prefix = slash == std::string::npos ? std::string_view() : std::string_view(key).substr(0, slash);
  if (key == "kueue.x-k8s.io/queue-name")
    return "Kueue queues a workload by it when the label is absent; the queue comes from 'queue'";
  if (prefix.ends_with("x-k8s.io") || in_domain(prefix, "sigs.k8s.io"))
    return fmt::format("the x-k8s.io and sigs.k8s.io prefixes are Kubernetes projects' (Kueue, JobSet), which read "
                       "them; the Kueue "
                       "annotations a step may set are {}", fmt::join(kStepKueueAnnotations, ", "));
  if (in_domain(prefix, "istio.io")) return "Istio reads it to decide its sidecar, which trainc decides";
  if (in_domain(prefix, "ray.io")) return "KubeRay reads the ray.io annotations to manage a cluster and its jobs";
  return "";
}

}  // namespace

/// Step annotations: none with a key an operator reads, but the Kueue ones trainc validates.
void check_annotation_keys(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& step : sys.steps)
    for (const auto& [key, _] : step.annotations)
      if (const std::string why = reserved_annotation(key); !why.empty())
        doc.error(diags, ptr_key(ptr_key(step.ptr, "annotations"), key),
                  fmt::format("annotation '{}' of step '{}' is not the spec's to set: {}; remove it, or use a key of "
                              "your own domain (e.g. example.com/{})",
                              key, step.name, why, key.substr(key.find('/') + 1)),
                  Anchor::key);
}

/// User labels: none with a key another component reads (reserved_label).
void check_label_keys(const System& sys, const Document& doc, Diagnostics& diags) {
  auto check = [&](const StringMap& labels, const std::string& owner_ptr) {
    for (const auto& [key, _] : labels)
      if (const std::string why = reserved_label(key); !why.empty())
        doc.error(diags, ptr_key(ptr_key(owner_ptr, "labels"), key),
                  fmt::format("label '{}' is not the spec's to set: {}; use a key of your own domain "
                              "(e.g. example.com/{})",
                              key, why, key.substr(key.find('/') + 1)),
                  Anchor::key);
  };
  check(sys.labels, "");
  for (const auto& [_, p] : sys.pools) check(p.labels, p.ptr);
  for (const auto& step : sys.steps) check(step.labels, step.ptr);
  for (const auto& [_, c] : sys.clusters) check(c.labels, c.ptr);
  for (const auto& [_, s] : sys.services) check(s.labels, s.ptr);
}

void check_names(const System& sys, const Document& doc, Diagnostics& diags) {
  check_label_keys(sys, doc, diags);
  check_annotation_keys(sys, doc, diags);
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
  // Words the generated scripts read in place of a step's name: `apply.sh --rerun all` starts every
  // step again, so a step named `all` could never be re-run alone (and --rerun all would mean both).
  for (const auto& step : sys.steps)
    if (step.name == "all")
      doc.error(diags, ptr_key(step.ptr, "name"),
                "'all' is reserved: apply.sh --rerun all starts every step again, so a step of that name could not "
                "be re-run alone; name the step otherwise",
                Anchor::value);
  for (const auto& step : sys.steps) {
    for (const auto& n : k8s::step_names(sys, step)) {
      if (n.name.size() <= kMaxLabel) continue;
      size_t budget = kMaxLabel - (n.name.size() - sys.name.size() - step.name.size());
      doc.error(diags, ptr_key(step.ptr, "name"),
                fmt::format("the {} '{}' would be {} characters (the x's stand for the run's {}-character "
                            "content hash), over the limit of {}; shorten the system name and the step name to {} "
                            "characters together",
                            n.what, n.name, n.name.size(), k8s::kHashLength, kMaxLabel, budget),
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
