#include "datagen/spec.h"

#include <doctest/doctest.h>

#include "datagen/model.h"

namespace trainrt::datagen {

TEST_CASE("sizes in bytes") {
  CHECK(parse_size("6TB") == 6e12);
  CHECK(parse_size("500GB") == 5e11);
  CHECK(parse_size("64GiB") == 64.0 * (1ull << 30));
  CHECK(parse_size("1.5MB") == 1.5e6);
  CHECK(parse_size("1000") == 1000);
  CHECK_FALSE(parse_size("6 tera").has_value());
  CHECK_FALSE(parse_size("-1GB").has_value());
  CHECK(parse_size("2PiB") == 0x1p51);
  CHECK_FALSE(parse_size(" 6TB").has_value());  // no whitespace: the grammar trainc shares (common/units.h)
  CHECK_FALSE(parse_size("6 TB").has_value());
  CHECK(rows_for_bytes(6e12, 400) == 3740648379ull);  // 6e12 / (401 * 4)
  CHECK(rows_for_bytes(204, 50) == 1);
  CHECK(rows_for_bytes(203, 50) == 0);
}

TEST_CASE("rows per cluster follow make_classification") {
  Spec s;
  s.rows = 100;
  s.classes = 2;
  s.clusters_per_class = 2;
  s.weights = {0.9};  // the last weight is inferred: 1 - 0.9 = 0.09999999999999998, as in Python
  // int(45.0) = 45, int(4.999...) = 4; the two rows left go to clusters 0 and 1 (sklearn gives the same)
  CHECK(rows_per_cluster(s) == std::vector<uint64_t>{46, 5, 45, 4});
  s.rows = 103;
  s.weights = {};
  CHECK(rows_per_cluster(s) == std::vector<uint64_t>{26, 26, 26, 25});  // 25 each, 3 left over
  s.classes = 3;
  s.clusters_per_class = 1;
  s.rows = 10;
  s.weights = {0.5, 0.2, 0.2};  // sums to 0.9: int(5) int(2) int(2), one row left, to cluster 0
  CHECK(rows_per_cluster(s) == std::vector<uint64_t>{6, 2, 2});
}

TEST_CASE("validation reports every problem") {
  Spec s;
  s.rows = 10;
  s.features = 4;
  s.informative = 1;
  s.redundant = 2;
  s.repeated = 2;
  s.classes = 3;
  s.flip_y = 2;
  s.weights = {0.5};
  const auto errors = validate(s, Layout{20, Format::kNative});
  CHECK(errors.size() == 5);  // too many columns, too few informative, flip_y, weights count, shards > rows
  Spec ok;
  ok.rows = 1000;
  CHECK(validate(ok, Layout{}).empty());
  ok.weights = {0.7, 0.6};
  CHECK(validate(ok, Layout{}).size() == 1);
}

TEST_CASE("hypercube vertices are distinct and the model is deterministic") {
  for (uint32_t dims : {2u, 3u, 10u, 35u}) {
    const uint32_t count = dims == 2 ? 4 : 8;
    const auto bits = hypercube_vertices(7, count, dims);
    for (uint32_t a = 0; a < count; ++a)
      for (uint32_t b = a + 1; b < count; ++b) {
        bool same = true;
        for (uint32_t d = 0; d < dims; ++d) same = same && bits[a * dims + d] == bits[b * dims + d];
        CHECK_FALSE(same);
      }
  }
  Spec s;
  s.rows = 1000;
  s.seed = 5;
  const Model a = build_model(s), b = build_model(s);
  CHECK(a.covariance == b.covariance);
  CHECK(a.centroids == b.centroids);
  s.seed = 6;
  CHECK(build_model(s).covariance != a.covariance);
}

}  // namespace trainrt::datagen
