#include "inspect/live.h"

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "base/printable.h"
#include "k8s/names.h"
#include "k8s/plan.h"
#include "k8s/services.h"
#include "k8s/prune.h"
#include "k8s/update_rules.h"

namespace trainc {
namespace {

using json = nlohmann::json;
using k8s::ObjectKey;

constexpr std::string_view kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";

/// A value as the comparison sees it (k8s::manifest_json's form): scalars as strings; null, empty
/// maps, lists and strings dropped.
json comparable(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (const auto& [k, x] : v.items()) {
      json c = comparable(x);
      if (!c.is_null()) out[k] = std::move(c);
    }
    return out.empty() ? json() : out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const auto& x : v) out.push_back(comparable(x));  // positions matter: nulls stay
    return out.empty() ? json() : out;
  }
  if (v.is_string()) return v.get<std::string>().empty() ? json() : v;
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  return json();
}

/// A live object as the comparison sees it: without what the server keeps about the object
/// (status, uid, versions, managed fields, kubectl's last-applied record).
json live_form(const json& obj) {
  json o = obj;
  o.erase("status");
  if (auto m = o.find("metadata"); m != o.end() && m->is_object()) {
    for (const char* f : {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"})
      m->erase(f);
    if (auto a = m->find("annotations"); a != m->end() && a->is_object()) {
      a->erase(std::string(kLastApplied));
      a->erase("deployment.kubernetes.io/revision");
    }
  }
  return comparable(o);
}

std::string value_at(const json& doc, const std::string& pointer) {
  try {
    const json& v = doc.at(json::json_pointer(pointer));
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    const auto lines = std::count(s.begin(), s.end(), '\n') + (s.ends_with('\n') ? 0 : 1);
    if (lines > 1) s = fmt::format("{} ... ({} lines)", s.substr(0, s.find('\n')), lines);
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    return printable(s);
  } catch (const std::exception&) {
    return "(unset)";
  }
}

std::string label(const json& obj, std::string_view key) {
  const auto m = obj.find("metadata");
  if (m == obj.end()) return "";
  const auto l = m->find("labels");
  if (l == m->end() || !l->is_object()) return "";
  const auto v = l->find(std::string(key));
  return v != l->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string meta(const json& obj, const char* field) {
  const auto m = obj.find("metadata");
  if (m == obj.end()) return "";
  const auto v = m->find(field);
  return v != m->end() && v->is_string() ? v->get<std::string>() : "";
}

bool owned(const json& obj) {
  const auto m = obj.find("metadata");
  if (m == obj.end()) return false;
  const auto o = m->find("ownerReferences");
  return o != m->end() && o->is_array() && !o->empty();
}

/// A run's state as apply.sh's pruning reads it (k8s/prune.h), and whether it finished.
std::pair<std::string, bool> run_state(const json& obj) {
  const std::string kind = obj.value("kind", "");
  const json status = obj.value("status", json::object());
  std::string state;
  if (kind == "Job") {
    std::vector<std::string> types;
    for (const auto& c : status.value("conditions", json::array()))
      if (c.is_object() && c.value("status", "") == "True") types.push_back(c.value("type", ""));
    state = fmt::format("{}", fmt::join(types, ","));
  } else if (kind == "JobSet") {
    state = status.value("terminalState", "");
  } else if (kind == "RayJob") {
    state = status.value("jobDeploymentStatus", "");
  }
  for (const auto& r : k8s::kRunTypes) {
    const std::string_view type = r.type;
    const bool mine = (kind == "Job" && type == "jobs.batch") || (kind == "JobSet" && type.starts_with("jobsets.")) ||
                      (kind == "RayJob" && type.starts_with("rayjobs."));
    if (mine) return {state.empty() ? "not finished" : state, std::regex_search(state, std::regex(std::string(r.done), std::regex::extended))};
  }
  return {state, false};
}

bool namespace_missing(const std::string& message) {
  return message.find("namespaces \"") != std::string::npos && message.find("not found") != std::string::npos;
}

/// Who made or changed the object, from its managed fields (status aside).
std::vector<std::string> managers(const json& obj) {
  std::vector<std::string> out;
  const auto md = obj.find("metadata");
  if (md == obj.end()) return out;
  for (const auto& e : md->value("managedFields", json::array()))
    if (e.is_object() && e.value("subresource", "") != "status") {
      const std::string m = e.value("manager", "");
      if (!m.empty() && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    }
  return out;
}

bool applied_by_kubectl(const json& obj) {
  const auto md = obj.find("metadata");
  if (md == obj.end()) return false;
  const auto ann = md->value("annotations", json::object());
  return ann.contains(std::string(kLastApplied));
}

/// The leaf paths of a managedFields entry's fieldsV1 ("f:data": {"f:key": {}} is /data/key; a list
/// entry by key "k:{...}" or value "v:..." is written [that]), as JSON pointers.
void field_paths(const json& fields, const std::string& at, std::vector<std::string>& out) {
  bool leaf = true;
  for (const auto& [k, v] : fields.items()) {
    if (k == ".") continue;
    leaf = false;
    std::string part = k.size() > 2 && k[1] == ':' ? k.substr(2) : k;
    if (k.starts_with("k:") || k.starts_with("v:")) part = "[" + part + "]";
    std::string escaped;
    for (char ch : part) escaped += ch == '~' ? "~0" : ch == '/' ? "~1" : std::string(1, ch);
    field_paths(v, at + "/" + escaped, out);
  }
  if (leaf && !at.empty()) out.push_back(at);
}

/// Fields of a live object set since by hand: written by a kubectl command other than the
/// client-side apply apply.sh runs (kubectl edit, patch, scale, label, set ...), or by anyone's
/// server-side apply; with who set them. Controllers' writes (other managers, status) are theirs.
std::vector<std::pair<std::string, std::string>> set_by_hand(const json& obj) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto md = obj.find("metadata");
  if (md == obj.end()) return out;
  const auto mf = md->find("managedFields");
  if (mf == md->end() || !mf->is_array()) return out;
  for (const auto& e : *mf) {
    if (!e.is_object() || e.value("subresource", "") == "status") continue;
    const std::string manager = e.value("manager", ""), op = e.value("operation", "");
    const bool hand = (op == "Update" && manager.starts_with("kubectl") && manager != "kubectl-client-side-apply") ||
                      op == "Apply";
    if (!hand) continue;
    std::vector<std::string> paths;
    field_paths(e.value("fieldsV1", json::object()), "", paths);
    for (auto& p : paths)
      if (!p.starts_with("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"))
        out.emplace_back(std::move(p), manager);
  }
  return out;
}

/// The live object's fields at the places `shape` has (maps by key, lists by position: a list
/// longer on the cluster keeps its extra items): what the server defaulted and no apply set is
/// left out, so a read-only comparison sees only what the output or its last apply decide.
json project(const json& live, const json& shape) {
  if (live.is_object() && shape.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : shape.items())
      if (const auto it = live.find(k); it != live.end()) {
        json c = project(*it, v);
        if (!c.is_null()) out[k] = std::move(c);
      }
    return out.empty() ? json() : out;
  }
  if (live.is_array() && shape.is_array() && !shape.empty()) {
    json out = json::array();
    for (size_t i = 0; i < live.size(); ++i) out.push_back(project(live[i], shape[std::min(i, shape.size() - 1)]));
    return out;
  }
  return live;
}

/// The union of two objects' places (lists merged by position), for project().
json union_shape(const json& a, const json& b) {
  if (a.is_null()) return b;
  if (b.is_null()) return a;
  if (a.is_object() && b.is_object()) {
    json out = a;
    for (const auto& [k, v] : b.items()) out[k] = out.contains(k) ? union_shape(out[k], v) : v;
    return out;
  }
  if (a.is_array() && b.is_array()) {
    json out = json::array();
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i)
      out.push_back(union_shape(i < a.size() ? a[i] : json(), i < b.size() ? b[i] : json()));
    return out;
  }
  return b;
}

/// The configuration kubectl recorded at the object's last client-side apply, as applied; null
/// when there is none (made by hand, or by another tool).
json last_applied(const json& obj) {
  const auto md = obj.value("metadata", json::object());
  const auto ann = md.value("annotations", json::object());
  const auto last = ann.find(std::string(kLastApplied));
  if (last == ann.end() || !last->is_string()) return json();
  try {
    return json::parse(last->get<std::string>());
  } catch (const json::parse_error&) {
    return json();
  }
}

/// What was asked of the cluster about one object of the output.
struct Asked {
  LiveCluster::Answer live, applied, reapplied;  ///< get; dry run of the output; dry run of the last-applied
  bool read_only = false;  ///< no dry run was made (read-only, or the credentials may not)
  bool namespace_absent = false;  ///< not dry run: its namespace is not there yet (the output makes it)
};

}  // namespace

// --- questions asked many at a time, one at a time ------------------------------------------

std::vector<LiveCluster::Answer> LiveCluster::get_each(const std::vector<std::string>& yamls) {
  std::vector<Answer> out;
  for (const auto& y : yamls) out.push_back(get(y));
  return out;
}

std::vector<LiveCluster::Answer> LiveCluster::dry_run_each(const std::vector<std::string>& yamls) {
  std::vector<Answer> out;
  for (const auto& y : yamls) out.push_back(dry_run_apply(y));
  return out;
}

LiveCluster::Answer LiveCluster::list_all(const std::vector<std::string>& types, const std::string& ns,
                                          const std::string& selector) {
  Answer all;
  all.ok = true;
  all.object = {{"items", json::array()}};
  for (const auto& type : types) {
    Answer a = list(type, ns, selector);
    if (!a.ok) {
      a.message = fmt::format("{}: {}", type, a.message);
      return a;
    }
    for (auto& item : a.object.value("items", json::array())) all.object["items"].push_back(std::move(item));
  }
  return all;
}

// --- the comparison --------------------------------------------------------------------------

AgainstPlan diff_live(const System& sys, const ResourcePlan& plan, const OutputFiles& neu, LiveCluster& cluster,
                      const std::string& subject, const LiveOptions& options) {
  const k8s::UpdateRules& rules = k8s::update_rules();
  AgainstPlan a;
  a.old_folder = "the cluster";
  a.subject = subject;
  const std::vector<OutputObject> news = output_objects(neu, "the output");
  std::set<std::string> steps;
  std::map<std::string, int> history;
  for (const auto& s : sys.steps) {
    steps.insert(s.name);
    history[s.name] = s.history;
  }

  // Every object the system's labels select, as apply.sh's pruning lists them (k8s/prune.h).
  const std::string selector = fmt::format("app.kubernetes.io/managed-by=trainc,app.kubernetes.io/part-of={}", sys.name);
  const std::string cluster_selector = fmt::format("{},{}={}", selector, k8s::kNamespaceLabel, sys.ns);
  struct Listed {
    bool run = false;
    json obj;
  };
  std::vector<std::string> namespaced_types, cluster_types;
  for (const auto& r : k8s::kRunTypes) namespaced_types.emplace_back(r.type);
  for (const auto t : k8s::kNamespacedTypes) namespaced_types.emplace_back(t);
  for (const auto t : k8s::kClusterTypes) cluster_types.emplace_back(t);
  std::vector<std::string> yamls;
  for (const auto& m : news) {
    if (m.yaml.empty()) throw LiveError(fmt::format("{}: its documents cannot be told apart", m.file));
    yamls.push_back(m.yaml);
  }

  // The questions, in three rounds of questions asked together: the system's objects listed and each
  // object of the output read; each applied (a dry run); and, for drift, the last-applied
  // configuration of each live object applied again.
  std::vector<Asked> asked(news.size());
  auto listed_here = std::async(std::launch::async, [&] {
    return cluster.list_all(namespaced_types, sys.ns, selector + ",!" + std::string(k8s::kScheduleLabel));
  });
  auto listed_outside = std::async(std::launch::async, [&] { return cluster.list_all(cluster_types, "", cluster_selector); });
  {
    std::vector<LiveCluster::Answer> lives = cluster.get_each(yamls);
    for (size_t i = 0; i < news.size(); ++i) asked[i].live = std::move(lives.at(i));
  }
  const LiveCluster::Answer lists[] = {listed_here.get(), listed_outside.get()};

  // The output's namespace, not on the cluster: a dry run of an object in it is refused for that
  // alone (the dry run creates nothing), so none is made.
  bool namespace_absent = false;
  for (size_t i = 0; i < news.size(); ++i)
    if (news[i].key.kind == "Namespace" && news[i].key.group.empty() && news[i].key.name == sys.ns)
      namespace_absent = asked[i].live.missing;
  std::vector<size_t> applying;
  for (size_t i = 0; i < news.size(); ++i) {
    Asked& q = asked[i];
    if (!q.live.ok && !q.live.missing) continue;
    // A step's run that is there is left as it is (apply.sh's start_run): nothing to apply.
    if (q.live.ok && is_run_kind(news[i].key.kind)) continue;
    if (options.read_only) {
      q.read_only = true;
      continue;
    }
    if (namespace_absent && news[i].key.ns == sys.ns) {
      q.namespace_absent = true;
      continue;
    }
    if (q.live.kind_unknown) continue;  // its add-on is not installed: the server cannot check it
    applying.push_back(i);
  }
  {
    std::vector<std::string> docs;
    for (const size_t i : applying) docs.push_back(yamls[i]);
    std::vector<LiveCluster::Answer> applied = cluster.dry_run_each(docs);
    for (size_t k = 0; k < applying.size(); ++k) asked[applying[k]].applied = std::move(applied.at(k));
  }
  // Drift: what applying the last-applied configuration again would change on the live object.
  std::vector<size_t> reapplying;
  std::vector<std::string> lasts;
  for (const size_t i : applying) {
    Asked& q = asked[i];
    if (q.applied.forbidden) q.read_only = true;
    if (q.read_only || !q.live.ok || !q.applied.ok) continue;
    const json applied_last = last_applied(q.live.object);
    if (applied_last.is_null()) continue;
    if (comparable(applied_last) == news[i].obj) {
      q.reapplied = q.applied;  // the output is what was applied last: the same dry run
    } else {
      reapplying.push_back(i);
      lasts.push_back(applied_last.dump());
    }
  }
  if (!lasts.empty()) {
    std::vector<LiveCluster::Answer> again = cluster.dry_run_each(lasts);
    for (size_t k = 0; k < reapplying.size(); ++k) asked[reapplying[k]].reapplied = std::move(again.at(k));
  }
  std::vector<Listed> on_cluster;
  for (const auto& answer : lists) {
    if (!answer.ok) throw LiveError(fmt::format("cannot list the system's objects: {}", answer.message));
    for (const auto& item : answer.object.value("items", json::array()))
      if (!owned(item)) on_cluster.push_back({is_run_kind(item.value("kind", "")), item});
  }

  // The runs on the cluster per step, newest first (as apply.sh's pruning counts them).
  std::sort(on_cluster.begin(), on_cluster.end(), [](const Listed& x, const Listed& y) {
    return meta(x.obj, "creationTimestamp") > meta(y.obj, "creationTimestamp");
  });
  std::map<std::string, std::vector<const Listed*>> runs_of;
  std::set<std::string> names_on_cluster;  // TYPE-less names of the system's objects: a run's ConfigMap shares its name
  for (const auto& l : on_cluster) {
    if (l.run) runs_of[label(l.obj, k8s::kStepLabel)].push_back(&l);
    names_on_cluster.insert(l.obj.value("kind", "") + "/" + meta(l.obj, "name"));
  }

  std::map<std::string, std::string> reruns;
  std::set<ObjectKey> current;
  const k8s::Plan services = k8s::plan(sys);
  for (size_t i = 0; i < news.size(); ++i) {
    const OutputObject& m = news[i];
    const Asked& q = asked[i];
    current.insert(m.key);
    ObjectChange c;
    c.key = m.key;
    c.file = m.file;
    c.step = object_step(m.obj, m.file, steps);
    const bool run = !c.step.empty() && is_run_kind(m.key.kind);
    if (!q.live.ok && !q.live.missing) throw LiveError(fmt::format("cannot read {}: {}", m.key.describe(), q.live.message));
    if (q.live.ok && !run && !applied_by_kubectl(q.live.object))
      a.drift.push_back({m.key, m.file,
                         {fmt::format("no record of an apply (its {} annotation): made by {}", kLastApplied,
                                      fmt::join(managers(q.live.object), ", "))},
                         "made on the cluster by hand or by another tool, not by apply.sh"});
    if (!q.live.ok) {
      // Not on the cluster: created, unless the server refuses it.
      c.action = "create";
      if (run) {
        std::vector<std::string> earlier;
        for (const auto* l : runs_of[c.step]) earlier.push_back(meta(l->obj, "name"));
        if (!earlier.empty()) {
          c.action = "rerun";
          c.detail = fmt::format("a new run of the step (on the cluster: {})", fmt::join(earlier, ", "));
          reruns.emplace(c.step, std::string(kNewRunWhy));
        } else {
          c.detail = "the step's first run on the cluster";
          reruns.emplace(c.step, "a new step, or its first run on the cluster");
        }
        // Its ConfigMap from the same apply is there, the run is not: deleted since.
        if (names_on_cluster.count("ConfigMap/" + m.key.name)) {
          a.drift.push_back({m.key, m.file, {"not on the cluster, while its ConfigMap of the same apply is"},
                             "deleted since the last apply (by hand, or with its namespace's objects): applying "
                             "starts it again"});
          reruns[c.step] = "its run was deleted on the cluster: applying starts it again";
        }
      }
      if (q.read_only) {
        c.detail += std::string(c.detail.empty() ? "" : "; ") + "read-only: the server has not checked it";
      } else if (!q.applied.ok) {
        if (q.applied.kind_unknown || q.live.kind_unknown)
          c.detail += std::string(c.detail.empty() ? "" : "; ") + "the server does not know kind " + m.key.kind +
                      " yet: apply.sh installs its add-on first, so the server has not checked it";
        else if (q.namespace_absent || namespace_missing(q.applied.message))
          c.detail += std::string(c.detail.empty() ? "" : "; ") +
                      "its namespace is created first, so the server has not checked it";
        else {
          c.action = "refused";
          c.detail = fmt::format("the server refuses to create it: {}", q.applied.message);
        }
      }
    } else if (run) {
      const std::string state = run_state(q.live.object).first;
      c.action = "unchanged";
      c.detail = fmt::format("this run is on the cluster ({}): apply.sh leaves it as it is", state);
    } else if (!q.read_only && !q.applied.ok) {
      c.action = "refused";
      const k8s::UpdateVerdict v = rules.judge(live_form(q.live.object), m.obj);
      c.refused = v.refused;
      std::vector<std::string> fields;
      for (const auto& r : v.refused) fields.push_back(r.path);
      c.detail = fmt::format("the server refuses the change: {}", q.applied.message);
      if (!fields.empty())
        c.detail += fmt::format("; {} cannot change in place: delete it, then apply ({})", fmt::join(fields, ", "),
                                v.lost.empty() ? "what it holds is lost" : v.lost);
    } else {
      // before/after: the object as it is and as applying leaves it. put_back/as_is: what its last
      // apply set, and those fields as they are now (drift where they differ).
      const json live = live_form(q.live.object);
      json before = live, after, put_back, as_is = live;
      if (q.read_only) {
        const json last = comparable(last_applied(q.live.object));
        before = project(live, union_shape(last, m.obj));
        after = m.obj;
        if (!last.is_null()) {
          put_back = last;
          as_is = project(live, last);
        }
      } else {
        after = live_form(q.applied.object);
        if (q.reapplied.ok) put_back = live_form(q.reapplied.object);
      }
      const k8s::UpdateVerdict v = rules.judge(before, after);
      c.changed = v.changed;
      c.action = v.changed.empty() ? "unchanged" : k8s::action_name(v.action);
      if (c.action == "replace" && q.read_only) {
        c.action = "refused";
        c.refused = v.refused;
        std::vector<std::string> fields;
        for (const auto& r : v.refused) fields.push_back(r.path);
        c.detail = fmt::format("the server would refuse the change ({} cannot change in place, by trainc's update "
                               "rules: read-only, the server was not asked): delete it, then apply ({})",
                               fmt::join(fields, ", "), v.lost.empty() ? "what it holds is lost" : v.lost);
      }
      if (c.action == "replace") c.action = "update";  // the server accepted it in place
      if (c.action == "roll") {
        c.detail = fmt::format("its pods are restarted with the new template ({} changed)", pointer_list(v.changed));
        if (const std::string outage = service_roll_outage(services, m.key); !outage.empty()) c.detail += "; " + outage;
      } else if (c.action == "update") {
        c.detail = fmt::format("changed in place: {}", pointer_list(v.changed));
      } else if (c.action == "rerun") {
        c.detail = v.why;
        reruns.emplace(c.step, fmt::format("its {} changed", m.key.kind));
      }
      Drift d{m.key, m.file, {}, ""};
      std::set<std::string> named;
      if (!put_back.is_null()) {
        for (const auto& p : k8s::changed_paths(as_is, put_back)) {
          d.fields.push_back(fmt::format("{}: applied {}, on the cluster {}", p, value_at(put_back, p), value_at(as_is, p)));
          named.insert(p);
        }
      }
      // Set by hand where the last apply set nothing: kubectl's apply leaves such fields.
      bool left = false;
      for (const auto& [p, manager] : set_by_hand(q.live.object)) {
        if (std::any_of(named.begin(), named.end(), [&](const std::string& n) { return p.starts_with(n) || n.starts_with(p); }))
          continue;
        named.insert(p);
        d.fields.push_back(fmt::format("{}: set on the cluster by {} ({}), which the output does not set: applying "
                                       "leaves it",
                                       p, manager, value_at(live, p)));
        left = true;
      }
      if (!d.fields.empty()) {
        d.detail = left ? "changed on the cluster since the last apply (by hand, or by another tool); remove what "
                          "applying leaves by hand (kubectl edit), or delete the object and apply"
                        : "changed on the cluster since the last apply (by hand, or by another tool): applying puts "
                          "it back";
        a.drift.push_back(std::move(d));
      }
    }
    a.objects.push_back(std::move(c));
  }

  // What pruning would do with the system's objects the output does not hold (apply.sh's rules).
  std::set<std::string> kept_runs;
  std::map<std::string, int> older;
  for (const auto& l : on_cluster) {
    if (!l.run) continue;
    const ObjectKey key = k8s::object_key(live_form(l.obj));
    if (current.count(key)) {
      kept_runs.insert(key.name);
      continue;
    }
    ObjectChange c;
    c.key = key;
    c.step = label(l.obj, k8s::kStepLabel);
    c.file = "(on the cluster)";
    const auto [state, finished] = run_state(l.obj);
    c.action = "remove";
    if (c.step.empty())
      c.detail = "a step of this system from before runs were named (an earlier trainc)";
    else if (!steps.count(c.step))
      c.detail = fmt::format("a run of step '{}', which the spec no longer has", c.step);
    else if (!finished)
      c.detail = fmt::format("an earlier run of step '{}', not finished ({}): the current run replaces it", c.step, state);
    else if (++older[c.step] < history[c.step]) {
      c.action = "keep";
      c.detail = fmt::format("an earlier run of step '{}' ({}), kept as history (history: {}, the current run included)",
                             c.step, state, history[c.step]);
      kept_runs.insert(key.name);
    } else {
      c.detail = fmt::format("step '{}' keeps its last {} runs", c.step, history[c.step]);
    }
    a.objects.push_back(std::move(c));
  }
  for (const auto& l : on_cluster) {
    if (l.run) continue;
    const ObjectKey key = k8s::object_key(live_form(l.obj));
    if (current.count(key)) continue;
    ObjectChange c;
    c.key = key;
    c.step = label(l.obj, k8s::kStepLabel);
    c.file = "(on the cluster)";
    if (!c.step.empty() && kept_runs.count(key.name)) {
      c.action = "keep";
      c.detail = "of a run pruning keeps: kept with it";
    } else {
      c.action = "remove";
      c.detail = "this output no longer has it: pruned";
    }
    a.objects.push_back(std::move(c));
  }
  for (const auto& c : a.objects) ++a.counts[c.action];
  add_step_runs(sys, plan, reruns, a);
  if (std::any_of(asked.begin(), asked.end(), [](const Asked& q) { return q.read_only; }))
    a.notes.push_back(options.read_only
                          ? "read-only (--read-only): no dry run was made; each change was judged by trainc's update "
                            "rules against the fields the object's last apply and this output set, without the "
                            "server's defaulting, admission webhooks and immutable-field checks"
                          : "the credentials may not make a server-side dry run (RBAC authorizes it as the write it "
                            "stands for), so it was read-only: each change was judged by trainc's update rules against "
                            "the fields the object's last apply and this output set, without the server's checks");
  a.notes.push_back("node pools are not compared here: `scripts/up.sh --dry-run` names what it would change");
  return a;
}

nlohmann::ordered_json live_json(const AgainstPlan& a, const std::string& context) {
  nlohmann::ordered_json out = against_json(a);
  out.erase("old");
  out.erase("pools");
  nlohmann::ordered_json doc;
  doc["cluster"] = context;
  for (auto& [k, v] : out.items()) doc[k] = v;
  doc["counts"]["refused"] = a.counts.count("refused") ? a.counts.at("refused") : 0;
  auto drift = nlohmann::ordered_json::array();
  for (const auto& d : a.drift)
    drift.push_back({{"group", d.key.group},
                     {"kind", d.key.kind},
                     {"namespace", d.key.ns.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d.key.ns)},
                     {"name", d.key.name},
                     {"file", d.file},
                     {"fields", d.fields},
                     {"detail", d.detail}});
  doc["drift"] = drift;
  return doc;
}

int live_exit_code(const AgainstPlan& a) {
  if (a.counts.count("refused") && a.counts.at("refused") > 0) return 3;
  for (const auto& [action, n] : a.counts)
    if (n > 0 && action != "unchanged" && action != "keep") return 1;
  return a.drift.empty() ? 0 : 1;
}

}  // namespace trainc
