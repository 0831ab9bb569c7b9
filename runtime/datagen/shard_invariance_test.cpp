// The table does not depend on sharding, threads, block boundaries, the format or the CPU's
// vector width: the same seed gives the same logical table, bit for bit.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datagen/cpu_generator.h"
#include "datagen/datagen_run.h"
#include "datagen/inspect.h"
#include "datagen/model.h"
#include "datagen/row_generator.h"
#include "datagen/shard_writer.h"
#include "datagen/table.h"
#include "formats/shard_format.h"

namespace trainrt::datagen {

namespace fs = std::filesystem;

namespace {

/// Rows [first, first + count) on every SIMD path this CPU has, bit for bit against the portable
/// path (the CUDA kernel's).
void check_paths_match(const Model& m, uint64_t first, uint64_t count) {
  const uint32_t f = m.spec.features;
  std::vector<float> x1(count * f), y1(count), x2(x1.size()), y2(y1.size());
  generate_rows_on(CpuPath::kPortable, m.view(), first, count, x1.data(), y1.data());
  for (CpuPath path : {CpuPath::kAvx2, CpuPath::kAvx512}) {
    if (!cpu_path_available(path)) continue;
    generate_rows_on(path, m.view(), first, count, x2.data(), y2.data());
    CHECK(std::memcmp(x1.data(), x2.data(), x1.size() * 4) == 0);
    CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * 4) == 0);
  }
  // The column-major path (Parquet row groups), where this CPU and table have it: the same bits,
  // column c of row i at c * stride + i; a stride past the rows leaves the gaps untouched.
  const uint64_t stride = count + 5;
  std::vector<float> columns((f + 1) * stride, -7.0f);
  if (!generate_columns_cpu(m.view(), first, count, columns.data(), stride)) return;
  uint64_t differ = 0, touched = 0;
  for (uint64_t i = 0; i < count; ++i) {
    for (uint32_t c = 0; c < f; ++c) differ += std::memcmp(&columns[c * stride + i], &x1[i * f + c], 4) != 0;
    differ += std::memcmp(&columns[f * stride + i], &y1[i], 4) != 0;
  }
  for (uint32_t c = 0; c <= f; ++c)
    for (uint64_t i = count; i < stride; ++i) touched += columns[c * stride + i] != -7.0f;
  CHECK(differ == 0);
  CHECK(touched == 0);
}

Spec small_spec() {
  Spec s;
  s.rows = 10007;  // prime: no shard count divides it
  s.features = 13;
  s.seed = 99;
  s.informative = 4;
  s.redundant = 3;
  s.repeated = 1;
  s.classes = 3;
  return s;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("trainrt-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

/// The logical table as bytes: every row's features then its label.
std::vector<float> logical_table(const Spec& spec, uint64_t block) {
  const Model m = build_model(spec);
  std::vector<float> x(block * spec.features), y(block), out;
  for (uint64_t r = 0; r < spec.rows; r += block) {
    const uint64_t n = std::min(block, spec.rows - r);
    generate_rows_cpu(m.view(), r, n, x.data(), y.data());
    for (uint64_t i = 0; i < n; ++i) {
      out.insert(out.end(), x.begin() + static_cast<ptrdiff_t>(i * spec.features),
                 x.begin() + static_cast<ptrdiff_t>((i + 1) * spec.features));
      out.push_back(y[i]);
    }
  }
  return out;
}

TableSummary make_and_summarize(const Spec& spec, const Layout& layout, unsigned threads, const fs::path& dir) {
  RunOptions opt;
  opt.spec = spec;
  opt.layout = layout;
  opt.out_dir = dir.string();
  opt.threads = threads;
  opt.quiet = true;
  REQUIRE(run_datagen(opt) == 0);
  return summarize_table(dir.string(), true);
}

}  // namespace

TEST_CASE("rows do not depend on block boundaries or the vectorised CPU path") {
  const Spec spec = small_spec();
  const auto one_block = logical_table(spec, spec.rows);
  CHECK(logical_table(spec, 1) == one_block);
  CHECK(logical_table(spec, 777) == one_block);
  // make_row compiled into this test (baseline x86-64, no AVX2 clone) gives the same bits.
  const Model m = build_model(spec);
  std::vector<float> row(spec.features);
  bool same = true;
  for (uint64_t r = 0; r < spec.rows; ++r) {
    float label;
    make_row(m.view(), r, row.data(), &label);
    same = same && std::memcmp(row.data(), &one_block[r * (spec.features + 1)], spec.features * 4) == 0 &&
           label == one_block[r * (spec.features + 1) + spec.features];
  }
  CHECK(same);
}

TEST_CASE("the AVX-512 and AVX2 paths and the portable path (the CUDA kernel's) give the same bits") {
  for (uint32_t features : {1u, 5u, 12u, 37u, 46u, 70u, 131u}) {
    for (Task task : {Task::kClassification, Task::kRegression}) {
      Spec s;
      s.rows = 500;
      s.features = features;
      s.task = task;
      s.seed = features;
      s.informative = std::min(features, task == Task::kRegression ? 10u : (features >= 9 ? 9u : 1u));
      s.redundant = task == Task::kClassification && features >= 12 ? 2 : 0;
      s.repeated = task == Task::kClassification && features >= 12 ? 1 : 0;
      s.clusters_per_class = 1;
      s.noise = 1.5;
      check_paths_match(build_model(s), 0, s.rows);
    }
  }
}

TEST_CASE("1 shard or 7, native or Parquet, 1 thread or 3: the same logical table") {
  const Spec spec = small_spec();
  TempDir one("one"), seven("seven"), pq("parquet"), pq1("parquet1");
  const TableSummary a = make_and_summarize(spec, Layout{1, Format::kNative}, 1, one.path);
  const TableSummary b = make_and_summarize(spec, Layout{7, Format::kNative}, 3, seven.path);
  const TableSummary c = make_and_summarize(spec, Layout{7, Format::kParquet}, 2, pq.path);
  const TableSummary d = make_and_summarize(spec, Layout{1, Format::kParquet}, 3, pq1.path);
  CHECK(a.rows == spec.rows);
  CHECK(format_summary(a, true) == format_summary(b, true));
  CHECK(format_summary(a, true) == format_summary(c, true));
  CHECK(format_summary(a, true) == format_summary(d, true));

  // The shards' bytes, concatenated in row order, are the logical table.
  const auto table = logical_table(spec, 1000);
  TableAccumulator acc(spec.features, true);
  for (uint64_t r = 0; r < spec.rows; ++r)
    acc.add_row(r, &table[r * (spec.features + 1)], table[r * (spec.features + 1) + spec.features]);
  CHECK(format_summary(acc.summary(), true) == format_summary(a, true));
  CHECK(fs::exists(seven.path / kTableFile));
  CHECK(fs::exists(seven.path / "part-00006-of-00007.trs"));
}

TEST_CASE("small row groups and pages in Parquet change nothing either") {
  const Spec spec = small_spec();
  TempDir dir("parquet-small-groups");
  fs::create_directories(dir.path);
  const Layout layout{2, Format::kParquet};
  const Model model = build_model(spec);
  WriteOptions opt;
  opt.dir = dir.path.string();
  opt.layout = layout;
  opt.row_group_bytes = 1000 * 4 * (spec.features + 1);  // 1000-row groups
  opt.page_values = 300;
  std::vector<ShardTask> tasks;
  for (uint32_t i = 0; i < 2; ++i)
    tasks.push_back({i, shard_first_row(spec.rows, i, 2), shard_row_count(spec.rows, i, 2)});
  const ModelView v = model.view();
  std::vector<RowSource> sources(2, [v](uint64_t f, uint64_t n, float* x, float* y) { generate_rows_cpu(v, f, n, x, y); });
  write_shards(model, tasks, sources, opt);
  write_table_metadata(opt.dir, spec, layout);
  TempDir ref("parquet-ref");
  CHECK(format_summary(summarize_table(opt.dir, true), true) ==
        format_summary(make_and_summarize(spec, Layout{1, Format::kNative}, 2, ref.path), true));
}

TEST_CASE("a rerun skips complete shards, redoes damaged ones and refuses another table's folder") {
  Spec spec = small_spec();
  TempDir dir("rerun");
  const Layout layout{3, Format::kNative};
  const std::string first = format_summary(make_and_summarize(spec, layout, 2, dir.path), false);
  const fs::path s0 = dir.path / "part-00000-of-00003.trs", s1 = dir.path / "part-00001-of-00003.trs";
  const auto t0 = fs::last_write_time(s0);
  {
    std::fstream f(s1, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x55');
  }
  CHECK_THROWS_WITH_AS(summarize_table(dir.path.string(), false), doctest::Contains("part-00001-of-00003.trs"),
                       std::runtime_error);
  CHECK(format_summary(make_and_summarize(spec, layout, 2, dir.path), false) == first);
  CHECK(fs::last_write_time(s0) == t0);

  RunOptions other;
  other.spec = spec;
  other.spec.seed = 100;
  other.layout = layout;
  other.out_dir = dir.path.string();
  other.quiet = true;
  CHECK(run_datagen(other) == 1);
}

}  // namespace trainrt::datagen

namespace trainrt::datagen {

TEST_CASE("the SIMD paths match the portable one at any first row, across 2^32 and where cycle walking is long") {
  struct Case {
    uint64_t rows, first, count;
    uint32_t features;
    Task task;
  };
  // 17 rows: the Feistel domain is 64, so most lanes walk several times; 2^33 rows: row counters
  // whose low word wraps inside a batch of 16; odd first rows: batches not aligned to 16.
  const Case cases[] = {
      {17, 0, 17, 7, Task::kClassification},
      {17, 1, 16, 50, Task::kClassification},
      {1000003, 999970, 33, 50, Task::kClassification},
      {uint64_t{1} << 33, (uint64_t{1} << 32) - 21, 70, 50, Task::kClassification},
      {uint64_t{1} << 33, (uint64_t{1} << 32) - 21, 70, 23, Task::kRegression},
      {1000, 3, 97, 3, Task::kRegression},
  };
  for (const Case& c : cases) {
    Spec s;
    s.rows = c.rows;
    s.features = c.features;
    s.task = c.task;
    s.seed = c.rows ^ c.first;
    s.informative = c.task == Task::kRegression ? std::min(c.features, 10u) : 2;
    s.redundant = c.task == Task::kClassification && c.features >= 5 ? 2 : 0;
    s.repeated = c.task == Task::kClassification && c.features >= 7 ? 1 : 0;
    s.noise = 0.5;
    check_paths_match(build_model(s), c.first, c.count);
  }
}

}  // namespace trainrt::datagen

namespace trainrt::datagen {

TEST_CASE("rows_checksum (SIMD where available) sums exactly the row_checksum terms") {
  for (uint32_t count : {1u, 3u, 4u, 5u, 8u, 13u, 50u}) {
    for (uint64_t rows : {0ull, 1ull, 3ull, 4ull, 7ull, 8ull, 9ull, 16ull, 17ull, 25ull}) {
      CAPTURE(count);
      CAPTURE(rows);
      std::vector<float> x(rows * count), y(rows);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i * 7919 % 1013) * -0.37f;
      for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 3);
      const uint64_t first = (uint64_t{1} << 32) - 2;  // row numbers past 2^32 too
      uint64_t expected = 0;
      for (uint64_t r = 0; r < rows; ++r) expected += row_checksum(first + r, x.data() + r * count, count, y[r]);
      CHECK(rows_checksum(first, x.data(), y.data(), rows, count) == expected);
      if (rows > 1) {  // and it sees every word: a change anywhere changes the sum
        for (size_t at : {size_t{0}, x.size() / 2, x.size() - 1}) {
          const float kept = x[at];
          x[at] = 1.5f;
          CHECK(rows_checksum(first, x.data(), y.data(), rows, count) != expected);
          x[at] = kept;
        }
        y[0] = 7.0f;  // a label in the first group of rows
        CHECK(rows_checksum(first, x.data(), y.data(), rows, count) != expected);
      }
    }
  }
}

}  // namespace trainrt::datagen

namespace trainrt::datagen {

TEST_CASE("the AVX-512 dense-column path (<= 16 clusters, <= 8 informative and redundant) and its fallback match") {
  struct Case {
    uint32_t informative, redundant, repeated, classes, clusters_per_class;
    bool shuffle;
  };
  // Inside the register path's limits, at them (16 clusters, 8 + 8 columns) and just past them.
  const Case cases[] = {{2, 2, 0, 2, 2, true},  {3, 0, 2, 3, 2, true},  {5, 3, 2, 4, 4, true},
                        {8, 8, 3, 2, 1, false}, {5, 1, 1, 3, 6, true},  {9, 2, 1, 2, 2, true},
                        {4, 9, 0, 2, 2, true},  {1, 0, 0, 2, 1, false}};
  for (const Case& c : cases) {
    CAPTURE(c.informative);
    CAPTURE(c.redundant);
    CAPTURE(c.classes * c.clusters_per_class);
    Spec s;
    s.rows = 1001;
    s.features = c.informative + c.redundant + c.repeated + 7;
    s.informative = c.informative;
    s.redundant = c.redundant;
    s.repeated = c.repeated;
    s.classes = c.classes;
    s.clusters_per_class = c.clusters_per_class;
    s.shuffle_rows = c.shuffle;
    s.seed = 77 + c.informative;
    check_paths_match(build_model(s), 0, s.rows);
  }
}

}  // namespace trainrt::datagen
