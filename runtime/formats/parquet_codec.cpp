#include "formats/parquet_codec.h"

#include <snappy.h>
#include <zstd.h>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace trainrt::parquet {

std::string codec_name(int32_t codec) {
  static const char* const kNames[] = {"none", "snappy", "gzip", "lzo", "brotli", "lz4", "zstd", "lz4_raw"};
  if (codec >= 0 && codec < static_cast<int32_t>(std::size(kNames))) return kNames[codec];
  return "codec " + std::to_string(codec);
}

bool parse_write_codec(std::string_view name, int32_t& codec) {
  if (name == "none" || name == "uncompressed")
    codec = kUncompressed;
  else if (name == "snappy")
    codec = kSnappy;
  else if (name == "zstd")
    codec = kZstd;
  else
    return false;
  return true;
}

bool codec_supported(int32_t codec) { return codec == kUncompressed || codec == kSnappy || codec == kZstd; }

size_t compress(int32_t codec, const void* data, size_t size, std::vector<uint8_t>& out) {
  const size_t at = out.size();
  const auto* in = static_cast<const char*>(data);
  switch (codec) {
    case kUncompressed:
      out.resize(at + size);
      if (size > 0) std::memcpy(out.data() + at, in, size);
      return size;
    case kSnappy: {
      out.resize(at + snappy::MaxCompressedLength(size));
      size_t n = 0;
      snappy::RawCompress(in, size, reinterpret_cast<char*>(out.data() + at), &n);
      out.resize(at + n);
      return n;
    }
    case kZstd: {
      out.resize(at + ZSTD_compressBound(size));
      const size_t n = ZSTD_compress(out.data() + at, out.size() - at, in, size, kZstdLevel);
      if (ZSTD_isError(n)) {
        out.resize(at);
        throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      }
      out.resize(at + n);
      return n;
    }
    default:
      throw std::invalid_argument("cannot compress with " + codec_name(codec));
  }
}

std::string decompress(int32_t codec, const uint8_t* data, size_t size, uint8_t* out, size_t expected) {
  switch (codec) {
    case kUncompressed:
      if (size != expected)
        return "an uncompressed page of " + std::to_string(size) + " bytes should have " + std::to_string(expected);
      if (size > 0) std::memcpy(out, data, size);
      return "";
    case kSnappy: {
      const auto* in = reinterpret_cast<const char*>(data);
      size_t n = 0;
      if (!snappy::GetUncompressedLength(in, size, &n)) return "corrupt snappy data (no length)";
      if (n != expected)
        return "snappy data holds " + std::to_string(n) + " bytes where the page says " + std::to_string(expected);
      if (!snappy::RawUncompress(in, size, reinterpret_cast<char*>(out))) return "corrupt snappy data";
      return "";
    }
    case kZstd: {
      const size_t n = ZSTD_decompress(out, expected, data, size);
      if (ZSTD_isError(n)) return std::string("corrupt zstd data: ") + ZSTD_getErrorName(n);
      if (n != expected)
        return "zstd data holds " + std::to_string(n) + " bytes where the page says " + std::to_string(expected);
      return "";
    }
    default:
      return "pages compressed with " + codec_name(codec) + " are not supported (none, snappy and zstd are)";
  }
}

}  // namespace trainrt::parquet

namespace trainrt::parquet {

size_t max_compressed_size(int32_t codec, size_t size) {
  switch (codec) {
    case kUncompressed:
      return size;
    case kSnappy:
      return snappy::MaxCompressedLength(size);
    case kZstd:
      return ZSTD_compressBound(size);
    default:
      throw std::invalid_argument("cannot compress with " + codec_name(codec));
  }
}

size_t compress_into(int32_t codec, const void* data, size_t size, uint8_t* out, size_t capacity) {
  if (capacity < max_compressed_size(codec, size)) throw std::invalid_argument("compress_into: too little room");
  switch (codec) {
    case kUncompressed:
      if (size > 0) std::memcpy(out, data, size);
      return size;
    case kSnappy: {
      size_t n = 0;
      snappy::RawCompress(static_cast<const char*>(data), size, reinterpret_cast<char*>(out), &n);
      return n;
    }
    default: {  // kZstd, with a context per thread (ZSTD_compress would make and free one per page)
      thread_local const std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> context(ZSTD_createCCtx(), ZSTD_freeCCtx);
      if (!context) throw std::runtime_error("zstd compression failed: no context");
      const size_t n = ZSTD_compressCCtx(context.get(), out, capacity, data, size, kZstdLevel);
      if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      return n;
    }
  }
}

}  // namespace trainrt::parquet
