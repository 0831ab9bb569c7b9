#include "model/catalog.h"

#include <algorithm>
#include <regex>
#include <set>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "frontend/schema_check.h"

namespace trainc {

TEST_CASE("the catalog agrees with itself") {
  const Catalog& c = catalog();
  std::map<std::string, std::set<std::string>> families_of_label;
  const std::regex gpu_suffix(".*-([0-9]+)g$"), tpu_suffix(".*-([0-9]+)t$"), cpu_suffix("^(n1|n2|e2|c2)-[a-z]+-([0-9]+)$");
  std::smatch m;
  int machines = 0;
  for (const auto& name : c.machine_names()) {
    const MachineType& mt = *c.machine(name);
    ++machines;
    CAPTURE(name);
    if (mt.gpus > 0) {
      families_of_label[mt.accelerator].insert(mt.family);
      if (mt.family != "g2" && std::regex_match(name, m, gpu_suffix)) CHECK(std::stoi(m[1]) == mt.gpus);
    }
    if (mt.tpu_chips > 0) {
      if (std::regex_match(name, m, tpu_suffix)) CHECK(std::stoi(m[1]) == mt.tpu_chips);
      std::set<std::string> seen;
      for (const auto& topo : mt.tpu_topologies) {
        CAPTURE(topo);
        CHECK(seen.insert(topo).second);
        CHECK(topology_dims(topo) == mt.tpu_dims);
        CHECK(topology_chips(topo) > 0);
        CHECK(topology_chips(topo) % mt.tpu_chips == 0);
      }
    }
    if (mt.gpus == 0 && mt.tpu_chips == 0 && std::regex_match(name, m, cpu_suffix)) CHECK(std::stoi(m[2]) == mt.vcpus);
    if (mt.vcpus > 0) {
      CHECK(c.allocatable_cpu(mt) > 0);
      CHECK(c.allocatable_cpu(mt) < mt.vcpus);
      CHECK(c.allocatable_memory(mt) < mt.memory_gib * (1 << 30));
    }
    CHECK_FALSE(mt.source.empty());
  }
  CHECK(machines > 50);
  for (const auto& [label, fams] : families_of_label) {
    CAPTURE(label);
    CHECK(fams.size() == 1);
  }
  for (const auto& gpu : c.attachable_gpus()) {
    int last = 0;
    for (const auto& [count, max] : gpu.max_vcpus) {
      CHECK(max >= last);
      last = max;
    }
  }
}

TEST_CASE("catalog rows the seeds depend on") {
  const Catalog& c = catalog();
  const MachineType* a4 = c.machine("a4-highgpu-8g");
  REQUIRE(a4);
  CHECK(a4->gpus == 8);
  CHECK(a4->accelerator == "nvidia-b200");
  CHECK(a4->rdma);
  // The seed's A4 Dask worker asks cpu 222 and memory 3700Gi: it must fit one node.
  CHECK(c.allocatable_cpu(*a4) >= 222);
  CHECK(c.allocatable_memory(*a4) >= 3700.0 * (1 << 30));
  CHECK(c.machine("a2-ultragpu-8g")->accelerator == "nvidia-a100-80gb");  // not nvidia-tesla-a100
  CHECK(c.machine("a2-megagpu-16g")->gpus == 16);
  CHECK(c.machine("g2-standard-24")->gpus == 2);
  const AttachableGpu* t4 = c.attachable("nvidia-tesla-t4");
  REQUIRE(t4);
  CHECK(t4->machine_family == "n1");
  CHECK(t4->max_vcpus.at(4) == 96);
  CHECK(t4->max_vcpus.at(1) == 48);
  CHECK(c.allocatable_cpu(*c.machine("n1-standard-4")) == doctest::Approx(3.92));
  CHECK(c.allocatable_memory(*c.machine("n1-standard-4")) / (1 << 30) == doctest::Approx(12.402).epsilon(0.001));
  // v5e 2x4 is ambiguous: two hosts of -4t or one of -8t.
  for (const char* type : {"ct5lp-hightpu-4t", "ct5lp-hightpu-8t"}) {
    const auto& topos = c.machine(type)->tpu_topologies;
    CHECK(std::count(topos.begin(), topos.end(), "2x4") == 1);
  }
  CHECK(topology_chips("2x2x4") == 16);
  CHECK(topology_chips("2xx4") == 0);
}

TEST_CASE("the GPU and process maximums are the hardware catalog's largest machines") {
  int gpus = 0, vcpus = 0;
  for (const auto& name : catalog().machine_names()) {
    gpus = std::max(gpus, catalog().machine(name)->gpus);
    vcpus = std::max(vcpus, catalog().machine(name)->vcpus);
  }
  for (const auto& a : catalog().attachable_gpus())
    for (const auto& [count, _] : a.max_vcpus) gpus = std::max(gpus, count);
  const auto schema = nlohmann::json::parse(spec_schema_text());
  const auto& step = schema["definitions"]["step"]["properties"];
  CHECK(step["gpus"]["maximum"] == gpus);
  CHECK(schema["definitions"]["accelerator"]["properties"]["count"]["maximum"] == gpus);
  CHECK(step["procsPerNode"]["maximum"] == vcpus);
}

}  // namespace trainc
