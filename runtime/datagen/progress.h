#pragma once
// Progress lines on stderr for long runs: at most one every few seconds, plus one per shard.
#include <chrono>
#include <cstdint>
#include <string>

namespace trainrt::datagen {

class Progress {
 public:
  Progress(bool quiet, uint32_t shards, uint64_t rows) : quiet_(quiet), shards_(shards), rows_(rows) {}

  /// `rows` written so far; prints when enough time has passed.
  void rows_written(uint64_t rows);
  void shard_written(const std::string& name);
  void note(const std::string& text) const;
  /// The closing line: rows, seconds, rows/s.
  void done() const;

 private:
  void line(const std::string& event) const;
  double seconds() const;

  bool quiet_;
  uint32_t shards_, shards_done_ = 0;
  uint64_t rows_, rows_done_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

}  // namespace trainrt::datagen
