#include "base/yaml_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace trainc {
namespace {

using ojson = nlohmann::ordered_json;

bool looks_typed(std::string_view s) {
  // The pattern's words start with one of "yYnNtTfFoO" and have at most 5 letters; the rest start
  // with one of "~<=+-.0-9". Most strings fail that first test, so most skip the regex, which was
  // a tenth of a compile.
  if (s.empty()) return false;
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (std::isalpha(first) ? s.size() > 5 || std::string_view("yYnNtTfFoO").find(s.front()) == std::string_view::npos
                          : std::string_view("~<=+-.0123456789").find(s.front()) == std::string_view::npos)
    return false;
  // YAML 1.1 and 1.2 booleans, nulls, numbers (with _ separators, octal, hex, sexagesimal), inf/nan,
  // and a lone "." or "-.", which YAML 1.1's float pattern matches (some parsers read NaN, or null).
  static const std::regex typed(
      "(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~"
      "|[-+]?[0-9][0-9_]*(\\.[0-9_]*)?([eE][-+]?[0-9]+)?|[-+]?\\.[0-9_]+([eE][-+]?[0-9]+)?"
      "|[-+]?0[xX][0-9a-fA-F_]+|[-+]?0[oO]?[0-7_]+|[-+]?0b[01_]+|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\\.[0-9_]*)?"
      "|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)|[-+]?\\.|<<|=)");
  return std::regex_match(s.begin(), s.end(), typed);
}

/// The length of the UTF-8 sequence at `s[i]` and its code point; 0 when the bytes there are not
/// valid UTF-8 (a stray byte, an overlong form, a surrogate).
size_t utf8_at(std::string_view s, size_t i, char32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/// Characters YAML 1.1 or 1.2 parsers treat specially wherever they appear, so that a value holding
/// one is always written double-quoted with the character escaped: C0 and C1 controls, DEL, NEL,
/// the line and paragraph separators, and the byte-order mark.
bool special(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF;
}

/// Whether `s` holds a character that must be escaped, or bytes that are not UTF-8.
bool needs_escape(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t n = utf8_at(s, i, cp);
    if (n == 0 || (special(cp) && cp != '\n')) return true;
    i += n;
  }
  return false;
}

std::string dquote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    size_t n = utf8_at(s, i, cp);
    if (n == 0) {  // not UTF-8: the byte is kept as the code point of the same number
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (special(cp))
          out += cp <= 0xFF ? fmt::format("\\x{:02x}", static_cast<unsigned>(cp))
                            : fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
        else
          out.append(s.substr(i, n));
    }
    i += n;
  }
  return out + "\"";
}

std::string scalar(const ojson& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return yaml_plain_safe(s) ? s : dquote(s);
  }
  if (v.is_null()) return "null";
  return v.dump();
}

/// Multi-line strings become literal blocks when they can be written without loss.
bool literal_ok(const std::string& s) {
  if (s.find('\n') == std::string::npos || s.find('\r') != std::string::npos || s.find('\t') != std::string::npos)
    return false;
  if (needs_escape(s)) return false;
  if (s.front() == ' ' || s.front() == '\n') return false;
  if (s.size() >= 2 && s.substr(s.size() - 2) == "\n\n") return false;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    if (end > start && s[end - 1] == ' ') return false;  // trailing spaces would not survive linting
    start = end + 1;
  }
  return true;
}

void write_literal(std::string& out, const std::string& s, int indent) {
  out += s.back() == '\n' ? "|\n" : "|-\n";
  std::string pad(indent, ' ');
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out += pad + s.substr(start, end - start);
    out += '\n';
    start = end + 1;
  }
}

/// Long one-line strings with single spaces fold onto several lines (">-"), which reads back as
/// the same string and keeps lines short for linters.
constexpr size_t kFoldWidth = 100;

bool fold_ok(const std::string& s) {
  if (s.size() <= kFoldWidth + 20 || s.find(' ') == std::string::npos) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.find("  ") != std::string::npos) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= 0x20 && c != 0x7f; });
}

void write_folded(std::string& out, const std::string& s, int indent) {
  out += ">-\n";
  std::string pad(indent, ' ');
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.size();
    if (end - start > kFoldWidth) {
      size_t space = s.rfind(' ', start + kFoldWidth);
      if (space == std::string::npos || space <= start) space = s.find(' ', start + kFoldWidth);
      if (space != std::string::npos) end = space;
    }
    out += pad + s.substr(start, end - start) + "\n";
    start = end + 1;
  }
}

/// Writes a string scalar after "key:" or "- ": literal or folded block when that reads better.
bool write_block_string(std::string& out, const ojson& v, int indent, std::string_view lead) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  if (literal_ok(s)) {
    out += lead;
    write_literal(out, s, indent);
    return true;
  }
  if (fold_ok(s)) {
    out += lead;
    write_folded(out, s, indent);
    return true;
  }
  return false;
}

bool is_block(const ojson& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void write_value(std::string& out, const ojson& v, int indent);

/// Writes the members of a mapping; the first key continues the current line when `inline_first`.
void write_map(std::string& out, const ojson& v, int indent, bool inline_first) {
  bool first = true;
  for (const auto& [k, child] : v.items()) {
    if (!(first && inline_first)) out += std::string(indent, ' ');
    first = false;
    out += scalar(ojson(k)) + ":";
    if (is_block(child)) {
      out += "\n";
      write_value(out, child, indent + 2);
    } else if (write_block_string(out, child, indent + 2, " ")) {
    } else {
      out += " " + (child.is_object() ? "{}" : child.is_array() ? "[]" : scalar(child)) + "\n";
    }
  }
}

void write_value(std::string& out, const ojson& v, int indent) {
  if (v.is_object()) {
    write_map(out, v, indent, false);
  } else if (v.is_array()) {
    for (const auto& item : v) {
      out += std::string(indent, ' ') + "- ";
      if (item.is_object() && !item.empty()) {
        write_map(out, item, indent + 2, true);
      } else if (item.is_array() && !item.empty()) {
        out += "\n";
        write_value(out, item, indent + 2);
      } else if (write_block_string(out, item, indent + 2, "")) {
      } else {
        out += (item.is_object() ? "{}" : item.is_array() ? "[]" : scalar(item)) + "\n";
      }
    }
  } else {
    out += std::string(indent, ' ') + scalar(v) + "\n";
  }
}

}  // namespace

bool yaml_plain_safe(std::string_view s) {
  if (s.empty() || looks_typed(s)) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  static const std::string_view bad_first = "-?:,[]{}#&*!|>'\"%@`";
  if (bad_first.find(s.front()) != std::string_view::npos) {
    // "-x" and "--flag" read back as strings; "- x" or a lone "-" do not.
    if (!(s.front() == '-' && s.size() > 1 && s[1] != ' ')) return false;
  }
  if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) return false;
  if (needs_escape(s)) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return c >= 0x20 && c != 0x7f && c != '{' && c != '}' && c != '[' && c != ']' && c != ',';
  });
}

std::string to_yaml(const nlohmann::ordered_json& value, std::string_view header) {
  std::string out;
  size_t start = 0;
  while (start < header.size()) {
    size_t end = header.find('\n', start);
    if (end == std::string_view::npos) end = header.size();
    out += "# " + std::string(header.substr(start, end - start)) + "\n";
    start = end + 1;
  }
  if (is_block(value))
    write_value(out, value, 0);
  else
    out += (value.is_object() ? "{}" : value.is_array() ? "[]" : scalar(value)) + "\n";
  return out;
}

}  // namespace trainc
