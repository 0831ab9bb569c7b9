// gpu.h for a trainrt built without the CUDA runtime and NCCL: nothing can run on a GPU.
#include "commands.h"
#include "preflight/gpu.h"

namespace trainrt::preflight {

bool built_with_cuda() { return false; }

GpuInventory list_gpus() {
  GpuInventory inv;
  inv.error_text = "trainrt was built without CUDA";
  return inv;
}

std::string new_nccl_id(std::string& error) {
  error = "trainrt was built without NCCL";
  return "";
}

AllReduceResult run_allreduce(const AllReduceConfig&) {
  AllReduceResult r;
  r.code = kNoGpu;
  r.error = "trainrt was built without NCCL";
  return r;
}

}  // namespace trainrt::preflight
