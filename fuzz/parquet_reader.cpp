// libFuzzer harness: trainrt's Parquet reader (formats/parquet_reader, parquet_thrift): the footer
// (magic, length, Thrift-encoded FileMetaData, schema, row counts, chunk ranges) and every row group
// of a file whose footer passes.
#include "formats/parquet_reader.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  trainc_fuzz::MemFile file(data, size);
  trainrt::parquet::FileInfo info;
  if (!trainrt::parquet::read_footer(file.fd(), info).empty()) return 0;
  (void)info.key_value("trainrt.table");
  std::vector<float> columns;
  for (size_t g = 0; g < info.meta.row_groups.size(); ++g)
    if (!trainrt::parquet::read_row_group(file.fd(), info, g, columns).empty()) break;
  return 0;
}
