#pragma once
// Durations on the command line: "90s", "10m", "1h", "2d", "500ms", compounds like "1h30m", and a
// bare number of seconds: the grammar trainc shares (common/units.h), so what the compiler writes
// (format_duration_single_unit) parses here.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace trainrt {

using Millis = std::chrono::milliseconds;

/// nullopt when `text` is not a duration (empty, negative, unknown unit, overflow).
std::optional<Millis> parse_duration(std::string_view text);

/// 12.3s or 12s below a minute; whole units above, zero parts left out: 10m, 2m5s, 1h7s, 3d2h, 1d5s.
std::string format_duration(Millis d);

}  // namespace trainrt
