#pragma once
// The Lowerer, private to lowering: one instance turns one document into a System. Its parts live
// with the entities they translate (lower_gcp.cpp, lower_stores.cpp, lower_clusters.cpp,
// lower_services.cpp, lower_steps.cpp, lower_builds.cpp); lower.cpp holds the core and the
// system-level settings.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/data_path.h"
#include "frontend/document.h"
#include "model/model.h"

namespace trainc::lowering {

using json = nlohmann::json;

std::string scalar_text(const json& v);

StringMap string_map(const json& obj, const char* key);

/// `env`: plain values into `plain`, `{secretRef: {name, key}}` into `secrets`.
void split_env(const json& obj, StringMap& plain, SecretEnvMap& secrets);

/// List items may be numbers or booleans in the spec ("[--epochs, 1]"); the model keeps text.
std::vector<std::string> string_list(const json& arr);

template <typename T>
T get_or(const json& obj, const char* key, T fallback) {
  return obj.contains(key) ? obj[key].get<T>() : fallback;
}

/// A pod path: absolute as written, or relative to the step's workdir; normalised, no trailing '/'.
std::string pod_path(const std::string& workdir, const std::string& p);

std::vector<std::string> keys_of(const auto& map) {
  std::vector<std::string> keys;
  for (const auto& [k, _] : map) keys.push_back(k);
  return keys;
}

/// Where trainrt steps see the GCS stores they name.
inline constexpr std::string_view kStoreMountRoot = "/mnt/stores";

class Lowerer {
 public:
  Lowerer(const Document& doc, Diagnostics& diags);

  System run();

  /// The steps run() left out of the system's order because they wait on each other.
  const std::vector<Step>& in_cycles() const { return in_cycles_; }

 private:
  // lower_gcp.cpp: the project, its network, registry, identities and CI.

  /// `gcp`'s state, network and registry (the registry also when any workload builds its image).
  void gcp_extras(const std::string& system, const json& g, Gcp& gcp);

  Ci ci(const json& c);

  /// The identity at `ptr` (`i` may be empty: then `ksa` and `gsa` are the defaults). `of` names
  /// the service it belongs to, "" for the system's.
  Identity identity(const json& i, const std::string& ptr, const std::string& of, const std::string& default_gsa);

  // lower_builds.cpp: images the workloads build.

  /// The image `w.build` makes: checks the build, digests what it reads for the tag, records it,
  /// and returns the reference the manifests use ("" when it has errors).
  std::string built_image(const System& sys, const json& w, const std::string& wptr, const std::string& name,
                          const std::string& of, const std::string& workdir);

  // lower_stores.cpp: buckets and the references to them.

  Store store(const System& sys, const std::string& name, const json& s);

  /// Buckets that hold checkpoints keep old versions unless the spec says otherwise.
  void default_versioning(System& sys);

  /// Splits "<store>:/path" (the schema checked the form) and looks the store up; an unknown
  /// store is reported, with a did-you-mean, and gives nullptr.
  const Store* split_store_ref(const System& sys, const std::string& text, const std::string& ptr, std::string& store,
                               std::string& path);

  /// Reports a reference to a store that is not declared (one left out after its own errors is
  /// declared); `text` is the whole "<store>:/path" where the reference is one. A URL
  /// ("gs://bucket/path") is answered with the form and the reference through the store that holds
  /// the bucket; a bucket's name written for a store's gets that store.
  void unknown_store(const System& sys, const std::string& store, const std::string& ptr, const std::string& text);

  /// A store a step syncs with (an S3 store). A GCS store is refused with the mount to add
  /// instead: at a path none of `mounted` ({store, path} of the step's mounts) takes, or, when the
  /// step mounts that store already, its path there.
  StoreRef store_ref(const System& sys, const std::string& text, const std::string& ptr,
                     const std::vector<std::pair<std::string, std::string>>& mounted = {});

  /// "<store>:/path" in a GCS store, as a gs:// address.
  StoreRef gcs_ref(const System& sys, const std::string& text, const std::string& ptr, std::string_view who);

  /// "<store>:/path" for trainrt steps: the store must exist; GCS stores appear under /mnt/stores.
  StoreLoc store_loc(const System& sys, const std::string& text, const std::string& ptr);

  Mount mount(const System& sys, const json& m, const std::string& ptr);

  // lower_clusters.cpp: node pools and compute clusters.

  Pool pool(const std::string& name, const json& p);
  /// The pool's topology-aware placement: spec `placement`, else the catalog's default.
  void placement(Pool& out, const json& p);
  /// A pool's capacity ladder (spec `capacity`): its rungs, in order, with their node pools' suffixes.
  void ladder(Pool& out, const json& rungs);
  /// A `placement` as written at `ptr` (a pool's or a step's).
  static TopologyPlacement placement_of(const json& pl, const std::string& ptr);

  /// Each pool's DaemonSet reserve, from the catalog, once every pool is known.
  void node_reserves(System& sys);
  /// Whole-node pod groups, once the whole system is known: the room their node leaves less the
  /// operator's containers and, on pools the system pods may use, those pods.
  void size_whole_nodes(System& sys);
  /// Steps whose spec gives no (or partial) `resources`, once the whole system is known: a pod
  /// with GPUs or TPU chips asks for its share of a node (share()), one without the catalog's
  /// podDefaults.cpuPod, at most a node's room; memory's limit equals its request.
  void size_steps(System& sys);
  /// `fraction` of what a node of `pool` leaves one pod by default: the room (allocatable less
  /// the DaemonSet reserve) less the catalog's whole-node slack and, on a pool the system pods may
  /// use, those pods; cores and bytes. {0, 0} for a machine the catalog does not size.
  static std::pair<double, double> share(const System& sys, const Pool& pool, double fraction);
  /// A pool named at `ptr`, or nullptr after reporting it unknown.
  const Pool* pool_ref(const System& sys, const std::string& name, const std::string& ptr);

  /// Reports the compute cluster named at `ptr` when the spec declares none of that name.
  void cluster_ref(const System& sys, const std::string& name, const std::string& ptr);

  /// Pods of a compute cluster. Workers take whole nodes of their pool (all GPUs, the allocatable
  /// CPU and memory); the head or scheduler (`lead`) takes no GPUs, and a whole node only of a
  /// CPU pool: on a GPU pool it asks for 2 CPUs and 8Gi.
  /// A whole node's worth for one pod of a group on `pool`, less the containers beside it (the GCS
  /// FUSE sidecar when `fuse`, and `cores`/`bytes` more); nullopt when the group does not take a
  /// whole node (no pool, an unknown machine, or a lead on a GPU pool).
  std::optional<Resources> whole_node(const Pool* pool, bool lead, bool fuse, double cores = 0, double bytes = 0);
  PodGroup pod_group(const System& sys, const std::string& name, const json& g, const std::string& ptr, bool lead,
                     bool fuse);

  ComputeCluster compute_cluster(const System& sys, const std::string& name, const json& c);

  // lower_services.cpp: services and the servers they run.

  Triton triton(const System& sys, const json& t, const std::string& ptr, bool serves_steps);

  /// `source:` (at `ptr`) of the store folder `into`, which must hold `needs`, each named by the
  /// item of the spec's list at `needs_ptr`: a folder source must hold each, a fetched file may
  /// stand for one (lower_sources.cpp).
  ContentSource content_source(const json& j, const std::string& ptr, const StoreRef& into,
                               const std::vector<NeededObject>& needs, const std::string& needs_ptr);

  /// The one key that says which server a service runs.
  /// `vllm:` of service `s` (at `ptr`), once the service's GPUs and env are known: its token joins
  /// the service's Secret env, and without `startupTimeout` it gets longer to start.
  Vllm vllm(const System& sys, const json& s, const std::string& ptr, Service& svc);
  ServerKind server_kind(const System& sys, const json& s, Service& svc);

  Service service(const System& sys, const std::string& name, const json& s);

  // lower_steps.cpp: the pipeline's steps.

  Step step(const System& sys, const json& s, const std::string& ptr);

  /// The one key that says what the step runs; both of two, or none, is reported here, where the
  /// diagnostic can point at both keys.
  StepKind kind(const System& sys, const json& s, const std::string& ptr, const Step& step);

  Datagen datagen(const System& sys, const json& g, const std::string& ptr, int nodes);

  XGBoost xgboost(const System& sys, const json& x, const std::string& ptr, int gpus);

  /// An XGBoost step that reads a table a datagen step of the system writes learns what the table
  /// holds: its objective and eval metric default to the table's task (binary:logistic and logloss,
  /// multi:softprob with num_class and mlogloss, reg:squarederror and rmse); an objective of another
  /// family is an error. One that reads any other table must set its objective.
  void objectives_from_tables(const System& sys, std::vector<Step>& steps);

  /// A trainrt step's pods mount every GCS store it names, once.
  void add_store_mounts(const System& sys, Step& step);

  /// Reports each need that names no step (a step's need of itself is for the checks).
  void resolve_needs(const std::vector<Step>& steps);

  // lower.cpp: values every entity has, and the entities pruned after schema errors.

  /// `security:` of a step, cluster or service (`obj`, at `ptr`).
  PodSecurity pod_security(const json& obj, const std::string& ptr);

  int duration(const json& obj, const char* key, int fallback, const std::string& ptr);

  /// An integer the spec gave (else `fallback`), checked to fit `T`: the schema's maximums bound
  /// most fields, but Jsonnet may yield 1e20 as a float, and nothing may wrap around silently.
  template <class T>
  T integer(const json& obj, const char* key, T fallback, const std::string& ptr);

  /// The names of `kind` the spec declares: those lowered and those pruned, in name order.
  std::vector<std::string> declared(const auto& lowered, const std::string& kind) const {
    std::vector<std::string> names = keys_of(lowered);
    for (const auto& [k, name] : pruned_)
      if (k == kind) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

  /// Whether the `kind` ("pools", "storage", "clusters", "services", "step") named `name` was pruned.
  bool pruned(const std::string& kind, const std::string& name) const { return pruned_.count({kind, name}) > 0; }

  /// An entity pruned after a schema error is not lowered, but the pool, cluster and steps it names
  /// are still looked up, so that a wrong name is reported together with the schema error.
  void references(const System& sys, const json& e, const std::string& ptr);

  const Document& doc_;
  Diagnostics& diags_;
  std::map<std::string, Build> builds_;
  const json& root_;
  std::set<std::pair<std::string, std::string>> pruned_;  ///< (kind, name) of pruned entities
  std::vector<std::string> step_names_;                   ///< every step's name, pruned ones too
  std::vector<Step> in_cycles_;
};

}  // namespace trainc::lowering
