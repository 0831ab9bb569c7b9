#include "frontend/jsonnet_loader.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

extern "C" {
#include <libjsonnet.h>
}

#include "base/data_path.h"
#include "base/embedded.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

constexpr std::string_view kStdlibPrefix = "<trainc-stdlib>/";

struct ImportJail {
  fs::path root;  ///< canonical folder of the spec
  JsonnetVm* vm = nullptr;
};

char* copy_to_vm(JsonnetVm* vm, std::string_view s) {
  char* buf = jsonnet_realloc(vm, nullptr, s.size() + 1);
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  return buf;
}

bool inside(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), e = root.end();
  auto q = p.begin();
  for (; r != e; ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return true;
}

char* import_callback(void* ctx, const char* base, const char* rel, char** found_here, int* success) {
  auto* jail = static_cast<ImportJail*>(ctx);
  *success = 0;
  const std::string_view rel_sv(rel), base_sv(base);
  const bool bare = rel_sv.find('/') == std::string_view::npos;
  const bool from_stdlib = base_sv.rfind(kStdlibPrefix, 0) == 0;
  // The embedded stdlib answers bare names ('trainc.libsonnet') unless a file of that name sits
  // beside the importing file, and every import made from inside the stdlib.
  if (bare || from_stdlib) {
    std::error_code ec;
    const auto* f = find_embedded(fmt::format("stdlib/{}", rel_sv));
    const bool shadowed = !from_stdlib && fs::exists(fs::path(base) / rel_sv, ec);
    if (f && !shadowed) {
      *found_here = copy_to_vm(jail->vm, fmt::format("{}{}", kStdlibPrefix, rel_sv));
      *success = 1;
      return copy_to_vm(jail->vm, f->data);
    }
  }
  std::error_code ec;
  fs::path p = fs::path(rel_sv).is_absolute() ? fs::path(rel_sv) : fs::path(base) / rel_sv;
  fs::path canon = fs::weakly_canonical(p, ec);
  if (from_stdlib || ec || !inside(jail->root, canon)) {
    return copy_to_vm(jail->vm, fmt::format("import '{}' is outside the spec's folder; a spec may import files "
                                            "in its own folder (or below it) and the trainc stdlib",
                                            rel_sv));
  }
  std::ifstream in(canon, std::ios::binary);
  if (!in) return copy_to_vm(jail->vm, fmt::format("cannot read import '{}'", rel_sv));
  std::ostringstream ss;
  ss << in.rdbuf();
  *found_here = copy_to_vm(jail->vm, p.lexically_normal().string());
  *success = 1;
  return copy_to_vm(jail->vm, ss.str());
}

/// Turns libjsonnet's error text into one diagnostic at the first location it names.
void report_jsonnet_error(const SourceFile& file, const std::string& raw, Diagnostics& diags) {
  // "RUNTIME ERROR: msg\n\tspec.jsonnet:3:5-10\t..." or "STATIC ERROR: spec.jsonnet:1:2: msg"
  static const std::regex static_re("^STATIC ERROR: (.*?):([0-9]+):([0-9]+)(-[0-9:()-]+)?: (.*)");
  static const std::regex loc_re("\\t(.*?):\\(?([0-9]+):([0-9]+)");
  std::string first_line = raw.substr(0, raw.find('\n'));
  std::smatch m;
  std::string file_name = file.name();
  Loc loc;
  std::string message;
  if (std::regex_search(first_line, m, static_re)) {
    file_name = m[1];
    loc = Loc{std::stoi(m[2]), std::stoi(m[3]), 1};
    message = "Jsonnet syntax error: " + m[5].str();
  } else {
    message = first_line;
    if (message.rfind("RUNTIME ERROR: ", 0) == 0) message = "Jsonnet error: " + message.substr(15);
    // The first frame in a file trainc can quote; frames in the stdlib fall through to the spec.
    std::string rest = raw.substr(std::min(raw.size(), first_line.size()));
    for (std::sregex_iterator it(rest.begin(), rest.end(), loc_re), end; it != end; ++it) {
      std::string f = (*it)[1];
      if (f.rfind(kStdlibPrefix, 0) == 0) continue;
      file_name = f;
      loc = Loc{std::stoi((*it)[2]), std::stoi((*it)[3]), 1};
      break;
    }
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  diags.report({Severity::error, file_name, loc, "", message, {}});
}

/// Finds where each key of the evaluated document was written, searching forward from the parent.
class PositionFinder {
 public:
  PositionFinder(Document& doc) : doc_(doc), text_(doc.file->text()) {}

  void walk(const nlohmann::json& v, const std::string& ptr, size_t from) {
    if (v.is_object()) {
      for (const auto& [key, child] : v.items()) {
        std::string cptr = ptr_key(ptr, key);
        size_t at = find_key(key, from);
        if (at != std::string::npos) {
          Loc k = doc_.file->loc_of(at);
          k.len = static_cast<int>(key.size()) + (text_[at] == '"' || text_[at] == '\'' ? 2 : 0);
          doc_.spans[cptr] = Span{k, value_loc(at)};
          walk(child, cptr, at);
        } else {
          walk(child, cptr, from);
        }
      }
    } else if (v.is_array()) {
      size_t cursor = from;
      for (size_t i = 0; i < v.size(); ++i) {
        // Each array element's keys are looked for after the previous element's first key.
        std::string cptr = ptr_index(ptr, i);
        walk(v[i], cptr, cursor);
        size_t next = first_found_offset(cptr);
        if (next != std::string::npos) cursor = next + 1;
      }
    }
  }

 private:
  size_t find_key(const std::string& key, size_t from) const {
    for (size_t pos = text_.find(key, from); pos != std::string::npos; pos = text_.find(key, pos + 1)) {
      size_t start = pos, end = pos + key.size();
      if (start > 0 && (text_[start - 1] == '"' || text_[start - 1] == '\'')) {
        if (end >= text_.size() || text_[end] != text_[start - 1]) continue;
        --start;
        ++end;
      } else if ((start > 0 && is_ident(text_[start - 1])) || (end < text_.size() && is_ident(text_[end]))) {
        continue;
      }
      size_t colon = end;
      while (colon < text_.size() && (text_[colon] == ' ' || text_[colon] == '\t' || text_[colon] == '+')) ++colon;
      if (colon < text_.size() && text_[colon] == ':' && !in_comment(start)) return start;
    }
    return std::string::npos;
  }
  Loc value_loc(size_t key_at) const {
    size_t p = text_.find(':', key_at);
    while (p < text_.size() && (text_[p] == ':' || text_[p] == ' ' || text_[p] == '\t')) ++p;
    return doc_.file->loc_of(std::min(p, text_.size() ? text_.size() - 1 : 0));
  }
  size_t first_found_offset(const std::string& ptr) const {
    size_t best = std::string::npos;
    for (auto it = doc_.spans.lower_bound(ptr + "/"); it != doc_.spans.end() && it->first.rfind(ptr + "/", 0) == 0;
         ++it) {
      const Loc& k = it->second.key;
      if (!k.known()) continue;
      size_t off = offset_of(k);
      if (off < best) best = off;
    }
    return best;
  }
  size_t offset_of(const Loc& l) const {
    size_t line = 1, i = 0;
    for (; i < text_.size() && line < static_cast<size_t>(l.line); ++i)
      if (text_[i] == '\n') ++line;
    return i + l.col - 1;
  }
  bool in_comment(size_t pos) const {
    size_t bol = text_.rfind('\n', pos);
    bol = bol == std::string::npos ? 0 : bol + 1;
    std::string_view line(text_.data() + bol, pos - bol);
    return line.find("//") != std::string_view::npos || line.find('#') != std::string_view::npos;
  }
  static bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  Document& doc_;
  const std::string& text_;
};

}  // namespace

std::optional<Document> load_jsonnet(SourcePtr file, Diagnostics& diags) {
  ImportJail jail;
  std::error_code ec;
  jail.root = fs::weakly_canonical(fs::absolute(file->name(), ec).parent_path(), ec);
  JsonnetVm* vm = jsonnet_make();
  jail.vm = vm;
  jsonnet_import_callback(vm, import_callback, &jail);
  jsonnet_max_trace(vm, 4);
  int error = 0;
  char* out = jsonnet_evaluate_snippet(vm, file->name().c_str(), file->text().c_str(), &error);
  std::string result(out ? out : "");
  jsonnet_realloc(vm, out, 0);
  jsonnet_destroy(vm);
  if (error) {
    report_jsonnet_error(*file, result, diags);
    return std::nullopt;
  }
  Document doc;
  doc.file = file;
  doc.root = nlohmann::json::parse(result);  // libjsonnet's output is always valid JSON
  doc.spans[""] = Span{{}, Loc{1, 1, 1}};
  PositionFinder(doc).walk(doc.root, "", 0);
  return doc;
}

}  // namespace trainc
