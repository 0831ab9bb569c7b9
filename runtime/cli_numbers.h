#pragma once
// Range checks for numeric command-line flags, run on the flag's text before CLI11 converts it.
// CLI11 alone reads "-1" into an unsigned flag as 2^64-1, "010" as octal 8, and "1e400" as inf;
// these checks accept plain decimal text within a range and say so, naming the flag (CLI11 puts
// the flag's name in front: "--shards: must be a whole number from 1 to 99999; got '-1'").
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainrt {

/// Plain decimal digits (parse_signed: with an optional leading '-') that fit in 64 bits; nullopt otherwise.
std::optional<int64_t> parse_signed(std::string_view text);
std::optional<uint64_t> parse_unsigned(std::string_view text);
/// A finite decimal number ("0.5", "-1e-3"; no hex, inf or nan); nullopt otherwise.
std::optional<double> parse_real(std::string_view text);

/// The message for `text` as a whole number in [lo, hi] ("" when it is one).
std::string unsigned_problem(std::string_view text, uint64_t lo, uint64_t hi);
std::string signed_problem(std::string_view text, int64_t lo, int64_t hi);
/// The message for `text` as a finite number in [lo, hi] ("" when it is one).
std::string real_problem(std::string_view text, double lo, double hi);

/// Validators for CLI::Option::check().
CLI::Validator whole_number(uint64_t lo, uint64_t hi);
CLI::Validator signed_number(int64_t lo, int64_t hi);
CLI::Validator real_number(double lo, double hi);

}  // namespace trainrt
