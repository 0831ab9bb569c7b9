#include <doctest/doctest.h>

#include "preflight/bandwidth.h"

namespace trainrt::preflight {
namespace {

TEST_CASE("bus bandwidth: algbw x 2(n-1)/n, as nccl-tests computes it for all-reduce") {
  // 1 GB in 10 ms: 100 GB/s algbw.
  Bandwidth b = allreduce_bandwidth(1'000'000'000, 0.01, 16);
  CHECK(b.algbw_gbps == doctest::Approx(100.0));
  CHECK(b.busbw_gbps == doctest::Approx(100.0 * 2 * 15 / 16));  // 187.5
  CHECK(allreduce_bandwidth(1'000'000'000, 0.01, 2).busbw_gbps == doctest::Approx(100.0));
  CHECK(allreduce_bandwidth(1'000'000'000, 0.01, 8).busbw_gbps == doctest::Approx(175.0));
  // One rank moves nothing over links.
  CHECK(allreduce_bandwidth(1'000'000'000, 0.01, 1).busbw_gbps == 0.0);
  // 128 MiB over 8 GPUs in 1.5 ms.
  Bandwidth t = allreduce_bandwidth(134'217'728, 0.0015, 8);
  CHECK(t.algbw_gbps == doctest::Approx(89.478).epsilon(1e-4));
  CHECK(t.busbw_gbps == doctest::Approx(156.59).epsilon(1e-4));
  CHECK(allreduce_bandwidth(1, 0, 4).algbw_gbps == 0.0);  // no time measured: no figure
}

TEST_CASE("sizes: binary, decimal and nccl-tests' short suffixes") {
  CHECK(parse_bytes("256MiB") == 256ull << 20);
  CHECK(parse_bytes("1GiB") == 1ull << 30);
  CHECK(parse_bytes("4KiB") == 4096u);
  CHECK(parse_bytes("1GB") == 1'000'000'000u);
  CHECK(parse_bytes("500MB") == 500'000'000u);
  CHECK(parse_bytes("64M") == 64ull << 20);
  CHECK(parse_bytes("4096") == 4096u);
  CHECK(parse_bytes("8B") == 8u);
  for (const char* bad : {"", "0", "MiB", "1.5GiB", "12 MiB", "-1", "1Gib", "99999999999TiB"})
    CHECK_MESSAGE(!parse_bytes(bad), bad);
  CHECK(format_bytes(256ull << 20) == "256 MiB");
  CHECK(format_bytes(1000) == "1000 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
}

}  // namespace
}  // namespace trainrt::preflight
