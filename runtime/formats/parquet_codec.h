#pragma once
// Parquet's page compression (CompressionCodec in parquet.thrift) through the packaged libraries:
// snappy (libsnappy) and zstd (libzstd). Pages are compressed whole; a codec name is what users
// pass on the command line (`--compression zstd`) and what error messages say.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/parquet_format.h"

namespace trainrt::parquet {

/// "none", "snappy", "gzip", "lzo", "brotli", "lz4", "zstd", "lz4_raw", or "codec N".
std::string codec_name(int32_t codec);

/// The codec a name stands for ("none" or "uncompressed", "snappy", "zstd"); false for any other
/// name, including codecs trainrt can read about but not write.
bool parse_write_codec(std::string_view name, int32_t& codec);

/// Whether pages compressed with `codec` can be decompressed here.
bool codec_supported(int32_t codec);

/// zstd's level for page compression: 1, the fastest of the levels that compress (float noise
/// gains little from higher ones).
inline constexpr int kZstdLevel = 1;

/// Appends `size` bytes at `data`, compressed with `codec` (kUncompressed: copied), to `out`;
/// returns the compressed length. Throws std::runtime_error when the library fails.
size_t compress(int32_t codec, const void* data, size_t size, std::vector<uint8_t>& out);

/// Decompresses `size` bytes at `data` into exactly `expected` bytes at `out`. "" or what is
/// wrong (an unsupported codec, corrupt input, a length other than `expected`).
std::string decompress(int32_t codec, const uint8_t* data, size_t size, uint8_t* out, size_t expected);

}  // namespace trainrt::parquet

namespace trainrt::parquet {

/// The most bytes compress_into() can produce for `size` bytes with `codec` (kUncompressed: size).
/// Throws std::invalid_argument for a codec that cannot be written.
size_t max_compressed_size(int32_t codec, size_t size);

/// Compresses `size` bytes at `data` with `codec` into `out`, which has room for
/// max_compressed_size(codec, size) bytes; returns the compressed length. For writers that keep
/// their own buffers (no zero-filling, no reallocation). Throws like compress().
size_t compress_into(int32_t codec, const void* data, size_t size, uint8_t* out, size_t capacity);

}  // namespace trainrt::parquet
