#pragma once
// What preflight needs from CUDA and NCCL. gpu_cuda.cpp implements it when trainrt is built with
// the CUDA runtime and NCCL; gpu_none.cpp otherwise (every GPU step then reports kNoGpu).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace trainrt::preflight {

struct GpuDevice {
  int index = 0;
  std::string name, pci_bus_id;
  std::uint64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;  ///< compute capability (10.0 = sm_100)
};

struct GpuInventory {
  bool query_ok = false;  ///< cudaGetDeviceCount succeeded (possibly with zero devices)
  int error_code = 0;     ///< the CUDA error when it did not (35: driver missing or too old)
  std::string error_name, error_text;
  int runtime_version = 0;  ///< 13000 = CUDA 13.0
  int driver_version = 0;   ///< the newest CUDA the driver supports; 0 = no driver
  std::vector<GpuDevice> devices;
};

/// False when trainrt was built without the CUDA runtime and NCCL.
bool built_with_cuda();

/// Every GPU this process can see, with what went wrong if it cannot look.
GpuInventory list_gpus();

/// Rank 0: a new ncclUniqueId as bytes; "" with `error` set on failure.
std::string new_nccl_id(std::string& error);

struct AllReduceConfig {
  std::string nccl_id;  ///< rank 0's ncclUniqueId
  int rank = 0, world_size = 1;
  int local_gpus = 1;  ///< one NCCL rank per GPU: NCCL rank = rank × local_gpus + device
  std::uint64_t bytes = 0;
  int warmup = 5, iters = 20;
  std::chrono::milliseconds timeout{120'000};  ///< for communicator setup, and again for the runs
};

struct AllReduceResult {
  int code = 0;  ///< kOk; kRankTimeout when a peer stalls; kFailed on an NCCL or CUDA error
  std::string error;
  double seconds_per_iter = 0;  ///< slowest GPU's time per all-reduce
  int nranks = 0;
  std::string nccl_version;  ///< "2.28.3"
};

/// Sums a uint32 buffer of `bytes` across every GPU of every rank, checks the result, and times it
/// with CUDA events.
AllReduceResult run_allreduce(const AllReduceConfig& config);

}  // namespace trainrt::preflight
