#include "base/spelling.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

namespace trainc {

int edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus swaps of adjacent letters ('rya' -> 'ray' is one).
  std::vector<std::vector<int>> d(a.size() + 1, std::vector<int>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

static std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::optional<std::string> suggest(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  int best_d = std::numeric_limits<int>::max();
  const std::string w = lower(word);
  for (const auto& c : candidates) {
    // Case differences count as half an edit, so 'ImagePullPolicy' finds 'imagePullPolicy'.
    int d = edit_distance(w, lower(c));
    if (d == 0 && c != word) d = 1;
    // One edit in a name of up to 4 letters, two up to 7, else 3 or a third of a long name
    // ('nvidia-l4-gpu' finds 'nvidia-l4'; 'wat' finds nothing).
    const int longer = static_cast<int>(std::max(word.size(), c.size()));
    if (d > (longer <= 4 ? 1 : longer <= 7 ? 2 : std::max(3, longer / 3))) continue;
    if (d < best_d && d < longer) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto s = suggest(word, candidates);
  return s ? fmt::format("; did you mean '{}'?", *s) : std::string();
}

}  // namespace trainc
