#include "base/spelling.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include <fmt/format.h>

namespace trainc {

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diag = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

static std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::optional<std::string> suggest(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  int best_d = 4;
  const std::string w = lower(word);
  for (const auto& c : candidates) {
    // Case differences count as half an edit, so 'ImagePullPolicy' finds 'imagePullPolicy'.
    int d = edit_distance(w, lower(c));
    if (d == 0 && c != word) d = 1;
    if (d < best_d && d < static_cast<int>(std::max(word.size(), c.size()))) {
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
