// Replays inputs through a fuzz harness without libFuzzer, for the normal (GCC) build: every file
// named on the command line, every regular file under a folder named there (recursively), and every
// file a pattern with '*' matches (glob(3), so meson can pass "examples/*/spec.yaml" unexpanded).
// A crash, a sanitizer report or an uncaught exception fails the run; the last input named before it
// is the one to look at.
#include <glob.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

namespace {

void add_path(const fs::path& p, std::vector<fs::path>& out) {
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::vector<fs::path> found;
    for (const auto& e : fs::recursive_directory_iterator(p, ec))
      if (e.is_regular_file()) found.push_back(e.path());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  } else {
    out.push_back(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.find('*') == std::string::npos) {
      add_path(arg, inputs);
      continue;
    }
    glob_t g{};
    if (::glob(arg.c_str(), 0, nullptr, &g) == 0)
      for (size_t k = 0; k < g.gl_pathc; ++k) add_path(g.gl_pathv[k], inputs);
    ::globfree(&g);
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs found in the arguments given\n");
    return 1;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("replay: %s (%zu bytes)\n", path.c_str(), data.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::printf("replay: %zu inputs, no crash\n", inputs.size());
  return 0;
}
