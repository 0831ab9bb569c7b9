#pragma once
// Membership in XGBoost's collective for a data-parallel run: joining through the tracker with the
// keys this XGBoost version reads, failing fast when not every rank joins, and checking that the
// collective XGBoost formed is the one that was asked for (1.7 silently ignores the keys it does
// not know and then trains each rank alone).
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/train_options.h"

namespace trainrt {

/// The collective could not be formed, or is not the one asked for (exit kFailed).
struct CollectiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The XGCommunicatorInit configuration for this XGBoost: 1.7's rabit_* keys or 2.1's dmlc_* keys.
nlohmann::json communicator_config(int rank, int world_size, const HostPort& tracker, int timeout_seconds);

class Collective {
 public:
  /// A single process: no communicator.
  Collective() = default;
  /// Joins the collective described by OPTIONS (rank 0 first starts the tracker with
  /// --tracker-serve). When the collective has not formed after --init-timeout seconds, prints why
  /// and exits the process with kRankTimeout: the blocked init cannot be cancelled. Throws
  /// CollectiveError when XGBoost reports a world size or rank other than the one asked for.
  explicit Collective(const TrainOptions& options);
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;
  /// Leaves the collective (and, on rank 0 with --tracker-serve, waits for the tracker).
  ~Collective();

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  bool distributed() const { return world_ > 1; }

  /// Root's bytes on every rank.
  void broadcast(std::vector<char>& bytes, int root) const;
  /// Every rank's value, in rank order (one broadcast per rank: used a few times per run).
  std::vector<uint64_t> allgather(uint64_t value) const;

 private:
  void leave();

  int rank_ = 0;
  int world_ = 1;
  bool joined_ = false;
  void* tracker_ = nullptr;  ///< XGBoost 2.1+ TrackerHandle when this rank serves the tracker
};

}  // namespace trainrt
