// Tiles of interleaved RGB8 frames in shared memory, staged with 32-bit loads whatever a row's alignment, and
// the packed 16-bit-lane arithmetic the interleaved filters run on them. Included by .cu files only.
//
// Batched launches: frame blockIdx.z of an AosFrames starts at data + z * frame_stride.
#pragma once

#include "launch.cuh"
#include "pixel.cuh"
#include "planes.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace imgpipe::cuda {

struct AosFrames {
  const std::uint8_t* data = nullptr;
  std::size_t pitch = 0;
  std::size_t frame_stride = 0;
  Extent extent;
};

struct AosFramesOut {
  std::uint8_t* data = nullptr;
  std::size_t pitch = 0;
  std::size_t frame_stride = 0;
  Extent extent;
};

// A batch's frames as kernel parameters, once they are checked: 1 to kMaxFramesPerLaunch frames, none
// overlapping the next (std::invalid_argument, naming `what`, otherwise).
inline std::pair<AosFrames, AosFramesOut> aos_batch(ConstAosView first_in, std::size_t in_frame_stride,
                                                    AosView first_out, std::size_t out_frame_stride, int frames,
                                                    const std::string& what) {
  require(frames >= 1 && frames <= kMaxFramesPerLaunch,
          what + ": 1 to " + std::to_string(kMaxFramesPerLaunch) + " frames per launch");
  const std::string problem = frame_batch_problem(first_in, in_frame_stride, first_out, out_frame_stride, frames);
  require(problem.empty(), what + ": " + problem);
  return {{first_in.data, first_in.pitch, in_frame_stride, first_in.extent},
          {first_out.data, first_out.pitch, out_frame_stride, first_out.extent}};
}

// Tile rows r = 0 .. kRows-1 hold frame row border_index(top + r) and the bytes of pixels left .. left +
// kBytes / 3 - 1 of it (kBytes = 3 * pixels): row r's byte b at tile[r * kStride + b], whatever the frame row's
// alignment, so that a word of the tile holds the same four byte positions in every row. Interior words come
// from two aligned 32-bit loads and a funnel shift; every thread issues all of its loads before it stores any
// (one memory latency per tile, not one per word). Only the pixels inside the frame are read, the words at the
// ends of that span assembled from bytes; where the tile reaches past the frame's left or right edge
// (block-uniform), its outside pixels are then copied within shared memory from the pixels the border rule
// names, or read where the staged span lacks them. Called by all kThreads threads; the caller synchronises
// before reading the tile.
template <int kRows, int kBytes, int kStride, int kThreads>
__device__ __forceinline__ void stage_aos_tile(std::uint8_t* tile, const std::uint8_t* frame, std::size_t pitch,
                                               Extent e, int left, int top, BorderMode border) {
  constexpr int kPixels = kBytes / 3;
  constexpr int kWords = (kBytes + 3) / 4;
  constexpr int kLoads = (kRows * kWords + kThreads - 1) / kThreads;
  static_assert(4 * kWords <= kStride, "a tile row holds its words");
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const bool rows_inside = top >= 0 && top + kRows <= e.height;
  const int first_pixel = max(left, 0), end_pixel = max(min(left + kPixels, e.width), first_pixel);
  const auto row_of = [&](int r) {
    const int y = rows_inside ? top + r : border_index(top + r, e.height, border);
    return reinterpret_cast<std::uintptr_t>(frame) + static_cast<std::size_t>(y) * pitch;
  };
  std::uint32_t words[kLoads];
#pragma unroll
  for (int j = 0; j < kLoads; ++j) {
    const int i = tid + j * kThreads;
    if (i >= kRows * kWords) break;
    const int r = i / kWords, w = i - r * kWords;
    const std::uintptr_t row = row_of(r);
    // The tile's bytes 4w .. 4w + 3 (its byte 0 may lie outside the frame: only the address is formed).
    const std::uintptr_t at = row + 3 * static_cast<std::ptrdiff_t>(left) + 4 * static_cast<unsigned>(w);
    const std::uintptr_t begin = row + 3 * static_cast<std::size_t>(first_pixel);
    const std::uintptr_t end = row + 3 * static_cast<std::size_t>(end_pixel);
    const std::uintptr_t aligned = at & ~std::uintptr_t{3};
    if (aligned >= begin && aligned + 8 <= end) {
      const unsigned* pair = reinterpret_cast<const unsigned*>(aligned);
      words[j] = __funnelshift_r(__ldg(pair), __ldg(pair + 1), 8 * static_cast<unsigned>(at & 3u));
    } else {
      std::uint32_t v = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        if (at + b >= begin && at + b < end) {
          v |= static_cast<std::uint32_t>(__ldg(reinterpret_cast<const std::uint8_t*>(at + b))) << (8 * b);
        }
      }
      words[j] = v;
    }
  }
#pragma unroll
  for (int j = 0; j < kLoads; ++j) {
    const int i = tid + j * kThreads;
    if (i >= kRows * kWords) break;
    const int r = i / kWords, w = i - r * kWords;
    reinterpret_cast<std::uint32_t*>(tile + r * kStride)[w] = words[j];
  }
  if (first_pixel == left && end_pixel == left + kPixels) return;
  __syncthreads();  // block-uniform: the staged span is complete before the border pixels copy from it
  const int before = first_pixel - left, outside = before + (left + kPixels - end_pixel);
  for (int i = tid; i < kRows * 3 * outside; i += kThreads) {
    const int r = i / (3 * outside), k = i - r * 3 * outside, n = k / 3, c = k - 3 * n;
    const int pixel = n < before ? left + n : end_pixel + (n - before);
    const int source = border_index(pixel, e.width, border);
    std::uint8_t* row = tile + r * kStride;
    row[3 * (pixel - left) + c] = source >= first_pixel && source < end_pixel
                                      ? row[3 * (source - left) + c]
                                      : __ldg(reinterpret_cast<const std::uint8_t*>(row_of(r)) + 3 * source + c);
  }
}

// kWords consecutive words of a staged row r from word q on.
template <int kWords, int kStride>
__device__ __forceinline__ void tile_words(const std::uint8_t* tile, int r, int q, std::uint32_t (&out)[kWords]) {
  const std::uint32_t* row = reinterpret_cast<const std::uint32_t*>(tile + r * kStride) + q;
#pragma unroll
  for (int i = 0; i < kWords; ++i) out[i] = row[i];
}

// The four bytes starting `kOffset` bytes into a run of words (kOffset known at compile time).
template <int kOffset, int kWords>
__device__ __forceinline__ std::uint32_t bytes_at(const std::uint32_t (&w)[kWords]) {
  if constexpr (kOffset % 4 == 0) {
    return w[kOffset / 4];
  } else {
    return __funnelshift_r(w[kOffset / 4], w[kOffset / 4 + 1], 8 * (kOffset % 4));
  }
}

// A word's four bytes as two words of 16-bit lanes: bytes 0 and 2 (even), bytes 1 and 3 (odd). Integer taps
// multiply both lanes at once; a lane's sum stays exact while it stays in 0 .. 65535 (after any bias).
__device__ __forceinline__ std::uint32_t even_lanes(std::uint32_t w) { return __byte_perm(w, 0u, 0x4240); }
__device__ __forceinline__ std::uint32_t odd_lanes(std::uint32_t w) { return __byte_perm(w, 0u, 0x4341); }

// A word's four byte positions as 32-bit values, from its lane words.
__device__ __forceinline__ uint4 lane_positions(std::uint32_t even, std::uint32_t odd) {
  return make_uint4(even & 0xFFFFu, odd & 0xFFFFu, even >> 16, odd >> 16);
}

// Four output bytes at `dst` (bytes past `limit` are not written): one 32-bit store where the address allows.
__device__ __forceinline__ void store_quad(std::uint8_t* dst, const std::uint8_t* limit, std::uint32_t bytes) {
  if ((reinterpret_cast<std::uintptr_t>(dst) & 3u) == 0 && dst + 4 <= limit) {
    *reinterpret_cast<std::uint32_t*>(dst) = bytes;
    return;
  }
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    if (dst + b < limit) dst[b] = static_cast<std::uint8_t>(bytes >> (8 * b));
  }
}

}  // namespace imgpipe::cuda
