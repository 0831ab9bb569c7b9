// The CUDA path of datagen: the same row formula as the CPU (row_generator.h), one thread per
// row. Built with --fmad=false so no multiply-add is contracted and the bits match the CPU's.
#include <cuda_runtime.h>

#include <string>

#include "datagen/cuda_generator.h"
#include "datagen/row_generator.h"

namespace trainrt::datagen {

namespace {

__global__ void rows_kernel(ModelView model, uint64_t first, uint64_t count, float* features, float* labels) {
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  make_row(model, first + i, features + i * model.features, labels + i);
}

std::string describe(cudaError_t e, const char* what) {
  return std::string(what) + ": " + cudaGetErrorString(e) + " (CUDA error " + std::to_string(static_cast<int>(e)) + ")";
}

template <typename T>
bool upload(const std::vector<T>& host, T*& device, std::string& error) {
  device = nullptr;
  if (host.empty()) return true;
  cudaError_t e = cudaMalloc(&device, host.size() * sizeof(T));
  if (e == cudaSuccess) e = cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  if (e != cudaSuccess) error = describe(e, "copying the model to the GPU");
  return e == cudaSuccess;
}

class Generator final : public CudaGenerator {
 public:
  Generator(int device, uint64_t max_rows) : device_(device), max_rows_(max_rows) {}
  ~Generator() override {
    cudaSetDevice(device_);
    for (void* p : {static_cast<void*>(cluster_end_), static_cast<void*>(centroids_), static_cast<void*>(covariance_),
                    static_cast<void*>(redundant_mix_), static_cast<void*>(repeated_from_), static_cast<void*>(coef_),
                    static_cast<void*>(features_), static_cast<void*>(labels_)})
      if (p) cudaFree(p);
  }

  bool init(const Model& m, std::string& error) {
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return error = describe(e, "selecting the GPU"), false;
    if (!upload(m.cluster_end, cluster_end_, error) || !upload(m.centroids, centroids_, error) ||
        !upload(m.covariance, covariance_, error) || !upload(m.redundant_mix, redundant_mix_, error) ||
        !upload(m.repeated_from, repeated_from_, error) || !upload(m.coef, coef_, error))
      return false;
    view_ = m.scalars;
    view_.cluster_end = cluster_end_;
    view_.centroids = centroids_;
    view_.covariance = covariance_;
    view_.redundant_mix = redundant_mix_;
    view_.repeated_from = repeated_from_;
    view_.coef = coef_;
    e = cudaMalloc(&features_, max_rows_ * m.spec.features * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&labels_, max_rows_ * sizeof(float));
    if (e != cudaSuccess) return error = describe(e, "allocating GPU buffers"), false;
    return true;
  }

  bool generate(uint64_t first, uint64_t count, float* features, float* labels, std::string& error) override {
    if (count > max_rows_) return error = "block larger than the GPU buffers", false;
    cudaError_t e = cudaSetDevice(device_);
    const unsigned threads = 128;
    const auto blocks = static_cast<unsigned>((count + threads - 1) / threads);
    if (e == cudaSuccess && count > 0) {
      rows_kernel<<<blocks, threads>>>(view_, first, count, features_, labels_);
      e = cudaGetLastError();
    }
    if (e == cudaSuccess)
      e = cudaMemcpy(features, features_, count * view_.features * sizeof(float), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(labels, labels_, count * sizeof(float), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return error = describe(e, "generating rows on the GPU"), false;
    return true;
  }

 private:
  int device_;
  uint64_t max_rows_;
  ModelView view_;
  uint64_t* cluster_end_ = nullptr;
  float* centroids_ = nullptr;
  float* covariance_ = nullptr;
  float* redundant_mix_ = nullptr;
  uint32_t* repeated_from_ = nullptr;
  float* coef_ = nullptr;
  float* features_ = nullptr;
  float* labels_ = nullptr;
};

}  // namespace

bool cuda_kernel_built() { return true; }

int cuda_device_count(std::string& why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    why = describe(e, "cudaGetDeviceCount failed") + "; is an NVIDIA driver installed and a GPU visible to this process?";
    return 0;
  }
  if (n == 0) why = "no GPU is visible to this process (cudaGetDeviceCount returned 0)";
  return n;
}

CudaGenerator* CudaGenerator::create(const Model& model, int device, uint64_t max_rows, std::string& error) {
  auto* g = new Generator(device, max_rows);
  if (!g->init(model, error)) {
    delete g;
    return nullptr;
  }
  return g;
}

}  // namespace trainrt::datagen
