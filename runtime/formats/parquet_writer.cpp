#include "formats/parquet_writer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdexcept>

#include "formats/parquet_codec.h"

namespace trainrt::parquet {

namespace {

std::string float_bytes(float f) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &f, 4);
  return s;
}

/// Parquet's rule for float statistics: a zero minimum is written -0.0 and a zero maximum +0.0,
/// so readers need not know which zero the column holds.
void set_min_max(ColumnChunk& c, float lo, float hi) {
  if (lo == 0.0f) lo = -0.0f;
  if (hi == 0.0f) hi = 0.0f;
  c.has_min_max = true;
  c.min_value = float_bytes(lo);
  c.max_value = float_bytes(hi);
}

/// The smallest and largest of n > 0 floats (no NaNs among them). Eight running minima and maxima in
/// two SSE registers: one running pair is a serial chain of scalar minss/maxss (GCC does not vectorise
/// a float min reduction without -ffast-math), and for numbers the order of comparisons does not change
/// the result.
void min_max(const float* v, uint64_t n, float& lo, float& hi) {
  float l[8], h[8];
  for (int k = 0; k < 8; ++k) l[k] = h[k] = v[0];
  uint64_t r = 0;
#ifdef __SSE2__
  // _mm_min_ps(a, b) is a < b ? a : b lane by lane, the scalar loop's expression.
  __m128 l0 = _mm_set1_ps(v[0]), l1 = l0, h0 = l0, h1 = l0;
  for (; r + 8 <= n; r += 8) {
    const __m128 a = _mm_loadu_ps(v + r), b = _mm_loadu_ps(v + r + 4);
    l0 = _mm_min_ps(a, l0);
    l1 = _mm_min_ps(b, l1);
    h0 = _mm_max_ps(a, h0);
    h1 = _mm_max_ps(b, h1);
  }
  _mm_storeu_ps(l, l0);
  _mm_storeu_ps(l + 4, l1);
  _mm_storeu_ps(h, h0);
  _mm_storeu_ps(h + 4, h1);
#else
  for (; r + 8 <= n; r += 8)
    for (int k = 0; k < 8; ++k) {
      l[k] = v[r + k] < l[k] ? v[r + k] : l[k];
      h[k] = v[r + k] > h[k] ? v[r + k] : h[k];
    }
#endif
  for (; r < n; ++r) {
    l[0] = v[r] < l[0] ? v[r] : l[0];
    h[0] = v[r] > h[0] ? v[r] : h[0];
  }
  lo = l[0];
  hi = h[0];
  for (int k = 1; k < 8; ++k) {
    lo = l[k] < lo ? l[k] : lo;
    hi = h[k] > hi ? h[k] : hi;
  }
}

/// Room kept before a compressed page for its header, which is written once the page's size and
/// CRC are known (a v1 data page header takes at most 45 bytes).
constexpr size_t kHeaderRoom = 64;

/// Appends a span of out.bytes, merged with the last span when the two touch.
void add_own_span(EncodedRowGroup& out, size_t offset, size_t size) {
  if (!out.spans.empty()) {
    EncodedRowGroup::Span& last = out.spans.back();
    if (!last.external && last.offset + last.size == offset) {
      last.size += size;
      return;
    }
  }
  out.spans.push_back({nullptr, offset, size});
}

void encode(const float* column_major, uint64_t rows, size_t columns, EncodedRowGroup& out, const EncodeOptions& opt,
            bool copy_values) {
  if (opt.page_values == 0) throw std::invalid_argument("page_values must be positive");
  if (opt.codec != kUncompressed && opt.codec != kSnappy && opt.codec != kZstd)
    throw std::invalid_argument("cannot write pages compressed with " + codec_name(opt.codec));
  out.rows = rows;
  out.bytes.clear();
  out.spans.clear();
  out.chunks.clear();
  const uint64_t pages = rows == 0 ? 1 : (rows + opt.page_values - 1) / opt.page_values;
  // Room for everything up front: out.bytes never moves while the row group is encoded.
  size_t room = pages * columns * kHeaderRoom;
  if (copy_values || opt.codec != kUncompressed)
    for (uint64_t first = 0; first < rows; first += opt.page_values)
      room += columns * max_compressed_size(opt.codec, std::min<uint64_t>(opt.page_values, rows - first) * 4);
  out.bytes.reserve(room);
  std::vector<uint8_t> header;
  uint64_t at = 0;  // bytes of the row group so far
  for (size_t c = 0; c < columns; ++c) {
    const float* col = column_major + c * rows;
    ColumnChunk chunk;
    chunk.encodings = {kPlain};
    chunk.codec = opt.codec;
    chunk.num_values = static_cast<int64_t>(rows);
    chunk.data_page_offset = static_cast<int64_t>(at);
    chunk.file_offset = chunk.data_page_offset;
    chunk.null_count = 0;
    for (uint64_t first = 0, page = 0; page < pages; ++page, first += opt.page_values) {
      const uint64_t n = std::min<uint64_t>(opt.page_values, rows - first);
      const size_t raw = n * sizeof(float);
      PageHeader h;
      h.uncompressed_size = static_cast<int32_t>(raw);
      h.num_values = static_cast<int32_t>(n);
      h.has_crc = true;
      size_t header_bytes = 0, stored = raw;
      if (opt.codec == kUncompressed) {
        h.compressed_size = static_cast<int32_t>(raw);
        h.crc = crc32(col + first, raw);
        const size_t start = out.bytes.size();
        header.clear();
        encode_page_header(h, header);
        out.bytes.insert(out.bytes.end(), header.begin(), header.end());
        header_bytes = header.size();
        if (copy_values) {
          const auto* v = reinterpret_cast<const uint8_t*>(col + first);
          out.bytes.insert(out.bytes.end(), v, v + raw);
          add_own_span(out, start, header_bytes + raw);
        } else {
          add_own_span(out, start, header_bytes);
          if (raw > 0) out.spans.push_back({col + first, 0, raw});
        }
      } else {
        // The page is compressed after a gap; its header then fills the end of the gap.
        const size_t gap = out.bytes.size(), bound = max_compressed_size(opt.codec, raw);
        out.bytes.resize(gap + kHeaderRoom + bound);  // within the room reserved: no zero fill, no move
        stored = compress_into(opt.codec, col + first, raw, out.bytes.data() + gap + kHeaderRoom, bound);
        out.bytes.resize(gap + kHeaderRoom + stored);
        h.compressed_size = static_cast<int32_t>(stored);
        h.crc = crc32(out.bytes.data() + gap + kHeaderRoom, stored);  // Parquet: the CRC of the bytes as stored
        header.clear();
        encode_page_header(h, header);
        header_bytes = header.size();
        if (header_bytes > kHeaderRoom) throw std::logic_error("Parquet page header longer than its room");
        const size_t start = gap + kHeaderRoom - header_bytes;
        std::memcpy(out.bytes.data() + start, header.data(), header_bytes);
        add_own_span(out, start, header_bytes + stored);
      }
      chunk.total_uncompressed_size += static_cast<int64_t>(header_bytes + raw);
      chunk.total_compressed_size += static_cast<int64_t>(header_bytes + stored);
      at += header_bytes + stored;
    }
    if (rows > 0) {
      float lo, hi;
      min_max(col, rows, lo, hi);
      set_min_max(chunk, lo, hi);
    }
    out.chunks.push_back(std::move(chunk));
  }
}

}  // namespace

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
size_t mapped_bytes(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
}  // namespace

void* allocate_bytes(size_t bytes) {
  if (bytes < kHugePage) return ::operator new(bytes);
  void* p = ::mmap(nullptr, mapped_bytes(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, mapped_bytes(bytes), MADV_HUGEPAGE);  // advice only
#endif
  return p;
}

void deallocate_bytes(void* p, size_t bytes) {
  if (bytes < kHugePage)
    ::operator delete(p);
  else
    ::munmap(p, mapped_bytes(bytes));
}

uint64_t EncodedRowGroup::size() const {
  uint64_t n = 0;
  for (const Span& s : spans) n += s.size;
  return n;
}

void encode_row_group(const float* column_major, uint64_t rows, size_t columns, EncodedRowGroup& out,
                      const EncodeOptions& options) {
  encode(column_major, rows, columns, out, options, /*copy_values=*/false);
}

void encode_row_group(const float* column_major, uint64_t rows, size_t columns, EncodedRowGroup& out,
                      uint32_t page_values) {
  EncodeOptions options;
  options.page_values = page_values;
  encode(column_major, rows, columns, out, options, /*copy_values=*/true);
  // One span, so out.bytes is the whole row group.
  const uint64_t size = out.size();
  out.spans.assign(1, {nullptr, 0, static_cast<size_t>(size)});
  if (size != out.bytes.size()) throw std::logic_error("a copied row group is not contiguous");
}

FileWriter::FileWriter(std::vector<std::string> column_names,
                       std::vector<std::pair<std::string, std::string>> key_values, std::string created_by) {
  SchemaElement root;
  root.name = "schema";
  root.num_children = static_cast<int32_t>(column_names.size());
  meta_.schema.push_back(root);
  for (auto& name : column_names) {
    SchemaElement leaf;
    leaf.name = std::move(name);
    leaf.type = kFloat;
    leaf.repetition = kRequired;
    meta_.schema.push_back(std::move(leaf));
  }
  meta_.key_values = std::move(key_values);
  meta_.created_by = std::move(created_by);
}

void FileWriter::add_row_group(const EncodedRowGroup& group, uint64_t file_offset) {
  RowGroup g;
  g.num_rows = static_cast<int64_t>(group.rows);
  g.total_compressed_size = 0;
  for (size_t c = 0; c < group.chunks.size(); ++c) {
    ColumnChunk chunk = group.chunks[c];
    chunk.path = {meta_.schema.at(c + 1).name};
    chunk.data_page_offset += static_cast<int64_t>(file_offset);
    chunk.file_offset += static_cast<int64_t>(file_offset);
    g.total_byte_size += chunk.total_uncompressed_size;
    g.total_compressed_size += chunk.total_compressed_size;
    g.columns.push_back(std::move(chunk));
  }
  g.file_offset = static_cast<int64_t>(file_offset);
  meta_.num_rows += g.num_rows;
  meta_.row_groups.push_back(std::move(g));
}

std::vector<uint8_t> FileWriter::footer() const {
  std::vector<uint8_t> out;
  encode_file_metadata(meta_, out);
  const auto len = static_cast<uint32_t>(out.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), kMagic, kMagic + 4);
  return out;
}

}  // namespace trainrt::parquet
