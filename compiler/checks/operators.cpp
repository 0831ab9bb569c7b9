// What the pinned operators refuse of trainc's objects (stdlib/catalog.yaml `operators:`): KubeRay
// v1.7.0's validation of RayClusters and RayJobs, JobSet v0.12.0's webhook, and Kueue v0.19.2's
// webhooks and CRD limits for the objects it queues. Each rule names its source; docs/operator-rules.md
// lists them all, with the ones trainc cannot break and why.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "checks/checks.h"
#include "k8s/names.h"

namespace trainc {
namespace {

// kuberay v1.7.0 ray-operator/controllers/ray/utils/constant.go: MaxRayClusterNameLength, and
// MaxRayJobNameLength (6 less: the RayCluster a RayJob makes is named "<rayjob>-<5 random>").
constexpr size_t kMaxRayClusterName = 53;
constexpr size_t kMaxRayJobName = kMaxRayClusterName - 6;
constexpr size_t kMaxLabel = 63;
// kueue v0.19.2 pkg/controller/jobframework/constants.go: MaxPodSets; a RayJob's are its head and
// one per worker group (pkg/controller/jobs/raycluster/common.go, ExpectedPodSetsCount).
constexpr size_t kMaxPodSets = 18;
// kueue v0.19.2 config/components/crd/bases: a ResourceFlavor's spec.nodeTaints and a ClusterQueue
// resource group's flavors (maxItems).
constexpr size_t kMaxFlavorTaints = 8;
constexpr size_t kMaxFlavors = 64;

/// What a step becomes, as k8s/plan.cpp (step_objects) decides it.
enum class StepObject { kJob, kJobSet, kRayJob };

StepObject object_of(const System& sys, const Step& step) {
  if (const ComputeCluster* c = sys.compute_cluster(step.cluster))
    return match(
        c->engine, [](const Ray&) { return StepObject::kRayJob; },
        [](const Dask&) { return StepObject::kJob; });  // a client Job beside the cluster
  return k8s::runs_as_jobset(sys, step) ? StepObject::kJobSet : StepObject::kJob;
}

/// KubeRay validates a RayCluster's and a RayJob's name (validation.go, ValidateRayClusterMetadata
/// and ValidateRayJobMetadata) against limits below the 63 that checks/names.cpp holds every name to;
/// a name over 63 is reported there.
void check_ray_cluster_name(const System& sys, const ComputeCluster& c, const Document& doc, Diagnostics& diags) {
  if (c.per_job()) return;  // KubeRay names a per-job cluster after its RayJob
  bool over_label = false;
  for (const auto& n : k8s::cluster_names(sys, c)) over_label = over_label || n.name.size() > kMaxLabel;
  const std::string name = k8s::cluster_name(sys, c);
  if (over_label || name.size() <= kMaxRayClusterName) return;
  doc.error(diags, c.ptr,
            fmt::format("the RayCluster of cluster '{}' would be named '{}' ({} characters), but KubeRay v1.7.0 "
                        "refuses a RayCluster name over {} characters (validation.go, ValidateRayClusterMetadata); "
                        "shorten the system and cluster names to {} characters together",
                        c.name, name, name.size(), kMaxRayClusterName, kMaxRayClusterName - 1),
            Anchor::key, {doc.note("/name", fmt::format("system name '{}' is part of it", sys.name))});
}

void check_ray_job_name(const System& sys, const Step& step, const Document& doc, Diagnostics& diags) {
  const std::string name = k8s::planned_job_name(sys, step);
  if (name.size() <= kMaxRayJobName) return;
  doc.error(diags, ptr_key(step.ptr, "name"),
            fmt::format("step '{}' would be the RayJob '{}' ({} characters; the x's stand for the run's content "
                        "hash), but KubeRay v1.7.0 refuses a RayJob name over {} characters, as the RayCluster it "
                        "makes adds 6 (validation.go, ValidateRayJobMetadata); shorten the system and step names to "
                        "{} characters together",
                        step.name, name, name.size(), kMaxRayJobName,
                        kMaxRayJobName - (name.size() - sys.name.size() - step.name.size())),
            Anchor::value, {doc.note("/name", fmt::format("system name '{}' is part of it", sys.name))});
}

/// Env a Ray cluster's pods may not set: KubeRay v1.7.0 (validation.go, ValidateRayClusterSpec) reads
/// them as GCS fault tolerance settings, which trainc does not configure (no gcsFaultToleranceOptions).
void check_ray_env(const ComputeCluster& c, const Document& doc, Diagnostics& diags) {
  std::set<std::string> names;
  for (const auto& kv : c.env) names.insert(kv.first);
  for (const auto& kv : c.secret_env) names.insert(kv.first);
  for (const auto& name : names) {
    std::string why;
    if (name == "RAY_REDIS_ADDRESS")
      why = "it turns on GCS fault tolerance without gcsFaultToleranceOptions (\"RAY_REDIS_ADDRESS is set which "
            "implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is not set\")";
    else if (name == "REDIS_USERNAME")
      why = "it accepts a Redis user name only through gcsFaultToleranceOptions (\"cannot set redis username in "
            "rayStartParams or environment variables\")";
    else if (name == "RAY_enable_autoscaler_v2" && !c.head_uses_api())  // no enableInTreeAutoscaling
      if (auto it = c.env.find(name); it != c.env.end() && (it->second == "1" || it->second == "true"))
        why = "autoscaler v2 needs enableInTreeAutoscaling, which trainc writes only when a worker group "
              "autoscales (min below max)";
    if (why.empty()) continue;
    doc.error(diags, ptr_key(ptr_key(c.ptr, "env"), name),
              fmt::format("env '{}' of Ray cluster '{}' reaches its head container, which KubeRay v1.7.0 refuses: {} "
                          "(validation.go, ValidateRayClusterSpec); remove it",
                          name, c.name, why),
              Anchor::key);
  }
}

/// Kueue v0.19.2 admits a RayJob that brings its own cluster only if that cluster is one it can
/// count (pkg/controller/jobs/rayjob/rayjob_webhook.go, validateCreate, and
/// pkg/controller/jobs/raycluster/common.go, ValidateCreate).
void check_queued_ray(const System& sys, const ComputeCluster& c, const Document& doc, Diagnostics& diags) {
  if (!sys.queue || !c.per_job()) return;
  const auto queue_note = [&] { return doc.note(sys.queue->ptr, "the queue is turned on here", Anchor::key); };
  if (c.workers.size() + 1 > kMaxPodSets)
    doc.error(diags, ptr_key(c.ptr, "workers"),
              fmt::format("per-job Ray cluster '{}' has {} worker groups; with 'queue' its RayJobs are admitted by "
                          "Kueue v0.19.2, whose workloads hold at most {} pod sets, the head's and one per worker "
                          "group (raycluster/common.go, ValidateCreate); use at most {} worker groups",
                          c.name, c.workers.size(), kMaxPodSets, kMaxPodSets - 1),
              Anchor::key, {queue_note()});
  for (const auto& g : c.workers)
    if (g.name == c.lead_name())
      doc.error(diags, g.ptr,
                fmt::format("worker group 'head' of per-job Ray cluster '{}': with 'queue' its RayJobs are admitted "
                            "by Kueue v0.19.2, which keeps the pod set name 'head' for the head group "
                            "(raycluster/common.go, ValidateCreate); rename the group",
                            c.name),
                Anchor::key, {queue_note()});
}

/// Kueue v0.19.2 puts every Job, JobSet, RayJob, RayCluster and Deployment created without a queue
/// label into its namespace's LocalQueue named "default", if there is one (DefaultLocalQueueName,
/// pkg/controller/constants/constants.go; pkg/controller/jobframework/defaults.go,
/// ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector, from each integration's webhook).
void check_default_queue(const System& sys, const Document& doc, Diagnostics& diags) {
  if (!sys.queue || sys.queue->name != "default") return;
  // What trainc keeps out of the queue: long-lived clusters and services, and the RayJobs sent to
  // a long-lived cluster (k8s/plan.cpp; k8s::queued is applied to the others).
  std::string what;
  for (const auto& entry : sys.clusters)
    if (what.empty() && !entry.second.per_job()) what = fmt::format("the pods of cluster '{}'", entry.first);
  for (const auto& entry : sys.services)
    if (what.empty()) what = fmt::format("the Deployment of service '{}'", entry.first);
  for (const auto& step : sys.steps)
    if (const ComputeCluster* c = sys.compute_cluster(step.cluster);
        what.empty() && c && !c->per_job() && object_of(sys, step) == StepObject::kRayJob)
      what = fmt::format("the RayJob of step '{}'", step.name);
  if (what.empty()) return;
  const bool named = written(doc, "/queue/name") != nullptr;
  doc.error(diags, named ? "/queue/name" : "/queue",
            fmt::format("the LocalQueue would be named 'default', and Kueue v0.19.2 queues every Job, JobSet, RayJob, "
                        "RayCluster and Deployment of its namespace that has no queue label in the queue named "
                        "'default' (jobframework/defaults.go, ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector): "
                        "{} would be queued too, though the ClusterQueue's quota leaves them out (and Kueue refuses a "
                        "queued RayCluster that autoscales, KubeRay a suspended RayJob on a long-lived cluster); {}",
                        what, named ? "name the queue otherwise" : "set 'queue.name' to another name"),
            named ? Anchor::value : Anchor::key);
}

/// The ResourceFlavor of each pool and the ClusterQueue's one resource group (k8s/queue.cpp).
void check_flavors(const System& sys, const Document& doc, Diagnostics& diags) {
  if (!sys.queue) return;
  if (sys.pools.empty())
    doc.error(diags, "/queue",
              "a queue hands out its pools' capacity: each pool is a flavor of the ClusterQueue, which Kueue v0.19.2 "
              "refuses with none (kueue.x-k8s.io_clusterqueues.yaml, resourceGroups[].flavors minItems 1); declare "
              "the node pools under 'cluster.pools', or remove 'queue'",
              Anchor::key);
  if (sys.pools.size() > kMaxFlavors)
    doc.error(diags, "/cluster/pools",
              fmt::format("with 'queue', each of the {} pools is a flavor of the ClusterQueue's one resource group, "
                          "and Kueue v0.19.2 allows at most {} there (kueue.x-k8s.io_clusterqueues.yaml, "
                          "resourceGroups[].flavors maxItems); use at most {} pools, or remove 'queue'",
                          sys.pools.size(), kMaxFlavors, kMaxFlavors),
              Anchor::key, {doc.note(sys.queue->ptr, "the queue is turned on here", Anchor::key)});
  for (const auto& entry : sys.pools) {
    const Pool& pool = entry.second;
    // The taints trainc writes on the flavor, in its order: the accelerator's, then the pool's own.
    std::vector<std::pair<std::string, std::string>> taints;  // key, effect
    std::string added;
    if (pool.accelerator) added = "nvidia.com/gpu";
    if (pool.tpu) added = "google.com/tpu";
    if (!added.empty()) taints.emplace_back(added, "NoSchedule");
    const std::string taints_ptr = ptr_key(pool.ptr, "taints");
    for (size_t i = 0; i < pool.taints.size(); ++i) {
      const Taint& t = pool.taints[i];
      const bool repeated = std::find(taints.begin(), taints.end(), std::make_pair(t.key, t.effect)) != taints.end();
      if (repeated)
        doc.error(diags, ptr_index(taints_ptr, i),
                  fmt::format("taint '{}' ({}) is on pool '{}' {}; with 'queue' the pool's ResourceFlavor lists its "
                              "taints, and Kueue v0.19.2 refuses two with the same key and effect (\"taints must be "
                              "unique by key and effect pair\", pkg/webhooks/resourceflavor_webhook.go, "
                              "validateNodeTaints); remove it",
                              t.key, t.effect, pool.name,
                              t.key == added ? "already: trainc taints its accelerator nodes with it" : "twice"),
                  Anchor::value);
      taints.emplace_back(t.key, t.effect);
    }
    if (taints.size() > kMaxFlavorTaints)
      doc.error(diags, taints_ptr,
                fmt::format("pool '{}' has {} taints{}; with 'queue' its ResourceFlavor lists them, and Kueue v0.19.2 "
                            "allows at most {} (kueue.x-k8s.io_resourceflavors.yaml, spec.nodeTaints maxItems); use "
                            "fewer taints",
                            pool.name, taints.size(), added.empty() ? "" : fmt::format(" with {}'s", added),
                            kMaxFlavorTaints),
                Anchor::key);
  }
}

/// Kueue v0.19.2 admits a workload only if its ClusterQueue covers every resource the pods ask for
/// (pkg/scheduler/flavorassigner/flavorassigner.go: "resource %s unavailable in ClusterQueue"); the
/// one trainc writes covers CPU, memory, GPUs and TPU chips (k8s/queue.cpp), not ephemeral storage.
/// `owner` is the spec object whose `resources` are judged.
void check_queued_resources(const Resources& r, const std::string& owner, const std::string& what, const Document& doc,
                            Diagnostics& diags) {
  constexpr const char* kUncovered = "ephemeral-storage";
  for (const char* side : {"requests", "limits"}) {
    const StringMap& list = std::string_view(side) == "requests" ? r.requests : r.limits;
    const std::string ptr = ptr_key(ptr_key(ptr_key(owner, "resources"), side), kUncovered);
    if (!list.count(kUncovered) || !written(doc, ptr)) continue;
    doc.error(diags, ptr,
              fmt::format("{} asks for {}, which the ClusterQueue written for 'queue' does not cover (CPU, memory, "
                          "GPUs and TPU chips), and Kueue v0.19.2 admits a workload only if its ClusterQueue covers "
                          "every resource it asks for (\"resource {} unavailable in ClusterQueue\", "
                          "pkg/scheduler/flavorassigner/flavorassigner.go): it would never start; remove it, or "
                          "remove 'queue'",
                          what, kUncovered, kUncovered),
              Anchor::key);
    return;
  }
}

/// JobSet v0.12.0 (pkg/webhooks/jobset_webhook.go, ValidateCreate) refuses a JobSet whose Jobs'
/// or pods' names could pass 63 characters: "<jobset>-<replicatedJob>-<job index>" and that with
/// "-<pod index>-abcde" after it (pkg/util/placement/placement.go, GenJobName and GenPodName).
void check_jobset_names(const System& sys, const Step& step, const Document& doc, Diagnostics& diags) {
  const std::string js = k8s::planned_job_name(sys, step);
  if (js.size() > kMaxLabel) return;  // reported by checks/names.cpp
  const std::string pod =
      fmt::format("{}-{}-{}-{}-abcde", js, k8s::replicated_job(sys, step), step.slices - 1, step.nodes - 1);
  if (pod.size() <= kMaxLabel) return;
  // The system and step names: what is left of the pod name's limit beyond the rest of it.
  const size_t budget = kMaxLabel - (pod.size() - sys.name.size() - step.name.size());
  doc.error(diags, ptr_key(step.ptr, "name"),
            fmt::format("step '{}' is the JobSet '{}' (the x's stand for the run's content hash), whose last pod "
                        "would be named '{}' ({} characters with the 5 random ones); JobSet v0.12.0 refuses a "
                        "JobSet whose pod names can pass {} (\"JobSet name is too long, pod names generated for "
                        "this JobSet will exceed 63 characters\", jobset_webhook.go); shorten the system and step "
                        "names to {} characters together",
                        step.name, js, pod, pod.size(), kMaxLabel, budget),
            Anchor::value, {doc.note("/name", fmt::format("system name '{}' is part of it", sys.name))});
}

/// Go's strconv.ParseBool.
std::optional<bool> go_bool(const std::string& s) {
  static const std::set<std::string> yes{"1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string> no{"0", "f", "F", "FALSE", "false", "False"};
  if (yes.count(s)) return true;
  if (no.count(s)) return false;
  return std::nullopt;
}

/// Go's strconv.Atoi, within the values a pod count can take.
std::optional<long long> go_int(const std::string& s) {
  const size_t start = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (s.size() == start || s.size() - start > 12 || s.find_first_not_of("0123456789", start) != std::string::npos)
    return std::nullopt;
  return std::stoll(s);
}

/// A DNS-1123 subdomain, what Kueue wants of a name that refers to one of its objects.
bool dns1123_subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(s.find('.', begin), s.size());
    const std::string_view part = std::string_view(s).substr(begin, end - begin);
    const auto alnum = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'); };
    if (part.empty() || !alnum(part.front()) || !alnum(part.back())) return false;
    for (char ch : part)
      if (!alnum(ch) && ch != '-') return false;
    if (end == s.size()) return true;
    begin = end + 1;
  }
}

/// Why Kueue refuses `value` as its admission-gated-by annotation ("" when it does not): a comma-separated
/// list of distinct domain-prefixed paths (pkg/util/webhook/validation_admissiongatedby.go, and
/// k8s.io/apimachinery's IsDomainPrefixedPath).
std::string gates_problem(const std::string& value) {
  constexpr const char* kSpace = " \t\n\v\f\r";  // what Go's strings.TrimSpace trims, in ASCII
  std::set<std::string> seen;
  size_t begin = 0;
  if (value.find_first_not_of(kSpace) == std::string::npos) return "";
  while (begin <= value.size()) {
    const size_t end = std::min(value.find(',', begin), value.size());
    std::string gate = value.substr(begin, end - begin);
    gate.erase(0, std::min(gate.find_first_not_of(kSpace), gate.size()));
    gate.erase(gate.find_last_not_of(kSpace) + 1);
    begin = end + 1;
    if (gate.empty()) return "it names an empty gate";
    if (!seen.insert(gate).second) return fmt::format("it names gate '{}' twice", gate);
    if (gate.size() > 63) return fmt::format("gate '{}' is longer than 63 characters", gate);
    const size_t slash = gate.find('/');
    const std::string path = slash == std::string::npos ? "" : gate.substr(slash + 1);
    if (slash == std::string::npos || !dns1123_subdomain(gate.substr(0, slash)) || path.empty() ||
        path.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/-._~%!$&'()*+;=:") !=
            std::string::npos)
      return fmt::format("gate '{}' is not a domain-prefixed path such as example.com/my-gate", gate);
  }
  return "";
}

/// The annotations of Kueue's own that a step's `annotations` may put on its Job or JobSet, as
/// Kueue v0.19.2 validates them on create (pkg/controller/jobframework/validation.go,
/// ValidateJobOnCreate; pkg/controller/jobs/job/job_webhook.go, validateCreate).
void check_kueue_annotations(const System& sys, const Step& step, StepObject object, const Document& doc,
                             Diagnostics& diags) {
  if (!sys.queue || object == StepObject::kRayJob) return;  // no Kueue webhooks; a RayJob gets no annotations
  const std::string kind = object == StepObject::kJobSet ? "JobSet" : "Job";
  const int pods = object == StepObject::kJob && step.distributed() ? step.nodes : 1;  // the Job's parallelism
  const auto at = [&](const std::string& key) { return ptr_key(ptr_key(step.ptr, "annotations"), key); };
  const auto refuse = [&](const std::string& key, const std::string& rule, const std::string& source) {
    doc.error(diags, at(key),
              fmt::format("annotation '{}' of step '{}' is on its {}, which Kueue v0.19.2 refuses: {} ({}); remove "
                          "it or correct its value",
                          key, step.name, kind, rule, source),
              Anchor::key);
  };
  const auto& a = step.annotations;
  const auto elastic = a.find("kueue.x-k8s.io/elastic-job");
  const bool is_elastic = elastic != a.end() && elastic->second == "true";
  if (is_elastic && object == StepObject::kJobSet)
    refuse(elastic->first, "elastic jobs are Jobs and Ray's only (\"elastic job is not supported\")",
           "jobframework/validation.go, ValidateElasticJobAnnotation");
  if (const auto it = a.find("kueue.x-k8s.io/prebuilt-workload-name");
      it != a.end() && !it->second.empty() && !dns1123_subdomain(it->second))
    refuse(it->first, fmt::format("'{}' is not a DNS-1123 subdomain, as a Workload's name must be", it->second),
           "jobframework/validation.go, ValidatePrebuiltWorkloadName");
  if (const auto it = a.find("kueue.x-k8s.io/admission-gated-by"); it != a.end())
    if (const std::string why = gates_problem(it->second); !why.empty())
      refuse(it->first, why, "pkg/util/webhook/validation_admissiongatedby.go");
  if (object != StepObject::kJob) return;
  if (const auto it = a.find("kueue.x-k8s.io/job-min-parallelism"); it != a.end()) {
    const auto v = go_int(it->second);
    if (!v || *v <= 0 || *v >= pods)
      refuse(it->first,
             pods > 1 ? fmt::format("'{}' is not a whole number from 1 to {}, fewer than the Job's {} pods", it->second,
                                    pods - 1, pods)
                      : std::string("the Job runs one pod, which cannot be admitted in part"),
             "job_webhook.go, validatePartialAdmissionCreate");
    else if (is_elastic)
      refuse(it->first, "partial admission and elastic jobs do not go together", "job_webhook.go");
  }
  if (const auto it = a.find("kueue.x-k8s.io/job-completions-equal-parallelism"); it != a.end()) {
    const auto v = go_bool(it->second);
    const std::string source = "job_webhook.go, validateSyncCompletionCreate";
    if (!v)
      refuse(it->first, fmt::format("'{}' is not a boolean", it->second), source);
    else if (*v && !step.distributed())
      refuse(it->first, "the step's Job runs one pod and is not Indexed (\"should not be enabled for NonIndexed "
             "jobs\")", source);
  }
}

}  // namespace

void check_operators(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& entry : sys.clusters) {
    const ComputeCluster& c = entry.second;
    match(
        c.engine,
        [&](const Ray&) {
          check_ray_cluster_name(sys, c, doc, diags);
          check_ray_env(c, doc, diags);
          check_queued_ray(sys, c, doc, diags);
          if (!sys.queue || !c.per_job()) return;  // only a per-job cluster's RayJob is queued
          const PodGroup& head = c.lead();
          check_queued_resources(head.resources, head.ptr, fmt::format("the head of Ray cluster '{}'", c.name), doc,
                                 diags);
          for (const auto& g : c.workers)
            check_queued_resources(g.resources, g.ptr,
                                   fmt::format("worker group '{}' of Ray cluster '{}'", g.name, c.name), doc, diags);
        },
        [](const Dask&) {});  // Deployments and Services: no operator of their own
  }
  check_default_queue(sys, doc, diags);
  check_flavors(sys, doc, diags);
  for (const auto& step : sys.steps) {
    const StepObject object = object_of(sys, step);
    if (object == StepObject::kRayJob) check_ray_job_name(sys, step, doc, diags);
    if (object == StepObject::kJobSet) check_jobset_names(sys, step, doc, diags);
    if (sys.queue && object != StepObject::kRayJob)  // a RayJob's pods are its cluster's
      check_queued_resources(step.resources, step.ptr, fmt::format("step '{}'", step.name), doc, diags);
    check_kueue_annotations(sys, step, object, doc, diags);
  }
}

}  // namespace trainc
