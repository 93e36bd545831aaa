// Step 1 of the fused resize + filter: the tile's source tables, built once per block in shared memory.
//
// For each of the tile's rows + 2r resized rows (filter halo included) its two source rows and their weights;
// the same for each resized column (as byte offsets into a staged row); the span of source columns the tile
// reads. The border (reflect101 or replicate) is applied here, to the resized rows and columns the halo reaches
// outside the frame, and only by blocks whose halo leaves the frame (a block-uniform branch): every later step,
// both filter passes included, is then branch-free for every block.
//
// Reads no global memory, so a programmatic dependent launch builds it while the previous kernel in the stream
// finishes (the kernel waits for that kernel after this step). Called by every thread of the block.
// Preconditions: none beyond the launch's. The caller's barrier follows; on the exact-ratio path its count of
// the returned flags is the number of fast words (fast_word).
#pragma once

#include "fixed_linear.cuh"
#include "pixel.cuh"
#include "resize_filter_exact_ratio.cuh"
#include "resize_filter_geometry.cuh"
#include "resize_filter_params.cuh"

namespace imgpipe::cuda::resize_filter {

constexpr unsigned kSameRowWeights = 0x80008000u;  // 1/2 + 1/2 of one source row (a dp2a pair)

// Resized row y0 - r + i (column x0 - r + j), clamped to the last one an in-frame output reads, with the border
// applied only where the halo leaves the frame (a block-uniform test). The tile's span (tile_span) as its first
// staged byte and its 16-byte chunks. Returns, on the exact-ratio path, whether this thread's word is fast.
// With OpenCV's arithmetic (kOpenCv, exact ratios only) a row's entry holds OpenCV's own row weights in quarters
// (OpenCV keeps them at the frame's top and bottom edges and only clamps the rows it reads, where the general
// path moves the position onto the edge row); p.scale_y is then k/2, the double scale OpenCV computes.
template <int R, Ratio kRatio, bool kOpenCv>
__device__ __forceinline__ bool build_source_tables(const Params& p, const Tile& tile, const SharedTile<R>& shared,
                                                    int tid) {
  constexpr int kTileH = tile_h(R);
  constexpr int kRows = tile_rows(R);
  constexpr int kWords = resized_words(R);
  const int x0 = tile.x0, y0 = tile.y0, x_last = tile.x_last, y_last = tile.y_last;

  const auto span_of = [&]() {
    const int2 bytes = tile_span(x0, x_last, R, p.scale_x, p.in_w, p.out_w);
    return make_int2(bytes.x, (bytes.y - bytes.x + kChunkBytes - 1) / kChunkBytes);
  };
  bool in_fast_run = false;
  if (tid < kTableThreads) {
    if (tid < kRows) {
      int ry = min(y0 - R + tid, y_last + R);
      if (y0 - R < 0 || y0 + kTileH + R > p.out_h) ry = border_index(ry, p.out_h, p.border);
      if constexpr (kOpenCv) {
        const FixedTap t = fixed_tap(ry, static_cast<double>(p.scale_y), p.in_h, false);
        shared.row_table[tid] = make_uint2(static_cast<unsigned>(t.i0) | static_cast<unsigned>(t.i1) << 16,
                                           static_cast<unsigned>(t.w0 >> 9) | static_cast<unsigned>(t.w1 >> 9) << 16);
      } else {
        const LinearTaps t = linear_taps(ry, p.scale_y, p.in_h);
        const unsigned beta = __float2uint_rn(t.w * 65536.f);
        int ya = t.i0, yb = t.i1;
        unsigned weights = (kUnitWeight - beta) | beta << 16;
        if (beta == 0) {  // each weight must fit 16 bits: weigh row a twice by 1/2 instead of by 1 and 0
          yb = ya;
          weights = kSameRowWeights;
        } else if (beta == kUnitWeight) {
          ya = yb;
          weights = kSameRowWeights;
        }
        shared.row_table[tid] = make_uint2(static_cast<unsigned>(ya) | static_cast<unsigned>(yb) << 16, weights);
      }
    }
    if (kRatio == Ratio::any && tid == 0) *shared.span = span_of();
  } else if (kRatio == Ratio::any && tid < kTableThreads + 4 * kWords) {
    // Column j: the byte offsets of its two sources in a staged row (3 values per pixel, from the span's first
    // byte on) and the right one's weight.
    const int j = tid - kTableThreads;
    const int first_byte = span_of().x;
    int rx = min(x0 - R + j, x_last + R);
    if (x0 - R < 0 || x0 + kTileW + R > p.out_w) rx = border_index(rx, p.out_w, p.border);
    const LinearTaps t = linear_taps(rx, p.scale_x, p.in_w);
    shared.col_table[j] =
        make_uint2(staged_offset(3 * t.i0 - first_byte) | staged_offset(3 * t.i1 - first_byte) << 16,
                   __float2uint_rn(t.w * 65536.f));
  } else if (kRatio != Ratio::any && tid < kTableThreads + kWords) {
    in_fast_run = fast_word<R, kRatio>(p, tile, tid - kTableThreads);
  }
  return in_fast_run;
}

}  // namespace imgpipe::cuda::resize_filter
