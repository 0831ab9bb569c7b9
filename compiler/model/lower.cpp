#include "model/lower.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "base/spelling.h"
#include "base/units.h"
#include "common/units.h"
#include "model/build_context.h"
#include "model/lower_order.h"
#include "model/lowerer.h"

namespace trainc::lowering {

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

StringMap string_map(const json& obj, const char* key) {
  StringMap out;
  if (obj.contains(key))
    for (const auto& [k, v] : obj[key].items()) out[k] = scalar_text(v);
  return out;
}

void split_env(const json& obj, StringMap& plain, SecretEnvMap& secrets) {
  if (!obj.contains("env")) return;
  for (const auto& [k, v] : obj["env"].items()) {
    if (v.is_object()) secrets[k] = SecretEnv{v["secretRef"]["name"], v["secretRef"]["key"]};
    else plain[k] = scalar_text(v);
  }
}

std::vector<std::string> string_list(const json& arr) {
  std::vector<std::string> out;
  for (const auto& v : arr) out.push_back(scalar_text(v));
  return out;
}

std::string pod_path(const std::string& workdir, const std::string& p) {
  std::filesystem::path joined = p.starts_with("/") ? std::filesystem::path(p) : std::filesystem::path(workdir) / p;
  std::string s = joined.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

Lowerer::Lowerer(const Document& doc, Diagnostics& diags) : doc_(doc), diags_(diags), root_(doc.root) {
  // Entities pruned after a schema error: references to them are not reported as unknown.
  for (const auto& e : doc.pruned) {
    const auto segs = ptr_segments(e);
    if (segs.size() == 2 && segs[0] == "pipeline") {
      const json* st = doc.root.contains(nlohmann::json::json_pointer(e)) ? &doc.root.at(nlohmann::json::json_pointer(e))
                                                                           : nullptr;
      if (st && st->is_object() && st->contains("name") && (*st)["name"].is_string())
        pruned_.emplace("step", (*st)["name"]);
    } else if (!segs.empty()) {
      pruned_.emplace(segs[0] == "cluster" ? "pools" : segs[0], segs.back());
    }
  }
  if (root_.contains("pipeline") && root_["pipeline"].is_array())
    for (const auto& st : root_["pipeline"])
      if (st.is_object() && st.contains("name") && st["name"].is_string()) step_names_.push_back(st["name"]);
}

System Lowerer::run() {
  System sys;
  sys.ptr = "";
  sys.name = root_["name"];
  if (root_.contains("namespace")) {
    sys.ns = root_["namespace"];
    sys.owns_namespace = false;
  } else {
    sys.ns = sys.name;
  }
  sys.service_account = get_or<std::string>(root_, "serviceAccount", "");
  if (root_.contains("serviceAccountToken"))
    sys.service_account_token_reason = get_or<std::string>(root_["serviceAccountToken"], "reason", "");
  if (root_.contains("runtime")) sys.runtime_image = root_["runtime"]["image"];
  sys.labels = string_map(root_, "labels");
  if (root_.contains("gcp")) {
    const json& g = root_["gcp"];
    sys.gcp = Gcp{g["project"], g["region"], get_or<std::string>(g, "zone", ""), "/gcp", {}, {}, {}};
    gcp_extras(sys.name, g, *sys.gcp);
  }
  if (root_.contains("ci")) sys.ci = ci(root_["ci"]);
  const json cluster = root_.value("cluster", json::object());
  sys.cluster.name = get_or<std::string>(cluster, "name", sys.name);
  sys.cluster.release_channel = get_or<std::string>(cluster, "releaseChannel", "");
  if (cluster.contains("pools"))
    for (const auto& [name, p] : cluster["pools"].items())
      if (!pruned("pools", name)) sys.pools[name] = pool(name, p);
  node_reserves(sys);
  if (root_.contains("storage"))
    for (const auto& [name, s] : root_["storage"].items())
      if (!pruned("storage", name)) sys.stores[name] = store(sys, name, s);
  if (root_.contains("identity")) {
    sys.identity = identity(root_["identity"], "/identity", "", "");
    // The system's workloads may use every GCS bucket: a role on each, never on the project.
    for (const auto& [name, st] : sys.stores)
      if (st.kind == Store::Kind::gcs)
        sys.identity->grants.push_back(
            {name, st.read_only ? "roles/storage.objectViewer" : "roles/storage.objectUser"});
  }
  if (root_.contains("clusters"))
    for (const auto& [name, c] : root_["clusters"].items()) {
      if (pruned("clusters", name))
        references(sys, c, ptr_key("/clusters", name));
      else
        sys.clusters[name] = compute_cluster(sys, name, c);
    }
  if (root_.contains("istio")) sys.istio = Istio{get_or(root_["istio"], "install", true), "/istio"};
  if (root_.contains("queue"))
    sys.queue = Queue{get_or<std::string>(root_["queue"], "name", sys.name), "/queue",
                      duration(root_["queue"], "podsReadyTimeout", 0, "/queue")};
  if (root_.contains("services"))
    for (const auto& [name, s] : root_["services"].items()) {
      if (pruned("services", name))
        references(sys, s, ptr_key("/services", name));
      else
        sys.services[name] = service(sys, name, s);
    }
  std::vector<Step> steps;
  const json pipeline = root_.value("pipeline", json::array());
  for (size_t i = 0; i < pipeline.size(); ++i) {
    const std::string ptr = ptr_index("/pipeline", i);
    if (doc_.pruned.count(ptr))
      references(sys, pipeline[i], ptr);
    else
      steps.push_back(step(sys, pipeline[i], ptr));
  }
  resolve_needs(steps);
  // A service's needs name steps too (train, then serve): any in the pipeline, pruned or not.
  for (const auto& [name, s] : sys.services)
    for (size_t i = 0; i < s.needs.size(); ++i)
      if (std::find(step_names_.begin(), step_names_.end(), s.needs[i]) == step_names_.end())
        doc_.error(diags_, ptr_index(ptr_key(s.ptr, "needs"), i),
                   fmt::format("unknown step '{}' in needs of service '{}'{}", s.needs[i], name,
                               did_you_mean(s.needs[i], step_names_)));
  sys.steps = dependency_order(std::move(steps), doc_, diags_, &in_cycles_);
  objectives_from_tables(sys, sys.steps);
  size_steps(sys);
  size_whole_nodes(sys);  // after the steps: a cluster's whole-node pods leave room for its client steps
  sys.builds = std::move(builds_);
  finish_builds(sys, doc_, diags_);
  default_versioning(sys);
  return sys;
}

PodSecurity Lowerer::pod_security(const json& obj, const std::string& ptr) {
  PodSecurity out;
  if (!obj.contains("security")) return out;
  const json& sec = obj["security"];
  out.ptr = ptr_key(ptr, "security");
  const std::string level = get_or<std::string>(sec, "level", "restricted");
  if (level == "baseline") out.level = PodSecurityLevel::kBaseline;
  if (level == "privileged") out.level = PodSecurityLevel::kPrivileged;
  out.reason = get_or<std::string>(sec, "reason", "");
  if (sec.contains("runAsUser")) out.run_as = sec["runAsUser"].get<int>();
  return out;
}

int Lowerer::duration(const json& obj, const char* key, int fallback, const std::string& ptr) {
  if (!obj.contains(key)) return fallback;
  const std::string text = obj[key].get<std::string>();
  auto d = parse_duration(text);
  if (!d || *d == 0) {
    // The shared grammar took it (the schema checked the pattern): say which spec rule it breaks.
    const auto ms = common::parse_duration_ms(text);
    const std::string why = !ms                   ? "is not a duration"
                            : *ms == 0              ? "is zero"
                            : *ms % 1000 != 0       ? "is not a whole number of seconds"
                                                   : "is longer than 2^31 seconds (68 years)";
    doc_.error(diags_, ptr_key(ptr, key),
               fmt::format("'{}' {}; give a positive duration in whole seconds, such as 90s, 10m, 1h30m or 2d", text,
                           why));
    return fallback;
  }
  return *d;
}

template <class T>
T Lowerer::integer(const json& obj, const char* key, T fallback, const std::string& ptr) {
  if (!obj.contains(key)) return fallback;
  const json& v = obj[key];
  using limits = std::numeric_limits<T>;
  const double top = std::ldexp(1.0, limits::digits);  // limits::max() + 1, exactly
  bool fits = false;
  T out{};
  if (v.is_number_unsigned()) {
    fits = v.get<unsigned long long>() <= static_cast<unsigned long long>(limits::max());
    if (fits) out = static_cast<T>(v.get<unsigned long long>());
  } else if (v.is_number_integer()) {
    const long long i = v.get<long long>();
    fits = i >= static_cast<long long>(limits::min()) && i <= static_cast<long long>(limits::max());
    if (fits) out = static_cast<T>(i);
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    fits = std::trunc(d) == d && d >= -top && d < top;
    if (fits) out = static_cast<T>(d);
  }
  if (!fits) {
    const bool whole = !v.is_number_float() || std::trunc(v.get<double>()) == v.get<double>();
    const bool high = v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() > 0) ||
                      (v.is_number_float() && v.get<double>() > 0);
    doc_.error(diags_, ptr_key(ptr, key),
               !whole ? fmt::format("'{}' is {}, which is not a whole number", key, v.dump())
               : high ? fmt::format("'{}' is {}, too large for trainc: at most {}", key, v.dump(), limits::max())
                      : fmt::format("'{}' is {}, too small for trainc: at least {}", key, v.dump(), limits::min()));
    return fallback;
  }
  return out;
}

template int Lowerer::integer<int>(const json&, const char*, int, const std::string&);
template long long Lowerer::integer<long long>(const json&, const char*, long long, const std::string&);

void Lowerer::references(const System& sys, const json& e, const std::string& ptr) {
  if (!e.is_object()) return;
  auto name_at = [&](const std::string& key) -> const std::string* {
    const std::string kptr = ptr_key(ptr, key);
    return e.contains(key) && e[key].is_string() && !doc_.invalid_at(kptr) ? e[key].get_ptr<const std::string*>()
                                                                           : nullptr;
  };
  if (const auto* pool = name_at("pool")) pool_ref(sys, *pool, ptr_key(ptr, "pool"));
  if (const auto* cluster = name_at("cluster"); cluster && ptr.starts_with("/pipeline/"))
    cluster_ref(sys, *cluster, ptr_key(ptr, "cluster"));
  if (!ptr.starts_with("/pipeline/")) return;
  // The stores a step mounts, syncs from and writes to, and its trainrt tables' stores.
  const auto store_at = [&](const json& parent, const std::string& parent_ptr, const std::string& key, bool whole) {
    const std::string kptr = ptr_key(parent_ptr, key);
    if (!parent.is_object() || !parent.contains(key) || !parent[key].is_string() || doc_.invalid_at(kptr)) return;
    const std::string text = parent[key];
    std::string store = whole ? text : text.substr(0, text.find(':'));
    if (!sys.store(store)) unknown_store(sys, store, kptr, whole ? "" : text);
  };
  struct ListRef {
    const char *list, *key;
    bool whole;  ///< the value is a store name, not "<store>:/path"
  };
  for (const auto& [list, key, whole] : {ListRef{"mounts", "store", true}, ListRef{"inputs", "from", false}})
    if (e.contains(list) && e[list].is_array())
      for (size_t i = 0; i < e[list].size(); ++i) store_at(e[list][i], ptr_index(ptr_key(ptr, list), i), key, whole);
  if (e.contains("outputs")) store_at(e["outputs"], ptr_key(ptr, "outputs"), "to", false);
  if (e.contains("datagen")) store_at(e["datagen"], ptr_key(ptr, "datagen"), "to", false);
  if (e.contains("xgboost"))
    for (const char* key : {"from", "to"}) store_at(e["xgboost"], ptr_key(ptr, "xgboost"), key, false);
  if (!e.contains("needs") || !e["needs"].is_array()) return;
  for (size_t i = 0; i < e["needs"].size(); ++i) {
    const std::string nptr = ptr_index(ptr_key(ptr, "needs"), i);
    const json& n = e["needs"][i];
    if (!n.is_string() || doc_.invalid_at(nptr)) continue;
    if (std::find(step_names_.begin(), step_names_.end(), n.get<std::string>()) == step_names_.end())
      doc_.error(diags_, nptr, fmt::format("unknown step '{}' in needs{}", n.get<std::string>(),
                                           did_you_mean(n.get<std::string>(), step_names_)));
  }
}

}  // namespace trainc::lowering

namespace trainc {

using lowering::Lowerer;

std::optional<System> lower(const Document& doc, Diagnostics& diags) {
  const size_t before = diags.reported().size();
  System sys = Lowerer(doc, diags).run();
  if (!doc.pruned.empty() || diags.has_errors_since(before)) return std::nullopt;
  return sys;
}

std::optional<System> lower_for_checks(const Document& doc, Diagnostics& diags, LoweredCheck check) {
  const size_t before = diags.reported().size();
  Lowerer lowerer(doc, diags);
  System sys = lowerer.run();
  if (check && lowerer.in_cycles().empty()) {
    check(sys, doc, diags);
  } else if (check) {
    // Each step is judged on its own settings, including the steps of a cycle, which the order leaves out.
    System judged = sys;
    judged.steps.insert(judged.steps.end(), lowerer.in_cycles().begin(), lowerer.in_cycles().end());
    check(judged, doc, diags);
  }
  std::set<std::string> out = doc.pruned;
  const auto& all = diags.reported();
  for (size_t i = before; i < all.size(); ++i) {
    if (all[i].severity != Severity::error) continue;
    const std::string entity = entity_of(all[i].path);
    if (entity.empty()) return std::nullopt;  // a top-level setting the rest may depend on
    // A wrong name in `needs` changes only the order steps start in: the step is still judged.
    if (entity.starts_with("/pipeline/") && all[i].path.starts_with(entity + "/needs/")) continue;
    out.insert(entity);
  }
  if (diags.has_errors_since(before) || !out.empty()) leave_out(sys, std::move(out), doc.root);
  return sys;
}

}  // namespace trainc

