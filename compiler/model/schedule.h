#pragma once
// A step run on a schedule (`pipeline[].schedule`): what its Kubernetes CronJob holds, and the
// reading of the cron expression the CronJob controller accepts.

#include <optional>
#include <string>
#include <string_view>

namespace trainc {

struct Schedule {
  std::string cron;                  ///< five fields or a macro, as written
  std::string time_zone = "Etc/UTC";  ///< spec.timeZone
  int starting_deadline_seconds = 3600;
  bool replace = false;  ///< overlap: replace (concurrencyPolicy Replace); else Forbid
  std::string ptr;
};

/// What is wrong with `cron` as the CronJob controller reads it (robfig/cron's standard parser:
/// minute hour day-of-month month day-of-week, each `*`, a number, a range a-b, a step `/n`, or a
/// comma list of those, months and days also by their three-letter names; or a macro such as
/// @daily), or nothing when it is accepted. A TZ= or CRON_TZ= prefix is refused, as Kubernetes
/// refuses it: the zone belongs in `timeZone`.
std::optional<std::string> cron_problem(std::string_view cron);

}  // namespace trainc
