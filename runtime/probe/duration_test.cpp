#include <doctest/doctest.h>

#include "probe/duration.h"

namespace trainrt {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST_CASE("durations: the forms the compiler writes, compounds and bare seconds") {
  CHECK(parse_duration("90s") == Millis(seconds(90)));
  CHECK(parse_duration("10m") == Millis(minutes(10)));
  CHECK(parse_duration("1h") == Millis(hours(1)));
  CHECK(parse_duration("2d") == Millis(hours(48)));
  CHECK(parse_duration("500ms") == Millis(500));
  CHECK(parse_duration("1h30m") == Millis(minutes(90)));
  CHECK(parse_duration("1m30s250ms") == Millis(90'250));
  CHECK(parse_duration("45") == Millis(seconds(45)));
  CHECK(parse_duration("0s") == Millis(0));
}

TEST_CASE("durations: what is not one") {
  for (const char* bad : {"", "s", "-5s", "1.5s", "10x", "1h30", "m10", " 10s", "10s ", "99999999999999999999s"})
    CHECK_MESSAGE(!parse_duration(bad), bad);
}

TEST_CASE("durations: formatted for messages") {
  CHECK(format_duration(Millis(12'340)) == "12.3s");
  CHECK(format_duration(Millis(0)) == "0s");
  CHECK(format_duration(Millis(seconds(30))) == "30s");
  CHECK(format_duration(Millis(seconds(125))) == "2m5s");
  CHECK(format_duration(Millis(seconds(3607))) == "1h7s");
  CHECK(format_duration(Millis(minutes(10))) == "10m");
  CHECK(format_duration(Millis(hours(48))) == "2d");
  CHECK(format_duration(Millis(hours(50))) == "2d2h");
  // Past a day minutes and seconds are kept too (they were dropped: 1d2h3m4s printed as 1d2h).
  CHECK(format_duration(Millis(seconds(93'784))) == "1d2h3m4s");
}

}  // namespace
}  // namespace trainrt
