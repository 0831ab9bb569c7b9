#pragma once
// metrics.jsonl: one JSON object per boosting round, appended as the run goes. A resumed run first
// drops the lines past the round it resumes from, so the file always describes one history.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainrt {

using EvalResults = std::vector<std::pair<std::string, double>>;

/// XGBoosterEvalOneIter's "[3]\ttrain-logloss:0.12\teval-auc:0.9" as {{"train-logloss", 0.12},
/// {"eval-auc", 0.9}}, in order; fields that are not name:number are left out.
EvalResults parse_eval_line(std::string_view line);

struct RoundRecord {
  int round = 0;           ///< boosted rounds so far (1 after the first)
  double elapsed = 0;      ///< seconds of training so far, summed over resumed runs
  EvalResults metrics;
  uint64_t rows = 0;       ///< training rows over all ranks
  int ranks = 1;
};

/// {"round":3,"elapsed_s":1.234,"metrics":{"train-logloss":0.12},"rows":20000,"ranks":2}
std::string format_metrics_line(const RoundRecord& record);

/// Keeps the lines of METRICS for rounds up to `rounds` (dropping later rounds and a torn last
/// line), rewriting the file atomically. Returns the elapsed seconds of the last line kept (0 when
/// none). A missing file is fine.
double truncate_metrics(const std::string& path, int rounds);

/// Appends one line per round: a single write() of the whole line, so a kill leaves at worst one
/// torn last line, which truncate_metrics() drops.
class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  ~MetricsLog();
  void append(const RoundRecord& record);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace trainrt
