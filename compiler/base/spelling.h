#pragma once
// "Did you mean" for unknown keys, names and enum values.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainc {

/// Edit distance with adjacent swaps (optimal string alignment), case-sensitive.
int edit_distance(std::string_view a, std::string_view b);

/// The closest candidate within a few edits (one for names of up to 4 letters, two up to 7, then 3
/// or a third of the longer name), if any.
std::optional<std::string> suggest(std::string_view word, const std::vector<std::string>& candidates);

/// "; did you mean 'x'?" or "" — the suffix every message with a suggestion uses.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace trainc
