#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/data_path.h"
#include "checks/checks.h"
#include "k8s/names.h"
#include "k8s/plan.h"
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

namespace {

/// Where the output puts `o`: "" for the cluster-scoped kinds, else its namespace.
std::string object_namespace(const System& sys, const k8s::Object& o) {
  switch (o.role) {
    case k8s::Role::kNamespace:
    case k8s::Role::kNetworkParams:
    case k8s::Role::kNetwork:
    case k8s::Role::kTopology:
    case k8s::Role::kResourceFlavor:
    case k8s::Role::kProvisioningConfig:
    case k8s::Role::kAdmissionCheck:
    case k8s::Role::kClusterQueue: return "";
    case k8s::Role::kGibInstaller: return std::string(k8s::kGibInstallerNamespace);
    default: return sys.ns;
  }
}

}  // namespace

void check_object_names(const System& sys, const Document& doc, Diagnostics& diags) {
  // Every object of the output, by what the API server keys it by: the API group, the kind, the
  // namespace and the name. Two of one key would be one object, the second overwriting the first
  // on every apply; a shared object (the namespace, the networks) is one object by design.
  const k8s::Plan plan = k8s::plan(sys);
  struct Source {
    std::string what, ptr;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Source> seen;
  // The objects each pair of sources would share, reported once per pair in the order met.
  std::vector<std::pair<Source, Source>> pairs;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> shared;
  auto visit = [&](const std::vector<k8s::Object>& objects, const Source& from) {
    for (const auto& o : objects) {
      const auto slash = o.api_version.find('/');
      const std::string group = slash == std::string::npos ? "" : o.api_version.substr(0, slash);
      const std::string ns = object_namespace(sys, o);
      const auto [it, fresh] = seen.emplace(std::tuple{group, o.kind, ns, o.name}, from);
      if (fresh || it->second.ptr == from.ptr) continue;
      auto& objs = shared[{it->second.ptr, from.ptr}];
      if (objs.empty()) pairs.emplace_back(it->second, from);
      objs.push_back(fmt::format("{} '{}'{}", o.kind, o.name, ns.empty() ? "" : fmt::format(" in namespace '{}'", ns)));
    }
  };
  visit(plan.shared, {"the system", ""});
  for (const auto& w : plan.clusters) {
    // A worker group's Deployment is the group's; the rest is the cluster's.
    for (const auto& o : w.objects) {
      const PodGroup* g = nullptr;
      if (o.role == k8s::Role::kDaskWorkers)
        for (const auto& wg : w.cluster->workers)
          if (wg.name == o.group) g = &wg;
      visit({o}, g ? Source{fmt::format("worker group '{}' of cluster '{}'", g->name, w.cluster->name), g->ptr}
                   : Source{fmt::format("cluster '{}'", w.cluster->name), w.cluster->ptr});
    }
  }
  for (const auto& w : plan.services) visit(w.objects, {fmt::format("service '{}'", w.name), w.service->ptr});
  for (const auto& w : plan.workloads) visit(w.objects, {fmt::format("step '{}'", w.name), w.step->ptr});
  for (const auto& [first, second] : pairs) {
    const auto& objs = shared[{first.ptr, second.ptr}];
    doc.error(diags, second.ptr,
              fmt::format("{} and {} would both make {}: {} on the cluster, which each apply would take from the "
                          "other; rename one of them",
                          first.what, second.what, fmt::join(objs, ", "), objs.size() == 1 ? "one object" : "the same objects"),
              Anchor::key, {doc.note(first.ptr, fmt::format("{} is here", first.what), Anchor::key)});
  }
}

}  // namespace trainc
