#include "base/data_path.h"

#include <algorithm>
#include <cctype>

namespace trainc {

std::string ptr_key(std::string_view ptr, std::string_view key) {
  std::string r(ptr);
  r += '/';
  for (char c : key) {
    if (c == '~') r += "~0";
    else if (c == '/') r += "~1";
    else r += c;
  }
  return r;
}

std::string ptr_index(std::string_view ptr, size_t index) { return std::string(ptr) + "/" + std::to_string(index); }

std::string ptr_parent(std::string_view ptr) {
  auto pos = ptr.rfind('/');
  return pos == std::string_view::npos ? std::string() : std::string(ptr.substr(0, pos));
}

std::vector<std::string> ptr_segments(std::string_view ptr) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < ptr.size()) {
    size_t j = ptr.find('/', i + 1);
    if (j == std::string_view::npos) j = ptr.size();
    std::string seg;
    for (size_t k = i + 1; k < j; ++k) {
      if (ptr[k] == '~' && k + 1 < j) {
        seg += ptr[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        seg += ptr[k];
      }
    }
    out.push_back(std::move(seg));
    i = j;
  }
  return out;
}

static bool is_identifier(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '$';
  });
}

std::string ptr_display(std::string_view ptr) {
  auto segs = ptr_segments(ptr);
  if (segs.empty()) return "(document)";
  std::string out;
  for (const auto& s : segs) {
    if (!s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
      out += "[" + s + "]";
    } else if (is_identifier(s)) {
      if (!out.empty()) out += '.';
      out += s;
    } else {
      out += "[\"" + s + "\"]";
    }
  }
  return out;
}

std::string context_to_ptr(const std::vector<std::string>& context, const nlohmann::json& doc) {
  std::string ptr;
  const nlohmann::json* node = &doc;
  for (size_t i = 1; i < context.size(); ++i) {
    const std::string& c = context[i];
    const std::string seg = c.size() >= 2 ? c.substr(1, c.size() - 2) : c;
    const bool index = !seg.empty() && std::all_of(seg.begin(), seg.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (node && node->is_array() && index) {
      const size_t idx = std::stoul(seg);
      ptr = ptr_index(ptr, idx);
      node = idx < node->size() ? &(*node)[idx] : nullptr;
    } else {
      ptr = ptr_key(ptr, seg);
      node = node && node->is_object() && node->contains(seg) ? &(*node)[seg] : nullptr;
    }
  }
  return ptr;
}

}  // namespace trainc
