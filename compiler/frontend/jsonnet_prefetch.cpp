#include "frontend/jsonnet_prefetch.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>

#include "frontend/jsonnet_sandbox.h"

namespace fs = std::filesystem;

namespace trainc::jsonnet {
namespace {

/// The servers of one invocation. The Jsonnet specs it was told to expect are sent ahead, in order,
/// to as many servers as the machine has cores (at most 4), while trainc goes on with the specs
/// before them; evaluating one asks for its answer. A server answers one spec at a time, so at most
/// one answer per server waits to be asked for.
class Pool {
 public:
  void expect(std::vector<Request> requests) {
    const size_t cores = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
    width_ = std::clamp<size_t>(requests.size(), 1, cores);
    for (auto& r : requests) queued_.push_back(std::move(r));
    dispatch();
  }

  Evaluation evaluate(const Request& r) {
    if (auto it = std::find_if(finished_.begin(), finished_.end(), [&](const auto& f) { return f.first == r; });
        it != finished_.end()) {
      Evaluation e = std::move(it->second);
      finished_.erase(it);
      dispatch();
      return e;
    }
    if (auto it = std::find_if(in_flight_.begin(), in_flight_.end(), [&](const auto& f) { return f.first == r; });
        it != in_flight_.end()) {
      Server* s = it->second;
      in_flight_.erase(it);
      Evaluation e = s->collect();
      dispatch();
      return e;
    }
    if (auto it = std::find(queued_.begin(), queued_.end(), r); it != queued_.end()) queued_.erase(it);
    Server* s = idle();
    if (!s) {  // every server holds a later spec: take the oldest answer to free one
      auto& [oldest, busy] = in_flight_.front();
      finished_.emplace_back(std::move(oldest), busy->collect());
      s = busy;
      in_flight_.erase(in_flight_.begin());
    }
    if (auto now = s->submit(r.name, r.text, r.root)) return std::move(*now);
    Evaluation e = s->collect();
    dispatch();
    return e;
  }

 private:
  /// An idle server, started if the pool is not at its width yet; nullptr when all are busy.
  Server* idle() {
    for (auto& s : servers_)
      if (!s->busy()) return s.get();
    if (servers_.size() < width_) return servers_.emplace_back(std::make_unique<Server>()).get();
    return nullptr;
  }

  /// Sends expected specs to idle servers.
  void dispatch() {
    while (!queued_.empty()) {
      Server* s = idle();
      if (!s) return;
      Request r = std::move(queued_.front());
      queued_.pop_front();
      if (auto now = s->submit(r.name, r.text, r.root))
        finished_.emplace_back(std::move(r), std::move(*now));
      else
        in_flight_.emplace_back(std::move(r), s);
    }
  }

  size_t width_ = 1;
  std::vector<std::unique_ptr<Server>> servers_;
  std::deque<Request> queued_;
  std::vector<std::pair<Request, Server*>> in_flight_;
  std::vector<std::pair<Request, Evaluation>> finished_;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

Request request_for(const SourceFile& file) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(fs::absolute(file.name(), ec).parent_path(), ec);
  return {file.name(), file.text(), root.string()};
}

void prefetch(std::vector<Request> requests) { pool().expect(std::move(requests)); }

Evaluation evaluate(const Request& r) { return pool().evaluate(r); }

}  // namespace trainc::jsonnet
