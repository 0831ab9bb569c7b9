#include "inspect/explain.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "base/spelling.h"
#include "model/images.h"

namespace trainc {
namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxDepth = 16;  // the schema is not recursive; this only guards a broken one
constexpr std::string_view kAnyKey = "<name>";

/// `n` with its $ref (one level, to #/definitions/...) merged in; the node's own keys win.
json resolve(const json& schema, const json& n) {
  if (!n.is_object() || !n.contains("$ref")) return n;
  const std::string ref = n["$ref"].get<std::string>();
  const std::string prefix = "#/definitions/";
  json out = json::object();
  if (ref.starts_with(prefix) && schema.contains("definitions") &&
      schema["definitions"].contains(ref.substr(prefix.size())))
    out = resolve(schema, schema["definitions"][ref.substr(prefix.size())]);
  for (const auto& [k, v] : n.items())
    if (k != "$ref") out[k] = v;
  return out;
}

/// The node's `type` when it is one string; "" for none or a list of types.
std::string type_name(const json& n) {
  return n.contains("type") && n["type"].is_string() ? n["type"].get<std::string>() : "";
}

/// What holds the fields of `n`: arrays are looked through to their items.
json container(const json& schema, json n) {
  for (int i = 0; i < 4 && type_name(n) == "array" && n.contains("items"); ++i) n = resolve(schema, n["items"]);
  return n;
}

bool is_map(const json& n) {
  return !n.contains("properties") && n.contains("additionalProperties") && n["additionalProperties"].is_object();
}

std::string type_of(const json& schema, const json& raw) {
  const json n = resolve(schema, raw);
  const std::string t = type_name(n);
  if (t == "array") return "[]" + (n.contains("items") ? type_of(schema, n["items"]) : "any");
  if (t == "object") return is_map(n) ? "map[string]" + type_of(schema, n["additionalProperties"]) : "object";
  if (n.contains("type") && n["type"].is_array()) {
    std::vector<std::string> ts;
    for (const auto& x : n["type"]) ts.push_back(x.get<std::string>());
    return fmt::format("{}", fmt::join(ts, "|"));
  }
  return t.empty() ? "any" : t;
}

std::string scalar(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// Wraps `text` at 78 columns, every line indented by `indent`.
std::string wrap(const std::string& text, size_t indent) {
  std::string out, line;
  const std::string pad(indent, ' ');
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (!line.empty() && pad.size() + line.size() + 1 + word.size() > 78) {
      out += pad + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) out += pad + line + "\n";
  return out;
}

/// The description up to its first full stop, not counting the ones of "e.g." and "i.e.".
std::string first_sentence(const std::string& d) {
  for (size_t at = d.find(". "); at != std::string::npos; at = d.find(". ", at + 1)) {
    const std::string_view before = std::string_view(d).substr(0, at + 1);
    if (before.ends_with("e.g.") || before.ends_with("i.e.")) continue;
    return d.substr(0, at + 1);
  }
  return d;
}

struct Field {
  std::string name;
  json node;  ///< resolved
  bool required = false;
};

/// The fields directly under `n` (resolved, arrays looked through): properties, or a map's value.
std::vector<Field> fields(const json& schema, const json& n) {
  const json c = container(schema, n);
  std::vector<Field> out;
  if (c.contains("properties")) {
    std::vector<std::string> req;
    if (c.contains("required")) req = c["required"].get<std::vector<std::string>>();
    for (const auto& [k, v] : c["properties"].items())
      out.push_back({k, resolve(schema, v), std::find(req.begin(), req.end(), k) != req.end()});
  } else if (is_map(c)) {
    const json v = resolve(schema, c["additionalProperties"]);
    if (container(schema, v).contains("properties") || is_map(container(schema, v)))
      out.push_back({std::string(kAnyKey), v, false});
  }
  return out;
}

/// "pipeline[0].nodes" -> {"pipeline", "nodes"}: list indexes, as diagnostics print data paths,
/// are looked through like the lists themselves.
std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string_view::npos) end = path.size();
    std::string seg(path.substr(start, end - start));
    while (seg.size() > 2 && seg.back() == ']') {
      const size_t open = seg.rfind('[');
      if (open == std::string::npos || open == 0 || seg.find_first_not_of("0123456789", open + 1) != seg.size() - 1)
        break;
      seg.resize(open);
    }
    out.push_back(std::move(seg));
    start = end + 1;
  }
  return out;
}

/// The fields a path may name next under `n`: `fields`, or for a map of plain values (labels,
/// env) its `<name>`, since any key names a value there.
std::vector<Field> next_fields(const json& schema, const json& n) {
  std::vector<Field> fs = fields(schema, n);
  if (const json c = container(schema, n); fs.empty() && is_map(c))
    fs.push_back({std::string(kAnyKey), resolve(schema, c["additionalProperties"]), false});
  return fs;
}

/// A reading of a path's segments in which some maps' keys the path left out are put back.
struct Reading {
  std::vector<std::string> segments;  ///< the path's own, with `<name>` where a key was missing
  std::vector<std::string> maps;      ///< the segments a key was missing after
  int named = 0;                      ///< how many of the path's segments are fields, not keys
};

/// The reading of `segs[i..]` under `n` whose segments name the most fields, fewest `<name>`s put
/// back on a tie: `clusters.workers.resources` reads as `clusters.<name>.workers.<name>.resources`
/// rather than as the cluster `workers`. Each segment is a field, a map's key, or a field after a
/// map's key the path left out.
std::optional<Reading> best_reading(const json& schema, const json& n, const std::vector<std::string>& segs, size_t i,
                                    int depth) {
  if (i == segs.size()) return Reading{};
  if (depth > kMaxDepth) return std::nullopt;
  std::optional<Reading> best;
  const auto consider = [&](std::optional<Reading> r, std::vector<std::string> head, bool inserted, bool named) {
    if (!r) return;
    r->segments.insert(r->segments.begin(), head.begin(), head.end());
    if (inserted) r->maps.insert(r->maps.begin(), i == 0 ? "" : segs[i - 1]);
    r->named += named;
    if (!best || r->named > best->named || (r->named == best->named && r->maps.size() < best->maps.size()))
      best = std::move(r);
  };
  for (const auto& f : next_fields(schema, n)) {
    if (f.name == segs[i]) {
      consider(best_reading(schema, f.node, segs, i + 1, depth + 1), {segs[i]}, false, true);
    } else if (f.name == kAnyKey) {
      consider(best_reading(schema, f.node, segs, i + 1, depth + 1), {segs[i]}, false, false);
      for (const auto& g : fields(schema, f.node))
        if (g.name == segs[i])
          consider(best_reading(schema, g.node, segs, i + 1, depth + 2), {std::string(kAnyKey), segs[i]}, true, true);
    }
  }
  return best;
}

/// When `path` skipped maps' keys, says so and gives the path that works; "" otherwise.
std::string missing_key_error(const json& schema, std::string_view path) {
  const auto r = best_reading(schema, resolve(schema, schema), split(path), 0, 0);
  if (!r || r->maps.empty()) return "";
  std::vector<std::string> after;
  for (const auto& m : r->maps) after.push_back(m.empty() ? "the start" : fmt::format("'{}'", m));
  return fmt::format("'{}' skips a map's key: a {} segment is missing after {}; did you mean '{}'?", path, kAnyKey,
                     fmt::join(after, " and after "), fmt::join(r->segments, "."));
}

void tree(const json& schema, const json& n, int depth, std::string& out) {
  if (depth > kMaxDepth) return;
  for (const auto& f : fields(schema, n)) {
    out += fmt::format("{}{} <{}>{}\n", std::string(2 * depth, ' '), f.name, type_of(schema, f.node),
                       f.required ? " -required-" : "");
    tree(schema, f.node, depth + 1, out);
  }
}

void collect(const json& schema, const json& n, const std::string& prefix, int depth, std::vector<std::string>& out) {
  if (depth > kMaxDepth) return;
  for (const auto& f : fields(schema, n)) {
    const std::string path = prefix.empty() ? f.name : prefix + "." + f.name;
    out.push_back(path);
    collect(schema, f.node, path, depth + 1, out);
  }
}

/// What explain says of a field besides its type: DEFAULT, ALLOWED, FORMAT, RANGE, LENGTH, ITEMS,
/// ENTRIES, in that order, each when the schema gives it.
std::vector<std::pair<std::string, std::string>> facts(const json& schema, const json& node) {
  std::vector<std::pair<std::string, std::string>> out;
  const json leaf = container(schema, node);
  if (leaf.contains("default")) out.emplace_back("DEFAULT", scalar(leaf["default"]));
  if (leaf.contains("enum")) {
    std::vector<std::string> vs;
    for (const auto& v : leaf["enum"]) vs.push_back(scalar(v));
    out.emplace_back("ALLOWED", fmt::format("{}", fmt::join(vs, ", ")));
  }
  if (leaf.contains("x-pattern-hint")) out.emplace_back("FORMAT", leaf["x-pattern-hint"].get<std::string>());
  if (leaf.contains("minimum") || leaf.contains("maximum")) {
    std::string lo = leaf.contains("minimum") ? scalar(leaf["minimum"]) : "";
    std::string hi = leaf.contains("maximum") ? scalar(leaf["maximum"]) : "";
    out.emplace_back("RANGE", lo.empty() ? "at most " + hi : hi.empty() ? "at least " + lo : lo + " to " + hi);
  }
  if (leaf.contains("maxLength"))
    out.emplace_back("LENGTH", fmt::format("at most {} characters", scalar(leaf["maxLength"])));
  if (node.contains("maxItems")) out.emplace_back("ITEMS", fmt::format("at most {}", scalar(node["maxItems"])));
  if (node.contains("maxProperties") && node["maxProperties"] != 1)
    out.emplace_back("ENTRIES", fmt::format("at most {}", scalar(node["maxProperties"])));
  return out;
}

/// The bound x-maximum-reason gives the reason for: a value's maximum, else a map's most entries.
std::string bound_of(const json& leaf) {
  if (leaf.contains("maximum")) return scalar(leaf["maximum"]);
  if (leaf.contains("maxProperties")) return scalar(leaf["maxProperties"]);
  return "";
}

/// Whether `desc` states "at most N" itself, whatever its case and thousands separators.
bool states_bound(std::string_view desc, const std::string& n) {
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  std::string plain;
  for (size_t i = 0; i < desc.size(); ++i)
    if (desc[i] != ',' || i == 0 || i + 1 == desc.size() || !digit(desc[i - 1]) || !digit(desc[i + 1]))
      plain += static_cast<char>(std::tolower(static_cast<unsigned char>(desc[i])));
  const std::string said = "at most " + n;
  for (size_t at = plain.find(said); at != std::string::npos; at = plain.find(said, at + 1))
    if (at + said.size() == plain.size() || !digit(plain[at + said.size()])) return true;
  return false;
}

/// A field's description, ending with its maximum and the reason for it ("At most 16: ...") when
/// the description does not state them itself.
std::string description(const json& schema, const json& node) {
  const json leaf = container(schema, node);
  std::string desc = node.value("description", "");
  if (!leaf.contains("x-maximum-reason")) return desc;
  const std::string reason = leaf["x-maximum-reason"].get<std::string>();
  const std::string bound = bound_of(leaf);
  if (desc.find(reason) != std::string::npos || (!bound.empty() && states_bound(desc, bound))) return desc;
  if (!desc.empty()) desc += desc.ends_with('.') ? " " : ". ";
  std::string said = bound.empty() ? reason : fmt::format("At most {}: {}", bound, reason);
  if (bound.empty() && !said.empty()) said[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(said[0])));
  return desc + said + (said.ends_with('.') ? "" : ".");
}

/// One markdown table row per field under `n`, depth first, in schema order.
void reference_rows(const json& schema, const json& n, const std::string& prefix, std::string& out) {
  const auto cell = [](std::string text) {
    std::string esc;
    for (char c : text) esc += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
    return esc;
  };
  for (const auto& f : fields(schema, n)) {
    const std::string path = prefix.empty() ? f.name : prefix + "." + f.name;
    std::vector<std::string> fs;
    for (const auto& [label, value] : facts(schema, f.node)) {
      std::string l = label;
      std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
      fs.push_back(fmt::format("{}: {}", l, value));
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", path, cell(type_of(schema, f.node)), f.required ? "yes" : "",
                       cell(fmt::format("{}", fmt::join(fs, "; "))), cell(description(schema, f.node)));
    reference_rows(schema, f.node, path, out);
  }
}

/// Whether every segment of `segs` names a field or a map's key, from the top.
bool walks(const json& schema, const std::vector<std::string>& segs) {
  json node = resolve(schema, schema);
  for (const auto& seg : segs) {
    const std::vector<Field> fs = next_fields(schema, node);
    const auto next = std::find_if(fs.begin(), fs.end(), [&](const Field& f) { return f.name == seg || f.name == kAnyKey; });
    if (seg.empty() || next == fs.end()) return false;
    node = next->node;
  }
  return true;
}

}  // namespace

std::optional<std::string> explain(const json& schema, std::string_view path, bool recursive, std::string& error) {
  json node = resolve(schema, schema);
  bool required = false;
  std::string shown;  // the path as the schema names it, <name> for map keys
  if (!path.empty()) {
    std::string walked;
    std::vector<std::string> segs = split(path);
    // A segment read as a map's key that is also a field of the map's values is that field:
    // `cluster.pools.provisioning` is every pool's provisioning, not a pool named "provisioning".
    // (A path that only reads with keys put back in the middle is an error: missing_key_error.)
    if (const auto r = best_reading(schema, node, segs, 0, 0); r && !r->maps.empty() && walks(schema, segs))
      segs = r->segments;
    for (const auto& seg : segs) {
      if (seg.empty()) {
        error =
            fmt::format("'{}' is not a field path: use dot-separated keys such as pipeline.checkpoints.pattern", path);
        return std::nullopt;
      }
      const std::vector<Field> fs = next_fields(schema, node);
      const Field* next = nullptr;
      for (const auto& f : fs)
        if (f.name == seg || (f.name == kAnyKey)) next = &f;
      if (!next && !(error = missing_key_error(schema, path)).empty()) return std::nullopt;
      if (!next) {
        std::vector<std::string> names;
        for (const auto& f : fs) names.push_back(f.name);
        const std::string where = walked.empty() ? "the spec" : fmt::format("'{}'", walked);
        if (names.empty())
          error = fmt::format("'{}' has no fields: {} is a {}", seg, where, type_of(schema, node));
        else
          error = fmt::format("{} has no field '{}'{} Its fields: {}", where, seg,
                              did_you_mean(seg, names).empty() ? ";" : did_you_mean(seg, names), fmt::join(names, ", "));
        return std::nullopt;
      }
      shown += (shown.empty() ? "" : ".") + next->name;
      walked += (walked.empty() ? "" : ".") + seg;
      required = next->required;
      node = next->node;
    }
  }
  std::string out;
  out += fmt::format("FIELD:    {}\n", shown.empty() ? "(the spec)" : shown);
  out += fmt::format("TYPE:     {}\n", shown.empty() ? "object" : type_of(schema, node));
  if (!shown.empty()) out += fmt::format("REQUIRED: {}\n", required ? "yes" : "no");
  for (const auto& [label, value] : facts(schema, node)) out += fmt::format("{:<10}{}\n", label + ":", value);
  const std::string desc = description(schema, node);
  if (!desc.empty()) out += "\nDESCRIPTION:\n" + wrap(desc, 4);
  const std::vector<Field> fs = fields(schema, node);
  if (!fs.empty()) {
    out += "\nFIELDS:\n";
    if (recursive) {
      std::string t;
      tree(schema, node, 1, t);
      out += t;
    } else {
      for (const auto& f : fs) {
        out += fmt::format("  {} <{}>{}\n", f.name, type_of(schema, f.node), f.required ? " -required-" : "");
        const std::string d = f.node.value("description", "");
        if (!d.empty()) out += wrap(first_sentence(d), 4);
        out += "\n";
      }
      while (out.ends_with("\n\n")) out.pop_back();
    }
  }
  return out;
}

std::vector<std::string> schema_paths(const json& schema) {
  std::vector<std::string> out;
  collect(schema, resolve(schema, schema), "", 0, out);
  return out;
}

std::string reference_markdown(const json& schema) {
  std::string out =
      "<!-- generated by `trainc explain --markdown` from schemas/trainc.v1.schema.json; do not edit: change the "
      "schema and run ./dev.sh golden -->\n# trainc spec v1: field reference\n\n"
      "Every field of a spec, from the JSON Schema trainc validates against (`trainc explain FIELD` prints one). "
      "The guide, [spec-v1.md](spec-v1.md), says how the fields work together and states the rules that checks "
      "enforce beyond the schema. `<name>` stands for any key of a map.\n\n"
      "| field | type | required | default, allowed values, limits | description |\n|---|---|---|---|---|\n";
  reference_rows(schema, resolve(schema, schema), "", out);
  return out;
}

std::string explain_image(const std::string& reference, bool as_json) {
  const auto f = image_book().facts(reference);
  if (as_json) {
    json out = {{"reference", reference}, {"known", f.has_value()}};
    if (!f) return out.dump(2) + "\n";
    out["family"] = f->family;
    out["repository"] = f->repository;
    out["tag"] = f->tag;
    out["user"] = f->user;
    out["uid"] = f->uid ? json(*f->uid) : json(nullptr);
    out["home"] = f->home;
    json users = json::object();
    for (const auto& [uid, home] : f->users) users[std::to_string(uid)] = home;
    out["users"] = users;
    out["tools"] = f->tools;
    out["lacks"] = f->lacks;
    out["cuda"] = f->cuda;
    out["archs"] = f->archs;
    out["ptx"] = f->ptx ? json(*f->ptx) : json(nullptr);
    out["minDriver"] = f->min_driver;
    out["source"] = f->source;
    return out.dump(2) + "\n";
  }
  if (!f)
    return fmt::format("{}: unknown. No family in stdlib/images.yaml names the repository {}; check judges nothing "
                       "of it, and the pod's preflight (the entry script's first lines) checks its tools, user, "
                       "HOME and GPUs at start.\n",
                       reference, image_repository(reference));
  std::string users;
  for (const auto& [uid, home] : f->users) users += fmt::format("{}{} ({})", users.empty() ? "" : ", ", uid, home);
  const auto list = [](const std::set<std::string>& s) { return s.empty() ? std::string("-") : fmt::format("{}", fmt::join(s, " ")); };
  std::string out = fmt::format("{}: family {} (stdlib/images.yaml)\n", reference, f->family);
  out += fmt::format("  user     {}{}, home {}\n", f->user.empty() ? "unknown" : f->user,
                     f->uid ? fmt::format(" (uid {})", *f->uid) : "", f->home.empty() ? "unknown" : f->home);
  out += fmt::format("  passwd   {}\n", users);
  out += fmt::format("  tools    {}\n", list(f->tools));
  out += fmt::format("  lacks    {}\n", list(f->lacks));
  out += fmt::format("  cuda     {}\n", f->cuda.empty() ? "unknown or none" :
                                         f->cuda + (f->min_driver.empty() ? "" : ", driver >= " + f->min_driver));
  out += fmt::format("  kernels  {}\n", f->archs.empty() ? "unknown" : f->arch_list());
  out += fmt::format("  source   {}\n", f->source);
  return out;
}

}  // namespace trainc
