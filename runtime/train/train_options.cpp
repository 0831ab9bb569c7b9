#include "train/train_options.h"

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "train/xgb.h"

namespace trainrt {
namespace {

bool parse_int(std::string_view text, int& out) {
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

int env_int(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  int out = 0;
  if (!parse_int(v, out)) throw UsageError(fmt::format("environment variable {}='{}' is not an integer", name, v));
  return out;
}

bool is_one(const std::string& v) { return v.empty() || std::strtod(v.c_str(), nullptr) == 1.0; }

}  // namespace

Param parse_param(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw UsageError(fmt::format("--param '{}' is not key=value (for example --param max_depth=6)", text));
  }
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

HostPort parse_host_port(std::string_view text) {
  const auto colon = text.rfind(':');
  HostPort hp;
  if (colon == std::string_view::npos || colon == 0 || !parse_int(text.substr(colon + 1), hp.port) || hp.port <= 0 ||
      hp.port > 65535) {
    throw UsageError(fmt::format("tracker address '{}' is not HOST:PORT (for example 10.0.0.3:9091)", text));
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  hp.host = host;
  return hp;
}

void resolve_options(TrainOptions& o, const GetEnv& getenv) {
  int n = 0;
  auto has = [&](const char* name) {
    const char* v = getenv(name);
    return v != nullptr && *v != '\0';
  };
  if (o.rank < 0) o.rank = has("RANK") ? env_int(getenv, "RANK")
                           : has("JOB_COMPLETION_INDEX") ? env_int(getenv, "JOB_COMPLETION_INDEX")
                                                         : 0;
  if (o.world_size < 0) o.world_size = has("WORLD_SIZE") ? env_int(getenv, "WORLD_SIZE") : 1;
  if (o.tracker.empty() && has("TRACKER_ADDR")) o.tracker = getenv("TRACKER_ADDR");

  if (o.data_dir.empty()) throw UsageError("--data is required: the folder of part-*.trs shards or *.parquet files");
  if (o.label.empty()) throw UsageError("--label must name a column");
  if (o.model_dir.empty()) throw UsageError("--model-dir is required: where model.ubj, checkpoints and metrics go");
  if (o.rounds < 1) throw UsageError(fmt::format("--rounds must be at least 1, not {}", o.rounds));
  if (o.checkpoint_every < 0) throw UsageError("--checkpoint-every must be 0 (never) or more");
  if (o.threads < 0) throw UsageError("--threads must be 0 (every core) or more");
  if (!(o.eval_fraction >= 0 && o.eval_fraction < 1)) {
    throw UsageError(fmt::format("--eval-fraction must be in [0, 1), not {}", o.eval_fraction));
  }
  if (o.device != "cpu" && o.device != "cuda") throw UsageError("--device must be cpu or cuda");
  std::string limit;  // thrown as BuildLimit after every other check
#if XGBOOST_VER_MAJOR < 2
  if (o.device == "cuda") {
    limit = fmt::format("--device cuda needs XGBoost 2.0 or later; this trainrt was built with {}",
                        xgb::compiled_version());
  }
#endif
  if (o.dmatrix != "auto" && o.dmatrix != "quantile" && o.dmatrix != "dense") {
    throw UsageError("--dmatrix must be auto, quantile or dense");
  }
  if (const std::string bins = param_value(o.params, "max_bin", "256"); !parse_int(bins, n) || n < 2) {
    throw UsageError(fmt::format("--param max_bin={} is not a number of bins (at least 2)", bins));
  }
  if (o.world_size < 1) throw UsageError(fmt::format("world size must be at least 1, not {}", o.world_size));
  if (o.rank >= o.world_size) {
    throw UsageError(fmt::format("rank {} is not below world size {}", o.rank, o.world_size));
  }
  if (o.init_timeout < 1) throw UsageError("--init-timeout must be at least 1 second");
  if (o.world_size > 1) {
    if (o.tracker.empty()) {
      throw UsageError(fmt::format("world size {} needs --tracker HOST:PORT (or TRACKER_ADDR)", o.world_size));
    }
    parse_host_port(o.tracker);
  }
  if (o.tracker_serve != 0) {
    if (o.tracker_serve < 1 || o.tracker_serve > 65535) throw UsageError("--tracker-serve needs a port number");
#if XGBOOST_VER_MAJOR < 2 || (XGBOOST_VER_MAJOR == 2 && XGBOOST_VER_MINOR < 1)
    if (limit.empty()) {
      limit = fmt::format("--tracker-serve needs XGBoost 2.1 or later (this trainrt was built with {}); "
                          "start runtime/train/tracker17.py instead",
                          xgb::compiled_version());
    }
#endif
  }
  if (!limit.empty()) throw BuildLimit(limit);
}

std::vector<Param> booster_params(const TrainOptions& o) {
  std::vector<Param> p{{"tree_method", "hist"}};
  if (o.threads > 0) p.push_back({"nthread", std::to_string(o.threads)});
#if XGBOOST_VER_MAJOR >= 2
  p.push_back({"device", o.device});
#endif
  p.insert(p.end(), o.params.begin(), o.params.end());
  return p;
}

std::string param_value(const std::vector<Param>& params, std::string_view key, std::string_view fallback) {
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->key == key) return it->value;
  }
  return std::string(fallback);
}

bool draws_unsaved_randomness(const std::vector<Param>& params) {
  for (const char* key : {"subsample", "colsample_bytree", "colsample_bylevel", "colsample_bynode"}) {
    if (!is_one(param_value(params, key, "1"))) return true;
  }
  const std::string booster = param_value(params, "booster", "gbtree");
  if (booster != "gbtree") return true;  // dart drops trees at random; gblinear may shuffle features
  return param_value(params, "objective", "").starts_with("rank:");
}

bool use_quantile_dmatrix(const TrainOptions& o, const std::vector<Param>& params) {
  if (o.dmatrix != "auto") return o.dmatrix == "quantile";
  const std::string method = param_value(params, "tree_method", "hist");
  return (method == "hist" || method == "gpu_hist") && param_value(params, "booster", "gbtree") != "gblinear";
}

}  // namespace trainrt
