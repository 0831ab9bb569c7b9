#include "base/units.h"

#include <doctest/doctest.h>

namespace trainc {

TEST_CASE("quantities") {
  CHECK(parse_quantity("32Gi") == doctest::Approx(32.0 * 1024 * 1024 * 1024));
  CHECK(parse_quantity("500m") == doctest::Approx(0.5));
  CHECK(parse_quantity("4") == doctest::Approx(4));
  CHECK(parse_quantity("1.5G") == doctest::Approx(1.5e9));
  CHECK_FALSE(parse_quantity("32GB").has_value());
  CHECK_FALSE(parse_quantity("Gi").has_value());
  CHECK_FALSE(parse_quantity("-1").has_value());
}

// The grammars themselves are tested in common/units_test.cpp; these pin what the compiler's
// names return.
TEST_CASE("sizes and durations: the compiler's names for the shared grammars") {
  CHECK(parse_byte_size("6TB") == doctest::Approx(6e12));
  CHECK(parse_byte_size("64GiB") == doctest::Approx(64.0 * (1ull << 30)));
  CHECK_FALSE(parse_byte_size("6T").has_value());
  CHECK(parse_duration("90s") == 90);
  CHECK(parse_duration("2d") == 172800);
  CHECK(parse_duration("1h30m") == 5400);
  CHECK(parse_duration("10") == 10);  // a bare number is seconds, as trainrt has always read it
  CHECK_FALSE(parse_duration("1500ms").has_value());  // not whole seconds
  CHECK_FALSE(parse_duration("10 minutes").has_value());
  CHECK(format_duration(600) == "10m");
  CHECK(format_duration(5400) == "90m");
  CHECK(format_duration(7200) == "2h");
  CHECK(format_duration(45) == "45s");
}

}  // namespace trainc
