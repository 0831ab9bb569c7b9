#include "datagen/spec.h"

#include <fmt/format.h>

#include <cmath>

#include "common/units.h"
#include "formats/parquet_codec.h"

namespace trainrt::datagen {

std::optional<double> parse_size(const std::string& text) { return trainc::common::parse_byte_size(text); }

uint64_t rows_for_bytes(double bytes, uint32_t features) {
  const double per_row = 4.0 * (static_cast<double>(features) + 1);
  return bytes <= 0 ? 0 : static_cast<uint64_t>(std::floor(bytes / per_row));
}

std::vector<double> full_weights(const Spec& spec) {
  if (spec.weights.empty()) return std::vector<double>(spec.classes, 1.0 / spec.classes);
  std::vector<double> w = spec.weights;
  if (w.size() + 1 == spec.classes) {
    double sum = 0;
    for (double x : w) sum += x;
    w.push_back(1.0 - sum);
  }
  return w;
}

std::vector<uint64_t> rows_per_cluster(const Spec& spec) {
  const std::vector<double> w = full_weights(spec);
  const uint32_t k = spec.clusters_per_class, clusters = spec.classes * spec.clusters_per_class;
  std::vector<uint64_t> per(clusters);
  uint64_t sum = 0;
  for (uint32_t c = 0; c < clusters; ++c) {
    const double share = static_cast<double>(spec.rows) * w[c % spec.classes] / k;
    per[c] = share > 0 ? static_cast<uint64_t>(share) : 0;
    sum += per[c];
  }
  if (sum > spec.rows) return per;  // validate() reports weights adding up to more than 1
  const uint64_t rest = spec.rows - sum;
  for (uint32_t c = 0; c < clusters; ++c) per[c] += rest / clusters + (c < rest % clusters ? 1 : 0);
  return per;
}

namespace {

void validate_classification(const Spec& s, std::vector<std::string>& errors) {
  if (s.informative == 0) errors.push_back("--informative must be at least 1 for classification");
  if (uint64_t{s.informative} + s.redundant + s.repeated > s.features)
    errors.push_back(fmt::format("informative ({}) + redundant ({}) + repeated ({}) features exceed --features ({})",
                                 s.informative, s.redundant, s.repeated, s.features));
  if (s.classes < 2) errors.push_back("--classes must be at least 2");
  if (s.clusters_per_class < 1) errors.push_back("--clusters-per-class must be at least 1");
  const uint64_t clusters = uint64_t{s.classes} * s.clusters_per_class;
  if (s.classes >= 2 && s.clusters_per_class >= 1 && s.informative < 64 && clusters > (uint64_t{1} << s.informative))
    errors.push_back(fmt::format("classes ({}) x clusters per class ({}) = {} clusters need at least {} informative "
                                 "features (2^informative hypercube vertices); got {}",
                                 s.classes, s.clusters_per_class, clusters,
                                 static_cast<int>(std::ceil(std::log2(static_cast<double>(clusters)))), s.informative));
  if (clusters > 0 && static_cast<double>(clusters) * s.informative * s.informative > 0x1p28)
    errors.push_back("clusters x informative^2 covariance weights exceed 2^28; use fewer informative features or clusters");
  if (!(s.flip_y >= 0 && s.flip_y <= 1)) errors.push_back("--flip-y must be within [0, 1]");
  if (!std::isfinite(s.class_sep)) errors.push_back("--class-sep must be a finite number");
  if (!s.weights.empty()) {
    if (s.weights.size() != s.classes && s.weights.size() + 1 != s.classes) {
      errors.push_back(fmt::format("--weights has {} entries; give {} (one per class) or {} (the last is inferred)",
                                   s.weights.size(), s.classes, s.classes - 1));
      return;
    }
    double sum = 0;
    for (double w : s.weights) {
      if (!(w >= 0)) errors.push_back("--weights must not be negative");
      sum += w;
    }
    if (sum > 1 + 1e-9) errors.push_back(fmt::format("--weights add up to {}, more than 1", sum));
  }
}

}  // namespace

std::vector<std::string> validate(const Spec& s, const Layout& layout) {
  std::vector<std::string> errors;
  if (s.rows == 0) errors.push_back("the table has no rows: give --rows N or a --size of at least one row");
  if (s.features == 0) errors.push_back("--features must be at least 1");
  // The spec's bounds (schemas/trainc.v1.schema.json): the generator holds per-feature state, so a
  // count in the billions would exhaust memory before a row is made.
  constexpr uint32_t kMaxColumns = 65536;
  if (s.features > kMaxColumns) errors.push_back(fmt::format("--features must be at most {}", kMaxColumns));
  if (s.informative > kMaxColumns) errors.push_back(fmt::format("--informative must be at most {}", kMaxColumns));
  if (s.redundant > kMaxColumns) errors.push_back(fmt::format("--redundant must be at most {}", kMaxColumns));
  if (s.repeated > kMaxColumns) errors.push_back(fmt::format("--repeated must be at most {}", kMaxColumns));
  if (s.rows > (uint64_t{1} << 62)) errors.push_back("--rows must be below 2^62");
  if (s.task == Task::kClassification) {
    validate_classification(s, errors);
  } else {
    if (s.informative > s.features) errors.push_back("--informative exceeds --features");
    if (!(s.noise >= 0) || !std::isfinite(s.noise)) errors.push_back("--noise must be a non-negative number");
    if (!std::isfinite(s.bias)) errors.push_back("--bias must be a finite number");
  }
  if (layout.shards == 0) errors.push_back("--shards must be at least 1");
  if (layout.shards > 99999) errors.push_back("--shards must be at most 99999 (shard names have five digits)");
  if (layout.compression != parquet::kUncompressed && layout.format != Format::kParquet)
    errors.push_back(fmt::format("--compression {} applies to --format parquet only (native shards are stored as they "
                                 "are)",
                                 parquet::codec_name(layout.compression)));
  else if (layout.compression != parquet::kUncompressed && layout.compression != parquet::kSnappy &&
           layout.compression != parquet::kZstd)
    errors.push_back(fmt::format("--compression {} cannot be written (none, snappy or zstd can)",
                                 parquet::codec_name(layout.compression)));
  if (s.rows > 0 && layout.shards > s.rows)
    errors.push_back(fmt::format("--shards ({}) exceeds the rows ({}): every shard needs a row", layout.shards, s.rows));
  return errors;
}

const char* format_name(Format f) { return f == Format::kNative ? "native" : "parquet"; }
const char* format_extension(Format f) { return f == Format::kNative ? "trs" : "parquet"; }

nlohmann::json to_json(const Spec& s, const Layout& layout) {
  nlohmann::json p;
  p["informative"] = s.informative;
  if (s.task == Task::kClassification) {
    p["redundant"] = s.redundant;
    p["repeated"] = s.repeated;
    p["classes"] = s.classes;
    p["clusters_per_class"] = s.clusters_per_class;
    p["class_sep"] = s.class_sep;
    p["flip_y"] = s.flip_y;
    p["hypercube"] = s.hypercube;
    p["weights"] = full_weights(s);
    p["shuffle_rows"] = s.shuffle_rows;
  } else {
    p["noise"] = s.noise;
    p["bias"] = s.bias;
  }
  nlohmann::json j;
  j["rows"] = s.rows;
  j["features"] = s.features;
  j["seed"] = s.seed;
  j["task"] = s.task == Task::kClassification ? "classification" : "regression";
  j["params"] = p;
  j["shards"] = layout.shards;
  j["format"] = format_name(layout.format);
  // Compressed Parquet shards name their codec, so a rerun with another codec is refused as another
  // table's; uncompressed ones have no key, as before there was a choice (their folders still match).
  if (layout.compression != parquet::kUncompressed) j["compression"] = parquet::codec_name(layout.compression);
  return j;
}

}  // namespace trainrt::datagen
