// Step 4 of the fused resize + filter: the separable filter over the resized tile, a row pass (the K taps along
// each resized row) then a column pass (the K taps down each column), into the output tile.
//
// - Row pass: integer, dp2a with 16-bit taps on pairs of packed resized bytes (R + 1 dp2a per output, four
//   resized pixels per 32-bit word read), giving 2^23-biased floats without a conversion.
// - Column pass: float, adding the row sums up, rounded half up -> the output tile, three 8-bit planes written as
//   words, whose padding puts both halves of a warp in distinct banks.
// - Registers: per thread 4 columns x 7 or 8 rows of one channel. For K <= 9 the row sums stay in registers,
//   where the column pass keeps 7 or 8 outputs per thread, taking K + 6 or K + 7 rows for them instead of 8K;
//   larger K write them to shared memory first (4a) and read them back (4b), one more barrier.
// - Taps: in resize_filter.cu's __constant__ banks, one slot per ResizeFilterTaps (float taps, the row pass's
//   integer tap pairs, the column pass's start), uploaded once; a warp reads one tap at a time, which the
//   constant cache broadcasts. The radius is a template parameter, so every tap loop unrolls and the taps sit
//   in registers.
//
// Called by every thread of the block; reads shared and constant memory only. Preconditions: the resized tile is
// complete in shared memory and the block has passed a barrier after it; the slot's taps are those of a filter of
// radius R, uploaded before the launch (ResizeFilterTaps waits for its uploads). Ends with the output tile's
// writes done (past 4a's barrier where there is one); the caller's barrier follows.
#pragma once

#include "limits.hpp"
#include "resize_filter_bytes.cuh"
#include "resize_filter_geometry.cuh"
#include "tap_slots.hpp"

namespace imgpipe::cuda::resize_filter {

constexpr int kPairSlots = kMaxRadius + 1;  // dp2a tap pairs per parity
constexpr int kRowTapBits = 15;             // the row pass's integer taps: 1.0 = 2^15 (fits 16 bits)

// resize_filter.cu's __constant__ banks, one slot per ResizeFilterTaps.
struct TapBanks {
  // The filter's taps as given (the column pass scales them).
  const float (&taps)[kTapSlots][kMaxTaps];
  // The row pass's integer taps T[k] = round(t[k] * 2^15), summing to exactly 2^15, packed for dp2a as two
  // 16-bit halves: [m] = T[2m] | T[2m+1] << 16 for outputs on even bytes, [kPairSlots + m] = T[2m-1] | T[2m] << 16
  // for outputs on odd bytes (T[-1] = T[K] = 0).
  const unsigned (&row_pairs)[kTapSlots][2 * kPairSlots];
  // The column pass's starting value for rows of 2^23-biased integers: 0.5 - 2^23 * sum(t[k] / 2^15).
  const float (&col_start)[kTapSlots];
};

// floor(v) for v in [0, 256) in the low byte (the other bytes are not zero): adding 2^23 while rounding toward
// zero drops the fraction. With 0.5 already added to v, that is round half up.
__device__ __forceinline__ unsigned floor_to_byte(float v) { return __float_as_uint(__fadd_rz(v, 8388608.f)); }

// 4 columns x kColRows rows of one channel per thread, row pass (integer, R + 1 dp2a per output) then column pass
// (float). Up to radius kMaxRadiusInRegisters the thread runs the row pass of each of the kColRows + 2R resized
// rows it reaches in registers and adds the result into every output that row reaches: no row-pass tile in
// shared memory and no barrier between the passes, for the halo rows' row pass done twice (by each of the two
// items they touch). Larger radii would spill there; they run the row pass over the tile into shared memory
// first (4a), then the column pass reads it (4b). The taps are slot `slot` of the banks.
// With OpenCV's arithmetic (kOpenCv: taps in units of 1/256, summing to 1) the row sums lose their 2^23 bias
// before the column pass, which then adds exact products: a row sum is 128 * S (S = the row's taps in 1/256
// times its bytes, < 2^16) and its product with a tap t / 2^23 is t * S / 2^16, both passes' sum a whole number
// of 1/2^16 below 2^24 of them, so float holds every step exactly and the result is OpenCV's fixed point,
// rounded half up as it rounds.
template <int R, bool kOpenCv>
__device__ __forceinline__ void filter_tile(const SharedTile<R>& shared, const TapBanks& banks, int slot, int tid) {
  constexpr int K = 2 * R + 1;
  constexpr int kColRows = col_rows(R);
  constexpr int kOutBlockWords = out_block_words(R);
  constexpr int kOutPlaneWords = out_plane_words(R);
  constexpr int kRows = tile_rows(R);
  constexpr int kStride = resized_stride(R);
  constexpr int kPassWords = row_pass_words(R);
  const unsigned* const resized = shared.resized;
  float* const rows_out = shared.rows_out;

  // Row pass. Output j of a quad reads bytes j .. j + 2R of the words from 4q on, in pairs that start on even
  // bytes: (j + 2m, j + 2m + 1) weighed by T[2m], T[2m+1] for even j; (j - 1 + 2m, j + 2m) by T[2m-1], T[2m]
  // for odd j. A pair starting at byte b of a word is dp2a.lo (b = 0) or dp2a.hi (b = 2) of that word. The
  // sum, at most 255 * (2^15 + K/2) < 2^23, starts at the bits of 2^23 and so ends as the float 2^23 + sum.
  unsigned even[R + 1], odd[R + 1];
#pragma unroll
  for (int m = 0; m <= R; ++m) {
    even[m] = banks.row_pairs[slot][m];
    odd[m] = banks.row_pairs[slot][kPairSlots + m];
  }
  const auto row_pass = [&](const unsigned* src) {
    unsigned w[kPassWords];
#pragma unroll
    for (int m = 0; m < kPassWords; ++m) w[m] = src[m];
    unsigned acc[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      acc[j] = 0x4B000000u;  // the bits of 2^23
#pragma unroll
      for (int m = 0; m <= R; ++m) {
        const int b = (j & 1) ? j - 1 + 2 * m : j + 2 * m;  // even: resolved at compile time
        const unsigned pair = (j & 1) ? odd[m] : even[m];
        acc[j] = b % 4 == 0 ? dp2a_lo(pair, w[b / 4], acc[j]) : dp2a_hi(pair, w[b / 4], acc[j]);
      }
    }
    return make_float4(__uint_as_float(acc[0]), __uint_as_float(acc[1]), __uint_as_float(acc[2]),
                       __uint_as_float(acc[3]));
  };
  if constexpr (!filter_in_registers(R)) {
    // 4a. Consecutive lanes on consecutive resized rows (plane-major: channel * kRows + tile row) of one quad,
    // so that the odd stride puts them in distinct banks.
    constexpr int kPlaneRows = 3 * kRows;
    int q = tid / kPlaneRows, row = tid % kPlaneRows;
#pragma unroll 3
    while (q < kQuads) {
      *reinterpret_cast<float4*>(rows_out + row * kRowsStride + 4 * q) = row_pass(resized + row * kStride + q);
      q += kThreads / kPlaneRows;
      row += kThreads % kPlaneRows;
      if (row >= kPlaneRows) {
        row -= kPlaneRows;
        ++q;
      }
    }
    __syncthreads();
  }
  // Column pass. The row sums are 2^23 + 2^15 * value: the taps are divided by 2^15 (exactly) and the start
  // takes the bias back out, 0.5 - 2^23 * sum(taps / 2^15); the 0.5 rounds half up.
  float taps[K];
#pragma unroll
  for (int t = 0; t < K; ++t) taps[t] = banks.taps[slot][t] * (1.f / static_cast<float>(1 << kRowTapBits));
  const float start = kOpenCv ? 0.5f : banks.col_start[slot];
  const int q = tid % kQuads;
  const int c = tid / kQuads % 3;
  const int g = tid / (3 * kQuads);
  const int first_row = c * kRows + g * kColRows;
  float4 acc[kColRows];
#pragma unroll
  for (int o = 0; o < kColRows; ++o) acc[o] = make_float4(start, start, start, start);
#pragma unroll
  for (int k = 0; k < kColRows + 2 * R; ++k) {
    float4 h;
    if constexpr (filter_in_registers(R)) {
      h = row_pass(resized + (first_row + k) * kStride + q);
    } else {  // 4b. Each float4 row read once for all the outputs it reaches.
      h = *reinterpret_cast<const float4*>(rows_out + (first_row + k) * kRowsStride + 4 * q);
    }
    if constexpr (kOpenCv) {
      constexpr float kBias = 8388608.f;
      h = make_float4(h.x - kBias, h.y - kBias, h.z - kBias, h.w - kBias);
    }
#pragma unroll
    for (int o = 0; o < kColRows; ++o) {
      const int t = k - o;
      if (t >= 0 && t < K) {  // resolved at compile time
        acc[o].x = fmaf(taps[t], h.x, acc[o].x);
        acc[o].y = fmaf(taps[t], h.y, acc[o].y);
        acc[o].z = fmaf(taps[t], h.z, acc[o].z);
        acc[o].w = fmaf(taps[t], h.w, acc[o].w);
      }
    }
  }
  // One word (4 bytes of plane c) per row. A warp's two halves are (c, g) and (c + 1, g), or (2, g) and
  // (0, g + 1): 16 (mod 32) words apart either way, since planes and blocks of rows are 16 (mod 32) words
  // long.
  unsigned* const dst = shared.out_planes + c * kOutPlaneWords + g * kOutBlockWords + q;
#pragma unroll
  for (int o = 0; o < kColRows; ++o) {
    dst[o * kOutRowWords] = pack_bytes<0>(floor_to_byte(acc[o].x), floor_to_byte(acc[o].y),
                                           floor_to_byte(acc[o].z), floor_to_byte(acc[o].w));
  }
}

}  // namespace imgpipe::cuda::resize_filter
