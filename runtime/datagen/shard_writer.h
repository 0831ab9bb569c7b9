#pragma once
// Writing shards: worker threads generate blocks of rows in parallel; one writer thread puts them
// in the files in row order (parallel writes to one file only contend for its inode lock, and
// generating into a mapped file cost more in page faults than write()'s copy), so writing overlaps
// generating. The blocks live in a ring of buffers that stays mapped (in huge pages where the
// kernel gives them) for the whole run: no block pays page faults again.
// Native: ~2 MiB blocks, features and labels each written to their places and hashed in row order
// (the labels, read back at the end, last), then the header. Parquet: row groups of ~8 MiB; the
// worker asks its source for small tiles of rows (~32 KiB, cache-resident), spreads each tile into
// the row group's column-major buffer, and encodes the row group (page headers, CRCs, statistics,
// compression if asked) without copying uncompressed values; the writer appends it with one
// writev, then the footer. Each shard goes to a temporary name and is renamed once complete, so a
// shard file that exists under its final name is whole.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "datagen/model.h"
#include "datagen/spec.h"
#include "formats/parquet_writer.h"

namespace trainrt::datagen {

struct ShardTask {
  uint32_t index = 0;
  uint64_t first_row = 0, rows = 0;
};

/// Makes rows [first, first + count) for one worker (the CPU, or one GPU); throws on failure.
using RowSource = std::function<void(uint64_t first, uint64_t count, float* features, float* labels)>;

struct WriteOptions {
  std::string dir;
  Layout layout;
  bool fsync = false;                   ///< fsync each shard and the folder before moving on
  uint64_t block_bytes = 2u << 20;      ///< native: rows per block ~ this many bytes
  uint64_t row_group_bytes = 8u << 20;  ///< Parquet: rows per row group ~ this many bytes
  uint32_t page_values = parquet::kDefaultPageValues;
  /// Parquet: rows asked of a source at once ~ this many bytes (at least 8 rows), so that a tile
  /// stays in L1/L2 while it is spread into columns; 0: a whole row group at once (a GPU, for which
  /// one call per tile would cost a launch and a copy each).
  uint64_t tile_bytes = 32u << 10;
  /// Parquet, CPU workers: makes rows straight into a row group's column-major buffer (feature c
  /// of row first + i at columns[c * stride + i], labels after the features), or returns false when
  /// it cannot for this table or CPU; then the workers' sources make tiles that are transposed.
  std::function<bool(uint64_t first, uint64_t count, float* columns, uint64_t stride)> columns;
  bool dry_run = false;  ///< generate and checksum the rows (inspect.h), write nothing
  /// With two or more sources that may run side by side (CPU threads, not GPUs): the thread that
  /// writes also generates with sources[0] whenever the next piece to write is not ready, and
  /// worker threads take the other sources. N sources then keep N threads busy, not N + 1: on a
  /// machine with N cores the writer no longer takes time from the workers.
  bool writer_generates = false;
  std::function<void(uint64_t rows)> on_rows;      ///< rows written so far, after each block
  std::function<void(const ShardTask&)> on_shard;  ///< a shard was renamed into place
};

/// The most rows a RowSource is asked for at once.
uint64_t max_block_rows(uint32_t features, const WriteOptions& opt);

/// Generates and writes `tasks` in order with one worker thread per source (but see
/// writer_generates); returns the sum of the
/// rows' row_checksum() terms with dry_run (else 0). Throws std::runtime_error naming the file and
/// what failed.
uint64_t write_shards(const Model& model, const std::vector<ShardTask>& tasks, const std::vector<RowSource>& sources,
                      const WriteOptions& opt);

}  // namespace trainrt::datagen
