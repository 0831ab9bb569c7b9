#include "base/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

namespace trainc {

std::optional<double> parse_quantity(std::string_view q) {
  static const std::array<std::pair<std::string_view, double>, 13> suffixes{{
      {"Ki", 1024.0}, {"Mi", std::pow(1024.0, 2)}, {"Gi", std::pow(1024.0, 3)}, {"Ti", std::pow(1024.0, 4)},
      {"Pi", std::pow(1024.0, 5)}, {"Ei", std::pow(1024.0, 6)}, {"m", 1e-3}, {"k", 1e3}, {"M", 1e6},
      {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
  }};
  double scale = 1.0;
  for (const auto& [s, f] : suffixes) {
    if (q.size() > s.size() && q.substr(q.size() - s.size()) == s) {
      scale = f;
      q.remove_suffix(s.size());
      break;
    }
  }
  if (q.empty() || q.back() == '.') return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(q.data(), q.data() + q.size(), v);
  if (ec != std::errc() || end != q.data() + q.size() || v < 0) return std::nullopt;
  return v * scale;
}

std::optional<double> parse_byte_size(std::string_view s) {
  static const std::array<std::pair<std::string_view, double>, 9> units{{
      {"KiB", 1024.0}, {"MiB", std::pow(1024.0, 2)}, {"GiB", std::pow(1024.0, 3)}, {"TiB", std::pow(1024.0, 4)},
      {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1.0},
  }};
  for (const auto& [unit, scale] : units) {
    if (s.size() <= unit.size() || s.substr(s.size() - unit.size()) != unit) continue;
    std::string_view num = s.substr(0, s.size() - unit.size());
    double v = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc() || end != num.data() + num.size() || v < 0) return std::nullopt;
    return v * scale;
  }
  return std::nullopt;
}

std::optional<int> parse_duration(std::string_view d) {
  if (d.size() < 2) return std::nullopt;
  int unit = 0;
  switch (d.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return std::nullopt;
  }
  int v = 0;
  auto digits = d.substr(0, d.size() - 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v > 100000000 / unit) return std::nullopt;
  return v * unit;
}

std::string format_duration(int seconds) {
  if (seconds > 0 && seconds % 86400 == 0) return std::to_string(seconds / 86400) + "d";
  if (seconds > 0 && seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
  if (seconds > 0 && seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds) + "s";
}

}  // namespace trainc
