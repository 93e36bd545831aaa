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

// The row stride in bytes of a staged tile `bytes` wide whose readers read words 0 .. words_read - 1 of a row
// (staged_words reads one past its window): whole words, as many as staging or reading reaches.
__host__ __device__ constexpr int aos_tile_stride(int bytes, int words_read) {
  return 4 * (bytes / 4 + 2 > words_read ? bytes / 4 + 2 : words_read);
}

// Tile rows r = 0 .. kRows-1 hold frame row border_index(top + r) and bytes [3 * left, 3 * left + kBytes) of it
// (kBytes = 3 * pixels); row r's byte b sits at tile[r * kStride + shift[r] + b]. Where the tile's columns lie
// inside the frame, which is block-uniform, rows come in as aligned 32-bit words (shift = the row's
// misalignment) and only the two words at a row's ends are assembled from bytes, so nothing outside the row is
// read. Elsewhere every byte is mapped through the border rule (shift 0). Called by all kThreads threads; the
// caller synchronises before reading.
template <int kRows, int kBytes, int kStride, int kThreads>
__device__ __forceinline__ void stage_aos_tile(std::uint8_t* tile, std::uint8_t* shift, const std::uint8_t* frame,
                                               std::size_t pitch, Extent e, int left, int top, BorderMode border) {
  constexpr int kWords = kBytes / 4 + 2;
  static_assert(4 * kWords <= kStride, "the tile's rows must hold every word of a shifted row");
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const bool inside = left >= 0 && left + kBytes / 3 <= e.width;
  if (inside) {
    for (int i = tid; i < kRows * kWords; i += kThreads) {
      const int r = i / kWords, w = i - r * kWords;
      const std::uint8_t* first =
          frame + static_cast<std::size_t>(border_index(top + r, e.height, border)) * pitch + 3 * left;
      const unsigned misalign = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(first) & 3u);
      const std::uint8_t* word = first - misalign + 4 * w;
      std::uint32_t v = 0;
      if (word >= first && word + 4 <= first + kBytes) {
        v = __ldg(reinterpret_cast<const unsigned*>(word));
      } else {
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          if (word + b >= first && word + b < first + kBytes) v |= static_cast<std::uint32_t>(__ldg(word + b)) << (8 * b);
        }
      }
      reinterpret_cast<std::uint32_t*>(tile + r * kStride)[w] = v;
      if (w == 0) shift[r] = static_cast<std::uint8_t>(misalign);
    }
    return;
  }
  for (int i = tid; i < kRows * kBytes; i += kThreads) {
    const int r = i / kBytes, b = i - r * kBytes;
    const std::uint8_t* row = frame + static_cast<std::size_t>(border_index(top + r, e.height, border)) * pitch;
    const int pixel = b / 3;
    tile[r * kStride + b] = __ldg(row + 3 * border_index(left + pixel, e.width, border) + (b - 3 * pixel));
  }
  for (int r = tid; r < kRows; r += kThreads) shift[r] = 0;
}

// kWords consecutive words of a staged row's bytes 4q onwards: word i holds bytes 4q + 4i .. 4q + 4i + 3.
template <int kWords, int kStride>
__device__ __forceinline__ void staged_words(const std::uint8_t* tile, const std::uint8_t* shift, int r, int q,
                                             std::uint32_t (&out)[kWords]) {
  const std::uint32_t* row = reinterpret_cast<const std::uint32_t*>(tile + r * kStride) + q;
  const unsigned s = 8u * shift[r];
  std::uint32_t next = row[0];
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    const std::uint32_t word = next;
    next = row[i + 1];
    out[i] = __funnelshift_r(word, next, s);
  }
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
__device__ __forceinline__ std::uint32_t even_lanes(std::uint32_t w) { return w & 0x00FF00FFu; }
__device__ __forceinline__ std::uint32_t odd_lanes(std::uint32_t w) { return (w >> 8) & 0x00FF00FFu; }

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
