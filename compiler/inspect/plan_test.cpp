#include "inspect/plan.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "driver.h"
#include "model/catalog.h"
#include "model/pricing.h"

using namespace trainc;
namespace fs = std::filesystem;

namespace {

System compile_text(const std::string& yaml) {
  Diagnostics diags;
  auto c = compile_source(std::make_shared<SourceFile>("spec.yaml", yaml), diags);
  REQUIRE_MESSAGE(c, diags.render_text());
  return c->system;
}

const std::string kHeader =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: p\n"
    "gcp: {project: my-project, region: us-central1, zone: us-central1-c}\n";

const PoolPlan& pool_named(const ResourcePlan& plan, const std::string& name) {
  for (const auto& p : plan.pools)
    if (p.name == name) return p;
  FAIL("no pool " << name);
  throw;
}

long long need(const std::vector<QuotaNeed>& needs, const std::string& metric) {
  for (const auto& q : needs)
    if (q.metric == metric) return q.amount;
  return -1;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("plan: nodes, accelerators, quota and price of GPU pools, from the tables") {
  const System sys = compile_text(kHeader + R"(cluster:
  pools:
    t4: {machine: n1-standard-8, accelerator: {type: nvidia-tesla-t4, count: 2}, autoscaling: {min: 1, max: 4}}
    cheap: {machine: n1-standard-8, accelerator: {type: nvidia-tesla-t4, count: 1}, nodes: 2, provisioning: spot}
pipeline:
  - {name: train, image: x/y:1, pool: t4, nodes: 3, torchrun: {script: t.py}, timeout: 2h}
  - {name: eval, image: x/y:1, pool: cheap, command: [run]}
)");
  const ResourcePlan plan = make_plan(sys);
  const PriceBook& book = price_book();
  const QuotaPair* t4q = book.gpu_quota("nvidia-tesla-t4");
  REQUIRE(t4q);
  const PoolPlan& t4 = pool_named(plan, "t4");
  CHECK(t4.min_nodes == 1);
  CHECK(t4.max_nodes == 4);
  CHECK(t4.max_gpus() == 8);
  CHECK(need(t4.quota, t4q->on_demand) == 8);
  CHECK(need(t4.quota, book.cpu_quota("n1-standard-8")) == 32);
  CHECK(need(t4.quota, "PREEMPTIBLE_" + book.cpu_quota("n1-standard-8")) == -1);
  const PoolPlan& cheap = pool_named(plan, "cheap");
  CHECK(need(cheap.quota, t4q->spot) == 2);
  CHECK(need(cheap.quota, t4q->on_demand) == -1);
  CHECK(need(cheap.quota, book.cpu_quota("n1-standard-8", true)) == 16);
  // Totals add up the pools' quota per metric.
  CHECK(need(plan.quota, book.cpu_quota("n1-standard-8")) == 32);
  if (!book.addresses_quota().empty()) CHECK(need(plan.quota, book.addresses_quota()) == 6);

  // A node costs the machine's row plus its attached GPUs' rows; spot pools pay spot prices.
  const Price* m = book.machine("us-central1", "n1-standard-8");
  const Price* g = book.gpu("us-central1", "nvidia-tesla-t4");
  REQUIRE(m);
  REQUIRE(g);
  REQUIRE(t4.node_price);
  CHECK(*t4.node_price == doctest::Approx(*m->on_demand + 2 * *g->on_demand));
  REQUIRE(cheap.node_price);
  CHECK(*cheap.node_price == doctest::Approx(*m->spot + *g->spot));
  CHECK(plan.min_price == doctest::Approx(*t4.node_price * 1 + *cheap.node_price * 2));
  CHECK(plan.max_price == doctest::Approx(*t4.node_price * 4 + *cheap.node_price * 2));

  // train, a gang (a JobSet): 3 pods x 2 GPUs (the pool's) x 2h, once per attempt (retries 2 by
  // default: 3 attempts), and 12 more per disruption; eval has no timeout, so the total is unbounded.
  REQUIRE(plan.workloads.size() == 2);
  const WorkloadPlan& train = plan.workloads[0];
  CHECK(train.gpus_per_pod == 2);
  CHECK(train.attempts == 3);
  CHECK(train.disruptions_unbounded);
  REQUIRE(train.accelerator_hours);
  CHECK(*train.accelerator_hours == doctest::Approx(36.0));
  REQUIRE(train.cost_bound);
  CHECK(*train.cost_bound == doctest::Approx(36.0 * *t4.node_price / 2));
  CHECK_FALSE(plan.accelerator_hours);
  CHECK(render_plan_text(plan).find("unbounded") != std::string::npos);
}

TEST_CASE("plan: a pool that scales to zero but holds the system pods is priced at the nodes they keep up") {
  const System sys = compile_text(kHeader + R"(cluster:
  pools:
    system: {machine: e2-standard-4, autoscaling: {min: 0, max: 3}}
    t4: {machine: n1-standard-8, accelerator: {type: nvidia-tesla-t4, count: 1}, autoscaling: {min: 0, max: 2}}
pipeline:
  - {name: train, image: x/y:1, pool: t4, command: [run]}
)");
  const ResourcePlan plan = make_plan(sys);
  const PoolPlan& system = pool_named(plan, "system");
  const PoolPlan& t4 = pool_named(plan, "t4");
  CHECK(system.min_nodes == 0);  // as Terraform sizes it
  CHECK(system.floor_nodes == 1);  // kube-dns and the controllers run there (the GPU nodes are tainted)
  CHECK(t4.floor_nodes == 0);
  REQUIRE(system.node_price);
  CHECK(plan.min_price == doctest::Approx(*system.node_price));
  CHECK(render_plan_text(plan).find("Pool system may scale to 0 node(s), but GKE's system pods") != std::string::npos);
}

TEST_CASE("plan: a gang's timeout bounds each attempt; a Job's spans its retries") {
  // prep-and-train's train: 2 nodes x 8 GPUs, 48h, retries 2. A JobSet restart makes new Jobs with a
  // fresh activeDeadlineSeconds: 3 attempts x 16 GPUs x 48 h = 2,304 GPU-hours, and each disruption
  // (not counted against maxRestarts) 768 more. A one-pod Job's deadline spans its retries: 8 x 48.
  const System sys = compile_text(kHeader + R"(cluster:
  pools:
    cpu: {machine: n2-standard-16}
    h100: {machine: a3-highgpu-8g, nodes: 2}
pipeline:
  - {name: train, image: x/y:1, pool: h100, nodes: 2, torchrun: {script: t.py}, timeout: 48h, retries: 2}
  - {name: eval, image: x/y:1, pool: h100, command: [run], timeout: 48h, retries: 2}
)");
  const ResourcePlan plan = make_plan(sys);
  const WorkloadPlan& train = plan.workloads[0];
  CHECK(train.attempts == 3);
  REQUIRE(train.accelerator_hours);
  CHECK(*train.accelerator_hours == doctest::Approx(2304.0));
  const Price* m = price_book().machine("us-central1", "a3-highgpu-8g");
  REQUIRE(m);
  REQUIRE(train.cost_bound);
  CHECK(*train.cost_bound == doctest::Approx(2304.0 * *m->on_demand / 8));
  const WorkloadPlan& eval = plan.workloads[1];
  CHECK(eval.attempts == 1);
  CHECK_FALSE(eval.disruptions_unbounded);
  REQUIRE(eval.accelerator_hours);
  CHECK(*eval.accelerator_hours == doctest::Approx(384.0));
  REQUIRE(plan.accelerator_hours);
  CHECK(*plan.accelerator_hours == doctest::Approx(2688.0));
  const std::string text = render_plan_text(plan);
  CAPTURE(text);
  CHECK(text.find("48h x 3 attempts: <= 2304 GPU-hours") != std::string::npos);
  CHECK(text.find("+768 per disruption") != std::string::npos);
  CHECK(text.find("once more per disruption") != std::string::npos);
  const auto j = plan_json(plan);
  CHECK(j["workloads"][0]["attempts"] == 3);
  CHECK(j["workloads"][0]["acceleratorHoursPerDisruption"] == 768.0);
  CHECK(j["workloads"][1]["acceleratorHoursPerDisruption"].is_null());
}

TEST_CASE("plan: long-lived pods that pin nodes count in the minimum price") {
  // A Dask scheduler and three whole-node workers hold all four nodes of a pool that may scale to
  // zero: the autoscaler can remove none, so the floor is 4 nodes, not the 1 the system pods keep.
  const System sys = compile_text(kHeader + R"(cluster:
  pools:
    cpu: {machine: n2-standard-8, autoscaling: {min: 0, max: 4}}
clusters:
  dask:
    engine: dask
    image: ghcr.io/dask/dask:2024.12.1
    scheduler: {pool: cpu, resources: {requests: {cpu: "2", memory: 8Gi}, limits: {memory: 8Gi}}}
    workers:
      cpu: {pool: cpu, replicas: 3}
pipeline:
  - {name: client, cluster: dask, command: [python3, client.py]}
)");
  const ResourcePlan plan = make_plan(sys);
  const PoolPlan& cpu = pool_named(plan, "cpu");
  CHECK(cpu.min_nodes == 0);
  CHECK(cpu.floor_nodes == 4);
  const Price* m = price_book().machine("us-central1", "n2-standard-8");
  REQUIRE(m);
  CHECK(plan.min_price == doctest::Approx(4 * *m->on_demand));  // 4 x 0.388472 = 1.553888
  CHECK(plan.max_price == doctest::Approx(4 * *m->on_demand));
  const std::string text = render_plan_text(plan);
  CAPTURE(text);
  CHECK(text.find("$1.55 per hour") != std::string::npos);
  CHECK(text.find("pods that stay while the system is up (GKE's system pods, ") != std::string::npos);
  CHECK(text.find("dask/scheduler") != std::string::npos);
  CHECK(cpu.floor_pods.size() == 3);  // system, dask/scheduler, dask/cpu
}

TEST_CASE("plan: TPU slices count chips per slice, and a region without prices says so") {
  const System sys = compile_text(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: p\n"
      "gcp: {project: my-project, region: europe-west4, zone: europe-west4-b}\n"
      "cluster:\n  pools:\n    system: {machine: e2-standard-4}\n"
      "    v5e: {machine: ct5lp-hightpu-4t, tpu: {topology: 2x4, slices: 2}}\n");
  const ResourcePlan plan = make_plan(sys);
  const PoolPlan& p = pool_named(plan, "v5e");
  CHECK(p.node_pools.size() == 2);
  CHECK(p.max_nodes == 4);  // 2 hosts per 2x4 slice, 2 slices
  CHECK(p.max_chips() == 16);
  const QuotaPair* q = price_book().tpu_quota("v5e");
  REQUIRE(q);
  CHECK(need(p.quota, q->on_demand) == 16);
  // europe-west4 has Cyclenerd's machine rows, but no source read prices TPU slices there.
  CHECK_FALSE(p.node_price);
  CHECK(plan.unpriced == std::vector<std::string>{"v5e"});
  const Price* e2 = price_book().machine("europe-west4", "e2-standard-4");
  REQUIRE(e2);
  CHECK(plan.max_price == doctest::Approx(*e2->on_demand));

  // A region the table has no rows for: the price is unknown, never $0.
  const System far = compile_text(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: p\n"
      "gcp: {project: my-project, region: antarctica-south1, zone: antarctica-south1-a}\n"
      "cluster:\n  pools:\n    system: {machine: e2-standard-4}\n");
  const ResourcePlan unknown = make_plan(far);
  const std::string text = render_plan_text(unknown);
  CAPTURE(text);
  CHECK(text.find("no rows for antarctica-south1") != std::string::npos);
  CHECK(text.find("price unknown for antarctica-south1") != std::string::npos);
  CHECK(text.find("$0.00") == std::string::npos);
  CHECK(plan_json(unknown)["totals"]["pricePerHour"]["max"].is_null());
}

TEST_CASE("price book: every region where a catalog machine is offered has prices") {
  // Regions of tools/machinetyperegion.csv (Cyclenerd @ fd66b26) that offer catalog machine types.
  for (const char* region : {"us-east1", "us-east4", "us-west1", "europe-west1", "europe-west4", "asia-southeast1",
                             "asia-northeast1", "australia-southeast1", "southamerica-east1", "me-west1"}) {
    CAPTURE(region);
    CHECK(price_book().has_region(region));
    const Price* n2 = price_book().machine(region, "n2-standard-8");
    REQUIRE(n2);
    CHECK(n2->on_demand);
    CHECK(n2->source.find("Cyclenerd") != std::string::npos);
  }
}

TEST_CASE("plan: node counts are the ones Terraform and up.sh create; TPU steps count each restart") {
  const System sys = compile_text(kHeader + R"(cluster:
  pools:
    system: {machine: e2-standard-4}
    flex: {machine: g2-standard-8, provisioning: flex-start, autoscaling: {min: 2, max: 4}}
    tpu-flex: {machine: ct5lp-hightpu-4t, tpu: {topology: 4x4, slices: 2}, provisioning: flex-start,
               autoscaling: {min: 0, max: 8}}
    tpu: {machine: ct5lp-hightpu-4t, tpu: {topology: 4x4}}
pipeline:
  - {name: pre, image: x/y:1, pool: tpu, command: [run], timeout: 1h, retries: 2,
     security: {level: baseline, reason: TPU}}
)");
  const ResourcePlan plan = make_plan(sys);
  // Flex-start pools start empty; a multi-host slice is exactly its hosts (4x4 on 4-chip hosts: 4).
  CHECK(pool_named(plan, "flex").min_nodes == 0);
  CHECK(pool_named(plan, "flex").max_nodes == 4);
  CHECK(pool_named(plan, "tpu-flex").min_nodes == 0);
  CHECK(pool_named(plan, "tpu-flex").max_nodes == 8);
  CHECK(pool_named(plan, "tpu").min_nodes == 4);
  CHECK(pool_named(plan, "tpu").max_nodes == 4);
  for (const auto& [name, pool] : sys.pools) {
    CAPTURE(name);
    const int slices = pool.tpu ? pool.tpu->slices : 1;
    CHECK(pool_named(plan, name).max_nodes == pool.node_range().max * slices);
  }
  // The JobSet of a TPU step recreates its Jobs, each with a fresh deadline, up to retries times.
  REQUIRE(plan.workloads[0].accelerator_hours);
  CHECK(*plan.workloads[0].accelerator_hours == doctest::Approx(4 * 4 * 1.0 * 3));
}

TEST_CASE("plan: every example's JSON plan meets schemas/plan.v1.schema.json, and every pool is priced") {
  nlohmann::json schema_doc = nlohmann::json::parse(read(fs::path(TRAINC_SOURCE_ROOT) / "schemas/plan.v1.schema.json"));
  valijson::Schema schema;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_doc);
  parser.populateSchema(schema_adapter, schema);
  int checked = 0;
  for (const auto& dir : fs::directory_iterator(fs::path(TRAINC_SOURCE_ROOT) / "examples")) {
    for (const char* name : {"spec.yaml", "spec.jsonnet"}) {
      const fs::path spec = dir.path() / name;
      if (!fs::exists(spec)) continue;
      CAPTURE(spec.string());
      std::string error;
      SourcePtr src = read_source(spec.string(), error);
      REQUIRE(src);
      Diagnostics diags;
      auto c = compile_source(src, diags);
      REQUIRE_MESSAGE(c, diags.render_text());
      const ResourcePlan plan = make_plan(c->system);
      // Round-trip through text, as a consumer reads it.
      nlohmann::json doc = nlohmann::json::parse(plan_json(plan).dump());
      valijson::Validator validator;
      valijson::ValidationResults results;
      valijson::adapters::NlohmannJsonAdapter doc_adapter(doc);
      std::string why;
      if (!validator.validate(schema, doc_adapter, &results)) {
        valijson::ValidationResults::Error e;
        while (results.popError(e)) {
          for (const auto& c2 : e.context) why += c2;
          why += ": " + e.description + "\n";
        }
      }
      CHECK_MESSAGE(why.empty(), why);
      // A pool goes unpriced only where the table has its row with a null figure and a note saying why.
      for (const auto& p : plan.pools)
        if (!p.node_price) {
          const Price* row = price_book().machine(plan.region, p.machine);
          REQUIRE_MESSAGE(row, p.machine << " has no row in stdlib/prices.yaml for " << plan.region);
          CHECK_FALSE(row->note.empty());
        }
      for (const auto& p : plan.pools) {
        CAPTURE(p.name);
        if (p.gpus_per_node || p.chips_per_node) {
          bool accelerator_metric = false;
          for (const auto& q : p.quota)
            accelerator_metric = accelerator_metric || q.metric.find("GPU") != std::string::npos ||
                                 q.metric.find("TPU") != std::string::npos;
          CHECK(accelerator_metric);
        }
      }
      ++checked;
    }
  }
  CHECK(checked >= 9);
}

TEST_CASE("price book: every catalog accelerator has quota metrics") {
  const PriceBook& book = price_book();
  for (const auto& name : catalog().machine_names()) {
    const MachineType* m = catalog().machine(name);
    CAPTURE(name);
    if (m->gpus > 0) CHECK(book.gpu_quota(m->accelerator));
    if (m->tpu_chips > 0) CHECK(book.tpu_quota(m->tpu_generation));
    const bool counted = !book.cpu_quota(name).empty() || m->gpus > 0 || m->tpu_chips > 0;
    CHECK_MESSAGE(counted, "no CPU quota metric");
  }
  for (const auto& g : catalog().attachable_gpus()) CHECK_MESSAGE(book.gpu_quota(g.accelerator), g.accelerator);
}
