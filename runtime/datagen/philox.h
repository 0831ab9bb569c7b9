#pragma once
// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC11) and the
// mappings trainrt draws from it. Counter-based: every value is a pure function of (key, counter),
// so any thread, shard, process or GPU computes the same bits for the same (seed, row, column, purpose).
//
// The same code compiles into the CPU path and the CUDA kernel. Only integer operations and IEEE
// float +, -, *, / and sqrt are used, never libm, so both give the same bits provided the compiler
// does not contract a*b+c into an FMA: the datagen module builds with -ffp-contract=off and nvcc
// with --fmad=false.
//
// Mappings (documented because the data set depends on them):
//   uniform24(x)      = (x >> 8) * 2^-24            in [0, 1), 24 bits, exact in float
//   uniform24_open(x) = ((x >> 8) + 1) * 2^-24      in (0, 1], for the logarithm
//   box_muller(a, b)  : r = sqrt(-2 ln uniform24_open(a)), t = uniform24(b);
//                       (r cos 2πt, r sin 2πt). |z| <= 5.77 (r at a = 0), a tail cut at p < 1e-8.
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define TRAINRT_HD __host__ __device__ __forceinline__
#else
#define TRAINRT_HD inline __attribute__((always_inline))
#endif

namespace trainrt::philox {

inline constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  ///< round multipliers
inline constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  ///< Weyl key increments

struct Block {
  uint32_t v[4];
};

/// 32x32 -> 64 bit product split into its high and low words.
TRAINRT_HD void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#ifdef __CUDA_ARCH__
  hi = __umulhi(a, b);
  lo = a * b;
#else
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
#endif
}

/// One Philox round: two multiplications, the Feistel-like swap and the key mix.
TRAINRT_HD void philox_round(uint32_t (&c)[4], uint32_t k0, uint32_t k1) {
  uint32_t hi0, lo0, hi1, lo1;
  mulhilo(kM0, c[0], hi0, lo0);
  mulhilo(kM1, c[2], hi1, lo1);
  const uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

/// Philox4x32 with 10 rounds: counter (c0..c3) and key (k0, k1) -> 4 random words. The rounds are
/// spelled out (the key bumped by the Weyl constants between them) so no unroll pragma is needed.
TRAINRT_HD Block philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  uint32_t c[4] = {c0, c1, c2, c3};
  philox_round(c, k0, k1);
  philox_round(c, k0 + 1 * kW0, k1 + 1 * kW1);
  philox_round(c, k0 + 2 * kW0, k1 + 2 * kW1);
  philox_round(c, k0 + 3 * kW0, k1 + 3 * kW1);
  philox_round(c, k0 + 4 * kW0, k1 + 4 * kW1);
  philox_round(c, k0 + 5 * kW0, k1 + 5 * kW1);
  philox_round(c, k0 + 6 * kW0, k1 + 6 * kW1);
  philox_round(c, k0 + 7 * kW0, k1 + 7 * kW1);
  philox_round(c, k0 + 8 * kW0, k1 + 8 * kW1);
  philox_round(c, k0 + 9 * kW0, k1 + 9 * kW1);
  return Block{{c[0], c[1], c[2], c[3]}};
}

/// trainrt's counter layout: key = seed, counter = (row low, row high, index, purpose).
TRAINRT_HD Block draw(uint64_t seed, uint64_t row, uint32_t index, uint32_t purpose) {
  return philox4x32_10(static_cast<uint32_t>(row), static_cast<uint32_t>(row >> 32), index, purpose,
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// [0, 1) with 24 random bits; every value is exactly representable.
TRAINRT_HD float uniform24(uint32_t x) { return static_cast<float>(static_cast<int32_t>(x >> 8)) * 0x1p-24f; }

/// (0, 1]: never 0, so its logarithm is finite.
TRAINRT_HD float uniform24_open(uint32_t x) { return static_cast<float>(static_cast<int32_t>((x >> 8) + 1u)) * 0x1p-24f; }

TRAINRT_HD uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

TRAINRT_HD float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// Natural logarithm for normal x > 0 from + - * / only (no libm): x = m 2^e with m in
/// [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.172, series to s^9
/// (truncation below 1e-9 relative). Accurate to a few float ulps.
TRAINRT_HD float log_positive(float x) {
  const uint32_t bits = float_bits(x);
  // m in [1, 2); halve it (and bump the exponent) when above sqrt(2). Branch-free, so it vectorises.
  const uint32_t big = ((bits & 0x007fffffu) > 0x003504f3u) ? 1u : 0u;  // mantissa of sqrt(2)
  const int e = static_cast<int>((bits >> 23) & 0xffu) - 127 + static_cast<int>(big);
  const float m = bits_float((bits & 0x007fffffu) | ((127u - big) << 23));
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  const float series = s * (2.0f + s2 * (0.666666667f + s2 * (0.4f + s2 * (0.285714286f + s2 * 0.222222222f))));
  return static_cast<float>(e) * 0.693147181f + series;
}

/// cos and sin of 2πt for t in [0, 1): quadrant from round(4t), then Taylor series on
/// |θ| <= π/4 (errors below 3e-8), so no range reduction error. Quadrants by swaps and sign
/// flips on the bits, which are exact.
TRAINRT_HD void cos_sin_2pi(float t, float& c, float& s) {
  const float q4 = t * 4.0f;                         // exact: t has 24 bits
  const int q = static_cast<int>(q4 + 0.5f);         // 0..4
  const float f = q4 - static_cast<float>(q);        // [-0.5, 0.5], exact
  const float th = f * 1.57079633f;                  // θ in [-π/4, π/4]
  const float t2 = th * th;
  const float sn = th * (1.0f + t2 * (-0.166666667f + t2 * (8.33333333e-3f + t2 * (-1.98412698e-4f + t2 * 2.75573192e-6f))));
  const float cs = 1.0f + t2 * (-0.5f + t2 * (4.16666667e-2f + t2 * (-1.38888889e-3f + t2 * 2.48015873e-5f)));
  // angle = q π/2 + θ: quadrants 1 and 3 swap cos and sin; cos < 0 in 1, 2; sin < 0 in 2, 3.
  const uint32_t quadrant = static_cast<uint32_t>(q) & 3u;
  const float c0 = (quadrant & 1u) ? sn : cs;
  const float s0 = (quadrant & 1u) ? cs : sn;
  c = bits_float(float_bits(c0) ^ (((quadrant + 1u) & 2u) << 30));
  s = bits_float(float_bits(s0) ^ ((quadrant & 2u) << 30));
}

TRAINRT_HD float sqrt_rn(float x) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(x);
#else
  return __builtin_sqrtf(x);
#endif
}

/// Two independent N(0, 1) values from two random words (Box-Muller).
TRAINRT_HD void box_muller(uint32_t a, uint32_t b, float& z0, float& z1) {
  const float r = sqrt_rn(-2.0f * log_positive(uniform24_open(a)));
  float c, s;
  cos_sin_2pi(uniform24(b), c, s);
  z0 = r * c;
  z1 = r * s;
}

/// Four N(0, 1) values from one Philox block: (v0, v1) and (v2, v3) through Box-Muller.
TRAINRT_HD void normals4(const Block& b, float* out) {
  box_muller(b.v[0], b.v[1], out[0], out[1]);
  box_muller(b.v[2], b.v[3], out[2], out[3]);
}

/// An unbiased-enough integer in [0, n) from one random word (multiply-shift).
TRAINRT_HD uint32_t below(uint32_t x, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(x) * n) >> 32);
}

}  // namespace trainrt::philox
