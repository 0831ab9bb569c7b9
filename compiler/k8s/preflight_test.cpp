#include <doctest/doctest.h>

#include <string>

#include "k8s/entry_script.h"
#include "k8s/preflight.h"

namespace trainc {
namespace {

System one_step(Step s) {
  System sys;
  sys.name = "pf";
  sys.ns = "pf";
  Store st;
  st.name = "runs";
  st.bucket = "bkt";
  sys.stores["runs"] = st;
  s.name = "train";
  s.image = "registry.test/img:1";
  sys.steps.push_back(s);
  return sys;
}

Step torchrun_step(int gpus) {
  Step s;
  s.gpus = gpus;
  s.run = Torchrun{"/workspace/train.py", {}, 29500};
  return s;
}

std::string script_of(const Step& s) {
  const System sys = one_step(s);
  return entry_script(sys, sys.steps[0]);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the preflight is the entry script's first work, before any sync or state") {
  Step s = torchrun_step(4);
  s.inputs.push_back({{"runs", "/code/", "s3://bkt/code/", ""}, "/workspace", ""});
  const std::string text = script_of(s);
  const auto first_check = text.find("preflight_done\n");
  REQUIRE(first_check != std::string::npos);
  CHECK(first_check < text.find("s3 sync"));
  CHECK(first_check < text.find("mkdir -p \"$STATE\""));
  CHECK(has(text, "PREFLIGHT_IMAGE=registry.test/img:1\n"));
  CHECK(has(text, "exit 78\n"));
  CHECK(k8s::kPreflightExit == 78);
}

TEST_CASE("the preflight checks the tools the script calls, and only those") {
  SUBCASE("an S3 torchrun step: aws and torchrun, the passwd entry, torch's view of its GPUs") {
    Step s = torchrun_step(4);
    s.outputs = Outputs{.path = "/workspace/out", .to = {"runs", "/out/", "s3://bkt/out/", ""}, .ptr = ""};
    s.checkpoints = Checkpoints{.path = "/workspace/out",
                                .pattern = "*.pt",
                                .resume_flag = "--resume",
                                .ptr = "",
                                .every_seconds = std::nullopt,
                                .cost_seconds = std::nullopt};
    const std::string text = script_of(s);
    CHECK(has(text, "preflight_tool aws "));
    CHECK(has(text, "preflight_tool torchrun "));
    CHECK(has(text, "preflight_tool find "));
    CHECK(has(text, "preflight_uid_known \"$PREFLIGHT_UID\""));
    CHECK(has(text, "python3 -c \"$PREFLIGHT_GPU_CHECK\" 4)"));
  }
  SUBCASE("a CPU torchrun step without stores: no aws, no GPU check") {
    const std::string text = script_of(torchrun_step(0));
    CHECK_FALSE(has(text, "preflight_tool aws"));
    CHECK_FALSE(has(text, "preflight_tool find"));
    CHECK_FALSE(has(text, "PREFLIGHT_GPU_CHECK"));
    CHECK(has(text, "preflight_tool torchrun "));
  }
  SUBCASE("a command's program, when named bare; a Python one checks the uid") {
    Step s;
    s.run = Command{{"python3", "train.py"}};
    std::string text = script_of(s);
    CHECK(has(text, "preflight_tool python3 'to run the command'"));
    CHECK(has(text, "preflight_uid_known"));
    s.run = Command{{"./run.sh", "x"}};  // may come with the inputs: not looked for before the sync
    text = script_of(s);
    CHECK_FALSE(has(text, "preflight_tool ./run.sh"));
    CHECK_FALSE(has(text, "preflight_uid_known"));
    s.run = Command{{"bash", "-c", "python3 train.py"}};
    CHECK(has(script_of(s), "preflight_uid_known"));
  }
  SUBCASE("a trainrt step: trainrt, no Python") {
    Step s;
    s.gpus = 8;
    s.run = XGBoost{};
    const std::string text = script_of(s);
    CHECK(has(text, "preflight_tool trainrt "));
    CHECK_FALSE(has(text, "preflight_uid_known"));
    CHECK_FALSE(has(text, "PREFLIGHT_GPU_CHECK"));  // trainrt checks its GPUs itself (trainrt preflight)
  }
  SUBCASE("every step: a writable HOME") {
    CHECK(has(script_of(torchrun_step(0)), "elif ! { : >\"$HOME/.trainc-preflight.$$\"; } 2>/dev/null; then"));
  }
}

}  // namespace trainc
