// The goodput lines of `trainc plan`: per long GPU step the failures its GPUs expect a day, at the
// low, central and high rate of stdlib/failures.yaml, and the share of GPU time they cost with the
// spec's checkpoint interval beside the interval that would cost least (model/goodput.h).
#include <fmt/format.h>

#include <cmath>

#include "base/overloaded.h"
#include "base/units.h"
#include "inspect/plan.h"

namespace trainc {
namespace {

/// How the step checkpoints when the spec does not declare an interval (GoodputPlan::checkpoints).
std::string cadence(const Step& step) {
  return match(
      step.run, [&](const Torchrun&) { return std::string(step.checkpoints ? "undeclared" : "none"); },
      [&](const Command&) { return std::string(step.checkpoints ? "undeclared" : "none"); },
      [](const Datagen&) { return std::string("shards"); }, [](const XGBoost&) { return std::string("rounds"); });
}

std::string percent(double share) { return approx_number(share * 100) + "%"; }

/// "2.2% (1.8-3.9%)": the central value and the range over the rates.
std::string percents(const std::array<double, 3>& v) {
  return fmt::format("{} ({}-{})", percent(v[1]), approx_number(v[0] * 100), percent(v[2]));
}

}  // namespace

std::optional<GoodputPlan> plan_goodput(const Step& step, const Pool* pool) {
  const FailureBook& book = failure_book();
  GoodputPlan g;
  g.gpus = static_cast<long long>(step.gpus) * step.nodes * step.slices;
  // A step on a compute cluster runs in the cluster's pods (or a client's without GPUs).
  if (g.gpus == 0 || !step.cluster.empty()) return std::nullopt;
  if (step.timeout_seconds && *step.timeout_seconds < book.long_step_seconds()) return std::nullopt;
  g.length_seconds = step.timeout_seconds;
  // A spot pool's nodes are preempted too: any of the step's nodes ends the attempt.
  if (pool) g.provisioning = pool->provisioning;
  if (g.provisioning == "spot") g.spot_nodes = static_cast<long long>(step.nodes) * step.slices;
  g.failures = step_failures(g.gpus, book, g.spot_nodes);
  g.checkpoints = cadence(step);
  g.restart_seconds = book.restart_seconds();
  g.cost_seconds = book.checkpoint_cost_seconds();
  if (step.checkpoints && step.checkpoints->cost_seconds) {
    g.cost_seconds = *step.checkpoints->cost_seconds;
    g.cost_estimated = false;
  }
  if (step.checkpoints && step.checkpoints->every_seconds) {
    g.checkpoints = "declared";
    g.every_seconds = step.checkpoints->every_seconds;
  }
  std::array<double, 3> lost{};
  for (int i = 0; i < 3; ++i) {
    const double m = g.failures.mtbf_seconds[i];
    g.best_interval[i] = daly_interval(g.cost_seconds, m);
    g.best_lost[i] = lost_fraction(g.best_interval[i], g.cost_seconds, g.restart_seconds, m);
    // A run shorter than the interval is best without checkpoints.
    if (g.length_seconds && g.best_interval[i] >= *g.length_seconds) {
      g.best_interval[i] = *g.length_seconds;
      g.best_lost[i] = lost_fraction(*g.length_seconds, 0, g.restart_seconds, m);
    }
    if (g.every_seconds)
      lost[i] = lost_fraction(*g.every_seconds, g.cost_seconds, g.restart_seconds, m);
    else if (g.checkpoints == "none" && g.length_seconds)  // each failure starts the whole run again
      lost[i] = lost_fraction(*g.length_seconds, 0, g.restart_seconds, m);
  }
  if (g.every_seconds || (g.checkpoints == "none" && g.length_seconds)) g.lost = lost;
  return g;
}

std::string render_goodput_text(const ResourcePlan& plan) {
  std::vector<const WorkloadPlan*> steps;
  for (const auto& w : plan.workloads)
    if (w.goodput) steps.push_back(&w);
  if (steps.empty()) return "";
  const FailureBook& book = failure_book();
  std::string out = fmt::format(
      "Failures of long GPU steps ({} / {} / {} per GPU-day, low / central / high, stdlib/failures.yaml; a "
      "restart takes {}, estimated)\n",
      approx_number(book.low().per_gpu_day), approx_number(book.central().per_gpu_day),
      approx_number(book.high().per_gpu_day), approx_duration(book.restart_seconds()));
  std::vector<std::vector<std::string>> rows{
      {"step", "GPUs", "failures/day", "checkpoints", "GPU time lost", "least-loss interval (Daly)"}};
  for (const WorkloadPlan* w : steps) {
    const GoodputPlan& g = *w->goodput;
    // The spec's own durations as written (90s stays 90s); computed ones are rounded.
    const std::string write = fmt::format("{} write{}", format_duration(g.cost_seconds), g.cost_estimated ? ", est." : "");
    std::string ckpt = g.checkpoints == "declared"     ? fmt::format("every {} ({})", format_duration(*g.every_seconds), write)
                       : g.checkpoints == "undeclared" ? "no interval (checkpoints.every)"
                       : g.checkpoints == "rounds"     ? "every checkpointEvery rounds"
                       : g.checkpoints == "shards"     ? "resumes by shard"
                                                       : "none";
    std::string lost = g.lost ? percents(*g.lost) : "-";
    if (g.lost && !g.every_seconds) lost += " of " + approx_duration(*g.length_seconds);
    if (!g.lost && g.checkpoints == "none") lost = "no timeout: unbounded";
    rows.push_back({w->name, std::to_string(g.gpus),
                    fmt::format("{} ({}-{})", approx_number(g.failures.per_day[1]),
                                approx_number(g.failures.per_day[0]), approx_number(g.failures.per_day[2])),
                    ckpt, lost,
                    g.length_seconds && g.best_interval[1] >= *g.length_seconds
                        ? "none: the run is shorter"
                        : fmt::format("{} ({}-{}), loses {}{}", approx_duration(g.best_interval[1]),
                                approx_duration(g.best_interval[2]), approx_duration(g.best_interval[0]),
                                percents(g.best_lost), g.checkpoints == "declared" ? "" : " with a " + write)});
  }
  out += render_table(rows);
  for (const WorkloadPlan* w : steps) {
    const GoodputPlan& g = *w->goodput;
    if (g.spot_nodes > 0)
      out += fmt::format(
          "  {}: its failures/day count {} ({}-{}) preemptions of its {} spot node(s), an ASSUMPTION of {} / {} / {} "
          "per node-day: Google publishes no Spot VM rate, only 5-15% of a project's preemptible VMs a day "
          "(stdlib/failures.yaml)\n",
          w->name, approx_number(g.failures.preemptions[1]), approx_number(g.failures.preemptions[0]),
          approx_number(g.failures.preemptions[2]), g.spot_nodes, approx_number(book.spot_per_node_day()[0]),
          approx_number(book.spot_per_node_day()[1]), approx_number(book.spot_per_node_day()[2]));
    else if (g.provisioning == "flex-start" &&
             (!g.length_seconds || *g.length_seconds > book.flex_start_max_run_seconds()))
      out += fmt::format("  {}: flex-start nodes are not preempted but stop after {} (stdlib/failures.yaml); {}, "
                         "so count on a restart at least that often\n",
                         w->name, approx_duration(book.flex_start_max_run_seconds()),
                         g.length_seconds ? "its timeout allows longer" : "it has no timeout");
  }
  return out + "\n";
}

nlohmann::ordered_json goodput_json(const GoodputPlan& g) {
  using ojson = nlohmann::ordered_json;
  // Shares to 1/10000 of a percent and times to whole seconds, so that goldens hold no noise.
  auto triple = [](const std::array<double, 3>& v, double scale) {
    ojson o;
    const char* names[3] = {"low", "central", "high"};
    for (int i = 0; i < 3; ++i) o[names[i]] = std::round(v[i] * scale) / scale;
    return o;
  };
  const std::array<double, 3> per_day{g.failures.per_day[0], g.failures.per_day[1], g.failures.per_day[2]};
  const std::array<double, 3> mtbf{g.failures.mtbf_seconds[0], g.failures.mtbf_seconds[1],
                                   g.failures.mtbf_seconds[2]};
  ojson o;
  const std::array<double, 3> preemptions{g.failures.preemptions[0], g.failures.preemptions[1],
                                          g.failures.preemptions[2]};
  o["gpus"] = g.gpus;
  o["lengthSeconds"] = g.length_seconds ? ojson(*g.length_seconds) : ojson(nullptr);
  o["provisioning"] = g.provisioning;
  o["failuresPerDay"] = triple(per_day, 1e6);
  o["preemptionsPerDay"] = g.spot_nodes > 0 ? triple(preemptions, 1e6) : ojson(nullptr);
  o["mtbfSeconds"] = triple(mtbf, 1);
  o["checkpoints"] = g.checkpoints;
  o["everySeconds"] = g.every_seconds ? ojson(*g.every_seconds) : ojson(nullptr);
  o["costSeconds"] = g.cost_seconds;
  o["costEstimated"] = g.cost_estimated;
  o["restartSeconds"] = g.restart_seconds;
  o["lostFraction"] = g.lost ? triple(*g.lost, 1e6) : ojson(nullptr);
  o["bestIntervalSeconds"] = triple(g.best_interval, 1);
  o["bestLostFraction"] = triple(g.best_lost, 1e6);
  return o;
}

nlohmann::ordered_json failure_rates_json() {
  using ojson = nlohmann::ordered_json;
  const FailureBook& book = failure_book();
  ojson o;
  auto rate = [](const FailureRate& r) { return ojson{{"perGpuDay", std::round(r.per_gpu_day * 1e9) / 1e9}, {"source", r.source}}; };
  o["low"] = rate(book.low());
  o["central"] = rate(book.central());
  o["high"] = rate(book.high());
  o["restartSeconds"] = book.restart_seconds();
  o["checkpointCostSeconds"] = book.checkpoint_cost_seconds();
  o["longStepSeconds"] = book.long_step_seconds();
  const auto& spot = book.spot_per_node_day();
  o["spotPreemptionsPerNodeDay"] = {{"low", spot[0]}, {"central", spot[1]}, {"high", spot[2]},
                                    {"source", book.spot_source()}, {"assumption", book.spot_assumption()}};
  o["flexStartMaxRunSeconds"] = book.flex_start_max_run_seconds();
  return o;
}

}  // namespace trainc
