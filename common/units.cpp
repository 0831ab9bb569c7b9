#include "common/units.h"

#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <system_error>
#include <utility>

namespace trainc::common {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Advances `at` over a run of digits; false when there is none.
bool skip_digits(std::string_view s, size_t& at) {
  const size_t start = at;
  while (at < s.size() && is_digit(s[at])) ++at;
  return at > start;
}

struct SizeUnit {
  std::string_view name;
  double bytes;
};
constexpr std::array<SizeUnit, 11> kSizeUnits{{
    {"B", 1.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
    {"KiB", 0x1p10}, {"MiB", 0x1p20}, {"GiB", 0x1p30}, {"TiB", 0x1p40}, {"PiB", 0x1p50},
}};

struct DurationUnit {
  std::string_view name;
  int64_t ms;
};
// "ms" before "m": a unit is matched longest first.
constexpr std::array<DurationUnit, 5> kDurationUnits{
    {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}}};

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

}  // namespace

std::optional<double> parse_byte_size(std::string_view text) {
  // digits ["." digits] [("e"|"E") digits], then the unit (or nothing: bytes).
  size_t at = 0;
  if (!skip_digits(text, at)) return std::nullopt;
  if (at < text.size() && text[at] == '.' && !skip_digits(text, ++at)) return std::nullopt;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E') && !skip_digits(text, ++at)) return std::nullopt;
  const std::string_view number = text.substr(0, at), unit = text.substr(at);
  double scale = unit.empty() ? 1.0 : 0.0;
  for (const SizeUnit& u : kSizeUnits)
    if (u.name == unit) scale = u.bytes;
  if (scale == 0.0) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;  // out of range: "1e999"
  const double bytes = v * scale;
  if (!std::isfinite(bytes) || bytes > 0x1p63) return std::nullopt;
  return bytes;
}

std::optional<int64_t> parse_duration_ms(std::string_view text) {
  int64_t total = 0;
  size_t at = 0;
  bool bare = true;  // a lone number without a unit is seconds
  do {
    int64_t n = 0;
    const size_t start = at;
    for (; at < text.size() && is_digit(text[at]); ++at) {
      const int digit = text[at] - '0';
      if (n > (kInt64Max - digit) / 10) return std::nullopt;
      n = n * 10 + digit;
    }
    if (at == start) return std::nullopt;  // empty, a sign, a space, a unit without a number
    if (at == text.size()) {
      if (!bare || n > kInt64Max / 1000) return std::nullopt;  // "1h30": the 30 has no unit
      return n * 1000;
    }
    bare = false;
    const DurationUnit* unit = nullptr;
    for (const DurationUnit& u : kDurationUnits) {
      if (text.substr(at, u.name.size()) == u.name) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr || n > kInt64Max / unit->ms) return std::nullopt;
    at += unit->name.size();
    if (total > kInt64Max - n * unit->ms) return std::nullopt;
    total += n * unit->ms;
  } while (at < text.size());
  return total;
}

std::optional<int> parse_duration_seconds(std::string_view text) {
  const std::optional<int64_t> ms = parse_duration_ms(text);
  if (!ms || *ms % 1000 != 0 || *ms / 1000 > INT_MAX) return std::nullopt;
  return static_cast<int>(*ms / 1000);
}

std::string format_duration_single_unit(int64_t seconds) {
  if (seconds > 0 && seconds % 86400 == 0) return std::to_string(seconds / 86400) + "d";
  if (seconds > 0 && seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
  if (seconds > 0 && seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds) + "s";
}

std::string format_duration_human(int64_t millis) {
  if (millis < 0) {
    // INT64_MIN + 1: its negation fits, and the millisecond is below what is shown up there.
    std::string out = "-";  // (not "-" + ...: GCC 12 warns about that, wrongly, with -Wrestrict)
    return out += format_duration_human(-(millis == std::numeric_limits<int64_t>::min() ? millis + 1 : millis));
  }
  if (millis < 60'000) {
    if (millis % 1000 == 0) return std::to_string(millis / 1000) + "s";
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<double>(millis) / 1000.0,
                                         std::chars_format::fixed, 1);
    return std::string(buf, ec == std::errc() ? end : buf) + "s";
  }
  const int64_t s = millis / 1000;
  const std::array<std::pair<int64_t, char>, 4> parts{
      {{s / 86'400, 'd'}, {s / 3600 % 24, 'h'}, {s / 60 % 60, 'm'}, {s % 60, 's'}}};
  std::string out;
  for (const auto& [count, unit] : parts)
    if (count > 0) (out += std::to_string(count)) += unit;
  return out;
}

}  // namespace trainc::common
