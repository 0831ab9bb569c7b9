#pragma once
// How much GPU time a long training step loses to failures, and the checkpoint interval that loses
// least. Failure rates are sourced data (stdlib/failures.yaml, embedded); the model is Daly's
// (J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
// Future Generation Computer Systems 22(3), 2006), which refines Young's first-order interval
// (J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974).
// Failures arrive at a constant rate (Poisson) with mean time between them M; every failure costs a
// restart R and the work since the last checkpoint; each checkpoint stops the work for delta.
#include <array>
#include <string>

namespace trainc {

/// One published failure rate, per GPU-day.
struct FailureRate {
  double per_gpu_day = 0;
  std::string source;
};

/// The failure rates and the estimates the goodput model uses (stdlib/failures.yaml).
class FailureBook {
 public:
  /// Parses failures YAML; throws std::runtime_error naming the entry on malformed data.
  static FailureBook parse(const std::string& yaml_text);
  const FailureRate& low() const { return low_; }
  const FailureRate& central() const { return central_; }
  const FailureRate& high() const { return high_; }
  /// From a failure until the step computes again (an estimate; the spec does not say).
  int restart_seconds() const { return restart_seconds_; }
  /// One checkpoint write, when the spec's checkpoints give no `cost` (an estimate).
  int checkpoint_cost_seconds() const { return checkpoint_cost_seconds_; }
  /// A GPU step at least this long (by its timeout), or without a timeout, gets a goodput line.
  int long_step_seconds() const { return long_step_seconds_; }
  /// Preemptions of one spot node a day at the low, central and high end (an assumption built on
  /// Google's published preemptible-VM figure; spot_source() and spot_assumption() say which).
  const std::array<double, 3>& spot_per_node_day() const { return spot_per_node_day_; }
  const std::string& spot_source() const { return spot_source_; }
  const std::string& spot_assumption() const { return spot_assumption_; }
  /// How long a flex-start VM runs at most before Compute Engine stops it (not preempted before).
  int flex_start_max_run_seconds() const { return flex_max_run_seconds_; }
  const std::string& flex_start_source() const { return flex_source_; }

 private:
  FailureRate low_, central_, high_;
  int restart_seconds_ = 0, checkpoint_cost_seconds_ = 0, long_step_seconds_ = 0;
  std::array<double, 3> spot_per_node_day_{};
  std::string spot_source_, spot_assumption_, flex_source_;
  int flex_max_run_seconds_ = 0;
};

/// The embedded failure rates, parsed once.
const FailureBook& failure_book();

/// Young's interval between checkpoints, sqrt(2 delta M): first order in delta / M.
double young_interval(double delta, double mtbf);
/// Daly's higher-order interval: sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] - delta
/// for delta < 2M, else M. All times in the same unit.
double daly_interval(double delta, double mtbf);
/// The expected wall-clock time to finish `work` of computing, checkpointing every `tau` of it at
/// `delta` each and restarting in `restart` after each failure (failures may strike restarts and
/// checkpoints too): Daly's complete model, M e^(R/M) (e^((tau + delta)/M) - 1) work / tau. With no checkpoints, tau = work and delta = 0.
double expected_wall_time(double work, double tau, double delta, double restart, double mtbf);
/// The share of wall-clock (GPU) time that does not advance the work: 1 - work / expected_wall_time,
/// the same for any work long beside tau (it does not depend on `work` when checkpointing).
double lost_fraction(double tau, double delta, double restart, double mtbf);

/// The same at each published rate for `gpus` GPUs on `spot_nodes` spot nodes (0 when not spot):
/// failures per day, preemptions included, and the mean time between them.
struct StepFailures {
  double per_day[3] = {0, 0, 0};          ///< at the low, central and high rate
  double preemptions[3] = {0, 0, 0};      ///< the part of per_day that is spot preemptions
  double mtbf_seconds[3] = {0, 0, 0};     ///< 86400 / per_day
};
StepFailures step_failures(long long gpus, const FailureBook& book = failure_book(), long long spot_nodes = 0);

/// A rounded duration for people: "50s", "12m", "2h10m", "3d4h".
std::string approx_duration(double seconds);
/// Two significant digits, without an exponent for what a plan shows: "0.015", "2.3", "41", "130".
std::string approx_number(double v);

}  // namespace trainc
