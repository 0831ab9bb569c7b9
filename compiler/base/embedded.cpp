#include "base/embedded.h"

namespace trainc {

const EmbeddedFile* find_embedded(std::string_view path) {
  for (const auto& f : embedded_files())
    if (f.path == path) return &f;
  return nullptr;
}

}  // namespace trainc
