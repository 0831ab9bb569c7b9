#include "datagen/datagen_run.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>

#include "commands.h"
#include "datagen/cpu_generator.h"
#include "datagen/cuda_generator.h"
#include "datagen/inspect.h"
#include "datagen/model.h"
#include "datagen/progress.h"
#include "datagen/shard_writer.h"
#include "datagen/table.h"
#include "formats/shard_format.h"
#include "report.h"

namespace trainrt::datagen {

namespace fs = std::filesystem;

namespace {

/// The shards this run is responsible for, minus those already complete on disk.
std::vector<ShardTask> pending_shards(const RunOptions& opt, const Progress& progress) {
  std::vector<ShardTask> tasks;
  const uint32_t m = opt.layout.shards;
  for (uint32_t i = 0; i < m; ++i) {
    if (opt.shard_index && *opt.shard_index != i) continue;
    const std::string path = shard_path(opt.out_dir, i, opt.layout);
    const std::string name = fs::path(path).filename().string();
    if (fs::exists(path)) {
      const std::string problem = check_shard(path, opt.spec, opt.layout, i, /*deep=*/true);
      if (problem.empty()) {
        progress.note(name + " is complete; skipped");
        std::error_code ec;
        fs::remove(temp_shard_path(opt.out_dir, i, opt.layout), ec);  // a leftover of an earlier, killed run
        continue;
      }
      progress.note(fmt::format("{} is incomplete or damaged ({}); generating it again", name, problem));
    }
    tasks.push_back({i, shard_first_row(opt.spec.rows, i, m), shard_row_count(opt.spec.rows, i, m)});
  }
  return tasks;
}

/// --device cuda asked for and no GPU usable: exit code kNoGpu rather than kFailed.
struct NoGpu : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One RowSource per worker: CPU threads, or one per GPU. Throws NoGpu when CUDA cannot be used.
std::vector<RowSource> make_sources(const RunOptions& opt, const Model& model, WriteOptions& wopt,
                                    std::vector<std::shared_ptr<CudaGenerator>>& gpus) {
  std::vector<RowSource> sources;
  if (opt.device == Device::kCpu) {
    const unsigned n = opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
    const ModelView view = model.view();
    for (unsigned i = 0; i < n; ++i)
      sources.push_back([view](uint64_t first, uint64_t count, float* features, float* labels) {
        generate_rows_cpu(view, first, count, features, labels);
      });
    wopt.columns = [view](uint64_t first, uint64_t count, float* columns, uint64_t stride) {
      return generate_columns_cpu(view, first, count, columns, stride);
    };
    wopt.writer_generates = true;  // --threads N: N threads in all, the writing one included
    return sources;
  }
  std::string why;
  const int devices = cuda_device_count(why);
  if (devices == 0) throw NoGpu(why);
  const uint64_t block = max_block_rows(model.spec.features, wopt);
  wopt.tile_bytes = 0;  // a GPU makes a whole row group per call
  for (int d = 0; d < devices; ++d) {
    std::string error;
    std::shared_ptr<CudaGenerator> g(CudaGenerator::create(model, d, block, error));
    if (!g) throw NoGpu(fmt::format("GPU {}: {}", d, error));
    gpus.push_back(g);
    sources.push_back([g](uint64_t first, uint64_t count, float* features, float* labels) {
      std::string error;
      if (!g->generate(first, count, features, labels, error)) throw std::runtime_error(error);
    });
  }
  return sources;
}

/// True when every shard of the table is in place (header and size checked, not the payload). Throws
/// StorageError when a shard this run is responsible for is not: it was written and renamed into
/// place, so the storage lost it (a folder removed, a mount gone) and the table must not be called done.
bool all_shards_present(const RunOptions& opt) {
  bool all = true;
  for (uint32_t i = 0; i < opt.layout.shards; ++i) {
    const std::string path = shard_path(opt.out_dir, i, opt.layout);
    const std::string problem = check_shard(path, opt.spec, opt.layout, i, /*deep=*/false);
    if (problem.empty()) continue;
    if (!opt.shard_index || *opt.shard_index == i)
      throw StorageError(fmt::format("{} was written by this run but is now {}", path, problem));
    all = false;
  }
  return all;
}

/// Generates the selected rows without writing them and prints what `trainrt inspect` would.
int dry_run(const RunOptions& opt, const Model& model, const std::vector<RowSource>& sources, WriteOptions& wopt) {
  std::vector<ShardTask> tasks;
  uint64_t rows = 0;
  for (uint32_t i = 0; i < opt.layout.shards; ++i) {
    if (opt.shard_index && *opt.shard_index != i) continue;
    tasks.push_back({i, shard_first_row(opt.spec.rows, i, opt.layout.shards),
                     shard_row_count(opt.spec.rows, i, opt.layout.shards)});
    rows += tasks.back().rows;
  }
  Progress progress(opt.quiet, static_cast<uint32_t>(tasks.size()), rows);
  wopt.on_rows = [&](uint64_t r) { progress.rows_written(r); };
  TableSummary summary;
  summary.features = opt.spec.features;
  add_checksum_terms(summary, rows, write_shards(model, tasks, sources, wopt));
  progress.done();
  fmt::print("{}", format_summary(summary, false));
  return kOk;
}

}  // namespace

std::vector<std::string> usage_errors(const RunOptions& opt) {
  std::vector<std::string> errors = validate(opt.spec, opt.layout);
  if (errors.empty() && opt.shard_index && *opt.shard_index >= opt.layout.shards)
    errors.push_back(fmt::format("--shard-index {} is out of range for {} shards (0..{})", *opt.shard_index,
                                 opt.layout.shards, opt.layout.shards - 1));
  return errors;
}

int run_datagen(const RunOptions& opt) {
  if (auto errors = usage_errors(opt); !errors.empty()) {
    for (const auto& e : errors) report(e);
    return kUsage;
  }
  try {
    const Model model = build_model(opt.spec);
    WriteOptions wopt;
    wopt.dir = opt.out_dir;
    wopt.layout = opt.layout;
    wopt.fsync = opt.fsync;
    wopt.dry_run = opt.dry_run;
    std::vector<std::shared_ptr<CudaGenerator>> gpus;
    std::vector<RowSource> sources = make_sources(opt, model, wopt, gpus);
    if (opt.dry_run) return dry_run(opt, model, sources, wopt);
    fs::create_directories(opt.out_dir);
    claim_folder(opt.out_dir, to_json(opt.spec, opt.layout));

    const std::vector<ShardTask> tasks = pending_shards(opt, Progress(opt.quiet, 0, 0));
    uint64_t rows = 0;
    for (const auto& t : tasks) rows += t.rows;
    Progress progress(opt.quiet, static_cast<uint32_t>(tasks.size()), rows);
    wopt.on_rows = [&](uint64_t r) { progress.rows_written(r); };
    wopt.on_shard = [&](const ShardTask& t) {
      progress.shard_written(shard_file_name(t.index, opt.layout.shards, format_extension(opt.layout.format)));
    };
    if (!tasks.empty()) write_shards(model, tasks, sources, wopt);
    progress.done();
    if (all_shards_present(opt))
      write_table_metadata(opt.out_dir, opt.spec, opt.layout);
    else
      progress.note("other shards are still missing; the last run to finish writes " + std::string(kTableFile));
    return kOk;
  } catch (const NoGpu& e) {
    report(fmt::format("--device cuda needs a usable GPU: {}", e.what()));
    return kNoGpu;
  } catch (const StorageError& e) {
    report(fmt::format("writing the table in {} failed: {}\n"
                       "The table is not complete and has no {}, so nothing will read it as a whole table. Check the "
                       "output storage (a full disk, a read-only folder, a storage mount that went away), then run "
                       "the same command again: complete shards are kept, the rest are written again.",
                       opt.out_dir, e.what(), kTableFile));
    return kFailed;
  } catch (const fs::filesystem_error& e) {
    report(fmt::format("cannot use the output folder {}: {}\n"
                       "Check that the folder's storage is there and writable, then run the same command again.",
                       opt.out_dir, e.code().message() + (e.path1().empty() ? "" : " (" + e.path1().string() + ")")));
    return kFailed;
  } catch (const std::exception& e) {
    report(e.what());
    return kFailed;
  }
}

}  // namespace trainrt::datagen
