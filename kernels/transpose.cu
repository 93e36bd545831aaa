// Transpose, rotate, flip: naive, tiled, tiled + padded (after cuda-samples' transpose).
//
// Why the tiled versions are fast: in a transpose, a warp that reads 32 consecutive pixels of an input row
// writes 32 pixels of an output *column*, 32 rows apart: 32 separate memory transactions per warp store.
// The tiled kernels stage a 32x32 tile in shared memory; the warp reads a tile row from global memory and,
// after the barrier, reads a tile *column* from shared memory so that its global write is one output row.
// Both global accesses are then coalesced. The unpadded tile pays for it in shared memory: its column read
// puts all 32 lanes in the same bank (32-way conflict, the read is replayed 32 times). Padding each row by one
// element shifts consecutive rows by one bank, so the column read is conflict-free. Tile elements are stored
// as 32-bit words, one bank each, so the padding works as in the textbook; the tile is 4 KiB either way.
// Rotations by 90/270 are a transpose with one axis reversed: the same tile, another output address.
// Mirror ops keep the axes; reading a row backwards is still coalesced, so they need no tile.
// The interleaved variant (reorient_aos) of the axis-swapping ops stages 32x32 pixels of the interleaved frame
// as whole words and writes each output row of the tile as whole words too, four bytes a thread, so neither
// side moves single bytes through global memory; its tile rows are 27 words, an odd count, so the 32 rows a
// warp's column read crosses sit in distinct banks. The axis-keeping ops need no tile there either: a thread
// moves four pixels as three words, reordered in registers.
#include "transpose.cuh"

#include "aos_tile.cuh"
#include "cuda_check.hpp"
#include "frame_access.cuh"
#include "launch.cuh"
#include "pixel.cuh"

#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace imgpipe::cuda {
namespace {

constexpr int kTile = kWarpSize;  // tile edge: one warp spans a tile row
constexpr int kRows = 8;   // thread rows per block; each thread moves kTile / kRows pixels per phase
const dim3 kNaiveBlock(32, 8);

// Where input pixel (x, y) of a width x height frame goes. Mirror ops are their own inverse.
__device__ __forceinline__ int2 target_of(Reorient op, int x, int y, int width, int height) {
  switch (op) {
    case Reorient::transpose: return {y, x};
    case Reorient::rotate90: return {height - 1 - y, x};
    case Reorient::rotate180: return {width - 1 - x, height - 1 - y};
    case Reorient::rotate270: return {y, width - 1 - x};
    case Reorient::flip_h: return {width - 1 - x, y};
    case Reorient::flip_v: return {x, height - 1 - y};
  }
  return {x, y};
}

__device__ __forceinline__ std::size_t offset(int x, int y, std::size_t pitch, int bytes_per_pixel = 1) {
  return static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(x) * bytes_per_pixel;
}

// One thread per input pixel: the read is coalesced, the write of a swapping op strides across rows.
__global__ void reorient_naive_kernel(Reorient op, ConstAosView in, AosView out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= in.extent.width || y >= in.extent.height) return;
  const int2 t = target_of(op, x, y, in.extent.width, in.extent.height);
  const std::uint8_t* s = in.data + offset(x, y, in.pitch, 3);
  std::uint8_t* d = out.data + offset(t.x, t.y, out.pitch, 3);
  d[0] = s[0];
  d[1] = s[1];
  d[2] = s[2];
}

// One block per 32x32 input tile of one plane (blockIdx.z). kPad = 0: tiled; kPad = 1: tiled_padded.
template <Reorient kOp, int kPad>
__global__ void __launch_bounds__(kTile* kRows) tiled_transpose_kernel(ConstPlanesView in, PlanesView out) {
  __shared__ unsigned int tile[kTile][kTile + kPad];
  const std::uint8_t* src = plane_of(in, blockIdx.z);
  std::uint8_t* dst = plane_of(out, blockIdx.z);
  const int width = in.extent.width, height = in.extent.height;
  const int x0 = blockIdx.x * kTile, y0 = blockIdx.y * kTile;

  // Each warp reads 32 consecutive pixels of an input row into a tile row.
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int x = x0 + threadIdx.x, y = y0 + j;
    if (x < width && y < height) tile[j][threadIdx.x] = src[offset(x, y, in.pitch)];
  }
  __syncthreads();
  // Each warp takes a tile column (input pixels (x, y0..y0+31)), which lands along one output row.
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int x = x0 + j, y = y0 + threadIdx.x;
    if (x < width && y < height) {
      const int2 t = target_of(kOp, x, y, width, height);
      dst[offset(t.x, t.y, out.pitch)] = static_cast<std::uint8_t>(tile[threadIdx.x][j]);
    }
  }
}

// Axis-keeping ops on frames of either layout: one thread per output pixel, reading its mirror image. Between
// planes one plane per grid layer (blockIdx.z), so a warp moves 32 consecutive bytes; to or from the
// interleaved frame one layer, each thread moving its pixel's three bytes.
template <Reorient kOp, class Source, class Target>
__global__ void mirror_kernel(Source in, Target out, Extent extent) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= extent.width || y >= extent.height) return;
  const int2 s = target_of(kOp, x, y, extent.width, extent.height);
  for (int c = static_cast<int>(blockIdx.z); c < 3; c += static_cast<int>(gridDim.z)) {
    *out.at(x, y, c) = *in.at(s.x, s.y, c);
  }
}

constexpr int kAosTileBytes = 3 * kTile;          // one tile row of interleaved pixels
constexpr int kAosQuads = kAosTileBytes / 4;      // threads across a tile row, four bytes each
constexpr int kAosStride = 4 * 27;                 // bytes per staged row
static_assert(kAosStride >= kAosTileBytes, "a staged row holds the tile's row");

// One block per 32x32 output tile of one frame (blockIdx.z): the input tile it comes from is staged, then each
// thread gathers four output bytes of a row from the tile and stores them as one word. Output pixel (ox, oy) is
// input (x, y) = (oy, ox) for a transpose, (oy, H-1-ox) rotate90, (W-1-oy, ox) rotate270; `left` and `top` are
// the input tile's first column and row.
template <Reorient kOp>
__global__ void __launch_bounds__(kAosQuads* kRows) reorient_aos_kernel(AosFrames in, AosFramesOut out) {
  __shared__ alignas(16) std::uint8_t tile[kTile * kAosStride];
  static_assert(kOp == Reorient::transpose || kOp == Reorient::rotate90 || kOp == Reorient::rotate270,
                "the axis-keeping ops run mirror_aos_kernel");
  constexpr bool kReverseX = kOp == Reorient::rotate270;
  constexpr bool kReverseY = kOp == Reorient::rotate90;
  const int ox0 = blockIdx.x * kTile, oy0 = blockIdx.y * kTile;
  const int x0 = oy0, y0 = ox0;  // the input tile's corner, before reversal
  const int left = kReverseX ? in.extent.width - x0 - kTile : x0;
  const int top = kReverseY ? in.extent.height - y0 - kTile : y0;
  wait_for_previous_grid();
  stage_aos_tile<kTile, kAosTileBytes, kAosStride, kAosQuads * kRows>(
      tile, in.data + blockIdx.z * in.frame_stride, in.pitch, in.extent, 3 * left, top, BorderMode::replicate);
  __syncthreads();
  std::uint8_t* frame = out.data + blockIdx.z * out.frame_stride;
  const std::size_t row_bytes = 3 * static_cast<std::size_t>(out.extent.width);
  const std::size_t byte_x = 3 * static_cast<std::size_t>(ox0) + 4 * threadIdx.x;
  if (byte_x >= row_bytes) return;
  for (int r = threadIdx.y; r < kTile && oy0 + r < out.extent.height; r += kRows) {
    std::uint32_t packed = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int byte = 4 * static_cast<int>(threadIdx.x) + b, pixel = byte / 3;
      const int tx = r, ty = pixel;  // in the tile, before reversal
      const int row = kReverseY ? kTile - 1 - ty : ty, column = kReverseX ? kTile - 1 - tx : tx;
      packed |= static_cast<std::uint32_t>(tile[row * kAosStride + 3 * column + byte - 3 * pixel])
                << (8 * b);
    }
    std::uint8_t* dst_row = frame + static_cast<std::size_t>(oy0 + r) * out.pitch;
    store_quad(dst_row + byte_x, dst_row + row_bytes, packed);
  }
}

// Axis-keeping ops on interleaved frames: one thread per four output pixels of a row, twelve bytes, three
// words. Its source is four adjacent pixels, in one row, read as aligned words and funnel-shifted into place
// (the shift is the row's, so a warp shares it); a left-right mirror then reverses the four pixels' order with
// byte permutes. Only a row's ends (a group cut short by the width, or words past the row's bytes) and rows
// whose output is not word aligned move single bytes.
constexpr int kMirrorGroup = 4;  // pixels per thread
constexpr int kMirrorThreadsX = 128, kMirrorThreadsY = 2;

template <Reorient kOp>
__global__ void __launch_bounds__(kMirrorThreadsX* kMirrorThreadsY) mirror_aos_kernel(AosFrames in, AosFramesOut out) {
  constexpr bool kReverseX = kOp == Reorient::flip_h || kOp == Reorient::rotate180;
  constexpr bool kReverseY = kOp == Reorient::flip_v || kOp == Reorient::rotate180;
  const int group = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int width = out.extent.width;
  if (y >= out.extent.height || kMirrorGroup * group >= width) return;
  wait_for_previous_grid();
  const int source_y = kReverseY ? out.extent.height - 1 - y : y;
  const std::uint8_t* src_row = in.data + blockIdx.z * in.frame_stride + static_cast<std::size_t>(source_y) * in.pitch;
  std::uint8_t* dst_row = out.data + blockIdx.z * out.frame_stride + static_cast<std::size_t>(y) * out.pitch;
  const int row_bytes = 3 * width;
  const int first_pixel = kMirrorGroup * group;
  std::uint8_t* dst = dst_row + 3 * first_pixel;
  if (first_pixel + kMirrorGroup <= width && (reinterpret_cast<std::uintptr_t>(dst) & 3u) == 0) {
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(src_row) +
                              3 * (kReverseX ? width - kMirrorGroup - first_pixel : first_pixel);
    const std::uintptr_t aligned = at & ~std::uintptr_t{3};
    const unsigned shift = 8 * static_cast<unsigned>(at & 3u);
    const int words = shift == 0 ? 3 : 4;
    if (aligned >= reinterpret_cast<std::uintptr_t>(src_row) &&
        aligned + 4 * words <= reinterpret_cast<std::uintptr_t>(src_row) + row_bytes) {
      const unsigned* w = reinterpret_cast<const unsigned*>(aligned);
      const unsigned w0 = __ldg(w), w1 = __ldg(w + 1), w2 = __ldg(w + 2), w3 = shift == 0 ? 0u : __ldg(w + 3);
      // Source pixels A B C D as bytes: i0 = A0 A1 A2 B0, i1 = B1 B2 C0 C1, i2 = C2 D0 D1 D2.
      const unsigned i0 = __funnelshift_r(w0, w1, shift), i1 = __funnelshift_r(w1, w2, shift),
                     i2 = __funnelshift_r(w2, w3, shift);
      unsigned* d = reinterpret_cast<unsigned*>(dst);
      if constexpr (kReverseX) {  // D C B A: D0 D1 D2 C0, C1 C2 B0 B1, B2 A0 A1 A2
        d[0] = __byte_perm(i1, i2, 0x2765);
        d[1] = __byte_perm(__byte_perm(i1, i2, 0x0043), i0, 0x2710);
        d[2] = __byte_perm(i0, i1, 0x2105);
      } else {
        d[0] = i0;
        d[1] = i1;
        d[2] = i2;
      }
      return;
    }
  }
  for (int b = 0; b < 3 * kMirrorGroup && 3 * first_pixel + b < row_bytes; ++b) {
    const int pixel = first_pixel + b / 3;
    dst[b] = src_row[3 * (kReverseX ? width - 1 - pixel : pixel) + b % 3];
  }
}

template <Reorient kOp>
void launch_mirror_aos(const AosFrames& in, const AosFramesOut& out, int frames, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(div_up(div_up(out.extent.width, kMirrorGroup), kMirrorThreadsX)),
                  static_cast<unsigned>(div_up(out.extent.height, kMirrorThreadsY)), static_cast<unsigned>(frames));
  launch_dependent(&mirror_aos_kernel<kOp>, grid, dim3(kMirrorThreadsX, kMirrorThreadsY), 0, stream, in, out);
  IMGPIPE_CUDA_LAUNCH_CHECK("mirror_aos_kernel", stream);
}

template <Reorient kOp>
void launch_reorient_aos(const AosFrames& in, const AosFramesOut& out, int frames, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(div_up(out.extent.width, kTile)),
                  static_cast<unsigned>(div_up(out.extent.height, kTile)), static_cast<unsigned>(frames));
  launch_dependent(&reorient_aos_kernel<kOp>, grid, dim3(kAosQuads, kRows), 0, stream, in, out);
  IMGPIPE_CUDA_LAUNCH_CHECK("reorient_aos_kernel", stream);
}

template <Reorient kOp, int kPad>
void launch_tile(ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  const dim3 block(kTile, kRows);
  tiled_transpose_kernel<kOp, kPad><<<cover(in.extent.width, in.extent.height, dim3(kTile, kTile), 3), block, 0,
                                      stream>>>(in, out);
  IMGPIPE_CUDA_LAUNCH_CHECK(kPad == 0 ? "tiled_transpose_kernel" : "tiled_transpose_kernel (padded)", stream);
}

template <Reorient kOp>
void launch_mirror(const ConstFrameView& in, const FrameView& out, cudaStream_t stream) {
  const Extent extent = out.extent();
  const int layers = in.interleaved || out.interleaved ? 1 : 3;
  with_layouts(in, out, [&](const auto& source, const auto& target) {
    constexpr auto kernel = &mirror_kernel<kOp, std::decay_t<decltype(source)>, std::decay_t<decltype(target)>>;
    const dim3 block = warp_wide_block(occupancy_shape<kernel>());
    kernel<<<cover(extent.width, extent.height, block, layers), block, 0, stream>>>(source, target, extent);
  });
  IMGPIPE_CUDA_LAUNCH_CHECK("mirror_kernel", stream);
}

template <int kPad>
void launch_planes(Reorient op, ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  require(same_extent(out.extent, reoriented_extent(op, in.extent)), "reorient: output extent does not match the op");
  switch (op) {
    case Reorient::transpose: return launch_tile<Reorient::transpose, kPad>(in, out, stream);
    case Reorient::rotate90: return launch_tile<Reorient::rotate90, kPad>(in, out, stream);
    case Reorient::rotate270: return launch_tile<Reorient::rotate270, kPad>(in, out, stream);
    case Reorient::rotate180:
    case Reorient::flip_h:
    case Reorient::flip_v: return reorient_mirror(op, as_frame(in), as_frame(out), stream);
  }
  throw std::invalid_argument("reorient: unknown op");
}

}  // namespace

void reorient_naive(Reorient op, ConstAosView in, AosView out, cudaStream_t stream) {
  require(same_extent(out.extent, reoriented_extent(op, in.extent)), "reorient: output extent does not match the op");
  reorient_naive_kernel<<<cover(in.extent.width, in.extent.height, kNaiveBlock), kNaiveBlock, 0, stream>>>(op, in, out);
  IMGPIPE_CUDA_LAUNCH_CHECK("reorient_naive_kernel", stream);
}

void reorient_mirror(Reorient op, const ConstFrameView& in, const FrameView& out, cudaStream_t stream) {
  require(same_extent(out.extent(), in.extent()), "reorient: output extent does not match the op");
  if (in.interleaved && out.interleaved && !swaps_axes(op)) {
    const std::size_t height = static_cast<std::size_t>(in.aos.extent.height);
    return reorient_aos(op, in.aos, in.aos.pitch * height, out.aos, out.aos.pitch * height, 1, stream);
  }
  switch (op) {
    case Reorient::rotate180: return launch_mirror<Reorient::rotate180>(in, out, stream);
    case Reorient::flip_h: return launch_mirror<Reorient::flip_h>(in, out, stream);
    case Reorient::flip_v: return launch_mirror<Reorient::flip_v>(in, out, stream);
    default: break;
  }
  throw std::invalid_argument("reorient_mirror: only rotate180 and the flips keep the axes");
}

void reorient_aos(Reorient op, ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                  std::size_t out_frame_stride, int frames, cudaStream_t stream) {
  require(same_extent(first_out.extent, reoriented_extent(op, first_in.extent)),
          "reorient: output extent does not match the op");
  const auto [in, out] = aos_batch(first_in, in_frame_stride, first_out, out_frame_stride, frames, "reorient_aos");
  switch (op) {
    case Reorient::transpose: return launch_reorient_aos<Reorient::transpose>(in, out, frames, stream);
    case Reorient::rotate90: return launch_reorient_aos<Reorient::rotate90>(in, out, frames, stream);
    case Reorient::rotate180: return launch_mirror_aos<Reorient::rotate180>(in, out, frames, stream);
    case Reorient::rotate270: return launch_reorient_aos<Reorient::rotate270>(in, out, frames, stream);
    case Reorient::flip_h: return launch_mirror_aos<Reorient::flip_h>(in, out, frames, stream);
    case Reorient::flip_v: return launch_mirror_aos<Reorient::flip_v>(in, out, frames, stream);
  }
  throw std::invalid_argument("reorient: unknown op");
}

void reorient_tiled(Reorient op, ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  launch_planes<0>(op, in, out, stream);
}

void reorient_tiled_padded(Reorient op, ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  launch_planes<1>(op, in, out, stream);
}

}  // namespace imgpipe::cuda
