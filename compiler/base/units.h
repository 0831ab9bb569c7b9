#pragma once
// Kubernetes resource quantities and spec durations.
#include <optional>
#include <string>
#include <string_view>

namespace trainc {

/// "32Gi" -> 34359738368, "500m" -> 0.5, "4" -> 4. nullopt when not a quantity.
std::optional<double> parse_quantity(std::string_view q);

/// "6TB" -> 6e12, "64GiB" -> 64 * 2^30 (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB). nullopt when not a size.
std::optional<double> parse_byte_size(std::string_view s);

/// "90s", "30m", "48h", "2d" -> seconds. nullopt when not a duration.
std::optional<int> parse_duration(std::string_view d);

/// 600 -> "10m", 5400 -> "90m", 7200 -> "2h": the largest unit that divides evenly.
std::string format_duration(int seconds);

}  // namespace trainc
