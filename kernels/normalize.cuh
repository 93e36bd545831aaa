// Normalize, per channel: min..max stretched to 0..255 with cv::normalize(NORM_MINMAX)'s own arithmetic for
// 8-bit data (normalize.cu), so the bytes are OpenCV's; a constant channel becomes 0.
//   naive:     on the interleaved frame; the minima and maxima by atomicMin / atomicMax per pixel and
//              channel, then a stretch kernel.
//   optimized: on frames of either layout in and out (planes, or the interleaved frame where normalize comes
//              first or last in a chain), and on batches of interleaved frames (normalize_aos); the minima and
//              maxima of all three channels folded per thread, per block, then by six atomics per block into
//              device memory, then a pointwise stretch that reads them there: two launches per batch. After
//              gray and sobel, whose channels are equal, the fused gray_sobel_normalize_aos (convolve.cuh) folds
//              the range as it writes one byte per pixel, and stretch_luma_aos stretches those into three.
// Both run entirely on `stream`: no host round trip, nothing waits. The scratch grows on first use and is
// reused after; one scratch per frame in flight.
#pragma once

#include "cuda_resources.hpp"
#include "planes.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace imgpipe::cuda {

struct NormalizeScratch {
  DeviceBuffer range;  // each frame's per-channel minima and maxima
  DeviceBuffer luma;   // gray_sobel_normalize_aos: each frame's edge magnitudes, one byte per pixel
};

// Frames of one byte per pixel: frame f's row y at data + f * frame_stride + y * pitch.
struct LumaFrames {
  std::uint8_t* data = nullptr;
  std::size_t pitch = 0;
  std::size_t frame_stride = 0;
  Extent extent;
};

void normalize_naive(ConstAosView in, AosView out, NormalizeScratch& scratch, cudaStream_t stream);
void normalize_frames(const ConstFrameView& in, const FrameView& out, NormalizeScratch& scratch,
                      cudaStream_t stream);
// `frames` interleaved frames (1 to kMaxFramesPerLaunch), each stretched by its own range, frame f at first_in.data
// + f * in_frame_stride (and out likewise); in and out may be the same frames.
void normalize_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                   int frames, NormalizeScratch& scratch, cudaStream_t stream);

// Room for `frames` ranges in the scratch, each set to its start on `stream`, for a kernel that folds them
// (channel_range.cuh's fold_block); frame f's at the result + f * kRangeWords.
unsigned* fresh_normalize_ranges(NormalizeScratch& scratch, int frames, cudaStream_t stream);
// `frames` frames of `luma`, each stretched by its range from fresh_normalize_ranges (its channel 0) into all three
// bytes of each pixel of interleaved output frames of the same extent; launched by launch_dependent (launch.cuh).
void stretch_luma_aos(const LumaFrames& luma, const unsigned* range, AosView first_out, std::size_t out_frame_stride,
                      int frames, cudaStream_t stream);

}  // namespace imgpipe::cuda
