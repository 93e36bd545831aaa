// A kernel that faults on purpose (a write through a null pointer): a real cudaErrorIllegalAddress, sticky,
// for test_reliability's GPU fault test. Launched only where a CUDA device is.
#include <cuda_runtime.h>

namespace {
__global__ void write_through_null(int* target) { *target = 42; }
}  // namespace

void imgpipe_test_launch_illegal_write(cudaStream_t stream) {
  write_through_null<<<1, 1, 0, stream>>>(nullptr);
}
