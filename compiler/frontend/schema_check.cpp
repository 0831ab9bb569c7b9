#include "frontend/schema_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "base/data_path.h"
#include "base/embedded.h"
#include "base/spelling.h"

namespace trainc {
namespace {

const nlohmann::json& schema_json() {
  static const nlohmann::json schema = nlohmann::json::parse(spec_schema_text());
  return schema;
}

const valijson::Schema& compiled_schema() {
  static const valijson::Schema* schema = [] {
    auto* s = new valijson::Schema;
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(schema_json());
    parser.populateSchema(adapter, *s);
    return s;
  }();
  return *schema;
}

const nlohmann::json* resolve(const nlohmann::json& root, const nlohmann::json* s) {
  for (int depth = 0; s && s->is_object() && s->contains("$ref") && depth < 16; ++depth) {
    std::string ref = (*s)["$ref"];
    if (ref.rfind("#", 0) != 0) return nullptr;
    nlohmann::json::json_pointer p(ref.substr(1));
    s = root.contains(p) ? &root.at(p) : nullptr;
  }
  return s;
}

std::string kind_name(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      return "a mapping";
    case nlohmann::json::value_t::array:
      return "a list";
    case nlohmann::json::value_t::string:
      return fmt::format("the string '{}'", v.get<std::string>());
    case nlohmann::json::value_t::boolean:
      return fmt::format("the boolean {}", v.dump());
    case nlohmann::json::value_t::null:
      return "nothing (null)";
    default:
      return fmt::format("the number {}", v.dump());
  }
}

std::string type_name(const std::string& t) {
  if (t == "object") return "a mapping";
  if (t == "array") return "a list";
  if (t == "integer") return "an integer";
  if (t == "boolean") return "a boolean (true or false)";
  return "a " + t;
}

std::string expected_types(const nlohmann::json* s) {
  if (!s || !s->contains("type")) return "a different type";
  const auto& t = (*s)["type"];
  if (t.is_string()) return type_name(t);
  std::vector<std::string> names;
  for (const auto& x : t) names.push_back(type_name(x));
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? (i + 1 == names.size() ? " or " : ", ") : "") + names[i];
  return out;
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::vector<std::string> schema_keys(const nlohmann::json* s) {
  std::vector<std::string> keys;
  if (s && s->contains("properties"))
    for (const auto& [k, _] : (*s)["properties"].items()) keys.push_back(k);
  return keys;
}

const nlohmann::json* value_at(const nlohmann::json& doc, const std::string& ptr) {
  nlohmann::json::json_pointer p(ptr);
  return doc.contains(p) ? &doc.at(p) : nullptr;
}

bool starts_with(std::string_view s, std::string_view p) { return s.rfind(p, 0) == 0; }

/// "'gcs' or 's3'", for messages that list keys.
std::string quoted_list(const std::vector<std::string>& items, std::string_view last_sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += fmt::format("{}'{}'", i == 0 ? "" : i + 1 == items.size() ? last_sep : ", ", items[i]);
  return out;
}

/// How a message names the field at `ptr`: 'nodes', or an item of 'weights'.
std::string field_name(const std::string& ptr) {
  const auto segs = ptr_segments(ptr);
  if (segs.empty()) return "the document";
  const std::string& last = segs.back();
  const bool index = std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (index && segs.size() >= 2) return fmt::format("an item of '{}'", segs[segs.size() - 2]);
  return fmt::format("'{}'", last);
}

/// "99999999999 is above the maximum of 1000 for 'nodes' (why)": the limit as the schema writes it
/// (valijson prints "1000.000000") and the schema's reason for it.
std::string above_maximum(const std::string& d, const std::string& printed, const nlohmann::json* sub,
                          const nlohmann::json* val, const std::string& ptr) {
  const bool exclusive = !starts_with(d, "Expected number less than or equal to");
  const char* key = exclusive ? "exclusiveMaximum" : "maximum";
  const std::string limit = sub && sub->contains(key) && (*sub)[key].is_number() ? (*sub)[key].dump() : printed;
  const std::string reason = sub && sub->contains("x-maximum-reason")
                                 ? fmt::format(" ({})", (*sub)["x-maximum-reason"].get<std::string>())
                                 : "";
  const std::string v = val ? value_text(*val) : "the value";
  if (exclusive) return fmt::format("{} is too large for {}; it must be below {}{}", v, field_name(ptr), limit, reason);
  return fmt::format("{} is above the maximum of {} for {}{}", v, limit, field_name(ptr), reason);
}

struct Translated {
  std::string ptr;
  std::string message;
  Anchor anchor = Anchor::value;
  bool wrapper = false;  ///< a summary valijson adds above a more specific error
  std::string missing;   ///< for "missing required key": the key
  std::string unknown;   ///< for "unknown key": the key
};

Translated translate(const valijson::ValidationResults::Error& e, const Document& doc) {
  static const std::regex quoted("'([^']*)'\\.?$");               // the last quoted word: the key
  static const std::regex number("(-?[0-9]+(\\.[0-9]*[1-9])?)");  // "65535.000000" -> 65535
  static const std::regex duplicate("^Elements at indexes #([0-9]+) and #([0-9]+)");
  const nlohmann::json& schema = schema_json();
  Translated t;
  t.ptr = context_to_ptr(e.context, doc.root);
  const std::string& d = e.description;
  const nlohmann::json* sub = subschema_at(schema, doc.root, t.ptr);
  const nlohmann::json* val = value_at(doc.root, t.ptr);
  std::smatch m;
  if (starts_with(d, "Object contains a property that could not be validated") && std::regex_search(d, m, quoted)) {
    std::string key = m[1];
    std::string where = t.ptr.empty() ? "at the top level" : fmt::format("in {}", ptr_display(t.ptr));
    t.message = fmt::format("unknown key '{}' {}{}", key, where, did_you_mean(key, schema_keys(sub)));
    if (did_you_mean(key, schema_keys(sub)).empty() && !schema_keys(sub).empty()) {
      auto keys = schema_keys(sub);
      std::string list;
      for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
      t.message += fmt::format("; expected one of: {}", list);
    }
    t.unknown = key;
    t.ptr = ptr_key(t.ptr, key);
    t.anchor = Anchor::key;
  } else if (starts_with(d, "Missing required property") && std::regex_search(d, m, quoted)) {
    t.missing = m[1];
    t.message = fmt::format("missing required key '{}'{}", m[1].str(),
                            t.ptr.empty() ? "" : fmt::format(" in {}", ptr_display(t.ptr)));
    t.anchor = Anchor::key;
  } else if (starts_with(d, "Value type not permitted")) {
    t.message = fmt::format("expected {}, found {}", expected_types(sub), val ? kind_name(*val) : "something else");
  } else if (starts_with(d, "Failed to match against any enum values") && sub && sub->contains("enum")) {
    std::vector<std::string> options;
    for (const auto& o : (*sub)["enum"]) options.push_back(value_text(o));
    std::string v = val ? value_text(*val) : "";
    std::string list;
    for (const auto& o : options) list += (list.empty() ? "" : ", ") + o;
    std::string hint = did_you_mean(v, options);
    t.message = hint.empty() ? fmt::format("'{}' is not allowed here; expected one of: {}", v, list)
                             : fmt::format("'{}' is not allowed here{}", v, hint);
  } else if (starts_with(d, "Failed to match regex specified by 'pattern'")) {
    std::string v = val ? value_text(*val) : "";
    if (sub && sub->contains("x-pattern-hint"))
      t.message = fmt::format("'{}' is not {}", v, (*sub)["x-pattern-hint"].get<std::string>());
    else
      t.message = fmt::format("'{}' does not match the pattern {}", v,
                              sub && sub->contains("pattern") ? (*sub)["pattern"].get<std::string>() : "");
  } else if (starts_with(d, "Expected number greater than or equal to") && std::regex_search(d, m, number)) {
    t.message = fmt::format("{} is too small; the minimum is {}", val ? value_text(*val) : "value", m[1].str());
  } else if (starts_with(d, "Expected number greater than") && std::regex_search(d, m, number)) {
    t.message = fmt::format("{} is too small; it must be above {}", val ? value_text(*val) : "value", m[1].str());
  } else if (starts_with(d, "Expected number less than") && std::regex_search(d, m, number)) {
    t.message = above_maximum(d, m[1].str(), sub, val, t.ptr);
  } else if (starts_with(d, "String should be no more than") && std::regex_search(d, m, number)) {
    t.message = fmt::format("'{}' is longer than {} characters", val ? value_text(*val) : "", m[1].str());
  } else if (starts_with(d, "String should be no fewer than") && std::regex_search(d, m, number)) {
    t.message = fmt::format("the value must be at least {} character(s) long", m[1].str());
  } else if (starts_with(d, "Array should contain no fewer than") && std::regex_search(d, m, number)) {
    t.message = fmt::format("the list needs at least {} item(s)", m[1].str());
  } else if (starts_with(d, "Array should contain no more than") && std::regex_search(d, m, number)) {
    t.message = fmt::format(
        "{} holds {} items; at most {} are allowed{}", field_name(t.ptr), val ? val->size() : 0, m[1].str(),
        sub && sub->contains("x-maximum-reason") ? fmt::format(" ({})", (*sub)["x-maximum-reason"].get<std::string>())
                                                 : "");
  } else if (starts_with(d, "Object should have no more than") && std::regex_search(d, m, number) && m[1] != "1") {
    t.message = fmt::format(
        "{} holds {} entries; at most {} are allowed{}", field_name(t.ptr), val ? val->size() : 0, m[1].str(),
        sub && sub->contains("x-maximum-reason") ? fmt::format(" ({})", (*sub)["x-maximum-reason"].get<std::string>())
                                                 : "");
    t.anchor = Anchor::key;
  } else if (std::regex_search(d, m, duplicate) && val && val->is_array()) {
    // Point at the second copy: the first is where the user meant it.
    const size_t second = std::stoul(m[2]);
    t.message = second < val->size() ? fmt::format("'{}' is already listed in {}; remove the duplicate",
                                                   value_text((*val)[second]), field_name(t.ptr))
                                     : "the list holds the same item twice; remove the duplicate";
    t.ptr = ptr_index(t.ptr, second);
  } else if (starts_with(d, "Object should have no more than 1 propert") && !schema_keys(sub).empty()) {
    t.message = fmt::format("give only one of {}", quoted_list(schema_keys(sub), " and "));
    t.anchor = Anchor::key;
  } else if (starts_with(d, "Object should have no fewer than 1 propert") && !schema_keys(sub).empty()) {
    t.message = fmt::format("give one of {}", quoted_list(schema_keys(sub), " or "));
    t.anchor = Anchor::key;
  } else {
    // Summaries such as "Failed to validate item #0 in array." repeat a deeper error.
    t.wrapper = starts_with(d, "Failed to validate") || starts_with(d, "Failed to match against any") ||
                starts_with(d, "Object contains a property name");
    std::string lowered = d;
    if (!lowered.empty()) lowered[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(lowered[0])));
    if (!lowered.empty() && lowered.back() == '.') lowered.pop_back();
    t.message = lowered;
  }
  return t;
}

/// The compiled regex of a schema's key pattern, compiled once per thread (driver.h's compile_many
/// checks specs on several).
const std::regex& key_pattern(const std::string& pattern) {
  thread_local std::map<std::string, std::regex, std::less<>> compiled;
  auto it = compiled.find(pattern);
  if (it == compiled.end()) it = compiled.emplace(pattern, std::regex(pattern)).first;
  return it->second;
}

/// valijson checks 'propertyNames' but reports nothing about which key failed: check map keys here.
void check_keys(const nlohmann::json& schema, const Document& doc, const nlohmann::json& node, const std::string& ptr,
                std::vector<Translated>& out) {
  if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) check_keys(schema, doc, node[i], ptr_index(ptr, i), out);
    return;
  }
  if (!node.is_object()) return;
  const nlohmann::json* sub = subschema_at(schema, doc.root, ptr);
  const nlohmann::json* names =
      sub && sub->contains("propertyNames") ? resolve(schema, &(*sub)["propertyNames"]) : nullptr;
  for (const auto& [key, child] : node.items()) {
    std::string cptr = ptr_key(ptr, key);
    if (names && names->contains("pattern")) {
      const std::regex& re = key_pattern((*names)["pattern"].get<std::string>());
      const size_t max_len = names->value("maxLength", std::string::npos);
      if (!std::regex_search(key, re) || key.size() > max_len) {
        std::string hint = names->value("x-pattern-hint", "a valid key here");
        out.push_back({cptr, fmt::format("key '{}' is not {}", key, hint), Anchor::key, false, "", ""});
      }
    }
    check_keys(schema, doc, child, cptr, out);
  }
}

}  // namespace

std::string_view spec_schema_text() {
  const auto* f = find_embedded("schemas/trainc.v1.schema.json");
  return f ? f->data : std::string_view("{}");
}

const nlohmann::json* subschema_at(const nlohmann::json& schema, const nlohmann::json& doc, std::string_view ptr) {
  const nlohmann::json* s = resolve(schema, &schema);
  const nlohmann::json* node = &doc;
  for (const auto& seg : ptr_segments(ptr)) {
    if (!s) return nullptr;
    const nlohmann::json* next = nullptr;
    if (node && node->is_array()) {
      if (s->contains("items")) next = &(*s)["items"];
      size_t idx = std::stoul(seg);
      node = idx < node->size() ? &(*node)[idx] : nullptr;
    } else {
      if (s->contains("properties") && (*s)["properties"].contains(seg))
        next = &(*s)["properties"][seg];
      else if (s->contains("additionalProperties") && (*s)["additionalProperties"].is_object())
        next = &(*s)["additionalProperties"];
      node = node && node->is_object() && node->contains(seg) ? &(*node)[seg] : nullptr;
    }
    s = resolve(schema, next);
  }
  return s;
}

namespace {

/// Every schema error in `doc`, translated, without the summaries and repeats that a more specific
/// error covers.
std::vector<Translated> schema_errors(const Document& doc) {
  // One validator per thread: it caches the patterns it compiles, and compiling them again for
  // every spec was a tenth of a check's time; the cache is not safe to share between threads.
  thread_local valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(doc.root);
  if (validator.validate(compiled_schema(), target, &results)) return {};
  std::vector<Translated> all, out;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) all.push_back(translate(e, doc));
  check_keys(schema_json(), doc, doc.root, "", all);
  for (const auto& t : all) {
    // A misspelled required key is one mistake, not two: the unknown-key error suggests it.
    if (!t.missing.empty()) {
      bool misspelled = std::any_of(all.begin(), all.end(), [&](const Translated& o) {
        return !o.unknown.empty() && ptr_parent(o.ptr) == t.ptr && suggest(o.unknown, {t.missing}) == t.missing;
      });
      if (misspelled) continue;
    }
    if (t.wrapper) {
      bool covered = std::any_of(all.begin(), all.end(), [&](const Translated& o) {
        return !o.wrapper && (o.ptr == t.ptr || starts_with(o.ptr, t.ptr + "/"));
      });
      if (covered) continue;
    }
    out.push_back(t);
  }
  return out;
}

/// Erases the member at `ptr` from `root`, if it is there.
void erase_at(nlohmann::json& root, const std::string& ptr) {
  nlohmann::json::json_pointer p(ptr);
  if (ptr.empty() || !root.contains(p)) return;
  nlohmann::json& parent = root.at(p.parent_pointer());
  if (parent.is_object()) parent.erase(p.back());
}

/// `doc` with its pruned entities taken out, for validating what is left. Pipeline items keep their
/// places through `index`: position in the copy -> position in `doc`.
Document without_pruned(const Document& doc, std::vector<size_t>& index) {
  Document rest{doc.file, doc.root, {}, {}, {}};
  index.clear();
  for (const auto& e : doc.pruned) {
    if (!e.starts_with("/pipeline/")) erase_at(rest.root, e);
  }
  if (rest.root.contains("pipeline") && rest.root["pipeline"].is_array()) {
    nlohmann::json kept = nlohmann::json::array();
    for (size_t i = 0; i < rest.root["pipeline"].size(); ++i) {
      if (doc.pruned.count(ptr_index("/pipeline", i))) continue;
      kept.push_back(std::move(rest.root["pipeline"][i]));
      index.push_back(i);
    }
    rest.root["pipeline"] = std::move(kept);
  }
  return rest;
}

/// Maps a pointer into without_pruned's copy back to `doc`.
std::string original_ptr(const std::string& ptr, const std::vector<size_t>& index) {
  const auto segs = ptr_segments(ptr);
  if (segs.size() < 2 || segs[0] != "pipeline" || segs[1].empty() || segs[1].size() > 9 ||
      segs[1].find_first_not_of("0123456789") != std::string::npos)
    return ptr;
  const size_t i = std::stoul(segs[1]);
  std::string out = ptr_index("/pipeline", i < index.size() ? index[i] : i);
  for (size_t k = 2; k < segs.size(); ++k) out = ptr_key(out, segs[k]);
  return out;
}

/// Makes what validated usable after schema errors: an unknown key is dropped, and an entity (a
/// step, pool, store, compute cluster or service) holding any other error is pruned, so that
/// lowering and checks still run on the rest. False when an error lies outside every entity (in
/// `gcp`, say), which the rest may depend on.
bool recover(Document& doc, std::vector<Translated> errors) {
  for (const auto& t : errors) doc.invalid.insert(t.ptr);
  for (int round = 0; round < 4; ++round) {
    for (const auto& t : errors) {
      const std::string entity = entity_of(t.ptr);
      if (!t.unknown.empty() && round == 0) {
        erase_at(doc.root, t.ptr);
      } else if (!entity.empty()) {
        doc.pruned.insert(entity);
      } else {
        return false;
      }
    }
    std::vector<size_t> index;
    errors = schema_errors(without_pruned(doc, index));
    if (errors.empty()) return true;
    for (auto& t : errors) {
      t.ptr = original_ptr(t.ptr, index);
      t.unknown.clear();
    }
  }
  return false;
}

}  // namespace

void load_spec_schema() { compiled_schema(); }

SchemaVerdict check_schema(Document& doc, Diagnostics& diags) {
  auto errors = schema_errors(doc);
  if (errors.empty()) return SchemaVerdict::valid;
  for (const auto& t : errors) doc.error(diags, t.ptr, t.message, t.anchor);
  return recover(doc, std::move(errors)) ? SchemaVerdict::recovered : SchemaVerdict::invalid;
}

}  // namespace trainc
