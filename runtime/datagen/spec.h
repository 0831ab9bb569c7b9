#pragma once
// What `trainrt datagen` is asked to make: scikit-learn's make_classification / make_regression
// knobs, the table's size and how it is split into shards and stored.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainrt::datagen {

enum class Task { kClassification, kRegression };
enum class Format { kNative, kParquet };

/// The data set's identity: the same Spec gives the same logical table, however it is sharded.
struct Spec {
  uint64_t rows = 0;
  uint32_t features = 20;
  uint64_t seed = 0;
  Task task = Task::kClassification;
  uint32_t informative = 2;  ///< make_regression's default is 10; the CLI picks per task
  // make_classification
  uint32_t redundant = 2, repeated = 0, classes = 2, clusters_per_class = 2;
  double class_sep = 1.0, flip_y = 0.01;
  bool hypercube = true;
  std::vector<double> weights;  ///< empty: balanced; n_classes - 1 entries: the last is inferred
  bool shuffle_rows = true;     ///< rows in a seeded random order rather than cluster by cluster
  // make_regression
  double noise = 0.0, bias = 0.0;
};

/// How the table is laid out on disk; part of the table's identity too (file names, format).
struct Layout {
  uint32_t shards = 1;
  Format format = Format::kNative;
  /// Parquet pages' codec (formats/parquet_format.h): kUncompressed (0, the default), kSnappy or kZstd.
  int32_t compression = 0;
};

/// Bytes from "6TB", "500GB", "64GiB", "1.5e9": the byte-size grammar trainc shares (common/units.h).
std::optional<double> parse_size(const std::string& text);

/// Rows whose float32 features and label fill `bytes`.
uint64_t rows_for_bytes(double bytes, uint32_t features);

/// Every problem with a spec and layout, as messages for the user; empty when it is usable.
std::vector<std::string> validate(const Spec& spec, const Layout& layout);

/// Class weights as make_classification completes them: n_classes entries (balanced when none given).
std::vector<double> full_weights(const Spec& spec);

/// Rows per cluster, clusters in sklearn's order (cluster k belongs to class k % n_classes):
/// int(n * w[k % C] / K) each, the remainder dealt one by one from cluster 0.
std::vector<uint64_t> rows_per_cluster(const Spec& spec);

/// The spec and layout as JSON with sorted keys: stored in the table's metadata and compared on
/// reruns, so a folder never mixes shards of two different tables.
nlohmann::json to_json(const Spec& spec, const Layout& layout);

const char* format_name(Format f);
/// "trs" or "parquet".
const char* format_extension(Format f);

}  // namespace trainrt::datagen
