#pragma once
// The per-table parameters of make_classification / make_regression — cluster centroids, the
// per-cluster covariance mixes A, the redundant mix B, which columns repeat, regression
// coefficients, the row permutation — drawn from Philox with the table's seed. They depend on the
// Spec only, never on sharding, so every shard, process and GPU builds the same ones.
#include <cstdint>
#include <vector>

#include "datagen/spec.h"

namespace trainrt::datagen {

/// Plain view of a Model for row generation (host or device pointers), copyable to a kernel.
struct ModelView {
  uint64_t seed = 0, rows = 0;
  uint32_t task = 0;  ///< 0 classification, 1 regression
  uint32_t features = 0, informative = 0, redundant = 0, repeated = 0, noise_columns = 0;
  uint32_t classes = 0, clusters = 0;
  uint32_t flip_threshold = 0;  ///< a row's label is replaced when its 24-bit uniform is below this
  uint32_t shuffle = 0;
  uint32_t perm_half_bits = 1;  ///< the Feistel permutation works on 2 * perm_half_bits bits
  uint64_t perm_keys[4] = {};
  float bias = 0, noise = 0;
  const uint64_t* cluster_end = nullptr;   ///< clusters: first position past each cluster
  const float* centroids = nullptr;        ///< clusters x informative
  const float* covariance = nullptr;       ///< clusters x informative x informative (A, row-major)
  const float* redundant_mix = nullptr;    ///< informative x redundant (B, row-major)
  const uint32_t* repeated_from = nullptr; ///< repeated: source column of each repeated column
  const float* coef = nullptr;             ///< regression: informative coefficients
};

struct Model {
  Spec spec;
  std::vector<uint64_t> cluster_end;
  std::vector<float> centroids, covariance, redundant_mix, coef;
  std::vector<uint32_t> repeated_from;
  ModelView scalars;  ///< the view's scalar fields; view() fills in the pointers

  ModelView view() const;
};

/// Draws the table's parameters. The spec must have passed validate().
Model build_model(const Spec& spec);

/// Distinct hypercube vertices for `count` clusters in `dims` dimensions, as 0/1 per coordinate
/// (count x dims): the low min(dims, 30) bits distinct, as in sklearn's _generate_hypercube.
std::vector<uint8_t> hypercube_vertices(uint64_t seed, uint32_t count, uint32_t dims);

}  // namespace trainrt::datagen
