// Built instead of datagen_kernel.cu when nvcc was not found at configure time, or with -Dcuda=disabled.
#include "datagen/cuda_generator.h"

namespace trainrt::datagen {

bool cuda_kernel_built() { return false; }

int cuda_device_count(std::string& why) {
  why = "this trainrt was built without CUDA (nvcc was not found when it was configured, or -Dcuda=disabled)";
  return 0;
}

CudaGenerator* CudaGenerator::create(const Model&, int, uint64_t, std::string& error) {
  cuda_device_count(error);
  return nullptr;
}

}  // namespace trainrt::datagen
