#include "preflight/bandwidth.h"

#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace trainrt::preflight {

Bandwidth allreduce_bandwidth(std::uint64_t bytes, double seconds, int nranks) {
  if (seconds <= 0 || nranks <= 0) return {};
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  return {algbw, algbw * 2.0 * (nranks - 1) / nranks};
}

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  constexpr std::uint64_t Ki = 1024, K = 1000;
  static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 14> kUnits{{
      {"KiB", Ki}, {"MiB", Ki * Ki}, {"GiB", Ki * Ki * Ki}, {"TiB", Ki * Ki * Ki * Ki},
      {"KB", K}, {"MB", K * K}, {"GB", K * K * K}, {"TB", K * K * K * K},
      {"K", Ki}, {"M", Ki * Ki}, {"G", Ki * Ki * Ki}, {"T", Ki * Ki * Ki * Ki},
      {"B", 1}, {"", 1},
  }};
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return std::nullopt;
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc()) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  for (const auto& [suffix, scale] : kUnits) {
    if (unit != suffix) continue;
    if (n == 0 || n > std::numeric_limits<std::uint64_t>::max() / scale) return std::nullopt;
    return n * scale;
  }
  return std::nullopt;
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t i = 0;
  while (v >= 1024 && i + 1 < kNames.size()) {
    v /= 1024;
    ++i;
  }
  if (v == static_cast<double>(static_cast<std::uint64_t>(v))) return fmt::format("{} {}", static_cast<std::uint64_t>(v), kNames[i]);
  return fmt::format("{:.1f} {}", v, kNames[i]);
}

}  // namespace trainrt::preflight
