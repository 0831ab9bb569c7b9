#pragma once
// "Did you mean" for unknown keys, names and enum values.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainc {

/// Levenshtein distance, case-sensitive.
int edit_distance(std::string_view a, std::string_view b);

/// The closest candidate within edit distance 3 (and closer than retyping the word), if any.
std::optional<std::string> suggest(std::string_view word, const std::vector<std::string>& candidates);

/// "; did you mean 'x'?" or "" — the suffix every message with a suggestion uses.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace trainc
