#pragma once
// Services under `trainc run --local`, after the pipeline's steps: a Triton service is the real
// Triton Inference Server (the binary NVIDIA ships in its nvidia-pytriton wheel, which
// tools/install-python.sh puts beside the project's Python environment) serving the local store's
// model repository, filled as apply.sh fills the bucket (the spec's source folder over what the
// steps wrote), each model asked ready as health.sh asks. That build of Triton has the Python
// backend only: a model of another backend (FIL, ONNX Runtime) is named and not served. vLLM
// needs a GPU and is not run here.
#include <filesystem>

#include "model/model.h"
#include "run/local_runner.h"

namespace trainc {

/// Where tools/install-python.sh puts Triton: a folder holding pytriton/tritonserver/ and the
/// wheel's shared libraries (nvidia_pytriton.libs/); TRAINC_TRITON overrides it.
std::filesystem::path triton_home();

/// Starts each service of `sys` that runs here, waits until its models are ready, and then stops
/// it, or, with opt.serve, keeps them all up until interrupted. 0, else an exit code, having said why.
int run_services(const System& sys, const LocalRunOptions& opt);

}  // namespace trainc
