#pragma once
// What applying a new version of a Kubernetes object over the old one does: nothing, an update in
// place, a roll (the controller restarts the pods), or a refusal (an immutable field changed, so
// the object must be deleted and created). The rules are data (stdlib/immutable.yaml, embedded),
// each with its upstream source; so are the GKE node pool fields that resize or replace a pool.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace trainc::k8s {

/// A manifest as the comparison sees it: scalars as strings, and null, empty maps, lists and
/// strings dropped (the API server's decoder and apimachinery's Semantic.DeepEqual treat them as absent).
nlohmann::json manifest_json(const YAML::Node& node);

/// What kubectl matches objects by: API group (not version), kind, namespace and name.
struct ObjectKey {
  std::string group, kind, ns, name;
  auto operator<=>(const ObjectKey&) const = default;
  /// "Job xgb-a4/xgb-a4-train" (the namespace left out for cluster-scoped objects).
  std::string describe() const;
};
ObjectKey object_key(const nlohmann::json& obj);

/// One refused change: the rule's path, the first changed path under it, the upstream source.
struct Refusal {
  std::string path, changed, source;
};

struct UpdateVerdict {
  enum class Action { unchanged, update, roll, replace, rerun };
  Action action = Action::unchanged;
  std::vector<std::string> changed;  ///< the changed leaf paths (JSON pointers)
  std::vector<Refusal> refused;      ///< non-empty for replace
  std::vector<std::string> rolled;   ///< the roll paths that changed
  std::string lost;                  ///< replace: what deleting and creating the object costs
  std::string why;                   ///< rerun: why an accepted change needs a new run; else a note
};

const char* action_name(UpdateVerdict::Action a);

/// How a change to each field of a GKE node pool (model.yaml `pools`) is made.
struct PoolRules {
  std::vector<std::string> resize, update, replace;
  std::string lost, source;
};

class UpdateRules {
 public:
  /// Parses immutable YAML; throws std::runtime_error naming the kind on malformed data.
  static UpdateRules parse(const std::string& yaml_text);
  /// What applying `neu` over the live `old` (same ObjectKey) does.
  UpdateVerdict judge(const nlohmann::json& old, const nlohmann::json& neu) const;
  /// What deleting and creating an object of this kind costs ("" when the data has no word).
  std::string lost(const std::string& group, const std::string& kind) const;
  /// The upstream source of the kind's update rules ("" for none).
  std::string source(const std::string& group, const std::string& kind) const;
  /// Whether an accepted change to the kind's pod template restarts its pods (a roll).
  bool rolls(const std::string& group, const std::string& kind) const;
  /// When the roll happens only under a condition (a RayCluster's upgradeStrategy): why it may not.
  std::string roll_caveat(const std::string& group, const std::string& kind) const;
  /// The kind's immutable fields (JSON pointers), with their sources; empty for none.
  std::vector<std::pair<std::string, std::string>> immutable_fields(const std::string& group,
                                                                    const std::string& kind) const;
  const PoolRules& pools() const { return pools_; }

 private:
  struct Rule {
    std::string path, source;
    std::vector<std::string> except;
    std::string suspended_when;  ///< "", "before" or "beforeOrAfter"
    std::vector<std::string> suspended_allow;
    std::string if_old_path, if_old_equals;
    bool if_old_has_equals = false;
    bool new_sets = false;
    std::string tandem_with, tandem_when, tandem_equals;
  };
  struct Kind {
    std::string source, lost, not_judged, rerun_on_change;
    std::vector<std::string> roll;
    std::string roll_if_path, roll_if_equals, roll_otherwise;
    std::vector<Rule> rules;
    bool mutable_kind = false;
  };
  const Kind* find(const std::string& group, const std::string& kind) const;
  std::vector<std::pair<std::pair<std::string, std::string>, Kind>> kinds_;
  PoolRules pools_;
};

/// The rules embedded from stdlib/immutable.yaml.
const UpdateRules& update_rules();

/// The changed leaf paths between two manifest_json values, as JSON pointers ("/spec/template/...").
std::vector<std::string> changed_paths(const nlohmann::json& old, const nlohmann::json& neu);
/// Whether `path` is at or under `pattern` (a JSON pointer whose `*` matches any list index).
bool path_under(std::string_view path, std::string_view pattern);

}  // namespace trainc::k8s
