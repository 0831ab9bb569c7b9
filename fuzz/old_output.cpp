// libFuzzer harness: a file of an output folder read as untrusted input (`plan --against OLD`,
// `trainc diff`): the bounded YAML reader those commands parse it with, which must end, within its
// limits, on any bytes (yaml-cpp's LoadAll looped for ever on a stray ','), and the escaping of
// what is printed from it.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "base/yaml_tree.h"
#include "io/untrusted_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& doc : trainc::read_yaml_documents(text))
      if (doc.IsMap())
        for (const auto& kv : doc) (void)kv.first.Scalar();
  } catch (const std::runtime_error&) {
  }
  const std::string shown = trainc::printable(text);
  for (char c : shown)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') || c == 0x7f) __builtin_trap();
  return 0;
}
