// gpu.h with the CUDA runtime and NCCL. Plain host code (no kernels), so it builds without nvcc.
//
// NCCL runs non-blocking (ncclConfig_t::blocking = 0) and every wait polls with a deadline: a
// peer that dies after the rendezvous makes this rank fail with kRankTimeout instead of hanging.
#include <algorithm>
#include <cstring>
#include <string_view>
#include <thread>

#include <cuda_runtime.h>
#include <nccl.h>

#include <fmt/format.h>

#include "commands.h"
#include "preflight/gpu.h"

namespace trainrt::preflight {

namespace {

using Clock = std::chrono::steady_clock;

std::string cuda_error(std::string_view what, cudaError_t e) {
  return fmt::format("{} failed: CUDA error {} {} ({})", what, static_cast<int>(e), cudaGetErrorName(e),
                     cudaGetErrorString(e));
}

std::string nccl_error(std::string_view what, ncclResult_t r, ncclComm_t comm) {
  const char* detail = ncclGetLastError(comm);
  return fmt::format("{} failed: NCCL error {} ({}){}{}", what, static_cast<int>(r), ncclGetErrorString(r),
                     detail != nullptr && *detail != '\0' ? ": " : "", detail != nullptr ? detail : "");
}

/// One GPU of this pod: its communicator, stream, buffers and timing events.
struct Device {
  int index = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

/// Owns the devices' resources; aborts the communicators unless finish() succeeded.
class Devices {
 public:
  explicit Devices(int n) : devs_(static_cast<std::size_t>(n)) {
    for (int i = 0; i < n; ++i) devs_[static_cast<std::size_t>(i)].index = i;
  }
  ~Devices() {
    for (auto& d : devs_) {
      cudaSetDevice(d.index);
      if (d.comm != nullptr) (finalized_ ? ncclCommDestroy(d.comm) : ncclCommAbort(d.comm));
      if (d.start != nullptr) cudaEventDestroy(d.start);
      if (d.stop != nullptr) cudaEventDestroy(d.stop);
      if (d.send != nullptr) cudaFree(d.send);
      if (d.recv != nullptr) cudaFree(d.recv);
      if (d.stream != nullptr) cudaStreamDestroy(d.stream);
    }
  }
  std::vector<Device>& all() { return devs_; }
  void set_finalized() { finalized_ = true; }

 private:
  std::vector<Device> devs_;
  bool finalized_ = false;
};

std::string seconds_text(std::chrono::milliseconds d) { return fmt::format("{:.0f}s", d.count() / 1000.0); }

/// Polls every communicator until none is in progress.
int wait_comms(std::vector<Device>& devs, std::string_view what, Clock::time_point deadline,
               std::chrono::milliseconds timeout, std::string& error) {
  for (;;) {
    bool pending = false;
    for (auto& d : devs) {
      ncclResult_t state = ncclSuccess;
      if (ncclResult_t rc = ncclCommGetAsyncError(d.comm, &state); rc != ncclSuccess) {
        error = nccl_error("ncclCommGetAsyncError", rc, d.comm);
        return kFailed;
      }
      if (state == ncclInProgress) {
        pending = true;
      } else if (state != ncclSuccess) {
        error = nccl_error(what, state, d.comm);
        return kFailed;
      }
    }
    if (!pending) return kOk;
    if (Clock::now() >= deadline) {
      error = fmt::format(
          "{} did not finish within {}: a peer stopped, or NCCL cannot reach it (check the pod network and "
          "NCCL_SOCKET_IFNAME; rerun with NCCL_DEBUG=INFO)",
          what, seconds_text(timeout));
      return kRankTimeout;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Waits for every stream to drain, watching the communicators for asynchronous errors.
int wait_streams(std::vector<Device>& devs, Clock::time_point deadline, std::chrono::milliseconds timeout,
                 std::string& error) {
  for (;;) {
    bool pending = false;
    for (auto& d : devs) {
      const cudaError_t q = cudaStreamQuery(d.stream);
      if (q == cudaErrorNotReady) {
        pending = true;
      } else if (q != cudaSuccess) {
        error = cuda_error(fmt::format("all-reduce on GPU {}", d.index), q);
        return kFailed;
      }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(d.comm, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        error = nccl_error("all-reduce", state, d.comm);
        return kFailed;
      }
    }
    if (!pending) return kOk;
    if (Clock::now() >= deadline) {
      error = fmt::format("the all-reduce did not complete within {}: a peer stopped or a link is down "
                          "(rerun with NCCL_DEBUG=INFO)",
                          seconds_text(timeout));
      return kRankTimeout;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

/// Enqueues one all-reduce on every GPU of this pod, as one NCCL group.
int launch(std::vector<Device>& devs, std::size_t count, Clock::time_point deadline, std::chrono::milliseconds timeout,
           std::string& error) {
  ncclGroupStart();
  for (auto& d : devs) {
    cudaSetDevice(d.index);
    const ncclResult_t rc = ncclAllReduce(d.send, d.recv, count, ncclUint32, ncclSum, d.comm, d.stream);
    if (rc != ncclSuccess && rc != ncclInProgress) {
      ncclGroupEnd();
      error = nccl_error("ncclAllReduce", rc, d.comm);
      return kFailed;
    }
  }
  const ncclResult_t rc = ncclGroupEnd();
  if (rc == ncclInProgress) return wait_comms(devs, "ncclAllReduce", deadline, timeout, error);
  if (rc != ncclSuccess) {
    error = nccl_error("ncclGroupEnd", rc, nullptr);
    return kFailed;
  }
  return kOk;
}

int init_comms(std::vector<Device>& devs, const AllReduceConfig& c, std::string& error) {
  ncclUniqueId id;
  std::memcpy(&id, c.nccl_id.data(), sizeof id);
  const int nranks = c.world_size * c.local_gpus;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclGroupStart();
  for (auto& d : devs) {
    cudaSetDevice(d.index);
    const ncclResult_t rc = ncclCommInitRankConfig(&d.comm, nranks, id, c.rank * c.local_gpus + d.index, &config);
    if (rc != ncclSuccess && rc != ncclInProgress) {
      ncclGroupEnd();
      error = nccl_error("ncclCommInitRankConfig", rc, d.comm);
      return kFailed;
    }
  }
  const ncclResult_t rc = ncclGroupEnd();
  if (rc != ncclSuccess && rc != ncclInProgress) {
    error = nccl_error("ncclCommInitRank", rc, nullptr);
    return kFailed;
  }
  return wait_comms(devs, "ncclCommInitRank", Clock::now() + c.timeout, c.timeout, error);
}

int alloc_buffers(std::vector<Device>& devs, std::size_t bytes, std::string& error) {
  for (auto& d : devs) {
    cudaError_t e = cudaSetDevice(d.index);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&d.send, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&d.recv, bytes);
    // Every uint32 is 0x01010101, so the sum over n ranks is 0x01010101 × n (mod 2^32), exactly.
    if (e == cudaSuccess) e = cudaMemset(d.send, 1, bytes);
    if (e == cudaSuccess) e = cudaMemset(d.recv, 0, bytes);
    if (e == cudaSuccess) e = cudaEventCreate(&d.start);
    if (e == cudaSuccess) e = cudaEventCreate(&d.stop);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      error = cuda_error(fmt::format("allocating {} bytes twice on GPU {}", bytes, d.index), e);
      return kFailed;
    }
  }
  return kOk;
}

/// Compares the head of every GPU's result with the expected sum.
int check_result(std::vector<Device>& devs, std::size_t count, int nranks, std::string& error) {
  const std::uint32_t expected = 0x01010101u * static_cast<std::uint32_t>(nranks);
  std::vector<std::uint32_t> head(std::min<std::size_t>(count, 4096));
  for (auto& d : devs) {
    cudaSetDevice(d.index);
    if (cudaError_t e = cudaMemcpy(head.data(), d.recv, head.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost);
        e != cudaSuccess) {
      error = cuda_error("reading the all-reduce result", e);
      return kFailed;
    }
    auto bad = std::find_if(head.begin(), head.end(), [&](std::uint32_t v) { return v != expected; });
    if (bad != head.end()) {
      error = fmt::format("the all-reduce returned wrong data on GPU {}: element {} is {:#010x}, expected {:#010x}",
                          d.index, bad - head.begin(), *bad, expected);
      return kFailed;
    }
  }
  return kOk;
}

}  // namespace

bool built_with_cuda() { return true; }

GpuInventory list_gpus() {
  GpuInventory inv;
  cudaRuntimeGetVersion(&inv.runtime_version);
  cudaDriverGetVersion(&inv.driver_version);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  auto fail = [&inv](cudaError_t err) {
    inv.query_ok = false;
    inv.error_code = static_cast<int>(err);
    inv.error_name = cudaGetErrorName(err);
    inv.error_text = cudaGetErrorString(err);
    return inv;
  };
  if (e != cudaSuccess) return fail(e);
  inv.query_ok = true;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (e = cudaGetDeviceProperties(&p, i); e != cudaSuccess) return fail(e);
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    inv.devices.push_back({i, p.name, bus, static_cast<std::uint64_t>(p.totalGlobalMem), p.major, p.minor});
  }
  return inv;
}

std::string new_nccl_id(std::string& error) {
  ncclUniqueId id;
  if (ncclResult_t rc = ncclGetUniqueId(&id); rc != ncclSuccess) {
    error = nccl_error("ncclGetUniqueId", rc, nullptr);
    return "";
  }
  return std::string(reinterpret_cast<const char*>(&id), sizeof id);
}

AllReduceResult run_allreduce(const AllReduceConfig& c) {
  AllReduceResult r;
  r.nranks = c.world_size * c.local_gpus;
  int version = 0;
  ncclGetVersion(&version);
  r.nccl_version = fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
  if (c.nccl_id.size() != sizeof(ncclUniqueId)) {
    r.code = kFailed;
    r.error = fmt::format("the NCCL id from rank 0 has {} bytes, expected {}", c.nccl_id.size(), sizeof(ncclUniqueId));
    return r;
  }
  const std::size_t count = c.bytes / sizeof(std::uint32_t);
  const std::size_t bytes = count * sizeof(std::uint32_t);

  Devices devices(c.local_gpus);
  auto& devs = devices.all();
  if ((r.code = alloc_buffers(devs, bytes, r.error)) != kOk) return r;
  if ((r.code = init_comms(devs, c, r.error)) != kOk) return r;

  const auto deadline = Clock::now() + c.timeout;
  for (int i = 0; i < c.warmup; ++i)
    if ((r.code = launch(devs, count, deadline, c.timeout, r.error)) != kOk) return r;
  if ((r.code = wait_streams(devs, deadline, c.timeout, r.error)) != kOk) return r;

  for (auto& d : devs) {
    cudaSetDevice(d.index);
    cudaEventRecord(d.start, d.stream);
  }
  for (int i = 0; i < c.iters; ++i)
    if ((r.code = launch(devs, count, deadline, c.timeout, r.error)) != kOk) return r;
  for (auto& d : devs) {
    cudaSetDevice(d.index);
    cudaEventRecord(d.stop, d.stream);
  }
  if ((r.code = wait_streams(devs, deadline, c.timeout, r.error)) != kOk) return r;

  float slowest_ms = 0;
  for (auto& d : devs) {
    float ms = 0;
    if (cudaError_t e = cudaEventElapsedTime(&ms, d.start, d.stop); e != cudaSuccess) {
      r.code = kFailed;
      r.error = cuda_error("cudaEventElapsedTime", e);
      return r;
    }
    slowest_ms = std::max(slowest_ms, ms);
  }
  r.seconds_per_iter = slowest_ms / 1000.0 / std::max(c.iters, 1);
  if ((r.code = check_result(devs, count, r.nranks, r.error)) != kOk) return r;

  // Finalize flushes NCCL's outstanding work with every peer; only then is destroying safe.
  for (auto& d : devs) ncclCommFinalize(d.comm);
  if ((r.code = wait_comms(devs, "ncclCommFinalize", Clock::now() + c.timeout, c.timeout, r.error)) != kOk) return r;
  devices.set_finalized();
  return r;
}

}  // namespace trainrt::preflight
