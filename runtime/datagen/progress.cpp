#include "datagen/progress.h"

#include <fmt/format.h>

namespace trainrt::datagen {

namespace {

std::string count(double n) {
  if (n >= 1e9) return fmt::format("{:.2f}G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e4) return fmt::format("{:.1f}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

}  // namespace

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::line(const std::string& event) const {
  if (quiet_) return;
  const double s = seconds();
  fmt::print(stderr, "datagen: {}; {}/{} shards, {}/{} rows, {} rows/s\n", event, shards_done_, shards_,
             count(static_cast<double>(rows_done_)), count(static_cast<double>(rows_)),
             count(s > 0 ? static_cast<double>(rows_done_) / s : 0));
}

void Progress::rows_written(uint64_t rows) {
  rows_done_ = rows;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::seconds(5)) return;
  last_ = now;
  line("writing");
}

void Progress::shard_written(const std::string& name) {
  ++shards_done_;
  last_ = std::chrono::steady_clock::now();
  line(name + " written");
}

void Progress::note(const std::string& text) const {
  if (!quiet_) fmt::print(stderr, "datagen: {}\n", text);
}

void Progress::done() const {
  if (quiet_) return;
  const double s = seconds();
  fmt::print(stderr, "datagen: done: {} rows in {:.2f} s ({} rows/s)\n", count(static_cast<double>(rows_done_)), s,
             count(s > 0 ? static_cast<double>(rows_done_) / s : 0));
}

}  // namespace trainrt::datagen
