#include "model/schedule.h"

#include <array>
#include <cctype>
#include <charconv>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace trainc {
namespace {

struct Field {
  const char* name;
  int min, max;
  std::array<const char*, 12> names;  ///< names[i] is min + i; empty where the field has none
};

constexpr Field kFields[] = {
    {"minute", 0, 59, {}},
    {"hour", 0, 23, {}},
    {"day of month", 1, 31, {}},
    {"month", 1, 12, {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
    {"day of week", 0, 6, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
};

std::optional<int> number(std::string_view text, const Field& f) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < f.names.size(); ++i)
    if (f.names[i] && lower == f.names[i]) return f.min + static_cast<int>(i);
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

/// One comma-separated part of a field: *, ?, N, N-M, each with an optional /STEP.
std::optional<std::string> part_problem(std::string_view part, const Field& f) {
  std::string_view range = part;
  if (const size_t slash = part.find('/'); slash != std::string_view::npos) {
    range = part.substr(0, slash);
    int step = 0;
    const std::string_view s = part.substr(slash + 1);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || step < 1)
      return fmt::format("'{}' in the {} field: a step after '/' is a whole number of at least 1", part, f.name);
  }
  if (range == "*" || range == "?") return std::nullopt;
  const size_t dash = range.find('-');
  const std::string_view a = range.substr(0, dash), b = dash == std::string_view::npos ? a : range.substr(dash + 1);
  const auto lo = number(a, f), hi = number(b, f);
  if (!lo || !hi)
    return fmt::format("'{}' in the {} field is not {} from {} to {}{}", part, f.name,
                       dash == std::string_view::npos ? "*, a number" : "a range of numbers", f.min, f.max,
                       f.names[0] ? fmt::format(" (or names such as {})", f.names[0]) : "");
  if (*lo < f.min || *hi > f.max)
    return fmt::format("'{}' in the {} field is outside {} to {}", part, f.name, f.min, f.max);
  if (*lo > *hi) return fmt::format("'{}' in the {} field: the range begins after it ends", part, f.name);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> cron_problem(std::string_view cron) {
  std::istringstream in{std::string(cron)};
  std::vector<std::string> fields;
  for (std::string w; in >> w;) fields.push_back(w);
  if (fields.empty()) return "the schedule is empty";
  if (fields[0].starts_with("TZ=") || fields[0].starts_with("CRON_TZ="))
    return fmt::format("'{}': Kubernetes refuses a time zone in the schedule; set `timeZone` instead", fields[0]);
  if (fields[0].starts_with("@")) {
    static const char* const kMacros[] = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"};
    for (const char* m : kMacros)
      if (fields.size() == 1 && fields[0] == m) return std::nullopt;
    if (fields[0] == "@every")
      return "@every is not a calendar time: write the times in the five fields (e.g. \"*/30 * * * *\" every 30 minutes)";
    return fmt::format("'{}' is not a macro the CronJob controller knows (@yearly, @annually, @monthly, @weekly, @daily, "
                       "@midnight, @hourly)",
                       cron);
  }
  if (fields.size() != 5)
    return fmt::format("{} field(s) where cron takes five: minute hour day-of-month month day-of-week (e.g. \"0 3 * * *\")",
                       fields.size());
  for (size_t i = 0; i < 5; ++i) {
    std::string_view rest = fields[i];
    while (true) {
      const size_t comma = rest.find(',');
      if (auto p = part_problem(rest.substr(0, comma), kFields[i])) return p;
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  return std::nullopt;
}

}  // namespace trainc
