#include "emit/hcl.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

namespace trainc::hcl {

Value str(std::string s) {
  Value v;
  v.kind_ = Value::Kind::string;
  v.text_ = std::move(s);
  return v;
}

Value ref(std::string expr) {
  Value v;
  v.kind_ = Value::Kind::ref;
  v.text_ = std::move(expr);
  return v;
}

Value templ(std::vector<Value> parts) {
  for (const auto& p : parts)
    if (p.kind() != Value::Kind::string && p.kind() != Value::Kind::ref)
      throw std::logic_error("hcl template parts must be strings or references");
  Value v;
  v.kind_ = Value::Kind::templ;
  v.items_ = std::move(parts);
  return v;
}

Value number(std::int64_t n) {
  Value v;
  v.kind_ = Value::Kind::number;
  v.number_ = n;
  return v;
}

Value boolean(bool b) {
  Value v;
  v.kind_ = Value::Kind::boolean;
  v.number_ = b ? 1 : 0;
  return v;
}

Value list(std::vector<Value> items) {
  Value v;
  v.kind_ = Value::Kind::list;
  v.items_ = std::move(items);
  return v;
}

Value map(std::vector<std::pair<std::string, Value>> entries) {
  Value v;
  v.kind_ = Value::Kind::map;
  v.entries_ = std::move(entries);
  return v;
}

Body::~Body() = default;

Body& Body::set(const std::string& name, Value value) {
  for (const auto& item : items_)
    if (item.kind == Item::Kind::attribute && item.name == name)
      throw std::logic_error("hcl attribute set twice: " + name);
  items_.push_back(Item{Item::Kind::attribute, name, std::move(value), nullptr});
  return *this;
}

Block& Body::block(std::string type, std::vector<std::string> labels) {
  auto b = std::make_unique<Block>();
  b->type = std::move(type);
  b->labels = std::move(labels);
  Block& ref = *b;
  items_.push_back(Item{Item::Kind::block, {}, {}, std::move(b)});
  return ref;
}

Body& Body::comment(std::string_view text) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    items_.push_back(Item{Item::Kind::comment, std::string(text.substr(start, end - start)), {}, nullptr});
    start = end + 1;
  }
  return *this;
}

namespace {

/// The inside of a quoted string: escapes, and `$${` / `%%{` so nothing is interpolated.
std::string escape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '$':
      case '%':
        out += static_cast<char>(c);
        if (i + 1 < s.size() && s[i + 1] == '{') out += static_cast<char>(c);
        break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out;
}

bool is_scalar(const Value& v) {
  return v.kind() != Value::Kind::list && v.kind() != Value::Kind::map;
}

/// Whether `v` prints on one line (so its `=` joins the alignment of its neighbours).
bool single_line(const Value& v) {
  if (v.kind() == Value::Kind::map) return v.entries().empty();
  if (v.kind() == Value::Kind::list) return std::all_of(v.items().begin(), v.items().end(), is_scalar);
  return true;
}

bool is_keyword(std::string_view s) { return s == "true" || s == "false" || s == "null"; }

/// Object keys stay bare when they are plain identifiers, else they are quoted.
std::string map_key(const std::string& key) {
  bool bare = !key.empty() && !is_keyword(key) && !(key[0] >= '0' && key[0] <= '9') &&
              std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  return bare ? key : quote(key);
}

/// Key widths for `=` alignment, as terraform fmt does it: each run of consecutive single-line
/// assignments pads its keys to the longest; `0` in `lengths` is anything else and ends a run.
std::vector<size_t> align(const std::vector<size_t>& lengths) {
  std::vector<size_t> width(lengths.size(), 0);
  size_t i = 0;
  while (i < lengths.size()) {
    if (lengths[i] == 0) { ++i; continue; }
    size_t end = i, longest = 0;
    for (; end < lengths.size() && lengths[end] != 0; ++end) longest = std::max(longest, lengths[end]);
    for (; i < end; ++i) width[i] = longest;
  }
  return width;
}

void write_value(std::string& out, const Value& v, int indent);

/// `key = value` lines at `indent`, aligned; multi-line values keep a single space.
void write_assignment(std::string& out, const std::string& key, size_t width, const Value& v, int indent) {
  out += std::string(indent, ' ') + key;
  out += std::string(width > key.size() ? width - key.size() : 0, ' ') + " = ";
  write_value(out, v, indent);
  out += '\n';
}

void write_map(std::string& out, const Value& v, int indent) {
  if (v.entries().empty()) { out += "{}"; return; }
  std::vector<std::string> keys;
  std::vector<size_t> lengths;
  for (const auto& [k, child] : v.entries()) {
    keys.push_back(map_key(k));
    lengths.push_back(single_line(child) ? keys.back().size() : 0);
  }
  auto width = align(lengths);
  out += "{\n";
  for (size_t i = 0; i < keys.size(); ++i) write_assignment(out, keys[i], width[i], v.entries()[i].second, indent + 2);
  out += std::string(indent, ' ') + "}";
}

void write_list(std::string& out, const Value& v, int indent) {
  if (single_line(v)) {
    out += "[";
    for (size_t i = 0; i < v.items().size(); ++i) {
      if (i) out += ", ";
      write_value(out, v.items()[i], indent);
    }
    out += "]";
    return;
  }
  out += "[\n";
  for (const auto& item : v.items()) {
    out += std::string(indent + 2, ' ');
    write_value(out, item, indent + 2);
    out += ",\n";
  }
  out += std::string(indent, ' ') + "]";
}

void write_value(std::string& out, const Value& v, int indent) {
  switch (v.kind()) {
    case Value::Kind::string: out += quote(v.text()); break;
    case Value::Kind::ref: out += v.text(); break;
    case Value::Kind::templ:
      out += '"';
      for (const auto& part : v.items())
        if (part.kind() == Value::Kind::ref) out.append("${").append(part.text()).append("}");
        else out += escape(part.text());
      out += '"';
      break;
    case Value::Kind::number: out += std::to_string(v.as_number()); break;
    case Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; break;
    case Value::Kind::list: write_list(out, v, indent); break;
    case Value::Kind::map: write_map(out, v, indent); break;
  }
}

void write_body(std::string& out, const Body& body, int indent);

void write_block(std::string& out, const Block& b, int indent) {
  out += std::string(indent, ' ') + b.type;
  for (const auto& l : b.labels) {
    out += ' ';
    out += quote(l);
  }
  if (b.items().empty()) { out += " {}\n"; return; }
  out += " {\n";
  write_body(out, b, indent + 2);
  out += std::string(indent, ' ') + "}\n";
}

/// Items in order; a blank line separates a block (with the comments before it) from its neighbours.
void write_body(std::string& out, const Body& body, int indent) {
  using Kind = Body::Item::Kind;
  const auto& items = body.items();
  std::vector<size_t> lengths;
  for (const auto& it : items)
    lengths.push_back(it.kind == Kind::attribute && single_line(it.value) ? it.name.size() : 0);
  auto width = align(lengths);
  bool previous_unit_block = false, started = false, in_comments = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    if (!in_comments) {  // a unit starts: its comments, then one attribute or block
      size_t last = i;
      while (last + 1 < items.size() && items[last].kind == Kind::comment) ++last;
      bool unit_block = items[last].kind == Kind::block;
      if (started && (unit_block || previous_unit_block)) out += '\n';
      previous_unit_block = unit_block;
      started = true;
    }
    in_comments = it.kind == Kind::comment;
    if (it.kind == Kind::comment)
      out.append(indent, ' ').append(it.name.empty() ? "#" : "# ").append(it.name).append("\n");
    else if (it.kind == Kind::block)
      write_block(out, *it.block, indent);
    else
      write_assignment(out, it.name, width[i], it.value, indent);
  }
}

}  // namespace

std::string quote(std::string_view s) {
  std::string out(1, '"');
  out += escape(s);
  out += '"';
  return out;
}

bool is_identifier(std::string_view s) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !letter(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9') || c == '-'; });
}

std::string identifier(std::string_view name) {
  std::string out;
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) out += '_';
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::string format(const Body& file, std::string_view header) {
  std::string out;
  if (!header.empty()) {
    Body h;
    h.comment(header);
    write_body(out, h, 0);
    if (!file.items().empty()) out += '\n';
  }
  write_body(out, file, 0);
  return out;
}

}  // namespace trainc::hcl
