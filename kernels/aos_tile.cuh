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

// Tile rows r = 0 .. kRows-1 hold frame row border_index(top + r), bytes origin .. origin + kBytes - 1 of it
// (origin may be negative): row r's byte b at tile[r * kStride + b], whatever the frame row's alignment, so that
// a word of the tile holds the same four byte positions in every row. Every thread issues all of its loads
// before it stores any (one memory latency per tile, not one per word). Where the span lies inside the frame's
// rows, starts 16-byte aligned in memory and kBytes is a multiple of 16, each load is one 16-byte vector: the
// interior tiles of packed frames, since the callers' origins are multiples of 16 there. Otherwise interior words
// come from two aligned 32-bit loads and a funnel shift, the words at the ends of the frame's span are assembled
// from bytes, and bytes past the frame's left or right edge (block-uniform) are then copied within shared
// memory from the bytes the border rule names, or read where the staged span lacks them. Called by all kThreads
// threads; the caller synchronises before reading the tile.
template <int kRows, int kBytes, int kStride, int kThreads>
__device__ __forceinline__ void stage_aos_tile(std::uint8_t* tile, const std::uint8_t* frame, std::size_t pitch,
                                               Extent e, int origin, int top, BorderMode border) {
  static_assert(kStride % 4 == 0 && kBytes <= kStride, "a tile row holds its bytes in whole words");
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int row_bytes = 3 * e.width;
  const bool rows_inside = top >= 0 && top + kRows <= e.height;
  const int begin = max(origin, 0), end = max(min(origin + kBytes, row_bytes), begin);
  const auto row_of = [&](int r) {
    const int y = rows_inside ? top + r : border_index(top + r, e.height, border);
    return reinterpret_cast<std::uintptr_t>(frame) + static_cast<std::size_t>(y) * pitch;
  };
  if constexpr (kBytes % 16 == 0) {
    const bool vectors = begin == origin && end == origin + kBytes &&
                         ((reinterpret_cast<std::uintptr_t>(frame) + origin) % 16 | pitch % 16) == 0;
    if (vectors) {
      constexpr int kVectors = kBytes / 16;
      constexpr int kLoads = (kRows * kVectors + kThreads - 1) / kThreads;
      uint4 vector[kLoads];
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        const int i = tid + j * kThreads;
        if (i >= kRows * kVectors) break;
        const int r = i / kVectors, v = i - r * kVectors;
        vector[j] = __ldg(reinterpret_cast<const uint4*>(row_of(r) + origin) + v);
      }
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        const int i = tid + j * kThreads;
        if (i >= kRows * kVectors) break;
        const int r = i / kVectors, v = i - r * kVectors;
        std::uint32_t* words = reinterpret_cast<std::uint32_t*>(tile + r * kStride) + 4 * v;
        if constexpr (kStride % 16 == 0) {
          *reinterpret_cast<uint4*>(words) = vector[j];
        } else {
          words[0] = vector[j].x, words[1] = vector[j].y, words[2] = vector[j].z, words[3] = vector[j].w;
        }
      }
      return;
    }
  }
  constexpr int kWords = (kBytes + 3) / 4;
  constexpr int kLoads = (kRows * kWords + kThreads - 1) / kThreads;
  std::uint32_t words[kLoads];
#pragma unroll
  for (int j = 0; j < kLoads; ++j) {
    const int i = tid + j * kThreads;
    if (i >= kRows * kWords) break;
    const int r = i / kWords, w = i - r * kWords;
    const std::uintptr_t row = row_of(r);
    // The tile's bytes 4w .. 4w + 3 (its byte 0 may lie outside the frame: only the address is formed).
    const std::uintptr_t at = row + static_cast<std::ptrdiff_t>(origin) + 4 * static_cast<unsigned>(w);
    const std::uintptr_t aligned = at & ~std::uintptr_t{3};
    if (aligned >= row + begin && aligned + 8 <= row + end) {
      const unsigned* pair = reinterpret_cast<const unsigned*>(aligned);
      words[j] = __funnelshift_r(__ldg(pair), __ldg(pair + 1), 8 * static_cast<unsigned>(at & 3u));
    } else {
      std::uint32_t v = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        if (at + b >= row + begin && at + b < row + end) {
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
  if (begin == origin && end == origin + kBytes) return;
  __syncthreads();  // block-uniform: the staged span is complete before the border bytes copy from it
  const int before = begin - origin, outside = before + (origin + kBytes - end);
  for (int i = tid; i < kRows * outside; i += kThreads) {
    const int r = i / outside, n = i - r * outside;
    const int byte = n < before ? origin + n : end + (n - before);
    const int pixel = byte >= 0 ? byte / 3 : -((2 - byte) / 3);
    const int source = 3 * border_index(pixel, e.width, border) + (byte - 3 * pixel);
    std::uint8_t* row = tile + r * kStride;
    row[byte - origin] = source >= begin && source < end
                             ? row[source - origin]
                             : __ldg(reinterpret_cast<const std::uint8_t*>(row_of(r)) + source);
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

// |a - b| of each 16-bit lane as max - min, which takes no lane below zero, so no borrow crosses lanes: three
// instructions on sm_90, where __vabsdiffu2 takes about ten.
__device__ __forceinline__ std::uint32_t lane_abs_diff(std::uint32_t a, std::uint32_t b) {
  return __vmaxu2(a, b) - __vminu2(a, b);
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
