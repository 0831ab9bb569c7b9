#include "io/drift_summary.h"

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "base/yaml_tree.h"

namespace trainc {
namespace {

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t nl = s.find('\n');
    if (nl == std::string_view::npos) {
      out.push_back(s);
      break;
    }
    out.push_back(s.substr(0, nl));
    s.remove_prefix(nl + 1);
  }
  return out;
}

std::string plural(size_t n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

/// At most `max` bytes (not splitting a UTF-8 sequence), with "…" when cut.
/// At most `max` bytes: the start and the end with "…" between, since values that differ often
/// differ at their end (an image's tag, a hash) and both ends tell which value it is.
std::string truncate(std::string s, size_t max = 60) {
  if (s.size() <= max) return s;
  auto boundary = [&](size_t i) {  // back to the start of a UTF-8 character
    while (i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const size_t head = boundary(max / 3), tail = boundary(s.size() - (max - max / 3 - 1));
  return s.substr(0, head) + "…" + s.substr(tail);
}

// ---- YAML: leaf paths -------------------------------------------------------------------------

/// A map key as a path segment: bare when it is a plain word, else ["quoted"].
std::string child_path(const std::string& parent, const std::string& key) {
  static const std::regex plain("[A-Za-z0-9_-]+");
  if (!std::regex_match(key, plain)) return fmt::format("{}[\"{}\"]", parent, key);
  return parent.empty() ? key : parent + "." + key;
}

bool quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "?"; }

std::string show(const YAML::Node& n) {
  if (!n.IsDefined()) return "(none)";
  if (n.IsNull()) return "null";
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s.find('\n') != std::string::npos) return fmt::format("({})", plural(split_lines(s).size(), "line"));
    if (quoted(n) || s.empty()) return truncate("\"" + s + "\"");
    return truncate(s);
  }
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return truncate(e.c_str());
}

std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& map) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  for (const auto& kv : map) out.emplace_back(kv.first.IsScalar() ? kv.first.Scalar() : show(kv.first), kv.second);
  return out;
}

void diff_nodes(const YAML::Node& a, const YAML::Node& b, const std::string& path, std::vector<std::string>& out) {
  const std::string shown = path.empty() ? "(document)" : path;
  if (a.IsMap() && b.IsMap()) {
    // In the new document's order; removed keys last.
    auto am = entries(a), bm = entries(b);
    std::map<std::string, const YAML::Node*> in_a;
    for (const auto& [k, v] : am) in_a.emplace(k, &v);
    std::set<std::string> in_b;
    for (const auto& [k, v] : bm) {
      in_b.insert(k);
      auto it = in_a.find(k);
      if (it != in_a.end())
        diff_nodes(*it->second, v, child_path(path, k), out);
      else
        out.push_back(fmt::format("{} (none) → {}", child_path(path, k), show(v)));
    }
    for (const auto& [k, v] : am)
      if (!in_b.count(k)) out.push_back(fmt::format("{} {} → (none)", child_path(path, k), show(v)));
  } else if (a.IsSequence() && b.IsSequence()) {
    size_t common = std::min(a.size(), b.size());
    for (size_t i = 0; i < common; ++i) diff_nodes(a[i], b[i], fmt::format("{}[{}]", path, i), out);
    for (size_t i = common; i < a.size(); ++i) out.push_back(fmt::format("{}[{}] {} → (none)", path, i, show(a[i])));
    for (size_t i = common; i < b.size(); ++i) out.push_back(fmt::format("{}[{}] (none) → {}", path, i, show(b[i])));
  } else if (a.IsScalar() && b.IsScalar()) {
    if (a.Scalar() == b.Scalar() && quoted(a) == quoted(b)) return;
    if (a.Scalar().find('\n') != std::string::npos || b.Scalar().find('\n') != std::string::npos)
      out.push_back(fmt::format("{}: {} changed", shown, plural(changed_lines(a.Scalar(), b.Scalar()), "line")));
    else
      out.push_back(fmt::format("{} {} → {}", shown, show(a), show(b)));
  } else if (a.Type() != b.Type()) {
    out.push_back(fmt::format("{} {} → {}", shown, show(a), show(b)));
  }
}

/// "~ WHAT: change" lines for at most `cap` changes, then "~ WHAT: … and N more".
/// A copy of `node` with the name `from` as `to` wherever a value holds it (the object's name, the
/// names made from it: a rendezvous host, a ConfigMap it mounts), and a value equal to the part of
/// `from` after their common prefix (a run id) as `to`'s.
YAML::Node renamed_copy(const YAML::Node& node, const std::string& from, const std::string& to) {
  size_t common = 0;
  while (common < from.size() && common < to.size() && from[common] == to[common]) ++common;
  const size_t cut = from.rfind('-', common == 0 ? 0 : common - 1);
  const std::string from_tail = cut == std::string::npos ? "" : from.substr(cut + 1);
  const std::string to_tail = cut == std::string::npos ? "" : to.substr(cut + 1);
  // yaml-cpp nodes are handles: editing the clone's scalars in place keeps their tags (quoting).
  std::function<void(YAML::Node)> edit = [&](YAML::Node n) {
    if (n.IsScalar()) {
      std::string v = n.Scalar();
      if (!from_tail.empty() && v == from_tail) v = to_tail;
      for (size_t at = v.find(from); !from.empty() && at != std::string::npos; at = v.find(from, at + to.size()))
        v.replace(at, from.size(), to);
      if (v == n.Scalar()) return;
      const std::string tag = n.Tag();
      n = v;
      n.SetTag(tag);
    } else if (n.IsSequence()) {
      for (auto e : n) edit(e);
    } else if (n.IsMap()) {
      for (auto e : n) edit(e.second);
    }
  };
  YAML::Node out = YAML::Clone(node);
  edit(out);
  return out;
}

void add_changes(std::vector<std::string>& lines, const std::string& what, const std::vector<std::string>& changes,
                 size_t cap) {
  for (size_t i = 0; i < changes.size() && i < cap; ++i) lines.push_back(fmt::format("~ {}: {}", what, changes[i]));
  if (changes.size() > cap) lines.push_back(fmt::format("~ {}: … and {} more", what, changes.size() - cap));
}

std::optional<std::vector<YAML::Node>> load_all(const std::optional<std::string>& text) {
  if (!text) return std::vector<YAML::Node>{};
  try {
    return read_yaml_documents(*text);  // bounded, no aliases: the folder compared with is untrusted
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

// ---- Kubernetes objects -----------------------------------------------------------------------

struct Object {
  std::string display, file;
  YAML::Node node;
};

std::string scalar_at(const YAML::Node& node, std::initializer_list<const char*> keys) {
  // Node's operator= writes through to the node referred to; reset() re-points.
  YAML::Node cur;
  cur.reset(node);
  for (const char* k : keys) {
    if (!cur.IsMap()) return {};
    YAML::Node next;
    bool found = false;
    for (const auto& kv : cur)
      if (kv.first.IsScalar() && kv.first.Scalar() == k) next.reset(kv.second), found = true;
    if (!found) return {};
    cur.reset(next);
  }
  return cur.IsScalar() ? cur.Scalar() : std::string();
}

/// Objects by kind, namespace and name (nameless ones, a Kustomization, by kind and file), in order.
struct Objects {
  std::vector<std::string> order;
  std::map<std::string, Object> by_key;

  void add(const YAML::Node& doc, const std::string& file) {
    if (!doc.IsMap()) return;
    std::string kind = scalar_at(doc, {"kind"}), name = scalar_at(doc, {"metadata", "name"});
    std::string ns = scalar_at(doc, {"metadata", "namespace"});
    std::string key = fmt::format("{}\n{}\n{}", kind, ns, name.empty() ? "file " + file : name);
    std::string display = fmt::format("{} {}", kind.empty() ? "object" : kind, name.empty() ? file : name);
    if (by_key.emplace(key, Object{display, file, doc}).second) order.push_back(key);
  }
};

void summarize_k8s(const std::vector<const FileDrift*>& files, size_t cap, std::vector<std::string>& lines) {
  Objects before, after;
  std::vector<const FileDrift*> unparsed;
  for (const FileDrift* f : files) {
    auto b = load_all(f->before), a = load_all(f->after);
    if (!b || !a) {
      unparsed.push_back(f);
      continue;
    }
    for (const auto& d : *b) before.add(d, f->path);
    for (const auto& d : *a) after.add(d, f->path);
  }
  std::set<std::string> explained;  // files with an object-level line
  // An object renamed in its own file (a step's new run, a Kueue flavor named by its content) is
  // the same object changed: shown as the rename and the fields that changed besides its name.
  std::map<std::string, std::string> renamed;  // after's key -> before's key
  std::set<std::string> paired;
  for (const auto& key : after.order) {
    if (before.by_key.count(key)) continue;
    const Object& obj = after.by_key.at(key);
    for (const auto& old_key : before.order) {
      const Object& old = before.by_key.at(old_key);
      if (after.by_key.count(old_key) || paired.count(old_key) || old.file != obj.file ||
          scalar_at(old.node, {"kind"}) != scalar_at(obj.node, {"kind"}))
        continue;
      renamed[key] = old_key;
      paired.insert(old_key);
      break;
    }
  }
  for (const auto& key : after.order) {
    const Object& obj = after.by_key.at(key);
    auto it = before.by_key.find(key);
    if (auto r = renamed.find(key); r != renamed.end()) {
      const Object& old = before.by_key.at(r->second);
      const std::string from = scalar_at(old.node, {"metadata", "name"}), to = scalar_at(obj.node, {"metadata", "name"});
      std::vector<std::string> changes;
      diff_nodes(renamed_copy(old.node, from, to), obj.node, "", changes);
      lines.push_back(fmt::format("~ {} → {}", old.display, to));
      add_changes(lines, obj.display, changes, cap);
      explained.insert(obj.file);
      continue;
    }
    if (it == before.by_key.end()) {
      lines.push_back("+ " + obj.display);
      explained.insert(obj.file);
      continue;
    }
    std::vector<std::string> changes;
    diff_nodes(it->second.node, obj.node, "", changes);
    if (changes.empty()) continue;
    add_changes(lines, obj.display, changes, cap);
    explained.insert(obj.file);
    explained.insert(it->second.file);
  }
  for (const auto& key : before.order) {
    if (after.by_key.count(key) || paired.count(key)) continue;
    const Object& obj = before.by_key.at(key);
    lines.push_back("- " + obj.display);
    explained.insert(obj.file);
  }
  for (const FileDrift* f : files) {
    if (explained.count(f->path)) continue;
    if (!f->before) lines.push_back("+ " + f->path);
    else if (!f->after) lines.push_back("- " + f->path);
    else if (std::find(unparsed.begin(), unparsed.end(), f) != unparsed.end() || f->before != f->after)
      lines.push_back(fmt::format("~ {} ({})", f->path, plural(changed_lines(*f->before, *f->after), "line")));
  }
}

// ---- Terraform blocks -------------------------------------------------------------------------

struct Block {
  std::string label, body;
};

/// Top-level blocks (`resource "T" "N" {` at column 0 up to a `}` at column 0), by header.
std::map<std::string, Block> tf_blocks(const std::string& text, std::vector<std::string>& order) {
  static const std::regex name_attr(R"re((^|\n)  name\s*=\s*"([^"]*)")re");
  std::map<std::string, Block> out;
  std::string header;
  Block cur;
  bool open = false;
  for (std::string_view line : split_lines(text)) {
    if (!open) {
      if (line.empty() || line.back() != '{' || std::isspace(static_cast<unsigned char>(line[0])) || line[0] == '#' ||
          line[0] == '}')
        continue;
      header = std::string(line.substr(0, line.size() - 1));
      while (!header.empty() && header.back() == ' ') header.pop_back();
      cur = Block{};
      open = true;
    } else if (line == "}") {
      std::vector<std::string> words;
      std::string word;
      for (char c : header + " ") {
        if (c == '"') continue;
        if (c == ' ') {
          if (!word.empty()) words.push_back(word);
          word.clear();
        } else {
          word += c;
        }
      }
      std::smatch m;
      if (words.size() == 3 && words[0] == "resource" && words[1] == "google_container_node_pool" &&
          std::regex_search(cur.body, m, name_attr))
        cur.label = "node pool " + m[2].str();
      else if (words.size() >= 2 && words[0] == "resource")
        cur.label = fmt::format("{}", fmt::join(words.begin() + 1, words.end(), "."));
      else
        cur.label = fmt::format("{}", fmt::join(words, "."));
      if (out.emplace(header, cur).second) order.push_back(header);
      open = false;
    } else {
      cur.body += std::string(line) + "\n";
    }
  }
  return out;
}

void summarize_terraform(const FileDrift& f, size_t cap, std::vector<std::string>& lines) {
  std::vector<std::string> order_b, order_a;
  auto before = tf_blocks(*f.before, order_b), after = tf_blocks(*f.after, order_a);
  std::vector<std::string> changes;
  for (const auto& h : order_a) {
    auto it = before.find(h);
    if (it == before.end())
      changes.push_back("+ " + after.at(h).label);
    else if (it->second.body != after.at(h).body)
      changes.push_back(fmt::format("~ {}, {} changed", after.at(h).label,
                                    plural(changed_lines(it->second.body, after.at(h).body), "line")));
  }
  for (const auto& h : order_b)
    if (!after.count(h)) changes.push_back("- " + before.at(h).label);
  if (changes.empty()) {
    lines.push_back(fmt::format("~ {}: {} changed", f.path, plural(changed_lines(*f.before, *f.after), "line")));
    return;
  }
  for (size_t i = 0; i < changes.size() && i < cap; ++i)
    lines.push_back(fmt::format("{} {}: {}", changes[i].substr(0, 1), f.path, changes[i].substr(2)));
  if (changes.size() > cap) lines.push_back(fmt::format("~ {}: … and {} more", f.path, changes.size() - cap));
}

// ---- other files ------------------------------------------------------------------------------

void summarize_other(const FileDrift& f, size_t cap, std::vector<std::string>& lines) {
  if (f.path.ends_with(".yaml") || f.path.ends_with(".yml")) {
    auto b = load_all(f.before), a = load_all(f.after);
    if (b && a && b->size() == 1 && a->size() == 1) {
      std::vector<std::string> changes;
      diff_nodes((*b)[0], (*a)[0], "", changes);
      if (!changes.empty()) {
        add_changes(lines, f.path, changes, cap);
        return;
      }
    }
  }
  lines.push_back(fmt::format("~ {} ({})", f.path, plural(changed_lines(*f.before, *f.after), "line")));
}

bool is_yaml(const std::string& path) { return path.ends_with(".yaml") || path.ends_with(".yml"); }

}  // namespace

size_t changed_lines(std::string_view before, std::string_view after) {
  auto a = split_lines(before), b = split_lines(after);
  size_t lo = 0;
  while (lo < a.size() && lo < b.size() && a[lo] == b[lo]) ++lo;
  size_t ea = a.size(), eb = b.size();
  while (ea > lo && eb > lo && a[ea - 1] == b[eb - 1]) --ea, --eb;
  const size_t n = ea - lo, m = eb - lo;
  if (n == 0 || m == 0) return std::max(n, m);
  if (n * m > 4'000'000) return std::max(n, m);  // too large to align: an estimate
  // Longest common subsequence, then runs of removed and added lines between matches.
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = a[lo + i] == b[lo + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t total = 0, removed = 0, added = 0, i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[lo + i] == b[lo + j]) {
      total += std::max(removed, added);
      removed = added = 0;
      ++i, ++j;
    } else if (j < m && (i == n || at(i, j + 1) >= at(i + 1, j))) {
      ++added, ++j;
    } else {
      ++removed, ++i;
    }
  }
  return total + std::max(removed, added);
}

std::vector<std::string> summarize_drift(const std::vector<FileDrift>& files, size_t max_per_object) {
  std::vector<std::string> lines;
  std::vector<const FileDrift*> k8s;
  for (const auto& f : files)
    if (f.path.starts_with("k8s/") && is_yaml(f.path)) k8s.push_back(&f);
  if (!k8s.empty()) summarize_k8s(k8s, max_per_object, lines);
  for (const auto& f : files) {
    if (f.path.starts_with("k8s/") && is_yaml(f.path)) continue;
    if (!f.before && !f.after) continue;
    if (!f.before) lines.push_back("+ " + f.path);
    else if (!f.after) lines.push_back("- " + f.path);
    else if (*f.before == *f.after) continue;
    else if (f.path.ends_with(".tf")) summarize_terraform(f, max_per_object, lines);
    else summarize_other(f, max_per_object, lines);
  }
  return lines;
}

}  // namespace trainc
