#include "datagen/philox.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace trainrt::philox {

namespace {

struct Kat {
  uint32_t ctr[4], key[2], expected[4];
};

}  // namespace

TEST_CASE("philox4x32-10 matches the Random123 known-answer vectors") {
  // The three philox4x32 10 lines of Random123's tests/kat_vectors (DEShawResearch/random123), and
  // two more from its examples/kat_vectors (as kept in girving/random123-manual).
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
      {{1, 0, 0, 0}, {1, 0}, {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0x00000000, 0xffffffff},
       {0x08f7720c, 0x845ee9e0, 0x502ccd3d, 0xa9a00e27}},
  };
  for (const Kat& k : kats) {
    const Block b = philox4x32_10(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) CHECK(b.v[i] == k.expected[i]);
  }
}

TEST_CASE("draw lays out (row, index, purpose) and the seed as counter and key") {
  const Block a = draw(0xa4093822299f31d0ull, 0x85a308d3243f6a88ull, 0x13198a2e, 0x03707344);
  const Block b = philox4x32_10(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0x299f31d0, 0xa4093822);
  for (int i = 0; i < 4; ++i) CHECK(a.v[i] == b.v[i]);
}

TEST_CASE("uniform mappings cover their ranges exactly") {
  CHECK(uniform24(0) == 0.0f);
  CHECK(uniform24(0xffffffffu) == 1.0f - 0x1p-24f);
  CHECK(uniform24(0x80000000u) == 0.5f);
  CHECK(uniform24_open(0) == 0x1p-24f);
  CHECK(uniform24_open(0xffffffffu) == 1.0f);
  CHECK(below(0, 7) == 0);
  CHECK(below(0xffffffffu, 7) == 6);
}

TEST_CASE("log and cos/sin without libm are accurate") {
  for (float x = 0x1p-24f; x <= 1.0f; x *= 1.0173f) {
    const double want = std::log(static_cast<double>(x));
    CHECK(std::abs(log_positive(x) - want) <= 2e-7 + 2e-7 * std::abs(want));
  }
  CHECK(log_positive(1.0f) == 0.0f);
  for (uint32_t k = 0; k < (1u << 24); k += 4099) {
    const float t = static_cast<float>(k) * 0x1p-24f;
    float c, s;
    cos_sin_2pi(t, c, s);
    const double a = 2 * M_PI * t;
    CHECK(std::abs(c - std::cos(a)) < 3e-7);
    CHECK(std::abs(s - std::sin(a)) < 3e-7);
  }
}

TEST_CASE("Box-Muller gives standard normals") {
  const int n = 1 << 20;
  double sum = 0, sum2 = 0, sum3 = 0, sum4 = 0, within1 = 0, max_abs = 0;
  for (int i = 0; i < n / 4; ++i) {
    float z[4];
    normals4(draw(42, static_cast<uint64_t>(i), 0, 9), z);
    for (float v : z) {
      sum += v;
      sum2 += v * v;
      sum3 += double(v) * v * v;
      sum4 += double(v) * v * v * v;
      within1 += std::abs(v) < 1;
      max_abs = std::max(max_abs, double(std::abs(v)));
    }
  }
  CHECK(std::abs(sum / n) < 0.004);
  CHECK(std::abs(sum2 / n - 1) < 0.006);
  CHECK(std::abs(sum3 / n) < 0.02);
  CHECK(std::abs(sum4 / n - 3) < 0.04);
  CHECK(std::abs(within1 / n - 0.682689) < 0.002);
  CHECK(max_abs <= 5.77);
  CHECK(max_abs > 4.0);
}

}  // namespace trainrt::philox
