#include "train/trainer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "common/fnv.h"
#include "formats/shard_reader.h"
#include "report.h"
#include "train/checkpoint.h"
#include "train/collective.h"
#include "train/metrics_log.h"
#include "train/train_data.h"
#include "train/xgb.h"

namespace trainrt {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Test hook: TRAINRT_FAILPOINT=WHERE:ROUND makes the process SIGKILL itself at one exact point,
/// so the tests can kill a run where an outside kill would rarely land. WHERE is
///   round       after round ROUND is complete (metrics, checkpoint, heartbeat)
///   metrics     after round ROUND's metrics line, before its checkpoint
///   checkpoint  after ckpt-ROUND's temporary file is written and synced, before the rename
///   final       after model.ubj's temporary file is written and synced, before the rename
class Failpoint {
 public:
  Failpoint() {
    const char* v = std::getenv("TRAINRT_FAILPOINT");
    if (v == nullptr) return;
    const std::string_view spec(v);
    const auto colon = spec.find(':');
    where_ = spec.substr(0, colon);
    if (colon != std::string_view::npos) round_ = std::atoi(v + colon + 1);
  }
  void hit(std::string_view where, int round = 0) const {
    if (!where_.empty() && where == where_ && (where == "final" || round == round_)) {
      report(fmt::format("TRAINRT_FAILPOINT={}:{}: killing this process", where_, round_), Level::note);
      std::raise(SIGKILL);
    }
  }

 private:
  std::string where_;
  int round_ = -1;
};

class Trainer {
 public:
  Trainer(const TrainOptions& o, const Collective& c)
      : o_(o),
        coll_(c),
        params_(booster_params(o)),
        prefix_(c.distributed() ? fmt::format("train[{}]: ", c.rank()) : "train: "),
        checkpoint_dir_((fs::path(o.model_dir) / "checkpoints").string()) {}

  int run();

 private:
  bool leader() const { return coll_.rank() == 0; }
  template <typename... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) const {
    std::fputs((prefix_ + fmt::format(f, std::forward<Args>(args)...) + "\n").c_str(), stderr);
  }
  void touch_heartbeat();
  void load_data();
  std::vector<char> resume_point();
  xgb::Booster make_booster(const std::vector<char>& model);
  void finish(const xgb::Booster& booster);

  const TrainOptions& o_;
  const Collective& coll_;
  std::vector<Param> params_;
  std::string prefix_;
  std::string checkpoint_dir_;
  Failpoint failpoint_;
  TrainData data_;
  uint64_t total_rows_ = 0;
  bool heartbeat_warned_ = false;
};

void Trainer::touch_heartbeat() {
  if (o_.heartbeat.empty()) return;
  const int fd = ::open(o_.heartbeat.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  const bool ok = fd >= 0 && ::futimens(fd, nullptr) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok && !heartbeat_warned_) {
    report(fmt::format("cannot touch heartbeat file {}", o_.heartbeat), Level::warning);
    heartbeat_warned_ = true;
  }
}

void Trainer::load_data() {
  const auto t0 = Clock::now();
  auto all = list_shard_files(o_.data_dir);
  const auto parquet_files = list_parquet_files(o_.data_dir);
  const bool parquet = all.empty() && !parquet_files.empty();
  if (!all.empty() && !parquet_files.empty())
    throw ShardError(fmt::format("{}: holds both native shards (part-*.trs) and Parquet files (*.parquet); train on one "
                                 "table at a time",
                                 o_.data_dir));
  if (parquet) all = parquet_files;
  if (!parquet && o_.label != "label")
    throw ShardError(fmt::format("{}: --label {} names a Parquet column, but the folder holds native shards, which carry "
                                 "their label",
                                 o_.data_dir, o_.label));
  if (all.empty())
    throw ShardError(fmt::format("{}: no part-*.trs shards or *.parquet files in the data folder", o_.data_dir));
  if (all.size() < static_cast<size_t>(coll_.world_size())) {
    throw ShardError(fmt::format("{}: {} shard(s) for {} ranks; every rank needs at least one (shard i goes to rank "
                                 "i % world size)",
                                 o_.data_dir, all.size(), coll_.world_size()));
  }
  const auto table = read_table_description(o_.data_dir, all);
  const auto mine = shards_of_rank(all, coll_.rank(), coll_.world_size());
  RankShards shards = parquet ? open_parquet_shards(mine, o_.label) : open_rank_shards(mine, o_.verify_shards, o_.threads);
  if (table) check_against_description(shards, *table, o_.data_dir);
  if (!parquet) check_shard_set(shards, all, coll_.rank(), coll_.world_size());
  else if (!table) check_parquet_names(all);
  touch_heartbeat();

  // Every rank must agree that every rank has rows before XGBoost's collective sketching starts.
  const RowCounts counts = count_rows(shards, o_.eval_fraction);
  const auto train_rows = coll_.allgather(counts.train);
  const auto eval_rows = coll_.allgather(counts.eval);
  for (int r = 0; r < coll_.world_size(); ++r) {
    if (train_rows[r] == 0) throw ShardError(fmt::format("rank {} has no training rows", r));
    if (o_.eval_fraction > 0 && eval_rows[r] == 0) {
      throw ShardError(fmt::format("rank {} has no rows to hold out for --eval-fraction {}", r, o_.eval_fraction));
    }
    total_rows_ += train_rows[r];
  }

  DataOptions d;
  d.quantile = use_quantile_dmatrix(o_, params_);
  d.eval_fraction = o_.eval_fraction;
  d.max_bin = std::atoi(param_value(params_, "max_bin", "256").c_str());  // checked by resolve_options()
  d.threads = o_.threads;
  data_ = build_train_data(shards, d);
  say("{} {}, {} x {} float32 ({} training rows, {} held out) loaded as a {} in {:.2f} s",
      parquet ? shards.parquet.size() : shards.shards.size(), parquet ? "Parquet file(s)" : "shard(s)", shards.rows, shards.features, data_.train_rows, data_.eval_rows, d.quantile ? "QuantileDMatrix" : "DMatrix",
      seconds_since(t0));
  touch_heartbeat();
}

xgb::Booster Trainer::make_booster(const std::vector<char>& model) {
  std::vector<DMatrixHandle> cache{data_.train.get()};
  if (data_.eval) cache.push_back(data_.eval.get());
  xgb::Booster b(cache);
  if (!model.empty()) b.load(model);
  for (const auto& p : params_) b.set_param(p.key, p.value);
  return b;
}

/// Rank 0 picks the newest checkpoint that loads and sends it to every rank, so all ranks resume
/// from the same bytes even without shared storage. Empty: start from scratch.
std::vector<char> Trainer::resume_point() {
  std::vector<char> model;
  if (leader()) {
    remove_stale_temporaries(checkpoint_dir_);
    remove_stale_temporaries(o_.model_dir);
    auto warn = [](const std::string& w) { report(w, Level::warning); };
    if (auto found = select_checkpoint(checkpoint_dir_, xgb::model_problem, warn)) {
      say("resuming from {} ({} rounds)", found->path, found->rounds);
      model = std::move(found->bytes);
    }
  }
  coll_.broadcast(model, 0);
  return model;
}

void Trainer::finish(const xgb::Booster& booster) {
  const std::vector<char> model = booster.save();
  const uint64_t digest = trainc::common::fnv1a64({model.data(), model.size()});
  const auto digests = coll_.allgather(digest);
  for (int r = 1; r < coll_.world_size(); ++r) {
    if (digests[r] != digests[0]) {
      throw std::runtime_error(fmt::format("rank {} ended with a different model than rank 0 (fnv {:016x} vs {:016x})",
                                           r, digests[r], digests[0]));
    }
  }
  if (leader() || o_.save_on_all_ranks) {
    const std::string path = (fs::path(o_.model_dir) / "model.ubj").string();
    write_file_atomically(path, model, [this] { failpoint_.hit("final"); });
    say("wrote {} ({} bytes, fnv {:016x})", path, model.size(), digest);
  }
}

int Trainer::run() {
  say("XGBoost {}, {} rank(s), {} rounds, data {}", xgb::compiled_version(), coll_.world_size(), o_.rounds,
      o_.data_dir);
  touch_heartbeat();
  if (leader() || o_.save_on_all_ranks) fs::create_directories(o_.model_dir);
  load_data();

  xgb::Booster booster = make_booster(resume_point());
  const int start = booster.boosted_rounds();
  if (start > o_.rounds) {
    throw std::runtime_error(fmt::format("{} holds a checkpoint after {} rounds, more than --rounds {}; use a fresh "
                                         "--model-dir or raise --rounds",
                                         checkpoint_dir_, start, o_.rounds));
  }
  const std::string metrics_path = (fs::path(o_.model_dir) / "metrics.jsonl").string();
  double elapsed_before = 0;
  std::optional<MetricsLog> metrics;
  if (leader()) {
    elapsed_before = truncate_metrics(metrics_path, start);
    metrics.emplace(metrics_path);
  }
  // Randomness XGBoost keeps outside the model (samplers' generators) would make a resumed run
  // diverge; such runs restart the booster from every checkpoint they write, as a resumed run does.
  const bool reload_at_checkpoints = draws_unsaved_randomness(params_) && o_.checkpoint_every > 0;
  std::vector<DMatrixHandle> sets{data_.train.get()};
  std::vector<std::string> names{"train"};
  if (data_.eval) {
    sets.push_back(data_.eval.get());
    names.push_back("eval");
  }

  const auto t0 = Clock::now();
  for (int i = start; i < o_.rounds; ++i) {
    const auto t_round = Clock::now();
    RoundRecord rec;
    rec.round = i + 1;
    try {
      booster.update(i, data_.train);
      rec.metrics = parse_eval_line(booster.eval(i, sets, names));
    } catch (const xgb::XgbError& e) {
      if (!coll_.distributed()) throw;
      throw std::runtime_error(fmt::format("{}\n(another rank may have failed: restart every rank; they resume from the "
                                           "newest checkpoint)",
                                           e.what()));
    }
    rec.elapsed = elapsed_before + seconds_since(t0);
    rec.rows = total_rows_;
    rec.ranks = coll_.world_size();
    if (metrics) metrics->append(rec);
    failpoint_.hit("metrics", rec.round);
    if (o_.checkpoint_every > 0 && rec.round % o_.checkpoint_every == 0) {
      const std::vector<char> model = booster.save();
      if (leader()) {
        save_checkpoint(checkpoint_dir_, rec.round, model, 2, [&] { failpoint_.hit("checkpoint", rec.round); });
      }
      if (reload_at_checkpoints) booster = make_booster(model);
    }
    touch_heartbeat();
    if (leader()) {
      std::string shown;
      for (const auto& [name, value] : rec.metrics) shown += fmt::format("  {}={:.6g}", name, value);
      say("round {}/{}{}  {:.3f} s", rec.round, o_.rounds, shown, seconds_since(t_round));
    }
    failpoint_.hit("round", rec.round);
  }
  finish(booster);
  return kOk;
}

}  // namespace

int run_train(const TrainOptions& options) {
  if (options.world_size > 1) report_as(fmt::format("train[{}]", options.rank));
  try {
    Collective collective(options);
    return Trainer(options, collective).run();
  } catch (const UsageError& e) {
    report(e.what());
    return kUsage;
  } catch (const xgb::XgbError& e) {
    report(fmt::format("XGBoost refused to go on: {}\nIf it names a parameter, fix that --param; if it names the "
                       "data, check the shards in {}. The text after the call's name is XGBoost's own.",
                       e.what(), options.data_dir));
    return kFailed;
  } catch (const fs::filesystem_error& e) {
    report(fmt::format("cannot use {}: {}\nCheck that the folder (--model-dir, --data, --heartbeat) is on storage "
                       "that is mounted and writable, then run the same command again: training resumes from the "
                       "newest checkpoint.",
                       e.path1().empty() ? "a file" : e.path1().string(), e.code().message()));
    return kFailed;
  } catch (const std::exception& e) {
    report(e.what());
    return kFailed;
  }
}

}  // namespace trainrt
