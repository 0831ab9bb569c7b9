#pragma once
// `trainrt inspect`: reads a generated table back shard by shard, verifying each one, and
// summarises the logical table — rows in global order — so the summary does not depend on how
// the table was sharded or stored.
//
// Checksum: sum over rows r (mod 2^64) of row_checksum(r, row): mix64(h_r + r * 0x9E3779B97F4A7C15),
// where h_r is FNV-1a 64 over the row's float32 bit patterns (features, then label) as 32-bit
// words in four interleaved lanes (word i feeds lane i % 4), the lanes then folded by FNV-1a 64.
// Position-dependent (rows cannot be swapped unnoticed) yet computable in any order, in parallel.
#include <cstdint>
#include <string>
#include <vector>

namespace trainrt::datagen {

struct ColumnStats {
  double sum = 0;
  float min = 0, max = 0;
};

struct TableSummary {
  uint64_t rows = 0;
  uint32_t features = 0;
  uint64_t checksum = 0;
  std::vector<ColumnStats> columns;  ///< features then label; filled with `stats`
};

/// One row's term of the table checksum.
uint64_t row_checksum(uint64_t row, const float* features, uint32_t count, float label);

/// The sum of row_checksum() over rows [first_row, first_row + rows) of a row-major block (`count`
/// features per row, labels apart): the same value, computed with AVX-512 where the CPU has it
/// (two rows' four lanes in one register, 64-bit multiplies in SIMD; about 4x the scalar loop).
uint64_t rows_checksum(uint64_t first_row, const float* features, const float* labels, uint64_t rows, uint32_t count);

/// Folds rows into a TableSummary.
class TableAccumulator {
 public:
  TableAccumulator(uint32_t features, bool stats);
  /// Row `row` of the logical table.
  void add_row(uint64_t row, const float* features, float label);
  const TableSummary& summary() const { return summary_; }

 private:
  void add_stat(size_t column, float v);
  TableSummary summary_;
  bool stats_;
};

/// Reads and verifies the table in DIR. Throws std::runtime_error naming the file and the problem.
TableSummary summarize_table(const std::string& dir, bool stats);

/// The text `trainrt inspect` prints.
std::string format_summary(const TableSummary& summary, bool stats);

/// Adds rows whose checksum terms were summed elsewhere (datagen --dry-run).
inline void add_checksum_terms(TableSummary& s, uint64_t rows, uint64_t terms) {
  s.rows += rows;
  s.checksum += terms;
}

/// Runs `trainrt inspect DIR` and returns the exit code.
int run_inspect(const std::string& dir, bool stats);

}  // namespace trainrt::datagen
