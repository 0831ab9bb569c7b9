#include "commands/trainrt_command.h"

#include <stdexcept>

#include <doctest/doctest.h>

namespace trainc {

TEST_CASE("one trainrt command line, three renderings") {
  XGBoost x;
  x.from = {"data", "/synthetic", "/mnt/stores/data/synthetic", ""};
  x.to = {"data", "/models", "/mnt/stores/data/models", ""};
  x.rounds = 10;
  x.params = {{"eta", "0.1"}};
  const trainrt::Command cmd = trainrt::train(x, true);
  auto words = trainrt::shell_words(cmd);
  CHECK(words.front() == "trainrt");
  CHECK(words.back() == "--tracker=\"$MASTER_ADDR:$MASTER_PORT\"");
  CHECK(std::find(words.begin(), words.end(), "--param=eta=0.1") != words.end());
  auto argv = trainrt::argv(cmd, {{"NODE_RANK", "1"}, {"NNODES", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "9"}});
  CHECK(argv.back() == "--tracker=127.0.0.1:9");
  CHECK(std::find(argv.begin(), argv.end(), "--rank=1") != argv.end());
  CHECK_THROWS_AS(trainrt::argv(cmd), std::logic_error);  // a distributed command needs its environment
  auto local = trainrt::train(x, false, [](const StoreLoc& l) { return "/tmp/stores/" + l.store + l.path; });
  CHECK(trainrt::argv(local)[2] == "--data=/tmp/stores/data/synthetic");
}

TEST_CASE("preflight coordinates one port above the rendezvous") {
  auto words = trainrt::shell_words(trainrt::preflight(8, true));
  CHECK(words.back() == "--coordinator=\"$MASTER_ADDR:$((MASTER_PORT + 1))\"");
  auto argv = trainrt::argv(trainrt::preflight(8, true),
                            {{"NODE_RANK", "0"}, {"NNODES", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}});
  CHECK(argv.back() == "--coordinator=h:29501");
}

TEST_CASE("values are quoted for bash; probes keep flag and value apart") {
  Datagen d;
  d.rows = 5;
  d.features = 3;
  d.to = {"data", "/x y", "/mnt/stores/data/x y", ""};
  auto words = trainrt::shell_words(trainrt::datagen(d));
  CHECK(std::find(words.begin(), words.end(), "'--out=/mnt/stores/data/x y'") != words.end());
  CHECK(trainrt::shell_word(trainrt::shard_index(trainrt::env("shard"))) == "--shard-index=\"$shard\"");
  CHECK(trainrt::shell_word({"weird", {trainrt::lit("a\"$b"), trainrt::env("C")}}) == "--weird=\"a\\\"\\$b$C\"");
  CHECK(trainrt::exec_argv(trainrt::probe_live("/tmp/hb", 3600)) ==
        std::vector<std::string>{"trainrt", "probe", "live", "--heartbeat", "/tmp/hb", "--max-age", "1h"});
  CHECK_THROWS_AS(trainrt::exec_argv(trainrt::preflight(1, true)), std::logic_error);
}

}  // namespace trainc
