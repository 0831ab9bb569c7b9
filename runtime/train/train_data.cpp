#include "train/train_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace trainrt {
namespace {

constexpr uint64_t kBatchBytes = uint64_t{32} << 20;

std::string dense_interface(const float* data, uint64_t rows, uint32_t cols) {
  return fmt::format(R"({{"data": [{}, true], "shape": [{}, {}], "typestr": "<f4", "version": 3}})",
                     reinterpret_cast<uintptr_t>(data), rows, cols);
}

/// Feeds RowRanges to XGBoost's DMatrix proxy, one per call to next(). XGBoost calls next() until
/// it returns 0, and reset() between its passes over the data (three to build a QuantileDMatrix).
/// The callbacks cannot throw through XGBoost: a failure ends the stream and is rethrown after.
class BatchFeed {
 public:
  BatchFeed(const std::vector<RowRange>& ranges, DMatrixHandle proxy) : ranges_(ranges), proxy_(proxy) {}

  static int next(DataIterHandle self) { return static_cast<BatchFeed*>(self)->next(); }
  static void reset(DataIterHandle self) { static_cast<BatchFeed*>(self)->reset(); }

  void rethrow() const {
    if (!error_.empty()) throw xgb::XgbError(error_);
  }

 private:
  int next() {
    release_previous();
    if (at_ >= ranges_.size() || !error_.empty()) return 0;
    const RowRange& r = ranges_[at_];
    const float* x;
    const float* y;
    uint32_t f;
    if (r.pq != nullptr) {
      f = r.pq->features();
      x_.resize(r.rows() * f);
      y_.resize(r.rows());
      try {
        r.pq->read_rows(r.begin, r.end, x_.data(), y_.data(), cache_);
      } catch (const std::exception& e) {
        error_ = e.what();
        return 0;
      }
      x = x_.data();
      y = y_.data();
    } else {
      f = r.shard->features();
      x = r.shard->feature_data() + r.begin * f;
      y = r.shard->label_data() + r.begin;
    }
    const std::string iface = dense_interface(x, r.rows(), f);
    if (XGProxyDMatrixSetDataDense(proxy_, iface.c_str()) != 0 ||
        XGDMatrixSetFloatInfo(proxy_, "label", y, r.rows()) != 0) {
      error_ = fmt::format("handing {} rows {}..{} to XGBoost: {}", r.pq ? r.pq->path() : r.shard->path(), r.begin,
                           r.end, XGBGetLastError());
      return 0;
    }
    ++at_;
    return 1;
  }

  void reset() {
    release_previous();
    at_ = 0;
  }

  /// XGBoost is done with the batch before it asks for the next one: drop its pages.
  void release_previous() {
    if (at_ > 0 && ranges_[at_ - 1].shard != nullptr) {
      const RowRange& r = ranges_[at_ - 1];
      r.shard->release_rows(r.begin, r.end);
    }
  }

  const std::vector<RowRange>& ranges_;
  DMatrixHandle proxy_;
  size_t at_ = 0;
  std::string error_;
  // Parquet: the last row group decoded, and the batch handed over (row-major).
  ParquetShard::GroupCache cache_;
  std::vector<float> x_, y_;
};

xgb::DMatrix quantile_dmatrix(const std::vector<RowRange>& ranges, const DataOptions& o, DMatrixHandle ref) {
  DMatrixHandle proxy_handle = nullptr;
  xgb::check(XGProxyDMatrixCreate(&proxy_handle), "XGProxyDMatrixCreate");
  xgb::DMatrix proxy(proxy_handle);
  BatchFeed feed(ranges, proxy.get());
  // nlohmann would write NaN as null; XGBoost's own JSON reader takes NaN.
  const std::string config = fmt::format(R"({{"missing": NaN, "nthread": {}, "max_bin": {}}})", o.threads, o.max_bin);
  DMatrixHandle out = nullptr;
  const int rc = XGQuantileDMatrixCreateFromCallback(&feed, proxy.get(), ref, BatchFeed::reset, BatchFeed::next,
                                                     config.c_str(), &out);
  xgb::DMatrix result(out);
  feed.rethrow();
  xgb::check(rc, "XGQuantileDMatrixCreateFromCallback");
  return result;
}

xgb::DMatrix dense_dmatrix(const std::vector<RowRange>& ranges, uint32_t features, const DataOptions& o) {
  uint64_t rows = 0;
  for (const auto& r : ranges) rows += r.rows();
  const float* x = nullptr;
  const float* y = nullptr;
  std::vector<float> x_buf;
  std::vector<float> y_buf;
  if (ranges.size() == 1 && ranges[0].shard != nullptr) {  // one range: straight from the mapping
    x = ranges[0].shard->feature_data() + ranges[0].begin * features;
    y = ranges[0].shard->label_data() + ranges[0].begin;
  } else {  // several: one contiguous buffer
    x_buf.reserve(rows * features);
    y_buf.reserve(rows);
    ParquetShard::GroupCache cache;
    for (const auto& r : ranges) {
      if (r.pq != nullptr) {
        const size_t at = y_buf.size();
        x_buf.resize(x_buf.size() + r.rows() * features);
        y_buf.resize(at + r.rows());
        r.pq->read_rows(r.begin, r.end, x_buf.data() + at * features, y_buf.data() + at, cache);
        continue;
      }
      const float* rx = r.shard->feature_data() + r.begin * features;
      x_buf.insert(x_buf.end(), rx, rx + r.rows() * features);
      const float* ry = r.shard->label_data() + r.begin;
      y_buf.insert(y_buf.end(), ry, ry + r.rows());
      r.shard->release_rows(r.begin, r.end);
    }
    x = x_buf.data();
    y = y_buf.data();
  }
  DMatrixHandle out = nullptr;
  xgb::check(XGDMatrixCreateFromMat_omp(x, rows, features, std::nanf(""), &out, o.threads), "XGDMatrixCreateFromMat");
  xgb::DMatrix result(out);
  xgb::check(XGDMatrixSetFloatInfo(result.get(), "label", y, rows), "XGDMatrixSetFloatInfo(label)");
  return result;
}

/// Merges adjacent ranges of the same shard back into one (the dense path wants as few as possible).
std::vector<RowRange> coalesce(const std::vector<RowRange>& ranges) {
  std::vector<RowRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && r.shard != nullptr && out.back().shard == r.shard && out.back().end == r.begin) {
      out.back().end = r.end;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> shards_of_rank(const std::vector<std::string>& all, int rank, int world_size) {
  std::vector<std::string> mine;
  for (size_t i = static_cast<size_t>(rank); i < all.size(); i += static_cast<size_t>(world_size)) {
    mine.push_back(all[i]);
  }
  return mine;
}

std::optional<TableDescription> read_table_description(const std::string& dir,
                                                       const std::vector<std::string>& shard_paths) {
  const fs::path path = fs::path(dir) / "_trainrt_table.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string where = path.string();
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw ShardError(fmt::format("{}: not valid JSON; it describes the table datagen wrote, so the table cannot be "
                                 "trusted: generate it again, or remove the file to train on the shards alone",
                                 where));
  auto field = [&](const nlohmann::json& obj, const char* key, const std::string& name) -> const nlohmann::json& {
    if (!obj.is_object() || !obj.contains(key))
      throw ShardError(fmt::format("{}: field '{}' is missing", where, name));
    return obj[key];
  };
  auto count = [&](const nlohmann::json& v, const std::string& name, uint64_t max) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > max)
      throw ShardError(fmt::format("{}: field '{}' is {}, not a count up to {}", where, name, v.dump(), max));
    return v.get<uint64_t>();
  };
  TableDescription t;
  t.features = static_cast<uint32_t>(count(field(j, "features", "features"), "features", 65536));
  t.rows = count(field(j, "rows", "rows"), "rows", uint64_t{1} << 62);
  const nlohmann::json& files = field(j, "files", "files");
  if (!files.is_array()) throw ShardError(fmt::format("{}: field 'files' is not a list", where));
  uint64_t listed_rows = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string at = fmt::format("files[{}]", i);
    const nlohmann::json& name = field(files[i], "name", at + ".name");
    if (!name.is_string() || name.get<std::string>().find('/') != std::string::npos)
      throw ShardError(fmt::format("{}: field '{}.name' is {}, not a file name", where, at, name.dump()));
    const uint64_t rows = count(field(files[i], "rows", at + ".rows"), at + ".rows", uint64_t{1} << 62);
    listed_rows += rows;
    if (name.get<std::string>().ends_with(".trs") || name.get<std::string>().ends_with(".parquet"))
      t.shard_rows[name.get<std::string>()] = rows;
  }
  if (listed_rows != t.rows)
    throw ShardError(fmt::format("{}: its files hold {} rows but field 'rows' says {}", where, listed_rows, t.rows));
  std::set<std::string> present;
  for (const auto& p : shard_paths) present.insert(fs::path(p).filename().string());
  for (const auto& [name, _] : t.shard_rows)
    if (!present.count(name))
      throw ShardError(fmt::format("{}: lists {}, which is not in {} (a shard lost in a copy?)", where, name, dir));
  for (const auto& name : present)
    if (!t.shard_rows.count(name))
      throw ShardError(fmt::format("{}: does not list {}, which is in {}; a shard of another table?", where, name, dir));
  return t;
}

void check_shard_set(const RankShards& shards, const std::vector<std::string>& all, int rank, int world_size) {
  uint64_t total = 0;
  for (size_t k = 0; k < shards.shards.size(); ++k) {
    const MappedShard& s = shards.shards[k];
    const ShardHeader& h = s.header();
    const size_t position = static_cast<size_t>(rank) + k * static_cast<size_t>(world_size);
    if (h.shard_count != all.size() || h.shard_index != position) {
      std::set<std::string> present;
      for (const auto& p : all) present.insert(fs::path(p).filename().string());
      for (uint32_t i = 0; i < h.shard_count && i < 100000; ++i) {
        const std::string name = shard_file_name(i, h.shard_count, "trs");
        if (!present.count(name))
          throw ShardError(fmt::format(
              "{}: missing: {} says the table has {} shards, the folder holds {}; the table is incomplete (a shard "
              "lost in a copy, or storage that went away mid-run); refusing to train on a short table. Restore the "
              "missing shards, or generate the table again",
              (fs::path(s.path()).parent_path() / name).string(), s.path(), h.shard_count, all.size()));
      }
      throw ShardError(fmt::format(
          "{}: its header says it is shard {} of {}, but it is number {} of the {} part-*.trs files in {}: the table is "
          "incomplete (a shard lost in a copy, or storage that went away mid-run); refusing to train on a short table. "
          "Restore the missing shards, or generate the table again",
          s.path(), h.shard_index, h.shard_count, position, all.size(), fs::path(s.path()).parent_path().string()));
    }
    if (k > 0 && h.total_rows != total)
      throw ShardError(fmt::format("{}: its header says the table has {} rows, {} says {}: shards of two tables?",
                                   s.path(), h.total_rows, shards.shards.front().path(), total));
    total = h.total_rows;
  }
}

void check_against_description(const RankShards& shards, const TableDescription& table, const std::string& dir) {
  const std::string where = (fs::path(dir) / "_trainrt_table.json").string();
  if (!shards.shards.empty() && shards.features != table.features)
    throw ShardError(fmt::format("{}: field 'features' is {}, but the shards hold {}", where, table.features,
                                 shards.features));
  if (!shards.parquet.empty() && shards.features != table.features)
    throw ShardError(fmt::format("{}: field 'features' is {}, but the Parquet files hold {} feature columns", where,
                                 table.features, shards.features));
  auto check_rows = [&](const std::string& path, uint64_t rows) {
    const std::string name = fs::path(path).filename().string();
    auto it = table.shard_rows.find(name);
    if (it != table.shard_rows.end() && it->second != rows)
      throw ShardError(fmt::format("{}: lists {} rows for {}, which holds {}", where, it->second, name, rows));
  };
  for (const auto& s : shards.shards) check_rows(s.path(), s.rows());
  for (const auto& s : shards.parquet) check_rows(s.path(), s.rows());
}

void check_parquet_names(const std::vector<std::string>& all) {
  std::set<std::string> present;
  uint32_t count = 0;
  for (const auto& p : all) {
    const std::string name = fs::path(p).filename().string();
    unsigned index = 0, of = 0;
    char tail[16] = {};
    if (std::sscanf(name.c_str(), "part-%5u-of-%5u.%15s", &index, &of, tail) != 3 || std::string(tail) != "parquet" ||
        name != shard_file_name(index, of, "parquet"))
      return;  // not trainrt's naming: another tool's table
    count = of;
    present.insert(name);
  }
  for (uint32_t i = 0; i < count && i < 100000; ++i) {
    const std::string name = shard_file_name(i, count, "parquet");
    if (!present.count(name))
      throw ShardError(fmt::format(
          "{}: missing: the folder's Parquet files are named as {} shards, it holds {}; the table is incomplete (a "
          "file lost in a copy, or storage that went away mid-run); refusing to train on a short table",
          (fs::path(all.front()).parent_path() / name).string(), count, all.size()));
  }
}

ParquetShard ParquetShard::open(const std::string& path, const std::string& label) {
  ParquetShard s;
  s.path_ = path;
  s.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (s.fd_ < 0) throw ShardError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (auto err = parquet::read_footer(s.fd_, s.info_); !err.empty()) throw ShardError(fmt::format("{}: {}", path, err));
  const auto& cols = s.info_.columns;
  const auto it = std::find(cols.begin(), cols.end(), label);
  if (it == cols.end()) {
    std::string names;
    for (size_t i = 0; i < cols.size() && i < 20; ++i) names += (i ? ", " : "") + cols[i];
    if (cols.size() > 20) names += fmt::format(", ... ({} in all)", cols.size());
    throw ShardError(fmt::format("{}: no label column '{}' (its columns: {}); name the label column with --label", path,
                                 label, names.empty() ? "none" : names));
  }
  if (cols.size() < 2) throw ShardError(fmt::format("{}: no feature columns besides the label '{}'", path, label));
  s.label_ = static_cast<size_t>(it - cols.begin());
  uint64_t first = 0;
  for (const auto& g : s.info_.meta.row_groups) {
    s.group_first_.push_back(first);
    first += static_cast<uint64_t>(g.num_rows);
  }
  return s;
}

ParquetShard::ParquetShard(ParquetShard&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(std::exchange(o.fd_, -1)),
      info_(std::move(o.info_)),
      label_(o.label_),
      group_first_(std::move(o.group_first_)) {}

ParquetShard& ParquetShard::operator=(ParquetShard&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
    info_ = std::move(o.info_);
    label_ = o.label_;
    group_first_ = std::move(o.group_first_);
  }
  return *this;
}

ParquetShard::~ParquetShard() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> ParquetShard::feature_names() const {
  std::vector<std::string> out;
  for (size_t c = 0; c < info_.columns.size(); ++c)
    if (c != label_) out.push_back(info_.columns[c]);
  return out;
}

void ParquetShard::read_rows(uint64_t begin, uint64_t end, float* x, float* y, GroupCache& cache) const {
  const size_t f = features();
  // The first group holding row `begin`: the last whose first row is not after it.
  size_t g = static_cast<size_t>(std::upper_bound(group_first_.begin(), group_first_.end(), begin) -
                                 group_first_.begin());
  g = g > 0 ? g - 1 : 0;
  for (uint64_t at = begin; at < end; ++g) {
    if (g >= group_first_.size()) throw ShardError(fmt::format("{}: rows {}..{} lie past its row groups", path_, at, end));
    const uint64_t rows = group_rows(g), first = group_first_[g];
    if (rows == 0) continue;
    if (cache.file != this || cache.group != g) {
      cache.file = nullptr;
      if (auto err = parquet::read_row_group(fd_, info_, g, cache.columns); !err.empty())
        throw ShardError(fmt::format("{}: {}", path_, err));
      cache.file = this;
      cache.group = g;
    }
    const uint64_t from = at - first, n = std::min(end, first + rows) - at;
    const float* cols = cache.columns.data();
    float* xo = x + (at - begin) * f;
    std::memcpy(y + (at - begin), cols + label_ * rows + from, n * sizeof(float));
    // Column-major to row-major in blocks of rows, so that each column's run and the rows written
    // stay in cache.
    constexpr uint64_t kBlock = 256;
    for (uint64_t r0 = 0; r0 < n; r0 += kBlock) {
      const uint64_t r1 = std::min(n, r0 + kBlock);
      size_t j = 0;
      for (size_t c = 0; c < info_.columns.size(); ++c) {
        if (c == label_) continue;
        const float* col = cols + c * rows + from;
        for (uint64_t r = r0; r < r1; ++r) xo[r * f + j] = col[r];
        ++j;
      }
    }
    at += n;
  }
}

RankShards open_parquet_shards(const std::vector<std::string>& paths, const std::string& label) {
  RankShards out;
  for (const auto& p : paths) {
    ParquetShard s = ParquetShard::open(p, label);
    if (!out.parquet.empty() && s.info().columns != out.parquet.front().info().columns)
      throw ShardError(fmt::format("{}: its columns differ from {}'s (names, order or count): files of two tables?",
                                   p, out.parquet.front().path()));
    out.features = s.features();
    out.rows += s.rows();
    out.parquet.push_back(std::move(s));
  }
  return out;
}

RankShards open_rank_shards(const std::vector<std::string>& paths, bool verify, int threads) {
  std::vector<std::optional<MappedShard>> opened(paths.size());
  std::vector<std::string> errors(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      try {
        opened[i].emplace(MappedShard::open(paths[i], verify));
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t n_threads = std::min<size_t>(paths.size(), threads > 0 ? static_cast<unsigned>(threads) : hw);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();

  std::string problems;
  for (const auto& e : errors) {
    if (!e.empty()) problems += (problems.empty() ? "" : "\n") + e;
  }
  if (!problems.empty()) throw ShardError(problems);

  RankShards out;
  for (auto& s : opened) {
    if (out.shards.empty()) {
      out.features = s->features();
    } else if (s->features() != out.features) {
      throw ShardError(fmt::format("{} has {} features but {} has {}", s->path(), s->features(),
                                   out.shards.front().path(), out.features));
    }
    out.rows += s->rows();
    out.shards.push_back(std::move(*s));
  }
  return out;
}

void split_rows(const RankShards& shards, double eval_fraction, uint64_t max_batch_rows, std::vector<RowRange>& train,
                std::vector<RowRange>& eval) {
  max_batch_rows = std::max<uint64_t>(max_batch_rows, 1);
  auto cut = [&](const MappedShard* s, uint64_t begin, uint64_t end, std::vector<RowRange>& out) {
    for (uint64_t at = begin; at < end;) {
      const uint64_t stop = end - at > max_batch_rows ? at + max_batch_rows : end;
      out.push_back({s, at, stop});
      at = stop;
    }
  };
  for (const auto& s : shards.shards) {
    const auto held_out = static_cast<uint64_t>(std::floor(static_cast<double>(s.rows()) * eval_fraction));
    cut(&s, 0, s.rows() - held_out, train);
    cut(&s, s.rows() - held_out, s.rows(), eval);
  }
  for (const auto& s : shards.parquet) {
    const auto held_out = static_cast<uint64_t>(std::floor(static_cast<double>(s.rows()) * eval_fraction));
    const uint64_t split = s.rows() - held_out;
    for (uint64_t at = 0; at < s.rows();) {
      const uint64_t stop_at = at < split ? split : s.rows();
      const uint64_t stop = stop_at - at > max_batch_rows ? at + max_batch_rows : stop_at;
      (at < split ? train : eval).push_back({nullptr, at, stop, &s});
      at = stop;
    }
  }
}

RowCounts count_rows(const RankShards& shards, double eval_fraction) {
  std::vector<RowRange> train;
  std::vector<RowRange> eval;
  split_rows(shards, eval_fraction, UINT64_MAX, train, eval);
  RowCounts c;
  for (const auto& r : train) c.train += r.rows();
  for (const auto& r : eval) c.eval += r.rows();
  return c;
}

TrainData build_train_data(const RankShards& shards, const DataOptions& o) {
  std::vector<RowRange> train;
  std::vector<RowRange> eval;
  const uint64_t batch_rows = kBatchBytes / (uint64_t{std::max<uint32_t>(shards.features, 1)} * sizeof(float));
  split_rows(shards, o.eval_fraction, batch_rows, train, eval);
  TrainData d;
  for (const auto& r : train) d.train_rows += r.rows();
  for (const auto& r : eval) d.eval_rows += r.rows();
  if (d.train_rows == 0) throw ShardError("the shards of this rank hold no training rows");
  if (o.quantile) {
    d.train = quantile_dmatrix(train, o, nullptr);
    if (d.eval_rows > 0) d.eval = quantile_dmatrix(eval, o, d.train.get());
  } else {
    d.train = dense_dmatrix(coalesce(train), shards.features, o);
    if (d.eval_rows > 0) d.eval = dense_dmatrix(coalesce(eval), shards.features, o);
  }
  for (const auto& s : shards.shards) s.release_all();
  return d;
}

}  // namespace trainrt
