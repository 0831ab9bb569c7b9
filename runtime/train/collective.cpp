#include "train/collective.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "commands.h"
#include "report.h"
#include "train/xgb.h"

#define TRAINRT_XGB_AT_LEAST(major, minor) \
  (XGBOOST_VER_MAJOR > (major) || (XGBOOST_VER_MAJOR == (major) && XGBOOST_VER_MINOR >= (minor)))

namespace trainrt {
namespace {

/// Exits the process unless disarmed before the deadline: XGCommunicatorInit blocks until every
/// rank has reached the tracker, and has no way to give up.
class InitWatchdog {
 public:
  InitWatchdog(int seconds, std::string message) : message_(std::move(message)) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
        report(message_);
        std::_Exit(kRankTimeout);
      }
    });
  }
  ~InitWatchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::string message_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

nlohmann::json communicator_config(int rank, int world_size, const HostPort& tracker, int timeout_seconds) {
  nlohmann::json c;
#if TRAINRT_XGB_AT_LEAST(2, 1)
  (void)world_size;  // the tracker knows it
  c["dmlc_communicator"] = "rabit";
  c["dmlc_tracker_uri"] = tracker.host;
  c["dmlc_tracker_port"] = tracker.port;
  c["dmlc_task_id"] = std::to_string(rank);
  c["dmlc_retry"] = 3;
  c["dmlc_timeout"] = timeout_seconds;
#else
  // rabit retries the tracker connection, sleeping 2, 4, 6, ... seconds: enough tries to span the timeout.
  const int retries = 1 + static_cast<int>(std::ceil(std::sqrt(static_cast<double>(timeout_seconds))));
  c["xgboost_communicator"] = "rabit";
  c["rabit_tracker_uri"] = tracker.host;
  c["rabit_tracker_port"] = tracker.port;
  c["rabit_task_id"] = std::to_string(rank);
  c["rabit_world_size"] = world_size;
  c["DMLC_WORKER_CONNECT_RETRY"] = retries;
#endif
  return c;
}

Collective::Collective(const TrainOptions& o) {
  if (o.world_size <= 1) return;
  const HostPort tracker = parse_host_port(o.tracker);
  if (o.tracker_serve != 0 && o.rank == 0) {
#if TRAINRT_XGB_AT_LEAST(2, 1)
    nlohmann::json tc{{"dmlc_communicator", "rabit"}, {"n_workers", o.world_size}, {"port", o.tracker_serve},
                      {"host", tracker.host},          {"sortby", 1},              {"timeout", o.init_timeout}};
    xgb::check(XGTrackerCreate(tc.dump().c_str(), &tracker_), "XGTrackerCreate");
    xgb::check(XGTrackerRun(tracker_, "{}"), "XGTrackerRun");
#endif
  }
  const std::string config = communicator_config(o.rank, o.world_size, tracker, o.init_timeout).dump();
  {
    InitWatchdog watchdog(
        o.init_timeout,
        fmt::format("timed out after {} s waiting for all {} ranks to join through the tracker at {}; check that "
                    "every rank was started with --world-size {} and can reach the tracker",
                    o.init_timeout, o.world_size, o.tracker, o.world_size));
    const int rc = XGCommunicatorInit(config.c_str());
    if (rc != 0) {
      const std::string why = XGBGetLastError();
      leave();
      throw CollectiveError(
          fmt::format("rank {}: could not join the collective through the tracker at {}: {}", o.rank, o.tracker, why));
    }
  }
  joined_ = true;
  world_ = XGCommunicatorGetWorldSize();
  rank_ = XGCommunicatorGetRank();
  std::string problem;
  if (world_ != o.world_size) {
    problem = fmt::format(
        "rank {}: XGBoost {} formed a collective of {} rank(s), but --world-size is {}; the communicator keys this "
        "trainrt sends may not be the ones this XGBoost reads",
        o.rank, xgb::compiled_version(), world_, o.world_size);
  } else if (rank_ != o.rank) {
    problem = fmt::format("the tracker gave rank {} to the process started as rank {}; start the tracker so that it "
                          "orders workers by task id",
                          rank_, o.rank);
  }
  if (!problem.empty()) {
    leave();
    throw CollectiveError(problem);
  }
}

void Collective::leave() {
  if (joined_) XGCommunicatorFinalize();
  joined_ = false;
#if TRAINRT_XGB_AT_LEAST(2, 1)
  if (tracker_ != nullptr) {
    XGTrackerWaitFor(tracker_, "{}");
    XGTrackerFree(tracker_);
  }
#endif
  tracker_ = nullptr;
}

Collective::~Collective() { leave(); }

void Collective::broadcast(std::vector<char>& bytes, int root) const {
  if (!distributed()) return;
  uint64_t size = bytes.size();
  xgb::check(XGCommunicatorBroadcast(&size, sizeof size, root), "XGCommunicatorBroadcast");
  bytes.resize(size);
  if (size > 0) xgb::check(XGCommunicatorBroadcast(bytes.data(), size, root), "XGCommunicatorBroadcast");
}

std::vector<uint64_t> Collective::allgather(uint64_t value) const {
  std::vector<uint64_t> out(static_cast<size_t>(world_), 0);
  for (int r = 0; r < world_; ++r) {
    uint64_t v = r == rank_ ? value : 0;
    if (distributed()) xgb::check(XGCommunicatorBroadcast(&v, sizeof v, r), "XGCommunicatorBroadcast");
    out[static_cast<size_t>(r)] = v;
  }
  return out;
}

}  // namespace trainrt
