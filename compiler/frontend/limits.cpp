#include "frontend/limits.h"

#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/data_path.h"

namespace trainc::limits {

bool check_document(const Document& doc, Diagnostics& diags) {
  size_t values = 0;
  std::vector<std::pair<const nlohmann::json*, std::string>> todo{{&doc.root, ""}};
  std::vector<int> depth{0};
  bool ok = true;
  while (!todo.empty()) {
    auto [v, ptr] = std::move(todo.back());
    todo.pop_back();
    const int d = depth.back();
    depth.pop_back();
    if (++values > kValues) {
      doc.error(diags, "", fmt::format("the spec holds more than {} values once evaluated; trainc reads specs of at "
                                       "most that many (a loop or std.repeat that runs away?)",
                                       kValues));
      return false;
    }
    if (v->is_string() && v->get_ref<const std::string&>().size() > kStringBytes) {
      doc.error(diags, ptr, fmt::format("a string of {} bytes; values may be at most {} bytes",
                                        v->get_ref<const std::string&>().size(), kStringBytes));
      ok = false;
    }
    if (!v->is_structured()) continue;
    if (d >= kDepth) {
      doc.error(diags, ptr, fmt::format("nested more than {} levels deep; a spec's structure is far shallower", kDepth));
      return false;
    }
    if (v->is_object()) {
      for (const auto& [key, child] : v->items()) {
        if (key.size() > kStringBytes) {
          doc.error(diags, ptr, fmt::format("a key of {} bytes; keys may be at most {} bytes", key.size(), kStringBytes));
          return false;
        }
        todo.emplace_back(&child, ptr_key(ptr, key));
        depth.push_back(d + 1);
      }
    } else {
      for (size_t i = 0; i < v->size(); ++i) {
        todo.emplace_back(&(*v)[i], ptr_index(ptr, i));
        depth.push_back(d + 1);
      }
    }
  }
  return ok;
}

std::optional<size_t> invalid_utf8(std::string_view text) {
  // UTF-16 and UTF-32 (with a byte-order mark) are refused too: yaml-cpp would decode them, but its
  // positions would then count code units rather than the file's bytes (found by the yaml_frontend
  // fuzzer: a diagnostic quoted past the end of its line).
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Continuation bytes after the lead byte, the lead byte's payload, the smallest code point
    // that needs this length (anything smaller is overlong).
    const size_t n = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 0;
    if (n == 0 || i + n >= text.size()) return i;
    uint32_t cp = c & (0x3F >> n);
    const uint32_t min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
    for (size_t k = 1; k <= n; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::nullopt;
}

std::optional<size_t> jsonnet_too_deep(std::string_view src) {
  int depth = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    if (c == '#' || (c == '/' && i + 1 < src.size() && src[i + 1] == '/')) {
      i = src.find('\n', i);
      if (i == std::string_view::npos) break;
    } else if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
      i = src.find("*/", i + 2);
      if (i == std::string_view::npos) break;
      ++i;
    } else if (c == '|' && src.substr(i, 3) == "|||") {
      i = src.find("|||", i + 3);  // a text block: everything up to the closing bars
      if (i == std::string_view::npos) break;
      i += 2;
    } else if (c == '"' || c == '\'') {
      const bool verbatim = i > 0 && src[i - 1] == '@';
      for (++i; i < src.size() && src[i] != c; ++i)
        if (src[i] == '\\' && !verbatim) ++i;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > kJsonnetSourceDepth) return i;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace trainc::limits
