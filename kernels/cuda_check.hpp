// One way to fail for every CUDA call and launch: a typed exception that names the call and the place.
#pragma once

#include <cuda_runtime.h>

#include <source_location>
#include <stdexcept>
#include <string>

namespace imgpipe::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }
  // A sticky error (illegal address, launch failure...) poisons the context: nothing on this device works after it.
  bool sticky() const noexcept;

 private:
  cudaError_t code_;
};

// cudaErrorMemoryAllocation, kept apart so callers can fall back or skip one oversized frame.
class CudaBadAlloc : public CudaError {
 public:
  using CudaError::CudaError;
};

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call,
                                   std::source_location where = std::source_location::current());

inline void check(cudaError_t code, const char* call,
                  std::source_location where = std::source_location::current()) {
  if (code != cudaSuccess) throw_cuda_error(code, call, where);
}

// After a launch: configuration errors now; with IMGPIPE_DEBUG_SYNC also the kernel's own faults.
void check_launch(const char* kernel, cudaStream_t stream,
                  std::source_location where = std::source_location::current());

// For destructors: never throws; ignores the runtime being unloaded at exit.
void check_noexcept(cudaError_t code, const char* call) noexcept;

// After plan-time uploads (cudaMemcpy, cudaMemcpyToSymbol from pageable memory): such a copy may return
// before its DMA has landed, and kernels on non-blocking streams do not wait for the legacy stream it ran on.
void wait_for_uploads();

// True when the runtime sees at least one usable CUDA device.
bool device_available() noexcept;

}  // namespace imgpipe::cuda

#define IMGPIPE_CUDA_CHECK(call) ::imgpipe::cuda::check((call), #call)
#define IMGPIPE_CUDA_LAUNCH_CHECK(kernel, stream) ::imgpipe::cuda::check_launch(kernel, stream)
