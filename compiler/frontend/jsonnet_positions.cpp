#include "frontend/jsonnet_positions.h"

#include <cctype>
#include <string>

#include "base/data_path.h"

namespace trainc::jsonnet {
namespace {

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

void recover_positions(Document& doc) { PositionFinder(doc).walk(doc.root, "", 0); }

}  // namespace trainc::jsonnet
