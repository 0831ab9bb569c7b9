// The pool half of `plan --against`: each GKE node pool of OLD's lowered model against NEW's.
#include <algorithm>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "base/printable.h"
#include "base/yaml_tree.h"
#include "inspect/against.h"

namespace trainc {
namespace {

/// A field's value in one line: a scalar as it is, a map or list in flow style, "none" for null.
std::string flat(const YAML::Node& n) {
  if (!n || n.IsNull()) return "none";
  if (n.IsScalar()) return n.Scalar().empty() ? "\"\"" : n.Scalar();
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

}  // namespace

std::vector<PoolChange> compare_pools(const std::string& old_model, const std::string& new_model,
                                      std::vector<std::string>& notes) {
  const k8s::PoolRules& rules = k8s::update_rules().pools();
  std::vector<PoolChange> out;
  YAML::Node old_root, new_root;
  try {
    // Bounded, no aliases: the old one is untrusted (io/untrusted_folder.h).
    for (auto [text, root] : {std::pair{&old_model, &old_root}, {&new_model, &new_root}}) {
      const auto docs = read_yaml_documents(*text);
      if (!docs.empty()) root->reset(docs[0]);
    }
  } catch (const std::runtime_error& e) {
    notes.push_back(printable(fmt::format("model.yaml is not an output's YAML ({}): pools are not compared", e.what())));
    return out;
  }
  const YAML::Node& o = old_root;
  const YAML::Node& n = new_root;
  // Another project, place or cluster name: nothing is updated, everything is made anew there.
  for (const char* section : {"gcp", "cluster"})
    for (const char* key : {"project", "region", "zone", "name"}) {
      const std::string was = flat(o[section][key]), is = flat(n[section][key]);
      if (o[section] && n[section] && was != is && (was != "none" || is != "none"))
        notes.push_back(fmt::format("{}.{} changes ({} -> {}): the output now names another cluster; nothing in the "
                                    "old one is updated, and the old one is not torn down",
                                    section, key, was, is));
    }
  std::vector<std::string> names;
  for (const auto& kv : n["pools"]) names.push_back(kv.first.as<std::string>());
  for (const auto& kv : o["pools"])
    if (!n["pools"][kv.first.as<std::string>()]) names.push_back(kv.first.as<std::string>());
  for (const auto& name : names) {
    const YAML::Node was = o["pools"][name], is = n["pools"][name];
    PoolChange p{name, "unchanged", {}, ""};
    if (!was) {
      p.action = "create";
      p.detail = fmt::format("a new node pool of {}", flat(is["machine"]));
    } else if (!is) {
      p.action = "remove";
      p.detail = "its nodes are deleted: " + rules.lost;
    } else {
      auto changed = [&](const std::vector<std::string>& fields) {
        bool any = false;
        for (const auto& f : fields) {
          const std::string a = flat(was[f]), b = flat(is[f]);
          if (a == b) continue;
          p.fields.push_back(fmt::format("{}: {} -> {}", f, a, b));
          any = true;
        }
        return any;
      };
      const bool replace = changed(rules.replace);
      const bool resize = changed(rules.resize);
      const bool update = changed(rules.update);
      if (replace) {
        p.action = "replace";
        p.detail = "the nodes are made again: " + rules.lost;
      } else if (resize) {
        p.action = "resize";
        p.detail = "nodes are added or removed in place (pods on removed nodes are evicted)";
      } else if (update) {
        p.action = "update";
        p.detail = "updated in place (GKE updates each node's labels and taints)";
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace trainc
