// `trainrt train`: flags -> TrainOptions -> run_train().
#include <cstdlib>
#include <memory>
#include <string>

#include "cli_numbers.h"
#include "commands.h"
#include "report.h"
#include "train/train_options.h"
#include "train/trainer.h"

namespace trainrt {

void add_train(CLI::App& app, Run& run) {
  auto* cmd = app.add_subcommand(
      "train",
      "train XGBoost (hist) on native shards or Parquet files, data-parallel across ranks, with checkpoints and resume.\n"
      "Writes MODEL_DIR/model.ubj, MODEL_DIR/metrics.jsonl and MODEL_DIR/checkpoints/ckpt-NNNNNN.ubj.\n"
      "A run killed at any point and started again with the same flags resumes from the newest valid\n"
      "checkpoint and ends with the same model bytes as a run never interrupted.");
  auto o = std::make_shared<TrainOptions>();
  auto params = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--data", o->data_dir, "folder of native shards part-*.trs, or of Parquet files *.parquet")->required();
  cmd->add_option("--label", o->label, "the label column of Parquet files (default: label); every other column is a feature");
  cmd->add_option("--model-dir", o->model_dir, "where model.ubj, metrics.jsonl and checkpoints/ go")->required();
  cmd->add_option("--rounds", o->rounds, "boosting rounds")->required()->check(whole_number(1, 1'000'000'000));
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "save a checkpoint every K rounds (0: never)")
      ->check(whole_number(0, 1'000'000'000));
  cmd->add_option("--param", *params, "key=value passed to XGBoosterSetParam (repeatable; default tree_method=hist)");
  cmd->add_option("--threads", o->threads, "threads (0: every core)")->check(whole_number(0, 4096));
  cmd->add_option("--eval-fraction", o->eval_fraction, "hold out this fraction of each shard's last rows to evaluate on")
      ->check(real_number(0, 0.999));
  cmd->add_option("--heartbeat", o->heartbeat, "file touched every round, for `trainrt probe live`");
  cmd->add_option("--device", o->device, "cpu, or cuda (XGBoost 2.0+)");
  cmd->add_option("--dmatrix", o->dmatrix,
                  "auto (QuantileDMatrix for hist), quantile, or dense (a plain DMatrix, for other tree methods)");
  cmd->add_flag("!--no-verify", o->verify_shards, "skip the shards' payload checksums");
  cmd->add_option("--rank", o->rank, "this process's rank (default: $RANK, $JOB_COMPLETION_INDEX, 0)")
      ->check(whole_number(0, 65535));
  cmd->add_option("--world-size", o->world_size, "number of ranks (default: $WORLD_SIZE, 1)")->check(whole_number(1, 65536));
  cmd->add_option("--tracker", o->tracker, "tracker HOST:PORT (default: $TRACKER_ADDR)");
  cmd->add_option("--tracker-serve", o->tracker_serve, "rank 0 also runs the tracker on this port (XGBoost 2.1+)")
      ->check(whole_number(1, 65535));
  cmd->add_option("--init-timeout", o->init_timeout, "seconds for all ranks to join before exiting with code 4")
      ->check(whole_number(1, 604800));
  cmd->add_flag("--save-on-all-ranks", o->save_on_all_ranks,
                "every rank writes model.ubj into its --model-dir (default: rank 0 only)");
  // A later --flag wins over an earlier one (scripts append overrides), except the repeatable --param.
  for (auto* opt : cmd->get_options()) {
    if (opt->get_name() != "--param" && opt->get_expected_max() == 1) opt->take_last();
  }
  cmd->callback([o, params, cmd, &run] {
    std::string limit;  // the flags are fine but this build cannot do what they ask
    try {
      o->params.clear();
      for (const auto& p : *params) o->params.push_back(parse_param(p));
      resolve_options(*o, [](const char* name) { return std::getenv(name); });
    } catch (const BuildLimit& e) {
      limit = e.what();
    } catch (const UsageError& e) {
      report(e.what());
      run.rc = kUsage;
      return;
    }
    // --check-args answers for the flags, which a pod's trainrt (built with a newer XGBoost) may run.
    if (run.stop_before_work(*cmd, limit)) return;
    if (!limit.empty()) {
      report(limit);
      run.rc = kUsage;
      return;
    }
    run.rc = run_train(*o);
  });
}

}  // namespace trainrt
