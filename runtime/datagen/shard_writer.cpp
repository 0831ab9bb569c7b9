#include "datagen/shard_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "datagen/inspect.h"
#include "datagen/table.h"
#include "formats/shard_format.h"

namespace trainrt::datagen {

namespace {

/// Rows transposed at a time from a whole row group generated row-major (tile_rows 0).
constexpr uint64_t kTransposeRows = 128;

/// A block of rows of one shard: a native block or a Parquet row group.
struct Piece {
  size_t task = 0;
  uint64_t first_row = 0, rows = 0;
  bool first_of_shard = false, last_of_shard = false;
};

/// Floats in memory that stays mapped from block to block: an anonymous mapping in 2 MiB huge pages
/// where the kernel gives them (transparent huge pages, "madvise" mode), so a 32 MiB buffer costs
/// 16 page faults rather than 8192, and nothing is zero-filled twice. Grows, never shrinks.
class FloatBuffer {
 public:
  FloatBuffer() = default;
  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;
  ~FloatBuffer() { release(); }

  /// At least `count` floats; the contents are kept only while the buffer does not grow.
  float* get(uint64_t count) {
    const size_t bytes = std::max<size_t>(count * sizeof(float), 1);
    if (bytes > bytes_) {
      release();
      constexpr size_t kHuge = size_t{2} << 20;
      const size_t want = (bytes + kHuge - 1) / kHuge * kHuge;
      void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      ::madvise(p, want, MADV_HUGEPAGE);  // advice only: without huge pages it is ordinary memory
#endif
      data_ = static_cast<float*>(p);
      bytes_ = want;
    }
    return data_;
  }
  float* data() const { return data_; }

 private:
  void release() {
    if (data_) ::munmap(data_, bytes_);
    data_ = nullptr;
    bytes_ = 0;
  }
  float* data_ = nullptr;
  size_t bytes_ = 0;
};

struct Slot {
  int64_t ready = -1;  ///< the piece whose data the slot holds
  /// Native and dry run: the features row-major and the labels. Parquet: every column, column-major,
  /// label last (the encoded row group's uncompressed pages point into it).
  FloatBuffer features, labels;
  parquet::EncodedRowGroup group;
  uint64_t checksum_terms = 0;  ///< dry run: the piece's rows' checksum terms, summed
};

/// Rows [r0, r0 + n) of a row-major tile (n x f features, n labels) into a column-major row group of
/// `rows` rows: column c at columns[c * rows]. The tile is small enough to stay in L1/L2, so the
/// strided reads are cheap and every column is written sequentially.
/// Columns [c0, f) of tile rows [i0, n), one element at a time.
void tile_to_columns_scalar(const float* tile, uint64_t n, uint32_t f, float* columns, uint64_t rows, uint64_t r0,
                            uint64_t i0, uint32_t c0) {
  for (uint32_t c = c0; c < f; ++c) {
    float* dst = columns + c * rows + r0;
    const float* src = tile + c;
    for (uint64_t i = i0; i < n; ++i) dst[i] = src[i * f];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
/// 8 x 8 blocks transposed in AVX registers (8 loads, 24 shuffles, 8 stores for 64 values, against
/// 64 strided loads and stores); the ragged edges go through the scalar loop.
__attribute__((target("avx"))) void tile_to_columns_avx(const float* tile, uint64_t n, uint32_t f, float* columns,
                                                        uint64_t rows, uint64_t r0) {
  const uint64_t n8 = n / 8 * 8;
  const uint32_t f8 = f / 8 * 8;
  for (uint64_t i = 0; i < n8; i += 8) {
    for (uint32_t c = 0; c < f8; c += 8) {
      const float* s = tile + i * f + c;
      const __m256 a0 = _mm256_loadu_ps(s), a1 = _mm256_loadu_ps(s + f), a2 = _mm256_loadu_ps(s + 2 * f),
                   a3 = _mm256_loadu_ps(s + 3 * f), a4 = _mm256_loadu_ps(s + 4 * f), a5 = _mm256_loadu_ps(s + 5 * f),
                   a6 = _mm256_loadu_ps(s + 6 * f), a7 = _mm256_loadu_ps(s + 7 * f);
      const __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1), t2 = _mm256_unpacklo_ps(a2, a3),
                   t3 = _mm256_unpackhi_ps(a2, a3), t4 = _mm256_unpacklo_ps(a4, a5), t5 = _mm256_unpackhi_ps(a4, a5),
                   t6 = _mm256_unpacklo_ps(a6, a7), t7 = _mm256_unpackhi_ps(a6, a7);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                   u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                   u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                   u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
                   u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)),
                   u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
                   u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)),
                   u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
      float* d = columns + c * rows + r0 + i;
      _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(d + rows, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(d + 2 * rows, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(d + 3 * rows, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(d + 4 * rows, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(d + 5 * rows, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(d + 6 * rows, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(d + 7 * rows, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
  }
  if (f8 < f) {  // the last columns of the full row blocks
    for (uint32_t c = f8; c < f; ++c) {
      float* dst = columns + c * rows + r0;
      for (uint64_t i = 0; i < n8; ++i) dst[i] = tile[i * f + c];
    }
  }
  tile_to_columns_scalar(tile, n, f, columns, rows, r0, n8, 0);  // the last rows
}
#endif

void tile_to_columns(const float* tile, const float* labels, uint64_t n, uint32_t f, float* columns, uint64_t rows,
                     uint64_t r0) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx = __builtin_cpu_supports("avx");
  if (avx)
    tile_to_columns_avx(tile, n, f, columns, rows, r0);
  else
#endif
    tile_to_columns_scalar(tile, n, f, columns, rows, r0, 0, 0);
  std::memcpy(columns + uint64_t{f} * rows + r0, labels, n * sizeof(float));
}

/// A shard being written under its temporary name.
class OpenShard {
 public:
  OpenShard(std::string tmp, std::string final_path) : tmp_(std::move(tmp)), final_(std::move(final_path)) {
    // A temporary file left by a killed run is removed, not reused: O_EXCL | O_NOFOLLOW then write
    // into a fresh file of our own, never through a link someone left under that name.
    if (::unlink(tmp_.c_str()) != 0 && errno != ENOENT) fail("cannot remove the stale temporary file", 0);
    fd_ = ::open(tmp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create", 0);
  }
  ~OpenShard() {  // not committed (a failure): no half-written temporary file is left behind
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  OpenShard(const OpenShard&) = delete;
  OpenShard& operator=(const OpenShard&) = delete;

  void write(const void* data, size_t bytes) {
    auto p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, p, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) errno = EIO;
      if (n <= 0) fail("cannot write", written_);
      p += n;
      bytes -= static_cast<size_t>(n);
      written_ += static_cast<uint64_t>(n);
    }
  }
  void write_at(const void* data, size_t bytes, uint64_t offset) {
    auto p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) errno = EIO;
      if (n <= 0) fail("cannot write", offset);
      p += n;
      bytes -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
  }
  /// Appends a Parquet row group's spans with as few system calls as the kernel allows.
  void write(const parquet::EncodedRowGroup& group) {
    std::vector<iovec> iov;
    iov.reserve(group.spans.size());
    for (const auto& s : group.spans)
      if (s.size > 0) iov.push_back({const_cast<void*>(group.data(s)), s.size});
    size_t next = 0;
    while (next < iov.size()) {
      const int count = static_cast<int>(std::min<size_t>(iov.size() - next, IOV_MAX));
      const ssize_t n = ::writev(fd_, iov.data() + next, count);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) errno = EIO;
      if (n <= 0) fail("cannot write", written_);
      written_ += static_cast<uint64_t>(n);
      for (size_t left = static_cast<size_t>(n); left > 0;) {  // drop what went out, keep the rest
        if (left >= iov[next].iov_len) {
          left -= iov[next].iov_len;
          ++next;
        } else {
          iov[next].iov_base = static_cast<char*>(iov[next].iov_base) + left;
          iov[next].iov_len -= left;
          left = 0;
        }
      }
    }
  }
  uint64_t written() const { return written_; }
  /// Starts writing bytes [offset, offset + bytes) to the device without waiting (Linux), so that the
  /// fsync before the rename finds most of the shard already on disk: the disk works while the
  /// next blocks are generated. Advice only: failures show up in fsync.
  void start_writeback(uint64_t offset, uint64_t bytes) const {
#ifdef SYNC_FILE_RANGE_WRITE
    ::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes), SYNC_FILE_RANGE_WRITE);
#else
    (void)offset;
    (void)bytes;
#endif
  }
  void read_at(void* data, size_t bytes, uint64_t offset) const {
    auto p = static_cast<char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) errno = EIO;  // shorter than written: truncated under us
      if (n <= 0) fail("cannot read back", offset);
      p += n;
      bytes -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
  }

  /// fsyncs (with `sync`) and closes the file, renames it into place, and (with `sync`) fsyncs the folder.
  /// Every result is checked: close() is where NFS and FUSE file systems (gcsfuse uploads then) report
  /// a failed write.
  void commit(bool sync) {
    if (sync && ::fsync(fd_) != 0) fail("cannot fsync", written_);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int err = errno;
      ::unlink(tmp_.c_str());
      errno = err;
      fail("cannot close", written_);
    }
    if (::rename(tmp_.c_str(), final_.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp_.c_str());
      throw StorageError(fmt::format("cannot rename {} to {}: {}", tmp_, final_, std::strerror(err)));
    }
    if (sync) sync_folder(std::filesystem::path(final_).parent_path().string());
  }

 private:
  [[noreturn]] void fail(const char* what, uint64_t offset) const {
    const int err = errno;
    throw StorageError(fmt::format("{} {} (at byte {}): {}", what, tmp_, offset, std::strerror(err)));
  }

  std::string tmp_, final_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

/// Where a native shard's labels start: after the header and the features.
uint64_t label_offset(const ShardTask& task, uint32_t features) {
  return sizeof(ShardHeader) + task.rows * features * sizeof(float);
}

std::vector<Piece> cut_pieces(const std::vector<ShardTask>& tasks, uint64_t block_rows) {
  std::vector<Piece> pieces;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const ShardTask& task = tasks[t];
    for (uint64_t done = 0; done < task.rows || (done == 0 && task.rows == 0);) {
      Piece p;
      p.task = t;
      p.first_row = task.first_row + done;
      p.rows = std::min(block_rows, task.rows - done);
      p.first_of_shard = done == 0;
      done += p.rows;
      p.last_of_shard = done >= task.rows;
      pieces.push_back(p);
      if (task.rows == 0) break;
    }
  }
  return pieces;
}

/// The writer's side of a shard: native or Parquet.
class ShardSink {
 public:
  ShardSink(const Model& model, const WriteOptions& opt) : model_(model), opt_(opt) {}

  void begin(const ShardTask& task) {
    task_ = task;
    hasher_ = PayloadHasher{};
    file_ = std::make_unique<OpenShard>(temp_shard_path(opt_.dir, task.index, opt_.layout),
                                        shard_path(opt_.dir, task.index, opt_.layout));
    if (opt_.layout.format == Format::kParquet) {
      const Spec& s = model_.spec;
      parquet_ = std::make_unique<parquet::FileWriter>(
          column_names(s.features),
          std::vector<std::pair<std::string, std::string>>{
              {"trainrt.table", fingerprint(to_json(s, opt_.layout))},
              {"trainrt.first_row", std::to_string(task.first_row)},
              {"trainrt.total_rows", std::to_string(s.rows)},
              {"trainrt.shard", fmt::format("{}/{}", task.index, opt_.layout.shards)},
              {"trainrt.seed", std::to_string(s.seed)}},
          "trainrt datagen");
      const std::string magic = parquet::FileWriter::header();
      file_->write(magic.data(), magic.size());
    }
  }

  void add(const Piece& piece, const Slot& slot) {
    if (opt_.layout.format == Format::kNative) {
      // Features and labels to their places; the features hashed now, in row order.
      const uint64_t row_in_shard = piece.first_row - task_.first_row, f = model_.spec.features;
      const size_t bytes = piece.rows * f * sizeof(float);
      if (piece.rows == 0) return;
      file_->write_at(slot.features.data(), bytes, sizeof(ShardHeader) + row_in_shard * f * sizeof(float));
      file_->write_at(slot.labels.data(), piece.rows * sizeof(float),
                      label_offset(task_, model_.spec.features) + row_in_shard * sizeof(float));
      hasher_.update(slot.features.data(), bytes);
      if (opt_.fsync) file_->start_writeback(sizeof(ShardHeader) + row_in_shard * f * sizeof(float), bytes);
    } else if (piece.rows > 0) {
      const uint64_t offset = file_->written();
      file_->write(slot.group);
      parquet_->add_row_group(slot.group, offset);
      if (opt_.fsync) file_->start_writeback(offset, file_->written() - offset);
    }
  }

  void finish() {
    if (opt_.layout.format == Format::kNative) {
      // The labels follow the features in the payload: read them back to hash them last.
      std::vector<char> buf(1u << 20);
      const uint64_t end = native_shard_bytes(task_.rows, model_.spec.features);
      for (uint64_t at = label_offset(task_, model_.spec.features); at < end; at += buf.size()) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - at));
        file_->read_at(buf.data(), n, at);
        hasher_.update(buf.data(), n);
      }
      ShardHeader h = make_shard_header(model_.spec.features, task_.rows, task_.first_row, model_.spec.rows,
                                        model_.spec.seed, task_.index, opt_.layout.shards);
      h.payload_fnv = hasher_.digest();
      file_->write_at(&h, sizeof h, 0);
    } else {
      const std::vector<uint8_t> footer = parquet_->footer();
      file_->write(footer.data(), footer.size());
    }
    file_->commit(opt_.fsync);
    file_.reset();
  }

 private:
  const Model& model_;
  const WriteOptions& opt_;
  ShardTask task_;
  std::unique_ptr<OpenShard> file_;
  PayloadHasher hasher_;
  std::unique_ptr<parquet::FileWriter> parquet_;
};

/// Worker threads fill slots in a ring; the calling thread writes them out in order.
class Pipeline {
 public:
  Pipeline(const Model& model, const std::vector<ShardTask>& tasks, const std::vector<RowSource>& sources,
           const WriteOptions& opt)
      : model_(model),
        tasks_(tasks),
        sources_(sources),
        opt_(opt),
        pieces_(cut_pieces(tasks, max_block_rows(model.spec.features, opt))),
        slots_(2 * sources.size() + 1) {}

  uint64_t checksum_terms() const { return checksum_terms_; }

  void run() {
    // With writer_generates, sources[0] belongs to the writing thread (see write_all).
    const size_t first_worker = helping_writer() ? 1 : 0;
    std::vector<std::thread> workers;
    for (size_t w = first_worker; w < sources_.size(); ++w) workers.emplace_back([this, w] { work(w); });
    try {
      write_all();
    } catch (...) {
      fail(std::current_exception());
    }
    for (auto& t : workers) t.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  /// A thread's buffers for making pieces.
  struct Scratch {
    std::vector<float> tile, tile_labels;
    FloatBuffer whole, whole_labels;
  };

  bool helping_writer() const { return opt_.writer_generates && sources_.size() > 1; }

  void fail(std::exception_ptr e) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = e;
    cv_.notify_all();
  }

  void work(size_t w) {
    Scratch scratch;
    for (;;) {
      const size_t p = next_.fetch_add(1);
      if (p >= pieces_.size()) return;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return error_ || p < consumed_ + slots_.size(); });
        if (error_) return;
      }
      try {
        make(p, sources_[w], scratch);
      } catch (...) {
        fail(std::current_exception());
        return;
      }
      ready(p);
    }
  }

  void ready(size_t p) {
    std::lock_guard lock(mu_);
    slots_[p % slots_.size()].ready = static_cast<int64_t>(p);
    cv_.notify_all();
  }

  /// Makes piece `p` in its slot with `source`: rows for native shards and dry runs, an encoded row
  /// group for Parquet, where rows come from the source a tile at a time (or, with tile_rows 0, a
  /// whole row group into `whole`) and are spread into the slot's column-major buffer.
  void make(size_t p, const RowSource& source, Scratch& s) {
    Slot& slot = slots_[p % slots_.size()];
    const uint32_t f = model_.spec.features;
    const Piece& piece = pieces_[p];
    if (opt_.dry_run || opt_.layout.format == Format::kNative) {
      float* features = slot.features.get(piece.rows * f);
      float* labels = slot.labels.get(piece.rows);
      if (piece.rows > 0) source(piece.first_row, piece.rows, features, labels);
      if (opt_.dry_run) slot.checksum_terms = rows_checksum(piece.first_row, features, labels, piece.rows, f);
      return;
    }
    if (piece.rows == 0) return;
    const uint64_t rows = piece.rows;
    float* columns = slot.features.get(rows * (f + 1));
    if (opt_.columns && opt_.columns(piece.first_row, rows, columns, rows)) {
      // made in place, column by column
    } else if (opt_.tile_bytes == 0) {
      float* x = s.whole.get(rows * f);
      float* y = s.whole_labels.get(rows);
      source(piece.first_row, rows, x, y);
      for (uint64_t r0 = 0; r0 < rows; r0 += kTransposeRows)
        tile_to_columns(x + r0 * f, y + r0, std::min(kTransposeRows, rows - r0), f, columns, rows, r0);
    } else {
      const uint64_t tile_rows = std::max<uint64_t>(8, opt_.tile_bytes / (4 * (uint64_t{f} + 1)));
      s.tile.resize(tile_rows * f);
      s.tile_labels.resize(tile_rows);
      for (uint64_t r0 = 0; r0 < rows; r0 += tile_rows) {
        const uint64_t n = std::min<uint64_t>(tile_rows, rows - r0);
        source(piece.first_row + r0, n, s.tile.data(), s.tile_labels.data());
        tile_to_columns(s.tile.data(), s.tile_labels.data(), n, f, columns, rows, r0);
      }
    }
    parquet::EncodeOptions encode;
    encode.page_values = opt_.page_values;
    encode.codec = opt_.layout.compression;
    parquet::encode_row_group(columns, rows, f + 1, slot.group, encode);
  }

  /// Waits until piece `p` is ready to write. A helping writer makes the next unclaimed piece
  /// itself meanwhile, when that piece's slot is free; the exception of a piece it makes is thrown
  /// from here. Returns false when another thread failed.
  bool await(size_t p, Scratch& scratch) {
    const Slot& slot = slots_[p % slots_.size()];
    std::unique_lock lock(mu_);
    for (;;) {
      if (error_) return false;
      if (slot.ready == static_cast<int64_t>(p)) return true;
      size_t n = next_.load();
      if (helping_writer() && n < pieces_.size() && n < consumed_ + slots_.size() &&
          next_.compare_exchange_strong(n, n + 1)) {
        lock.unlock();
        make(n, sources_[0], scratch);
        lock.lock();
        slots_[n % slots_.size()].ready = static_cast<int64_t>(n);
        cv_.notify_all();
        continue;
      }
      cv_.wait(lock);
    }
  }

  void write_all() {
    ShardSink sink(model_, opt_);
    Scratch scratch;
    uint64_t rows = 0;
    for (size_t p = 0; p < pieces_.size(); ++p) {
      Slot& slot = slots_[p % slots_.size()];
      if (!await(p, scratch)) return;
      const Piece& piece = pieces_[p];
      if (opt_.dry_run) {
        checksum_terms_ += slot.checksum_terms;
      } else {
        if (piece.first_of_shard) sink.begin(tasks_[piece.task]);
        sink.add(piece, slot);
        if (piece.last_of_shard) sink.finish();
      }
      rows += piece.rows;
      {
        std::lock_guard lock(mu_);
        consumed_ = p + 1;
        cv_.notify_all();
      }
      if (opt_.on_rows) opt_.on_rows(rows);
      if (piece.last_of_shard && opt_.on_shard && !opt_.dry_run) opt_.on_shard(tasks_[piece.task]);
    }
  }

  const Model& model_;
  const std::vector<ShardTask>& tasks_;
  const std::vector<RowSource>& sources_;
  const WriteOptions& opt_;
  std::vector<Piece> pieces_;
  std::vector<Slot> slots_;
  std::atomic<size_t> next_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  size_t consumed_ = 0;
  std::exception_ptr error_;
  uint64_t checksum_terms_ = 0;
};

}  // namespace

uint64_t max_block_rows(uint32_t features, const WriteOptions& opt) {
  const uint64_t row_bytes = 4 * (uint64_t{features} + 1);
  if (opt.dry_run || opt.layout.format == Format::kNative) return std::max<uint64_t>(1, opt.block_bytes / row_bytes);
  return std::clamp<uint64_t>(opt.row_group_bytes / row_bytes, 1, uint64_t{1} << 20);
}

uint64_t write_shards(const Model& model, const std::vector<ShardTask>& tasks, const std::vector<RowSource>& sources,
                      const WriteOptions& opt) {
  if (sources.empty()) throw std::invalid_argument("write_shards needs at least one row source");
  Pipeline pipeline(model, tasks, sources, opt);
  pipeline.run();
  return pipeline.checksum_terms();
}

}  // namespace trainrt::datagen
