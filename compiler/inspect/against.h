#pragma once
// `trainc plan SPEC --against OLD`: what applying the spec's output over OLD, the output applied
// last, does. Per Kubernetes object (matched as kubectl matches them): create, unchanged, update
// in place, roll (pods restarted), replace (an immutable field changed: deleted and created, and
// what that loses), rerun (a step's new run) or remove (pruned); per pool (model.yaml):
// resize, update, replace (nodes destroyed) or create/remove; and the steps that run, with their
// accelerator-hours and cost bounds. Objects only OLD holds that apply.sh leaves (a step's earlier
// run within its `history`, and that run's objects) are keep. The rules are k8s/update_rules.h's (stdlib/immutable.yaml).
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inspect/plan.h"
#include "k8s/plan.h"
#include "k8s/update_rules.h"
#include "model/model.h"

namespace trainc {

struct ObjectChange {
  std::string action;  ///< create, unchanged, update, roll, replace, rerun, remove, keep
  k8s::ObjectKey key;
  std::string file;  ///< under the output folder: NEW's, or OLD's for remove
  std::string step;  ///< the step whose run the object belongs to; "" for none
  std::vector<std::string> changed;
  std::vector<k8s::Refusal> refused;
  std::string detail;  ///< what it means: what is lost, which pods restart, why a run is new
};

struct PoolChange {
  std::string pool, action;  ///< create, unchanged, resize, update, replace, remove
  std::vector<std::string> fields;  ///< "nodes: 1 -> 2"
  std::string detail;
};

/// A step whose pods run because of the apply: a new run, a replaced Job, or a new step.
struct StepRun {
  std::string step, why;
  int pods = 0, gpus = 0, chips = 0;  ///< at most, over its pods
  std::optional<double> accelerator_hours, cost_bound;
  /// Its accelerators' share of their nodes' list price per hour, while it runs; nullopt when unpriced.
  std::optional<double> price_per_hour;
  /// Where a new run of a step that keeps checkpoints starts: "clean" (resumeFrom: run, the
  /// default: an earlier run's checkpoints are not its own), "previous" (it continues from the
  /// store's newest checkpoint), "file" (it starts from `resume_file`, resumeFrom's file), "" when
  /// it keeps none.
  std::string checkpoints, resume_file;
  int history = 0;  ///< the runs whose checkpoints the store keeps (not under "previous")
};

/// A field of a live object that is not what was applied last (`diff --live`): changed on the
/// cluster by hand or by another tool since.
struct Drift {
  k8s::ObjectKey key;
  std::string file;
  std::vector<std::string> fields;  ///< "PATH: APPLIED -> ON THE CLUSTER", or what is missing
  std::string detail;
};

struct AgainstPlan {
  std::string old_folder;
  std::string subject;  ///< what the changes are against, in words ("" for old_folder, the output applied last)
  std::vector<ObjectChange> objects;  ///< in NEW's file order, then OLD's removed objects
  std::vector<PoolChange> pools;
  std::vector<StepRun> runs;
  /// Sums over `runs`; nullopt when a run on accelerators has no bound (no timeout).
  std::optional<double> accelerator_hours, cost_bound;
  std::vector<std::string> notes;
  std::map<std::string, int> counts;  ///< action -> objects
  std::vector<Drift> drift;  ///< diff --live: what changed on the cluster since the last apply
};

/// Files of an output folder by path relative to it: k8s/*.yaml and model.yaml are read.
using OutputFiles = std::map<std::string, std::string>;

/// An object of an output's k8s/*.yaml: as compared (k8s::manifest_json) and as written (`yaml`).
struct OutputObject {
  k8s::ObjectKey key;
  std::string file;
  nlohmann::json obj;
  std::string yaml;  ///< its document's text, as written ("" where the file's documents cannot be told apart)
};
/// Every object in the k8s/*.yaml files of an output (kustomization.yaml is kubectl's, not an
/// object); bounded reads, no aliases. Throws std::runtime_error naming `where` and the file.
std::vector<OutputObject> output_objects(const OutputFiles& files, const std::string& where);
/// Changed paths in words: the first `most`, and how many more.
std::string pointer_list(const std::vector<std::string>& paths, size_t most = 3);
/// What a roll of a service's Deployment costs it (k8s::roll_outage), "" for other objects.
std::string service_roll_outage(const k8s::Plan& plan, const k8s::ObjectKey& key);
/// Whether objects of `kind` are a step's run (Job, JobSet, RayJob).
bool is_run_kind(const std::string& kind);
/// The step an object belongs to: its trainc.dev/step label, else its file (k8s/<step>-job.yaml,
/// -jobset, -rayjob, -configmap, -service) when `steps` has that step; "" for none.
std::string object_step(const nlohmann::json& obj, const std::string& file, const std::set<std::string>& steps);

/// Why a step's run object has a new name, until the steps it needs are known to re-run or not.
inline constexpr std::string_view kNewRunWhy = "what it runs changed: its run has a new name";
/// The steps that run (`reruns`: step -> why) as a.runs, in pipeline order, with their pods,
/// accelerators and bounds, and their sums; a step named kNewRunWhy after a step that re-runs says so.
void add_step_runs(const System& sys, const ResourcePlan& plan, std::map<std::string, std::string> reruns,
                   AgainstPlan& a);

/// Compares the output `neu` that `sys` compiles to (its resource plan `plan`) with `old`, read
/// from `old_folder`. Throws std::runtime_error naming the file when OLD's YAML does not parse.
AgainstPlan plan_against(const System& sys, const ResourcePlan& plan, const OutputFiles& old, const OutputFiles& neu,
                         const std::string& old_folder);
std::string render_against_text(const AgainstPlan& a);
nlohmann::ordered_json against_json(const AgainstPlan& a);

/// Per pool of OLD's and NEW's model.yaml, what the change does (against_pools.cpp).
std::vector<PoolChange> compare_pools(const std::string& old_model, const std::string& new_model,
                                      std::vector<std::string>& notes);

}  // namespace trainc
