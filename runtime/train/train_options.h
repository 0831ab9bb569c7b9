#pragma once
// What `trainrt train` is asked to do: flags and their environment fallbacks, checked, plus the
// parameter list handed to XGBoost.
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainrt {

/// A bad flag or flag combination (exit kUsage).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Flags that are valid but ask for what this build's XGBoost cannot do (--device cuda before 2.0,
/// --tracker-serve before 2.1). Also exit kUsage, except under `trainrt --check-args`, which
/// answers for the flags: the pods' image is built with a newer XGBoost than a CI machine may have.
struct BuildLimit : UsageError {
  using UsageError::UsageError;
};

/// One `--param key=value`, passed to XGBoosterSetParam in the order given.
struct Param {
  std::string key;
  std::string value;
  bool operator==(const Param&) const = default;
};

/// "max_depth=6" -> {max_depth, 6}; the value may itself contain '='. Throws UsageError.
Param parse_param(std::string_view text);

struct HostPort {
  std::string host;
  int port = 0;
};

/// "10.0.0.3:9091" or "[::1]:9091". Throws UsageError.
HostPort parse_host_port(std::string_view text);

struct TrainOptions {
  std::string data_dir;
  std::string label = "label";  ///< the label column of Parquet tables (native shards carry theirs)
  std::string model_dir;
  int rounds = 0;
  int checkpoint_every = 0;  ///< 0: no checkpoints
  std::vector<Param> params;
  int threads = 0;  ///< 0: XGBoost's default (every core)
  double eval_fraction = 0;
  std::string heartbeat;  ///< touched every round when not empty
  std::string device = "cpu";
  std::string dmatrix = "auto";  ///< auto | quantile | dense
  bool verify_shards = true;
  bool save_on_all_ranks = false;
  // Distributed training; -1 and "" mean "not given" until resolve_options() fills them.
  int rank = -1;
  int world_size = -1;
  std::string tracker;     ///< HOST:PORT
  int tracker_serve = 0;   ///< rank 0 also runs the tracker on this port (XGBoost 2.1+)
  int init_timeout = 300;  ///< seconds for every rank to join
};

using GetEnv = std::function<const char*(const char*)>;

/// Fills rank, world size and tracker from RANK (or JOB_COMPLETION_INDEX), WORLD_SIZE and
/// TRACKER_ADDR where no flag gave them, then checks every option. Throws UsageError; BuildLimit
/// only once every option has passed.
void resolve_options(TrainOptions& options, const GetEnv& getenv);

/// The parameters XGBoost gets: trainrt's defaults (tree_method=hist, nthread, device), then the
/// user's in the order given, so a user's value wins.
std::vector<Param> booster_params(const TrainOptions& options);

/// The last value given for `key`, or `fallback`.
std::string param_value(const std::vector<Param>& params, std::string_view key, std::string_view fallback);

/// Whether these parameters make XGBoost draw random numbers from state that a saved model does not
/// keep (row and column subsampling, DART dropout, ...). Such runs reload the booster from each
/// checkpoint they write, so an uninterrupted run follows the same path as a resumed one.
bool draws_unsaved_randomness(const std::vector<Param>& params);

/// Whether to build a QuantileDMatrix (hist only) rather than a plain DMatrix.
bool use_quantile_dmatrix(const TrainOptions& options, const std::vector<Param>& params);

}  // namespace trainrt
