#pragma once
// FNV-1a 64 (http://www.isthe.com/chongo/tech/comp/fnv/): the one definition trainc and trainrt
// hash with. Byte-wise for names and digests; trainrt's shard and row checksums feed whole words
// through the same step (fnv1a_step) and say so where they do.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trainc::common {

/// The standard 64-bit offset basis (0xcbf29ce484222325).
inline constexpr uint64_t kFnvOffset = 14695981039346656037ull;
/// The 64-bit FNV prime (0x100000001b3).
inline constexpr uint64_t kFnvPrime = 1099511628211ull;

/// One FNV-1a step: xor `value` in, then multiply by the prime. FNV-1a proper feeds it bytes.
constexpr uint64_t fnv1a_step(uint64_t hash, uint64_t value) { return (hash ^ value) * kFnvPrime; }

/// FNV-1a 64, fed in pieces of any size: the digest does not depend on how the input is split.
class Fnv1a64 {
 public:
  /// `basis` other than kFnvOffset only where a historical seed must be kept (see content_hash).
  constexpr explicit Fnv1a64(uint64_t basis = kFnvOffset) : hash_(basis) {}

  constexpr Fnv1a64& update(std::string_view bytes) {
    for (char c : bytes) hash_ = fnv1a_step(hash_, static_cast<unsigned char>(c));
    return *this;
  }
  Fnv1a64& update(const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) hash_ = fnv1a_step(hash_, p[i]);
    return *this;
  }
  constexpr uint64_t digest() const { return hash_; }

 private:
  uint64_t hash_;
};

/// FNV-1a 64 of `bytes`; `basis` continues a running hash (or seeds a historical one). No
/// (pointer, size) overload: fnv1a64("foo", h) would pick it and read h bytes.
constexpr uint64_t fnv1a64(std::string_view bytes, uint64_t basis = kFnvOffset) {
  return Fnv1a64(basis).update(bytes).digest();
}

static_assert(fnv1a64("") == 0xcbf29ce484222325ull && fnv1a64("a") == 0xaf63dc4c8601ec8cull,
              "FNV-1a 64 published test vectors");

}  // namespace trainc::common
