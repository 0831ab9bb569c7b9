#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "commands/dask_command.h"
#include "k8s/pod.h"
#include "run/local_pods.h"
#include "run/local_runner.h"
#include "run/process.h"

namespace trainc {

TEST_CASE("--seed reads STORE[:/PATH]=FOLDER") {
  LocalRunOptions::Seed seed;
  std::string error;
  REQUIRE(parse_seed("bucket:/code/=examples/customgpt/code", seed, error));
  CHECK(seed.store == "bucket");
  CHECK(seed.path == "/code/");
  CHECK(seed.folder == "examples/customgpt/code");
  REQUIRE(parse_seed("data=./seed", seed, error));
  CHECK(seed.store == "data");
  CHECK(seed.path == "/");
  CHECK(seed.folder == "./seed");
  CHECK_FALSE(parse_seed("bucket:/code", seed, error));       // no folder
  CHECK_FALSE(parse_seed("bucket:code=./code", seed, error));  // a path not from the store's root
  CHECK_FALSE(parse_seed("=./code", seed, error));             // no store
  CHECK(error.find("STORE[:/PATH]=FOLDER") != std::string::npos);
}

TEST_CASE("a local run keeps a step's nodes and lowers its processes per node to fit") {
  Step step;
  step.nodes = 1;
  step.procs_per_node = 4;
  CHECK(local_procs_per_node(step, 4) == 4);
  CHECK(local_procs_per_node(step, 2) == 2);
  step.nodes = 4;
  step.procs_per_node = 8;
  CHECK(local_procs_per_node(step, 4) == 1);
  CHECK(local_procs_per_node(step, 16) == 4);
  step.nodes = 8;
  CHECK(local_procs_per_node(step, 4) == 1);  // never below one a node
}

TEST_CASE("the rendezvous variables a Job's pods get, which the local run gives its pods too") {
  System sys;
  sys.name = "mnist";
  Step step;
  step.name = "train";
  step.run = Torchrun{"mnist.py", {}, 3389};
  CHECK(k8s::rendezvous_env(sys, step).empty());  // one node: torchrun --standalone
  step.nodes = 4;
  const auto vars = k8s::rendezvous_env(sys, step);
  REQUIRE(vars.size() == 4);
  CHECK(vars[0].name == "NNODES");
  CHECK(vars[0].value == "4");
  CHECK(vars[1].name == "NODE_RANK");
  CHECK(vars[1].field == "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  CHECK(vars[2].name == "MASTER_ADDR");
  CHECK(vars[2].value == "mnist-train-node-0-0.mnist-train");
  CHECK(vars[3].name == "MASTER_PORT");
  CHECK(vars[3].value == "3389");
  CHECK(step.runs_torchrun());
  step.run = Command{{"python3", "train.py"}};
  CHECK_FALSE(step.runs_torchrun());
  step.run = Command{{"torchrun", "--nproc-per-node=2", "train.py"}};  // what the pod launches decides
  CHECK(step.runs_torchrun());
}

TEST_CASE("Dask's command lines listen on loopback alone when the local run gives the host, on every interface in a pod") {
  const auto scheduler = trainrt::argv(dask::scheduler(8786, 8787));
  CHECK(scheduler == std::vector<std::string>{"dask", "scheduler", "--port=8786", "--dashboard-address=:8787"});
  CHECK(trainrt::argv(dask::scheduler(8786, 8787, "127.0.0.1")) ==
        std::vector<std::string>{"dask", "scheduler", "--host=127.0.0.1", "--port=8786",
                                 "--dashboard-address=127.0.0.1:8787"});
  PodGroup group;
  group.name = "cpu";
  const auto worker = trainrt::argv(dask::worker(Dask{}, group, "tcp://127.0.0.1:8786", "127.0.0.1"), {{"POD_NAME", "w"}});
  CHECK(worker.back() == "--dashboard-address=127.0.0.1:0");  // the worker's own dashboard, else every interface
  CHECK(std::find(worker.begin(), worker.end(), "--host=127.0.0.1") != worker.end());
  const auto in_pod = trainrt::argv(dask::worker(Dask{}, group, "tcp://s:8786"), {{"POD_NAME", "w"}});
  CHECK(std::none_of(in_pod.begin(), in_pod.end(), [](const std::string& a) { return a.starts_with("--host"); }));
}

TEST_CASE("a child started with Inherit::nothing sees only the environment it is given") {
  ::setenv("TRAINC_UNIT_MARKER", "leaked", 1);
  const std::map<std::string, std::string> env{{"PATH", "/usr/bin:/bin"}, {"GIVEN", "yes"}};
  std::string error;
  Child clean({"sh", "-c", "[ -z \"${TRAINC_UNIT_MARKER+set}\" ] && [ \"$GIVEN\" = yes ]"}, error, env, {},
              Inherit::nothing);
  REQUIRE(clean.started());
  CHECK(clean.wait() == 0);
  Child inherited({"sh", "-c", "[ \"$TRAINC_UNIT_MARKER\" = leaked ] && [ \"$GIVEN\" = yes ]"}, error, env);
  REQUIRE(inherited.started());
  CHECK(inherited.wait() == 0);
  ::unsetenv("TRAINC_UNIT_MARKER");
}


TEST_CASE("--kill and --preempt read [STEP:]RANK@SECONDS") {
  Fault f;
  std::string error;
  REQUIRE(parse_fault("2@12.5", "--kill", f, error));
  CHECK(f.step.empty());
  CHECK(f.pod == 2);
  CHECK(f.seconds == doctest::Approx(12.5));
  CHECK(f.option() == "--kill 2@12.5");
  REQUIRE(parse_fault("train:0@30s", "--preempt", f, error));
  f.kind = Fault::Kind::preempt;
  CHECK(f.step == "train");
  CHECK(f.pod == 0);
  CHECK(f.seconds == doctest::Approx(30));
  CHECK(f.option() == "--preempt train:0@30");
  // What option() prints parses back to the same fault.
  Fault again;
  REQUIRE(parse_fault(f.option().substr(std::string("--preempt ").size()), "--preempt", again, error));
  CHECK(again.step == f.step);
  CHECK(again.pod == f.pod);
  CHECK(again.seconds == f.seconds);
  // A fault timed by the checkpoints in the step's store.
  REQUIRE(parse_fault("train:1@checkpoint:2", "--kill", f, error));
  f.kind = Fault::Kind::kill;
  CHECK(f.checkpoints == 2);
  CHECK(f.seconds == 0);
  CHECK(f.option() == "--kill train:1@checkpoint:2");
  REQUIRE(parse_fault("1@checkpoint:3+2.5s", "--kill", f, error));
  CHECK(f.checkpoints == 3);
  CHECK(f.seconds == doctest::Approx(2.5));
  CHECK(f.option() == "--kill 1@checkpoint:3+2.5");
  REQUIRE(parse_fault(f.option().substr(std::string("--kill ").size()), "--kill", again, error));
  CHECK(again.checkpoints == 3);
  CHECK(again.seconds == doctest::Approx(2.5));
  // A time after a checkpoint-timed fault parses as a time again.
  REQUIRE(parse_fault("1@4", "--kill", f, error));
  CHECK(f.checkpoints == 0);
  for (const char* bad : {"1", "@3", "x@3", "-1@3", "1@", "1@-2", "1@soon", "1@1e3", ":1@3", "1@nan", "1@inf", "1.5@3",
                          "1@checkpoint:", "1@checkpoint:0", "1@checkpoint:x", "1@checkpoint:2+", "1@checkpoint:2+-1",
                          "1@checkpoint:-2", "1@checkpoints:2"}) {
    CAPTURE(bad);
    error.clear();
    CHECK_FALSE(parse_fault(bad, "--kill", f, error));
    CHECK(error.find("[STEP:]RANK@SECONDS") != std::string::npos);
    CHECK(error.find(std::string("'") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("--chaos picks the same step, pod and time from the same seed, within the bounds") {
  Step a, b;
  a.name = "prep";
  a.nodes = 1;
  b.name = "train";
  b.nodes = 4;
  const std::vector<const Step*> steps{&a, &b};
  std::set<std::string> chosen;
  std::set<int> pods;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Fault f = chaos_fault(seed, steps, 20);
    const Fault g = chaos_fault(seed, steps, 20);
    CHECK(f.option() == g.option());
    CHECK(f.kind == Fault::Kind::kill);
    CHECK(f.seconds >= 1);
    CHECK(f.seconds <= 20);
    CHECK(f.seconds * 10 == doctest::Approx(std::round(f.seconds * 10)));
    CHECK(f.pod < (f.step == "train" ? 4 : 1));
    chosen.insert(f.option());
    if (f.step == "train") pods.insert(f.pod);
  }
  CHECK(chosen.size() > 100);  // the seed decides, not a constant
  CHECK(pods.size() == 4);     // every pod of the 4-pod step is hit by some seed
  // A window shorter than a second still picks 1 s, the earliest.
  CHECK(chaos_fault(5, steps, 0.5).seconds == doctest::Approx(1));
}

TEST_CASE("a pod's termination grace is its pod's: 300 s when it syncs outputs or keeps checkpoints") {
  Step step;
  CHECK(termination_grace_seconds(step) == 30);
  step.checkpoints = Checkpoints{};
  CHECK(termination_grace_seconds(step) == 300);
}

}  // namespace trainc

TEST_CASE("exchange: stdin in, stdout and stderr out; a child that reads none of its stdin costs no SIGPIPE") {
  const trainc::Exchanged cat = trainc::exchange({"sh", "-c", "cat; echo said >&2; exit 3"}, "in\n", 10);
  CHECK(cat.code == 3);
  CHECK(cat.out == "in\n");
  CHECK(cat.err == "said\n");
  // More than a pipe holds, to a child that exits at once: the write fails (EPIPE), trainc lives on.
  const trainc::Exchanged early = trainc::exchange({"true"}, std::string(1 << 20, 'x'), 10);
  CHECK(early.code == 0);
  const trainc::Exchanged slow = trainc::exchange({"sleep", "5"}, "", 1);
  CHECK(slow.code == -2);
}
