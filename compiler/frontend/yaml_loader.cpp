#include "frontend/yaml_loader.h"

#include <regex>
#include <sstream>
#include <utility>

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

/// Thrown when the document passes a limit (limits.h); the diagnostic is already reported.
struct LimitReached {};

class Converter {
 public:
  Converter(Document& doc, Diagnostics& diags) : doc_(doc), diags_(diags) {}

  /// `depth` bounds recursion: an alias cycle (`m: &m {<<: *m}`; yaml-cpp does not resolve merge
  /// keys) would otherwise recurse without end, and `values` bounds what aliases expand to.
  nlohmann::json convert(const YAML::Node& node, const std::string& ptr, int depth = 0) {
    if (++values_ > limits::kValues) {
      diags_.report({Severity::error, doc_.file->name(), mark_loc(node.Mark()), ptr,
                     fmt::format("the spec holds more than {} values once its aliases are expanded; trainc reads "
                                 "specs of at most that many (aliases that repeat aliases?)",
                                 limits::kValues),
                     {}});
      throw LimitReached{};
    }
    if (depth > limits::kDepth) {
      diags_.report({Severity::error, doc_.file->name(), mark_loc(node.Mark()), ptr,
                     fmt::format("nested more than {} levels deep (or an alias that contains itself); a spec's "
                                 "structure is far shallower",
                                 limits::kDepth),
                     {}});
      throw LimitReached{};
    }
    auto& span = doc_.spans[ptr];
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        if (!span.value.known()) span.value = mark_loc(node.Mark());
        return nullptr;
      case YAML::NodeType::Scalar: {
        const std::string& s = node.Scalar();
        span.value = mark_loc(node.Mark(), s.find('\n') == std::string::npos ? s.size() : 1);
        if (s.size() > limits::kStringBytes) {
          doc_.error(diags_, ptr, fmt::format("a value of {} bytes; values may be at most {} bytes", s.size(),
                                              limits::kStringBytes));
          return nullptr;  // kept out of the document: no pattern ever runs on it
        }
        if (node.Tag() == "?") return resolve_plain(s);
        return s;  // quoted, block, or explicitly tagged: a string
      }
      case YAML::NodeType::Sequence: {
        span.value = mark_loc(node.Mark());
        nlohmann::json arr = nlohmann::json::array();
        size_t i = 0;
        for (const auto& item : node) {
          std::string child = ptr_index(ptr, i++);
          arr.push_back(convert(item, child, depth + 1));
        }
        return arr;
      }
      case YAML::NodeType::Map: {
        span.value = mark_loc(node.Mark());
        nlohmann::json obj = nlohmann::json::object();
        for (const auto& kv : node) {
          std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
          if (key.size() > limits::kStringBytes) {
            diags_.report({Severity::error, doc_.file->name(), mark_loc(kv.first.Mark()), ptr,
                           fmt::format("a key of {} bytes; keys may be at most {} bytes", key.size(),
                                       limits::kStringBytes),
                           {}});
            continue;
          }
          std::string child = ptr_key(ptr, key);
          Loc key_loc = mark_loc(kv.first.Mark(), key.size());
          std::string_view line = doc_.file->line(key_loc.line);
          if (key_loc.col <= static_cast<int>(line.size()) && (line[key_loc.col - 1] == '"' || line[key_loc.col - 1] == '\''))
            key_loc.len += 2;  // underline the quotes too
          if (!kv.first.IsScalar()) {
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
          obj[key] = convert(kv.second, child, depth + 1);
          if (kv.second.IsNull() && !doc_.spans[child].value.known()) doc_.spans[child].value = key_loc;
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

/// Records where each document of a stream starts (its first event), and nothing else.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    seen_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { first(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { first(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override { first(mark); }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    first(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    first(mark);
  }
  void OnMapEnd() override {}

 private:
  bool seen_ = false;
  void first(const YAML::Mark& mark) {
    if (!seen_ && !starts.empty()) starts.back() = mark;
    seen_ = true;
  }
};

/// yaml-cpp 0.7's LoadAll never returns on some malformed streams (a stray ',' at the start of a
/// document: yaml-cpp issue 1040, fixed upstream after 0.8): its parser yields an empty document
/// without consuming the token, forever. A spec holds one document, so the stream is first walked
/// for at most three documents; a document that starts where the previous one did is that loop.
/// Returns the mark to report, or nullopt when LoadAll is safe to call.
std::optional<std::pair<YAML::Mark, std::string>> stream_problem(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts handler;
  for (int i = 0; i < 3; ++i) {
    const size_t before = handler.starts.size();
    if (!parser.HandleNextDocument(handler)) break;
    if (handler.starts.size() == before) handler.starts.push_back(YAML::Mark());
    if (handler.starts.size() >= 2) {
      const YAML::Mark& a = handler.starts[handler.starts.size() - 2];
      const YAML::Mark& b = handler.starts.back();
      if (a.pos == b.pos) return std::make_pair(b, std::string("YAML syntax error: unexpected character"));
    }
  }
  if (handler.starts.size() >= 2)
    return std::make_pair(handler.starts[1], std::string("a spec holds one YAML document; put each system in its own file"));
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
  std::vector<YAML::Node> docs;
  try {
    if (auto problem = stream_problem(file->text())) {
      diags.report({Severity::error, file->name(), mark_loc(problem->first), "", problem->second, {}});
      return std::nullopt;
    }
    docs = YAML::LoadAll(file->text());
  } catch (const YAML::ParserException& e) {
    std::string msg = e.msg;
    if (!msg.empty()) msg[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(msg[0])));
    diags.report({Severity::error, file->name(), mark_loc(e.mark), "", "YAML syntax error: " + msg, {}});
    return std::nullopt;
  }
  if (docs.empty() || (docs.size() == 1 && docs[0].IsNull())) {
    diags.report({Severity::error, file->name(), Loc{1, 1, 1}, "", "the spec is empty; start from 'trainc schema' or an example under examples/", {}});
    return std::nullopt;
  }
  if (docs.size() > 1) {
    diags.report({Severity::error, file->name(), mark_loc(docs[1].Mark()), "",
                  "a spec holds one YAML document; put each system in its own file", {}});
    return std::nullopt;
  }
  size_t before = diags.error_count();
  try {
    doc.root = Converter(doc, diags).convert(docs[0], "");
  } catch (const LimitReached&) {
    return std::nullopt;
  }
  if (diags.error_count() > before) return std::nullopt;
  return doc;
}

}  // namespace trainc
