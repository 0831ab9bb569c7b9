// `trainrt datagen` and `trainrt inspect`: flags to options; the work is in datagen_run and inspect.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "cli_numbers.h"
#include "commands.h"
#include "datagen/datagen_run.h"
#include "datagen/inspect.h"
#include "formats/parquet_codec.h"
#include "report.h"

namespace trainrt {

namespace {

struct DatagenFlags {
  datagen::RunOptions run;
  uint64_t rows = 0;
  std::string size, task = "classification", format = "native", device = "cpu", weights, compression;
  std::optional<uint32_t> informative, redundant;
  bool hypercube = true, shuffle_rows = true;
};

/// "0.7,0.2" -> {0.7, 0.2}; throws CLI::ValidationError on anything else.
std::vector<double> parse_weights(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto w = parse_real(item);
    if (!w || *w < 0 || *w > 1)
      throw CLI::ValidationError("--weights", fmt::format("'{}' is not a comma-separated list of numbers from 0 to 1 "
                                                          "(for example 0.7,0.2)",
                                                          text));
    out.push_back(*w);
  }
  if (out.empty() || text.back() == ',')
    throw CLI::ValidationError("--weights", fmt::format("'{}' is not a comma-separated list of numbers from 0 to 1 "
                                                        "(for example 0.7,0.2)",
                                                        text));
  return out;
}

/// The codec trainrt writes that a mistyped --compression name was most likely meant as ("" when none
/// is close): the same first three letters ("zstandard", "snap"), or within two edits ("snapy", "nnoe").
std::string closest_codec(const std::string& name) {
  const auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* codec : {"none", "snappy", "zstd"}) {
    const std::string c = codec;
    if (lower.size() >= 3 && lower.compare(0, 3, c, 0, 3) == 0) return c;
    if (distance(lower, c) <= 2) return c;
  }
  return "";
}

/// Turns the flags into a spec; returns false (after printing why) on a usage error.
bool resolve(DatagenFlags& f) {
  datagen::Spec& s = f.run.spec;
  s.task = f.task == "regression" ? datagen::Task::kRegression : datagen::Task::kClassification;
  f.run.layout.format = f.format == "parquet" ? datagen::Format::kParquet : datagen::Format::kNative;
  f.run.device = f.device == "cuda" ? datagen::Device::kCuda : datagen::Device::kCpu;
  if (!f.compression.empty()) {
    if (!trainrt::parquet::parse_write_codec(f.compression, f.run.layout.compression)) {
      const std::string guess = closest_codec(f.compression);
      report(fmt::format("--compression '{}' is not a codec trainrt writes: none, snappy or zstd{}", f.compression,
                         guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess)));
      return false;
    }
    if (f.run.layout.format != datagen::Format::kParquet) {
      report("--compression applies to --format parquet only; native shards are stored as they are");
      return false;
    }
  }
  if (f.run.out_dir.empty() && !f.run.dry_run) {
    report("--out is required (or --dry-run)");
    return false;
  }
  if ((f.rows > 0) == !f.size.empty()) {
    report("give exactly one of --rows and --size");
    return false;
  }
  if (f.rows > 0) {
    s.rows = f.rows;
  } else {
    const auto bytes = datagen::parse_size(f.size);
    if (!bytes) {
      report(fmt::format("--size '{}' is not a size such as 6TB, 500GB or 64GiB (from 1B to 2^63 bytes)", f.size));
      return false;
    }
    s.rows = datagen::rows_for_bytes(*bytes, s.features);
  }
  const bool classify = s.task == datagen::Task::kClassification;
  s.informative = f.informative.value_or(std::min<uint32_t>(classify ? 2 : 10, s.features));
  s.redundant = classify ? f.redundant.value_or(std::min<uint32_t>(2, s.features - std::min(s.informative, s.features)))
                         : 0;
  s.hypercube = f.hypercube;
  s.shuffle_rows = f.shuffle_rows;
  if (!f.weights.empty()) s.weights = parse_weights(f.weights);
  return true;
}

}  // namespace

void add_datagen(CLI::App& app, Run& run) {
  auto flags = std::make_shared<DatagenFlags>();
  auto* cmd = app.add_subcommand(
      "datagen",
      "generate a synthetic classification or regression table (scikit-learn make_classification / make_regression "
      "semantics) as native or Parquet shards");
  cmd->footer(
      "Columns are in scikit-learn's order without its column shuffle: informative, redundant, repeated, then noise "
      "columns (f0..f{F-1}), and the label. Rows are shuffled by a seeded permutation (--no-shuffle-rows keeps them "
      "cluster by cluster). The table depends only on the seed and the parameters, never on --shards, --threads or "
      "--device.");
  datagen::Spec& s = flags->run.spec;
  // Every number is range-checked on its text first (cli_numbers.h): exit 2 naming the flag and the range.
  constexpr uint64_t kColumns = 65536, kBig = uint64_t{1} << 62;
  cmd->add_option("--rows", flags->rows, "rows in the table")->check(whole_number(1, kBig));
  cmd->add_option("--size", flags->size, "table size in bytes of float32 features and label (6TB, 500GB, 64GiB)");
  cmd->add_option("--features", s.features, "feature columns")->capture_default_str()->check(whole_number(1, kColumns));
  cmd->add_option("--seed", s.seed, "random seed")->capture_default_str()->check(whole_number(0, UINT64_MAX));
  cmd->add_option("--task", flags->task, "classification or regression")
      ->check(CLI::IsMember({"classification", "regression"}))
      ->capture_default_str();
  cmd->add_option("--informative", flags->informative, "informative features (default 2; regression 10)")
      ->check(whole_number(0, kColumns));
  cmd->add_option("--redundant", flags->redundant, "linear combinations of the informative features (default 2)")
      ->check(whole_number(0, kColumns));
  cmd->add_option("--repeated", s.repeated, "copies of informative or redundant features")
      ->capture_default_str()
      ->check(whole_number(0, kColumns));
  cmd->add_option("--classes", s.classes, "classes")->capture_default_str()->check(whole_number(2, kColumns));
  cmd->add_option("--clusters-per-class", s.clusters_per_class, "Gaussian clusters per class")
      ->capture_default_str()
      ->check(whole_number(1, kColumns));
  cmd->add_option("--class-sep", s.class_sep, "hypercube half-side: larger separates classes more")
      ->capture_default_str()
      ->check(real_number(-1e9, 1e9));
  cmd->add_flag("--hypercube,!--no-hypercube", flags->hypercube,
                "centroids on hypercube vertices (default) or on a random polytope");
  cmd->add_option("--flip-y", s.flip_y, "fraction of labels replaced by a random class")
      ->capture_default_str()
      ->check(real_number(0, 1));
  cmd->add_option("--weights", flags->weights, "class proportions w0,w1,... (n_classes or n_classes-1 values)");
  cmd->add_flag("--shuffle-rows,!--no-shuffle-rows", flags->shuffle_rows,
                "rows in a seeded random order (default) rather than cluster by cluster");
  cmd->add_option("--noise", s.noise, "regression: standard deviation of the target's noise")
      ->capture_default_str()
      ->check(real_number(0, 1e30));
  cmd->add_option("--bias", s.bias, "regression: the target's intercept")
      ->capture_default_str()
      ->check(real_number(-1e30, 1e30));
  cmd->add_option("--shards", flags->run.layout.shards, "files the table is split into")
      ->capture_default_str()
      ->check(whole_number(1, 99999));
  cmd->add_option("--shard-index", flags->run.shard_index, "make only this shard (0-based; default: all)")
      ->check(whole_number(0, 99998));
  cmd->add_option("--format", flags->format, "native or parquet")
      ->check(CLI::IsMember({"native", "parquet"}))
      ->capture_default_str();
  cmd->add_option("--compression", flags->compression,
                  "Parquet pages' codec: none (default: random floats barely compress; zstd keeps ~91% of the bytes at "
                  "about twice the time), snappy or zstd");
  cmd->add_option("--out", flags->run.out_dir, "output folder (required unless --dry-run)");
  cmd->add_option("--device", flags->device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--threads", flags->run.threads, "CPU worker threads (default: one per hardware thread)")
      ->check(whole_number(0, 4096));
  cmd->add_flag("--fsync,!--no-fsync", flags->run.fsync,
                "fsync every shard before renaming it into place (default: durable across power loss; --no-fsync "
                "leaves torn shards after a power loss to the rerun's checks)");
  cmd->add_flag("--quiet", flags->run.quiet, "no progress output");
  cmd->add_flag("--dry-run", flags->run.dry_run,
                "generate the rows without writing them and print what `trainrt inspect` would print for them");
  cmd->callback([flags, cmd, &run] {
    try {
      if (!resolve(*flags)) {
        run.rc = kUsage;
        return;
      }
    } catch (const CLI::ValidationError& e) {
      report(e.what());
      run.rc = kUsage;
      return;
    }
    if (auto errors = datagen::usage_errors(flags->run); !errors.empty()) {
      for (const auto& e : errors) report(e);
      run.rc = kUsage;
      return;
    }
    if (run.stop_before_work(*cmd)) return;
    run.rc = datagen::run_datagen(flags->run);
  });
}

void add_inspect(CLI::App& app, Run& run) {
  auto dir = std::make_shared<std::string>();
  auto stats = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("inspect",
                                 "verify every shard of a generated table and print its rows, columns and a checksum "
                                 "of the logical table (the same for any sharding and either format)");
  cmd->add_option("dir", *dir, "the table's folder (holding _trainrt_table.json)")->required();
  cmd->add_flag("--stats", *stats, "also print each column's sum, minimum and maximum");
  cmd->callback([dir, stats, cmd, &run] {
    if (!run.stop_before_work(*cmd)) run.rc = datagen::run_inspect(*dir, *stats);
  });
}

}  // namespace trainrt
