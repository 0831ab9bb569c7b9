#include "model/schedule.h"

#include <doctest/doctest.h>

namespace trainc {

TEST_CASE("cron expressions: what the CronJob controller's standard parser accepts") {
  for (const char* ok : {"0 3 * * *", "*/15 * * * *", "0 0 1 jan,jul *", "30 2 * * MON-FRI", "0 0 ? * sun",
                         "0-30/10 8-18 1,15 * 1-5", "@daily", "@hourly", "@annually", "0  3 * *   *"})
    CHECK_MESSAGE(!cron_problem(ok), ok);
  CHECK(cron_problem("0 3 * *")->find("4 field(s) where cron takes five") == 0);
  CHECK(cron_problem("0 24 * * *")->find("'24' in the hour field is outside 0 to 23") == 0);
  CHECK(cron_problem("0 3 * * 7")->find("outside 0 to 6") != std::string::npos);
  CHECK(cron_problem("0 3 0 * *")->find("day of month field is outside 1 to 31") != std::string::npos);
  CHECK(cron_problem("*/0 * * * *")->find("a step after '/' is a whole number of at least 1") != std::string::npos);
  CHECK(cron_problem("0 5-3 * * *")->find("the range begins after it ends") != std::string::npos);
  CHECK(cron_problem("0 3 * foo *")->find("(or names such as jan)") != std::string::npos);
  CHECK(cron_problem("1,,2 * * * *"));
  CHECK(cron_problem("TZ=Europe/Berlin 0 3 * * *")->find("set `timeZone` instead") != std::string::npos);
  CHECK(cron_problem("CRON_TZ=UTC 0 3 * * *"));
  CHECK(cron_problem("@every 1h")->find("not a calendar time") != std::string::npos);
  CHECK(cron_problem("@nightly")->find("not a macro") != std::string::npos);
  CHECK(cron_problem("   ") == "the schedule is empty");
}

}  // namespace trainc
