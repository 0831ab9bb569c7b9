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
