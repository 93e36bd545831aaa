// Step 2x of the fused resize + filter: steps 2-3 in one for exact ratios, straight from global memory.
//
// Exact ratios (2:1 or 3:2 across, a vertical scale of k/2 up to 2, K <= 9, input rows 8-byte aligned: 4K -> 1080p
// and 1080p -> 720p among them) take this path, chosen at compile time (the kernel's Ratio parameter): every
// bilinear weight is then a multiple of 1/4, so one dp4a per source row weighs a resized value's bytes exactly,
// and each thread reads the 18 or 24 bytes its 4 resized pixels need straight from global memory in 8-byte
// loads. No staged rows, no barrier between steps 2 and 3, and the smaller block (12.9 KB up to K = 5) lets 8
// blocks share an SM. It computes the general path's bytes (tested byte for byte); tiles at the frame's edges
// take their out-of-frame words column by column. On an H200, 16 frames per launch, it took 1080p -> 720p from
// 5.2 to 4.5 us per frame and 4K -> 1080p from 13.6 to 9.8 us (docs/performance.md, the fused kernel).
//
// Called by every thread of the block, after the kernel's wait for the previous kernel in its stream (it reads
// the input frame). Preconditions: step 1's row table is built and the block has passed the barrier after it;
// fast_words counts the words of the tile that fast_word accepts. Ends with the resized tile in shared memory;
// the caller's barrier follows.
#pragma once

#include "resize_filter_bytes.cuh"
#include "resize_filter_geometry.cuh"
#include "resize_filter_params.cuh"
#include "pixel.cuh"

#include <cstdint>

namespace imgpipe::cuda::resize_filter {

// The path's items: one is 4 resized pixels of one row (one word of each plane), read from a window of each of
// its two source rows.
template <int R, Ratio kRatio>
struct ExactRatioItems {
  static constexpr int kRows = tile_rows(R);
  static constexpr int kWords = resized_words(R);
  static constexpr int kItems = kRows * kWords;
  static constexpr int kFirst = (4 - R % 4) % 4;  // an item's first resized column mod 4 (x0 is a multiple of 64)
  // Its pixel q's source pixel, counted from the item's first, and its left weight: the same for every item.
  static constexpr int offset(int q) { return first_source(kRatio, kFirst + q) - first_source(kRatio, kFirst); }
  static constexpr unsigned quarters(int q) { return static_cast<unsigned>(left_quarters(kRatio, kFirst + q)); }
  static constexpr int kSpan = 3 * (offset(3) + 2);  // window bytes
  // At 2:1 the window starts at a fixed offset mod 8 (6 * x), read as it lies; at 3:2 it moves by 2 bytes from
  // item to item (18 per item), so 32 bytes are read from the 8-byte boundary below it and shifted to its start.
  static constexpr int kLead = kRatio == Ratio::two ? (8 - 6 * R % 8) % 8 : 0;
  static constexpr int kSkip = kLead % 4;  // window bytes before its first byte
  static constexpr int kWindowWords = (kSkip + kSpan + 3) / 4;
  static constexpr int kLoadWords = kRatio == Ratio::two ? kWindowWords : 8;

  // For an item whose first resized column is x >= 0: its first source byte (.x) and the first byte its loads
  // read (.y).
  __device__ __forceinline__ static int2 window_of(int x) {
    const int start = 3 * first_source(kRatio, x);
    return make_int2(start, kRatio == Ratio::two ? start - kSkip : start & ~7);
  }
};

// Whether item word u of this tile reads only in-frame columns and bytes inside the source rows (the 8-byte
// loads of step 2x), so that it needs neither clamp nor border; the words that do form one run. Asked in step 1.
template <int R, Ratio kRatio>
__device__ __forceinline__ bool fast_word(const Params& p, const Tile& tile, int u) {
  using Items = ExactRatioItems<R, kRatio>;
  const int x = tile.x0 - R + 4 * u;
  return x >= 0 && x + 4 <= p.out_w && Items::window_of(max(x, 0)).y + 4 * Items::kLoadWords <= 3 * p.in_w;
}

// Bytes j0 .. j3 of a row of words, packed in order. j0 is the lowest, and all four lie in word j0 / 4 or the
// next one; the positions are compile-time constants once the caller's loops unroll, so this is one PRMT.
template <int N>
__device__ __forceinline__ unsigned gather_bytes(const unsigned (&w)[N], int j0, int j1, int j2, int j3) {
  const int base = j0 / 4;
  const unsigned selector = (j0 - 4 * base) | (j1 - 4 * base) << 4 | (j2 - 4 * base) << 8 | (j3 - 4 * base) << 12;
  return __byte_perm(w[base], w[min(base + 1, N - 1)], selector);
}

// N words from `at` (4-byte aligned, kOffset8 = its address mod 8): 8-byte loads where aligned, else 4-byte ones.
template <int kOffset8, int N>
__device__ __forceinline__ void load_words(unsigned (&w)[N], const std::uint8_t* at) {
  const auto starts_pair = [](int n) { return (kOffset8 + 4 * n) % 8 == 0 && n + 1 < N; };
#pragma unroll
  for (int n = 0; n < N; ++n) {
    if (starts_pair(n)) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(at + 4 * n));
      w[n] = v.x;
      w[n + 1] = v.y;
    } else if (n == 0 || !starts_pair(n - 1)) {
      w[n] = __ldg(reinterpret_cast<const unsigned*>(at + 4 * n));
    }
  }
}

// At 2:1 and 3:2 across, a resized pixel weighs two source pixels 3 bytes apart by (2, 2) or by (3, 1) and (1, 3)
// quarters, and with a vertical scale of k/2 every row weight is a multiple of 1/4 too (the plan checks both). A
// resized value is then (16 * S + 128) >> 8 for S = the four source bytes weighed by the products of their
// quarters, which is the general path's value exactly (both round the exact mean half up). One item is 4 resized
// pixels of one row (one word of each plane), from a window of 18 (3:2) or 24 (2:1) bytes of each of its two
// source rows, read in 8-byte loads, consecutive lanes on consecutive items. Per pixel two PRMTs per row put each
// channel's two bytes side by side, and dp4a weighs them (the rounding constant rides in as the accumulator).
// With OpenCV's arithmetic (kOpenCv) the rows are weighed one at a time, as OpenCV's fixed point does: with every
// weight a multiple of 512 / 2048, its ((w * (h >> 4)) >> 16) per row is floor(q * H / 4) for the row weight q
// and the horizontal sum H in quarters, and the value is (floor(qa * Ha / 4) + floor(qb * Hb / 4) + 2) >> 2.
template <int R, Ratio kRatio, bool kOpenCv>
__device__ __forceinline__ void resize_exact_ratio(const Params& p, const Tile& tile, const SharedTile<R>& shared,
                                                   int fast_words, int tid) {
  using Items = ExactRatioItems<R, kRatio>;
  constexpr int kRows = Items::kRows;
  constexpr int kWords = Items::kWords;
  constexpr int kStride = resized_stride(R);
  constexpr int kSkip = Items::kSkip;
  constexpr int kWindowWords = Items::kWindowWords;
  constexpr int kLoadWords = Items::kLoadWords;
  const int x0 = tile.x0;
  const uint2* const row_table = shared.row_table;

  // Item (row i, word u) -> its 4 pixels x 3 channels, each value in byte 1, then its word of each plane.
  const auto store = [&](int i, int u, const unsigned (&v)[3][4]) {
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      shared.resized[(c * kRows + i) * kStride + u] = pack_bytes<1>(v[c][0], v[c][1], v[c][2], v[c][3]);
    }
  };
  // A row entry's weights in quarters (step 1 stores OpenCV's as quarters, the general path's in 1/65536).
  const auto row_quarters = [](uint2 rt) {
    return kOpenCv ? make_uint2(rt.y & 0xFFFFu, rt.y >> 16) : make_uint2((rt.y & 0xFFFFu) >> 14, rt.y >> 30);
  };
  // A resized value as the store reads it (byte 1) from its two rows' products: pa = qa * Ha, pb = qb * Hb, in
  // sixteenths for the general path's rounding, plain for OpenCV's.
  constexpr unsigned kPairUnit = kOpenCv ? 1u : 16u;
  const auto resized_value = [](unsigned pa, unsigned pb) {
    return kOpenCv ? ((pa >> 2) + (pb >> 2) + 2u) << 6 : pa + pb + 128u;
  };
  // The same from a channel's byte pairs of both rows and their dp4a weights.
  const auto weigh = [&](unsigned a, unsigned b, unsigned a_weights, unsigned b_weights) {
    if constexpr (kOpenCv) {
      return resized_value(dp4a(a, a_weights, 0u), dp4a(b, b_weights, 0u));
    } else {
      return dp4a(a, a_weights, dp4a(b, b_weights, 128u));  // the general rounding in one accumulator
    }
  };
  const auto fast_item = [&](int i, int u) {
    const uint2 rt = row_table[i];
    const uint2 q = row_quarters(rt);
    const unsigned wa = q.x, wb = q.y;
    const int2 window = Items::window_of(x0 - R + 4 * u);
    const int load_start = window.y;
    unsigned v[3][4];
    unsigned a[kWindowWords], b[kWindowWords];
    if constexpr (kRatio == Ratio::two) {
      load_words<Items::kLead - kSkip>(a, row_address(tile.in_frame + load_start, rt.x & 0xFFFFu, p.in_pitch));
      load_words<Items::kLead - kSkip>(b, row_address(tile.in_frame + load_start, rt.x >> 16, p.in_pitch));
    } else {
      unsigned raw_a[kLoadWords], raw_b[kLoadWords];
      load_words<0>(raw_a, row_address(tile.in_frame + load_start, rt.x & 0xFFFFu, p.in_pitch));
      load_words<0>(raw_b, row_address(tile.in_frame + load_start, rt.x >> 16, p.in_pitch));
      const int lead = window.x & 7;
      const unsigned shift = 8u * (lead & 3);
#pragma unroll
      for (int n = 0; n < kWindowWords; ++n) {
        a[n] = __funnelshift_r(lead & 4 ? raw_a[n + 1] : raw_a[n], lead & 4 ? raw_a[n + 2] : raw_a[n + 1], shift);
        b[n] = __funnelshift_r(lead & 4 ? raw_b[n + 1] : raw_b[n], lead & 4 ? raw_b[n + 2] : raw_b[n + 1], shift);
      }
    }
    unsigned a_lo[2], b_lo[2];  // dp4a weights of a pixel's two bytes for left weights 3 (or 2) and 1
#pragma unroll
    for (int phase = 0; phase < 2; ++phase) {
      const unsigned left = Items::quarters(phase);
      const unsigned pair = kPairUnit * left | kPairUnit * (4u - left) << 8;
      a_lo[phase] = wa * pair;
      b_lo[phase] = wb * pair;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int src = kSkip + 3 * Items::offset(q);  // pixel q: channel c at bytes src + c and src + 3 + c
      const unsigned wa_lo = a_lo[q % 2], wb_lo = b_lo[q % 2];
      const unsigned a01 = gather_bytes(a, src, src + 3, src + 1, src + 4);  // channels 0 and 1, row a
      const unsigned b01 = gather_bytes(b, src, src + 3, src + 1, src + 4);
      const unsigned a2 = gather_bytes(a, src + 2, src + 5, src + 2, src + 5);  // channel 2 (twice)
      const unsigned b2 = gather_bytes(b, src + 2, src + 5, src + 2, src + 5);
      v[0][q] = weigh(a01, b01, wa_lo, wb_lo);
      v[1][q] = weigh(a01, b01, wa_lo << 16, wb_lo << 16);
      v[2][q] = weigh(a2, b2, wa_lo, wb_lo);
    }
    store(i, u, v);
  };
  // A word whose window leaves the frame (in tiles at or next to its left and right edges): column by column,
  // clamped and with the border applied as in step 1 (the general path's columns), from byte loads.
  const auto slow_item = [&](int i, int u) {
    const uint2 rt = row_table[i];
    const uint2 quarters = row_quarters(rt);
    const int x = x0 - R + 4 * u;
    unsigned v[3][4];
    const bool edge = x0 - R < 0 || x0 + kTileW + R > p.out_w;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      int rx = min(x + q, tile.x_last + R);
      if (edge) rx = border_index(rx, p.out_w, p.border);
      const unsigned left = static_cast<unsigned>(left_quarters(kRatio, rx));
      const int source = 3 * first_source(kRatio, rx);
      const std::uint8_t* const a = row_address(tile.in_frame + source, rt.x & 0xFFFFu, p.in_pitch);
      const std::uint8_t* const b = row_address(tile.in_frame + source, rt.x >> 16, p.in_pitch);
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const unsigned sum_a = __ldg(a + c) * left + __ldg(a + c + 3) * (4u - left);
        const unsigned sum_b = __ldg(b + c) * left + __ldg(b + c + 3) * (4u - left);
        v[c][q] = resized_value(kPairUnit * sum_a * quarters.x, kPairUnit * sum_b * quarters.y);  // as above
      }
    }
    store(i, u, v);
  };
  if (fast_words == kWords) {  // every tile but those at the frame's edges
    for (int item = tid; item < Items::kItems; item += kThreads) fast_item(item / kWords, item % kWords);
  } else {
    // The fast words first, then the slow ones (left of the frame: words 0 .. left_slow - 1; then those after
    // the run), in one loop: the slow words take the threads that have one fast item fewer, so no thread waits
    // on more rounds of loads than in the other tiles (where there are as many items).
    const int left_slow = x0 - R < 0 ? (R - x0 + 3) / 4 : 0;
    const int fast_items = kRows * fast_words;
    const int slow_words = kWords - fast_words;
    for (int item = tid; item < Items::kItems; item += kThreads) {
      if (item < fast_items) {
        fast_item(item / fast_words, left_slow + item % fast_words);
      } else {
        const int k = (item - fast_items) % slow_words;
        slow_item((item - fast_items) / slow_words, k < left_slow ? k : k + fast_words);
      }
    }
  }
}

}  // namespace imgpipe::cuda::resize_filter
