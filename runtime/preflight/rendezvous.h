#pragma once
// The rendezvous before NCCL starts: rank 0 hands every other rank an opaque blob (the 128-byte
// ncclUniqueId) over one plain TCP connection each, and learns how many GPUs each rank has.
//
// Protocol, one text line each way:
//   rank r > 0 → rank 0:  "trainrt-preflight/1 rank=R world=W gpus=G"
//   rank 0 → rank r:      "ok gpus=G0,G1,... payload=HEX"   every rank joined
//                         "missing R1,R2,..."                 the timeout passed first
//                         "error TEXT"                         the ranks disagree (world size, ...)
// Rank 0 answers only when every rank has joined or its timeout has passed, so a rank that never
// joins makes every waiting rank fail at about the same time, naming the missing ranks.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainrt::preflight {

using Millis = std::chrono::milliseconds;

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
};

/// "host:port", "10.0.0.2:29500", "[fd00::1]:29500". nullopt when malformed or the port is 0.
std::optional<Endpoint> parse_endpoint(std::string_view text);

/// What each rank tells rank 0.
struct Hello {
  int rank = 0, world_size = 1;
  int local_gpus = 0;  ///< GPUs this rank drives (0 for a CPU-only rendezvous)
};

struct RendezvousResult {
  int code = 0;                 ///< kOk, kRankTimeout, or kFailed
  std::string error;            ///< one line, when code != kOk
  std::vector<int> missing;     ///< ranks that never joined, when code == kRankTimeout and known
  std::string payload;          ///< rank 0's blob, on every rank
  std::vector<int> local_gpus;  ///< each rank's Hello::local_gpus, indexed by rank
};

/// Rank 0's side. Binds in the constructor, so peers that start early are queued by the kernel.
class Coordinator {
 public:
  /// Listens on every address at `port` (0: a free port, for tests). Throws std::system_error.
  explicit Coordinator(std::uint16_t port);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  std::uint16_t port() const { return port_; }
  /// Waits up to `timeout` for ranks 1..world_size-1, then sends them `payload` (or the verdict).
  RendezvousResult serve(const Hello& self, const std::string& payload, Millis timeout);

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

/// A rank > 0: connects to rank 0 (retrying until `timeout`, since rank 0 may start later or its
/// name may not resolve yet), sends its Hello and waits for rank 0's answer.
RendezvousResult join(const Endpoint& coordinator, const Hello& self, Millis timeout);

/// "0, 2, 5" — for messages naming ranks.
std::string join_ranks(const std::vector<int>& ranks);

}  // namespace trainrt::preflight
