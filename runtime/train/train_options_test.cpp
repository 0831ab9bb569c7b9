#include <doctest/doctest.h>

#include <map>
#include <string>

#include "train/collective.h"
#include "train/train_options.h"

using namespace trainrt;

namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TrainOptions minimal() {
  TrainOptions o;
  o.data_dir = "data";
  o.model_dir = "model";
  o.rounds = 10;
  return o;
}

std::string usage_error(TrainOptions o, std::map<std::string, std::string> env = {}) {
  try {
    resolve_options(o, env_of(std::move(env)));
  } catch (const UsageError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("--param key=value") {
  CHECK(parse_param("max_depth=6") == Param{"max_depth", "6"});
  CHECK(parse_param("eval_metric=") == Param{"eval_metric", ""});
  CHECK(parse_param("interaction_constraints=[[0,1]]=x") == Param{"interaction_constraints", "[[0,1]]=x"});
  CHECK_THROWS_WITH_AS(parse_param("max_depth"), doctest::Contains("not key=value"), UsageError);
  CHECK_THROWS_AS(parse_param("=6"), UsageError);
  CHECK_THROWS_AS(parse_param(""), UsageError);
}

TEST_CASE("booster parameters: defaults first, the user's after them and in order") {
  auto o = minimal();
  o.threads = 2;
  o.params = {{"tree_method", "approx"}, {"eval_metric", "auc"}, {"eval_metric", "logloss"}};
  const auto p = booster_params(o);
  REQUIRE(p.size() >= 5);
  CHECK(p.front() == Param{"tree_method", "hist"});
  CHECK(param_value(p, "tree_method", "") == "approx");
  CHECK(param_value(p, "nthread", "") == "2");
  CHECK(param_value(p, "max_bin", "256") == "256");
  // repeated keys are all passed (XGBoost accumulates eval_metric)
  CHECK(p[p.size() - 2] == Param{"eval_metric", "auc"});
  CHECK(p.back() == Param{"eval_metric", "logloss"});
  CHECK(param_value(minimal().params, "nthread", "none") == "none");
  CHECK(param_value(booster_params(minimal()), "nthread", "none") == "none");
}

TEST_CASE("QuantileDMatrix for hist, a plain DMatrix otherwise") {
  auto o = minimal();
  CHECK(use_quantile_dmatrix(o, booster_params(o)));
  o.params = {{"tree_method", "approx"}};
  CHECK_FALSE(use_quantile_dmatrix(o, booster_params(o)));
  o.params = {{"booster", "gblinear"}};
  CHECK_FALSE(use_quantile_dmatrix(o, booster_params(o)));
  o.params = {};
  o.dmatrix = "dense";
  CHECK_FALSE(use_quantile_dmatrix(o, booster_params(o)));
}

TEST_CASE("parameters that keep random state outside the model") {
  CHECK_FALSE(draws_unsaved_randomness({{"max_depth", "6"}, {"eta", "0.1"}, {"seed", "3"}}));
  CHECK_FALSE(draws_unsaved_randomness({{"subsample", "1"}, {"colsample_bytree", "1.0"}}));
  CHECK(draws_unsaved_randomness({{"subsample", "0.8"}}));
  CHECK(draws_unsaved_randomness({{"colsample_bynode", "0.5"}}));
  CHECK_FALSE(draws_unsaved_randomness({{"subsample", "0.8"}, {"subsample", "1"}}));  // the last value counts
  CHECK(draws_unsaved_randomness({{"booster", "dart"}}));
  CHECK(draws_unsaved_randomness({{"objective", "rank:pairwise"}}));
}

TEST_CASE("flags are checked") {
  CHECK(usage_error(minimal()).empty());
  auto o = minimal();
  o.rounds = 0;
  CHECK(usage_error(o).find("--rounds") != std::string::npos);
  o = minimal();
  o.eval_fraction = 1;
  CHECK(usage_error(o).find("--eval-fraction") != std::string::npos);
  o = minimal();
  o.checkpoint_every = -1;
  CHECK_FALSE(usage_error(o).empty());
  o = minimal();
  o.data_dir.clear();
  CHECK(usage_error(o).find("--data") != std::string::npos);
  o = minimal();
  o.params = {{"max_bin", "x"}};
  CHECK(usage_error(o).find("max_bin=x") != std::string::npos);
  o.params = {{"max_bin", "64"}};
  CHECK(usage_error(o).empty());
  o = minimal();
  o.dmatrix = "sparse";
  CHECK(usage_error(o).find("--dmatrix") != std::string::npos);
}

TEST_CASE("rank, world size and tracker: flags, then the environment") {
  TrainOptions o = minimal();
  resolve_options(o, env_of({}));
  CHECK(o.rank == 0);
  CHECK(o.world_size == 1);

  o = minimal();
  resolve_options(o, env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"TRACKER_ADDR", "10.0.0.3:9091"}}));
  CHECK(o.rank == 1);
  CHECK(o.world_size == 2);
  CHECK(o.tracker == "10.0.0.3:9091");

  o = minimal();
  o.rank = 0;
  o.world_size = 3;
  o.tracker = "host:1";
  resolve_options(o, env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"TRACKER_ADDR", "x:2"}}));
  CHECK(o.rank == 0);
  CHECK(o.world_size == 3);
  CHECK(o.tracker == "host:1");

  o = minimal();
  resolve_options(o, env_of({{"JOB_COMPLETION_INDEX", "2"}, {"WORLD_SIZE", "4"}, {"TRACKER_ADDR", "t:1"}}));
  CHECK(o.rank == 2);

  CHECK(usage_error(minimal(), {{"RANK", "x"}}).find("RANK") != std::string::npos);
  CHECK(usage_error(minimal(), {{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"TRACKER_ADDR", "t:1"}})
            .find("not below world size") != std::string::npos);
  CHECK(usage_error(minimal(), {{"WORLD_SIZE", "2"}}).find("--tracker") != std::string::npos);
  CHECK(usage_error(minimal(), {{"WORLD_SIZE", "2"}, {"TRACKER_ADDR", "nohost"}}).find("HOST:PORT") !=
        std::string::npos);
}

TEST_CASE("what this build's XGBoost cannot do is a BuildLimit, reported only after every flag passed") {
  auto serve = minimal();
  serve.tracker_serve = 9091;
  auto bad_port = serve;
  bad_port.tracker_serve = 70000;
  CHECK(usage_error(bad_port).find("port number") != std::string::npos);
  auto bad_rounds = serve;
  bad_rounds.rounds = 0;
  CHECK(usage_error(bad_rounds).find("--rounds") != std::string::npos);
#if XGBOOST_VER_MAJOR < 2 || (XGBOOST_VER_MAJOR == 2 && XGBOOST_VER_MINOR < 1)
  CHECK_THROWS_WITH_AS(resolve_options(serve, env_of({})), doctest::Contains("XGBoost 2.1"), BuildLimit);
  auto bad_rounds_cuda = bad_rounds;
  bad_rounds_cuda.device = "cuda";
  try {
    resolve_options(bad_rounds_cuda, env_of({}));
    FAIL("no error");
  } catch (const BuildLimit&) {
    FAIL("a BuildLimit hid a bad flag");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("--rounds") != std::string::npos);
  }
#else
  CHECK_NOTHROW(resolve_options(serve, env_of({})));
#endif
}

TEST_CASE("communicator keys for the XGBoost this was built with") {
  const auto c = communicator_config(1, 2, HostPort{"10.0.0.3", 9091}, 60);
#if XGBOOST_VER_MAJOR > 2 || (XGBOOST_VER_MAJOR == 2 && XGBOOST_VER_MINOR >= 1)
  CHECK(c["dmlc_communicator"] == "rabit");
  CHECK(c["dmlc_tracker_uri"] == "10.0.0.3");
  CHECK(c["dmlc_tracker_port"] == 9091);
  CHECK(c["dmlc_task_id"] == "1");
  CHECK(c["dmlc_timeout"] == 60);
  CHECK_FALSE(c.contains("rabit_world_size"));
#else
  // 1.7 reads rabit_* keys and silently ignores dmlc_* ones
  CHECK(c["xgboost_communicator"] == "rabit");
  CHECK(c["rabit_tracker_uri"] == "10.0.0.3");
  CHECK(c["rabit_tracker_port"] == 9091);
  CHECK(c["rabit_task_id"] == "1");
  CHECK(c["rabit_world_size"] == 2);
  CHECK(c["DMLC_WORKER_CONNECT_RETRY"].get<int>() >= 8);  // 2+4+...+2(n-1) >= 60 s of retries
  CHECK_FALSE(c.contains("dmlc_tracker_uri"));
#endif
}

TEST_CASE("tracker addresses") {
  CHECK(parse_host_port("10.0.0.3:9091").host == "10.0.0.3");
  CHECK(parse_host_port("10.0.0.3:9091").port == 9091);
  CHECK(parse_host_port("[::1]:80").host == "::1");
  CHECK(parse_host_port("train-0.train.ns.svc:9091").host == "train-0.train.ns.svc");
  CHECK_THROWS_AS(parse_host_port("host"), UsageError);
  CHECK_THROWS_AS(parse_host_port("host:0"), UsageError);
  CHECK_THROWS_AS(parse_host_port("host:70000"), UsageError);
  CHECK_THROWS_AS(parse_host_port(":80"), UsageError);
}
