#include "base/diagnostics.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/data_path.h"

namespace trainc {

void Diagnostics::add_source(SourcePtr file) { sources_[file->name()] = std::move(file); }

void Diagnostics::append(const Diagnostics& other) {
  for (const auto& [name, file] : other.sources_) sources_.insert_or_assign(name, file);
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

void Diagnostics::report(Diagnostic d) {
  // A message that quotes a spec value stays readable however long the value: its middle is cut.
  constexpr size_t kMax = 1000, kKeep = 400;
  auto shorten = [&](std::string& m) {
    if (m.size() <= kMax) return;
    size_t head = kKeep, tail = m.size() - kKeep;
    while (head > 0 && (static_cast<unsigned char>(m[head]) & 0xC0) == 0x80) --head;
    while (tail < m.size() && (static_cast<unsigned char>(m[tail]) & 0xC0) == 0x80) ++tail;
    m = fmt::format("{} ...({} bytes cut)... {}", m.substr(0, head), tail - head, m.substr(tail));
  };
  // Control characters from a spec value are shown, not sent to the terminal (an escape sequence
  // could rewrite what the user sees).
  auto visible = [](std::string& m) {
    std::string out;
    for (unsigned char c : m) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) out += fmt::format("\\x{:02x}", c);
      else out += static_cast<char>(c);
    }
    m = std::move(out);
  };
  shorten(d.message);
  visible(d.message);
  for (auto& n : d.notes) {
    shorten(n.message);
    visible(n.message);
  }
  items_.push_back(std::move(d));
}

bool Diagnostics::has_errors() const {
  return std::any_of(items_.begin(), items_.end(), [](const auto& d) { return d.severity == Severity::error; });
}

bool Diagnostics::has_errors_since(size_t from) const {
  return std::any_of(items_.begin() + static_cast<std::ptrdiff_t>(std::min(from, items_.size())), items_.end(),
                     [](const auto& d) { return d.severity == Severity::error; });
}

size_t Diagnostics::error_count() const {
  auto all = sorted();
  return static_cast<size_t>(
      std::count_if(all.begin(), all.end(), [](const auto& d) { return d.severity == Severity::error; }));
}

static auto sort_key(const Diagnostic& d) {
  return std::tie(d.file, d.loc.line, d.loc.col, d.path, d.message);
}

std::vector<Diagnostic> Diagnostics::sorted() const {
  std::vector<Diagnostic> v = items_;
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return sort_key(a) < sort_key(b); });
  v.erase(std::unique(v.begin(), v.end(),
                      [](const auto& a, const auto& b) { return sort_key(a) == sort_key(b); }),
          v.end());
  return v;
}

std::string Diagnostics::quote_line(const std::string& file, const Loc& loc) const {
  auto it = sources_.find(file);
  if (!loc.known() || it == sources_.end()) return {};
  std::string_view text = it->second->line(loc.line);
  if (text.empty()) return {};
  std::string gutter = fmt::format("{:>5} | ", loc.line);
  // A long line is quoted as a window around the column, marked with "..." where it was cut.
  constexpr size_t kWidth = 120, kBefore = 50;
  size_t start = 0, col = static_cast<size_t>(std::max(loc.col, 1));
  std::string head, tail;
  if (text.size() > kWidth) {
    start = col > kBefore ? std::min(col - 1 - kBefore, text.size()) : 0;
    while (start > 0 && start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t end = std::min(text.size(), start + kWidth);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    if (start > 0) head = "...";
    if (end < text.size()) tail = "...";
    text = text.substr(start, end - start);
  }
  std::string shown(text);  // control characters as '?', one column each, so the caret still lines up
  for (char& c : shown)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) c = '?';
  std::string pad(head.size(), ' ');
  for (size_t i = start + 1; i < col && i - start <= text.size(); ++i) pad += text[i - start - 1] == '\t' ? '\t' : ' ';
  const int room = static_cast<int>(text.size()) - static_cast<int>(col - start) + 1;
  int width = std::max(1, std::min<int>(loc.len, room));
  return fmt::format("{}{}{}{}\n{:>5} | {}^{}\n", gutter, head, shown, tail, "", pad, std::string(width - 1, '~'));
}

static std::string where(const std::string& file, const Loc& loc) {
  if (file.empty()) return "trainc";
  if (!loc.known()) return file;
  return fmt::format("{}:{}:{}", file, loc.line, loc.col);
}

std::string Diagnostics::render_text() const {
  std::string out;
  auto all = sorted();
  for (const auto& d : all) {
    out += fmt::format("{}: {}: {}\n", where(d.file, d.loc), d.severity == Severity::error ? "error" : "warning",
                       d.message);
    out += quote_line(d.file, d.loc);
    if (!d.path.empty()) out += fmt::format("      = at {}\n", ptr_display(d.path));
    for (const auto& n : d.notes) {
      out += fmt::format("{}: note: {}\n", where(n.file, n.loc), n.message);
      out += quote_line(n.file, n.loc);
    }
  }
  size_t errors = error_count(), warnings = all.size() - std::min(all.size(), errors);
  if (errors) out += fmt::format("{} error{}", errors, errors == 1 ? "" : "s");
  if (warnings) out += fmt::format("{}{} warning{}", errors ? ", " : "", warnings, warnings == 1 ? "" : "s");
  if (!all.empty()) out += "\n";
  return out;
}

std::string Diagnostics::render_json() const {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& d : sorted()) {
    nlohmann::ordered_json j;
    j["severity"] = d.severity == Severity::error ? "error" : "warning";
    j["file"] = d.file;
    j["line"] = d.loc.line;
    j["column"] = d.loc.col;
    j["path"] = d.path.empty() ? "" : ptr_display(d.path);
    j["pointer"] = d.path;
    j["message"] = d.message;
    j["notes"] = nlohmann::ordered_json::array();
    for (const auto& n : d.notes)
      j["notes"].push_back({{"file", n.file}, {"line", n.loc.line}, {"column", n.loc.col}, {"message", n.message}});
    arr.push_back(std::move(j));
  }
  // Spec text need not be UTF-8: invalid bytes become U+FFFD rather than an exception.
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string github_escape_data(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string github_escape_property(std::string_view s) {
  std::string out;
  for (char c : github_escape_data(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

std::string github_command(std::string_view level, std::string_view file, int line, int col, std::string_view title,
                           std::string_view message) {
  std::vector<std::string> props;
  if (!file.empty()) props.push_back("file=" + github_escape_property(file));
  if (!file.empty() && line > 0) props.push_back(fmt::format("line={}", line));
  if (!file.empty() && line > 0 && col > 0) props.push_back(fmt::format("col={}", col));
  if (!title.empty()) props.push_back("title=" + github_escape_property(title));
  return fmt::format("::{}{}{}::{}\n", level, props.empty() ? "" : " ", fmt::join(props, ","),
                     github_escape_data(message));
}

std::string Diagnostics::render_github() const {
  std::string out;
  for (const auto& d : sorted()) {
    std::string message = d.message;
    if (!d.path.empty()) message += fmt::format(" (at {})", ptr_display(d.path));
    for (const auto& n : d.notes) message += fmt::format("\n{}: note: {}", where(n.file, n.loc), n.message);
    out += github_command(d.severity == Severity::error ? "error" : "warning", d.file, d.loc.line, d.loc.col,
                          "trainc", message);
  }
  return out;
}

}  // namespace trainc
