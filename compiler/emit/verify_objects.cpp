#include "emit/verify_objects.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "base/data_path.h"
#include "base/embedded.h"

namespace trainc {
namespace {

using json = nlohmann::json;

constexpr std::string_view kSchemaFile = "compiler/k8s-objects.schemas.jsonl";

// ------------------------------------------------------------------ YAML as the API server reads it

bool all_of(std::string_view s, std::string_view allowed) {
  return !s.empty() && s.find_first_not_of(allowed) == std::string_view::npos;
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, go-yaml v2's float syntax.
bool yaml_float_syntax(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t digits = 0;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t frac = 0;
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac;
    if (digits == 0 && frac == 0) return false;
  } else if (digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp = 0;
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp;
    if (exp == 0) return false;
  }
  return i == s.size();
}

/// A plain (unquoted) scalar resolved as go-yaml v2 (YAML 1.1) resolves it when decoding into
/// interface{}: sigs.k8s.io/yaml, and so kubectl and the API server, read manifests this way.
json resolve_plain_11(const std::string& s) {
  static const std::map<std::string_view, bool> bools = {
      {"y", true},      {"Y", true},    {"yes", true},  {"Yes", true}, {"YES", true},    {"true", true},
      {"True", true},   {"TRUE", true}, {"on", true},   {"On", true},  {"ON", true},     {"n", false},
      {"N", false},     {"no", false},  {"No", false},  {"NO", false}, {"false", false}, {"False", false},
      {"FALSE", false}, {"off", false}, {"Off", false}, {"OFF", false}};
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (auto it = bools.find(s); it != bools.end()) return it->second;
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf" || s == "+.Inf" || s == "+.INF" || s == "-.inf" ||
      s == "-.Inf" || s == "-.INF" || s == ".nan" || s == ".NaN" || s == ".NAN")
    return s;  // not representable in JSON; the schema then sees text, which no numeric field accepts
  const char c = s[0];
  if (!(isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) return s;
  std::string plain;
  for (char ch : s)
    if (ch != '_') plain += ch;
  std::string_view body = plain;
  const bool negative = !body.empty() && body[0] == '-';
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) body.remove_prefix(1);
  int base = 10;
  std::string_view digits = body;
  if (body.starts_with("0b"))
    base = 2, digits.remove_prefix(2);
  else if (body.starts_with("0x"))
    base = 16, digits.remove_prefix(2);
  else if (body.size() > 1 && body[0] == '0')
    base = 8, digits.remove_prefix(1);
  const std::string_view allowed = base == 2    ? "01"
                                   : base == 8  ? "01234567"
                                   : base == 16 ? "0123456789abcdefABCDEF"
                                                : "0123456789";
  if (all_of(digits, allowed)) {
    errno = 0;
    const std::string d(digits);
    const unsigned long long v = std::strtoull(d.c_str(), nullptr, base);
    if (errno == 0) {
      if (!negative && v <= static_cast<unsigned long long>(INT64_MAX)) return static_cast<int64_t>(v);
      if (negative && v <= static_cast<unsigned long long>(INT64_MAX) + 1) return static_cast<int64_t>(0 - v);
      if (!negative) return static_cast<uint64_t>(v);
    }
  }
  if (yaml_float_syntax(plain)) return std::strtod(plain.c_str(), nullptr);
  return s;
}

/// Builds JSON straight from libyaml's parse events: plain scalars typed by resolve_plain_11,
/// quoted and block scalars strings, `key: null` dropped. libyaml is the parser go-yaml, and so
/// kubectl and the API server, was ported from.
class JsonBuilder {
 public:
  std::vector<json> docs;

  void scalar(std::string value, bool plain) {
    json v = plain ? resolve_plain_11(value) : json(value);
    add(std::move(v), std::move(value));
  }
  void open(json v) {
    if (stack_.size() >= 200)
      throw InvalidObjectError("an emitted Kubernetes object is nested more than 200 levels deep");
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key)
      throw InvalidObjectError("an emitted Kubernetes manifest has a mapping or list as a key");
    stack_.push_back({std::move(v), {}, false});
  }
  void close() {
    json v = std::move(stack_.back().value);
    stack_.pop_back();
    add(std::move(v), "");
  }

 private:
  struct Frame {
    json value;
    std::string key;
    bool have_key = false;
  };
  std::vector<Frame> stack_;

  void add(json v, std::string text) {
    if (stack_.empty()) {
      if (!v.is_null()) docs.push_back(std::move(v));
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(v));
    } else if (!top.have_key) {
      top.key = std::move(text);
      top.have_key = true;
    } else {
      if (!v.is_null()) top.value[top.key] = std::move(v);  // the API server ignores `key: null`
      top.have_key = false;
    }
  }
};

// ------------------------------------------------------------------ schemas

/// The embedded schemas: a first line with the Kubernetes version and the kinds (each with its
/// definition and every definition that one refers to, directly or not), then one line per
/// definition. The first line is parsed once; "definitions" gains a definition the first time a
/// kind that needs it is parsed (load_definitions), so a compile parses only what its kinds use.
/// Only parse_kinds changes it, with the cache's lock held.
json& schema_doc() {
  static json doc = [] {
    const EmbeddedFile* f = find_embedded(kSchemaFile);
    if (!f) throw std::logic_error(fmt::format("{} is not embedded in this build", kSchemaFile));
    const std::string_view data = f->data;
    json d = json::parse(data.substr(0, data.find('\n')));
    d["definitions"] = json::object();
    return d;
  }();
  return doc;
}

/// Each definition's line in the embedded file, by name.
const std::map<std::string, std::string_view, std::less<>>& definition_lines() {
  static const auto lines = [] {
    std::map<std::string, std::string_view, std::less<>> out;
    std::string_view data = find_embedded(kSchemaFile)->data;
    data.remove_prefix(std::min(data.size(), data.find('\n') + 1));
    while (!data.empty()) {
      const size_t end = std::min(data.size(), data.find('\n'));
      const std::string_view line = data.substr(0, end);
      data.remove_prefix(std::min(data.size(), end + 1));
      if (line.size() < 4 || !line.starts_with("{\"")) continue;
      out.emplace(std::string(line.substr(2, line.find('"', 2) - 2)), line);
    }
    return out;
  }();
  return lines;
}

/// Parses the definitions named in `names` that are not loaded yet into schema_doc().
void load_definitions(const json& names) {
  json& defs = schema_doc()["definitions"];
  for (const auto& n : names) {
    const std::string name = n.get<std::string>();
    if (defs.contains(name)) continue;
    auto it = definition_lines().find(name);
    if (it == definition_lines().end()) throw std::logic_error(fmt::format("{}: no definition {}", kSchemaFile, name));
    json one = json::parse(it->second);
    defs[name] = std::move(one.begin().value());
  }
}

struct KindSchema {
  const valijson::Subschema* schema = nullptr;  ///< owned by one of SchemaCache::parsed
  std::string definition;
  std::string source;
};

/// Parsed schemas by "apiVersion kind". A schema, once parsed, is only read, by any thread.
struct SchemaCache {
  std::mutex mutex;
  std::vector<std::unique_ptr<valijson::Schema>> parsed;
  std::map<std::string, std::unique_ptr<KindSchema>, std::less<>> kinds;  ///< nullptr: no schema
};

SchemaCache& cache() {
  static SchemaCache& c = *new SchemaCache;  // never destroyed: freeing the schemas only slowed exit
  return c;
}

/// Parses the schemas of those `keys` ("apiVersion kind") not parsed yet, all in one pass, so the
/// definitions they share (ObjectMeta, the Pod templates) are parsed once for them. Call with the
/// lock held.
void parse_kinds(SchemaCache& c, const std::set<std::string>& keys) {
  json& doc = schema_doc();
  const json& kinds = doc.at("kinds");
  // One root whose properties, one per kind, refer to the kinds' definitions: valijson resolves
  // the references against the document it parses, so the definitions are moved in beside them.
  json root = json::object();
  json& props = root["properties"] = json::object();
  for (const auto& key : keys) {
    if (c.kinds.count(key)) continue;
    auto it = kinds.find(key);
    if (it == kinds.end()) {
      c.kinds.emplace(key, nullptr);
      continue;
    }
    load_definitions(it->at("closure"));
    props[key] = {{"$ref", "#/definitions/" + it->at("definition").get<std::string>()}};
  }
  if (props.empty()) return;
  auto schema = std::make_unique<valijson::Schema>();
  json& defs = doc["definitions"];
  root["definitions"] = json::object();
  std::swap(root["definitions"], defs);
  try {
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(root);
    parser.populateSchema(adapter, *schema);
  } catch (...) {
    std::swap(root["definitions"], defs);
    throw;
  }
  std::swap(root["definitions"], defs);
  std::map<std::string, const valijson::Subschema*> found;
  valijson::Subschema::ApplyFunction collect = [&](const valijson::constraints::Constraint& constraint) {
    if (const auto* p = dynamic_cast<const valijson::constraints::PropertiesConstraint*>(&constraint))
      p->applyToProperties([&](const auto& name, const valijson::Subschema* sub) {
        found[std::string(name.c_str())] = sub;
        return true;
      });
    return true;
  };
  schema->apply(collect);
  for (const auto& [key, _] : props.items()) {
    auto ks = std::make_unique<KindSchema>();
    const json& k = kinds.at(key);
    ks->definition = k.at("definition").get<std::string>();
    ks->source = k.at("source").get<std::string>();
    ks->schema = found.at(key);
    c.kinds.emplace(key, std::move(ks));
  }
  c.parsed.push_back(std::move(schema));
}

/// The schema of `key`, parsed on first use; nullptr for a kind with no schema. Call with the lock held.
const KindSchema* kind_schema(SchemaCache& c, const std::string& key) {
  if (auto it = c.kinds.find(key); it != c.kinds.end()) return it->second.get();
  parse_kinds(c, {key});
  return c.kinds.at(key).get();
}

/// "apiVersion kind" of an object; "" when it has none.
std::string kind_key(const json& object) {
  if (!object.is_object() || !object.contains("apiVersion") || !object["apiVersion"].is_string() ||
      !object.contains("kind") || !object["kind"].is_string())
    return {};
  return fmt::format("{} {}", object["apiVersion"].get<std::string>(), object["kind"].get<std::string>());
}

// ------------------------------------------------------------------ messages

const json* follow_refs(const json* s) {
  const json& defs = schema_doc().at("definitions");
  for (int i = 0; s && s->is_object() && s->contains("$ref") && i < 32; ++i) {
    const std::string ref = (*s)["$ref"].get<std::string>();
    const std::string name = ref.substr(ref.rfind('/') + 1);
    auto it = defs.find(name);
    s = it == defs.end() ? nullptr : &*it;
  }
  return s;
}

/// The schema of the value at `ptr` (through properties, items and additionalProperties); nullptr
/// where that is not one schema.
const json* schema_at(const std::string& definition, const std::string& ptr) {
  const json* s = follow_refs(&schema_doc().at("definitions").at(definition));
  for (const auto& seg : ptr_segments(ptr)) {
    if (!s || !s->is_object()) return nullptr;
    if (s->contains("properties") && (*s)["properties"].contains(seg))
      s = &(*s)["properties"][seg];
    else if (s->contains("items"))
      s = &(*s)["items"];
    else if (s->contains("additionalProperties") && (*s)["additionalProperties"].is_object())
      s = &(*s)["additionalProperties"];
    else
      return nullptr;
    s = follow_refs(s);
  }
  return s;
}

std::string json_type(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::null:
      return "null";
    case json::value_t::number_float:
      return "number";
    default:
      return "integer";
  }
}

std::string shown(const json& v) {
  std::string text = v.is_structured() ? json_type(v) : v.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

/// The quoted word at the end of a valijson message ("... constraints: 'foo'.").
std::string last_quoted(const std::string& d) {
  const size_t end = d.rfind('\'');
  if (end == std::string::npos || end == 0) return {};
  const size_t begin = d.rfind('\'', end - 1);
  return begin == std::string::npos ? std::string() : d.substr(begin + 1, end - begin - 1);
}

struct Complaint {
  std::string ptr, message;
  bool wrapper = false;  ///< a summary valijson adds above a more specific error
};

Complaint complaint(const valijson::ValidationResults::Error& e, const json& obj, const std::string& definition) {
  Complaint c{context_to_ptr(e.context, obj), e.description};
  const std::string& d = e.description;
  const json* value = obj.contains(json::json_pointer(c.ptr)) ? &obj.at(json::json_pointer(c.ptr)) : nullptr;
  if (d.starts_with("Object contains a property that could not be validated")) {
    const std::string key = last_quoted(d);
    c.ptr = ptr_key(c.ptr, key);
    c.message = fmt::format("unknown field \"{}\"", key);
  } else if (d.starts_with("Missing required property")) {
    c.message = fmt::format("missing required field \"{}\"", last_quoted(d));
  } else if (d.starts_with("Value type not permitted")) {
    const json* s = schema_at(definition, c.ptr);
    std::string expected = s && s->contains("type") ? (*s)["type"].dump() : "another type";
    c.message = fmt::format("wrong type: expected {}, got {}", expected,
                            value ? fmt::format("{} {}", json_type(*value), shown(*value)) : "another");
  } else if (d.starts_with("Failed to match against any enum values")) {
    const json* s = schema_at(definition, c.ptr);
    c.message = fmt::format("{} is not one of {}", value ? shown(*value) : "the value",
                            s && s->contains("enum") ? (*s)["enum"].dump() : "the allowed values");
  } else if (d.starts_with("Failed to match regex")) {
    const json* s = schema_at(definition, c.ptr);
    c.message = fmt::format("{} does not match the pattern {}", value ? shown(*value) : "the value",
                            s && s->contains("pattern") ? (*s)["pattern"].get<std::string>() : "of the schema");
  } else {
    c.wrapper = d.starts_with("Failed to validate") || d.starts_with("Failed to match against any");
    if (value && !value->is_structured()) c.message += fmt::format(" (value {})", shown(*value));
  }
  return c;
}

std::string object_id(const json& obj) {
  auto str = [](const json& o, const char* k) {
    return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string("?");
  };
  const json meta = obj.is_object() && obj.contains("metadata") ? obj["metadata"] : json::object();
  return fmt::format("{}/{}", str(obj, "kind"), str(meta, "name"));
}

}  // namespace

std::string_view k8s_schema_version() {
  static const std::string version = schema_doc().at("kubernetes").get<std::string>();
  return version;
}

std::vector<nlohmann::json> k8s_documents(const std::string& yaml_text) {
  YamlEvents events(yaml_text);
  JsonBuilder builder;
  for (;;) {
    const yaml_event_t& e = events.next();
    switch (e.type) {
      case YAML_STREAM_END_EVENT:
        return std::move(builder.docs);
      case YAML_SCALAR_EVENT:
        builder.scalar(std::string(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length),
                       e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !e.data.scalar.tag);
        break;
      case YAML_SEQUENCE_START_EVENT:
        builder.open(json::array());
        break;
      case YAML_MAPPING_START_EVENT:
        builder.open(json::object());
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        builder.close();
        break;
      case YAML_ALIAS_EVENT:
        throw InvalidObjectError("an emitted Kubernetes manifest uses a YAML alias");
      default:  // stream and document starts, document ends
        break;
    }
  }
}

std::vector<ObjectProblem> verify_object(const json& object, const std::string& file) {
  std::vector<ObjectProblem> out;
  const std::string id = object_id(object);
  auto problem = [&](std::string ptr, std::string message, std::string schema) {
    out.push_back({file, id, std::move(ptr), std::move(message), std::move(schema)});
  };
  if (!object.is_object() || !object.contains("apiVersion") || !object["apiVersion"].is_string() ||
      !object.contains("kind") || !object["kind"].is_string()) {
    problem("", "a Kubernetes object needs apiVersion and kind (strings)", "");
    return out;
  }
  const std::string key =
      fmt::format("{} {}", object["apiVersion"].get<std::string>(), object["kind"].get<std::string>());
  const KindSchema* ks = nullptr;
  {
    SchemaCache& c = cache();
    std::lock_guard lock(c.mutex);
    ks = kind_schema(c, key);
  }
  if (!ks) {
    problem(
        "",
        fmt::format("no schema for apiVersion \"{}\" kind \"{}\" (Kubernetes {} and the CRDs under schemas/crds); "
                    "list the kind in schemas/k8s/kinds.txt",
                    object["apiVersion"].get<std::string>(), object["kind"].get<std::string>(), k8s_schema_version()),
        "");
    return out;
  }
  // One validator per thread: it caches the patterns it compiles, and is not safe to share.
  thread_local valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(object);
  if (validator.validate(*ks->schema, target, &results)) return out;
  std::vector<Complaint> all;
  {
    // complaint() reads the definitions, which another thread's parse_kinds may be adding to.
    std::lock_guard lock(cache().mutex);
    valijson::ValidationResults::Error e;
    while (results.popError(e)) all.push_back(complaint(e, object, ks->definition));
  }
  std::vector<std::pair<std::string, std::string>> seen;
  for (const auto& cm : all) {
    if (cm.wrapper) {
      bool covered = false;
      for (const auto& o : all)
        if (!o.wrapper && (o.ptr == cm.ptr || o.ptr.starts_with(cm.ptr + "/"))) covered = true;
      if (covered) continue;
    }
    std::pair<std::string, std::string> k{cm.ptr, cm.message};
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
    seen.push_back(k);
    problem(cm.ptr, cm.message, ks->source);
  }
  return out;
}

std::vector<ObjectProblem> verify_objects(const OutputSink& files) {
  std::vector<ObjectProblem> out;
  std::vector<std::pair<std::string, json>> objects;  // file, object
  for (const auto& [path, text] : files.under("k8s/")) {
    if (!(path.ends_with(".yaml") || path.ends_with(".yml"))) continue;
    try {
      for (auto& doc : k8s_documents(text)) {
        // kustomization.yaml configures kubectl's kustomize; it is not sent to the API server.
        if (doc.is_object() && doc.value("apiVersion", "").starts_with("kustomize.config.k8s.io/")) continue;
        objects.emplace_back(path, std::move(doc));
      }
    } catch (const YamlSyntaxError& e) {
      out.push_back({path, "?", "", fmt::format("not valid YAML: {}", e.what()), ""});
    }
  }
  std::set<std::string> keys;
  for (const auto& [_, obj] : objects)
    if (auto key = kind_key(obj); !key.empty()) keys.insert(key);
  {
    SchemaCache& c = cache();
    std::lock_guard lock(c.mutex);
    parse_kinds(c, keys);
  }
  for (const auto& [path, obj] : objects) {
    auto problems = verify_object(obj, path);
    out.insert(out.end(), problems.begin(), problems.end());
  }
  return out;
}

void check_objects(const OutputSink& files) {
  const auto problems = verify_objects(files);
  if (problems.empty()) return;
  std::string text = fmt::format("{} emitted Kubernetes object field(s) do not match the schema the API server checks",
                                 problems.size());
  for (const auto& p : problems)
    text += fmt::format("\n  {} ({}) at {}: {}{}", p.object, p.file, p.path.empty() ? "/" : p.path, p.message,
                        p.schema.empty() ? "" : fmt::format(" [{}]", p.schema));
  throw InvalidObjectError(text);
}

}  // namespace trainc
