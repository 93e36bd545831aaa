#include "cuda_check.hpp"

#include <cstdio>

namespace imgpipe::cuda {

bool CudaError::sticky() const noexcept {
  switch (code_) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorHardwareStackError:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
      return true;
    default:
      return false;
  }
}

void throw_cuda_error(cudaError_t code, const char* call, std::source_location where) {
  // A failed call also leaves its error as the thread's "last error", which the next launch check would
  // report as its own (an out-of-memory cudaMalloc blamed on a later kernel). Reported here, so cleared.
  (void)cudaGetLastError();
  std::string what = std::string(call) + " failed: " + cudaGetErrorName(code) + " (" +
                     cudaGetErrorString(code) + ") at " + where.file_name() + ":" +
                     std::to_string(where.line());
  if (code == cudaErrorMemoryAllocation) throw CudaBadAlloc(code, what);
  throw CudaError(code, what);
}

void check_launch(const char* kernel, cudaStream_t stream, std::source_location where) {
  check(cudaGetLastError(), kernel, where);
#ifdef IMGPIPE_DEBUG_SYNC
  check(cudaStreamSynchronize(stream), kernel, where);
#else
  (void)stream;
#endif
}

void check_noexcept(cudaError_t code, const char* call) noexcept {
  if (code != cudaSuccess && code != cudaErrorCudartUnloading) {
    std::fprintf(stderr, "imgpipe: %s failed in a destructor: %s\n", call, cudaGetErrorString(code));
  }
}

void wait_for_uploads() { IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy)); }

bool device_available() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear "no device" so later calls start clean
    return false;
  }
  return count > 0;
}

}  // namespace imgpipe::cuda
