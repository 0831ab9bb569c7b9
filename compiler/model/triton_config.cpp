#include "model/triton_config.h"

#include <fstream>

namespace trainc {
namespace {

/// The first quoted string in `line` from `from` on.
std::optional<std::string> quoted(const std::string& line, size_t from) {
  const size_t open = line.find('"', from);
  const size_t close = open == std::string::npos ? open : line.find('"', open + 1);
  if (close == std::string::npos) return std::nullopt;
  return line.substr(open + 1, close - open - 1);
}

/// The value of `key: "value"` on `line`, if the line has that key.
std::optional<std::string> value_of(const std::string& line, std::string_view key) {
  const size_t k = line.find(key);
  if (k == std::string::npos) return std::nullopt;
  const size_t colon = line.find(':', k + key.size());
  return colon == std::string::npos ? std::nullopt : quoted(line, colon);
}

}  // namespace

std::optional<TritonModelConfig> read_triton_model_config(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (1u << 20)) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  TritonModelConfig c;
  std::string platform;
  bool model_type_next = false;  // parameters [{ key: "model_type" value: { string_value: "..." } }], on one line or several
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    if (auto v = value_of(line, "default_model_filename")) c.file = *v;
    else if (auto b = value_of(line, "backend")) c.backend = *b;
    else if (auto p = value_of(line, "platform")) platform = *p;
    if (line.find("\"model_type\"") != std::string::npos) model_type_next = true;
    if (auto v = value_of(line, "string_value"); model_type_next && v) {
      c.model_type = *v;
      model_type_next = false;
    }
  }
  if (c.backend.empty()) c.backend = platform.substr(0, platform.find('_'));  // onnxruntime_onnx, pytorch_libtorch
  return c;
}

}  // namespace trainc
