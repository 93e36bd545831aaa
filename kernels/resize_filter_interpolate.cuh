// Steps 2 and 3 of the fused resize + filter, the general path: the bilinear resize of the tile, vertically
// into staged rows (step 2), then horizontally into the resized tile (step 3). They repeat over groups of rows
// (passes of p.chunk_rows staged rows) when a very wide downscale makes the staged rows large. Step 2's loop is
// written out in the kernel (resize_filter.cu) from the building blocks here: as a function of its own, nvcc
// 13.0 compiled the kernel to different SASS.
//
// - Loads: the input is read in 16-byte loads, consecutive lanes on consecutive 16 bytes of a row, so each warp
//   load is a fully used 512-byte run.
// - Vertical (step 2): integer, one dp2a per byte weighs a byte of each source row with 16-bit weights; the
//   result, 16-bit fixed point with 8 fraction bits, stays interleaved in 9-word slots (resize_filter_geometry.cuh).
// - Horizontal (step 3): integer too (two IMADs), rounding half up exactly as OpenCV does by taking the top byte
//   of a 2^23-biased sum; the resized tile is three 8-bit planes.
// Tried and dropped for step 2 (docs/performance.md, the fused kernel): an L2 bulk prefetch of the source rows
// (issued lane by lane, it landed too late and cost 0.4-0.9 us), three rows in flight (0.5 us slower), and a
// third row copied with cp.async instead (6-7% slower).
//
// Step 3 is called by every thread of the block and reads shared memory only. Preconditions: the rows it
// interpolates are staged and the block has passed a barrier after step 2. It ends with its shared-memory writes
// done; the caller's barrier follows.
#pragma once

#include "resize_filter_bytes.cuh"
#include "resize_filter_geometry.cuh"
#include "resize_filter_params.cuh"

#include <cstdint>
#include <type_traits>

namespace imgpipe::cuda::resize_filter {

constexpr int kRowsInFlight = 2;  // step 2: source row pairs loaded before any is interpolated (3 or 4: slower)

// Four bytes of row a and the same four of row b -> (65536 - beta) * a + beta * b + 128 per byte, whose bytes
// 1-2 are the interpolated value in 1/256, rounded: four 16-bit values, in byte order.
__device__ __forceinline__ uint2 lerp_rows(unsigned a, unsigned b, unsigned weights) {
  const unsigned pairs01 = __byte_perm(a, b, 0x5140);  // a0 b0 a1 b1
  const unsigned pairs23 = __byte_perm(a, b, 0x7362);  // a2 b2 a3 b3
  const unsigned v0 = dp2a_lo(weights, pairs01, 128u);
  const unsigned v1 = dp2a_hi(weights, pairs01, 128u);
  const unsigned v2 = dp2a_lo(weights, pairs23, 128u);
  const unsigned v3 = dp2a_hi(weights, pairs23, 128u);
  return make_uint2(__byte_perm(v0, v1, 0x6521), __byte_perm(v2, v3, 0x6521));
}

// Up to 16 bytes of a row that ends (or is misaligned) inside this chunk; missing bytes read as 0. Where the
// row goes on 3 bytes past the chunk, the aligned words around the chunk are read and shifted into place (a
// frame whose rows are not 16-byte aligned takes that path for every chunk but a row's last): the words reach at
// most 3 bytes past the chunk, still inside the row, and at most 3 before it, still inside the allocation
// (which starts aligned).
__device__ __forceinline__ uint4 load_partial(const std::uint8_t* p, int available) {
  if (available >= kChunkBytes + 3) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const auto* const words = reinterpret_cast<const unsigned*>(at & ~std::uintptr_t{3});
    const unsigned shift = 8 * static_cast<unsigned>(at & 3);
    const unsigned w0 = __ldg(words), w1 = __ldg(words + 1), w2 = __ldg(words + 2), w3 = __ldg(words + 3);
    const unsigned w4 = shift != 0 ? __ldg(words + 4) : 0u;
    return make_uint4(__funnelshift_r(w0, w1, shift), __funnelshift_r(w1, w2, shift), __funnelshift_r(w2, w3, shift),
                      __funnelshift_r(w3, w4, shift));
  }
  unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int b = 0; b < kChunkBytes; ++b) {
    if (b < available) w[b / 4] |= static_cast<unsigned>(__ldg(p + b)) << (8 * (b % 4));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Step 3, horizontal interpolation of the staged rows into resized rows first .. first + rows - 1: 4 pixels
// (one word u) of one staged row per thread and channel. A warp takes one word of 32 consecutive rows, lane =
// row: the column table reads are broadcasts, and the odd word strides of the staged and resized rows put the
// lanes in distinct banks. Rows past the last whole 32 (the tail) are spread over the warps, several words per
// warp. (Running the items down the rows of word 0, then word 1, ..., without a tail, was slower: every warp
// that straddles two words then has 2-way bank conflicts.)
template <int R>
__device__ __forceinline__ void interpolate_rows(const Params& p, const SharedTile<R>& shared, int first, int rows,
                                                 int lane, int warp) {
  constexpr int kRows = tile_rows(R);
  constexpr int kWords = resized_words(R);
  constexpr int kStride = resized_stride(R);

  const auto interpolate = [&](int u, int i) {
    const unsigned char* const row = reinterpret_cast<const unsigned char*>(shared.staged + i * p.staged_row_words);
    unsigned sum[3][4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const uint2 t = shared.col_table[4 * u + e];
      const std::uint16_t* const left = reinterpret_cast<const std::uint16_t*>(row + (t.x & 0xFFFFu));
      const std::uint16_t* const right = reinterpret_cast<const std::uint16_t*>(row + (t.x >> 16));
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        // value * 2^24 + 2^23 (round half up) fits 32 bits: 65280 * 65536 + 2^23 < 2^32.
        sum[c][e] = left[c] * (kUnitWeight - t.y) + right[c] * t.y + (1u << 23);
      }
    }
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      shared.resized[(c * kRows + first + i) * kStride + u] = pack_bytes<3>(sum[c][0], sum[c][1], sum[c][2], sum[c][3]);
    }
  };
  // pass_rows is a compile-time constant in the usual single pass, which turns the divisions into multiplies.
  const auto interpolate_pass = [&](auto pass_rows) {
    const int whole = pass_rows / kWarpSize * kWords;  // warp items over whole blocks of 32 rows
    const int tail_rows = pass_rows % kWarpSize;
    const int items = whole + (tail_rows * kWords + kWarpSize - 1) / kWarpSize;
    for (int item = warp; item < items; item += kWarps) {
      if (item < whole) {
        interpolate(item % kWords, item / kWords * kWarpSize + lane);
      } else {
        const int t = (item - whole) * kWarpSize + lane;
        const int u = t / max(tail_rows, 1);
        if (u < kWords) interpolate(u, pass_rows - tail_rows + t - u * tail_rows);
      }
    }
  };
  if (rows == kRows) {
    interpolate_pass(std::integral_constant<int, kRows>{});
  } else {
    interpolate_pass(rows);
  }
}

}  // namespace imgpipe::cuda::resize_filter
