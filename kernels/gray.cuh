// Gray: BT.601 luma written to all three channels, in OpenCV's 15-bit fixed point
// (R * 9798 + G * 19235 + B * 3735 + 16384) >> 15, so it equals cv::cvtColor(RGB2GRAY) exactly.
//   naive:     on the interleaved frame, one thread per pixel.
//   optimized: four pixels per thread with 32-bit loads and stores, on planes (gray_planes) or on frames of
//              either layout in and out (gray_frames).
// Extents must match; asynchronous on `stream`.
#pragma once

#include "planes.hpp"

#include <cuda_runtime.h>

namespace imgpipe::cuda {

void gray_naive(ConstAosView in, AosView out, cudaStream_t stream);
void gray_planes(ConstPlanesView in, PlanesView out, cudaStream_t stream);
void gray_frames(const ConstFrameView& in, const FrameView& out, cudaStream_t stream);

}  // namespace imgpipe::cuda
