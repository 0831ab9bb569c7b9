#pragma once
// `trainc diff --live SPEC`: what applying the spec's output with its scripts/apply.sh would do to
// the cluster as it is now, asked of the cluster itself and read-only: each object is read, and
// applied with a server-side dry run (the server's defaulting, admission webhooks and immutable
// field checks run; nothing is stored). The classes are `plan --against`'s (create, unchanged,
// update, roll, replace, rerun, remove, keep) and `refused` (the server says no: apply would stop
// there); drift is what changed on the cluster since the last apply (an object's fields against
// its last-applied configuration, a run deleted by hand). Pruning is predicted with apply.sh's own
// rules (k8s/prune.h): a step's runs beyond its history, objects the output no longer holds.
// The cluster is asked through LiveCluster: kubectl in the driver (kubectl_cluster.h), a cluster
// played in-process in the unit tests.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/against.h"
#include "inspect/plan.h"
#include "model/model.h"

namespace trainc {

/// The cluster, as diff --live asks it. Every call is a read or a server-side dry run.
class LiveCluster {
 public:
  struct Answer {
    bool ok = false;         ///< the server answered with an object (or, for list, a list)
    bool missing = false;    ///< no such object, or the server does not know its kind yet
    bool kind_unknown = false;  ///< the server does not know the kind (its add-on is not installed)
    bool forbidden = false;  ///< a dry run the credentials may not make (RBAC authorizes it as the write)
    nlohmann::json object;   ///< the object (as JSON from the server)
    std::string message;     ///< the server's (or kubectl's) words when not ok
  };
  virtual ~LiveCluster() = default;
  /// The object the manifest `yaml` names, as the server holds it.
  virtual Answer get(const std::string& yaml) = 0;
  /// What applying `yaml` as apply.sh does (client-side apply) would make of it, dry run on the server.
  virtual Answer dry_run_apply(const std::string& yaml) = 0;
  /// Every object of resource type `type` ("jobs.batch") that `selector` selects, in namespace
  /// `ns` ("" for cluster-scoped types): object.items. A type the server does not know: none.
  virtual Answer list(const std::string& type, const std::string& ns, const std::string& selector) = 0;

  // The same questions asked many at a time, as diff --live asks them. Each answer is the one the
  // single question gives; these defaults ask one at a time, and a cluster may ask at once (kubectl
  // with every object in one process).
  /// get() of each of `yamls`, in order.
  virtual std::vector<Answer> get_each(const std::vector<std::string>& yamls);
  /// dry_run_apply() of each of `yamls`, in order.
  virtual std::vector<Answer> dry_run_each(const std::vector<std::string>& yamls);
  /// list() of each of `types`, their items in one answer.
  virtual Answer list_all(const std::vector<std::string>& types, const std::string& ns, const std::string& selector);
};

/// Thrown when the cluster cannot be asked (not reachable, no permission to read): diff --live
/// then says so and exits 2, having written nothing.
struct LiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// How diff --live asks. Read-only, or where the credentials may not make a dry run (a CI planner
/// that may only read), each object is read and the change judged by trainc's update rules
/// (k8s/update_rules.h) against the live object's fields that its last apply or this output set:
/// the server's defaulting, admission webhooks and immutable-field checks do not run, and a change
/// the rules say cannot be made in place is `refused` on their word.
struct LiveOptions {
  bool read_only = false;  ///< never a dry run: gets and lists alone
};

/// What applying `neu` (the output `sys` compiles to, its plan `plan`) does to the cluster. `subject`
/// names the cluster in the text ("the cluster of context 'gke_...'").
AgainstPlan diff_live(const System& sys, const ResourcePlan& plan, const OutputFiles& neu, LiveCluster& cluster,
                      const std::string& subject, const LiveOptions& options = {});

/// diff --live's JSON: `against_json`'s shape with the drift, and the cluster asked.
nlohmann::ordered_json live_json(const AgainstPlan& a, const std::string& context);

/// diff --live's exit code: 0 nothing would change, 1 changes or drift, 3 the server refuses a change.
int live_exit_code(const AgainstPlan& a);

}  // namespace trainc
