#include "model/kinds/facts.h"

#include <algorithm>

#include <doctest/doctest.h>

#include "model/model.h"

namespace trainc {

TEST_CASE("Triton's facts: ports in order, a command line that sets them, one health check per model") {
  Triton t;
  t.repository.url = "gs://b/models";
  t.models = {"resnet", "bert"};
  t.args = {"--log-verbose=1"};
  const auto ports = Triton::ports();
  REQUIRE(ports.size() == 3);
  CHECK(ports[0].name == "http");  // probes and health.sh use the first
  CHECK(t.argv() == std::vector<std::string>{"tritonserver", "--model-repository=gs://b/models", "--http-port=8000",
                                             "--grpc-port=8001", "--metrics-port=8002", "--log-verbose=1"});
  // Each port the command line sets is a flag the user's args may not set.
  const auto reserved = Triton::reserved_flags();
  for (const auto& p : ports) {
    const std::string flag = "--" + std::string(p.name) + "-port";
    CHECK(std::find(reserved.begin(), reserved.end(), flag) != reserved.end());
  }
  const auto checks = t.health_checks();
  REQUIRE(checks.size() == 3);
  CHECK(checks[0].path == Triton::probes().readiness);
  CHECK(checks[0].proves.empty());
  CHECK(checks[2].path == "/v2/models/bert/ready");
  CHECK(checks[2].proves == "model 'bert'");
  CHECK(t.store_refs() == std::vector<const StoreRef*>{&t.repository});
  REQUIRE(t.user_words().size() == 1);
  CHECK(t.user_words()[0].words == &t.args);
  CHECK(t.calling_examples("nvcr.io/nvidia/tritonserver:26.07-py3").client->image ==
        "nvcr.io/nvidia/tritonserver:26.07-py3-sdk");
}

TEST_CASE("the lead pod group is the engine's own: Ray's head, Dask's scheduler") {
  ComputeCluster ray;
  Ray r;
  r.head.name = "head";
  ray.engine = r;
  CHECK(&ray.lead() == &std::get<Ray>(ray.engine).head);
  CHECK(ray.lead_name() == "head");
  ComputeCluster dask;
  dask.engine = Dask{};
  CHECK(&dask.lead() == &std::get<Dask>(dask.engine).scheduler);
  CHECK(dask.lead_name() == "scheduler");
}

TEST_CASE("KubeRay adds its autoscaler beside the head only when a worker group autoscales, and wait-gcs-ready to every worker") {
  ComputeCluster c;
  c.engine = Ray{};
  PodGroup fixed;
  fixed.name = "cpu";
  c.workers = {fixed};
  {
    const auto added = c.added_containers();
    REQUIRE(added.size() == 1);
    CHECK(added[0].name == "wait-gcs-ready");
    CHECK(added[0].group == "cpu");
    CHECK(added[0].init);
    CHECK(added[0].requests.at("cpu") == "200m");
  }
  CHECK_FALSE(c.head_uses_api());
  PodGroup grows = fixed;
  grows.name = "grows";
  grows.max = 4;
  c.workers.push_back(grows);
  const auto added = c.added_containers();
  REQUIRE(added.size() == 3);
  CHECK(added[2].name == "autoscaler");
  CHECK(added[2].group == "head");
  CHECK_FALSE(added[2].init);
  CHECK(added[2].requests.at("cpu") == "500m");
  CHECK(added[2].limits.at("memory") == "512Mi");
  CHECK(c.head_uses_api());
  // Dask's operator is none: nothing added, whatever its groups do.
  c.engine = Dask{};
  CHECK(c.added_containers().empty());
}

TEST_CASE("step kinds: trainrt, store places in flag order, the words the secret scan reads") {
  XGBoost x;
  CHECK(store_locs(StepKind{x}).size() == 2);
  const StepKind k = x;
  REQUIRE(store_reads(k).size() == 1);
  CHECK(store_reads(k)[0] == &std::get<XGBoost>(k).from);  // it writes `to`
  Step s;
  s.run = Command{{"python", "train.py"}};
  REQUIRE(s.command_line());
  CHECK(*s.command_line() == std::vector<std::string>{"python", "train.py"});
  CHECK_FALSE(s.uses_trainrt());
  const auto words = user_words(s.run);
  REQUIRE(words.size() == 1);
  CHECK(words[0].key.empty());  // the kind's key itself: `command`
  s.run = Torchrun{"/w/t.py", {"--lr", "1"}, 29400};
  CHECK(rendezvous_port(s.run) == 29400);
  CHECK(user_words(s.run)[0].key == "args");
  Datagen d;
  d.shards = 8;
  s.run = d;
  CHECK(s.uses_trainrt());
  CHECK(s.shard_count() == 8);
  CHECK_FALSE(s.command_line());
}

}  // namespace trainc

namespace trainc {

TEST_CASE("vLLM's model memory: the size from params, else from the name; the bytes from dtype, flags or name") {
  auto weights = [](const std::string& model, std::vector<std::string> args = {}, std::string params = "",
                    std::string dtype = "") {
    Vllm v;
    v.model = model;
    v.args = std::move(args);
    v.params = std::move(params);
    v.dtype = std::move(dtype);
    const ModelMemory m = v.model_memory();
    CHECK(m.sized);
    return m.weight_bytes;
  };
  CHECK(weights("Qwen/Qwen2.5-72B-Instruct") == doctest::Approx(144e9));  // 72B x bfloat16
  CHECK(weights("Qwen/Qwen2.5-0.5B-Instruct") == doctest::Approx(1e9));
  CHECK(weights("meta-llama/Llama-2-7b-chat-hf") == doctest::Approx(14e9));
  CHECK(weights("HuggingFaceTB/SmolLM-135M") == doctest::Approx(0.27e9));
  CHECK(weights("mistralai/Mixtral-8x7B-Instruct-v0.1") == doctest::Approx(112e9));  // every expert whole
  CHECK(weights("Qwen/Qwen3-30B-A3B") == doctest::Approx(60e9));                     // the total, not the active
  CHECK(weights("Qwen/Qwen2.5-72B-Instruct-AWQ") == doctest::Approx(36e9));          // 4-bit, from the name
  CHECK(weights("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8") == doctest::Approx(8e9));
  CHECK(weights("Qwen/Qwen2.5-72B-Instruct", {"--quantization=fp8"}) == doctest::Approx(72e9));
  CHECK(weights("Qwen/Qwen2.5-72B-Instruct", {"--dtype=float32"}) == doctest::Approx(288e9));
  CHECK(weights("Qwen/Qwen2.5-72B-Instruct", {}, "7B", "int8") == doctest::Approx(7e9));  // the spec wins
  CHECK(weights("microsoft/Phi-3-mini-4k-instruct") == 0);  // "4k" is a context length, not a size
  CHECK(weights("deepseek-ai/DeepSeek-V3") == 0);
  Vllm gcs;
  gcs.weights = {"models", "/llama-3.1-8b", "gs://b/llama-3.1-8b", ""};
  gcs.args = {"--gpu-memory-utilization=0.8"};
  gcs.require_fit = true;
  const ModelMemory m = gcs.model_memory();
  CHECK(m.weight_bytes == doctest::Approx(16e9));
  CHECK(m.utilization == doctest::Approx(0.8));
  CHECK(m.require_known);
  CHECK(m.how.find("'models:/llama-3.1-8b'") != std::string::npos);
  CHECK_FALSE(Triton{}.model_memory().sized);  // a repository of models of any kind is not judged
}

}  // namespace trainc
