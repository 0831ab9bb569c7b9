#include "common/shard_format.h"

#include <cstdio>

namespace trainrt {

std::string shard_file_name(uint32_t index, uint32_t count, const std::string& extension) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "part-%05u-of-%05u.%s", index, count, extension.c_str());
  return buf;
}

}  // namespace trainrt
