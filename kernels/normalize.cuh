// Normalize, per channel: min..max stretched to 0..255 with cv::normalize(NORM_MINMAX)'s own arithmetic for
// 8-bit data (normalize.cu), so the bytes are OpenCV's; a constant channel becomes 0.
//   naive:     on the interleaved frame; the minima and maxima by atomicMin / atomicMax per pixel and
//              channel, then a stretch kernel.
//   optimized: on frames of either layout in and out (planes, or the interleaved frame where normalize comes
//              first or last in a chain); the minima and maxima of all three channels in one CUB device
//              reduction over a Thrust counting iterator, written to device memory, then a pointwise stretch
//              that reads them there.
// Both run entirely on `stream`: no host round trip, nothing waits. The scratch grows on first use and is
// reused after; one scratch per frame in flight.
#pragma once

#include "cuda_resources.hpp"
#include "planes.hpp"

#include <cuda_runtime.h>

namespace imgpipe::cuda {

struct NormalizeScratch {
  DeviceBuffer range;  // the frame's per-channel minima and maxima
  DeviceBuffer temp;   // the device reduction's temporary storage
};

void normalize_naive(ConstAosView in, AosView out, NormalizeScratch& scratch, cudaStream_t stream);
void normalize_frames(const ConstFrameView& in, const FrameView& out, NormalizeScratch& scratch,
                      cudaStream_t stream);

}  // namespace imgpipe::cuda
