#pragma once
// The row formula, shared by the CPU path and the CUDA kernel: a row is a pure function of the
// model and its global index, so shards, threads and devices agree bit for bit.
//
// Columns, in scikit-learn's order without its column shuffle:
//   [0, I)            informative: N(0,1) mixed by the cluster's A, plus the cluster's centroid
//   [I, I+R)          redundant: informative @ B
//   [I+R, I+R+P)      repeated: copies of informative or redundant columns
//   [I+R+P, F)        noise: N(0,1)
// Rows: like make_classification before its shuffle, cluster k owns a contiguous range of
// positions [cluster_end[k-1], cluster_end[k]); row r sits at position perm(r), a seeded Feistel
// permutation of [0, rows) (identity without shuffle_rows), so every shard mixes all classes.
//
// Philox counters: (row, index, purpose) with the purposes below; parameters use their own.
#include <cstdint>

#include "datagen/model.h"
#include "datagen/philox.h"

namespace trainrt::datagen {

enum Purpose : uint32_t {
  kInformative = 1,     ///< index = block of 4 informative normals
  kNoise = 2,           ///< index = block of 4 noise normals (regression: all features)
  kLabel = 3,           ///< index 0: flip decision and random class, or regression noise
  kCentroid = 0x101,    ///< parameters, drawn once per table
  kCentroidBits = 0x102,
  kCovariance = 0x103,
  kRedundantMix = 0x104,
  kRepeated = 0x105,
  kPolytope = 0x106,
  kCoef = 0x107,
  kPermutation = 0x108,
};

/// splitmix64's finaliser: the Feistel round function.
TRAINRT_HD uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/// A bijection of [0, rows): a 4-round balanced Feistel network on 2h bits (2^2h < 4 rows),
/// cycle-walking until the value falls inside the table.
TRAINRT_HD uint64_t permute_row(const ModelView& m, uint64_t row) {
  const uint32_t h = m.perm_half_bits;
  const uint64_t mask = (uint64_t{1} << h) - 1;
  uint64_t x = row;
  do {
    uint64_t left = x >> h, right = x & mask;
    for (int i = 0; i < 4; ++i) {
      const uint64_t next = left ^ (mix64(right ^ m.perm_keys[i]) & mask);
      left = right;
      right = next;
    }
    x = (left << h) | right;
  } while (x >= m.rows);
  return x;
}

/// The cluster owning a position: binary search in cluster_end.
TRAINRT_HD uint32_t cluster_of(const ModelView& m, uint64_t position) {
  uint32_t lo = 0, hi = m.clusters - 1;
  while (lo < hi) {  // branch-free steps: the cluster of a shuffled row is unpredictable
    const uint32_t mid = (lo + hi) / 2;
    const bool left = position < m.cluster_end[mid];
    hi = left ? mid : hi;
    lo = left ? lo : mid + 1;
  }
  return lo;
}

/// The portable source of Philox words: `count` (<= 16) consecutive blocks, word k of block j in
/// w[k][j]. The CPU path swaps in SIMD ones (cpu_generator.cpp) that return the same words.
struct PortableWords {
  static constexpr bool kWide = false;  ///< whether 16-block chunks pay off
  TRAINRT_HD static void fill(uint64_t seed, uint64_t row, uint32_t first_block, uint32_t purpose, uint32_t count,
                              uint32_t (&w)[4][16]) {
    for (uint32_t j = 0; j < count; ++j) {
      const philox::Block b = philox::draw(seed, row, first_block + j, purpose);
      for (int k = 0; k < 4; ++k) w[k][j] = b.v[k];
    }
  }
};

/// 4 * B normals (B = 4, 8 or 16) from B consecutive Philox blocks; the Box-Muller loop vectorises.
template <uint32_t B, typename Words>
TRAINRT_HD void normals_chunk(uint64_t seed, uint64_t row, uint32_t first_block, uint32_t purpose, float* out) {
  uint32_t w[4][16];
  Words::fill(seed, row, first_block, purpose, B, w);
  for (uint32_t j = 0; j < B; ++j) {
    philox::box_muller(w[0][j], w[1][j], out[4 * j], out[4 * j + 1]);
    philox::box_muller(w[2][j], w[3][j], out[4 * j + 2], out[4 * j + 3]);
  }
}

/// n normals for a row: value i comes from block i / 4, word pair (i % 4) / 2. Chunks of 16 (wide
/// SIMD only), 8 and 4 blocks keep the work in vector registers; the last partial chunk goes
/// through a buffer.
template <typename Words>
TRAINRT_HD void row_normals(uint64_t seed, uint64_t row, uint32_t purpose, float* out, uint32_t n) {
  uint32_t block = 0;
  if (Words::kWide) {
    for (; (block + 16) * 4 <= n; block += 16) normals_chunk<16, Words>(seed, row, block, purpose, out + 4 * block);
    if (n - block * 4 > 32) {  // more than 8 blocks left: one more wide chunk, through a buffer
      float z[64];
      normals_chunk<16, Words>(seed, row, block, purpose, z);
      for (uint32_t i = 0; block * 4 + i < n; ++i) out[block * 4 + i] = z[i];
      return;
    }
  }
  for (; (block + 8) * 4 <= n; block += 8) normals_chunk<8, Words>(seed, row, block, purpose, out + 4 * block);
  if ((block + 4) * 4 <= n) {
    normals_chunk<4, Words>(seed, row, block, purpose, out + 4 * block);
    block += 4;
  }
  if (block * 4 < n) {
    float z[16];
    normals_chunk<4, Words>(seed, row, block, purpose, z);
    for (uint32_t i = 0; block * 4 + i < n; ++i) out[block * 4 + i] = z[i];
  }
}

/// The cluster of a row: the one owning its position in sklearn's unshuffled order.
TRAINRT_HD uint32_t row_cluster(const ModelView& m, uint64_t row) {
  return cluster_of(m, m.shuffle ? permute_row(m, row) : row);
}

/// The row's label: its cluster's class, replaced by a random class when the flip word says so.
TRAINRT_HD float classification_label(const ModelView& m, uint32_t k, uint32_t flip_word, uint32_t class_word) {
  uint32_t y = k % m.classes;
  if ((flip_word >> 8) < m.flip_threshold) y = philox::below(class_word, m.classes);
  return static_cast<float>(y);
}

/// out[j] += z[t] * A_k[first + t][j] for t in [0, count): informative column j accumulates
/// z_i A_k[i][j] in increasing i, whichever way the z arrive.
TRAINRT_HD void accumulate_informative(const ModelView& m, uint32_t k, uint32_t first, const float* z,
                                       uint32_t count, float* out) {
  const uint32_t n = m.informative;
  const float* a = m.covariance + static_cast<uint64_t>(k) * n * n;
  for (uint32_t t = 0; t < count; ++t) {
    const float* ai = a + static_cast<uint64_t>(first + t) * n;
    const float zi = z[t];
    for (uint32_t j = 0; j < n; ++j) out[j] = out[j] + zi * ai[j];
  }
}

/// Informative normals of block b: pairs (v0, v1) and, when used, (v2, v3) through Box-Muller.
TRAINRT_HD uint32_t informative_normals(const ModelView& m, uint32_t block, const philox::Block& b, float* z) {
  philox::box_muller(b.v[0], b.v[1], z[0], z[1]);
  const uint32_t left = m.informative - block * 4;
  if (left > 2) philox::box_muller(b.v[2], b.v[3], z[2], z[3]);  // the second pair only if used
  return left < 4 ? left : 4;
}

/// The dense columns of a classification row once out[0, I) holds z @ A_k: the centroid, the
/// redundant and the repeated columns.
TRAINRT_HD void classification_dense_columns(const ModelView& m, uint32_t k, float* out) {
  const uint32_t ni = m.informative, nr = m.redundant;
  const float* c = m.centroids + static_cast<uint64_t>(k) * ni;
  for (uint32_t j = 0; j < ni; ++j) out[j] = out[j] + c[j];
  float* red = out + ni;
  for (uint32_t r = 0; r < nr; ++r) red[r] = 0.0f;
  for (uint32_t i = 0; i < ni; ++i) {
    const float x = out[i];
    const float* b = m.redundant_mix + static_cast<uint64_t>(i) * nr;
    for (uint32_t r = 0; r < nr; ++r) red[r] = red[r] + x * b[r];
  }
  float* rep = red + nr;
  for (uint32_t p = 0; p < m.repeated; ++p) rep[p] = out[m.repeated_from[p]];
}

/// The rest of a classification row once out[0, I) holds z @ A_k: the dense columns, then noise.
template <typename Words>
TRAINRT_HD void finish_classification_row(const ModelView& m, uint64_t row, uint32_t k, float* out) {
  classification_dense_columns(m, k, out);
  row_normals<Words>(m.seed, row, kNoise, out + m.informative + m.redundant + m.repeated, m.noise_columns);
}

/// One classification row: features into out[0, features), the class into *label.
template <typename Words>
TRAINRT_HD void classification_row(const ModelView& m, uint64_t row, float* out, float* label) {
  const uint32_t k = row_cluster(m, row);
  for (uint32_t j = 0; j < m.informative; ++j) out[j] = 0.0f;
  for (uint32_t block = 0; block * 4 < m.informative; ++block) {
    float z[4];
    const uint32_t count = informative_normals(m, block, philox::draw(m.seed, row, block, kInformative), z);
    accumulate_informative(m, k, block * 4, z, count, out);
  }
  finish_classification_row<Words>(m, row, k, out);
  const philox::Block l = philox::draw(m.seed, row, 0, kLabel);
  *label = classification_label(m, k, l.v[0], l.v[1]);
}

/// One regression row: N(0,1) features, target = x[0, I) . coef + bias + noise * N(0,1).
template <typename Words>
TRAINRT_HD void regression_row(const ModelView& m, uint64_t row, float* out, float* label) {
  row_normals<Words>(m.seed, row, kNoise, out, m.features);
  float y = 0.0f;
  for (uint32_t i = 0; i < m.informative; ++i) y = y + out[i] * m.coef[i];
  y = y + m.bias;
  if (m.noise > 0.0f) {
    const philox::Block l = philox::draw(m.seed, row, 0, kLabel);
    float z0, z1;
    philox::box_muller(l.v[0], l.v[1], z0, z1);
    y = y + m.noise * z0;
  }
  *label = y;
}

/// One row of the table. `Words` only changes how Philox words are computed, never their values.
template <typename Words = PortableWords>
TRAINRT_HD void make_row(const ModelView& m, uint64_t row, float* out, float* label) {
  if (m.task == 0) classification_row<Words>(m, row, out, label);
  else regression_row<Words>(m, row, out, label);
}

}  // namespace trainrt::datagen
