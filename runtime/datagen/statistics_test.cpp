// The statistics make_classification / make_regression promise, measured on generated tables.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "datagen/cpu_generator.h"
#include "datagen/model.h"
#include "datagen/row_generator.h"

namespace trainrt::datagen {

namespace {

struct Table {
  Model model;
  std::vector<float> x, y;
  float at(uint64_t r, uint32_t c) const { return x[r * model.spec.features + c]; }
};

Table generate(const Spec& spec) {
  Table t{build_model(spec), {}, {}};
  t.x.resize(spec.rows * spec.features);
  t.y.resize(spec.rows);
  generate_rows_cpu(t.model.view(), 0, spec.rows, t.x.data(), t.y.data());
  return t;
}

/// Least squares of column `target` on columns [0, k) (normal equations, Gaussian elimination).
std::vector<double> least_squares(const Table& t, uint32_t k, uint32_t target, double& rms_residual) {
  std::vector<double> a(k * (k + 1), 0.0);
  for (uint64_t r = 0; r < t.model.spec.rows; ++r)
    for (uint32_t i = 0; i < k; ++i) {
      for (uint32_t j = 0; j < k; ++j) a[i * (k + 1) + j] += double(t.at(r, i)) * t.at(r, j);
      a[i * (k + 1) + k] += double(t.at(r, i)) * (target == UINT32_MAX ? t.y[r] : t.at(r, target));
    }
  for (uint32_t i = 0; i < k; ++i)
    for (uint32_t j = i + 1; j < k; ++j) {
      const double f = a[j * (k + 1) + i] / a[i * (k + 1) + i];
      for (uint32_t c = i; c <= k; ++c) a[j * (k + 1) + c] -= f * a[i * (k + 1) + c];
    }
  std::vector<double> w(k);
  for (uint32_t i = k; i-- > 0;) {
    double s = a[i * (k + 1) + k];
    for (uint32_t j = i + 1; j < k; ++j) s -= a[i * (k + 1) + j] * w[j];
    w[i] = s / a[i * (k + 1) + i];
  }
  double ss = 0;
  for (uint64_t r = 0; r < t.model.spec.rows; ++r) {
    double pred = 0;
    for (uint32_t i = 0; i < k; ++i) pred += w[i] * t.at(r, i);
    const double e = (target == UINT32_MAX ? t.y[r] : t.at(r, target)) - pred;
    ss += e * e;
  }
  rms_residual = std::sqrt(ss / t.model.spec.rows);
  return w;
}

Spec classification_spec() {
  Spec s;
  s.rows = 200000;
  s.features = 20;
  s.seed = 2024;
  s.informative = 5;
  s.redundant = 3;
  s.repeated = 2;
  s.classes = 3;
  s.clusters_per_class = 2;
  s.class_sep = 1.5;
  s.flip_y = 0.05;
  s.weights = {0.5, 0.3};  // the last class gets 0.2
  return s;
}

}  // namespace

TEST_CASE("classification: class balance, flips, informative, redundant, repeated and noise columns") {
  const Spec spec = classification_spec();
  const Table t = generate(spec);
  const ModelView v = t.model.view();
  const uint32_t ni = spec.informative, nr = spec.redundant, np = spec.repeated, first_noise = ni + nr + np;
  const double n = static_cast<double>(spec.rows);

  // Every row's cluster (before flips) and its label.
  std::vector<uint32_t> cluster(spec.rows);
  std::vector<double> cluster_rows(v.clusters), class_rows(3), label_rows(3);
  double flipped = 0;
  for (uint64_t r = 0; r < spec.rows; ++r) {
    cluster[r] = cluster_of(v, permute_row(v, r));
    cluster_rows[cluster[r]] += 1;
    class_rows[cluster[r] % 3] += 1;
    label_rows[static_cast<size_t>(t.y[r])] += 1;
    flipped += t.y[r] != static_cast<float>(cluster[r] % 3);
  }
  SUBCASE("rows per class follow the weights exactly before flips, approximately after") {
    const auto per = rows_per_cluster(spec);
    for (uint32_t k = 0; k < v.clusters; ++k) CHECK(cluster_rows[k] == static_cast<double>(per[k]));
    const double w[3] = {0.5, 0.3, 0.2};
    for (int c = 0; c < 3; ++c) {
      CHECK(std::abs(class_rows[c] / n - w[c]) < 1e-4);
      CHECK(std::abs(label_rows[c] / n - (w[c] * (1 - spec.flip_y) + spec.flip_y / 3)) < 0.004);
    }
  }
  SUBCASE("a flip_y fraction of labels is redrawn (a redraw keeps the class a third of the time)") {
    CHECK(std::abs(flipped / n - spec.flip_y * 2 / 3) < 0.002);
  }
  SUBCASE("informative columns separate the classes; noise columns do not") {
    auto between_over_within = [&](uint32_t col) {
      double mean[3] = {}, count[3] = {}, total = 0;
      for (uint64_t r = 0; r < spec.rows; ++r) {
        const int c = static_cast<int>(t.y[r]);
        mean[c] += t.at(r, col);
        count[c] += 1;
        total += t.at(r, col);
      }
      total /= n;
      double between = 0, within = 0;
      for (int c = 0; c < 3; ++c) mean[c] /= count[c];
      for (int c = 0; c < 3; ++c) between += count[c] * (mean[c] - total) * (mean[c] - total);
      for (uint64_t r = 0; r < spec.rows; ++r) {
        const double d = t.at(r, col) - mean[static_cast<int>(t.y[r])];
        within += d * d;
      }
      return between / within;
    };
    double informative_max = 0;
    for (uint32_t c = 0; c < ni; ++c) informative_max = std::max(informative_max, between_over_within(c));
    CHECK(informative_max > 0.05);
    for (uint32_t c = first_noise; c < spec.features; ++c) CHECK(between_over_within(c) < 2e-4);
  }
  SUBCASE("each cluster sits at its centroid with covariance A^T A") {
    for (uint32_t k : {0u, 5u}) {
      std::vector<double> mean(ni, 0), cov(ni * ni, 0);
      double count = 0;
      for (uint64_t r = 0; r < spec.rows; ++r)
        if (cluster[r] == k) {
          for (uint32_t i = 0; i < ni; ++i) mean[i] += t.at(r, i);
          count += 1;
        }
      for (auto& m : mean) m /= count;
      for (uint64_t r = 0; r < spec.rows; ++r)
        if (cluster[r] == k)
          for (uint32_t i = 0; i < ni; ++i)
            for (uint32_t j = 0; j < ni; ++j) cov[i * ni + j] += (t.at(r, i) - mean[i]) * (t.at(r, j) - mean[j]);
      const float* a = t.model.covariance.data() + k * ni * ni;
      for (uint32_t i = 0; i < ni; ++i) {
        CHECK(std::abs(mean[i] - t.model.centroids[k * ni + i]) < 0.05);
        CHECK(std::abs(std::abs(t.model.centroids[k * ni + i]) - 1.5) < 1e-6);
        for (uint32_t j = 0; j < ni; ++j) {
          double want = 0;  // (A^T A)_ij = sum_m A_mi A_mj
          for (uint32_t m = 0; m < ni; ++m) want += double(a[m * ni + i]) * a[m * ni + j];
          CHECK(std::abs(cov[i * ni + j] / count - want) < 0.06);
        }
      }
    }
  }
  SUBCASE("redundant columns are exact linear combinations of the informative ones") {
    for (uint32_t r = 0; r < nr; ++r) {
      double rms = 0;
      const auto w = least_squares(t, ni, ni + r, rms);
      CHECK(rms < 1e-5);
      for (uint32_t i = 0; i < ni; ++i) CHECK(std::abs(w[i] - t.model.redundant_mix[i * nr + r]) < 1e-4);
    }
  }
  SUBCASE("repeated columns equal their sources") {
    for (uint32_t p = 0; p < np; ++p) {
      const uint32_t src = t.model.repeated_from[p];
      CHECK(src < ni + nr);
      bool equal = true;
      for (uint64_t r = 0; r < spec.rows; ++r) equal = equal && t.at(r, ni + nr + p) == t.at(r, src);
      CHECK(equal);
    }
  }
  SUBCASE("noise columns are N(0, 1)") {
    for (uint32_t c = first_noise; c < spec.features; ++c) {
      double sum = 0, sum2 = 0, within = 0;
      for (uint64_t r = 0; r < spec.rows; ++r) {
        const double z = t.at(r, c);
        sum += z;
        sum2 += z * z;
        within += std::abs(z) < 1;
      }
      CHECK(std::abs(sum / n) < 0.01);
      CHECK(std::abs(sum2 / n - 1) < 0.015);
      CHECK(std::abs(within / n - 0.682689) < 0.005);
    }
  }
}

TEST_CASE("two well separated classes: a nearest-mean rule on the informative columns classifies") {
  Spec s;
  s.rows = 50000;
  s.features = 10;
  s.informative = 2;
  s.redundant = 0;
  s.clusters_per_class = 1;
  s.class_sep = 2.0;
  s.flip_y = 0;
  s.seed = 3;
  const Table t = generate(s);
  double mean[2][2] = {}, count[2] = {};
  for (uint64_t r = 0; r < s.rows; ++r) {
    const int c = static_cast<int>(t.y[r]);
    count[c] += 1;
    for (int i = 0; i < 2; ++i) mean[c][i] += t.at(r, i);
  }
  CHECK(std::abs(count[0] - count[1]) <= 1);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 2; ++i) mean[c][i] /= count[c];
  double correct = 0;
  for (uint64_t r = 0; r < s.rows; ++r) {
    double d[2];
    for (int c = 0; c < 2; ++c)
      d[c] = std::pow(t.at(r, 0) - mean[c][0], 2) + std::pow(t.at(r, 1) - mean[c][1], 2);
    correct += (d[1] < d[0]) == (t.y[r] == 1.0f);
  }
  CHECK(correct / static_cast<double>(s.rows) > 0.8);
}

TEST_CASE("without hypercube the centroids shrink inside it; without row shuffle clusters are contiguous") {
  Spec s;
  s.rows = 1000;
  s.hypercube = false;
  s.shuffle_rows = false;
  s.flip_y = 0;
  const Table t = generate(s);
  for (float c : t.model.centroids) CHECK(std::abs(c) <= 1.0f);
  const auto per = rows_per_cluster(s);  // clusters 0..3 of classes 0, 1, 0, 1, in row order
  uint64_t row = 0;
  for (uint32_t k = 0; k < per.size(); ++k)
    for (uint64_t i = 0; i < per[k]; ++i, ++row) CHECK(t.y[row] == static_cast<float>(k % 2));
}

TEST_CASE("regression: the target is a linear function of the informative columns plus noise") {
  Spec s;
  s.task = Task::kRegression;
  s.rows = 100000;
  s.features = 8;
  s.informative = 3;
  s.noise = 2.0;
  s.bias = 5.0;
  s.seed = 11;
  Table t = generate(s);
  for (auto& y : t.y) y -= 5.0f;  // remove the bias, then fit without an intercept
  double rms = 0;
  const auto w = least_squares(t, s.features, UINT32_MAX, rms);
  for (uint32_t i = 0; i < s.features; ++i) {
    const double want = i < s.informative ? t.model.coef[i] : 0.0;
    CHECK(std::abs(w[i] - want) < 0.05);
  }
  CHECK(std::abs(rms - 2.0) < 0.05);
  for (float c : t.model.coef) CHECK((c >= 0 && c < 100));
}

TEST_CASE("the row permutation is a bijection") {
  for (uint64_t rows : {1ull, 2ull, 5ull, 1000ull, 4097ull}) {
    Spec s;
    s.rows = rows;
    s.informative = 2;
    const Model m = build_model(s);
    const ModelView v = m.view();
    std::vector<bool> hit(rows, false);
    for (uint64_t r = 0; r < rows; ++r) {
      const uint64_t p = permute_row(v, r);
      REQUIRE(p < rows);
      CHECK_FALSE(hit[p]);
      hit[p] = true;
    }
  }
}

}  // namespace trainrt::datagen
