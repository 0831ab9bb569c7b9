#pragma once
// `trainc plan SPEC --against OLD`: what applying the spec's output over OLD, the output applied
// last, does. Per Kubernetes object (matched as kubectl matches them): create, unchanged, update
// in place, roll (pods restarted), replace (an immutable field changed: deleted and created, and
// what that loses), rerun (a step's new run) or remove (pruned); per pool (model.yaml):
// resize, update, replace (nodes destroyed) or create/remove; and the steps that run, with their
// accelerator-hours and cost bounds. The rules are k8s/update_rules.h's (stdlib/immutable.yaml).
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "inspect/plan.h"
#include "k8s/update_rules.h"
#include "model/model.h"

namespace trainc {

struct ObjectChange {
  std::string action;  ///< create, unchanged, update, roll, replace, rerun, remove
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

struct AgainstPlan {
  std::string old_folder;
  std::vector<ObjectChange> objects;  ///< in NEW's file order, then OLD's removed objects
  std::vector<PoolChange> pools;
  std::vector<StepRun> runs;
  /// Sums over `runs`; nullopt when a run on accelerators has no bound (no timeout).
  std::optional<double> accelerator_hours, cost_bound;
  std::vector<std::string> notes;
  std::map<std::string, int> counts;  ///< action -> objects
};

/// Files of an output folder by path relative to it: k8s/*.yaml and model.yaml are read.
using OutputFiles = std::map<std::string, std::string>;

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
