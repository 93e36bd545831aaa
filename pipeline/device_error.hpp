// What engines and backends throw when the GPU fails, in the words of the pipeline's users (commands, Python).
#pragma once

#include "cuda_check.hpp"

namespace imgpipe {

// A CUDA call failed; sticky() when it broke the context, so that nothing more can run on the device.
using DeviceError = cuda::CudaError;
// The device had no memory left for one frame: that frame fails, the run can go on.
using DeviceOutOfMemory = cuda::CudaBadAlloc;

}  // namespace imgpipe
