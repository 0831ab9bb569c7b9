// libFuzzer harness: the whole compile pipeline from spec bytes to the emitted files, in memory
// (driver.cpp's compile_source: load, schema, lower, checks, plan, every emitter; nothing is
// written). YAML only: the Jsonnet front end evaluates in a child process (jsonnet_frontend fuzzes
// it) and hands the same Document to the same phases, which this harness reaches far faster.
//
// Lowering reads the files an image build copies, inside the spec's folder; the spec is named in a
// private folder holding a small build context (image/ with a Dockerfile, requirements.txt and the
// scripts the examples copy), so builds compile and nothing else is read.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "base/diagnostics.h"
#include "driver.h"
#include "fuzz_file.h"

namespace {

std::string g_spec_path;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string dir = trainc_fuzz::make_temp_dir("trainc-fuzz-compile");
  for (const char* sub : {"", "/image"}) {
    std::filesystem::create_directories(dir + sub);
    for (const char* name : {"Dockerfile", "requirements.txt", "train.py", "datagen.py", "pytorch_training_e2e.py"})
      std::ofstream(dir + sub + "/" + name) << (std::string(name) == "Dockerfile" ? "FROM debian:12\n" : "x\n");
  }
  g_spec_path = dir + "/spec.yaml";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = std::make_shared<trainc::SourceFile>(g_spec_path, std::string(reinterpret_cast<const char*>(data), size));
  trainc::Diagnostics diags;
  auto compiled = trainc::compile_source(file, diags);
  if (compiled) {
    size_t bytes = 0;
    for (const auto& [path, content] : compiled->files.files()) bytes += path.size() + content.size();
    if (bytes == 0) __builtin_trap();  // a compiled spec always gives files
  } else if (!diags.has_errors()) {
    __builtin_trap();  // a refused spec always says why
  }
  (void)diags.render_text();
  return 0;
}
