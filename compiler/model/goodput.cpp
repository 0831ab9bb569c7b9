#include "model/goodput.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <stdexcept>

#include "base/embedded.h"
#include "base/yaml_tree.h"

namespace trainc {
namespace {

double positive(const YAML::Node& n, const char* key, const std::string& where) {
  if (!n[key] || !n[key].IsScalar()) throw std::runtime_error(fmt::format("failures: {} has no {}", where, key));
  const double v = n[key].as<double>();
  if (!(v > 0)) throw std::runtime_error(fmt::format("failures: {}.{} must be positive", where, key));
  return v;
}

FailureRate rate(const YAML::Node& rates, const char* name) {
  const std::string where = std::string("rates.") + name;
  const YAML::Node r = rates[name];
  if (!r || !r.IsMap()) throw std::runtime_error(fmt::format("failures: no {}", where));
  FailureRate out;
  if (!r["source"] || r["source"].as<std::string>().empty())
    throw std::runtime_error(fmt::format("failures: {} has no source", where));
  out.source = r["source"].as<std::string>();
  const double gpus = positive(r, "gpus", where);
  if (r["mttfHours"]) {
    if (r["interruptions"]) throw std::runtime_error(fmt::format("failures: {} gives both mttfHours and interruptions", where));
    out.per_gpu_day = 24.0 / (positive(r, "mttfHours", where) * gpus);
  } else {
    const double share = r["share"] ? positive(r, "share", where) : 1.0;
    if (share > 1) throw std::runtime_error(fmt::format("failures: {}.share is more than 1", where));
    out.per_gpu_day = positive(r, "interruptions", where) * share / (gpus * positive(r, "days", where));
  }
  return out;
}

int seconds(const YAML::Node& estimates, const char* key) {
  const double v = positive(estimates, key, "estimates");
  if (v != std::floor(v)) throw std::runtime_error(fmt::format("failures: estimates.{} is not whole seconds", key));
  return static_cast<int>(v);
}

}  // namespace

FailureBook FailureBook::parse(const std::string& yaml_text) {
  const YAML::Node root = read_yaml_tree(yaml_text);
  FailureBook b;
  b.low_ = rate(root["rates"], "low");
  b.central_ = rate(root["rates"], "central");
  b.high_ = rate(root["rates"], "high");
  if (!(b.low_.per_gpu_day <= b.central_.per_gpu_day && b.central_.per_gpu_day <= b.high_.per_gpu_day))
    throw std::runtime_error("failures: the rates are not in order low <= central <= high");
  const YAML::Node e = root["estimates"];
  b.restart_seconds_ = seconds(e, "restartSeconds");
  b.checkpoint_cost_seconds_ = seconds(e, "checkpointCostSeconds");
  b.long_step_seconds_ = seconds(e, "longStepSeconds");
  const YAML::Node spot = root["preemptions"]["spot"];
  if (!spot || !spot.IsMap()) throw std::runtime_error("failures: no preemptions.spot");
  const char* ends[3] = {"low", "central", "high"};
  for (int i = 0; i < 3; ++i)
    b.spot_per_node_day_[i] = positive(spot["perNodeDay"], ends[i], "preemptions.spot.perNodeDay");
  if (!(b.spot_per_node_day_[0] <= b.spot_per_node_day_[1] && b.spot_per_node_day_[1] <= b.spot_per_node_day_[2]))
    throw std::runtime_error("failures: preemptions.spot.perNodeDay is not in order low <= central <= high");
  for (auto [key, out] : {std::pair{"source", &b.spot_source_}, std::pair{"assumption", &b.spot_assumption_}}) {
    if (!spot[key] || spot[key].as<std::string>().empty())
      throw std::runtime_error(fmt::format("failures: preemptions.spot has no {}", key));
    *out = spot[key].as<std::string>();
  }
  const YAML::Node flex = root["preemptions"]["flexStart"];
  if (!flex || !flex["source"]) throw std::runtime_error("failures: preemptions.flexStart has no source");
  b.flex_max_run_seconds_ = static_cast<int>(positive(flex, "maxRunDays", "preemptions.flexStart") * 86400);
  b.flex_source_ = flex["source"].as<std::string>();
  return b;
}

const FailureBook& failure_book() {
  static const FailureBook b = [] {
    const auto* f = find_embedded("stdlib/failures.yaml");
    if (!f) throw std::logic_error("stdlib/failures.yaml is not embedded");
    return FailureBook::parse(std::string(f->data));
  }();
  return b;
}

double young_interval(double delta, double mtbf) { return std::sqrt(2 * delta * mtbf); }

double daly_interval(double delta, double mtbf) {
  if (delta >= 2 * mtbf) return mtbf;
  const double x = delta / (2 * mtbf);
  return std::sqrt(2 * delta * mtbf) * (1 + std::sqrt(x) / 3 + x / 9) - delta;
}

double expected_wall_time(double work, double tau, double delta, double restart, double mtbf) {
  return mtbf * std::exp(restart / mtbf) * std::expm1((tau + delta) / mtbf) * work / tau;
}

double lost_fraction(double tau, double delta, double restart, double mtbf) {
  return 1 - tau / expected_wall_time(tau, tau, delta, restart, mtbf);
}

StepFailures step_failures(long long gpus, const FailureBook& book, long long spot_nodes) {
  StepFailures f;
  const FailureRate* rates[3] = {&book.low(), &book.central(), &book.high()};
  for (int i = 0; i < 3; ++i) {
    f.preemptions[i] = static_cast<double>(spot_nodes) * book.spot_per_node_day()[i];
    f.per_day[i] = static_cast<double>(gpus) * rates[i]->per_gpu_day + f.preemptions[i];
    f.mtbf_seconds[i] = 86400 / f.per_day[i];
  }
  return f;
}

std::string approx_duration(double seconds) {
  const long long s = std::llround(seconds);
  if (s < 60) return fmt::format("{}s", s);
  const long long m = (s + 30) / 60;
  if (m < 60) return fmt::format("{}m", m);
  if (m < 24 * 60) return m % 60 ? fmt::format("{}h{}m", m / 60, m % 60) : fmt::format("{}h", m / 60);
  const long long h = (m + 30) / 60;
  return h % 24 ? fmt::format("{}d{}h", h / 24, h % 24) : fmt::format("{}d", h / 24);
}

std::string approx_number(double v) {
  if (v >= 10) return fmt::format("{:.0f}", std::round(v));
  if (v >= 1) return fmt::format("{:.1f}", v);
  if (v <= 0) return "0";
  // Two significant digits below 1: as many decimals as the leading zeros need.
  const int decimals = 1 - static_cast<int>(std::floor(std::log10(v)));
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace trainc
