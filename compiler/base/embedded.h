#pragma once
// Data files (schemas/, stdlib/) compiled into the binary by tools/embed.py.
#include <string_view>
#include <vector>

namespace trainc {

struct EmbeddedFile {
  std::string_view path;  ///< relative to the source root, e.g. "schemas/trainc.v1.schema.json"
  std::string_view data;
};

const std::vector<EmbeddedFile>& embedded_files();

/// Returns the embedded file at `path`, or nullptr.
const EmbeddedFile* find_embedded(std::string_view path);

}  // namespace trainc
