// A 3x3 filter that commutes with reorientations, and a reorientation, in one pass (reorient_filter.cuh).
//
// Each block owns 32x32 output pixels of one frame. The input pixels they come from form a 32x32 tile too; it is
// staged with a one-pixel halo (34x34 pixels, the halo by the border rule), each row from the 16-byte boundary at
// or before its first byte, 128 bytes, so that the interior tiles of packed frames stage as 16-byte vectors. Each
// thread then makes four adjacent output pixels of a row, twelve bytes as three words: the filter at each one's
// source pixel, read around it in the staged tile in the input's own orientation (where the filter gives the same
// value as in the output's). The four source pixels lie a fixed step apart in the tile (a row for the
// axis-swapping ops, a pixel for the others, either way round), so every read is the first one's address plus a
// constant. Staged rows are 33 words apart, an odd count, so the staged rows that a transposing warp reads across
// sit in distinct banks. The words go to a second shared tile, from which consecutive threads store a row's
// consecutive words, as 16- or 8-byte vectors where the rows allow: stored straight from the threads that made them,
// each store of a warp wrote every third word of its rows and so reached each 32-byte sector three times, which
// kept the L2 busy (94% under Nsight Compute) with DRAM at 39%.
#include "reorient_filter.cuh"

#include "aos_tile.cuh"
#include "cuda_check.hpp"
#include "launch.cuh"
#include "pixel.cuh"

#include <cstdint>
#include <stdexcept>

namespace imgpipe::cuda {
namespace {

constexpr int kTile = 32;                      // output (and source) pixels per tile side
constexpr int kStagedPixels = kTile + 2;       // with the halo
constexpr int kStagedBytes = 128;             // a row's 3 * 34 bytes after up to 15 before them
constexpr int kStride = 4 * 33;                // bytes per staged row: whole words, an odd count of them
constexpr int kPixelsPerThread = 4;            // twelve bytes, three words
constexpr int kThreadsX = kTile / kPixelsPerThread;
constexpr int kThreadsY = kTile;               // one output row each
constexpr int kThreads = kThreadsX * kThreadsY;
constexpr int kRowWords = 3 * kTile / 4;       // an output tile row's 96 bytes
static_assert(kTile * kRowWords % kThreads == 0, "the store loop takes whole rounds of the block's threads");
// Registers capped so that eight blocks fill an SM's 2,048 threads: one 720p frame's 920 blocks are then one wave
// on 132 SMs where six blocks per SM (the 38 to 40 registers the sobel kernels take uncapped) would make two.
constexpr int kBlocksPerSm = 8;
static_assert(kStagedBytes >= 3 * kStagedPixels + 15 && kStride >= kStagedBytes,
              "a staged row holds the tile's row and its halo from the 16-byte boundary before them");

// Whether the source column (x) or row (y) runs backwards as the output's runs forwards.
constexpr bool reverses_x(Reorient op) {
  return op == Reorient::rotate270 || op == Reorient::rotate180 || op == Reorient::flip_h;
}
constexpr bool reverses_y(Reorient op) {
  return op == Reorient::rotate90 || op == Reorient::rotate180 || op == Reorient::flip_v;
}

// The filter at one byte of a staged pixel: `at(dx, dy)` reads the same channel's byte of the pixel dx, dy away.
template <SymmetricFilter kFilter, class At>
__device__ __forceinline__ std::uint8_t filtered(At at) {
  if constexpr (kFilter == SymmetricFilter::sharpen) {
    const int v = 5 * at(0, 0) - at(0, -1) - at(-1, 0) - at(1, 0) - at(0, 1);
    return static_cast<std::uint8_t>(min(max(v, 0), 255));
  } else {
    return sobel_at([&](int j, int i) { return at(i - 1, j - 1); });
  }
}

// The output tile's rows, each whole in the frame and aligned for Vector, stored as Vectors by consecutive threads.
template <class Vector>
__device__ __forceinline__ void store_tile_vectors(std::uint8_t* tile_out, const AosFramesOut& out, int oy0, int tid,
                                                   const std::uint32_t* out_tile) {
  constexpr int kRowVectors = 4 * kRowWords / static_cast<int>(sizeof(Vector));
  static_assert(4 * kRowWords % sizeof(Vector) == 0, "a tile row is whole vectors");
#pragma unroll
  for (int k = 0; k < (kTile * kRowVectors + kThreads - 1) / kThreads; ++k) {
    const int i = k * kThreads + tid, out_row = i / kRowVectors;
    if (i < kTile * kRowVectors && oy0 + out_row < out.extent.height) {
      reinterpret_cast<Vector*>(tile_out + static_cast<std::size_t>(oy0 + out_row) * out.pitch)[i % kRowVectors] =
          reinterpret_cast<const Vector*>(out_tile)[i];
    }
  }
}

// Output pixel (ox, oy) comes from input pixel (x, y) = (oy, ox) for a transpose, (oy, H-1-ox) rotate90,
// (W-1-oy, ox) rotate270, (W-1-ox, H-1-oy) rotate180, (W-1-ox, oy) flip_h, (ox, H-1-oy) flip_v. `left` and `top`
// are the source tile's first column and row.
template <Reorient kOp, SymmetricFilter kFilter>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    reorient_filter3x3_aos_kernel(AosFrames in, AosFramesOut out, BorderMode border) {
  __shared__ alignas(16) std::uint8_t tile[kStagedPixels * kStride];
  // Tile row r's words at r * kRowWords: 24 words apart, so the four rows a warp writes fill all 32 banks.
  __shared__ alignas(16) std::uint32_t out_tile[kTile * kRowWords];
  constexpr bool kSwaps = swaps_axes(kOp), kReverseX = reverses_x(kOp), kReverseY = reverses_y(kOp);
  const int ox0 = blockIdx.x * kTile, oy0 = blockIdx.y * kTile;
  const int x0 = kSwaps ? oy0 : ox0, y0 = kSwaps ? ox0 : oy0;  // the source tile's corner, before reversal
  const int left = kReverseX ? in.extent.width - x0 - kTile : x0;
  const int top = kReverseY ? in.extent.height - y0 - kTile : y0;
  const int halo_byte = 3 * (left - 1);           // the first staged pixel's first byte in its row
  const int origin = halo_byte & ~15, lead = halo_byte - origin;
  wait_for_previous_grid();
  stage_aos_tile<kStagedPixels, kStagedBytes, kStride, kThreads>(
      tile, in.data + blockIdx.z * in.frame_stride, in.pitch, in.extent, origin, top - 1, border);
  __syncthreads();
  const int r = threadIdx.y, first = kPixelsPerThread * threadIdx.x;  // the thread's output row and first pixel
  if (oy0 + r < out.extent.height && ox0 + first < out.extent.width) {
    const int along_x = kSwaps ? r : first, along_y = kSwaps ? first : r;
    const int column = (kReverseX ? kTile - 1 - along_x : along_x) + 1;  // + 1: past the halo
    const int row = (kReverseY ? kTile - 1 - along_y : along_y) + 1;
    const std::uint8_t* source = tile + row * kStride + lead + 3 * column;
    // From one output pixel's source to the next one's.
    constexpr int kStep = kSwaps ? (kReverseY ? -kStride : kStride) : (kReverseX ? -3 : 3);
    std::uint32_t words[3] = {};
#pragma unroll
    for (int p = 0; p < kPixelsPerThread; ++p) {
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const std::uint8_t* centre = source + p * kStep + c;
        const auto at = [&](int dx, int dy) { return static_cast<int>(centre[dy * kStride + 3 * dx]); };
        const int byte = 3 * p + c;
        words[byte / 4] |= static_cast<std::uint32_t>(filtered<kFilter>(at)) << (8 * (byte % 4));
      }
    }
#pragma unroll
    for (int w = 0; w < 3; ++w) out_tile[r * kRowWords + 3 * threadIdx.x + w] = words[w];
  }
  __syncthreads();
  std::uint8_t* tile_out = out.data + blockIdx.z * out.frame_stride + 3 * static_cast<std::size_t>(ox0);
  const int tile_bytes = 3 * (out.extent.width - ox0);  // of a frame row from the tile's first byte
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  // A tile whose rows lie whole in the frame and start 16- or 8-byte aligned (3 * ox0 is a multiple of 32): its
  // rows as 16-byte or 8-byte vectors (a 1080x1920 output's 3,240-byte rows take 8).
  if (tile_bytes >= 3 * kTile) {
    const unsigned alignment = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(tile_out) | out.pitch);
    if ((alignment & 15u) == 0) return store_tile_vectors<uint4>(tile_out, out, oy0, tid, out_tile);
    if ((alignment & 7u) == 0) return store_tile_vectors<uint2>(tile_out, out, oy0, tid, out_tile);
  }
#pragma unroll
  for (int k = 0; k < kTile * kRowWords / kThreads; ++k) {
    const int i = k * kThreads + tid;
    const int row = i / kRowWords, byte = 4 * (i % kRowWords);
    if (oy0 + row >= out.extent.height || byte >= tile_bytes) continue;
    std::uint8_t* dst_row = tile_out + static_cast<std::size_t>(oy0 + row) * out.pitch;
    store_quad(dst_row + byte, dst_row + tile_bytes, out_tile[i]);
  }
}

template <Reorient kOp, SymmetricFilter kFilter>
void launch(const AosFrames& in, const AosFramesOut& out, int frames, BorderMode border, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(div_up(out.extent.width, kTile)),
                  static_cast<unsigned>(div_up(out.extent.height, kTile)), static_cast<unsigned>(frames));
  launch_dependent(&reorient_filter3x3_aos_kernel<kOp, kFilter>, grid, dim3(kThreadsX, kThreadsY), 0, stream, in,
                   out, border);
  IMGPIPE_CUDA_LAUNCH_CHECK("reorient_filter3x3_aos_kernel", stream);
}

template <SymmetricFilter kFilter>
void launch_for(Reorient op, const AosFrames& in, const AosFramesOut& out, int frames, BorderMode border,
                cudaStream_t stream) {
  switch (op) {
    case Reorient::transpose: return launch<Reorient::transpose, kFilter>(in, out, frames, border, stream);
    case Reorient::rotate90: return launch<Reorient::rotate90, kFilter>(in, out, frames, border, stream);
    case Reorient::rotate180: return launch<Reorient::rotate180, kFilter>(in, out, frames, border, stream);
    case Reorient::rotate270: return launch<Reorient::rotate270, kFilter>(in, out, frames, border, stream);
    case Reorient::flip_h: return launch<Reorient::flip_h, kFilter>(in, out, frames, border, stream);
    case Reorient::flip_v: return launch<Reorient::flip_v, kFilter>(in, out, frames, border, stream);
  }
  throw std::invalid_argument("reorient_filter3x3_aos: unknown reorientation");
}

}  // namespace

void reorient_filter3x3_aos(Reorient op, SymmetricFilter filter, ConstAosView first_in, std::size_t in_frame_stride,
                            AosView first_out, std::size_t out_frame_stride, int frames, BorderMode border,
                            cudaStream_t stream) {
  require(same_extent(first_out.extent, reoriented_extent(op, first_in.extent)),
          "reorient_filter3x3_aos: output extent does not match the reorientation");
  const auto [in, out] =
      aos_batch(first_in, in_frame_stride, first_out, out_frame_stride, frames, "reorient_filter3x3_aos");
  if (filter == SymmetricFilter::sharpen) {
    return launch_for<SymmetricFilter::sharpen>(op, in, out, frames, border, stream);
  }
  launch_for<SymmetricFilter::sobel>(op, in, out, frames, border, stream);
}

}  // namespace imgpipe::cuda
