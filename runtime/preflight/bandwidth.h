#pragma once
// Sizes and all-reduce bandwidth as nccl-tests reports them, so the numbers compare with its tables.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainrt::preflight {

struct Bandwidth {
  double algbw_gbps = 0;  ///< bytes / time, in GB/s (1e9 bytes per second)
  double busbw_gbps = 0;  ///< algbw × 2(n-1)/n: what each link carried, comparable across rank counts
};

/// All-reduce of `bytes` per rank over `nranks` ranks that took `seconds` (per iteration).
Bandwidth allreduce_bandwidth(std::uint64_t bytes, double seconds, int nranks);

/// "256MiB", "1GiB", "4KiB"; "1GB", "500MB" (powers of 1000); "64M", "1G" (powers of 1024, as
/// nccl-tests' -b/-e read them); "4096" or "4096B". nullopt when malformed or zero.
std::optional<std::uint64_t> parse_bytes(std::string_view text);

/// 268435456 -> "256 MiB", 1000 -> "1000 B", 1536 -> "1.5 KiB".
std::string format_bytes(std::uint64_t bytes);

}  // namespace trainrt::preflight
