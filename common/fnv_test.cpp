#include "common/fnv.h"

#include <doctest/doctest.h>

#include <string>

namespace trainc::common {

TEST_CASE("fnv1a64 matches the published FNV-1a 64 test vectors") {
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
  const std::string bytes("a\0b", 3);
  CHECK(fnv1a64(bytes) == Fnv1a64().update(bytes.data(), bytes.size()).digest());
  CHECK(fnv1a64(bytes) != fnv1a64("a"));
}

TEST_CASE("fnv1a64: a running hash over pieces equals one pass over the whole") {
  CHECK(fnv1a64("bar", fnv1a64("foo")) == fnv1a64("foobar"));
  Fnv1a64 h;
  h.update("fo").update("").update("ob", 2).update("ar");
  CHECK(h.digest() == fnv1a64("foobar"));
  CHECK(Fnv1a64().digest() == kFnvOffset);
}

TEST_CASE("fnv1a64 with another basis: trainc's historical ConfigMap-name seed") {
  // content_hash() seeds with 1469598103934665603 (kFnvOffset short of a digit); these values pin it.
  CHECK(fnv1a64("", 1469598103934665603ull) == 0x14650fb0739d0383ull);
  CHECK(fnv1a64("foobar", 1469598103934665603ull) == 0x88fad7c0a8ff07f2ull);
}

TEST_CASE("fnv1a_step is FNV-1a's step on any word") {
  uint64_t h = kFnvOffset;
  for (unsigned char c : std::string("foobar")) h = fnv1a_step(h, c);
  CHECK(h == fnv1a64("foobar"));
  CHECK(fnv1a_step(0, 1) == kFnvPrime);
}

}  // namespace trainc::common
