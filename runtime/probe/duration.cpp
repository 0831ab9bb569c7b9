#include "probe/duration.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

namespace trainrt {

namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t ms;
};
// Longest suffix first, so "ms" is not read as "m".
constexpr std::array<Unit, 5> kUnits{{{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}}};

}  // namespace

std::optional<Millis> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t total = 0;
  std::size_t i = 0;
  bool bare = true;  // a lone number without a unit means seconds
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    std::int64_t n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (n > std::numeric_limits<std::int64_t>::max() / 10 / 86'400'000) return std::nullopt;
      n = n * 10 + (text[i++] - '0');
    }
    if (i == text.size()) {
      if (!bare) return std::nullopt;  // "1h30": the 30 has no unit
      return Millis(n * 1000);
    }
    bare = false;
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(i, u.suffix.size()) == u.suffix) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return std::nullopt;
    i += unit->suffix.size();
    total += n * unit->ms;
    if (total > std::numeric_limits<std::int64_t>::max() / 2) return std::nullopt;
  }
  return Millis(total);
}

std::string format_duration(Millis d) {
  const std::int64_t ms = d.count();
  if (ms < 0) {
    std::string out = "-";  // (not "-" + ...: GCC 12 warns about that, wrongly, with -Wrestrict)
    return out += format_duration(Millis(-ms));
  }
  if (ms < 60'000) {
    if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
    return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
  }
  const std::int64_t s = ms / 1000;
  const std::int64_t days = s / 86'400, hours = s / 3600 % 24, minutes = s / 60 % 60, seconds = s % 60;
  if (days > 0) return hours > 0 ? fmt::format("{}d{}h", days, hours) : fmt::format("{}d", days);
  std::string out;
  if (hours > 0) out += fmt::format("{}h", hours);
  if (minutes > 0) out += fmt::format("{}m", minutes);
  if (seconds > 0) out += fmt::format("{}s", seconds);
  return out;
}

}  // namespace trainrt
