// The CUDA handles and buffers the layers above the core use (io's GPU codecs, the Python module), under the
// pipeline's names: the kernels' RAII owners and their error check, so that those layers never reach into kernels/.
#pragma once

#include "cuda_check.hpp"
#include "cuda_resources.hpp"

namespace imgpipe {

template <typename Handle, void (*Destroy)(Handle) noexcept>
using UniqueHandle = cuda::UniqueHandle<Handle, Destroy>;
using DeviceStream = cuda::Stream;
using DeviceBuffer = cuda::DeviceBuffer;
using DeviceEvent = cuda::Event;
using CurrentDevice = cuda::CurrentDevice;

// Throws DeviceError (device_error.hpp) naming `call` when `code` is not cudaSuccess.
inline void check_device(cudaError_t code, const char* call,
                         std::source_location where = std::source_location::current()) {
  cuda::check(code, call, where);
}

}  // namespace imgpipe
