#include "probe/duration.h"

#include "common/units.h"

namespace trainrt {

std::optional<Millis> parse_duration(std::string_view text) {
  const std::optional<int64_t> ms = trainc::common::parse_duration_ms(text);
  if (!ms) return std::nullopt;
  return Millis(*ms);
}

std::string format_duration(Millis d) { return trainc::common::format_duration_human(d.count()); }

}  // namespace trainrt
