// Filters: a naive 2-D correlation on the interleaved frame; separable and 3x3 tiled kernels on planes, which
// also read or write the interleaved frame itself (one channel per grid layer, pixels 3 bytes apart) where the
// optimized path runs them first or last in a chain among plane stages; and interleaved tiled kernels, batched,
// in integer arithmetic, which the optimized path runs wherever a chain needs no planes (section below).
//
// Why the optimized versions are fast:
// - Work: a KxK filter costs K^2 multiply-adds per output done directly, 2K as a row pass and a column pass.
//   One kernel does both: the block loads its tile plus a K-1 halo into shared memory once, the row pass
//   writes a float intermediate (halo rows included) to shared memory, the column pass reads it. The
//   intermediate never touches DRAM and is never rounded to 8 bits.
// - Memory: every input byte is read from DRAM once per block instead of K^2 times through L1, in coalesced
//   warp rows; the naive kernel also reads the three channels of a pixel 3 bytes apart.
// - Taps: in __constant__ memory every lane of a warp reads the same tap at the same time, which the constant
//   cache broadcasts in one transaction; the naive kernel's taps come through the general load path. Templates
//   on the radius unroll the tap loops.
// - Borders: the naive kernel tests each tap of each pixel against the frame. Here a block decides once, from
//   its own coordinates, whether its tile and halo lie inside the frame; that is uniform across the block, so
//   no warp diverges on it, interior blocks (nearly all of them) run a branch-free load, and only edge blocks
//   map indices through reflect101/replicate.
#include "convolve.cuh"

#include "aos_tile.cuh"
#include "channel_range.cuh"
#include "cuda_check.hpp"
#include "launch.cuh"
#include "pixel.cuh"
#include "tap_slots.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

namespace imgpipe::cuda {
namespace {

__constant__ float c_taps[kTapSlots][kMaxTaps];  // 15.5 KiB of constant memory
__constant__ int c_int_taps[kTapSlots][kMaxTaps];  // the same taps in units of 1 / ConstantTaps::unit()

TapSlots& tap_slots() {
  static TapSlots slots;
  return slots;
}

// Optimized tiles: a block of 32x8 threads computes 64x32 outputs of one plane (blockIdx.z), so each warp
// row covers 32 consecutive bytes and each thread 8 outputs, amortising the halo over a wide tile.
constexpr int kBlockX = kWarpSize;
constexpr int kBlockY = 8;
constexpr int kTileW = 64;
constexpr int kTileH = 32;
const dim3 kNaiveBlock(32, 8);

__device__ __forceinline__ std::size_t offset(int x, int y, std::size_t pitch) {
  return static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(x);
}

// ---------------------------------------------------------------------------------------------- naive

__global__ void filter2d_naive_kernel(ConstAosView in, AosView out, const float* taps, int ksize, float scale,
                                      BorderMode border) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int width = in.extent.width, height = in.extent.height;
  if (x >= width || y >= height) return;
  const int r = ksize / 2;
  float acc[3] = {0.f, 0.f, 0.f};
  for (int j = 0; j < ksize; ++j) {
    int sy = y + j - r;
    if (sy < 0 || sy >= height) sy = border_index(sy, height, border);
    for (int i = 0; i < ksize; ++i) {
      int sx = x + i - r;
      if (sx < 0 || sx >= width) sx = border_index(sx, width, border);
      const float w = taps[j * ksize + i];
      const std::uint8_t* p = in.data + offset(3 * sx, sy, in.pitch);
      for (int c = 0; c < 3; ++c) acc[c] = fmaf(w, p[c], acc[c]);
    }
  }
  std::uint8_t* d = out.data + offset(3 * x, y, out.pitch);
  for (int c = 0; c < 3; ++c) d[c] = saturate_round(acc[c] * scale);
}

__global__ void sobel_naive_kernel(ConstAosView in, AosView out, BorderMode border) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int width = in.extent.width, height = in.extent.height;
  if (x >= width || y >= height) return;
  int sx[3], sy[3];
  for (int k = 0; k < 3; ++k) {
    sx[k] = x + k - 1;
    if (sx[k] < 0 || sx[k] >= width) sx[k] = border_index(sx[k], width, border);
    sy[k] = y + k - 1;
    if (sy[k] < 0 || sy[k] >= height) sy[k] = border_index(sy[k], height, border);
  }
  std::uint8_t* d = out.data + offset(3 * x, y, out.pitch);
  for (int c = 0; c < 3; ++c) {
    d[c] = sobel_at([&](int j, int i) { return static_cast<int>(in.data[offset(3 * sx[i] + c, sy[j], in.pitch)]); });
  }
}

// ------------------------------------------------------------------------------------------ optimized

// Rows [top, top + kRows) and columns [left, left + kCols) of a plane into `tile`, with the frame's border
// rule outside it. The branch depends only on the block's coordinates: uniform, no warp diverges on it.
// kUniform false is the ablation twin (BorderPolicy::per_element): every element is tested against the frame
// and mapped when outside, as the naive kernel does, so warps at the frame's edges diverge. kStep is the
// distance between a row's pixels: 1 in a plane, 3 for one channel of the interleaved frame.
template <int kRows, int kCols, bool kUniform = true, int kStep = 1>
__device__ __forceinline__ void load_tile(std::uint8_t (&tile)[kRows][kCols], const std::uint8_t* plane,
                                          std::size_t pitch, Extent e, int left, int top, BorderMode border) {
  if constexpr (!kUniform) {
    for (int r = threadIdx.y; r < kRows; r += kBlockY) {
      int sy = top + r;
      if (sy < 0 || sy >= e.height) sy = border_index(sy, e.height, border);
      const std::uint8_t* row = plane + offset(0, sy, pitch);
      for (int c = threadIdx.x; c < kCols; c += kBlockX) {
        int sx = left + c;
        if (sx < 0 || sx >= e.width) sx = border_index(sx, e.width, border);
        tile[r][c] = row[kStep * sx];
      }
    }
    return;
  }
  const bool inside = left >= 0 && top >= 0 && left + kCols <= e.width && top + kRows <= e.height;
  if (inside) {
    const std::uint8_t* src = plane + offset(kStep * left, top, pitch);
    for (int r = threadIdx.y; r < kRows; r += kBlockY)
      for (int c = threadIdx.x; c < kCols; c += kBlockX) tile[r][c] = src[offset(kStep * c, r, pitch)];
  } else {
    for (int r = threadIdx.y; r < kRows; r += kBlockY) {
      const std::uint8_t* row = plane + offset(0, border_index(top + r, e.height, border), pitch);
      for (int c = threadIdx.x; c < kCols; c += kBlockX) {
        tile[r][c] = row[kStep * border_index(left + c, e.width, border)];
      }
    }
  }
}

// The separable filter over a staged tile, the row pass for every tile row (halo rows included) into `rows`, then
// the column pass; `write(r, c, value)` stores output (r, c) of the tile, for those inside the frame (`extent`
// from tile origin x0, y0). Called by every thread of the block after the tile is staged and a barrier.
template <int kRadius, class Write>
__device__ __forceinline__ void filter_staged_tile(
    const std::uint8_t (&tile)[kTileH + 2 * kRadius][kTileW + 2 * kRadius], float (&rows)[kTileH + 2 * kRadius][kTileW],
    const float* taps, float scale, Extent extent, int x0, int y0, Write write) {
  constexpr int kTaps = 2 * kRadius + 1;
  constexpr int kInRows = kTileH + 2 * kRadius;
  for (int r = threadIdx.y; r < kInRows; r += kBlockY)
    for (int c = threadIdx.x; c < kTileW; c += kBlockX) {
      float acc = 0.f;
#pragma unroll
      for (int k = 0; k < kTaps; ++k) acc = fmaf(taps[k], tile[r][c + k], acc);
      rows[r][c] = acc;
    }
  __syncthreads();
  for (int r = threadIdx.y; r < kTileH && y0 + r < extent.height; r += kBlockY)
    for (int c = threadIdx.x; c < kTileW && x0 + c < extent.width; c += kBlockX) {
      float acc = 0.f;
#pragma unroll
      for (int k = 0; k < kTaps; ++k) acc = fmaf(taps[k], rows[r + k][c], acc);
      write(r, c, saturate_round(acc * scale));
    }
}

// Two resident blocks per SM at least; without the hint ptxas squeezes the 31-tap version into 40 registers
// and spills. kGlobalTaps and kUniformBorder select the ablation twins (separable_planes_variant); the
// optimized path runs <kRadius, false, true>. kInStep and kOutStep are 3 where the input or output is the
// interleaved frame (channels_of): its channel c is a "plane" starting at byte c with pixels 3 bytes apart.
template <int kRadius, bool kGlobalTaps = false, bool kUniformBorder = true, int kInStep = 1, int kOutStep = 1>
__global__ void __launch_bounds__(kBlockX* kBlockY, 2)
    separable_kernel(ConstPlanesView in, PlanesView out, int slot, const float* global_taps, float scale,
                     BorderMode border) {
  constexpr int kInRows = kTileH + 2 * kRadius;
  constexpr int kInCols = kTileW + 2 * kRadius;
  __shared__ std::uint8_t tile[kInRows][kInCols];
  __shared__ float rows[kInRows][kTileW];  // row pass for every tile row, halo rows included
  const int x0 = blockIdx.x * kTileW, y0 = blockIdx.y * kTileH;
  const float* taps = kGlobalTaps ? global_taps : c_taps[slot];

  load_tile<kInRows, kInCols, kUniformBorder, kInStep>(tile, plane_of(in, blockIdx.z), in.pitch, in.extent,
                                                       x0 - kRadius, y0 - kRadius, border);
  __syncthreads();
  std::uint8_t* dst = plane_of(out, blockIdx.z);
  filter_staged_tile<kRadius>(tile, rows, taps, scale, out.extent, x0, y0, [&](int r, int c, std::uint8_t v) {
    dst[offset(kOutStep * (x0 + c), y0 + r, out.pitch)] = v;
  });
}

using Tile3x3 = std::uint8_t[kTileH + 2][kTileW + 2];

// Output (r, c) of the tile from its 3x3 window tile[r..r+2][c..c+2].
struct Taps3x3 {
  int slot;
  float scale;
  __device__ std::uint8_t operator()(const Tile3x3& t, int r, int c) const {
    const float* taps = c_taps[slot];
    float acc = 0.f;
#pragma unroll
    for (int j = 0; j < 3; ++j)
#pragma unroll
      for (int i = 0; i < 3; ++i) acc = fmaf(taps[3 * j + i], t[r + j][c + i], acc);
    return saturate_round(acc * scale);
  }
};

struct Sobel3x3 {
  __device__ std::uint8_t operator()(const Tile3x3& t, int r, int c) const {
    return sobel_at([&](int j, int i) { return static_cast<int>(t[r + j][c + i]); });
  }
};

// kInStep, kOutStep: as separable_kernel's.
template <class Window, int kInStep, int kOutStep>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    filter3x3_kernel(ConstPlanesView in, PlanesView out, BorderMode border, Window window) {
  __shared__ Tile3x3 tile;
  const int x0 = blockIdx.x * kTileW, y0 = blockIdx.y * kTileH;
  load_tile<kTileH + 2, kTileW + 2, true, kInStep>(tile, plane_of(in, blockIdx.z), in.pitch, in.extent, x0 - 1,
                                                   y0 - 1, border);
  __syncthreads();
  std::uint8_t* dst = plane_of(out, blockIdx.z);
  for (int r = threadIdx.y; r < kTileH && y0 + r < out.extent.height; r += kBlockY)
    for (int c = threadIdx.x; c < kTileW && x0 + c < out.extent.width; c += kBlockX)
      dst[offset(kOutStep * (x0 + c), y0 + r, out.pitch)] = window(tile, r, c);
}

// ---------------------------------------------------------------------------- interleaved, batched
//
// A block covers 64x32 output pixels of one frame (blockIdx.z), or 64x16 in short launches (AosTiles), with 256
// threads. The tile and its halo are staged as words whose four bytes are the same positions in every row
// (stage_aos_tile), the halo rounded up to 16 bytes a side so that the staged rows of packed frames start 16-byte
// aligned and load as vectors. The separable filter then runs its column pass first, on words: the taps are integers
// (ConstantTaps::unit), so one 32-bit multiply-add weighs two bytes at once in 16-bit lanes, and the column sums (at
// most 255 times the taps' sum) fit them, in shared memory too. The row pass weighs those sums in 32 bits, each byte
// position a 16-bit lane of a 16-byte shared load, and each thread stores eight output bytes as one 8-byte word.
// Integer sums make the order of the passes free: the bytes are those of the float row-then-column kernels above
// (sums exact there too). sobel and other 3x3 taps weigh the staged words directly, in registers.
constexpr int kAosTileW = 64;
constexpr int kAosTileH = 32;                 // the tile's rows for launches of two waves of blocks or more
constexpr int kAosHalfTileH = 16;             // for shorter launches, whose blocks of kAosTileH rows leave SMs idle
constexpr int kAosQuads = 3 * kAosTileW / 4;  // four-byte groups of an output row
constexpr int kAosThreads = 256;
constexpr int kColumnRows = 8;  // output rows of one column-pass item: each staged word is read once per item

// The blocks per SM an interleaved filter kernel's registers are capped for, where it is (__launch_bounds__; an
// explicit 1 would let ptxas take many more). Eight blocks of 256 threads fill an SM's 2,048 threads at 32
// registers a thread, which ptxas meets without spilling in separable_aos_kernel up to radius 3, in
// filter3x3_aos_kernel and sobel_aos_kernel, and in the 64x16 tiles of short launches (AosTiles) of
// gray_sobel_luma_kernel. Uncapped, ptxas chose 36 to 45 registers for most of them: six blocks, so that one 720p
// frame's 920 blocks took two waves on an H100 (6 x 132 resident) where eight make one, and a batch kept fewer
// tiles' loads in flight. Not capped: separable_aos_kernel from radius 4 on (mostly 40 to 50 registers uncapped),
// and the 64x32 tiles of gray_sobel_luma_kernel (whose two-row items spill at 32).
constexpr int kAosFullSmBlocks = 8;

// Staged bytes each side of a tile row's 3 * kAosTileW output bytes: the taps' reach rounded up to 16.
__host__ __device__ constexpr int aos_halo_bytes(int radius) { return (3 * radius + 15) / 16 * 16; }
__host__ __device__ constexpr int aos_stride(int radius) { return 3 * kAosTileW + 2 * aos_halo_bytes(radius); }
// The column pass keeps the sums of the staged words the row pass reads: from the one holding the first tap's
// byte, kept at first_sum_word(r), to the one holding the last tap's.
__host__ __device__ constexpr int first_sum_word(int radius) { return (aos_halo_bytes(radius) - 3 * radius) / 4; }
__host__ __device__ constexpr int sum_words(int radius) {
  return (aos_halo_bytes(radius) + 3 * kAosTileW + 3 * radius + 3) / 4 - first_sum_word(radius);
}
// Output byte 4q + c of a tile row weighs the sums at positions 4q + c + 3k + sum_lead(r) from the first kept one,
// tap k = 0 .. 2r.
__host__ __device__ constexpr int sum_lead(int radius) { return (aos_halo_bytes(radius) - 3 * radius) % 4; }

// separable_aos_kernel keeps a kept word's column sums as its two words of 16-bit lanes (positions 0 and 2, 1 and
// 3), eight bytes: half of what four 32-bit positions take, and half the shared-memory traffic of the row pass,
// which was that kernel's busiest unit. Output octet p reads the words from 2p on, two a 16-byte load; a tile row
// holds the sums of sum_words(r) kept words and as many more (never weighed for an output byte) as the last
// octet's loads reach.
__host__ __device__ constexpr int octet_lane_vectors(int radius) {
  return ((sum_lead(radius) + 7 + 6 * radius) / 4 + 2) / 2;  // 16-byte loads of the words its taps reach
}
__host__ __device__ constexpr int lane_sum_row_words(int radius) {
  const int read = 2 * (3 * kAosTileW / 8 - 1) + 2 * octet_lane_vectors(radius);
  return read > sum_words(radius) ? read : (sum_words(radius) + 1) / 2 * 2;
}

// The shared memory of an interleaved filter block: the staged tile, then (separable_aos_kernel, dynamic) its column
// sums as 16-bit lanes.
template <int kTileH>
__host__ __device__ constexpr int aos_tile_bytes(int radius) {
  return (kTileH + 2 * radius) * aos_stride(radius);
}
template <int kTileH>
__host__ __device__ constexpr int separable_aos_shared_bytes(int radius) {
  return aos_tile_bytes<kTileH>(radius) + kTileH * lane_sum_row_words(radius) * 8;
}

// Stages the block's tile of frame blockIdx.z, kTileH rows and the halo, and waits for it.
template <int kRadius, int kTileH>
__device__ __forceinline__ void stage_filter_tile(std::uint8_t* tile, const AosFrames& in, BorderMode border) {
  constexpr int kHalo = aos_halo_bytes(kRadius);
  stage_aos_tile<kTileH + 2 * kRadius, aos_stride(kRadius), aos_stride(kRadius), kAosThreads>(
      tile, in.data + blockIdx.z * in.frame_stride, in.pitch, in.extent, 3 * kAosTileW * blockIdx.x - kHalo,
      kTileH * blockIdx.y - kRadius, border);
  __syncthreads();
}

// Gray first (gray,sobel and gray,sharpen as one launch): every staged pixel the taps reach becomes its luma in
// all three bytes, the gray op's bytes, before the filter reads the tile. The tile's first pixel starts
// aos_halo_bytes(r), a multiple of 16, into its staged row, so four pixels from it, or 12k bytes before or after
// it, are three whole words: an item reads them, takes the four lumas by luma_of_word and writes the three words
// back, six shared-memory accesses for four pixels where byte by byte takes twenty-four.
template <int kRadius, int kTileH>
__device__ __forceinline__ void luma_tile(std::uint8_t* tile) {
  constexpr int kSideGroups = (kRadius + 3) / 4;  // four-pixel groups each side of the tile's that the taps reach
  constexpr int kGroups = kAosTileW / 4 + 2 * kSideGroups;
  constexpr int kFirstByte = aos_halo_bytes(kRadius) - 12 * kSideGroups;
  static_assert(kFirstByte >= 0 && kFirstByte % 4 == 0 && kFirstByte + 12 * kGroups <= aos_stride(kRadius),
                "a staged row holds every group as three whole words");
  constexpr int kRows = kTileH + 2 * kRadius;
  for (int i = threadIdx.x; i < kRows * kGroups; i += kAosThreads) {
    const int r = i / kGroups;
    auto* group =
        reinterpret_cast<std::uint32_t*>(tile + r * aos_stride(kRadius) + kFirstByte) + 3 * (i - r * kGroups);
    const std::uint32_t w[3] = {group[0], group[1], group[2]};
    const std::uint32_t l0 = luma_of_word(w[0]), l1 = luma_of_word(bytes_at<3>(w)), l2 = luma_of_word(bytes_at<6>(w)),
                        l3 = luma_of_word(w[2] >> 8);
    group[0] = l0 * 0x010101u | l1 << 24;
    group[1] = l1 * 0x0101u | l2 * 0x01010000u;
    group[2] = l2 | l3 * 0x01010100u;
  }
  __syncthreads();
}

// The column pass's sums for staged rows r0 .. r0 + kColumnRows + 2 * kRadius - 1 of kept word w, for every
// (item, w) of the tile: `column(r0, w, tile_word)` stores them, tile_word(i) giving staged row r0 + i's word.
template <int kRadius, int kTileH, class Column>
__device__ __forceinline__ void for_column_items(const std::uint8_t* tile, Column&& column) {
  static_assert(kTileH % kColumnRows == 0, "a column item's rows must not cross the tile's last row");
  constexpr int kWords = sum_words(kRadius);
  for (int item = threadIdx.x; item < kWords * (kTileH / kColumnRows); item += kAosThreads) {
    const int r0 = item / kWords * kColumnRows, w = item % kWords;
    const auto* first =
        reinterpret_cast<const std::uint32_t*>(tile + r0 * aos_stride(kRadius)) + first_sum_word(kRadius) + w;
    column(r0, w, [&](int i) { return first[i * (aos_stride(kRadius) / 4)]; });
  }
  __syncthreads();
}

// The last pass's sum, started at divide.bias, as a byte: the integer division where there is one
// (ConstantTaps::separable_divide, the same bytes as the float product for every sum of its taps), else the float
// product, as the float kernels round it.
__device__ __forceinline__ std::uint32_t scaled_byte(std::uint32_t sum, ByteDivide divide, float scale) {
  if (divide.multiplier != 0) return __umulhi(sum, divide.multiplier);
  return saturate_round(__uint2float_rn(sum) * scale);
}

// Every output octet (eight bytes of an output row) of the block's tile that lies in the frame, spread over the
// block's threads: `octet(r, p)` gives bytes 8p .. 8p + 7 of tile row r, stored as one 8-byte word where possible.
// Each eight threads (a phase of a warp's 16-byte shared loads) take eight neighbouring octets of one row. A
// thread's items are kAosThreads apart, a whole number of rows and of octets on: each item's row and octet follow
// from the last one's by an addition, not a division.
constexpr int kAosOctets = 3 * kAosTileW / 8;
template <int kTileH, class Octet>
__device__ __forceinline__ void store_tile_octets(const AosFramesOut& out, Octet&& octet) {
  static_assert(kAosOctets % 8 == 0 && kAosThreads % kAosOctets % 8 == 0,
                "each eight threads take octets of one row, in every step of items");
  constexpr int kItems = kAosOctets * kTileH;
  constexpr int kStepRows = kAosThreads / kAosOctets;
  constexpr int kStepOctets = kAosThreads % kAosOctets;
  const int x0 = blockIdx.x * kAosTileW, y0 = blockIdx.y * kTileH;
  std::uint8_t* tile_out = out.data + blockIdx.z * out.frame_stride + static_cast<std::size_t>(y0) * out.pitch + 3 * x0;
  const int tile_rows = out.extent.height - y0;        // of the frame, from the tile's first row on
  const int tile_bytes = 3 * (out.extent.width - x0);  // of a frame row from the tile's first byte: 32 bits hold it
  int r = threadIdx.x / kAosOctets;
  int p = threadIdx.x % kAosOctets;
#pragma unroll
  for (int k = 0; k < (kItems + kAosThreads - 1) / kAosThreads; ++k) {
    if (kItems % kAosThreads == 0 || k * kAosThreads + static_cast<int>(threadIdx.x) < kItems) {
      const int byte_x = 8 * p;
      if (r < tile_rows && byte_x < tile_bytes) {
        std::uint8_t* dst = tile_out + static_cast<unsigned>(r) * out.pitch + static_cast<unsigned>(byte_x);
        const uint2 bytes = octet(r, p);
        if ((reinterpret_cast<std::uintptr_t>(dst) & 7u) == 0 && byte_x + 8 <= tile_bytes) {
          *reinterpret_cast<uint2*>(dst) = bytes;
        } else {
          const std::uint8_t* row_end = dst - byte_x + tile_bytes;
          store_quad(dst, row_end, bytes.x);
          if (byte_x + 4 < tile_bytes) store_quad(dst + 4, row_end, bytes.y);
        }
      }
    }
    r += kStepRows, p += kStepOctets;
    if (p >= kAosOctets) r += 1, p -= kAosOctets;
  }
}

// How separable_aos_kernel weighs and rounds its sums (ConstantTaps): `weighted`, integer taps with the bytes
// rounded by scaled_byte; `top_byte`, the scale is 2^-16 and the taps sum to 256 (the Gaussian's integer taps,
// unit 256), so an output byte is byte 2 of its sum plus 2^15, the four packed by byte permutes. The 2^15 comes in
// as 128 in every column sum (128 * 256 after the row taps; a lane then holds at most 128 + 255 * 256 < 2^16, a
// sum less than 2^24), which spares the row pass an addend per byte. `ones`, every tap 1 (the box's): both passes
// take window sums by additions instead of a multiply-add per tap (column_window_sums; the row pass steps each
// byte from the one three bytes before it).
enum class SeparableSums { weighted, top_byte, ones };

// The column sums of staged words tile_word(0 .. kColumnRows + kTaps - 2) for kColumnRows outputs, each as two
// words of 16-bit lanes given to `store(m, even, odd)` as soon as it is known: output 0 is the sum of its window's
// words, each later one the one before plus the word that enters its window less the word that leaves it. Every
// lane of every output lies in 0 .. 31 * 255, so the 32-bit additions and subtractions give each lane's own result
// (a borrow between lanes on the way cancels).
template <int kTaps, class TileWord, class Store>
__device__ __forceinline__ void column_window_sums(TileWord&& tile_word, Store&& store) {
  constexpr int kWords = kColumnRows + kTaps - 1;
  std::uint32_t even_of[kWords], odd_of[kWords];
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    const std::uint32_t word = tile_word(i);
    even_of[i] = even_lanes(word);
    odd_of[i] = odd_lanes(word);
  }
  std::uint32_t even = 0, odd = 0;
#pragma unroll
  for (int i = 0; i < kTaps; ++i) even += even_of[i], odd += odd_of[i];
  store(0, even, odd);
#pragma unroll
  for (int m = 1; m < kColumnRows; ++m) {
    even += even_of[m + kTaps - 1] - even_of[m - 1];
    odd += odd_of[m + kTaps - 1] - odd_of[m - 1];
    store(m, even, odd);
  }
}

// Tiles of kTileH rows.
template <int kRadius, SeparableSums kSums, int kTileH>
__global__ void __launch_bounds__(kAosThreads, kRadius <= 3 ? kAosFullSmBlocks : 0)
    separable_aos_kernel(AosFrames in, AosFramesOut out, int slot, ByteDivide divide, float scale, BorderMode border) {
  constexpr int kTaps = 2 * kRadius + 1;
  constexpr int kRowWords = lane_sum_row_words(kRadius);
  constexpr int kLead = sum_lead(kRadius);
  constexpr int kVectors = octet_lane_vectors(kRadius);
  static_assert(kRowWords % 2 == 0 && aos_tile_bytes<kTileH>(kRadius) % 16 == 0 &&
                    kLead + 7 + 3 * (kTaps - 1) < 8 * kVectors,
                "an octet's sums start 16-byte aligned, and its loads hold every position its taps reach");
  extern __shared__ uint4 aos_shared[];
  std::uint8_t* tile = reinterpret_cast<std::uint8_t*>(aos_shared);
  // [kTileH][kRowWords] kept words' sums, each as its even and odd lane words
  uint2* sums = reinterpret_cast<uint2*>(aos_shared + aos_tile_bytes<kTileH>(kRadius) / 16);
  std::uint32_t tap[kTaps];  // in registers, read before the tile's loads wait (ones: known, not read)
#pragma unroll
  for (int k = 0; k < kTaps; ++k) {
    tap[k] = kSums == SeparableSums::ones ? 1u : static_cast<std::uint32_t>(c_int_taps[slot][k]);
  }
  wait_for_previous_grid();
  stage_filter_tile<kRadius, kTileH>(tile, in, border);
  for_column_items<kRadius, kTileH>(tile, [&](int r0, int w, auto tile_word) {
    const auto store = [&](int m, std::uint32_t even, std::uint32_t odd) {
      sums[(r0 + m) * kRowWords + w] = make_uint2(even, odd);
    };
    if constexpr (kSums == SeparableSums::ones) {
      column_window_sums<kTaps>(tile_word, store);
    } else {
      constexpr std::uint32_t kStart = kSums == SeparableSums::top_byte ? 128u * 0x00010001u : 0u;
      std::uint32_t even[kColumnRows], odd[kColumnRows];
#pragma unroll
      for (int m = 0; m < kColumnRows; ++m) even[m] = odd[m] = kStart;
#pragma unroll
      for (int i = 0; i < kColumnRows + kTaps - 1; ++i) {
        const std::uint32_t word = tile_word(i);
        const std::uint32_t e = even_lanes(word), o = odd_lanes(word);
#pragma unroll
        for (int m = 0; m < kColumnRows; ++m) {
          const int k = i - m;
          if (k < 0 || k >= kTaps) continue;
          even[m] += tap[k] * e;
          odd[m] += tap[k] * o;
        }
      }
#pragma unroll
      for (int m = 0; m < kColumnRows; ++m) store(m, even[m], odd[m]);
    }
  });
  // Eight neighbouring octets of one row (a phase of a warp's 16-byte loads) read 128 contiguous bytes.
  store_tile_octets<kTileH>(out, [&](int r, int p) {
    std::uint32_t position[8 * kVectors];
    const uint4* words = reinterpret_cast<const uint4*>(sums + r * kRowWords + 2 * p);
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      const uint4 pair = words[v];
      const uint4 first = lane_positions(pair.x, pair.y), second = lane_positions(pair.z, pair.w);
      position[8 * v] = first.x, position[8 * v + 1] = first.y, position[8 * v + 2] = first.z;
      position[8 * v + 3] = first.w, position[8 * v + 4] = second.x, position[8 * v + 5] = second.y;
      position[8 * v + 6] = second.z, position[8 * v + 7] = second.w;
    }
    std::uint32_t sum[8];
    if constexpr (kSums == SeparableSums::ones) {
      // Bytes c and c + 3 share all but one position at each end: three window sums, then one step each.
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        sum[c] = divide.bias;
#pragma unroll
        for (int k = 0; k < kTaps; ++k) sum[c] += position[kLead + c + 3 * k];
      }
#pragma unroll
      for (int c = 3; c < 8; ++c) sum[c] = sum[c - 3] + position[kLead + c + 3 * (kTaps - 1)] - position[kLead + c - 3];
    } else {
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        sum[c] = kSums == SeparableSums::top_byte ? 0u : divide.bias;
#pragma unroll
        for (int k = 0; k < kTaps; ++k) sum[c] += tap[k] * position[kLead + c + 3 * k];
      }
    }
    if constexpr (kSums == SeparableSums::top_byte) {
      const auto quad = [&](int c) {
        return __byte_perm(__byte_perm(sum[c], sum[c + 1], 0x0062), __byte_perm(sum[c + 2], sum[c + 3], 0x0062),
                           0x5410);
      };
      return make_uint2(quad(0), quad(4));
    } else {
      std::uint32_t packed[2] = {};
#pragma unroll
      for (int c = 0; c < 8; ++c) packed[c / 4] |= scaled_byte(sum[c], divide, scale) << (8 * (c % 4));
      return make_uint2(packed[0], packed[1]);
    }
  });
}

// Runs body(r0, q, row, rows, store) for each item of the block's output tile of an interleaved frame: kRows output
// rows of one quad (four bytes of a row), from tile row r0, which starts frame row `row`; `rows` of them are
// inside the frame. store(row, bytes) writes the quad of a frame row: one 32-bit store where the frame and its
// pitch allow, else no byte past the row's end.
template <int kTileH, int kRows, typename Body>
__device__ __forceinline__ void for_each_quad_item(const AosFramesOut& out, Body&& body) {
  static_assert(kTileH % kRows == 0, "an item's rows must not cross the tile's last row");
  std::uint8_t* frame = out.data + blockIdx.z * out.frame_stride;
  const int x0 = blockIdx.x * kAosTileW, y0 = blockIdx.y * kTileH;
  const std::size_t row_bytes = 3 * static_cast<std::size_t>(out.extent.width);
  // Quads start 4-byte aligned in every row where the frame and its pitch are (3 * x0 is a multiple of 4).
  const bool aligned_rows = ((reinterpret_cast<std::uintptr_t>(frame) | out.pitch) & 3u) == 0;
  for (int item = threadIdx.x; item < kAosQuads * (kTileH / kRows); item += kAosThreads) {
    const int r0 = item / kAosQuads * kRows, q = item % kAosQuads;
    const std::size_t byte_x = 3 * static_cast<std::size_t>(x0) + 4 * q;
    if (byte_x >= row_bytes) continue;
    const bool word_stores = aligned_rows && byte_x + 4 <= row_bytes;
    const auto store = [&](std::uint8_t* row, std::uint32_t bytes) {
      if (word_stores) {
        *reinterpret_cast<std::uint32_t*>(row + byte_x) = bytes;
      } else {
        store_quad(row + byte_x, row + row_bytes, bytes);
      }
    };
    body(r0, q, frame + static_cast<std::size_t>(y0 + r0) * out.pitch, out.extent.height - (y0 + r0), store);
  }
}

constexpr std::uint32_t kSobelLaneBias = 4u * 255u * 0x00010001u;  // Gx and Gy's zero in both 16-bit lanes

// |Gx| + |Gy| of every byte, kRows output rows of one quad (four bytes of a row) an item, in 16-bit lanes and
// registers: each staged row's horizontal smooth sum s = left + 2 centre + right and difference d = right - left +
// 255 (the same channel's bytes, three apart), then per output row Gx + 4 * 255 = d(above) + 2 d(at) + d(below)
// and Gy + 4 * 255 = s(below) - s(above) + 4 * 255, each in 0 .. 2040. Only the staged tile is in shared memory:
// column sums kept there made the kernel bound by its shared-memory traffic and bank conflicts.
template <bool kGrayFirst, int kTileH>
__global__ void __launch_bounds__(kAosThreads, kAosFullSmBlocks)
    sobel_aos_kernel(AosFrames in, AosFramesOut out, BorderMode border) {
  constexpr int kStride = aos_stride(1);
  constexpr int kFirstWord = first_sum_word(1);  // holds byte -3 of the first output quad, at kLead
  constexpr int kLead = sum_lead(1);
  __shared__ alignas(16) std::uint8_t tile[aos_tile_bytes<kTileH>(1)];
  wait_for_previous_grid();
  stage_filter_tile<1, kTileH>(tile, in, border);
  if constexpr (kGrayFirst) luma_tile<1, kTileH>(tile);
  // Eight output rows an item in 64x32 tiles: ten staged rows read for eight outputs, where two four-row items read
  // twelve, and the 192 items of a tile one per thread. The 64x16 tiles of short launches keep four, for 192 items.
  constexpr int kRows = kTileH == kAosTileH ? 8 : 4;
  for_each_quad_item<kTileH, kRows>(out, [&](int r0, int q, std::uint8_t* row, int rows, const auto& store) {
    std::uint32_t smooth[kRows + 2][2], diff[kRows + 2][2];  // [staged row][even, odd lanes]
#pragma unroll
    for (int i = 0; i < kRows + 2; ++i) {
      std::uint32_t w[3];
      tile_words<3, kStride>(tile, r0 + i, kFirstWord + q, w);
      // pixels -1, 0, +1 of the quad's four bytes
      const std::uint32_t left = bytes_at<kLead>(w), centre = bytes_at<kLead + 3>(w), right = bytes_at<kLead + 6>(w);
      smooth[i][0] = even_lanes(left) + 2 * even_lanes(centre) + even_lanes(right);
      smooth[i][1] = odd_lanes(left) + 2 * odd_lanes(centre) + odd_lanes(right);
      diff[i][0] = even_lanes(right) + 0x00FF00FFu - even_lanes(left);
      diff[i][1] = odd_lanes(right) + 0x00FF00FFu - odd_lanes(left);
      const int m = i - 2;  // the output row whose staged rows are all known now
      if (m < 0) continue;
      if (m >= rows) break;
      std::uint32_t magnitude[2];
#pragma unroll
      for (int parity = 0; parity < 2; ++parity) {
        const std::uint32_t gx = diff[m][parity] + 2 * diff[m + 1][parity] + diff[m + 2][parity];
        const std::uint32_t gy = smooth[m + 2][parity] + kSobelLaneBias - smooth[m][parity];
        // |Gx| + |Gy|, clamped to 255
        magnitude[parity] =
            __vminu2(lane_abs_diff(gx, kSobelLaneBias) + lane_abs_diff(gy, kSobelLaneBias), 0x00FF00FFu);
      }
      store(row, __byte_perm(magnitude[0], magnitude[1], 0x6240));  // positions 0, 1, 2, 3
      row += out.pitch;
    }
  });
}

// Gray, sobel and normalize's range in one launch. The block stages its tile as sobel_aos_kernel does, turns pixels
// x0 - 1 .. x0 + kAosTileW of each staged row into one luma byte each, and takes the sobel of those: the three
// channels are equal after gray, so one byte per pixel is the whole result, computed once instead of three times.
// It goes into luma frame blockIdx.z, four pixels (one word) an item, and its minimum and maximum are folded into
// that frame's range words as every channel's.
constexpr int kLumaTileStride = kAosTileW + 4;  // a luma row: pixels x0 - 1 .. x0 + kAosTileW + 2, whole words
constexpr int kLumaWords = kLumaTileStride / 4;

template <int kTileH>
__global__ void __launch_bounds__(kAosThreads, kTileH == kAosHalfTileH ? kAosFullSmBlocks : 0)
    gray_sobel_luma_kernel(AosFrames in, LumaFrames out, unsigned* range, BorderMode border) {
  constexpr int kRows = kTileH + 2;
  constexpr int kFirstPixel = aos_halo_bytes(1) - 3;  // pixel x0 - 1's first byte in a staged row
  static_assert(kFirstPixel % 4 == 1 && aos_stride(1) % 4 == 0 &&
                    kFirstPixel - 1 + 12 * (kLumaWords - 1) + 16 <= aos_stride(1),
                "a luma word's 12 staged bytes start one byte into a staged word, and every such word is in the row");
  constexpr int kQuads = kAosTileW / 4;
  __shared__ alignas(16) std::uint8_t tile[aos_tile_bytes<kTileH>(1)];
  __shared__ alignas(4) std::uint8_t lumas[kRows * kLumaTileStride];
  wait_for_previous_grid();
  stage_filter_tile<1, kTileH>(tile, in, border);
  // Luma word w of a row: pixels x0 - 1 + 4w .. x0 + 2 + 4w, whose 12 bytes are bytes 1 .. 12 of the four staged
  // words from kFirstPixel - 1 + 12w: four word loads and one word store instead of twelve byte loads and four
  // byte stores, each pixel's bytes funnel-shifted into one word for luma_of_word.
  for (int i = threadIdx.x; i < kRows * kLumaWords; i += kAosThreads) {
    const int r = i / kLumaWords, w = i - r * kLumaWords;
    const auto* staged = reinterpret_cast<const std::uint32_t*>(tile + r * aos_stride(1) + kFirstPixel - 1 + 12 * w);
    const std::uint32_t word[4] = {staged[0], staged[1], staged[2], staged[3]};
    const std::uint32_t pixel[4] = {bytes_at<1>(word), bytes_at<4>(word), bytes_at<7>(word), bytes_at<10>(word)};
    std::uint32_t packed = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) packed |= static_cast<std::uint32_t>(luma_of_word(pixel[k])) << (8 * k);
    reinterpret_cast<std::uint32_t*>(lumas + r * kLumaTileStride)[w] = packed;
  }
  __syncthreads();
  std::uint8_t* frame = out.data + blockIdx.z * out.frame_stride;
  const int x0 = blockIdx.x * kAosTileW, y0 = blockIdx.y * kTileH;
  // An item is four pixels of kItemRows rows, which share all but two of the luma rows they read: two rows in
  // 32-row tiles (one item a thread), one in 16-row tiles, whose 256 one-row items are as many as the threads.
  constexpr int kItemRows = kTileH == kAosTileH ? 2 : 1;
  constexpr int kLumaRows = kItemRows + 2;
  static_assert(kTileH % kItemRows == 0, "an item's rows must not cross the tile's last row");
  std::uint32_t lo = 0xFFFFFFFFu, hi = 0u;  // per byte lane, over the thread's pixels
  for (int item = threadIdx.x; item < kQuads * (kTileH / kItemRows); item += kAosThreads) {
    const int r0 = item / kQuads * kItemRows, q = item % kQuads;
    const int x = x0 + 4 * q;
    if (y0 + r0 >= out.extent.height || x >= out.extent.width) continue;
    // Luma columns 4q .. 4q + 7 (pixels x - 1 .. x + 6) of the rows from the one above the item's first to the one
    // below its last, as 16-bit lanes: word h's even columns 4h, 4h + 2 and odd ones 4h + 1, 4h + 3.
    std::uint32_t lanes[kLumaRows][2][2];  // [row][h][even, odd]
#pragma unroll
    for (int i = 0; i < kLumaRows; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const std::uint32_t word = reinterpret_cast<const std::uint32_t*>(lumas + (r0 + i) * kLumaTileStride)[q + h];
        lanes[i][h][0] = word & 0x00FF00FFu;
        lanes[i][h][1] = __byte_perm(word, 0, 0x4341);  // bytes 1 and 3 into lanes 0 and 1
      }
    }
    const int n = min(4, out.extent.width - x);
    const std::uint32_t kept = n == 4 ? 0xFFFFFFFFu : (1u << (8 * n)) - 1;  // the lanes of pixels in the frame
#pragma unroll
    for (int m = 0; m < kItemRows; ++m) {
      const int y = y0 + r0 + m;
      if (y >= out.extent.height) break;
      // Per column, in lanes: the smooth sum s = above + 2 at + below and the difference d = below - above + 255.
      std::uint32_t smooth[2][2], diff[2][2];  // [h][even, odd]
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int parity = 0; parity < 2; ++parity) {
          smooth[h][parity] = lanes[m][h][parity] + 2 * lanes[m + 1][h][parity] + lanes[m + 2][h][parity];
          diff[h][parity] = lanes[m + 2][h][parity] + 0x00FF00FFu - lanes[m][h][parity];
        }
      }
      // Pixel x + k takes columns k (left), k + 1 and k + 2 (right). Pixels k and k + 2 are the lanes of one
      // parity: their right columns are that parity's lanes one column pair on (the high lane, then word 1's low
      // lane).
      const auto next_pair = [](std::uint32_t pair, std::uint32_t next) { return __byte_perm(pair, next, 0x5432); };
      std::uint32_t magnitude[2];  // [parity]: pixels parity and parity + 2, in lanes
#pragma unroll
      for (int parity = 0; parity < 2; ++parity) {
        const std::uint32_t left = smooth[0][parity], right = next_pair(left, smooth[1][parity]);
        // Gy + 4 * 255 of pixels parity and parity + 2: d(k) + 2 d(k + 1) + d(k + 2), at most 2040.
        const std::uint32_t centre_diff = parity == 0 ? diff[0][1] : next_pair(diff[0][0], diff[1][0]);
        const std::uint32_t gy = diff[0][parity] + 2 * centre_diff + next_pair(diff[0][parity], diff[1][parity]);
        magnitude[parity] = __vminu2(lane_abs_diff(right, left) + lane_abs_diff(gy, kSobelLaneBias), 0x00FF00FFu);
      }
      const std::uint32_t packed = __byte_perm(magnitude[0], magnitude[1], 0x6240);  // pixels 0, 1, 2, 3
      std::uint8_t* dst = frame + static_cast<std::size_t>(y) * out.pitch + x;
      store_quad(dst, dst + n, packed);
      lo = __vminu4(lo, packed | ~kept);
      hi = __vmaxu4(hi, packed & kept);
    }
  }
  lo = __vminu4(lo, lo >> 16), lo = __vminu4(lo, lo >> 8);  // byte 0: the least of the four lanes
  hi = __vmaxu4(hi, hi >> 16), hi = __vmaxu4(hi, hi >> 8);
  ChannelRange pixels;
  pixels.add((lo & 0xFFu) * 0x010101u, (hi & 0xFFu) * 0x010101u);
  fold_block(pixels, range + kRangeWords * blockIdx.z);
}

// Any nine integer taps (the slot's) on the staged words in 16-bit lanes, each lane starting at `bias` (255 times
// the negative taps' sum), which keeps it from going negative; the unbiased sum is scaled and rounded. kSharpen:
// the taps are sharpen's cross (ConstantTaps::sharpen_cross), known when compiled, so its four zero corners cost
// no instruction and its -1s are subtractions.
template <bool kGrayFirst, int kTileH, bool kSharpen>
__global__ void __launch_bounds__(kAosThreads, kAosFullSmBlocks)
    filter3x3_aos_kernel(AosFrames in, AosFramesOut out, BorderMode border, int slot, std::uint32_t bias, float scale) {
  constexpr int kStride = aos_stride(1);
  constexpr int kFirstWord = first_sum_word(1);  // holds byte -3 of the first output quad, at kLead
  constexpr int kLead = sum_lead(1);
  __shared__ alignas(16) std::uint8_t tile[aos_tile_bytes<kTileH>(1)];
  wait_for_previous_grid();
  stage_filter_tile<1, kTileH>(tile, in, border);
  if constexpr (kGrayFirst) luma_tile<1, kTileH>(tile);
  const auto tap = [&](int i) -> int {
    if constexpr (kSharpen) return i == 4 ? 5 : i % 2 == 1 ? -1 : 0;
    return c_int_taps[slot][i];
  };
  // kRows output rows of one quad per item, each staged row read once. Sharpen's taps are constants: it makes eight
  // rows an item in 64x32 tiles (the tile's 192 items one per thread), storing each row as soon as its third staged
  // row is in, so that three rows' sums are live, which fits 32 registers. Taps from constant memory keep four rows
  // stored at the end: storing early, or eight rows, spilled them.
  constexpr bool kStoreEarly = kSharpen;
  constexpr int kRows = kStoreEarly && kTileH == kAosTileH ? 8 : 4;
  for_each_quad_item<kTileH, kRows>(out, [&](int r0, int q, std::uint8_t* row, int rows, const auto& store) {
    std::uint32_t even[kRows], odd[kRows];
#pragma unroll
    for (int m = 0; m < kRows; ++m) even[m] = odd[m] = bias * 0x00010001u;
    const auto packed = [&](int m) {
      if (kSharpen || scale == 1.f) {
        // Both 16-bit lanes of a word at once: max(lane, bias) - bias, at most 255 (no borrow crosses lanes).
        const std::uint32_t biases = bias * 0x00010001u;
        const auto clamp = [&](std::uint32_t lanes) { return __vminu2(__vmaxu2(lanes, biases) - biases, 0x00FF00FFu); };
        return __byte_perm(clamp(even[m]), clamp(odd[m]), 0x6240);  // positions 0, 1, 2, 3
      }
      const uint4 lanes = lane_positions(even[m], odd[m]);
      const std::uint32_t value[4] = {lanes.x, lanes.y, lanes.z, lanes.w};
      std::uint32_t bytes = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int v = static_cast<int>(value[b]) - static_cast<int>(bias);
        bytes |= static_cast<std::uint32_t>(saturate_round(static_cast<float>(v) * scale)) << (8 * b);
      }
      return bytes;
    };
#pragma unroll
    for (int i = 0; i < kRows + 2; ++i) {
      std::uint32_t w[3];
      tile_words<3, kStride>(tile, r0 + i, kFirstWord + q, w);
      // pixels -1, 0, +1 of the quad's four bytes
      const std::uint32_t across[3] = {bytes_at<kLead>(w), bytes_at<kLead + 3>(w), bytes_at<kLead + 6>(w)};
#pragma unroll
      for (int m = 0; m < kRows; ++m) {
        const int j = i - m;
        if (j < 0 || j > 2) continue;
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          const auto t = static_cast<std::uint32_t>(tap(3 * j + c));
          even[m] += t * even_lanes(across[c]);
          odd[m] += t * odd_lanes(across[c]);
        }
      }
      if constexpr (kStoreEarly) {
        const int m = i - 2;  // the output row whose staged rows are all in now
        if (m < 0) continue;
        if (m >= rows) break;
        store(row, packed(m));
        row += out.pitch;
      }
    }
    if constexpr (!kStoreEarly) {
#pragma unroll
      for (int m = 0; m < kRows; ++m, row += out.pitch) {
        if (m >= rows) break;
        store(row, packed(m));
      }
    }
  });
}

// One instantiation per radius; the launch picks it at run time.
using SeparableKernel = void (*)(ConstPlanesView, PlanesView, int, const float*, float, BorderMode);
template <bool kGlobalTaps, bool kUniformBorder, int kInStep, int kOutStep, int... R>
std::array<SeparableKernel, sizeof...(R)> separable_kernels(std::integer_sequence<int, R...>) {
  return {&separable_kernel<R + 1, kGlobalTaps, kUniformBorder, kInStep, kOutStep>...};
}

// A frame of either layout as the tiled filters read it: three "planes" with pixels 1 or 3 bytes apart,
// those of the interleaved frame starting at its bytes 0, 1 and 2.
ConstPlanesView channels_of(const ConstFrameView& f) {
  if (!f.interleaved) return f.planes;
  return {{f.aos.data, f.aos.data + 1, f.aos.data + 2}, f.aos.extent, f.aos.pitch};
}
PlanesView channels_of(const FrameView& f) {
  if (!f.interleaved) return f.planes;
  return {{f.aos.data, f.aos.data + 1, f.aos.data + 2}, f.aos.extent, f.aos.pitch};
}

// The entry of a [in interleaved][out interleaved] table of instantiations for these frames.
template <class Table>
const auto& by_layout(const Table& table, const ConstFrameView& in, const FrameView& out) {
  return table[in.interleaved ? 1 : 0][out.interleaved ? 1 : 0];
}

dim3 tile_grid(Extent e) { return cover(e.width, e.height, dim3(kTileW, kTileH), 3); }

void require_filter(Extent in, Extent out, const char* what) {
  require(same_extent(in, out), std::string(what) + ": input and output extents differ");
  require(in.width > 0 && in.height > 0, std::string(what) + ": empty frame");
}

}  // namespace

ConstantTaps::ConstantTaps(std::span<const float> taps, float scale)
    : size_(static_cast<int>(taps.size())), scale_(scale) {
  require(!taps.empty() && taps.size() <= static_cast<std::size_t>(kMaxTaps),
          "ConstantTaps: 1 to " + std::to_string(kMaxTaps) + " taps");
  std::array<int, kMaxTaps> integers{};
  for (const int unit : {1, 256}) {
    bool whole = true;
    for (std::size_t k = 0; k < taps.size() && whole; ++k) {
      const double units = static_cast<double>(taps[k]) * unit;
      whole = std::nearbyint(units) == units && std::abs(units) <= 65535;
      if (whole) integers[k] = static_cast<int>(units);
    }
    if (!whole) continue;
    unit_ = unit;
    for (std::size_t k = 0; k < taps.size(); ++k) {
      (integers[k] > 0 ? positive_sum_ : negative_sum_) += std::abs(integers[k]);
    }
    break;
  }
  if (unit_ > 0 && negative_sum_ == 0) {
    const auto max_sum = 255LL * positive_sum_ * positive_sum_;
    const float separable_scale = scale / static_cast<float>(unit_ * unit_);  // of sums in units of 1 / unit^2
    separable_top_byte_ = separable_scale == 0x1p-16f && positive_sum_ == 256;
    if (!separable_top_byte_ && max_sum < (1 << 24)) {
      separable_divide_ = exact_byte_divide(separable_scale, static_cast<std::uint32_t>(max_sum)).value_or(ByteDivide{});
    }
  }
  all_ones_ = unit_ == 1 && std::all_of(integers.begin(), integers.begin() + size_, [](int tap) { return tap == 1; });
  constexpr std::array<int, 9> kSharpenCross = {0, -1, 0, -1, 5, -1, 0, -1, 0};
  sharpen_cross_ = unit_ == 1 && scale == 1.f && taps.size() == kSharpenCross.size() &&
                   std::equal(kSharpenCross.begin(), kSharpenCross.end(), integers.begin());
  slot_ = TapSlot(tap_slots(), taps, [&](int slot) {
    IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_taps, taps.data(), taps.size_bytes(),
                                          static_cast<std::size_t>(slot) * sizeof(c_taps[0])));
    IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_int_taps, integers.data(), taps.size() * sizeof(int),
                                          static_cast<std::size_t>(slot) * sizeof(c_int_taps[0])));
    wait_for_uploads();
  });
}

void filter2d_naive(ConstAosView in, AosView out, const float* taps, int ksize, float scale, BorderMode border,
                    cudaStream_t stream) {
  require_filter(in.extent, out.extent, "filter2d_naive");
  require(ksize % 2 == 1 && ksize >= 1 && ksize <= kMaxTaps,
          "filter2d_naive: odd kernel size up to " + std::to_string(kMaxTaps));
  filter2d_naive_kernel<<<cover(in.extent.width, in.extent.height, kNaiveBlock), kNaiveBlock, 0, stream>>>(
      in, out, taps, ksize, scale, border);
  IMGPIPE_CUDA_LAUNCH_CHECK("filter2d_naive_kernel", stream);
}

void sobel_naive(ConstAosView in, AosView out, BorderMode border, cudaStream_t stream) {
  require_filter(in.extent, out.extent, "sobel_naive");
  sobel_naive_kernel<<<cover(in.extent.width, in.extent.height, kNaiveBlock), kNaiveBlock, 0, stream>>>(in, out,
                                                                                                     border);
  IMGPIPE_CUDA_LAUNCH_CHECK("sobel_naive_kernel", stream);
}

void separable_planes(ConstPlanesView in, PlanesView out, const ConstantTaps& taps, BorderMode border,
                      cudaStream_t stream) {
  separable_frames(as_frame(in), as_frame(out), taps, border, stream);
}

void separable_frames(const ConstFrameView& in, const FrameView& out, const ConstantTaps& taps, BorderMode border,
                      cudaStream_t stream) {
  require_filter(in.extent(), out.extent(), "separable");
  require(taps.size() % 2 == 1 && taps.size() >= 3 && taps.size() <= kMaxTaps,
          "separable: odd tap count from 3 to " + std::to_string(kMaxTaps));
  constexpr auto kRadii = std::make_integer_sequence<int, kMaxRadius>{};
  static const std::array<std::array<std::array<SeparableKernel, kMaxRadius>, 2>, 2> kernels = {
      {{separable_kernels<false, true, 1, 1>(kRadii), separable_kernels<false, true, 1, 3>(kRadii)},
       {separable_kernels<false, true, 3, 1>(kRadii), separable_kernels<false, true, 3, 3>(kRadii)}}};
  by_layout(kernels, in, out)[taps.size() / 2 - 1]<<<tile_grid(in.extent()), dim3(kBlockX, kBlockY), 0, stream>>>(
      channels_of(in), channels_of(out), taps.slot(), nullptr, taps.scale(), border);
  IMGPIPE_CUDA_LAUNCH_CHECK("separable_kernel", stream);
}

void separable_planes_variant(ConstPlanesView in, PlanesView out, const ConstantTaps& taps, const float* global_taps,
                              TapSource source, BorderPolicy policy, BorderMode border, cudaStream_t stream) {
  require_filter(in.extent, out.extent, "separable_planes_variant");
  require(taps.size() % 2 == 1 && taps.size() >= 3 && taps.size() <= kMaxTaps,
          "separable_planes_variant: odd tap count from 3 to " + std::to_string(kMaxTaps));
  require(source == TapSource::constant || global_taps != nullptr,
          "separable_planes_variant: TapSource::global needs the taps in device memory");
  constexpr auto kRadii = std::make_integer_sequence<int, kMaxRadius>{};
  static const std::array<std::array<SeparableKernel, kMaxRadius>, 4> kernels = {
      separable_kernels<false, true, 1, 1>(kRadii), separable_kernels<false, false, 1, 1>(kRadii),
      separable_kernels<true, true, 1, 1>(kRadii), separable_kernels<true, false, 1, 1>(kRadii)};
  const int variant = (source == TapSource::global ? 2 : 0) + (policy == BorderPolicy::per_element ? 1 : 0);
  kernels[variant][taps.size() / 2 - 1]<<<tile_grid(in.extent), dim3(kBlockX, kBlockY), 0, stream>>>(
      in, out, taps.slot(), global_taps, taps.scale(), border);
  IMGPIPE_CUDA_LAUNCH_CHECK("separable_kernel (variant)", stream);
}

namespace {

// A lane holds 0 .. 65535: the row pass's sums (255 times the taps' sum) must fit, and the column pass's
// (255 times its square) must stay exact in float with the rounding's half added, as the float kernels' are.
constexpr long long kLaneLimit = 65536;
constexpr long long kFloatExact = 1LL << 24;

std::pair<AosFrames, AosFramesOut> aos_frames(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                                              std::size_t out_frame_stride, int frames, const char* what) {
  require_filter(first_in.extent, first_out.extent, what);
  return aos_batch(first_in, in_frame_stride, first_out, out_frame_stride, frames, what);
}

dim3 aos_tile_grid(Extent e, int frames, int tile_height = kAosTileH) {
  return dim3(static_cast<unsigned>(div_up(e.width, kAosTileW)), static_cast<unsigned>(div_up(e.height, tile_height)),
              static_cast<unsigned>(frames));
}

// Blocks of `kernel` (kAosThreads threads, `shared_bytes` of dynamic shared memory) the current device holds at
// once, asked once per kernel and device.
int resident_blocks(const void* kernel, int shared_bytes) {
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, int> known;
  const std::scoped_lock lock(mutex);
  const auto found = known.find({device, kernel});
  if (found != known.end()) return found->second;
  int per_sm = 0;
  IMGPIPE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kAosThreads, shared_bytes));
  const int blocks = std::max(1, per_sm) * device_attribute(cudaDevAttrMultiProcessorCount);
  known.emplace(std::pair{device, kernel}, blocks);
  return blocks;
}

// Whether this launch takes tiles of kAosHalfTileH rows: as `tiles` says, or by its blocks of kAosTileH rows
// against the residency of `full_kernel`, the kernel of those.
bool takes_half_tiles(AosTiles tiles, Extent extent, int frames, const void* full_kernel, int full_shared_bytes) {
  if (tiles != AosTiles::by_launch) return tiles == AosTiles::half;
  const dim3 grid = aos_tile_grid(extent, frames);
  return aos_half_tiles_pay(static_cast<long long>(grid.x) * grid.y * grid.z,
                            resident_blocks(full_kernel, full_shared_bytes));
}

// Calls launch(std::integral_constant<int, H>{}) with the tile height H this launch takes.
template <class Launch>
void with_tile_height(AosTiles tiles, Extent extent, int frames, const void* full_kernel, int full_shared_bytes,
                      Launch&& launch) {
  if (takes_half_tiles(tiles, extent, frames, full_kernel, full_shared_bytes)) {
    launch(std::integral_constant<int, kAosHalfTileH>{});
  } else {
    launch(std::integral_constant<int, kAosTileH>{});
  }
}

struct SeparableAosKernel {
  void (*kernel)(AosFrames, AosFramesOut, int, ByteDivide, float, BorderMode);
  int shared_bytes;
};

template <SeparableSums kSums, int kTileH, int... R>
auto separable_aos_kernels(std::integer_sequence<int, R...>) {
  return std::array<SeparableAosKernel, sizeof...(R)>{
      SeparableAosKernel{&separable_aos_kernel<R + 1, kSums, kTileH>, separable_aos_shared_bytes<kTileH>(R + 1)}...};
}

}  // namespace

bool aos_half_tiles_pay(long long full_tile_blocks, int resident_blocks) {
  return full_tile_blocks < 2LL * resident_blocks;
}

bool separable_aos_takes(const ConstantTaps& taps) {
  const long long sum = taps.positive_sum();
  return taps.unit() > 0 && taps.negative_sum() == 0 && 255 * sum < kLaneLimit &&
         255 * sum * sum + kLaneLimit / 2 < kFloatExact;
}

bool filter3x3_aos_takes(const ConstantTaps& taps) {
  return taps.size() == 9 && taps.unit() == 1 && 255LL * (taps.positive_sum() + taps.negative_sum()) < kLaneLimit;
}

void separable_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                   int frames, const ConstantTaps& taps, BorderMode border, cudaStream_t stream, AosTiles tiles) {
  require(taps.size() % 2 == 1 && taps.size() >= 3 && taps.size() <= kMaxTaps,
          "separable_aos: odd tap count from 3 to " + std::to_string(kMaxTaps));
  const auto [in, out] = aos_frames(first_in, in_frame_stride, first_out, out_frame_stride, frames, "separable_aos");
  if (!separable_aos_takes(taps)) {
    for (int f = 0; f < frames; ++f) {
      separable_frames(as_frame(frame_at(first_in, in_frame_stride, f)),
                       as_frame(frame_at(first_out, out_frame_stride, f)), taps, border, stream);
    }
    return;
  }
  // The sum is in units of 1 / unit^2.
  const float scale = taps.scale() / static_cast<float>(taps.unit() * taps.unit());
  constexpr auto kRadii = std::make_integer_sequence<int, kMaxRadius>{};
  // By how the sums are taken, then full and half tiles, then radius.
  using ByRadius = std::array<SeparableAosKernel, kMaxRadius>;
  static const std::array<std::array<ByRadius, 2>, 3> kernels = {{
      {separable_aos_kernels<SeparableSums::weighted, kAosTileH>(kRadii),
       separable_aos_kernels<SeparableSums::weighted, kAosHalfTileH>(kRadii)},
      {separable_aos_kernels<SeparableSums::top_byte, kAosTileH>(kRadii),
       separable_aos_kernels<SeparableSums::top_byte, kAosHalfTileH>(kRadii)},
      {separable_aos_kernels<SeparableSums::ones, kAosTileH>(kRadii),
       separable_aos_kernels<SeparableSums::ones, kAosHalfTileH>(kRadii)},
  }};
  const SeparableSums sums = taps.separable_top_byte() ? SeparableSums::top_byte
                             : taps.all_ones()         ? SeparableSums::ones
                                                       : SeparableSums::weighted;
  const auto& by_height = kernels[static_cast<std::size_t>(sums)];
  const std::size_t radius_index = taps.size() / 2 - 1;
  const SeparableAosKernel& full = by_height[0][radius_index];
  // Radius 13 and up needs more than 48 KiB, allowed before the kernel's occupancy is asked.
  allow_dynamic_shared(full.kernel, full.shared_bytes);
  const bool half =
      takes_half_tiles(tiles, in.extent, frames, reinterpret_cast<const void*>(full.kernel), full.shared_bytes);
  const SeparableAosKernel& k = by_height[half ? 1 : 0][radius_index];
  allow_dynamic_shared(k.kernel, k.shared_bytes);
  launch_dependent(k.kernel, aos_tile_grid(in.extent, frames, half ? kAosHalfTileH : kAosTileH), dim3(kAosThreads),
                   k.shared_bytes, stream, in, out, taps.slot(), taps.separable_divide(), scale, border);
  IMGPIPE_CUDA_LAUNCH_CHECK("separable_aos_kernel", stream);
}

namespace {

template <bool kGrayFirst>
void launch_filter3x3_aos(const AosFrames& in, const AosFramesOut& out, int frames, const ConstantTaps& taps,
                          BorderMode border, AosTiles tiles, cudaStream_t stream) {
  const auto launch = [&](auto sharpen) {
    const auto* full = reinterpret_cast<const void*>(&filter3x3_aos_kernel<kGrayFirst, kAosTileH, sharpen()>);
    with_tile_height(tiles, in.extent, frames, full, 0, [&](auto tile_height) {
      launch_dependent(&filter3x3_aos_kernel<kGrayFirst, tile_height(), sharpen()>,
                       aos_tile_grid(in.extent, frames, tile_height()), dim3(kAosThreads), 0, stream, in, out, border,
                       taps.slot(), 255u * static_cast<std::uint32_t>(taps.negative_sum()), taps.scale());
    });
  };
  if (taps.sharpen_cross()) {
    launch(std::true_type{});
  } else {
    launch(std::false_type{});
  }
  IMGPIPE_CUDA_LAUNCH_CHECK("filter3x3_aos_kernel", stream);
}

template <bool kGrayFirst>
void launch_sobel_aos(const AosFrames& in, const AosFramesOut& out, int frames, BorderMode border, AosTiles tiles,
                      cudaStream_t stream) {
  const auto* full = reinterpret_cast<const void*>(&sobel_aos_kernel<kGrayFirst, kAosTileH>);
  with_tile_height(tiles, in.extent, frames, full, 0, [&](auto tile_height) {
    launch_dependent(&sobel_aos_kernel<kGrayFirst, tile_height()>, aos_tile_grid(in.extent, frames, tile_height()),
                     dim3(kAosThreads), 0, stream, in, out, border);
  });
  IMGPIPE_CUDA_LAUNCH_CHECK("sobel_aos_kernel", stream);
}

}  // namespace

void filter3x3_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                   int frames, const ConstantTaps& taps, BorderMode border, cudaStream_t stream, AosTiles tiles) {
  require(taps.size() == 9, "filter3x3_aos: nine taps");
  if (!filter3x3_aos_takes(taps)) {  // frame by frame, checked there
    for (int f = 0; f < frames; ++f) {
      filter3x3_frames(as_frame(frame_at(first_in, in_frame_stride, f)),
                       as_frame(frame_at(first_out, out_frame_stride, f)), taps, border, stream);
    }
    return;
  }
  const auto [in, out] = aos_frames(first_in, in_frame_stride, first_out, out_frame_stride, frames, "filter3x3_aos");
  launch_filter3x3_aos<false>(in, out, frames, taps, border, tiles, stream);
}

void gray_filter3x3_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                        std::size_t out_frame_stride, int frames, const ConstantTaps& taps, BorderMode border,
                        cudaStream_t stream, AosTiles tiles) {
  require(taps.size() == 9 && filter3x3_aos_takes(taps), "gray_filter3x3_aos: nine taps that filter3x3_aos_takes");
  const auto [in, out] =
      aos_frames(first_in, in_frame_stride, first_out, out_frame_stride, frames, "gray_filter3x3_aos");
  launch_filter3x3_aos<true>(in, out, frames, taps, border, tiles, stream);
}

void sobel_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
               int frames, BorderMode border, cudaStream_t stream, AosTiles tiles) {
  const auto [in, out] = aos_frames(first_in, in_frame_stride, first_out, out_frame_stride, frames, "sobel_aos");
  launch_sobel_aos<false>(in, out, frames, border, tiles, stream);
}

void gray_sobel_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                    int frames, BorderMode border, cudaStream_t stream, AosTiles tiles) {
  const auto [in, out] = aos_frames(first_in, in_frame_stride, first_out, out_frame_stride, frames, "gray_sobel_aos");
  launch_sobel_aos<true>(in, out, frames, border, tiles, stream);
}

void gray_sobel_normalize_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                              std::size_t out_frame_stride, int frames, BorderMode border, NormalizeScratch& scratch,
                              cudaStream_t stream, AosTiles tiles) {
  const auto [in, out] =
      aos_frames(first_in, in_frame_stride, first_out, out_frame_stride, frames, "gray_sobel_normalize_aos");
  const std::size_t pitch = (static_cast<std::size_t>(in.extent.width) + 15) / 16 * 16;  // rows of whole words
  const std::size_t frame_bytes = pitch * static_cast<std::size_t>(in.extent.height);
  scratch.luma.grow(frame_bytes * static_cast<std::size_t>(frames));
  const LumaFrames luma{scratch.luma.data(), pitch, frame_bytes, in.extent};
  unsigned* range = fresh_normalize_ranges(scratch, frames, stream);
  const auto* full = reinterpret_cast<const void*>(&gray_sobel_luma_kernel<kAosTileH>);
  with_tile_height(tiles, in.extent, frames, full, 0, [&](auto tile_height) {
    launch_dependent(&gray_sobel_luma_kernel<tile_height()>, aos_tile_grid(in.extent, frames, tile_height()),
                     dim3(kAosThreads), 0, stream, in, luma, range, border);
  });
  IMGPIPE_CUDA_LAUNCH_CHECK("gray_sobel_luma_kernel", stream);
  stretch_luma_aos(luma, range, first_out, out_frame_stride, frames, stream);
}

// The 3x3 kernel for `window` on frames of these layouts.
template <class Window>
void launch_filter3x3(const ConstFrameView& in, const FrameView& out, BorderMode border, Window window,
                      cudaStream_t stream) {
  require_filter(in.extent(), out.extent(), "filter3x3");
  using Kernel = void (*)(ConstPlanesView, PlanesView, BorderMode, Window);
  static constexpr std::array<std::array<Kernel, 2>, 2> kernels = {
      {{&filter3x3_kernel<Window, 1, 1>, &filter3x3_kernel<Window, 1, 3>},
       {&filter3x3_kernel<Window, 3, 1>, &filter3x3_kernel<Window, 3, 3>}}};
  by_layout(kernels, in, out)<<<tile_grid(in.extent()), dim3(kBlockX, kBlockY), 0, stream>>>(
      channels_of(in), channels_of(out), border, window);
  IMGPIPE_CUDA_LAUNCH_CHECK("filter3x3_kernel", stream);
}

void filter3x3_frames(const ConstFrameView& in, const FrameView& out, const ConstantTaps& taps, BorderMode border,
                      cudaStream_t stream) {
  require(taps.size() == 9, "filter3x3: nine taps");
  launch_filter3x3(in, out, border, Taps3x3{taps.slot(), taps.scale()}, stream);
}

void sobel_frames(const ConstFrameView& in, const FrameView& out, BorderMode border, cudaStream_t stream) {
  launch_filter3x3(in, out, border, Sobel3x3{}, stream);
}

}  // namespace imgpipe::cuda
