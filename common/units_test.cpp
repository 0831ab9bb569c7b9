#include "common/units.h"

#include <doctest/doctest.h>

#include <climits>
#include <cstdint>
#include <vector>

namespace trainc::common {
namespace {

/// Deterministic values spread over many magnitudes (a 64-bit LCG).
std::vector<int64_t> spread(int64_t below, int count) {
  std::vector<int64_t> out;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < count; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t limit = below >> (i % 40);  // many small values as well as large ones
    out.push_back(limit > 0 ? static_cast<int64_t>((x >> 1) % static_cast<uint64_t>(limit)) : 0);
  }
  return out;
}

TEST_CASE("byte sizes: decimal and binary units, a bare number is bytes") {
  CHECK(parse_byte_size("6TB") == 6e12);
  CHECK(parse_byte_size("500GB") == 5e11);
  CHECK(parse_byte_size("64GiB") == 64.0 * (1ull << 30));
  CHECK(parse_byte_size("1.5MB") == 1.5e6);
  CHECK(parse_byte_size("100B") == 100);
  CHECK(parse_byte_size("1000") == 1000);
  CHECK(parse_byte_size("1KB") == 1e3);
  CHECK(parse_byte_size("1KiB") == 1024);
  CHECK(parse_byte_size("1MiB") == 1024.0 * 1024);
  CHECK(parse_byte_size("1TiB") == 0x1p40);
  CHECK(parse_byte_size("0B") == 0);
  CHECK(parse_byte_size("007KB") == 7e3);
}

TEST_CASE("byte sizes: PB and PiB, exponents") {
  CHECK(parse_byte_size("1PB") == 1e15);
  CHECK(parse_byte_size("2PiB") == 0x1p51);
  CHECK(parse_byte_size("1.5e9") == 1.5e9);
  CHECK(parse_byte_size("1e3KB") == 1e6);
  CHECK(parse_byte_size("2E2B") == 200);
  CHECK(parse_byte_size("9223PB") == 9.223e18);
}

TEST_CASE("byte sizes: at most 2^63 bytes; overflow is rejected, not wrapped") {
  CHECK(parse_byte_size("8192PiB") == 0x1p63);
  CHECK(parse_byte_size("9223372036854775808") == 0x1p63);
  CHECK_FALSE(parse_byte_size("8193PiB"));
  CHECK_FALSE(parse_byte_size("9224PB"));
  CHECK_FALSE(parse_byte_size("18446744073709551617"));  // 2^64 + 1
  CHECK_FALSE(parse_byte_size("1e19"));
  CHECK_FALSE(parse_byte_size("1e999"));
  CHECK_FALSE(parse_byte_size("1e308PB"));
}

TEST_CASE("byte sizes: what is not one") {
  for (const char* bad : {"", " ", "B", "KB", "6T", "6tb", "6Tb", "6 TB", " 6TB", "6TB ", "6TB\n", "6\tTB", "-1GB",
                          "-0", "+1GB", "1.", ".5GB", "1.GB", "1e", "1e+3", "1e-3KB", "1eKB", "1,5GB", "1_000", "0x10",
                          "nan", "NaNB", "inf", "infB", "1EB", "1EiB", "6 tera", "6TBB", "6iB", "1GB1MB"})
    CHECK_MESSAGE(!parse_byte_size(bad), '"' << bad << '"');
}

TEST_CASE("durations: single units, compounds, milliseconds and bare seconds") {
  CHECK(parse_duration_ms("90s") == 90'000);
  CHECK(parse_duration_ms("10m") == 600'000);
  CHECK(parse_duration_ms("48h") == 172'800'000);
  CHECK(parse_duration_ms("2d") == 172'800'000);
  CHECK(parse_duration_ms("500ms") == 500);
  CHECK(parse_duration_ms("1h30m") == 5'400'000);
  CHECK(parse_duration_ms("1d2h3m4s5ms") == 93'784'005);
  CHECK(parse_duration_ms("1m30s250ms") == 90'250);
  CHECK(parse_duration_ms("30m1h") == 5'400'000);  // any order, as Go's time.ParseDuration
  CHECK(parse_duration_ms("1ms5s") == 5001);         // "ms" is one unit, not minutes then seconds
  CHECK(parse_duration_ms("45") == 45'000);
  CHECK(parse_duration_ms("0") == 0);
  CHECK(parse_duration_ms("0s") == 0);
  CHECK(parse_duration_ms("007s") == 7000);
}

TEST_CASE("durations: overflow of int64 milliseconds is rejected, not wrapped") {
  CHECK(parse_duration_ms("9223372036854775807ms") == INT64_MAX);
  CHECK_FALSE(parse_duration_ms("9223372036854775808ms"));
  CHECK(parse_duration_ms("9223372036854775s") == 9'223'372'036'854'775'000);
  CHECK_FALSE(parse_duration_ms("9223372036854776s"));
  CHECK(parse_duration_ms("9223372036854775") == 9'223'372'036'854'775'000);
  CHECK_FALSE(parse_duration_ms("9223372036854776"));
  CHECK(parse_duration_ms("106751991167d") == 106'751'991'167LL * 86'400'000);
  CHECK_FALSE(parse_duration_ms("106751991168d"));
  CHECK_FALSE(parse_duration_ms("9223372036854775807ms1ms"));  // each group fits; the sum does not
  CHECK_FALSE(parse_duration_ms("106751991167d1d"));
  CHECK_FALSE(parse_duration_ms("99999999999999999999s"));
  CHECK_FALSE(parse_duration_ms("99999999999999999999999999999999999999ms"));
}

TEST_CASE("durations: what is not one") {
  for (const char* bad : {"", "s", "ms", "-5s", "-5", "+5s", "1.5s", "1.5", "1e3s", "10x", "10S", "10M", "1H", "1h30",
                          "m10", " 10s", "10s ", "10 s", "1h 30m", "10\n", "10 minutes", "10min", "10sec", "1w",
                          "1y", "1us", "1ns", "1mss", "1h-30m", "1h,30m", "∞"})
    CHECK_MESSAGE(!parse_duration_ms(bad), '"' << bad << '"');
}

TEST_CASE("durations in whole seconds, for the compiler") {
  CHECK(parse_duration_seconds("90s") == 90);
  CHECK(parse_duration_seconds("1h30m") == 5400);
  CHECK(parse_duration_seconds("2000ms") == 2);
  CHECK(parse_duration_seconds("45") == 45);
  CHECK(parse_duration_seconds("0s") == 0);  // the compiler rejects zero where it must be positive
  CHECK(parse_duration_seconds("2147483647s") == INT_MAX);
  CHECK_FALSE(parse_duration_seconds("2147483648s"));
  CHECK_FALSE(parse_duration_seconds("24856d"));
  CHECK_FALSE(parse_duration_seconds("1500ms"));
  CHECK_FALSE(parse_duration_seconds("1s1ms"));
  CHECK_FALSE(parse_duration_seconds("10 minutes"));
}

TEST_CASE("durations: the single-unit form trainc writes") {
  CHECK(format_duration_single_unit(600) == "10m");
  CHECK(format_duration_single_unit(5400) == "90m");
  CHECK(format_duration_single_unit(7200) == "2h");
  CHECK(format_duration_single_unit(86400) == "1d");
  CHECK(format_duration_single_unit(90000) == "25h");
  CHECK(format_duration_single_unit(45) == "45s");
  CHECK(format_duration_single_unit(3601) == "3601s");
  CHECK(format_duration_single_unit(0) == "0s");
}

TEST_CASE("durations: the human form for messages") {
  CHECK(format_duration_human(12'340) == "12.3s");
  CHECK(format_duration_human(500) == "0.5s");
  CHECK(format_duration_human(0) == "0s");
  CHECK(format_duration_human(30'000) == "30s");
  CHECK(format_duration_human(125'000) == "2m5s");
  CHECK(format_duration_human(125'999) == "2m5s");  // above a minute, whole seconds
  CHECK(format_duration_human(3'607'000) == "1h7s");
  CHECK(format_duration_human(600'000) == "10m");
  CHECK(format_duration_human(172'800'000) == "2d");
  CHECK(format_duration_human(180'000'000) == "2d2h");
  CHECK(format_duration_human(93'784'000) == "1d2h3m4s");
  CHECK(format_duration_human(-90'000) == "-1m30s");
  CHECK(format_duration_human(INT64_MIN) == "-106751991167d7h12m55s");
  CHECK(format_duration_human(INT64_MAX) == "106751991167d7h12m55s");
}

TEST_CASE("durations: what either formatter writes parses back to the same value") {
  std::vector<int64_t> seconds = spread(INT_MAX, 4000);
  for (int64_t s : {0LL, 1LL, 59LL, 60LL, 61LL, 3599LL, 3600LL, 3601LL, 86'399LL, 86'400LL, 86'401LL, 90'000LL,
                    static_cast<long long>(INT_MAX)})
    seconds.push_back(s);
  for (int64_t s : seconds) {
    const std::string one = format_duration_single_unit(s);
    REQUIRE_MESSAGE(parse_duration_seconds(one) == s, one);
    REQUIRE_MESSAGE(parse_duration_ms(one) == s * 1000, one);
    const std::string human = format_duration_human(s * 1000);
    REQUIRE_MESSAGE(parse_duration_ms(human) == s * 1000, human);
  }
  // The human form keeps whole seconds exactly for any int64 count of milliseconds.
  for (int64_t ms : spread(INT64_MAX, 4000)) {
    const int64_t whole = ms - ms % 1000;
    REQUIRE_MESSAGE(parse_duration_ms(format_duration_human(whole)) == whole, whole);
    if (ms >= 60'000) REQUIRE_MESSAGE(parse_duration_ms(format_duration_human(ms)) == whole, ms);
  }
}

}  // namespace
}  // namespace trainc::common
