#include "formats/shard_format.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/fnv.h"

namespace trainrt {

TEST_CASE("shards partition the rows in order") {
  for (uint64_t n : {1ull, 7ull, 10ull, 10007ull}) {
    for (uint32_t m : {1u, 2u, 7u}) {
      if (m > n) continue;
      uint64_t next = 0;
      for (uint32_t i = 0; i < m; ++i) {
        CHECK(shard_first_row(n, i, m) == next);
        const uint64_t rows = shard_row_count(n, i, m);
        CHECK((rows == n / m || rows == n / m + 1));
        next += rows;
      }
      CHECK(next == n);
    }
  }
  CHECK(shard_file_name(3, 7, "trs") == "part-00003-of-00007.trs");
}

namespace {

/// The definition, spelled out word by word: FNV-1a 64 in four lanes over zero-padded 64-bit words.
uint64_t reference_payload_fnv(const unsigned char* p, size_t bytes) {
  const uint64_t basis = trainc::common::kFnvOffset, prime = trainc::common::kFnvPrime;
  uint64_t lanes[4] = {basis, basis, basis, basis};
  for (size_t at = 0, i = 0; at < bytes; at += 8, ++i) {
    uint64_t w = 0;
    for (size_t b = 0; b < 8 && at + b < bytes; ++b) w |= uint64_t{p[at + b]} << (8 * b);
    lanes[i % 4] = (lanes[i % 4] ^ w) * prime;
  }
  uint64_t h = basis;
  for (uint64_t lane : lanes) h = (h ^ lane) * prime;
  return h;
}

}  // namespace

TEST_CASE("the payload hash does not depend on how it is fed") {
  std::vector<unsigned char> data(1003);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 131 + 7);
  const uint64_t whole = payload_fnv(data.data(), data.size());
  for (size_t step : {1u, 3u, 4u, 8u, 13u, 500u}) {
    PayloadHasher h;
    for (size_t at = 0; at < data.size(); at += step) h.update(data.data() + at, std::min(step, data.size() - at));
    CHECK(h.digest() == whole);
  }
  CHECK(payload_fnv(data.data(), 8) != payload_fnv(data.data() + 1, 8));
  for (size_t n : {0u, 1u, 7u, 8u, 31u, 32u, 33u, 64u, 1003u})
    CHECK(payload_fnv(data.data(), n) == reference_payload_fnv(data.data(), n));
}

TEST_CASE("check_native_shard finds torn and altered shards") {
  const auto path = (std::filesystem::temp_directory_path() / ("trainrt-shard-" + std::to_string(::getpid()))).string();
  const uint32_t features = 3;
  const uint64_t rows = 5;
  std::vector<float> payload(rows * (features + 1));
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<float>(i) * 0.5f;
  ShardHeader h = make_shard_header(features, rows, 10, 100, 42, 2, 20);
  h.payload_fnv = payload_fnv(payload.data(), payload.size() * 4);
  auto write = [&](const std::vector<float>& p, size_t bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(bytes));
  };
  ShardHeader read;
  write(payload, payload.size() * 4);
  CHECK(check_native_shard(path, read, true) == "");
  CHECK(read.first_row == 10);
  CHECK(read.shard_count == 20);
  write(payload, payload.size() * 4 - 4);
  CHECK(check_native_shard(path, read, false).find("torn") != std::string::npos);
  auto altered = payload;
  altered[7] = 99;
  write(altered, altered.size() * 4);
  CHECK(check_native_shard(path, read, false) == "");
  CHECK(check_native_shard(path, read, true).find("checksum") != std::string::npos);
  std::remove(path.c_str());
  CHECK(check_native_shard(path, read, true).find("cannot open") != std::string::npos);
}

}  // namespace trainrt
