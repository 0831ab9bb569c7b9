#include "base/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/units.h"

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

std::optional<double> parse_byte_size(std::string_view s) { return common::parse_byte_size(s); }

std::optional<int> parse_duration(std::string_view d) { return common::parse_duration_seconds(d); }

std::string format_duration(int seconds) { return common::format_duration_single_unit(seconds); }

}  // namespace trainc
