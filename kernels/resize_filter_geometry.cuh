// The fused resize + filter's tile geometry and shared-memory layout, per filter radius r, and the bilinear map
// both the kernel and its host planning use (the plan sizes the staged rows with the kernel's own arithmetic).
// Compile-time arithmetic, the block's carving of shared memory (SharedTile) and __host__ __device__ functions;
// included by resize_filter.cu (the kernel) and resize_filter_launch.cu (the plan). Nothing here touches a stream.
//
// One block computes a 64-column tile of the output (all three channels; 28 rows for K = 5, else 32) with 192
// threads. Shared memory holds, in this order: [row table | column table | span] (step 1), the resized tile as
// three 8-bit planes (step 3, read by step 4), and the vertically interpolated source rows (step 2, read by
// step 3). The output tile (step 4, read by step 5) then takes the place of the staged rows where the filter runs
// in registers, else of the resized planes, whose last read comes earlier (4a); 4a's row-pass tile takes the
// place of the staged rows.
//
// Bank conflicts (the L1/shared-memory unit is the busiest in a batched launch) are designed out by the strides:
// - staged rows: runs of 9-word slots, one per 16-byte chunk of source bytes (its 16 values and a copy of the next
//   chunk's first two), so that step 2's lanes, on consecutive chunks, store to 32 distinct banks and every
//   pixel's three values are contiguous;
// - the resized tile's planes: an odd row stride (SoA), so that step 3's lanes, on consecutive rows, hit distinct
//   banks while each column's table reads are broadcasts; the row pass reads four resized pixels per word;
// - the output planes: blocks of rows padded to 16 (mod 32) words, so that the two halves of a step-4 warp store
//   to distinct banks.
#pragma once

#include "limits.hpp"

#include <cuda_runtime.h>

namespace imgpipe::cuda::resize_filter {

constexpr int kTileW = 64;                          // output columns per block
constexpr int kColGroups = 4;                       // column-pass items down a tile column
constexpr int kQuads = kTileW / 4;                  // 4-pixel groups across a tile row
constexpr int kThreads = kQuads * 3 * kColGroups;   // 192: one column-pass item per thread
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kTableThreads = 64;                   // step 1: warps 0-1 build the row table, the
                                                    // warps after them the column table
constexpr int kChunkBytes = 16;                     // staging: one 16-byte load per source row
constexpr int kSlotWords = 9;  // a chunk's 16 staged values of 16 bits, then a copy of the next chunk's first 2
constexpr int kOutRowWords = kTileW / 4;
constexpr unsigned kUnitWeight = 1u << 16;          // bilinear weights: fixed point, 1/65536
constexpr int kMinBlocksPerSm = 6;  // 1152 threads: caps registers at 56, which every radius fits

// Horizontal source pixels per output pixel, where the kernel has a path of its own for the ratio (step 2x).
enum class Ratio { any, two, three_halves };

// Blocks per SM the registers are capped for. The exact-ratio path (step 2x) needs no staged rows, so shared
// memory would hold 8 blocks: up to K = 5 their 40 registers (8 x 192 threads) are enough (at 2:1, K = 1 and 3
// spill 4 and 8 B; K = 7 would spill up to 28 B and K = 9 up to 276 B, so those keep 6).
constexpr int min_blocks_per_sm(int r, Ratio ratio) { return ratio != Ratio::any && r <= 2 ? 8 : kMinBlocksPerSm; }

// At those ratios resized column x >= 0 reads source pixels first_source(x) and first_source(x) + 1, weighing the
// first by left_quarters(x) / 4: OpenCV's INTER_LINEAR map, (x + 0.5) * scale - 0.5, worked out exactly.
__host__ __device__ constexpr int first_source(Ratio ratio, int x) {
  return ratio == Ratio::two ? 2 * x : (6 * x + 1) / 4;
}
__host__ __device__ constexpr int left_quarters(Ratio ratio, int x) {
  return ratio == Ratio::two ? 2 : (x % 2 == 0 ? 3 : 1);
}

constexpr int align16(int bytes) { return (bytes + 15) / 16 * 16; }
constexpr int max_of(int a, int b) { return a > b ? a : b; }

constexpr int kMaxRadiusInRegisters = 4;  // step 4: radii whose two filter passes fit registers (56) unspilled
constexpr bool filter_in_registers(int r) { return r <= kMaxRadiusInRegisters; }
constexpr int kRowsStride = kTileW + 4;  // 4a: floats; 4 (mod 32) words: no bank conflicts

// Per filter radius r: the output tile is 64 x tile_h(r) and the resized tile (64 + 2r) x tile_rows(r). For
// r = 2 (K = 5) the tile is 28 rows high, so that the resized tile is 32 rows: step 3's warps, lanes on rows,
// then have no partial block of rows left over (the tail rows, whose lanes spread over several words, are
// where step 3's bank conflicts were). Larger even r would lose more to the halo (32 - 2r output rows for 32
// resized ones) than the tail costs. The row pass reads 4 + 2r resized bytes (whole words) per 4 outputs.
// Tiles of twice and half the rows (blocks of 384 and 96 threads) were 12-16% and 10-12% slower on the H200
// (docs/performance.md, the fused kernel).
constexpr int tile_h(int r) { return r == 2 ? kWarpSize - 2 * r : kWarpSize; }
constexpr int col_rows(int r) { return tile_h(r) / kColGroups; }  // output rows per thread in the column pass
constexpr int tile_rows(int r) { return tile_h(r) + 2 * r; }
// The output tile: three 8-bit planes, each in blocks of col_rows(r) rows (one column-pass item), padded to
// 16 (mod 32) words so that the two halves of every step-4 warp store to distinct banks (see step 4).
constexpr int out_block_words(int r) { return col_rows(r) * kOutRowWords + (col_rows(r) % 2 == 0 ? 16 : 0); }
constexpr int out_plane_words(int r) { return kColGroups * out_block_words(r) + 16; }
constexpr int row_pass_words(int r) { return 1 + (r + 1) / 2; }
constexpr int resized_words(int r) { return kQuads + row_pass_words(r) - 1; }  // words per resized row
constexpr int resized_stride(int r) { return resized_words(r) | 1; }           // odd: no bank conflicts
// Shared memory: [row table | column table | span] [resized planes] [staged rows], the output tile replacing the
// staged rows (filter in registers) or the resized planes (4a's row-pass tile replacing the staged rows).
constexpr int head_bytes(int r) { return align16(tile_rows(r) * 8 + 4 * resized_words(r) * 8 + 16); }
constexpr int resized_bytes(int r) { return 3 * tile_rows(r) * resized_stride(r) * 4; }
constexpr int out_tile_bytes(int r) { return 3 * out_plane_words(r) * 4; }
constexpr int rows_pass_bytes(int r) { return filter_in_registers(r) ? 0 : 3 * tile_rows(r) * kRowsStride * 4; }
// The output tile follows the last read of the staged rows (step 3) where the filter runs in registers, else
// the last read of the resized planes (4a).
constexpr int region_a_bytes(int r) {
  return align16(filter_in_registers(r) ? resized_bytes(r) : max_of(resized_bytes(r), out_tile_bytes(r)));
}

static_assert(kThreads % kWarpSize == 0 && kTileW % 16 == 0 && kQuads == kWarpSize / 2);
static_assert([] {
  for (int r = 0; r <= kMaxRadius; ++r) {
    if (tile_h(r) % kColGroups != 0 || out_block_words(r) % 32 != 16 || out_plane_words(r) % 32 != 16) return false;
  }
  return true;
}());
static_assert(tile_rows(kMaxRadius) <= kTableThreads && kTableThreads + 4 * resized_words(kMaxRadius) <= kThreads);

// The block's shared memory for radius R, carved as above. Each region is written only after a barrier that
// follows the last read of what it replaces.
template <int R>
struct SharedTile {
  uint2* row_table;     // step 1: per resized row, its source rows a | b << 16 and their weights
  uint2* col_table;     // step 1: per resized column, its sources' offsets in a staged row and the right weight
  int2* span;           // step 1: the first staged byte and the 16-byte chunks per staged row
  unsigned* resized;    // step 3 (or 2x): the resized tile, three 8-bit planes
  unsigned* staged;     // step 2: the vertically interpolated source rows
  float* rows_out;      // 4a-4b: the row pass's sums, where the filter does not run in registers
  unsigned* out_planes; // step 4: the output tile, three 8-bit planes

  __device__ __forceinline__ explicit SharedTile(unsigned char* smem)
      : row_table(reinterpret_cast<uint2*>(smem)),
        col_table(reinterpret_cast<uint2*>(row_table + tile_rows(R))),
        span(reinterpret_cast<int2*>(col_table + 4 * resized_words(R))),
        resized(reinterpret_cast<unsigned*>(smem + head_bytes(R))),
        staged(reinterpret_cast<unsigned*>(smem + head_bytes(R) + region_a_bytes(R))),
        rows_out(reinterpret_cast<float*>(staged)),
        out_planes(filter_in_registers(R) ? staged : resized) {}
};

// Byte offset of staged value v (counted from the span's first byte) in a staged row of 9-word slots.
__device__ __forceinline__ unsigned staged_offset(int v) {
  return 4u * kSlotWords * static_cast<unsigned>(v / 16) + 2u * static_cast<unsigned>(v % 16);
}

// OpenCV INTER_LINEAR along one axis: output index d reads source i0 with weight 1 - w and i1 with w.
// Left of the first centre: i0 = 0, w = 0; right of the last: i0 = len - 1, w = 0; i1 = min(i0 + 1, len - 1).
struct LinearTaps {
  int i0, i1;
  float w;
};
__host__ __device__ __forceinline__ LinearTaps linear_taps(int d, float scale, int len) {
  const float f = fmaf(static_cast<float>(d) + 0.5f, scale, -0.5f);
  const float fl = floorf(f);
  int i0 = static_cast<int>(fl);
  float w = f - fl;
  if (i0 < 0) {
    i0 = 0;
    w = 0.f;
  }
  if (i0 >= len - 1) {
    i0 = len - 1;
    w = 0.f;
  }
  return {i0, i0 + 1 < len ? i0 + 1 : len - 1, w};
}

// The bytes of a source row that the tile of output columns x0 .. x_last reads, filter halo included: the
// sources of every resized column lie in source columns [i0 of the first, i1 of the last] (the map is
// monotonic). The first byte is rounded down to 16, so that the kernel's 16-byte loads stay aligned; the end
// is exclusive.
__host__ __device__ __forceinline__ int2 tile_span(int x0, int x_last, int radius, float scale_x, int in_w,
                                                   int out_w) {
  const int first = x0 - radius > 0 ? x0 - radius : 0;
  const int last = x_last + radius < out_w - 1 ? x_last + radius : out_w - 1;
  return make_int2(3 * linear_taps(first, scale_x, in_w).i0 / kChunkBytes * kChunkBytes,
                   3 * (linear_taps(last, scale_x, in_w).i1 + 1));
}

}  // namespace imgpipe::cuda::resize_filter
