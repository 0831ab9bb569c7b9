#include "cli_numbers.h"

#include <doctest/doctest.h>

#include <cstdint>

namespace trainrt {

TEST_CASE("whole numbers: plain decimal digits within 64 bits") {
  CHECK(parse_unsigned("0") == uint64_t{0});
  CHECK(parse_unsigned("18446744073709551615") == UINT64_MAX);
  CHECK_FALSE(parse_unsigned("18446744073709551616"));
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "0x10", "1e3", "1.0", "nan", "١"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_unsigned(bad));
  }
  CHECK(parse_signed("-9223372036854775808") == INT64_MIN);
  CHECK_FALSE(parse_signed("9223372036854775808"));
  CHECK_FALSE(parse_signed("-"));
  CHECK_FALSE(parse_signed("--1"));
}

TEST_CASE("real numbers: finite decimals only") {
  CHECK(parse_real("0.5") == 0.5);
  CHECK(parse_real("-1e-3") == -1e-3);
  CHECK(parse_real("+2") == 2.0);
  CHECK(parse_real(".5") == 0.5);
  CHECK(parse_real("5.") == 5.0);
  for (const char* bad :
       {"", "1e400", "-1e400", "nan", "NaN", "inf", "-inf", "0x1p3", "1e", "e5", ".", "1,5", "1.5x"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_real(bad));
  }
}

TEST_CASE("the messages give the range and the text") {
  CHECK(unsigned_problem("7", 1, 99999).empty());
  CHECK(unsigned_problem("9223372036854775807", 1, 99999) ==
        "must be a whole number from 1 to 99999; got '9223372036854775807'");
  CHECK(unsigned_problem("", 1, 5) == "must be a whole number from 1 to 5; got ''");
  CHECK(signed_problem("-2", -1, 10) == "must be a whole number from -1 to 10; got '-2'");
  CHECK(real_problem("nan", 0, 1) == "must be a number from 0 to 1; got 'nan'");
  CHECK(real_problem(std::string(100, '9'), 0, 1).find("(100 characters)") != std::string::npos);
}

TEST_CASE("a validator on an option: CLI11 names the flag") {
  CLI::App app;
  uint32_t shards = 1;
  app.add_option("--shards", shards)->check(whole_number(1, 99999));
  CHECK_NOTHROW(app.parse(std::vector<std::string>{"7", "--shards"}));  // parse takes the arguments reversed
  CHECK(shards == 7);
  try {
    app.parse(std::vector<std::string>{"-1", "--shards"});
    FAIL("accepted --shards -1");
  } catch (const CLI::ValidationError& e) {
    CHECK(std::string(e.what()) == "--shards: must be a whole number from 1 to 99999; got '-1'");
  }
}

}  // namespace trainrt
