#include "k8s/update_rules.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "base/embedded.h"
#include "base/yaml_tree.h"

namespace trainc::k8s {
namespace {

using json = nlohmann::json;

std::string str(const YAML::Node& n, const char* key) {
  return n[key] && n[key].IsScalar() ? n[key].as<std::string>() : std::string();
}

std::vector<std::string> strs(const YAML::Node& n, const char* key) {
  std::vector<std::string> out;
  if (n[key])
    for (const auto& w : n[key]) out.push_back(w.as<std::string>());
  return out;
}

std::vector<std::string> split_pointer(std::string_view p) {
  std::vector<std::string> out;
  size_t i = p.starts_with('/') ? 1 : 0;
  if (p.size() <= i) return out;
  while (true) {
    const size_t j = p.find('/', i);
    out.emplace_back(p.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return out;
}

std::string escape_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool segment_matches(const std::string& seg, const std::string& pattern) {
  return pattern == seg || (pattern == "*" && is_index(seg)) || (seg == "*" && is_index(pattern));
}

/// Whether one path is at or under the other: a change there touches the rule's field.
bool overlaps(std::string_view a, std::string_view b) { return path_under(a, b) || path_under(b, a); }

const json* at(const json& obj, const std::string& pointer) {
  const json* cur = &obj;
  for (const auto& raw : split_pointer(pointer)) {
    std::string seg;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size()) {
        seg += raw[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        seg += raw[i];
      }
    }
    if (cur->is_object()) {
      auto it = cur->find(seg);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array() && is_index(seg)) {
      const size_t i = std::stoul(seg);
      if (i >= cur->size()) return nullptr;
      cur = &(*cur)[i];
    } else {
      return nullptr;
    }
  }
  return cur;
}

std::string value_at(const json& obj, const std::string& pointer) {
  const json* v = at(obj, pointer);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

void leaves(const json& v, const std::string& prefix, std::vector<std::string>& out) {
  if (v.is_object() && !v.empty()) {
    for (auto it = v.begin(); it != v.end(); ++it) leaves(it.value(), prefix + "/" + escape_token(it.key()), out);
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i) leaves(v[i], fmt::format("{}/{}", prefix, i), out);
  } else {
    out.push_back(prefix);
  }
}

void diff(const json* a, const json* b, const std::string& prefix, std::vector<std::string>& out) {
  if (a && b && *a == *b) return;
  if (!a && !b) return;
  if (a && b && a->is_object() && b->is_object()) {
    std::vector<std::string> keys;
    for (auto it = a->begin(); it != a->end(); ++it) keys.push_back(it.key());
    for (auto it = b->begin(); it != b->end(); ++it)
      if (!a->contains(it.key())) keys.push_back(it.key());
    std::sort(keys.begin(), keys.end());
    for (const auto& k : keys) {
      auto ia = a->find(k);
      auto ib = b->find(k);
      diff(ia == a->end() ? nullptr : &*ia, ib == b->end() ? nullptr : &*ib, prefix + "/" + escape_token(k), out);
    }
    return;
  }
  if (a && b && a->is_array() && b->is_array()) {
    for (size_t i = 0; i < std::max(a->size(), b->size()); ++i)
      diff(i < a->size() ? &(*a)[i] : nullptr, i < b->size() ? &(*b)[i] : nullptr, fmt::format("{}/{}", prefix, i),
           out);
    return;
  }
  // One side absent or of another type: every leaf either side has here changed.
  const size_t before = out.size();
  if (a && a->is_structured()) leaves(*a, prefix, out);
  if (b && b->is_structured()) leaves(*b, prefix, out);
  if ((a && !a->is_structured()) || (b && !b->is_structured()) || out.size() == before) out.push_back(prefix);
}

}  // namespace

nlohmann::json manifest_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) {
        json v = manifest_json(kv.second);
        if (!v.is_null()) out[kv.first.as<std::string>()] = std::move(v);
      }
      return out.empty() ? json() : out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(manifest_json(item));
      return out.empty() ? json() : out;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = node.Scalar();
      if (s.empty() || (node.Tag() == "?" && (s == "~" || s == "null" || s == "Null" || s == "NULL"))) return json();
      return s;
    }
    default:
      return json();
  }
}

std::string ObjectKey::describe() const {
  return ns.empty() ? fmt::format("{} {}", kind, name) : fmt::format("{} {}/{}", kind, ns, name);
}

ObjectKey object_key(const json& obj) {
  ObjectKey k;
  const std::string api = value_at(obj, "/apiVersion");
  const size_t slash = api.find('/');
  k.group = slash == std::string::npos ? "" : api.substr(0, slash);
  k.kind = value_at(obj, "/kind");
  k.ns = value_at(obj, "/metadata/namespace");
  k.name = value_at(obj, "/metadata/name");
  return k;
}

const char* action_name(UpdateVerdict::Action a) {
  switch (a) {
    case UpdateVerdict::Action::unchanged: return "unchanged";
    case UpdateVerdict::Action::update: return "update";
    case UpdateVerdict::Action::roll: return "roll";
    case UpdateVerdict::Action::replace: return "replace";
    case UpdateVerdict::Action::rerun: return "rerun";
  }
  return "unchanged";
}

bool path_under(std::string_view path, std::string_view pattern) {
  const auto p = split_pointer(path), q = split_pointer(pattern);
  if (q.size() > p.size()) return false;
  for (size_t i = 0; i < q.size(); ++i)
    if (!segment_matches(p[i], q[i])) return false;
  return true;
}

std::vector<std::string> changed_paths(const json& old, const json& neu) {
  std::vector<std::string> out;
  diff(&old, &neu, "", out);
  return out;
}

UpdateRules UpdateRules::parse(const std::string& yaml_text) {
  const YAML::Node root = read_yaml_tree(yaml_text);
  UpdateRules r;
  for (const auto& k : root["kinds"]) {
    Kind kind;
    const std::string group = str(k, "group"), name = str(k, "kind");
    if (name.empty()) throw std::runtime_error("immutable: a kind without `kind`");
    kind.source = str(k, "source");
    kind.lost = str(k, "lost");
    kind.not_judged = str(k, "notJudged");
    kind.rerun_on_change = str(k, "rerunOnChange");
    kind.roll = strs(k, "roll");
    if (const auto r = k["rollOnlyIf"]) {
      kind.roll_if_path = str(r, "path");
      kind.roll_if_equals = str(r, "equals");
      kind.roll_otherwise = str(r, "otherwise");
    }
    if (kind.source.empty() && kind.not_judged.empty())
      throw std::runtime_error(fmt::format("immutable: kind '{}' needs a source", name));
    for (const auto& n : k["immutable"]) {
      Rule rule;
      rule.path = str(n, "path");
      rule.source = str(n, "source");
      if (rule.path.empty() || rule.source.empty())
        throw std::runtime_error(fmt::format("immutable: a rule of kind '{}' needs path and source", name));
      rule.except = strs(n, "except");
      if (const auto s = n["whileSuspended"]) {
        rule.suspended_when = str(s, "when");
        rule.suspended_allow = strs(s, "allow");
        if (rule.suspended_when != "before" && rule.suspended_when != "beforeOrAfter")
          throw std::runtime_error(fmt::format("immutable: {} {}: whileSuspended.when must be before or beforeOrAfter",
                                               name, rule.path));
      }
      if (const auto c = n["ifOld"]) {
        rule.if_old_path = str(c, "path");
        rule.if_old_has_equals = static_cast<bool>(c["equals"]);
        rule.if_old_equals = str(c, "equals");
      }
      rule.new_sets = n["newSets"] && n["newSets"].as<std::string>() == "true";
      if (const auto t = n["tandem"]) {
        rule.tandem_with = str(t, "with");
        rule.tandem_when = str(t, "when");
        rule.tandem_equals = str(t, "equals");
      }
      kind.rules.push_back(std::move(rule));
    }
    r.kinds_.push_back({{group, name}, std::move(kind)});
  }
  for (const auto& k : root["mutable"]) {
    Kind kind;
    kind.mutable_kind = true;
    r.kinds_.push_back({{str(k, "group"), str(k, "kind")}, std::move(kind)});
  }
  const YAML::Node pools = root["pools"];
  r.pools_.resize = strs(pools, "resize");
  r.pools_.update = strs(pools, "update");
  r.pools_.replace = strs(pools, "replace");
  r.pools_.lost = str(pools, "lost");
  r.pools_.source = str(pools, "source");
  return r;
}

const UpdateRules::Kind* UpdateRules::find(const std::string& group, const std::string& kind) const {
  for (const auto& [key, k] : kinds_)
    if (key.first == group && key.second == kind) return &k;
  return nullptr;
}

std::string UpdateRules::lost(const std::string& group, const std::string& kind) const {
  const Kind* k = find(group, kind);
  return k ? k->lost : "";
}

std::string UpdateRules::source(const std::string& group, const std::string& kind) const {
  const Kind* k = find(group, kind);
  return k ? k->source : "";
}

bool UpdateRules::rolls(const std::string& group, const std::string& kind) const {
  const Kind* k = find(group, kind);
  return k && !k->roll.empty();
}

std::string UpdateRules::roll_caveat(const std::string& group, const std::string& kind) const {
  const Kind* k = find(group, kind);
  return k ? k->roll_otherwise : "";
}

std::vector<std::pair<std::string, std::string>> UpdateRules::immutable_fields(const std::string& group,
                                                                               const std::string& kind) const {
  std::vector<std::pair<std::string, std::string>> out;
  if (const Kind* k = find(group, kind))
    for (const auto& r : k->rules) out.emplace_back(r.path, r.source);
  return out;
}

UpdateVerdict UpdateRules::judge(const json& old, const json& neu) const {
  using A = UpdateVerdict::Action;
  UpdateVerdict v;
  v.changed = changed_paths(old, neu);
  if (v.changed.empty()) return v;
  const ObjectKey key = object_key(neu);
  const Kind* kind = find(key.group, key.kind);
  v.action = A::update;
  if (!kind) {
    v.why = "no update rules known for this kind: not judged";
    return v;
  }
  if (!kind->not_judged.empty()) {
    v.why = kind->not_judged;
    return v;
  }
  // Suspended and never started: trainc's manifest says so and Kueue does not manage it (Kueue
  // suspends what it manages and starts it once admitted, so such a workload is taken as running).
  const bool kueue = at(old, "/metadata/labels/kueue.x-k8s.io~1queue-name") != nullptr;
  const bool before = value_at(old, "/spec/suspend") == "true" && !kueue;
  const std::string old_s = value_at(old, "/spec/suspend"), new_s = value_at(neu, "/spec/suspend");
  const bool after = old_s != new_s ? new_s == "true" : before;
  for (const auto& rule : kind->rules) {
    if (!rule.if_old_path.empty()) {
      const json* o = at(old, rule.if_old_path);
      if (!o || (rule.if_old_has_equals && (!o->is_string() || o->get<std::string>() != rule.if_old_equals))) continue;
    }
    if (rule.new_sets && !at(neu, rule.path)) continue;
    std::vector<std::string> hit;
    for (const auto& c : v.changed) {
      if (!overlaps(c, rule.path)) continue;
      if (std::any_of(rule.except.begin(), rule.except.end(), [&](const auto& e) { return path_under(c, e); })) continue;
      const bool suspended = rule.suspended_when == "before" ? before : rule.suspended_when == "beforeOrAfter" && (before || after);
      if (suspended && std::any_of(rule.suspended_allow.begin(), rule.suspended_allow.end(),
                                   [&](const auto& e) { return path_under(c, e); }))
        continue;
      hit.push_back(c);
    }
    if (hit.empty()) continue;
    if (!rule.tandem_with.empty() && value_at(old, rule.tandem_when) == rule.tandem_equals &&
        value_at(old, rule.tandem_with) != value_at(neu, rule.tandem_with) &&
        value_at(neu, rule.tandem_with) == value_at(neu, rule.path))
      continue;
    v.refused.push_back({rule.path, hit.front(), rule.source});
  }
  if (!v.refused.empty()) {
    v.action = A::replace;
    v.lost = kind->lost;
    return v;
  }
  if (!kind->rerun_on_change.empty()) {
    v.action = A::rerun;
    v.why = kind->rerun_on_change;
    return v;
  }
  for (const auto& r : kind->roll)
    if (std::any_of(v.changed.begin(), v.changed.end(), [&](const auto& c) { return path_under(c, r); }))
      v.rolled.push_back(r);
  if (v.rolled.empty()) return v;
  if (!kind->roll_if_path.empty() && value_at(neu, kind->roll_if_path) != kind->roll_if_equals) {
    v.why = kind->roll_otherwise;
    return v;
  }
  v.action = A::roll;
  return v;
}

const UpdateRules& update_rules() {
  static const UpdateRules r = [] {
    const auto* f = find_embedded("stdlib/immutable.yaml");
    if (!f) throw std::logic_error("stdlib/immutable.yaml is not embedded");
    return UpdateRules::parse(std::string(f->data));
  }();
  return r;
}

}  // namespace trainc::k8s
