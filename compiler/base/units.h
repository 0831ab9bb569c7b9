#pragma once
// Kubernetes resource quantities; spec sizes and durations.
#include <optional>
#include <string>
#include <string_view>

namespace trainc {

/// "32Gi" -> 34359738368, "500m" -> 0.5, "4" -> 4. nullopt when not a quantity.
std::optional<double> parse_quantity(std::string_view q);

// Sizes and durations follow the grammars trainc shares with trainrt (common/units.h); these
// keep the compiler's names and its int seconds.

/// common::parse_byte_size: "6TB" -> 6e12, "64GiB" -> 64 * 2^30, "1.5e9" -> 1.5e9.
std::optional<double> parse_byte_size(std::string_view s);

/// common::parse_duration_seconds: "90s", "1h30m", "2d" -> seconds; nullopt unless whole seconds.
std::optional<int> parse_duration(std::string_view d);

/// common::format_duration_single_unit: 5400 -> "90m"; generated files (and goldens) hold this form.
std::string format_duration(int seconds);

}  // namespace trainc
