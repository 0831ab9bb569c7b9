#include "datagen/cpu_generator.h"

#include <algorithm>
#include <cstring>

#include "datagen/row_generator.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TRAINRT_HAVE_AVX2_PATH 1
#endif

namespace trainrt::datagen {

namespace {

template <typename Words>
inline __attribute__((always_inline)) void rows(const ModelView& model, uint64_t first, uint64_t count, float* features,
                                                float* labels) {
  const uint64_t f = model.features;
  for (uint64_t i = 0; i < count; ++i) make_row<Words>(model, first + i, features + i * f, labels + i);
}

/// Classification rows eight at a time: the per-row scalar work (the label block, the informative
/// blocks and their Box-Muller pairs) runs across the eight rows in SIMD lanes. Each value is
/// computed by the same functions on the same words as in classification_row, so the bits match.
template <typename Words>
inline __attribute__((always_inline)) void classification_rows8(const ModelView& m, uint64_t first, uint64_t count,
                                                                float* features, float* labels) {
  const uint64_t f = m.features;
  uint64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    uint64_t rows[8];
    uint32_t k[8];
    for (int t = 0; t < 8; ++t) {
      rows[t] = first + i + t;
      k[t] = row_cluster(m, rows[t]);
    }
    float* out = features + i * f;
    for (int t = 0; t < 8; ++t)
      for (uint32_t j = 0; j < m.informative; ++j) out[t * f + j] = 0.0f;
    for (uint32_t block = 0; block * 4 < m.informative; ++block) {
      uint32_t w[4][8];
      Words::fill_rows(m.seed, rows, block, kInformative, w);
      float z[4][8] = {};
      const uint32_t left = m.informative - block * 4, used = left < 4 ? left : 4;
      for (int t = 0; t < 8; ++t) philox::box_muller(w[0][t], w[1][t], z[0][t], z[1][t]);
      if (left > 2)
        for (int t = 0; t < 8; ++t) philox::box_muller(w[2][t], w[3][t], z[2][t], z[3][t]);
      for (int t = 0; t < 8; ++t) {
        const float zt[4] = {z[0][t], z[1][t], z[2][t], z[3][t]};
        accumulate_informative(m, k[t], block * 4, zt, used, out + t * f);
      }
    }
    uint32_t lw[4][8];
    Words::fill_rows(m.seed, rows, 0, kLabel, lw);
    for (int t = 0; t < 8; ++t) {
      finish_classification_row<Words>(m, rows[t], k[t], out + t * f);
      labels[i + t] = classification_label(m, k[t], lw[0][t], lw[1][t]);
    }
  }
  for (; i < count; ++i) make_row<Words>(m, first + i, features + i * f, labels + i);
}

template <typename Words>
inline __attribute__((always_inline)) void simd_rows(const ModelView& model, uint64_t first, uint64_t count,
                                                     float* features, float* labels) {
  if (model.task == 0) classification_rows8<Words>(model, first, count, features, labels);
  else rows<Words>(model, first, count, features, labels);
}

void generate_portable(const ModelView& model, uint64_t first, uint64_t count, float* features, float* labels) {
  rows<PortableWords>(model, first, count, features, labels);
}

#ifdef TRAINRT_HAVE_AVX2_PATH

/// 8 Philox blocks at once in AVX2 registers: the same integer operations as philox4x32_10,
/// lane j computing block first_block + j, so the words are identical to PortableWords'.
struct Avx2Words {
  static constexpr bool kWide = false;

  __attribute__((target("avx2"))) static void mulhilo(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
    const __m256i even = _mm256_mul_epu32(a, m);                        // lanes 0, 2, 4, 6: 64-bit products
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
    hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xaa);
    lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xaa);
  }

  /// Ten rounds on 8 lanes of counters.
  __attribute__((target("avx2"))) static void rounds(__m256i c0, __m256i c1, __m256i c2, __m256i c3, uint64_t seed,
                                                     uint32_t* w0, uint32_t* w1, uint32_t* w2, uint32_t* w3) {
    const __m256i m0 = _mm256_set1_epi32(static_cast<int>(philox::kM0));
    const __m256i m1 = _mm256_set1_epi32(static_cast<int>(philox::kM1));
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round, k0 += philox::kW0, k1 += philox::kW1) {
      __m256i hi0, lo0, hi1, lo1;
      mulhilo(c0, m0, hi0, lo0);
      mulhilo(c2, m1, hi1, lo1);
      c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
      c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
      c1 = lo1;
      c3 = lo0;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w0), c0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w1), c1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w2), c2);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w3), c3);
  }

  /// Blocks first_block .. first_block + 7 of one row.
  __attribute__((target("avx2"))) static void fill8(uint64_t seed, uint64_t row, uint32_t first_block,
                                                    uint32_t purpose, uint32_t* w0, uint32_t* w1, uint32_t* w2,
                                                    uint32_t* w3) {
    rounds(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(row))),
           _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(row >> 32))),
           _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first_block)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
           _mm256_set1_epi32(static_cast<int>(purpose)), seed, w0, w1, w2, w3);
  }

  __attribute__((target("avx2"))) static void fill(uint64_t seed, uint64_t row, uint32_t first_block,
                                                   uint32_t purpose, uint32_t count, uint32_t (&w)[4][16]) {
    for (uint32_t at = 0; at < count; at += 8)
      fill8(seed, row, first_block + at, purpose, w[0] + at, w[1] + at, w[2] + at, w[3] + at);
  }

  /// Block `index` of 8 rows.
  __attribute__((target("avx2"))) static void fill_rows(uint64_t seed, const uint64_t (&rows)[8], uint32_t index,
                                                        uint32_t purpose, uint32_t (&w)[4][8]) {
    uint32_t lo[8], hi[8];
    for (int t = 0; t < 8; ++t) {
      lo[t] = static_cast<uint32_t>(rows[t]);
      hi[t] = static_cast<uint32_t>(rows[t] >> 32);
    }
    rounds(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo)),
           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi)), _mm256_set1_epi32(static_cast<int>(index)),
           _mm256_set1_epi32(static_cast<int>(purpose)), seed, w[0], w[1], w[2], w[3]);
  }
};

// GCC 12's avx512fintrin.h trips -Wmaybe-uninitialized on its own _mm512_undefined operands.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/// 16 Philox blocks at once in AVX-512 registers; the same words again.
struct Avx512Words {
  static constexpr bool kWide = true;

  __attribute__((target("avx2"))) static void fill_rows(uint64_t seed, const uint64_t (&rows)[8], uint32_t index,
                                                        uint32_t purpose, uint32_t (&w)[4][8]) {
    Avx2Words::fill_rows(seed, rows, index, purpose, w);
  }

  __attribute__((target("avx512f"))) static void mulhilo(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
    const __m512i even = _mm512_mul_epu32(a, m);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    hi = _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(even, 32), odd);
    lo = _mm512_mask_blend_epi32(0xaaaa, even, _mm512_slli_epi64(odd, 32));
  }

  __attribute__((target("avx512f"))) static void fill(uint64_t seed, uint64_t row, uint32_t first_block,
                                                      uint32_t purpose, uint32_t count, uint32_t (&w)[4][16]) {
    if (count <= 8) return Avx2Words::fill(seed, row, first_block, purpose, count, w);
    __m512i c0 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(row)));
    __m512i c1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(row >> 32)));
    __m512i c2 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first_block)),
                                  _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512i c3 = _mm512_set1_epi32(static_cast<int>(purpose));
    const __m512i m0 = _mm512_set1_epi32(static_cast<int>(philox::kM0));
    const __m512i m1 = _mm512_set1_epi32(static_cast<int>(philox::kM1));
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round, k0 += philox::kW0, k1 += philox::kW1) {
      __m512i hi0, lo0, hi1, lo1;
      mulhilo(c0, m0, hi0, lo0);
      mulhilo(c2, m1, hi1, lo1);
      c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
      c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
      c1 = lo1;
      c3 = lo0;
    }
    _mm512_storeu_si512(w[0], c0);
    _mm512_storeu_si512(w[1], c1);
    _mm512_storeu_si512(w[2], c2);
    _mm512_storeu_si512(w[3], c3);
  }
};

#pragma GCC diagnostic pop

__attribute__((target("avx2"))) void generate_avx2(const ModelView& model, uint64_t first, uint64_t count,
                                                   float* features, float* labels) {
  simd_rows<Avx2Words>(model, first, count, features, labels);
}

// x86-64-v4 is AVX-512 F/BW/CD/DQ/VL; no FMA contraction happens (-ffp-contract=off).
__attribute__((target("arch=x86-64-v4,prefer-vector-width=512"))) void generate_avx512(
    const ModelView& model, uint64_t first, uint64_t count, float* features, float* labels) {
  simd_rows<Avx512Words>(model, first, count, features, labels);
}

bool cpu_has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512cd");
  return yes;
}

bool cpu_has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

#endif

}  // namespace

bool cpu_path_available(CpuPath path) {
#ifdef TRAINRT_HAVE_AVX2_PATH
  if (path == CpuPath::kAvx512) return cpu_has_avx512();
  if (path == CpuPath::kAvx2) return cpu_has_avx2();
#endif
  return path == CpuPath::kPortable;
}

void generate_rows_on(CpuPath path, const ModelView& model, uint64_t first, uint64_t count, float* features,
                      float* labels) {
#ifdef TRAINRT_HAVE_AVX2_PATH
  if (path == CpuPath::kAvx512) return generate_avx512(model, first, count, features, labels);
  if (path == CpuPath::kAvx2) return generate_avx2(model, first, count, features, labels);
#endif
  generate_portable(model, first, count, features, labels);
}

void generate_rows_cpu(const ModelView& model, uint64_t first, uint64_t count, float* features, float* labels) {
  static const CpuPath best = cpu_path_available(CpuPath::kAvx512) ? CpuPath::kAvx512
                              : cpu_path_available(CpuPath::kAvx2) ? CpuPath::kAvx2
                                                                   : CpuPath::kPortable;
  generate_rows_on(best, model, first, count, features, labels);
}

}  // namespace trainrt::datagen
