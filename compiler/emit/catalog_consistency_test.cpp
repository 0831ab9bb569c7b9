// The machine type, accelerator type and GPU count in every node pool, Terraform block, gcloud
// flag and pod come from one catalog row: compile the examples and compare each with the row.
#include <filesystem>
#include <regex>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "driver.h"
#include "k8s/names.h"
#include "k8s/plan.h"
#include "model/catalog.h"

namespace trainc {

namespace fs = std::filesystem;

static std::vector<fs::path> example_specs() {
  std::vector<fs::path> out;
  for (const auto& dir : fs::directory_iterator(fs::path(TRAINC_SOURCE_ROOT) / "examples"))
    for (const char* name : {"spec.yaml", "spec.jsonnet"})
      if (fs::exists(dir.path() / name)) out.push_back(dir.path() / name);
  std::sort(out.begin(), out.end());
  return out;
}

/// The text of `resource "google_container_node_pool" "<label>" { ... }` up to the next resource.
static std::string tf_pool_block(const std::string& tf, const std::string& pool) {
  std::string label = pool;
  std::replace(label.begin(), label.end(), '-', '_');
  auto start = tf.find("resource \"google_container_node_pool\" \"" + label + "\"");
  if (start == std::string::npos) return {};
  auto end = tf.find("\nresource ", start + 1);
  return tf.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST_CASE("pools, Terraform, scripts and pods agree with the catalog row") {
  int pools_checked = 0;
  for (const auto& spec : example_specs()) {
    CAPTURE(spec.string());
    std::string error;
    SourcePtr src = read_source(spec.string(), error);
    REQUIRE(src);
    Diagnostics diags;
    auto compiled = compile_source(src, diags);
    REQUIRE_MESSAGE(compiled, diags.render_text());
    const System& sys = compiled->system;
    const auto& files = compiled->files.files();
    for (const auto& [name, pool] : sys.pools) {
      CAPTURE(name);
      const MachineType* row = catalog().machine(pool.machine);
      REQUIRE(row);
      ++pools_checked;
      if (row->gpus > 0) {
        REQUIRE(pool.accelerator);
        CHECK(pool.accelerator->type == row->accelerator);
        CHECK(pool.accelerator->count == row->gpus);
      }
      if (!sys.gcp) continue;
      // A pool of several TPU slices is several node pools, each the same row: the first stands for all.
      std::string block = tf_pool_block(files.at("terraform/node_pools.tf"), pool.node_pools().front());
      REQUIRE_FALSE(block.empty());
      CHECK(std::regex_search(block, std::regex("machine_type += \"" + pool.machine + "\"")));
      const std::string& up = files.at("scripts/up.sh");
      CHECK(up.find("--machine-type=" + pool.machine) != std::string::npos);
      if (pool.accelerator) {
        CHECK(std::regex_search(block, std::regex("type += \"" + pool.accelerator->type + "\"")));
        CHECK(std::regex_search(block, std::regex("count += " + std::to_string(pool.accelerator->count) + "\\b")));
        CHECK(up.find(fmt::format("type={},count={}", pool.accelerator->type, pool.accelerator->count)) != std::string::npos);
      }
      if (pool.tpu) CHECK(std::regex_search(block, std::regex("tpu_topology += \"" + pool.tpu->topology + "\"")));
    }
    for (const auto& step : sys.steps) {
      const Pool* pool = sys.pool(step.pool);
      if (!pool || !pool->accelerator || step.gpus == 0) continue;
      YAML::Node job = YAML::Load(files.at(k8s::plan(sys).workload(step.name)->done().file));
      if (job["kind"].as<std::string>() == "JobSet") job = job["spec"]["replicatedJobs"][0]["template"];  // a gang
      auto pod = job["spec"]["template"]["spec"];
      CHECK(pod["nodeSelector"]["cloud.google.com/gke-accelerator"].as<std::string>() == pool->accelerator->type);
      int gpus = pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int>();
      CHECK(gpus == step.gpus);
      CHECK(gpus <= pool->accelerator->count);
    }
  }
  CHECK(pools_checked >= 8);
}

}  // namespace trainc
