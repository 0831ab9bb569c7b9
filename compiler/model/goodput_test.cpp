#include "model/goodput.h"

#include <cmath>
#include <stdexcept>

#include <doctest/doctest.h>

namespace trainc {

// Daly (2006), section 5, Figs. 3-5: with R = 10 min and delta = 5 min, "the new model predicts"
// tau_opt = 117 min for M = 24 h, 57 min for M = 6 h and 9.1 min for M = 15 min.
TEST_CASE("goodput: Daly's interval reproduces his worked examples") {
  CHECK(daly_interval(5, 24 * 60) == doctest::Approx(117).epsilon(0.005));
  CHECK(daly_interval(5, 6 * 60) == doctest::Approx(57).epsilon(0.01));
  CHECK(daly_interval(5, 15) == doctest::Approx(9.1).epsilon(0.01));
  // Young's first-order interval for the first: sqrt(2 x 5 x 1440) = 120 min.
  CHECK(young_interval(5, 24 * 60) == doctest::Approx(120));
  // A checkpoint that costs more than two MTBFs: checkpoint once per MTBF (Daly's limit).
  CHECK(daly_interval(50, 20) == doctest::Approx(20));
}

TEST_CASE("goodput: Daly's interval is where his complete model loses least") {
  for (double mtbf : {24.0 * 60, 6.0 * 60, 60.0}) {
    CAPTURE(mtbf);
    // Search the cost function itself, in steps of a tenth of a minute.
    double best = 0, least = 1;
    for (double tau = 0.1; tau < mtbf; tau += 0.1) {
      const double lost = lost_fraction(tau, 5, 10, mtbf);
      if (lost < least) least = lost, best = tau;
    }
    CHECK(daly_interval(5, mtbf) == doctest::Approx(best).epsilon(0.02));
    CHECK(lost_fraction(daly_interval(5, mtbf), 5, 10, mtbf) <= least + 1e-6);
  }
}

TEST_CASE("goodput: the complete model agrees with the first-order loss when failures are rare") {
  // delta / tau + (R + tau / 2) / M, to first order in tau / M, R / M and delta / M.
  const double tau = 60, delta = 1, restart = 10, mtbf = 100000;
  CHECK(lost_fraction(tau, delta, restart, mtbf) ==
        doctest::Approx(delta / (tau + delta) + (restart + (tau + delta) / 2) / mtbf).epsilon(0.01));
  // No failures to speak of and no checkpoint cost: nothing is lost.
  CHECK(lost_fraction(tau, 0, 0, 1e12) == doctest::Approx(0).epsilon(1e-6));
  // Without checkpoints the whole run is the interval: a 72 h run with an MTBF of 66 days.
  const double work = 72, m = 66 * 24;
  CHECK(expected_wall_time(work, work, 0, 0, m) == doctest::Approx(m * (std::exp(work / m) - 1)));
}

TEST_CASE("failure rates: the embedded table computes each rate from its published figures") {
  const FailureBook& b = failure_book();
  // Llama 3: 419 unexpected interruptions on 16,384 GPUs in 54 days; the low rate is its 78% hardware share.
  CHECK(b.central().per_gpu_day == doctest::Approx(419.0 / (16384 * 54)));
  CHECK(b.low().per_gpu_day == doctest::Approx(0.78 * 419.0 / (16384 * 54)));
  // Kokolis et al.: 1.8 h between failures on 16,384 GPUs.
  CHECK(b.high().per_gpu_day == doctest::Approx(24 / (1.8 * 16384)));
  CHECK(b.central().source.find("2407.21783") != std::string::npos);
  CHECK(b.high().source.find("2410.21680") != std::string::npos);
  CHECK(b.restart_seconds() > 0);
  CHECK(b.checkpoint_cost_seconds() > 0);
  CHECK(b.long_step_seconds() > 0);
}

TEST_CASE("failure rates: malformed tables are refused, naming the entry") {
  const std::string estimates = "estimates: {restartSeconds: 600, checkpointCostSeconds: 60, longStepSeconds: 3600}\n"
                                "preemptions:\n"
                                "  spot: {perNodeDay: {low: 0.05, central: 0.1, high: 0.15}, source: d, assumption: e}\n"
                                "  flexStart: {maxRunDays: 7, source: f}\n";
  const std::string ok = "rates:\n"
                         "  low: {interruptions: 1, gpus: 10, days: 1, source: a}\n"
                         "  central: {interruptions: 2, gpus: 10, days: 1, source: b}\n"
                         "  high: {mttfHours: 6, gpus: 1, source: c}\n" + estimates;
  const FailureBook b = FailureBook::parse(ok);
  CHECK(b.low().per_gpu_day == doctest::Approx(0.1));
  CHECK(b.central().per_gpu_day == doctest::Approx(0.2));
  CHECK(b.high().per_gpu_day == doctest::Approx(4));
  CHECK(b.restart_seconds() == 600);
  CHECK(b.spot_per_node_day()[1] == doctest::Approx(0.1));
  CHECK(b.flex_start_max_run_seconds() == 7 * 86400);
  auto refused = [&](const std::string& yaml, const std::string& says) {
    CAPTURE(yaml);
    try {
      FailureBook::parse(yaml);
      FAIL("accepted");
    } catch (const std::runtime_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(says) != std::string::npos, e.what());
    }
  };
  refused("rates:\n  low: {interruptions: 1, gpus: 10, days: 1}\n" + estimates, "rates.low has no source");
  refused("rates:\n"
          "  low: {interruptions: 1, gpus: 10, days: 1, source: a}\n"
          "  central: {interruptions: 2, gpus: 10, source: b}\n" + estimates,
          "rates.central has no days");
  refused("rates:\n"
          "  low: {interruptions: 3, gpus: 10, days: 1, source: a}\n"
          "  central: {interruptions: 2, gpus: 10, days: 1, source: b}\n"
          "  high: {mttfHours: 6, gpus: 1, source: c}\n" + estimates,
          "not in order");
  refused("rates:\n"
          "  low: {interruptions: 1, share: 1.5, gpus: 10, days: 1, source: a}\n" + estimates,
          "share is more than 1");
  refused(ok.substr(0, ok.find("estimates")) + "estimates: {restartSeconds: 600, longStepSeconds: 3600}\n",
          "estimates has no checkpointCostSeconds");
}

}  // namespace trainc
