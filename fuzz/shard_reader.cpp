// libFuzzer harness: trainrt's native shard reader (formats/shard_reader, shard_format): the header
// check against the file size, the payload checksum, and reading every row of a shard that passes.
// Each input is tried as given and with its header's payload checksum recomputed, so mutations get
// past the checksum to the row data.
#include "formats/shard_reader.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "formats/shard_format.h"
#include "fuzz_file.h"

namespace {

void read_shard(const std::string& path, bool verify) {
  try {
    auto shard = trainrt::MappedShard::open(path, verify);
    const float* features = shard.feature_data();
    const float* labels = shard.label_data();
    float sum = 0;
    for (uint64_t r = 0; r < shard.rows(); ++r) {
      for (uint32_t f = 0; f < shard.features(); ++f) sum += features[r * shard.features() + f];
      sum += labels[r];
    }
    shard.release_rows(0, shard.rows());
    shard.verify_payload();
    shard.release_all();
    volatile float sink = sum;
    (void)sink;
  } catch (const trainrt::ShardError&) {
  }
}

void check(const std::string& data) {
  trainc_fuzz::MemFile file(data.data(), data.size());
  trainrt::ShardHeader header;
  (void)trainrt::check_native_shard(file.path(), header, true);
  (void)trainrt::check_native_shard(file.path(), header, false);
  read_shard(file.path(), true);
  read_shard(file.path(), false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  if (bytes.size() >= sizeof(trainrt::ShardHeader)) {
    const uint64_t fnv =
        trainrt::payload_fnv(bytes.data() + sizeof(trainrt::ShardHeader), bytes.size() - sizeof(trainrt::ShardHeader));
    std::memcpy(bytes.data() + offsetof(trainrt::ShardHeader, payload_fnv), &fnv, sizeof fnv);
    check(bytes);
  }
  return 0;
}
