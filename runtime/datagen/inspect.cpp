#include "datagen/inspect.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "datagen/simd_mix.h"
#define TRAINRT_HAVE_AVX512_CHECKSUM 1
#endif

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/fnv.h"
#include "datagen/philox.h"
#include "datagen/row_generator.h"
#include "datagen/table.h"
#include "formats/parquet_reader.h"
#include "formats/shard_format.h"
#include "report.h"

namespace trainrt::datagen {

namespace fs = std::filesystem;

TableAccumulator::TableAccumulator(uint32_t features, bool stats) : stats_(stats) {
  summary_.features = features;
  if (stats) summary_.columns.resize(features + 1);
}

void TableAccumulator::add_stat(size_t column, float v) {
  ColumnStats& c = summary_.columns[column];
  c.sum += v;
  if (summary_.rows == 0 || v < c.min) c.min = v;
  if (summary_.rows == 0 || v > c.max) c.max = v;
}

namespace {

/// The end of row_checksum once the four lanes have taken the row's first `done` words (a multiple
/// of 4): the remaining features and the label, the fold and the final mix.
uint64_t finish_row_checksum(uint64_t row, uint64_t (&lanes)[4], const float* features, uint32_t done, uint32_t count,
                             float label) {
  using trainc::common::fnv1a_step, trainc::common::kFnvOffset;
  for (uint32_t i = done; i < count; ++i) lanes[i % 4] = fnv1a_step(lanes[i % 4], philox::float_bits(features[i]));
  lanes[count % 4] = fnv1a_step(lanes[count % 4], philox::float_bits(label));
  uint64_t h = kFnvOffset;
  for (uint64_t lane : lanes) h = fnv1a_step(h, lane);
  return mix64(h + row * 0x9E3779B97F4A7C15ull);
}

#ifdef TRAINRT_HAVE_AVX512_CHECKSUM
// GCC 12's avx512fintrin.h trips -Wmaybe-uninitialized on its own _mm512_undefined operands.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/// Words a[i .. i+4) and b[i .. i+4), zero-extended to eight 64-bit slots.
__attribute__((target("avx512f,avx512dq,avx512vl"), always_inline)) inline __m512i pair(const float* a, const float* b,
                                                                                        uint32_t i) {
  const __m256i words = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)),
                                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
  return _mm512_cvtepu32_epi64(words);
}

#define TRAINRT_CHECKSUM_TARGET __attribute__((target("avx512f,avx512dq,avx512vl")))

/// v = (v ^ w) * prime on eight 64-bit lanes: fnv1a_step.
TRAINRT_CHECKSUM_TARGET inline __m512i fnv8(__m512i v, __m512i w) {
  return _mm512_mullo_epi64(_mm512_xor_si512(v, w),
                            _mm512_set1_epi64(static_cast<long long>(trainc::common::kFnvPrime)));
}

/// The word at `at` in each of eight rows (`row_starts`: their offsets in floats), zero-extended.
TRAINRT_CHECKSUM_TARGET inline __m512i column8(const float* at, __m256i row_starts) {
  return _mm512_cvtepu32_epi64(_mm256_i32gather_epi32(reinterpret_cast<const int*>(at), row_starts, 4));
}

/// Eight rows at a time, each row's terms exactly row_checksum's. The rows' words: rows (2g, 2g+1)
/// in register g, each row's four lanes in four 64-bit slots, the words of a group of four
/// zero-extended and folded in with vpmullq. The end of each row (the last count % 4 features, the
/// label, the fold of the four lanes and the final mix) runs with the eight rows across the lanes
/// of a register: done row by row in scalar code it was a chain of dependent multiplies that cost
/// as much as all the rest.
TRAINRT_CHECKSUM_TARGET uint64_t rows_checksum_avx512(uint64_t first_row, const float* features, const float* labels,
                                                      uint64_t rows, uint32_t count) {
  using trainc::common::kFnvOffset;
  const uint64_t f = count;
  const uint32_t full = count / 4 * 4;
  const __m512i offset = _mm512_set1_epi64(static_cast<long long>(kFnvOffset));
  const __m256i row_starts =
      _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(static_cast<int>(count)));
  __m512i sum = _mm512_setzero_si512();
  uint64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    const float* x = features + r * f;
    __m512i s[4] = {offset, offset, offset, offset};
    for (uint32_t i = 0; i < full; i += 4)
      for (uint32_t g = 0; g < 4; ++g) s[g] = fnv8(s[g], pair(x + 2 * g * f, x + (2 * g + 1) * f, i));
    // Lane j of the eight rows: slot j of row t sits at 4 t + j.
    alignas(64) uint64_t words[32];
    for (uint32_t g = 0; g < 4; ++g) _mm512_store_si512(words + 8 * g, s[g]);
    __m512i lane[4];
    for (uint32_t j = 0; j < 4; ++j)
      lane[j] =
          _mm512_i64gather_epi64(_mm512_setr_epi64(j, 4 + j, 8 + j, 12 + j, 16 + j, 20 + j, 24 + j, 28 + j), words, 8);
    // Features full + k (k < count % 4) go to lane k, the label to lane count % 4; constant lane
    // indices keep the four lanes in registers.
    const __m512i label = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(labels + r)));
    switch (count % 4) {
      case 0:
        lane[0] = fnv8(lane[0], label);
        break;
      case 1:
        lane[0] = fnv8(lane[0], column8(x + full + 0, row_starts));
        lane[1] = fnv8(lane[1], label);
        break;
      case 2:
        lane[0] = fnv8(lane[0], column8(x + full + 0, row_starts));
        lane[1] = fnv8(lane[1], column8(x + full + 1, row_starts));
        lane[2] = fnv8(lane[2], label);
        break;
      default:
        lane[0] = fnv8(lane[0], column8(x + full + 0, row_starts));
        lane[1] = fnv8(lane[1], column8(x + full + 1, row_starts));
        lane[2] = fnv8(lane[2], column8(x + full + 2, row_starts));
        lane[3] = fnv8(lane[3], label);
    }
    __m512i h = offset;
    for (uint32_t j = 0; j < 4; ++j) h = fnv8(h, lane[j]);
    const __m512i row = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first_row + r)),
                                         _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    sum = _mm512_add_epi64(
        sum, mix64x8(_mm512_add_epi64(h, _mm512_mullo_epi64(row, _mm512_set1_epi64(0x9E3779B97F4A7C15ll)))));
  }
  alignas(64) uint64_t parts[8];
  _mm512_store_si512(parts, sum);
  uint64_t total = 0;
  for (uint64_t p : parts) total += p;
  for (; r < rows; ++r) total += row_checksum(first_row + r, features + r * f, count, labels[r]);
  return total;
}

#undef TRAINRT_CHECKSUM_TARGET
#pragma GCC diagnostic pop
#endif

}  // namespace

uint64_t row_checksum(uint64_t row, const float* features, uint32_t count, float label) {
  using trainc::common::fnv1a_step, trainc::common::kFnvOffset;
  uint64_t lanes[4] = {kFnvOffset, kFnvOffset, kFnvOffset, kFnvOffset};
  uint32_t i = 0;
  for (; i + 4 <= count; i += 4)
    for (uint32_t t = 0; t < 4; ++t) lanes[t] = fnv1a_step(lanes[t], philox::float_bits(features[i + t]));
  return finish_row_checksum(row, lanes, features, i, count, label);
}

uint64_t rows_checksum(uint64_t first_row, const float* features, const float* labels, uint64_t rows, uint32_t count) {
#ifdef TRAINRT_HAVE_AVX512_CHECKSUM
  static const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (avx512) return rows_checksum_avx512(first_row, features, labels, rows, count);
#endif
  uint64_t sum = 0;
  for (uint64_t r = 0; r < rows; ++r) sum += row_checksum(first_row + r, features + r * count, count, labels[r]);
  return sum;
}

void TableAccumulator::add_row(uint64_t row, const float* features, float label) {
  summary_.checksum += row_checksum(row, features, summary_.features, label);
  if (stats_) {
    for (uint32_t i = 0; i < summary_.features; ++i) add_stat(i, features[i]);
    add_stat(summary_.features, label);
  }
  ++summary_.rows;
}

namespace {

struct Fd {
  int fd;
  explicit Fd(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open it: {}", path, std::strerror(errno)));
  }
  ~Fd() { ::close(fd); }
  void read_at(void* buf, size_t bytes, uint64_t offset, const std::string& path) const {
    auto p = static_cast<char*>(buf);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
      if (n <= 0)
        throw std::runtime_error(fmt::format("{}: read failed at byte {}: {}", path, offset,
                                             n < 0 ? std::strerror(errno) : "the file ended early"));
      p += n;
      bytes -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
  }
};

struct Expected {
  uint64_t first_row, rows, total_rows, seed;
  uint32_t features, index, shards;
  std::string fingerprint;
};

void read_native(const std::string& path, const Expected& e, TableAccumulator& acc) {
  ShardHeader h;
  if (auto err = check_native_shard(path, h, /*verify_payload=*/false); !err.empty())
    throw std::runtime_error(path + ": " + err);
  if (h.first_row != e.first_row || h.rows != e.rows || h.features != e.features || h.total_rows != e.total_rows ||
      h.seed != e.seed || h.shard_index != e.index || h.shard_count != e.shards)
    throw std::runtime_error(fmt::format(
        "{}: its header (bytes 0..64: shard {}/{}, rows {} from {} of {}, {} features, "
        "seed {}) does not match {}: a shard of another table?",
        path, h.shard_index, h.shard_count, h.rows, h.first_row, h.total_rows, h.features, h.seed, kTableFile));
  const Fd fd(path);
  const uint64_t label_offset = sizeof h + h.rows * h.features * sizeof(float);
  const uint64_t block = std::max<uint64_t>(1, (4u << 20) / (4 * (uint64_t{h.features} + 1)));
  std::vector<float> features, labels;
  PayloadHasher hasher;
  for (uint64_t r = 0; r < h.rows; r += block) {
    const uint64_t n = std::min(block, h.rows - r);
    features.resize(n * h.features);
    labels.resize(n);
    fd.read_at(features.data(), features.size() * 4, sizeof h + r * h.features * 4, path);
    fd.read_at(labels.data(), n * 4, label_offset + r * 4, path);
    hasher.update(features.data(), features.size() * 4);
    for (uint64_t i = 0; i < n; ++i) acc.add_row(h.first_row + r + i, features.data() + i * h.features, labels[i]);
  }
  for (uint64_t r = 0; r < h.rows; r += block) {
    const uint64_t n = std::min(block, h.rows - r);
    labels.resize(n);
    fd.read_at(labels.data(), n * 4, label_offset + r * 4, path);
    hasher.update(labels.data(), n * 4);
  }
  if (hasher.digest() != h.payload_fnv)
    throw std::runtime_error(
        fmt::format("{}: payload checksum mismatch over bytes 64..{} (the header's payload_fnv "
                    "at byte 56): corrupt or altered",
                    path, native_shard_bytes(h.rows, h.features)));
}

void read_parquet(const std::string& path, const Expected& e, TableAccumulator& acc) {
  const Fd fd(path);
  parquet::FileInfo info;
  if (auto err = parquet::read_footer(fd.fd, info); !err.empty()) throw std::runtime_error(path + ": " + err);
  if (static_cast<uint64_t>(info.meta.num_rows) != e.rows || info.columns != column_names(e.features) ||
      info.key_value("trainrt.first_row") != std::to_string(e.first_row) ||
      info.key_value("trainrt.table") != e.fingerprint)
    throw std::runtime_error(
        fmt::format("{}: its footer (bytes {}..{}) gives rows, columns or table fingerprint that "
                    "do not match {}: a shard of another table?",
                    path, info.footer_offset, info.file_size, kTableFile));
  std::vector<float> columns, row(e.features);
  uint64_t next = e.first_row;
  for (size_t g = 0; g < info.meta.row_groups.size(); ++g) {
    if (auto err = parquet::read_row_group(fd.fd, info, g, columns); !err.empty())
      throw std::runtime_error(path + ": " + err);
    const auto rows = static_cast<uint64_t>(info.meta.row_groups[g].num_rows);
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint32_t c = 0; c < e.features; ++c) row[c] = columns[c * rows + r];
      acc.add_row(next++, row.data(), columns[uint64_t{e.features} * rows + r]);
    }
  }
}

}  // namespace

TableSummary summarize_table(const std::string& dir, bool stats) {
  const TableMetadata table = read_table_metadata(dir);
  Expected e{};
  e.total_rows = table.rows;
  e.features = table.features;
  e.seed = table.seed;
  e.shards = static_cast<uint32_t>(table.files.size());
  e.fingerprint = fingerprint(table.spec_json);
  const bool parquet = table.format == Format::kParquet;
  TableAccumulator acc(e.features, stats);
  for (uint32_t i = 0; i < e.shards; ++i) {
    const auto& f = table.files[i];
    e.index = i;
    e.first_row = f.first_row;
    e.rows = f.rows;
    const std::string path = (fs::path(dir) / f.name).string();
    std::error_code ec;
    if (!fs::exists(path, ec))
      throw std::runtime_error(
          fmt::format("{}: missing{}, though {} lists it: the table is incomplete (a lost copy, "
                      "or storage that went away); restore it or generate the table again",
                      path, ec ? " (" + ec.message() + ")" : "", kTableFile));
    if (parquet)
      read_parquet(path, e, acc);
    else
      read_native(path, e, acc);
  }
  if (acc.summary().rows != e.total_rows)
    throw std::runtime_error(
        fmt::format("{}: the shards hold {} rows, the table {}", dir, acc.summary().rows, e.total_rows));
  return acc.summary();
}

std::string format_summary(const TableSummary& s, bool stats) {
  std::string out = fmt::format("rows: {}\ncolumns: {} ({} features + label)\nchecksum: {:016x}\n", s.rows,
                                s.features + 1, s.features, s.checksum);
  if (stats) {
    for (size_t c = 0; c < s.columns.size(); ++c)
      out += fmt::format("{}: sum {} min {} max {}\n", c < s.features ? "f" + std::to_string(c) : std::string("label"),
                         s.columns[c].sum, s.columns[c].min, s.columns[c].max);
  }
  return out;
}

int run_inspect(const std::string& dir, bool stats) {
  try {
    fmt::print("{}", format_summary(summarize_table(dir, stats), stats));
    return kOk;
  } catch (const std::exception& e) {
    report(e.what());
    return kFailed;
  }
}

}  // namespace trainrt::datagen
