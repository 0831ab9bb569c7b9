#pragma once
// Byte sizes and durations: one grammar each, read the same by trainc (spec fields) and trainrt
// (command-line flags), so what the compiler writes into a command line the runtime reads back.
// The grammars are stated in docs/spec-v1.md, "Sizes and durations".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainc::common {

/// Bytes: "6TB" -> 6e12, "64GiB" -> 64 * 2^30, "1.5e9" -> 1.5e9. A double because a size only ever
/// becomes a row count by division. nullopt when not a size or above 2^63 bytes.
std::optional<double> parse_byte_size(std::string_view text);

/// Milliseconds: "90s", "500ms", "1h30m", "2d"; a bare number is seconds. nullopt when not a
/// duration or when it does not fit in int64 milliseconds.
std::optional<int64_t> parse_duration_ms(std::string_view text);

/// The compiler's view: whole seconds. nullopt also for "1500ms" (not whole) and above INT_MAX.
std::optional<int> parse_duration_seconds(std::string_view text);

/// One number and one unit, the largest that divides evenly: 5400 -> "90m", 7200 -> "2h", 45 -> "45s".
/// What trainc writes into generated files (golden output depends on it); always exact.
std::string format_duration_single_unit(int64_t seconds);

/// For messages: "12.3s" (tenths) below a minute, then every non-zero unit: "2m5s", "1h7s", "2d2h".
/// Exact (parses back) for whole seconds; finer parts above a minute are dropped.
std::string format_duration_human(int64_t millis);

}  // namespace trainc::common
