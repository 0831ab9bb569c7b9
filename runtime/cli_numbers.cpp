#include "cli_numbers.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <system_error>

namespace trainrt {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

/// "got ''" for the empty string, the text itself (cut at 40 characters) otherwise.
std::string shown(std::string_view text) {
  if (text.size() > 40) return fmt::format("'{}...' ({} characters)", text.substr(0, 40), text.size());
  return fmt::format("'{}'", text);
}

}  // namespace

std::optional<uint64_t> parse_unsigned(std::string_view text) {
  if (!all_digits(text)) return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_signed(std::string_view text) {
  const std::string_view digits = !text.empty() && text.front() == '-' ? text.substr(1) : text;
  if (!all_digits(digits)) return std::nullopt;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_real(std::string_view text) {
  // [-+] digits [. digits] [e [-+] digits], or . digits: what from_chars takes, minus inf, nan and hex.
  size_t at = 0;
  if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
  size_t digits = 0;
  for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) ++digits;
  if (at < text.size() && text[at] == '.')
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) ++digits;
  if (digits == 0) return std::nullopt;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
    if (at >= text.size() || !all_digits(text.substr(at))) return std::nullopt;
    at = text.size();
  }
  if (at != text.size()) return std::nullopt;
  const size_t skip = text.front() == '+' ? 1 : 0;  // from_chars takes no '+'
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data() + skip, text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string unsigned_problem(std::string_view text, uint64_t lo, uint64_t hi) {
  const auto v = parse_unsigned(text);
  if (v && *v >= lo && *v <= hi) return "";
  return fmt::format("must be a whole number from {} to {}; got {}", lo, hi, shown(text));
}

std::string signed_problem(std::string_view text, int64_t lo, int64_t hi) {
  const auto v = parse_signed(text);
  if (v && *v >= lo && *v <= hi) return "";
  return fmt::format("must be a whole number from {} to {}; got {}", lo, hi, shown(text));
}

std::string real_problem(std::string_view text, double lo, double hi) {
  const auto v = parse_real(text);
  if (v && *v >= lo && *v <= hi) return "";
  return fmt::format("must be a number from {} to {}; got {}", lo, hi, shown(text));
}

CLI::Validator whole_number(uint64_t lo, uint64_t hi) {
  return CLI::Validator([lo, hi](std::string& s) { return unsigned_problem(s, lo, hi); },
                        fmt::format("INT in [{}, {}]", lo, hi));
}

CLI::Validator signed_number(int64_t lo, int64_t hi) {
  return CLI::Validator([lo, hi](std::string& s) { return signed_problem(s, lo, hi); },
                        fmt::format("INT in [{}, {}]", lo, hi));
}

CLI::Validator real_number(double lo, double hi) {
  return CLI::Validator([lo, hi](std::string& s) { return real_problem(s, lo, hi); },
                        fmt::format("NUMBER in [{}, {}]", lo, hi));
}

}  // namespace trainrt
