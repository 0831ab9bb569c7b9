#include <doctest/doctest.h>

#include <future>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "preflight/preflight.h"
#include "report.h"

namespace trainrt::preflight {
namespace {

using std::chrono::milliseconds;

/// An environment made of a map.
Env env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

Plan plan_of(const Options& o, const Env& env) {
  auto p = resolve(o, env);
  if (auto* e = std::get_if<std::string>(&p)) FAIL("unexpected usage error: " << *e);
  return std::get<Plan>(p);
}

std::string usage_error(const Options& o, const Env& env) {
  auto p = resolve(o, env);
  auto* e = std::get_if<std::string>(&p);
  REQUIRE(e != nullptr);
  return *e;
}

TEST_CASE("options: a lone pod by default; flags win over RANK, WORLD_SIZE, MASTER_ADDR:MASTER_PORT") {
  Plan lone = plan_of({}, env_of({}));
  CHECK(lone.rank == 0);
  CHECK(lone.world_size == 1);
  CHECK(!lone.coordinator);
  CHECK(lone.bytes == 256u << 20);
  CHECK(lone.timeout == milliseconds(120'000));

  auto env = env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "xgb-0.xgb"}, {"MASTER_PORT", "29500"}});
  Plan from_env = plan_of({}, env);
  CHECK(from_env.rank == 3);
  CHECK(from_env.world_size == 4);
  REQUIRE(from_env.coordinator);
  CHECK(from_env.coordinator->host == "xgb-0.xgb");
  CHECK(from_env.coordinator->port == 29500);

  Options flags;
  flags.rank = 1;
  flags.world_size = 2;
  flags.coordinator = "10.1.2.3:7000";
  flags.bytes = "1GiB";
  flags.timeout_seconds = 1.5;
  Plan from_flags = plan_of(flags, env);
  CHECK(from_flags.rank == 1);
  CHECK(from_flags.world_size == 2);
  CHECK(from_flags.coordinator->host == "10.1.2.3");
  CHECK(from_flags.bytes == 1u << 30);
  CHECK(from_flags.timeout == milliseconds(1500));

  // An IPv6 MASTER_ADDR needs no brackets.
  CHECK(plan_of({}, env_of({{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "fd00::2"}, {"MASTER_PORT", "1"}}))
            .coordinator->host == "fd00::2");
}

TEST_CASE("options: what is a usage error") {
  const Env none = env_of({});
  Options o;
  o.world_size = 2;
  CHECK(usage_error(o, none) ==
        "world size 2 needs rank 0's address: --coordinator HOST:PORT, or MASTER_ADDR and MASTER_PORT");
  o.rank = 2;
  o.coordinator = "h:1";
  CHECK(usage_error(o, none) == "rank 2 is outside 0..1 (world size 2)");
  CHECK(usage_error({}, env_of({{"RANK", "one"}})) == "RANK='one' is not an integer");
  Options bad_endpoint;
  bad_endpoint.coordinator = "h";
  CHECK(usage_error(bad_endpoint, none) == "--coordinator 'h' is not HOST:PORT");
  Options bad_bytes;
  bad_bytes.bytes = "lots";
  CHECK(usage_error(bad_bytes, none) == "--bytes 'lots' is not a size (examples: 256MiB, 1GiB, 64M)");
  bad_bytes.bytes = "3";
  CHECK(usage_error(bad_bytes, none) == "--bytes must be at least 4");
  Options bad_timeout;
  bad_timeout.timeout_seconds = 0;
  CHECK(usage_error(bad_timeout, none) == "--timeout must be more than 0 seconds");
}

GpuInventory no_driver() {
  GpuInventory inv;
  inv.error_code = 35;
  inv.error_name = "cudaErrorInsufficientDriver";
  inv.error_text = "CUDA driver version is insufficient for CUDA runtime version";
  inv.runtime_version = 13000;
  return inv;
}

TEST_CASE("no GPU: the message says what CUDA answered, what the pod shows, and what to check") {
  HostFacts facts;
  facts.driver_library_error = "libcuda.so.1: cannot open shared object file";
  auto lines = gpu_problem(no_driver(), 8, facts);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] ==
        "no usable GPU (expected 8): cudaGetDeviceCount failed with CUDA error 35 cudaErrorInsufficientDriver "
        "(CUDA driver version is insufficient for CUDA runtime version)");
  CHECK(lines[1] ==
        "found: CUDA runtime 13.0; no NVIDIA driver answered; libcuda.so.1 not loadable (libcuda.so.1: cannot open "
        "shared object file); no /dev/nvidia[0-9]* devices; NVIDIA_VISIBLE_DEVICES unset; CUDA_VISIBLE_DEVICES unset");
  CHECK(lines[2].find("likely: the NVIDIA driver is missing") == 0);
  CHECK(lines[3].find("nvidia.com/gpu") != std::string::npos);
}

TEST_CASE("no GPU: too few devices are listed; the expected count passes; no expectation takes any") {
  GpuInventory inv;
  inv.query_ok = true;
  inv.runtime_version = 13000;
  inv.driver_version = 13000;
  for (int i = 0; i < 4; ++i) inv.devices.push_back({i, "NVIDIA B200", fmt::format("0000:{:02x}:00.0", i), 192ull << 30, 10, 0});
  HostFacts facts;
  facts.driver_library = true;
  facts.cuda_visible_devices = "0,1,2,3";
  auto lines = gpu_problem(inv, 8, facts);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find("expected 8 GPUs, found 4: 0: NVIDIA B200 (192 GiB, sm_100, 0000:00:00.0); 1: ") == 0);
  CHECK(lines[1].find("CUDA_VISIBLE_DEVICES='0,1,2,3'") != std::string::npos);
  CHECK(gpu_problem(inv, 4, facts).empty());
  CHECK(gpu_problem(inv, -1, facts).empty());
  inv.devices.clear();
  CHECK(gpu_problem(inv, -1, facts).at(0) == "no usable GPU: CUDA sees no device");
}

/// Runs preflight for one rank; returns {exit code, stdout, stderr}.
struct Run {
  int code;
  std::string out, err;
};
Run run_rank(const Plan& plan) {
  std::ostringstream out, err;
  int code = run(plan, env_of({}), out, err);
  return {code, out.str(), err.str()};
}

nlohmann::json last_json_line(const std::string& out) {
  auto end = out.find_last_not_of('\n');
  auto start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1, end - start));
}

TEST_CASE("preflight on CPU pods (--expect-gpus 0): ranks meet, or the missing one is named (exit 4)") {
  report_as("preflight");  // as main() does for `trainrt preflight`, before the ranks' threads
  std::uint16_t port = 0;
  { port = Coordinator(0).port(); }
  Plan p;
  p.expect_gpus = 0;
  p.world_size = 3;
  p.coordinator = Endpoint{"127.0.0.1", port};
  p.timeout = milliseconds(5000);

  std::vector<std::future<Run>> ranks;
  for (int r = 0; r < 3; ++r) {
    Plan pr = p;
    pr.rank = r;
    ranks.push_back(std::async(std::launch::async, run_rank, pr));
  }
  for (auto& f : ranks) {
    Run r = f.get();
    CHECK(r.code == kOk);
    CHECK(r.err == "");
    CHECK(r.out.find("rendezvous: all 3 ranks joined") != std::string::npos);
    CHECK(last_json_line(r.out)["preflight"] == "ok");
  }

  p.timeout = milliseconds(600);
  p.rank = 0;
  auto r0 = std::async(std::launch::async, run_rank, p);
  p.rank = 1;
  Run r1 = run_rank(p);
  CHECK(r1.code == kRankTimeout);
  CHECK(r1.err.find("trainrt preflight: rank 2 never joined") == 0);
  auto j = last_json_line(r1.out);
  CHECK(j["preflight"] == "rank_timeout");
  CHECK(j["exit"] == 4);
  CHECK(j["missing_ranks"] == nlohmann::json::array({2}));
  CHECK(r0.get().code == kRankTimeout);
}

}  // namespace
}  // namespace trainrt::preflight
