#pragma once
// A Parquet writer for tables of required FLOAT columns: PLAIN encoding, pages uncompressed or
// compressed with snappy or zstd (parquet_codec.h), data pages v1 with CRCs, min/max statistics.
// It does no I/O: row groups are encoded in memory (in parallel if the caller likes), then
// appended to the file in order, and the footer is built from what was appended.
//
//   "PAR1" | row group 0 | row group 1 | ... | FileMetaData | footer length (u32 LE) | "PAR1"
//   row group = for each column, its pages: PageHeader | values (rows x float32 LE, maybe compressed)
//
// An uncompressed page's values are not copied: the encoded row group refers to them where the
// caller keeps its column-major data, and its spans (headers, values) go to the file with one
// writev. Compressed pages are built in the row group's own buffer.
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "formats/parquet_format.h"

namespace trainrt::parquet {

/// Values per data page: 128k floats = 512 KiB, near the 1 MiB pages most writers make.
inline constexpr uint32_t kDefaultPageValues = 1u << 17;

/// BufferAllocator's memory: operator new below 2 MiB, else a mapping advised into huge pages.
void* allocate_bytes(size_t bytes);
void deallocate_bytes(void* p, size_t bytes);

/// Memory for large, reused writer buffers: from 2 MiB up, anonymous mappings in transparent huge
/// pages (one page fault per 2 MiB rather than per 4 KiB); and elements that a resize() adds are left
/// uninitialised rather than zero-filled, since the writer overwrites them.
template <typename T>
struct BufferAllocator {
  using value_type = T;
  BufferAllocator() = default;
  template <typename U>
  BufferAllocator(const BufferAllocator<U>&) {}  // NOLINT(google-explicit-constructor): allocator rebinding
  T* allocate(size_t n) { return static_cast<T*>(allocate_bytes(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { deallocate_bytes(p, n * sizeof(T)); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialised: no zero fill
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const BufferAllocator<U>&) const {
    return true;
  }
};
using ByteBuffer = std::vector<uint8_t, BufferAllocator<uint8_t>>;

struct EncodeOptions {
  uint32_t page_values = kDefaultPageValues;
  int32_t codec = kUncompressed;  ///< kUncompressed, kSnappy or kZstd
};

/// One row group, encoded; offsets in `chunks` are relative to the start of the row group.
struct EncodedRowGroup {
  /// A run of the row group's bytes: `size` bytes at `external` (the caller's values) or, when
  /// that is null, at bytes[offset].
  struct Span {
    const void* external = nullptr;
    size_t offset = 0, size = 0;
  };
  ByteBuffer bytes;         ///< page headers and compressed pages (reused from group to group)
  std::vector<Span> spans;  ///< the row group in file order
  uint64_t rows = 0;
  std::vector<ColumnChunk> chunks;

  /// The row group's length in the file.
  uint64_t size() const;
  /// Where span `s` starts in memory (valid until `bytes` or the caller's data change).
  const void* data(const Span& s) const { return s.external ? s.external : bytes.data() + s.offset; }
};

/// Encodes a row group from column-major floats (column c, row r at column_major[c * rows + r]).
/// Uncompressed pages refer to `column_major`, which must outlive the use of `out`.
void encode_row_group(const float* column_major, uint64_t rows, size_t columns, EncodedRowGroup& out,
                      const EncodeOptions& options);

/// The same, with every byte copied into out.bytes (one span): for small files and tests.
void encode_row_group(const float* column_major, uint64_t rows, size_t columns, EncodedRowGroup& out,
                      uint32_t page_values = kDefaultPageValues);

/// Collects row groups as they are placed in a file and builds the footer.
class FileWriter {
 public:
  FileWriter(std::vector<std::string> column_names, std::vector<std::pair<std::string, std::string>> key_values,
             std::string created_by);

  /// The four bytes a file starts with; row group data follows at offset 4.
  static std::string header() { return std::string(kMagic, 4); }
  /// Records a row group whose bytes the caller wrote at `file_offset`.
  void add_row_group(const EncodedRowGroup& group, uint64_t file_offset);
  uint64_t rows() const { return meta_.num_rows; }
  /// FileMetaData, its length and the closing magic: the last bytes of the file.
  std::vector<uint8_t> footer() const;

 private:
  FileMetaData meta_;
};

}  // namespace trainrt::parquet
