#include "datagen/cpu_generator.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "datagen/row_generator.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "datagen/simd_mix.h"
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
  if (model.task == 0)
    classification_rows8<Words>(model, first, count, features, labels);
  else
    rows<Words>(model, first, count, features, labels);
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
  __attribute__((target("avx2"))) static void fill8(uint64_t seed, uint64_t row, uint32_t first_block, uint32_t purpose,
                                                    uint32_t* w0, uint32_t* w1, uint32_t* w2, uint32_t* w3) {
    rounds(
        _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(row))),
        _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(row >> 32))),
        _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first_block)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
        _mm256_set1_epi32(static_cast<int>(purpose)), seed, w0, w1, w2, w3);
  }

  __attribute__((target("avx2"))) static void fill(uint64_t seed, uint64_t row, uint32_t first_block, uint32_t purpose,
                                                   uint32_t count, uint32_t (&w)[4][16]) {
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
/// The round keys of a seed as 32-bit words, (k0, k1) of round r at 2r and 2r + 1.
struct RoundKeys {
  alignas(64) uint32_t k[20];
  explicit RoundKeys(uint64_t seed) {
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r, k0 += philox::kW0, k1 += philox::kW1) {
      k[2 * r] = k0;
      k[2 * r + 1] = k1;
    }
  }
};

struct Avx512Words {
  static constexpr bool kWide = true;

  __attribute__((target("avx2"))) static void fill_rows(uint64_t seed, const uint64_t (&rows)[8], uint32_t index,
                                                        uint32_t purpose, uint32_t (&w)[4][8]) {
    Avx2Words::fill_rows(seed, rows, index, purpose, w);
  }

  /// The even lanes' products are 64-bit words of `even`, the odd lanes' of `odd`; a masked
  /// swap of each word's halves moves the other half of one into the other: 5 operations where
  /// a shift and a blend per half took 7.
  __attribute__((target("avx512f"))) static void mulhilo(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
    const __m512i even = _mm512_mul_epu32(a, m);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    hi = _mm512_mask_shuffle_epi32(odd, 0x5555, even, _MM_PERM_CDAB);
    lo = _mm512_mask_shuffle_epi32(even, 0xaaaa, odd, _MM_PERM_CDAB);
  }

  /// Ten Philox rounds on 16 lanes of counters; the words of lane j into w[k][j]. The round keys are
  /// read from memory (a broadcast load) rather than broadcast from a general register, which took a
  /// vector ALU slot per key per call.
  __attribute__((target("avx512f"))) static void rounds(const RoundKeys& keys, __m512i c0, __m512i c1, __m512i c2,
                                                        __m512i c3, uint32_t (&w)[4][16]) {
    const __m512i m0 = _mm512_set1_epi32(static_cast<int>(philox::kM0));
    const __m512i m1 = _mm512_set1_epi32(static_cast<int>(philox::kM1));
    for (int round = 0; round < 10; ++round) {
      __m512i hi0, lo0, hi1, lo1;
      mulhilo(c0, m0, hi0, lo0);
      mulhilo(c2, m1, hi1, lo1);
      c0 = _mm512_ternarylogic_epi32(hi1, c1, _mm512_set1_epi32(static_cast<int>(keys.k[2 * round])), 0x96);
      c2 = _mm512_ternarylogic_epi32(hi0, c3, _mm512_set1_epi32(static_cast<int>(keys.k[2 * round + 1])), 0x96);
      c1 = lo1;
      c3 = lo0;
    }
    _mm512_storeu_si512(w[0], c0);
    _mm512_storeu_si512(w[1], c1);
    _mm512_storeu_si512(w[2], c2);
    _mm512_storeu_si512(w[3], c3);
  }

  __attribute__((target("avx512f"))) static void fill(uint64_t seed, uint64_t row, uint32_t first_block,
                                                      uint32_t purpose, uint32_t count, uint32_t (&w)[4][16]) {
    if (count <= 8) return Avx2Words::fill(seed, row, first_block, purpose, count, w);
    const __m512i c0 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(row)));
    const __m512i c1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(row >> 32)));
    rounds(RoundKeys(seed), c0, c1,
           _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first_block)),
                            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
           _mm512_set1_epi32(static_cast<int>(purpose)), w);
  }
};

// x86-64-v4 is AVX-512 F/BW/CD/DQ/VL. Clang 14 (the fuzz build) takes no arch= in a target
// attribute, so it gets the same features by name.
#ifdef __clang__
#define TRAINRT_V4 __attribute__((target("avx2,avx512f,avx512bw,avx512cd,avx512dq,avx512vl")))
#else
#define TRAINRT_V4 __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))
#endif

/// The AVX-512 path proper: rows in batches of 16, every per-row step across rows in SIMD lanes.
/// A Philox lane's counter is any (row, index, purpose), so the noise blocks of 16 rows are laid
/// out as one flat sequence of (row, block) pairs, 16 per register, none wasted; the Feistel
/// permutation runs 8 rows per register with vpmullq, lanes that must cycle-walk masked.
namespace v4 {

constexpr uint32_t kRows = 16;

/// Ten Philox rounds on 16 lanes of counters (Avx512Words::rounds, inlined here).
TRAINRT_V4 inline void philox16(const RoundKeys& keys, __m512i c0, __m512i c1, __m512i c2, __m512i c3,
                                uint32_t (&w)[4][16]) {
  Avx512Words::rounds(keys, c0, c1, c2, c3, w);
}

/// Box-Muller on 16 word pairs; the scalar function, vectorised by the compiler (same operations).
TRAINRT_V4 inline void box_muller16(const uint32_t* a, const uint32_t* b, float* z0, float* z1) {
  for (int t = 0; t < 16; ++t) philox::box_muller(a[t], b[t], z0[t], z1[t]);
}

/// One pass of permute_row's Feistel network on 8 lanes.
TRAINRT_V4 inline __m512i feistel8(const ModelView& m, __m512i x) {
  const __m128i h = _mm_cvtsi32_si128(static_cast<int>(m.perm_half_bits));
  const __m512i mask = _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << m.perm_half_bits) - 1));
  __m512i left = _mm512_srl_epi64(x, h), right = _mm512_and_si512(x, mask);
  for (int i = 0; i < 4; ++i) {
    const __m512i key = _mm512_set1_epi64(static_cast<long long>(m.perm_keys[i]));
    const __m512i next = _mm512_xor_si512(left, _mm512_and_si512(mix64x8(_mm512_xor_si512(right, key)), mask));
    left = right;
    right = next;
  }
  return _mm512_or_si512(_mm512_sll_epi64(left, h), right);
}

/// permute_row for rows first .. first + 7: lanes still outside the table walk on, the others wait.
TRAINRT_V4 inline void permute8(const ModelView& m, uint64_t first, uint64_t* pos) {
  const __m512i rows = _mm512_set1_epi64(static_cast<long long>(m.rows));
  __m512i x =
      _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first)), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
  x = feistel8(m, x);
  for (__mmask8 walk = _mm512_cmpge_epu64_mask(x, rows); walk; walk = _mm512_cmpge_epu64_mask(x, rows))
    x = _mm512_mask_mov_epi64(x, walk, feistel8(m, x));
  _mm512_storeu_si512(pos, x);
}

/// Counters for 16 rows first + lane offset: low and high words of the row (carry included).
struct RowCounters {
  __m512i lo, hi;
};

TRAINRT_V4 inline RowCounters row_counters(uint64_t first, __m512i offsets) {
  const __m512i base = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first)));
  const __m512i lo = _mm512_add_epi32(base, offsets);
  const __mmask16 carry = _mm512_cmplt_epu32_mask(lo, base);
  const __m512i hi = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first >> 32)));
  return {lo, _mm512_mask_add_epi32(hi, carry, hi, _mm512_set1_epi32(1))};
}

/// The flat (row, block) sequence of a batch: pair p is block p % blocks of row p / blocks; and a
/// buffer for 16 rows of normals.
struct NoiseLayout {
  uint32_t blocks = 0, pairs = 0;  ///< blocks per row; kRows * blocks pairs (a multiple of 16)
  std::vector<uint32_t> row_of, block_of;
  std::vector<float> buffer;
  explicit NoiseLayout(uint32_t values) : blocks((values + 3) / 4), pairs(kRows * blocks) {
    row_of.resize(pairs);
    block_of.resize(pairs);
    buffer.resize(4 * static_cast<size_t>(pairs));
    for (uint32_t p = 0; p < pairs; ++p) {
      row_of[p] = p / blocks;
      block_of[p] = p % blocks;
    }
  }

  /// The layout for rows of `values` normals, made once per thread and row width: the Parquet
  /// writer asks for rows a tile (a few hundred) at a time, and building it each time showed in
  /// its profile.
  static NoiseLayout& of(uint32_t values) {
    thread_local std::vector<std::unique_ptr<NoiseLayout>> made;
    for (auto& l : made)
      if (l->blocks == (values + 3) / 4) return *l;
    made.push_back(std::make_unique<NoiseLayout>(values));
    return *made.back();
  }
};

/// Where normals16 puts row t's values: from out + t * stride + at, the first `used` of them (a row's
/// last block may hold more than the row needs; those are not stored).
struct NoiseRows {
  float* out;
  uint64_t stride;
  uint32_t at, used;
};

/// The `purpose` normals of rows first .. first + 15 (value i of a row from block i / 4, as
/// row_normals draws them), stored where `rows` says. Each store of 16 values is 4 blocks of one
/// row when a row has a multiple of 4 blocks (make_classification's 46 noise columns: 12), so they
/// go straight to the row; otherwise through the layout's buffer (16 rows of 4 * blocks) and a copy
/// per row.
TRAINRT_V4 inline void normals16(const RoundKeys& keys, uint64_t first, uint32_t purpose, NoiseLayout& l,
                                 const NoiseRows& rows) {
  const bool direct = l.blocks % 4 == 0;
  float* out = l.buffer.data();
  const __m512i kind = _mm512_set1_epi32(static_cast<int>(purpose));
  for (uint32_t p = 0; p < l.pairs; p += 16) {
    const RowCounters c = row_counters(first, _mm512_loadu_si512(l.row_of.data() + p));
    uint32_t w[4][16];
    philox16(keys, c.lo, c.hi, _mm512_loadu_si512(l.block_of.data() + p), kind, w);
    alignas(64) float z[4][16];
    box_muller16(w[0], w[1], z[0], z[1]);
    box_muller16(w[2], w[3], z[2], z[3]);
    // 4 x 16 -> 16 x 4: pair q's (z0, z1, z2, z3) to out[4 (p + q)].
    const __m512 z0 = _mm512_load_ps(z[0]), z1 = _mm512_load_ps(z[1]);
    const __m512 z2 = _mm512_load_ps(z[2]), z3 = _mm512_load_ps(z[3]);
    const __m512 a = _mm512_unpacklo_ps(z0, z1), b = _mm512_unpackhi_ps(z0, z1);
    const __m512 cc = _mm512_unpacklo_ps(z2, z3), d = _mm512_unpackhi_ps(z2, z3);
    const __m512 e = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(cc)));
    const __m512 f = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(cc)));
    const __m512 g = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(b), _mm512_castps_pd(d)));
    const __m512 h = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(b), _mm512_castps_pd(d)));
    const __m512 t0 = _mm512_shuffle_f32x4(e, f, 0x44), t1 = _mm512_shuffle_f32x4(g, h, 0x44);
    const __m512 t2 = _mm512_shuffle_f32x4(e, f, 0xee), t3 = _mm512_shuffle_f32x4(g, h, 0xee);
    const __m512 v[4] = {_mm512_shuffle_f32x4(t0, t1, 0x88), _mm512_shuffle_f32x4(t0, t1, 0xdd),
                         _mm512_shuffle_f32x4(t2, t3, 0x88), _mm512_shuffle_f32x4(t2, t3, 0xdd)};
    if (!direct) {
      for (uint32_t q = 0; q < 4; ++q) _mm512_storeu_ps(out + 4 * p + 16 * q, v[q]);
      continue;
    }
    for (uint32_t q = 0; q < 4; ++q) {
      const uint32_t pair = p + 4 * q, value = 4 * l.block_of[pair];
      const uint32_t left = rows.used - value;  // > 0: a block holds at least one used value
      float* to = rows.out + l.row_of[pair] * rows.stride + rows.at + value;
      if (left >= 16)
        _mm512_storeu_ps(to, v[q]);
      else
        _mm512_mask_storeu_ps(to, static_cast<__mmask16>((1u << left) - 1u), v[q]);
    }
  }
  if (direct) return;
  for (uint32_t t = 0; t < kRows; ++t)
    std::memcpy(rows.out + t * rows.stride + rows.at, out + t * 4 * l.blocks, rows.used * sizeof(float));
}

/// The dense columns of 16 rows in registers, for tables of at most 16 clusters and 8 informative and
/// redundant columns (make_classification's usual shapes): each per-cluster coefficient is picked per
/// lane from a register (vpermps), and every column is summed in the order accumulate_informative and
/// classification_dense_columns use, with separate multiplies and adds, so the bits are theirs.
struct DenseTables {
  static constexpr uint32_t kMaxClusters = 16, kMaxColumns = 8;
  bool usable = false;
  /// (i, j) -> 16 lanes: A_k[i][j] for cluster k in lane k; only the entries of the table's
  /// informative columns are filled. No allocation: the Parquet writer makes these a tile of rows
  /// at a time.
  float coef[kMaxColumns * kMaxColumns * 16];
  float centroid[kMaxColumns * 16];  ///< j -> 16 lanes: c_k[j]
  static bool serves(const ModelView& m) {
    return m.clusters <= kMaxClusters && m.informative <= kMaxColumns && m.redundant <= kMaxColumns;
  }
  explicit DenseTables(const ModelView& m) {
    const uint32_t ni = m.informative;
    usable = serves(m);
    if (!usable) return;
    for (uint32_t k = 0; k < 16; ++k)  // lanes from m.clusters on: zeros, never picked
      for (uint32_t i = 0; i < ni; ++i) {
        const bool real = k < m.clusters;
        centroid[i * 16 + k] = real ? m.centroids[static_cast<uint64_t>(k) * ni + i] : 0.0f;
        for (uint32_t j = 0; j < ni; ++j)
          coef[(i * ni + j) * 16 + k] = real ? m.covariance[(static_cast<uint64_t>(k) * ni + i) * ni + j] : 0.0f;
      }
  }
};

/// cluster_of for 16 positions when the table has at most 16 clusters: the number of cluster ends at
/// or below the position (cluster_end increases).
TRAINRT_V4 inline __m512i clusters16(const ModelView& m, const uint64_t* pos) {
  const __m512i p0 = _mm512_loadu_si512(pos), p1 = _mm512_loadu_si512(pos + 8);
  __m512i k0 = _mm512_setzero_si512(), k1 = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi64(1);
  for (uint32_t j = 0; j + 1 < m.clusters; ++j) {
    const __m512i end = _mm512_set1_epi64(static_cast<long long>(m.cluster_end[j]));
    k0 = _mm512_mask_add_epi64(k0, _mm512_cmpge_epu64_mask(p0, end), k0, one);
    k1 = _mm512_mask_add_epi64(k1, _mm512_cmpge_epu64_mask(p1, end), k1, one);
  }
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(k0)), _mm512_cvtepi64_epi32(k1), 1);
}

/// Rows first .. first + 15 of a table DenseTables can serve: clusters, informative blocks, dense
/// columns in registers, then written to the rows; k receives the clusters.
/// With `column_stride` > 0 the rows are columns instead: column c of the 16 rows at
/// out + c * column_stride, 16 floats each (the Parquet writer's column-major row group).
TRAINRT_V4 inline void dense16(const ModelView& m, const RoundKeys& keys, const DenseTables& tab, const uint64_t* pos,
                               const RowCounters& rc, float* out, uint64_t f, uint32_t* k, uint64_t column_stride = 0) {
  const uint32_t ni = m.informative, nr = m.redundant;
  const __m512i kv = clusters16(m, pos);
  _mm512_storeu_si512(k, kv);
  __m512 x[DenseTables::kMaxColumns], red[DenseTables::kMaxColumns];
  for (uint32_t j = 0; j < ni; ++j) x[j] = _mm512_setzero_ps();
  for (uint32_t block = 0; block * 4 < ni; ++block) {
    uint32_t w[4][16];
    philox16(keys, rc.lo, rc.hi, _mm512_set1_epi32(static_cast<int>(block)), _mm512_set1_epi32(kInformative), w);
    alignas(64) float z[4][16] = {};
    const uint32_t left = ni - block * 4, used = left < 4 ? left : 4;
    box_muller16(w[0], w[1], z[0], z[1]);
    if (left > 2) box_muller16(w[2], w[3], z[2], z[3]);
    for (uint32_t t = 0; t < used; ++t) {
      const uint32_t i = block * 4 + t;
      const __m512 zi = _mm512_load_ps(z[t]);
      for (uint32_t j = 0; j < ni; ++j) {
        const __m512 a = _mm512_permutexvar_ps(kv, _mm512_loadu_ps(tab.coef + (i * ni + j) * 16));
        x[j] = _mm512_add_ps(x[j], _mm512_mul_ps(zi, a));
      }
    }
  }
  for (uint32_t j = 0; j < ni; ++j)
    x[j] = _mm512_add_ps(x[j], _mm512_permutexvar_ps(kv, _mm512_loadu_ps(tab.centroid + j * 16)));
  for (uint32_t r = 0; r < nr; ++r) red[r] = _mm512_setzero_ps();
  for (uint32_t i = 0; i < ni; ++i)
    for (uint32_t r = 0; r < nr; ++r)
      red[r] = _mm512_add_ps(red[r],
                             _mm512_mul_ps(x[i], _mm512_set1_ps(m.redundant_mix[static_cast<uint64_t>(i) * nr + r])));
  if (column_stride > 0) {
    for (uint32_t j = 0; j < ni; ++j) _mm512_storeu_ps(out + j * column_stride, x[j]);
    for (uint32_t r = 0; r < nr; ++r) _mm512_storeu_ps(out + (ni + r) * column_stride, red[r]);
    for (uint32_t p = 0; p < m.repeated; ++p)
      _mm512_storeu_ps(out + (ni + nr + p) * column_stride,
                       _mm512_loadu_ps(out + static_cast<uint64_t>(m.repeated_from[p]) * column_stride));
    return;
  }
  alignas(64) float cols[2 * DenseTables::kMaxColumns][16];
  for (uint32_t j = 0; j < ni; ++j) _mm512_store_ps(cols[j], x[j]);
  for (uint32_t r = 0; r < nr; ++r) _mm512_store_ps(cols[ni + r], red[r]);
  for (uint32_t t = 0; t < kRows; ++t) {
    float* row = out + t * f;
    for (uint32_t c = 0; c < ni + nr; ++c) row[c] = cols[c][t];
    for (uint32_t p = 0; p < m.repeated; ++p) row[ni + nr + p] = row[m.repeated_from[p]];
  }
}

/// classification_label for 16 rows whose clusters `k` are below 16 (the DenseTables path): the class of
/// each cluster picked from a register, the flip and the random class in SIMD, the same integers.
TRAINRT_V4 inline void labels16(const ModelView& m, __m512i class_of, const uint32_t* k, const uint32_t (&lw)[4][16],
                                float* labels) {
  __m512i y = _mm512_permutexvar_epi32(_mm512_loadu_si512(k), class_of);
  const __m512i flip_word = _mm512_loadu_si512(lw[0]), class_word = _mm512_loadu_si512(lw[1]);
  const __mmask16 flip =
      _mm512_cmplt_epu32_mask(_mm512_srli_epi32(flip_word, 8), _mm512_set1_epi32(static_cast<int>(m.flip_threshold)));
  if (flip) {
    // below(): the high word of word x classes, for the even and the odd words.
    const __m512i n = _mm512_set1_epi32(static_cast<int>(m.classes));
    const __m512i even = _mm512_mul_epu32(class_word, n), odd = _mm512_mul_epu32(_mm512_srli_epi64(class_word, 32), n);
    y = _mm512_mask_mov_epi32(y, flip, _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(even, 32), odd));
  }
  _mm512_storeu_ps(labels, _mm512_cvtepi32_ps(y));
}

/// What the classification paths set up once per call: the dense tables, the round keys, and the
/// class of each of up to 16 clusters in a register (labels16).
struct ClassificationSetup {
  DenseTables tables;
  RoundKeys keys;
  alignas(64) uint32_t class_table[16] = {};
  explicit ClassificationSetup(const ModelView& m) : tables(m), keys(m.seed) {
    for (uint32_t j = 0; j < 16 && m.classes > 0; ++j) class_table[j] = j % m.classes;
  }
};

/// Rows r0 .. r0 + 15's positions in the table's cluster order: permuted, or themselves.
TRAINRT_V4 inline void positions16(const ModelView& m, uint64_t r0, uint64_t* pos) {
  if (m.shuffle) {
    permute8(m, r0, pos);
    permute8(m, r0 + 8, pos + 8);
  } else {
    for (uint32_t t = 0; t < kRows; ++t) pos[t] = r0 + t;
  }
}

TRAINRT_V4 void classification_rows(const ModelView& m, uint64_t first, uint64_t count, float* features,
                                    float* labels) {
  const ClassificationSetup setup(m);
  const DenseTables& tables = setup.tables;
  const RoundKeys& keys = setup.keys;
  const __m512i class_of = _mm512_load_si512(setup.class_table);
  const uint64_t f = m.features;
  const uint32_t ni = m.informative, noise_at = m.informative + m.redundant + m.repeated;
  NoiseLayout& layout = NoiseLayout::of(m.noise_columns);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  uint64_t i = 0;
  for (; i + kRows <= count; i += kRows) {
    const uint64_t r0 = first + i;
    float* out = features + i * f;
    uint64_t pos[kRows];
    positions16(m, r0, pos);
    uint32_t k[kRows];
    const RowCounters rc = row_counters(r0, lanes);
    uint32_t lw[4][16];
    philox16(keys, rc.lo, rc.hi, _mm512_setzero_si512(), _mm512_set1_epi32(kLabel), lw);
    if (m.noise_columns > 0) normals16(keys, r0, kNoise, layout, {out, f, noise_at, m.noise_columns});
    if (tables.usable) {
      dense16(m, keys, tables, pos, rc, out, f, k);
      labels16(m, class_of, k, lw, labels + i);
      continue;
    }
    for (uint32_t t = 0; t < kRows; ++t) k[t] = cluster_of(m, pos[t]);
    for (uint32_t t = 0; t < kRows; ++t)
      for (uint32_t j = 0; j < ni; ++j) out[t * f + j] = 0.0f;
    for (uint32_t block = 0; block * 4 < ni; ++block) {
      uint32_t w[4][16];
      philox16(keys, rc.lo, rc.hi, _mm512_set1_epi32(static_cast<int>(block)), _mm512_set1_epi32(kInformative), w);
      float z[4][16] = {};
      const uint32_t left = ni - block * 4, used = left < 4 ? left : 4;
      box_muller16(w[0], w[1], z[0], z[1]);
      if (left > 2) box_muller16(w[2], w[3], z[2], z[3]);
      for (uint32_t t = 0; t < kRows; ++t) {
        const float zt[4] = {z[0][t], z[1][t], z[2][t], z[3][t]};
        accumulate_informative(m, k[t], block * 4, zt, used, out + t * f);
      }
    }
    for (uint32_t t = 0; t < kRows; ++t) {
      classification_dense_columns(m, k[t], out + t * f);
      labels[i + t] = classification_label(m, k[t], lw[0][t], lw[1][t]);
    }
  }
  for (; i < count; ++i) make_row<Avx512Words>(m, first + i, features + i * f, labels + i);
}

/// classification_rows into column-major buffers: feature c of row `first + i` at
/// columns[c * stride + i], the label at columns[features * stride + i]. The noise blocks go row
/// block by row block, 16 rows per register, so each Box-Muller register is 16 rows of one column
/// and is stored straight into it: no transpose at all. The same (row, block) counters as the row
/// layout, so the same bits. Only for tables DenseTables serves (the caller checks).
TRAINRT_V4 void classification_columns(const ModelView& m, uint64_t first, uint64_t count, float* columns,
                                       uint64_t stride) {
  const ClassificationSetup setup(m);
  const DenseTables& tables = setup.tables;
  const RoundKeys& keys = setup.keys;
  const __m512i class_of = _mm512_load_si512(setup.class_table);
  const uint64_t f = m.features;
  const uint32_t noise_at = m.informative + m.redundant + m.repeated, blocks = (m.noise_columns + 3) / 4;
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i noise_kind = _mm512_set1_epi32(kNoise);
  alignas(64) float spare[2][16];  // a last block's values beyond the row
  uint64_t i = 0;
  for (; i + kRows <= count; i += kRows) {
    const uint64_t r0 = first + i;
    uint64_t pos[kRows];
    positions16(m, r0, pos);
    const RowCounters rc = row_counters(r0, lanes);
    uint32_t k[kRows];
    dense16(m, keys, tables, pos, rc, columns + i, f, k, stride);
    for (uint32_t b = 0; b < blocks; ++b) {
      uint32_t w[4][16];
      philox16(keys, rc.lo, rc.hi, _mm512_set1_epi32(static_cast<int>(b)), noise_kind, w);
      float* col[4];
      for (uint32_t q = 0; q < 4; ++q) {
        const uint32_t c = 4 * b + q;
        col[q] = c < m.noise_columns ? columns + (noise_at + c) * stride + i : spare[q & 1];
      }
      box_muller16(w[0], w[1], col[0], col[1]);
      box_muller16(w[2], w[3], col[2], col[3]);
    }
    uint32_t lw[4][16];
    philox16(keys, rc.lo, rc.hi, _mm512_setzero_si512(), _mm512_set1_epi32(kLabel), lw);
    labels16(m, class_of, k, lw, columns + f * stride + i);
  }
  thread_local std::vector<float> row;
  row.resize(f);
  for (; i < count; ++i) {  // the last rows, one at a time
    float label;
    make_row<Avx512Words>(m, first + i, row.data(), &label);
    for (uint64_t c = 0; c < f; ++c) columns[c * stride + i] = row[c];
    columns[f * stride + i] = label;
  }
}

/// Regression rows: all features are noise normals (row_normals' layout), then the target.
TRAINRT_V4 void regression_rows(const ModelView& m, uint64_t first, uint64_t count, float* features, float* labels) {
  const RoundKeys keys(m.seed);
  const uint64_t f = m.features;
  NoiseLayout& layout = NoiseLayout::of(static_cast<uint32_t>(m.features));
  uint64_t i = 0;
  for (; i + kRows <= count; i += kRows) {
    normals16(keys, first + i, kNoise, layout, {features + i * f, f, 0, static_cast<uint32_t>(f)});
    for (uint32_t t = 0; t < kRows; ++t) {
      float* out = features + (i + t) * f;
      float y = 0.0f;
      for (uint32_t j = 0; j < m.informative; ++j) y = y + out[j] * m.coef[j];
      y = y + m.bias;
      if (m.noise > 0.0f) {
        const philox::Block l = philox::draw(m.seed, first + i + t, 0, kLabel);
        float z0, z1;
        philox::box_muller(l.v[0], l.v[1], z0, z1);
        y = y + m.noise * z0;
      }
      labels[i + t] = y;
    }
  }
  for (; i < count; ++i) make_row<Avx512Words>(m, first + i, features + i * f, labels + i);
}

}  // namespace v4

#pragma GCC diagnostic pop

__attribute__((target("avx2"))) void generate_avx2(const ModelView& model, uint64_t first, uint64_t count,
                                                   float* features, float* labels) {
  simd_rows<Avx2Words>(model, first, count, features, labels);
}

// No FMA contraction happens (-ffp-contract=off).
TRAINRT_V4 void generate_avx512(const ModelView& model, uint64_t first, uint64_t count, float* features,
                                float* labels) {
  if (model.task == 0)
    v4::classification_rows(model, first, count, features, labels);
  else
    v4::regression_rows(model, first, count, features, labels);
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

bool generate_columns_cpu(const ModelView& model, uint64_t first, uint64_t count, float* columns, uint64_t stride) {
#ifdef TRAINRT_HAVE_AVX2_PATH
  if (!cpu_has_avx512() || model.task != 0 || !v4::DenseTables::serves(model)) return false;
  v4::classification_columns(model, first, count, columns, stride);
  return true;
#else
  return false;
#endif
}

void generate_rows_cpu(const ModelView& model, uint64_t first, uint64_t count, float* features, float* labels) {
  static const CpuPath best = cpu_path_available(CpuPath::kAvx512) ? CpuPath::kAvx512
                              : cpu_path_available(CpuPath::kAvx2) ? CpuPath::kAvx2
                                                                   : CpuPath::kPortable;
  generate_rows_on(best, model, first, count, features, labels);
}

}  // namespace trainrt::datagen
