// Gray: BT.601 luma written to all three channels, in OpenCV's 15-bit fixed point
// (R * 9798 + G * 19235 + B * 3735 + 16384) >> 15, so it equals cv::cvtColor(RGB2GRAY) exactly.
//   naive:     on the interleaved frame, one thread per pixel.
//   optimized: four pixels per thread with 32-bit loads and stores on planes (gray_planes) or on frames of
//              either layout in and out (gray_frames); sixteen pixels per thread with 16-byte loads and stores
//              on interleaved frames, a batch of them per launch (gray_aos, and gray_frames where both frames
//              are interleaved).
// Extents must match; asynchronous on `stream`.
#pragma once

#include "planes.hpp"

#include <cuda_runtime.h>

#include <cstddef>

namespace imgpipe::cuda {

void gray_naive(ConstAosView in, AosView out, cudaStream_t stream);
void gray_planes(ConstPlanesView in, PlanesView out, cudaStream_t stream);
void gray_frames(const ConstFrameView& in, const FrameView& out, cudaStream_t stream);
// `frames` interleaved frames (1 to kMaxFramesPerLaunch), frame f at first_in.data + f * in_frame_stride (and out
// likewise), in one launch; in and out may be the same frames.
void gray_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
              int frames, cudaStream_t stream);

}  // namespace imgpipe::cuda
