// Normalize's per-channel ranges and stretch, shared by the kernels that fold a range (normalize.cu, and the
// fused gray + sobel in convolve.cu, whose output normalize stretches) and those that stretch by it. Included by
// .cu files only.
#pragma once

#include "limits.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace imgpipe::cuda {

// A frame's range is kRangeWords words: the minima of channels 0..2, then 255 minus the maxima, so that one
// atomicMin folds both sides and one memset of 0xFF bytes starts them all.
constexpr int kRangeWords = 6;

// The stretch of one channel as cv::normalize(NORM_MINMAX, 0..255) computes it for 8-bit data, so the bytes are
// OpenCV's: scale = 255 * (1 / (hi - lo)) in double (0 for a constant channel), shift = -lo * scale, both rounded
// to float, then cv::Mat::convertTo's fused multiply-add v * scale + shift, rounded half to even and saturated.
struct Stretch {
  float scale, shift;
};

__device__ __forceinline__ Stretch stretch_of(unsigned lo, unsigned hi) {
  const double scale = 255.0 * (hi > lo ? 1.0 / static_cast<double>(hi - lo) : 0.0);
  return {__double2float_rn(scale), __double2float_rn(-__dmul_rn(static_cast<double>(lo), scale))};
}

__device__ __forceinline__ std::uint8_t stretch(unsigned v, Stretch k) {
  return static_cast<std::uint8_t>(min(max(__float2int_rn(fmaf(static_cast<float>(v), k.scale, k.shift)), 0), 255));
}

// Channel c's stretch from a frame's range words.
__device__ __forceinline__ Stretch stretch_of_channel(const unsigned* words, int c) {
  return stretch_of(words[c], 255u - words[3 + c]);
}

// One thread's minima (lo) and maxima (hi) so far, one byte per channel in bytes 0..2.
struct ChannelRange {
  unsigned lo = 0xFFFFFFFFu;
  unsigned hi = 0u;
  __device__ void add(unsigned lo_bytes, unsigned hi_bytes) {
    lo = __vminu4(lo, lo_bytes);
    hi = __vmaxu4(hi, hi_bytes);
  }
};

// The block's ranges folded into its frame's words (`range`): a warp folds by shuffles, its first lane into the
// block's words in shared memory, and the block's first threads into device memory. Called by every thread of a
// one-dimensional block of whole warps.
__device__ __forceinline__ void fold_block(ChannelRange r, unsigned* range) {
  __shared__ unsigned block_words[kRangeWords];
  if (threadIdx.x < kRangeWords) block_words[threadIdx.x] = 0xFFFFFFFFu;
  __syncthreads();
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    r.add(__shfl_down_sync(0xFFFFFFFFu, r.lo, offset), __shfl_down_sync(0xFFFFFFFFu, r.hi, offset));
  }
  if (threadIdx.x % kWarpSize == 0) {
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      atomicMin(&block_words[c], (r.lo >> (8 * c)) & 0xFFu);
      atomicMin(&block_words[3 + c], 255u - ((r.hi >> (8 * c)) & 0xFFu));
    }
  }
  __syncthreads();
  if (threadIdx.x < kRangeWords) atomicMin(&range[threadIdx.x], block_words[threadIdx.x]);
}

}  // namespace imgpipe::cuda
