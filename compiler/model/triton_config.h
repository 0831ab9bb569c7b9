#pragma once
// What a Triton model's config.pbtxt says about how the server loads it, read loosely (line by line,
// `#` comments dropped, a value the quoted string after its key): the checks and `trainc run
// --local` both read it.
#include <filesystem>
#include <optional>
#include <string>

namespace trainc {

struct TritonModelConfig {
  std::string backend;     ///< `backend`, else the one its `platform` implies (onnxruntime_onnx: onnxruntime)
  std::string model_type;  ///< the FIL backend's `model_type` parameter; "" when unset (FIL's default: xgboost)
  std::string file;        ///< `default_model_filename`; "" when unset
};

/// The config at `path`; nothing when it is missing, unreadable or larger than 1 MiB (a config is
/// a few KiB).
std::optional<TritonModelConfig> read_triton_model_config(const std::filesystem::path& path);

}  // namespace trainc
