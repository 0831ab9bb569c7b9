#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>

#include "driver.h"
#include "inspect/plan.h"

using namespace trainc;

namespace {

const std::string kSpec = R"(apiVersion: trainc/v1
kind: TrainingSystem
name: g
gcp: {project: my-project, region: us-central1, zone: us-central1-c}
cluster:
  pools:
    cpu: {machine: n2-standard-16}
    h100: {machine: a3-highgpu-8g, nodes: 4}
storage:
  data: {s3: {bucket: acme-runs}}
pipeline:
  - name: pretrain
    image: trainer:1
    pool: h100
    nodes: 4
    torchrun: {script: train.py}
    outputs: {path: out, to: "data:/runs/"}
    checkpoints: {path: out/ckpt, every: 1h, cost: 30s}
  - name: nockpt
    needs: [pretrain]
    image: trainer:1
    pool: h100
    nodes: 4
    torchrun: {script: train.py}
    timeout: 72h
  - name: noevery
    needs: [nockpt]
    image: trainer:1
    pool: h100
    nodes: 2
    torchrun: {script: train.py}
    outputs: {path: out, to: "data:/runs/"}
    checkpoints: {path: out/ckpt}
  - name: short
    needs: [noevery]
    image: trainer:1
    pool: h100
    torchrun: {script: eval.py}
    timeout: 30m
  - name: tokenize
    image: trainer:1
    pool: cpu
    command: [python3, tokenize.py]
)";

struct SpecResult {
  System sys;
  std::string diagnostics;
};

SpecResult compile_spec(const std::string& yaml) {
  Diagnostics diags;
  auto c = compile_source(std::make_shared<SourceFile>("spec.yaml", yaml), diags);
  REQUIRE_MESSAGE(c, diags.render_text());
  return {c->system, diags.render_text()};
}

const WorkloadPlan& step_named(const ResourcePlan& plan, const std::string& name) {
  for (const auto& w : plan.workloads)
    if (w.name == name) return w;
  FAIL("no workload " << name);
  throw;
}

}  // namespace

TEST_CASE("plan: a long GPU step's failures and goodput, at each published rate") {
  const SpecResult c = compile_spec(kSpec);  // the plan's placement points into its system
  const ResourcePlan plan = make_plan(c.sys);
  const FailureBook& book = failure_book();
  const double rates[3] = {book.low().per_gpu_day, book.central().per_gpu_day, book.high().per_gpu_day};
  const double restart = book.restart_seconds();

  const WorkloadPlan& pretrain = step_named(plan, "pretrain");
  REQUIRE(pretrain.goodput);
  const GoodputPlan& g = *pretrain.goodput;
  CHECK(g.gpus == 32);
  CHECK(g.checkpoints == "declared");
  CHECK(g.every_seconds == 3600);
  CHECK(g.cost_seconds == 30);
  CHECK_FALSE(g.cost_estimated);
  REQUIRE(g.lost);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    const double per_day = 32 * rates[i], m = 86400 / per_day;
    CHECK(g.failures.per_day[i] == doctest::Approx(per_day));
    // Rare failures: the first-order loss, a write per interval plus a restart and half an interval per failure.
    CHECK((*g.lost)[i] == doctest::Approx(30.0 / 3630 + (restart + 3630 / 2.0) / m).epsilon(0.02));
    CHECK(g.best_interval[i] == doctest::Approx(daly_interval(30, m)));
    CHECK(g.best_lost[i] <= (*g.lost)[i]);
  }
  CHECK((*g.lost)[0] < (*g.lost)[1]);
  CHECK((*g.lost)[1] < (*g.lost)[2]);

  // No checkpoints: each failure starts the 72 h run again, M e^(R/M) (e^(T/M) - 1) for T of work.
  const WorkloadPlan& nockpt = step_named(plan, "nockpt");
  REQUIRE(nockpt.goodput);
  CHECK(nockpt.goodput->checkpoints == "none");
  REQUIRE(nockpt.goodput->lost);
  const double t = 72 * 3600, m = 86400 / (32 * rates[1]);
  CHECK((*nockpt.goodput->lost)[1] == doctest::Approx(1 - t / (m * std::exp(restart / m) * (std::exp(t / m) - 1))));
  CHECK(nockpt.goodput->cost_estimated);
  CHECK(nockpt.goodput->cost_seconds == book.checkpoint_cost_seconds());

  // Checkpoints without an interval: failures and the best interval, no loss.
  const WorkloadPlan& noevery = step_named(plan, "noevery");
  REQUIRE(noevery.goodput);
  CHECK(noevery.goodput->checkpoints == "undeclared");
  CHECK(noevery.goodput->gpus == 16);
  CHECK_FALSE(noevery.goodput->lost);

  // Shorter than a long step, or without GPUs: no line.
  CHECK_FALSE(step_named(plan, "short").goodput);
  CHECK_FALSE(step_named(plan, "tokenize").goodput);

  const std::string text = render_plan_text(plan);
  CHECK(text.find("Failures of long GPU steps") != std::string::npos);
  CHECK(text.find("every 1h (30s write)") != std::string::npos);
  CHECK(text.find("no interval (checkpoints.every)") != std::string::npos);
  const auto j = plan_json(plan);
  CHECK(j["workloads"][0]["goodput"]["everySeconds"] == 3600);
  CHECK(j["workloads"][3]["goodput"].is_null());
  CHECK(j["failureRates"]["central"]["source"].get<std::string>().find("2407.21783") != std::string::npos);
}

TEST_CASE("check: a multi-node GPU step without a checkpoint interval gets a warning at its position") {
  const std::string d = compile_spec(kSpec).diagnostics;
  CAPTURE(d);
  // No checkpoints: at the step's `nodes`, with its failures and the interval that would lose least.
  CHECK(d.find("spec.yaml:23:5: warning: step 'nockpt' runs on 4 nodes without checkpoints: its 32 GPUs expect") !=
        std::string::npos);
  CHECK(d.find("= at pipeline[1].nodes") != std::string::npos);
  CHECK(d.find("add 'checkpoints: {path: DIR, every: DURATION}'") != std::string::npos);
  // Checkpoints without `every`: at its checkpoints.
  CHECK(d.find("spec.yaml:33:5: warning: the checkpoints of step 'noevery' say not how often") != std::string::npos);
  CHECK(d.find("= at pipeline[2].checkpoints") != std::string::npos);
  // A declared interval, and a single-node step, are not warned of.
  CHECK(d.find("'pretrain'") == std::string::npos);
  CHECK(d.find("'short'") == std::string::npos);
  CHECK(d.find("2 warnings") != std::string::npos);
}

TEST_CASE("plan: a spot pool's preemptions count in the failures, the loss and the interval") {
  // The same 4 x 8-GPU step on on-demand and on spot nodes. On spot each node adds the assumed
  // 0.05 / 0.10 / 0.15 preemptions a day (stdlib/failures.yaml): 4 nodes, 0.4 a day at the center.
  const SpecResult c = compile_spec(R"(apiVersion: trainc/v1
kind: TrainingSystem
name: s
gcp: {project: my-project, region: us-central1, zone: us-central1-c}
cluster:
  pools:
    cpu: {machine: n2-standard-16}
    ondemand: {machine: a3-highgpu-8g, nodes: 4}
    spot: {machine: a3-highgpu-8g, nodes: 4, provisioning: spot}
storage:
  data: {s3: {bucket: acme-runs}}
pipeline:
  - {name: safe, image: t:1, pool: ondemand, nodes: 4, torchrun: {script: t.py}, timeout: 72h,
     outputs: {path: out, to: "data:/runs/"}, checkpoints: {path: out/ckpt, every: 1h, cost: 90s}}
  - {name: cheap, image: t:1, pool: spot, nodes: 4, torchrun: {script: t.py}, timeout: 72h,
     outputs: {path: out, to: "data:/runs/"}, checkpoints: {path: out/ckpt, every: 1h, cost: 90s}}
  - {name: cheapnoevery, image: t:1, pool: spot, nodes: 4, torchrun: {script: t.py},
     outputs: {path: out, to: "data:/runs/"}, checkpoints: {path: out/ckpt}}
)");
  const ResourcePlan plan = make_plan(c.sys);
  const FailureBook& book = failure_book();
  const GoodputPlan& safe = *step_named(plan, "safe").goodput;
  const GoodputPlan& cheap = *step_named(plan, "cheap").goodput;
  const double hw = 32 * book.central().per_gpu_day;
  CHECK(book.spot_per_node_day()[1] == doctest::Approx(0.10));
  CHECK(safe.failures.per_day[1] == doctest::Approx(hw));
  CHECK(safe.failures.preemptions[1] == 0);
  CHECK(cheap.spot_nodes == 4);
  CHECK(cheap.failures.preemptions[1] == doctest::Approx(0.4));
  CHECK(cheap.failures.preemptions[0] == doctest::Approx(0.2));
  CHECK(cheap.failures.preemptions[2] == doctest::Approx(0.6));
  CHECK(cheap.failures.per_day[1] == doctest::Approx(hw + 0.4));
  const double m = 86400 / (hw + 0.4);
  CHECK(cheap.best_interval[1] == doctest::Approx(daly_interval(90, m)));
  REQUIRE(cheap.lost);
  REQUIRE(safe.lost);
  CHECK((*cheap.lost)[1] == doctest::Approx(lost_fraction(3600, 90, book.restart_seconds(), m)));
  CHECK((*cheap.lost)[1] > (*safe.lost)[1]);
  CHECK(cheap.best_interval[1] < safe.best_interval[1]);
  const std::string text = render_plan_text(plan);
  CAPTURE(text);
  // A spec's 90s cost is shown as written, not rounded to 2m.
  CHECK(text.find("every 1h (90s write)") != std::string::npos);
  CHECK(text.find("2m write") == std::string::npos);
  CHECK(text.find("cheap: its failures/day count 0.40 (0.20-0.60) preemptions of its 4 spot node(s), an ASSUMPTION") !=
        std::string::npos);
  CHECK(plan_json(plan)["workloads"][1]["goodput"]["preemptionsPerDay"]["central"] == doctest::Approx(0.4));
  // The check's recommended interval counts the preemptions too.
  CAPTURE(c.diagnostics);
  CHECK(c.diagnostics.find("spot preemptions, an assumption") != std::string::npos);
  CHECK(c.diagnostics.find(fmt::format("about {} loses least", approx_duration(daly_interval(60, m)))) !=
        std::string::npos);
}
