#include "frontend/yaml_loader.h"

#include <deque>
#include <map>
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "base/data_path.h"
#include "frontend/limits.h"

namespace trainc {
namespace {

Loc mark_loc(const YAML::Mark& m, size_t len = 1) {
  if (m.line < 0) return {};
  return Loc{m.line + 1, m.column + 1, static_cast<int>(std::max<size_t>(len, 1))};
}

/// YAML 1.2 core-schema resolution of a plain (unquoted) scalar.
nlohmann::json resolve_plain(const std::string& s) {
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex hex_re("0x[0-9a-fA-F]+");
  static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  try {
    if (std::regex_match(s, int_re)) return std::stoll(s);
    if (std::regex_match(s, hex_re)) return std::stoll(s, nullptr, 16);
    if (std::regex_match(s, float_re)) return std::stod(s);
  } catch (const std::out_of_range&) {
    return s;  // too large for a number: keep the text, the schema reports the type
  }
  return s;
}

/// A node of the spec's YAML, as yaml-cpp's parser gives it (TreeBuilder below).
struct YNode {
  enum class Kind { null, scalar, sequence, map } kind = Kind::null;
  YAML::Mark mark;
  std::string tag, scalar;
  std::vector<YNode*> items;  ///< a sequence's items; a map's keys and values, alternating
};

/// Thrown when the document passes a limit (limits.h); the diagnostic is already reported.
struct LimitReached {};

class Converter {
 public:
  Converter(Document& doc, Diagnostics& diags) : doc_(doc), diags_(diags) {}

  /// `depth` bounds recursion: an alias cycle (`m: &m {<<: *m}`; yaml-cpp does not resolve merge
  /// keys) would otherwise recurse without end, and `values` bounds what aliases expand to.
  nlohmann::json convert(const YNode& node, const std::string& ptr, int depth = 0) {
    if (++values_ > limits::kValues) {
      diags_.report({Severity::error, doc_.file->name(), mark_loc(node.mark), ptr,
                     fmt::format("the spec holds more than {} values once its aliases are expanded; trainc reads "
                                 "specs of at most that many (aliases that repeat aliases?)",
                                 limits::kValues),
                     {}});
      throw LimitReached{};
    }
    if (depth > limits::kDepth) {
      diags_.report({Severity::error, doc_.file->name(), mark_loc(node.mark), ptr,
                     fmt::format("nested more than {} levels deep (or an alias that contains itself); a spec's "
                                 "structure is far shallower",
                                 limits::kDepth),
                     {}});
      throw LimitReached{};
    }
    auto& span = doc_.spans[ptr];
    switch (node.kind) {
      case YNode::Kind::null:
        if (!span.value.known()) span.value = mark_loc(node.mark);
        return nullptr;
      case YNode::Kind::scalar: {
        const std::string& s = node.scalar;
        span.value = mark_loc(node.mark, s.find('\n') == std::string::npos ? s.size() : 1);
        if (s.size() > limits::kStringBytes) {
          doc_.error(diags_, ptr, fmt::format("a value of {} bytes; values may be at most {} bytes", s.size(),
                                              limits::kStringBytes));
          return nullptr;  // kept out of the document: no pattern ever runs on it
        }
        if (node.tag == "?") return resolve_plain(s);
        return s;  // quoted, block, or explicitly tagged: a string
      }
      case YNode::Kind::sequence: {
        span.value = mark_loc(node.mark);
        nlohmann::json arr = nlohmann::json::array();
        size_t i = 0;
        for (const YNode* item : node.items) {
          std::string child = ptr_index(ptr, i++);
          arr.push_back(convert(*item, child, depth + 1));
        }
        return arr;
      }
      case YNode::Kind::map: {
        span.value = mark_loc(node.mark);
        nlohmann::json obj = nlohmann::json::object();
        for (size_t k = 0; k + 1 < node.items.size(); k += 2) {
          const YNode& key_node = *node.items[k];
          const YNode& value = *node.items[k + 1];
          std::string key = key_node.kind == YNode::Kind::scalar ? key_node.scalar : std::string();
          if (key.size() > limits::kStringBytes) {
            diags_.report({Severity::error, doc_.file->name(), mark_loc(key_node.mark), ptr,
                           fmt::format("a key of {} bytes; keys may be at most {} bytes", key.size(),
                                       limits::kStringBytes),
                           {}});
            continue;
          }
          std::string child = ptr_key(ptr, key);
          Loc key_loc = mark_loc(key_node.mark, key.size());
          std::string_view line = doc_.file->line(key_loc.line);
          if (key_loc.col <= static_cast<int>(line.size()) && (line[key_loc.col - 1] == '"' || line[key_loc.col - 1] == '\''))
            key_loc.len += 2;  // underline the quotes too
          if (key_node.kind != YNode::Kind::scalar) {
            doc_.error(diags_, ptr, "keys must be plain strings, not collections");
            continue;
          }
          if (obj.contains(key)) {
            Note first{doc_.file->name(), doc_.spans[child].key, fmt::format("'{}' first defined here", key)};
            diags_.report({Severity::error, doc_.file->name(), key_loc, child,
                           fmt::format("duplicate key '{}'; each key may appear once in a mapping", key),
                           {first}});
            continue;
          }
          doc_.spans[child].key = key_loc;
          obj[key] = convert(value, child, depth + 1);
          if (value.kind == YNode::Kind::null && !doc_.spans[child].value.known()) doc_.spans[child].value = key_loc;
        }
        return obj;
      }
    }
    return nullptr;
  }

 private:
  Document& doc_;
  Diagnostics& diags_;
  size_t values_ = 0;
};

/// The stream's documents as yaml-cpp's parse events give them: the tree LoadAll would build, with
/// its marks, tags and shared alias nodes, but built in the same single pass that guards against
/// yaml-cpp's endless loop (read_stream). Nodes live in the builder; an alias is the node its
/// anchor names, as in LoadAll (so `m: &m {k: *m}` is a cycle, which convert's depth bound ends).
class TreeBuilder final : public YAML::EventHandler {
 public:
  std::vector<YNode*> roots;         ///< one per document; nullptr for an empty one
  std::vector<YAML::Mark> starts;    ///< where each document starts (its first event)

  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    roots.push_back(nullptr);
    anchors_.clear();
    seen_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    add(make(YNode::Kind::null, mark, anchor));
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    first(mark);
    auto it = anchors_.find(anchor);
    add(it == anchors_.end() ? make(YNode::Kind::null, mark, 0) : it->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    YNode* n = make(YNode::Kind::scalar, mark, anchor);
    n->tag = tag;
    n->scalar = value;
    add(n);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(make(YNode::Kind::sequence, mark, anchor));
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(make(YNode::Kind::map, mark, anchor));
  }
  void OnMapEnd() override { close(); }

 private:
  std::deque<YNode> nodes_;
  std::map<YAML::anchor_t, YNode*> anchors_;
  std::vector<YNode*> open_;
  bool seen_ = false;

  void first(const YAML::Mark& mark) {
    if (!seen_ && !starts.empty()) starts.back() = mark;
    seen_ = true;
  }
  YNode* make(YNode::Kind kind, const YAML::Mark& mark, YAML::anchor_t anchor) {
    first(mark);
    YNode& n = nodes_.emplace_back();
    n.kind = kind;
    n.mark = mark;
    if (anchor) anchors_[anchor] = &n;  // before its children: an alias inside refers to it
    return &n;
  }
  void add(YNode* n) {
    if (open_.empty()) {
      if (!roots.empty()) roots.back() = n;
      return;
    }
    open_.back()->items.push_back(n);
  }
  void open(YNode* n) {
    add(n);
    open_.push_back(n);
  }
  void close() { open_.pop_back(); }
};

/// Reads the stream's first document, walking at most three: yaml-cpp 0.7 never ends on some
/// malformed streams (a stray ',' at the start of a document: yaml-cpp issue 1040, fixed upstream
/// after 0.8), yielding an empty document without consuming the token, forever; a document that
/// starts where the previous one did is that loop. A spec holds one document, so a second one is
/// an error too. Returns the problem's mark and message, if any. Throws YAML::ParserException.
std::optional<std::pair<YAML::Mark, std::string>> read_stream(const std::string& text, TreeBuilder& builder) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  for (int i = 0; i < 3; ++i) {
    const size_t before = builder.starts.size();
    if (!parser.HandleNextDocument(builder)) break;
    if (builder.starts.size() == before) {
      builder.starts.push_back(YAML::Mark());
      builder.roots.push_back(nullptr);
    }
    if (builder.starts.size() >= 2) {
      const YAML::Mark& a = builder.starts[builder.starts.size() - 2];
      const YAML::Mark& b = builder.starts.back();
      if (a.pos == b.pos) return std::make_pair(b, std::string("YAML syntax error: unexpected character"));
    }
  }
  if (builder.starts.size() >= 2)
    return std::make_pair(builder.starts[1],
                          std::string("a spec holds one YAML document; put each system in its own file"));
  return std::nullopt;
}

}  // namespace

std::optional<Document> load_yaml(SourcePtr file, Diagnostics& diags) {
  if (auto at = limits::invalid_utf8(file->text())) {
    diags.report({Severity::error, file->name(), file->loc_of(*at), "",
                  fmt::format("byte 0x{:02X} is not valid UTF-8; trainc reads specs written in UTF-8",
                              static_cast<unsigned char>(file->text()[*at])),
                  {}});
    return std::nullopt;
  }
  Document doc;
  doc.file = file;
  TreeBuilder tree;
  try {
    if (auto problem = read_stream(file->text(), tree)) {
      diags.report({Severity::error, file->name(), mark_loc(problem->first), "", problem->second, {}});
      return std::nullopt;
    }
  } catch (const YAML::ParserException& e) {
    std::string msg = e.msg;
    if (!msg.empty()) msg[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(msg[0])));
    diags.report({Severity::error, file->name(), mark_loc(e.mark), "", "YAML syntax error: " + msg, {}});
    return std::nullopt;
  }
  if (tree.roots.empty() || !tree.roots[0] || tree.roots[0]->kind == YNode::Kind::null) {
    diags.report({Severity::error, file->name(), Loc{1, 1, 1}, "", "the spec is empty; start from 'trainc schema' or an example under examples/", {}});
    return std::nullopt;
  }
  size_t before = diags.error_count();
  try {
    doc.root = Converter(doc, diags).convert(*tree.roots[0], "");
  } catch (const LimitReached&) {
    return std::nullopt;
  }
  if (diags.error_count() > before) return std::nullopt;
  return doc;
}

}  // namespace trainc
