#include "datagen/model.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "datagen/philox.h"
#include "datagen/row_generator.h"

namespace trainrt::datagen {

namespace {

/// Word `index` of the stream (seed, purpose, sub): word i is word i % 4 of block i / 4.
uint32_t param_word(uint64_t seed, uint32_t purpose, uint32_t sub, uint64_t index) {
  return philox::draw(seed, index >> 2, sub, purpose).v[index & 3];
}

/// A uniform in [0, 1) from that stream (24 bits, like every uniform trainrt draws).
float param_uniform(uint64_t seed, uint32_t purpose, uint32_t sub, uint64_t index) {
  return philox::uniform24(param_word(seed, purpose, sub, index));
}

uint32_t bits_for(uint64_t n) {
  uint32_t b = 0;
  while (b < 64 && (uint64_t{1} << b) < n) ++b;
  return b;
}

void build_permutation(const Spec& spec, ModelView& v) {
  v.shuffle = spec.shuffle_rows && spec.task == Task::kClassification ? 1 : 0;
  v.perm_half_bits = std::max<uint32_t>(1, (bits_for(spec.rows) + 1) / 2);
  for (uint32_t i = 0; i < 4; ++i)
    v.perm_keys[i] = uint64_t{param_word(spec.seed, kPermutation, 0, 2 * i)} << 32 |
                     param_word(spec.seed, kPermutation, 0, 2 * i + 1);
}

void build_classification(const Spec& s, Model& m) {
  const uint32_t ni = s.informative, clusters = s.classes * s.clusters_per_class;
  const std::vector<uint64_t> per = rows_per_cluster(s);
  uint64_t end = 0;
  for (uint64_t n : per) m.cluster_end.push_back(end += n);

  const std::vector<uint8_t> bits = hypercube_vertices(s.seed, clusters, ni);
  const auto sep = static_cast<float>(s.class_sep);
  m.centroids.resize(uint64_t{clusters} * ni);
  for (uint64_t i = 0; i < m.centroids.size(); ++i) m.centroids[i] = bits[i] ? sep : -sep;
  if (!s.hypercube) {  // vertices of a random polytope: scale per cluster, then per dimension
    for (uint32_t k = 0; k < clusters; ++k)
      for (uint32_t d = 0; d < ni; ++d) m.centroids[uint64_t{k} * ni + d] *= param_uniform(s.seed, kPolytope, 0, k);
    for (uint32_t k = 0; k < clusters; ++k)
      for (uint32_t d = 0; d < ni; ++d) m.centroids[uint64_t{k} * ni + d] *= param_uniform(s.seed, kPolytope, 1, d);
  }
  m.covariance.resize(uint64_t{clusters} * ni * ni);
  for (uint32_t k = 0; k < clusters; ++k)
    for (uint64_t e = 0; e < uint64_t{ni} * ni; ++e)
      m.covariance[k * uint64_t{ni} * ni + e] = 2.0f * param_uniform(s.seed, kCovariance, k, e) - 1.0f;
  m.redundant_mix.resize(uint64_t{ni} * s.redundant);
  for (uint64_t e = 0; e < m.redundant_mix.size(); ++e)
    m.redundant_mix[e] = 2.0f * param_uniform(s.seed, kRedundantMix, 0, e) - 1.0f;
  const uint32_t sources = ni + s.redundant;
  for (uint32_t p = 0; p < s.repeated; ++p) {
    const double u = param_uniform(s.seed, kRepeated, 0, p);
    m.repeated_from.push_back(std::min(sources - 1, static_cast<uint32_t>((sources - 1) * u + 0.5)));
  }
  m.scalars.classes = s.classes;
  m.scalars.clusters = clusters;
  m.scalars.redundant = s.redundant;
  m.scalars.repeated = s.repeated;
  m.scalars.noise_columns = s.features - ni - s.redundant - s.repeated;
  m.scalars.flip_threshold = static_cast<uint32_t>(std::llround(s.flip_y * 0x1p24));
}

void build_regression(const Spec& s, Model& m) {
  for (uint32_t i = 0; i < s.informative; ++i) m.coef.push_back(100.0f * param_uniform(s.seed, kCoef, 0, i));
  m.scalars.task = 1;
  m.scalars.noise_columns = s.features;
  m.scalars.bias = static_cast<float>(s.bias);
  m.scalars.noise = static_cast<float>(s.noise);
}

}  // namespace

std::vector<uint8_t> hypercube_vertices(uint64_t seed, uint32_t count, uint32_t dims) {
  const uint32_t low = std::min<uint32_t>(dims, 30);
  const uint64_t space = uint64_t{1} << low;
  std::vector<uint32_t> codes;
  if (space <= 4 * uint64_t{count}) {  // small cube: a partial Fisher-Yates shuffle of every vertex
    std::vector<uint32_t> all(space);
    for (uint32_t i = 0; i < space; ++i) all[i] = i;
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t j = i + philox::below(param_word(seed, kCentroid, 0, i), static_cast<uint32_t>(space - i));
      std::swap(all[i], all[j]);
    }
    codes.assign(all.begin(), all.begin() + count);
  } else {  // large cube: draw until `count` distinct vertices
    std::unordered_set<uint32_t> seen;
    for (uint64_t draw = 0; codes.size() < count; ++draw) {
      const uint32_t code = param_word(seed, kCentroid, 1, draw) & static_cast<uint32_t>(space - 1);
      if (seen.insert(code).second) codes.push_back(code);
    }
  }
  std::vector<uint8_t> bits(uint64_t{count} * dims);
  for (uint32_t k = 0; k < count; ++k) {
    for (uint32_t d = 0; d < dims; ++d) {
      uint8_t bit;
      if (d < dims - low) bit = param_word(seed, kCentroidBits, k, d) >> 31;  // sklearn: random high bits
      else bit = (codes[k] >> (dims - 1 - d)) & 1;                            // most significant first
      bits[uint64_t{k} * dims + d] = bit;
    }
  }
  return bits;
}

Model build_model(const Spec& spec) {
  Model m;
  m.spec = spec;
  ModelView& v = m.scalars;
  v.seed = spec.seed;
  v.rows = spec.rows;
  v.features = spec.features;
  v.informative = spec.informative;
  build_permutation(spec, v);
  if (spec.task == Task::kClassification) build_classification(spec, m);
  else build_regression(spec, m);
  return m;
}

ModelView Model::view() const {
  ModelView v = scalars;
  v.cluster_end = cluster_end.data();
  v.centroids = centroids.data();
  v.covariance = covariance.data();
  v.redundant_mix = redundant_mix.data();
  v.repeated_from = repeated_from.data();
  v.coef = coef.data();
  return v;
}

}  // namespace trainrt::datagen
