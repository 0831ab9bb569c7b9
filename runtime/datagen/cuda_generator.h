#pragma once
// Row generation on NVIDIA GPUs: the shared row formula (row_generator.h) in a CUDA kernel, one
// thread per row, so its bits equal the CPU path's. Built from datagen_kernel.cu when nvcc is
// present; otherwise from cuda_stub.cpp, which reports that CUDA is not built in.
#include <cstdint>
#include <string>

#include "datagen/model.h"

namespace trainrt::datagen {

/// True when the CUDA kernel is built in (nvcc was found), whether or not a GPU is there to run it.
bool cuda_kernel_built();

/// Usable CUDA devices: 0 with `why` set when there are none (not built with CUDA, no driver, no GPU).
int cuda_device_count(std::string& why);

/// A model on one GPU and device buffers for blocks of up to `max_rows` rows.
class CudaGenerator {
 public:
  /// nullptr with `error` set when the device cannot be used.
  static CudaGenerator* create(const Model& model, int device, uint64_t max_rows, std::string& error);
  virtual ~CudaGenerator() = default;
  /// Rows [first, first + count) into host buffers, like generate_rows_cpu. False with `error` set.
  virtual bool generate(uint64_t first, uint64_t count, float* features, float* labels, std::string& error) = 0;
};

}  // namespace trainrt::datagen
