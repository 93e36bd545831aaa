// Fused bilinear resize + separable filter, interleaved RGB8 in and out.
//
// Why it is fast:
// - Bytes: resize-then-filter as two kernels moves the input once, the resized frame twice and the output
//   once (1080p -> 720p: 6.2 + 2 * 2.8 + 2.8 = 14.5 MB). Fused, the resized tile and its filter halo live in
//   shared memory and only the input and output touch DRAM: 6.2 + 2.8 = 9.0 MB, one launch instead of two
//   (or five, with the deinterleave and interleave passes of a planar path).
// - Loads and stores: the input is read in 16-byte loads, consecutive lanes on consecutive 16 bytes of a row,
//   so each warp load is a fully used 512-byte run; the output tile is assembled in shared memory as three
//   8-bit planes (one 32-bit store per 4 outputs) and interleaved on the way out into 16-byte stores.
// - Arithmetic: a downscale by 1.5 touches 2.25 input bytes per output byte, so the per-input-byte work sets
//   the pace. The vertical interpolation, which every staged byte goes through, is integer: one dp2a
//   instruction weighs a byte of each source row with 16-bit weights (no int->float conversions, whose
//   throughput is 1/8 of an FMA's). The horizontal interpolation stays integer too (two IMADs) and rounds
//   half up exactly as OpenCV does, by taking the top byte of a 2^23-biased sum. The row pass of the filter is
//   integer as well (dp2a with 16-bit taps on pairs of packed resized bytes); only the column pass runs in
//   float, reading the row sums as 2^23-biased floats without a conversion.
// - Shared memory without bank conflicts (the L1/shared-memory unit is the busiest in a batched launch): the
//   vertically interpolated rows are runs of 9-word slots, one per 16-byte chunk (its 16 values and a copy
//   of the next chunk's first two), so the lanes of step 2, on consecutive chunks, store to 32 distinct
//   banks, and every pixel's three values are contiguous. Their row stride is odd, and so is the stride of
//   the resized tile's three 8-bit planes (SoA): step 3 puts consecutive lanes on consecutive rows, where
//   each column's offsets are the same for the whole warp (table reads are broadcasts). The row pass reads
//   four resized pixels per 32-bit word; for K <= 9 its sums stay in registers, where the column pass keeps
//   7 or 8 outputs per thread, taking K + 6 or K + 7 rows for them instead of 8K; the outputs go to the
//   output planes as words, whose padding puts both halves of a warp in distinct banks.
// - Taps: in this file's __constant__ banks, one slot per ResizeFilterTaps (float taps, the row pass's integer
//   tap pairs, the column pass's start), uploaded once; a warp reads one tap at a time, which the constant
//   cache broadcasts. The radius is a template parameter, so every tap loop
//   unrolls and the taps sit in registers.
// - Launch: back to back in a stream, a launch starts while the previous kernel completes (programmatic
//   dependent launch), building its tables before it waits for that kernel's writes.
// - Borders: the resized tile is built with its border already applied (reflect101 or replicate): the
//   column and row source tables are computed once per block, and only blocks whose halo leaves the frame
//   run the border arithmetic there (a block-uniform branch). Both filter passes are then branch-free for
//   every block.
//
// One block computes a 64-column tile of the output (all three channels; 28 rows for K = 5, else 32) with 192
// threads, in five steps separated by barriers:
//   1. source tables: for each of the tile's rows + 2r resized rows the tile needs (filter halo included, border
//      applied) its two source rows and their weights; the same for each resized column; the span of
//      source columns the tile reads.
//   2. vertical interpolation: the source rows' bytes over the columns the tile reads, interpolated into
//      16-bit fixed point (8 fraction bits), still interleaved, in shared memory (9-word slots, above).
//   3. horizontal interpolation: the resized tile, rounded to 8 bits, as three planes.
//      (Steps 2-3 repeat over groups of rows when a very wide downscale makes the staged rows large.)
//   4. filter: per thread 4 columns x 7 or 8 rows of one channel. The row pass (the K taps along each
//      resized row, integer, R + 1 dp2a per output) gives 2^23-biased floats, which the column pass (the K
//      taps down each column, float) adds up, rounded half up -> the output tile, three 8-bit planes. For
//      K <= 9 the row sums stay in registers; larger K write them to shared memory first (one more barrier).
//   5. copy-out: the output tile's rows that lie inside the frame, interleaved, in 16-byte stores.
//
// Exact ratios (2:1 or 3:2 across, a vertical scale of k/2 up to 2, K <= 9, input rows 8-byte aligned: 4K -> 1080p
// and 1080p -> 720p among them) take a path of their own for steps 2-3 (step 2x, a template parameter): every
// bilinear weight is then a multiple of 1/4, so one dp4a per source row weighs a resized value's bytes exactly,
// and each thread reads the 18 or 24 bytes its 4 resized pixels need straight from global memory in 8-byte
// loads. No staged rows, no barrier between steps 2 and 3, and the smaller block (12.9 KB up to K = 5) lets 8
// blocks share an SM. It computes the general path's bytes (tested byte for byte); tiles at the frame's edges
// take their out-of-frame words column by column. On the H200, 16 frames per launch: 1080p -> 720p 5.2 -> 4.5 us
// per frame, 4K -> 1080p 13.6 -> 9.8 us (docs/performance.md, "Ninth session").
#include "resize_filter.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"
#include "pixel.cuh"
#include "tap_slots.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace imgpipe::cuda {
namespace {

constexpr int kMaxRadius = (kResizeFilterMaxTaps - 1) / 2;
constexpr int kTapSlots = 128;  // fused filters planned at once in the process, as many as convolve.cu's (32 KiB)
constexpr int kPairSlots = kMaxRadius + 1;  // dp2a tap pairs per parity
constexpr int kRowTapBits = 15;             // the row pass's integer taps: 1.0 = 2^15 (fits 16 bits)
// The filter's taps as given (the column pass scales them, see step 4).
__constant__ float c_taps[kTapSlots][kResizeFilterMaxTaps];
// The row pass's integer taps T[k] = round(t[k] * 2^15), summing to exactly 2^15, packed for dp2a as two
// 16-bit halves: [m] = T[2m] | T[2m+1] << 16 for outputs on even bytes, [kPairSlots + m] = T[2m-1] | T[2m] << 16
// for outputs on odd bytes (T[-1] = T[K] = 0).
__constant__ unsigned c_row_pairs[kTapSlots][2 * kPairSlots];
// The column pass's starting value for rows of 2^23-biased integers: 0.5 - 2^23 * sum(t[k] / 2^15).
__constant__ float c_col_start[kTapSlots];

TapSlots<kTapSlots>& tap_slots() {
  static TapSlots<kTapSlots> slots;
  return slots;
}

// ------------------------------------------------------------------------------------------- geometry

constexpr int kTileW = 64;                                  // output columns per block
constexpr int kColGroups = 4;                               // column-pass items down a tile column
constexpr int kQuads = kTileW / 4;                          // 4-pixel groups across a tile row
constexpr int kThreads = kQuads * 3 * kColGroups;           // 192: one column-pass item per thread
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kTableThreads = 64;                           // step 1: warps 0-1 build the row table, the
                                                            // warps after them the column table
constexpr int kChunkBytes = 16;                             // staging: one 16-byte load per source row
constexpr int kSlotWords = 9;  // a chunk's 16 staged values of 16 bits, then a copy of the next chunk's first 2
constexpr int kOutRowWords = kTileW / 4;
constexpr int kOutGroups = kTileW / 16;  // step 5: 16 pixels (three 16-byte stores) per item
constexpr int kStagingBudget = 40 * 1024;                   // staged-row bytes per pass, at least
constexpr unsigned kUnitWeight = 1u << 16;                  // bilinear weights: fixed point, 1/65536
constexpr unsigned kSameRowWeights = 0x80008000u;           // 1/2 + 1/2 of one source row (a dp2a pair)
constexpr int kMaxDimension = 65535;
constexpr int kRowsInFlight = 2;   // step 2: source row pairs loaded before any is interpolated (3 or 4: slower)
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
// (docs/performance.md, "Seventh session").
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

struct Params {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::size_t in_frame, out_pitch, out_frame;
  unsigned in_pitch;  // < 2^32 (checked): row addresses are one 32x32->64-bit multiply-add
  int in_w, in_h, out_w, out_h;
  float scale_x, scale_y;  // source pixels per output pixel
  BorderMode border;
  int slot;
  int chunks;              // staging items per staged row: enough for the widest span any tile reads; odd
  unsigned chunks_magic;   // ceil(2^32 / chunks): item / chunks as one multiply-high (chunks > 1)
  int staged_row_words;    // 9 per chunk: odd, so that lanes on consecutive rows hit distinct banks
  int chunk_rows;          // staged rows per pass of steps 2-3
  bool vec_in, vec_out;    // 16-byte loads / stores are aligned
};

// -------------------------------------------------------------------------------------- device helpers

// OpenCV INTER_LINEAR along one axis: output index d reads source i0 with weight 1 - w and i1 with w.
// Left of the first centre: i0 = 0, w = 0; right of the last: i0 = len - 1, w = 0; i1 = min(i0 + 1, len - 1).
// Host and device: the plan sizes the staged rows with the kernel's own arithmetic (tile_span).
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

// base + row * pitch as one 32 x 32 -> 64-bit multiply-add. Written out because nvcc otherwise moves the frame's
// base pointer into registers and adds it, and a zero high word, to every row address inside step 2's loop
// (6 more instructions per row pair in the SASS for K = 5).
__device__ __forceinline__ const std::uint8_t* row_address(const std::uint8_t* base, unsigned row, unsigned pitch) {
  std::uint64_t address;
  asm("mad.wide.u32 %0, %1, %2, %3;"
      : "=l"(address)
      : "r"(row), "r"(pitch), "l"(reinterpret_cast<std::uint64_t>(base)));
  return reinterpret_cast<const std::uint8_t*>(address);
}

// Byte offset of staged value v (counted from the span's first byte) in a staged row of 9-word slots.
__device__ __forceinline__ unsigned staged_offset(int v) {
  return 4u * kSlotWords * static_cast<unsigned>(v / 16) + 2u * static_cast<unsigned>(v % 16);
}

// dp2a without the intrinsic's `volatile`, so the scheduler may interleave it with the loads.
__device__ __forceinline__ unsigned dp2a_lo(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("dp2a.lo.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned dp2a_hi(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("dp2a.hi.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

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

__device__ __forceinline__ unsigned dp4a(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
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

// Byte kByte of each of four words, packed in order (0: the low bytes, 3: the top bytes of sums).
template <int kByte>
__device__ __forceinline__ unsigned pack_bytes(unsigned w0, unsigned w1, unsigned w2, unsigned w3) {
  constexpr unsigned kPair = kByte | (4 + kByte) << 4;  // byte kByte of the first word, then of the second
  return __byte_perm(__byte_perm(w0, w1, kPair), __byte_perm(w2, w3, kPair), 0x5410);
}

// floor(v) for v in [0, 256) in the low byte (the other bytes are not zero): adding 2^23 while rounding toward
// zero drops the fraction. With 0.5 already added to v, that is round half up.
__device__ __forceinline__ unsigned floor_to_byte(float v) { return __float_as_uint(__fadd_rz(v, 8388608.f)); }

// Four pixels given as one word of each plane -> the same pixels as 12 interleaved bytes.
__device__ __forceinline__ uint3 interleave_rgb(unsigned r, unsigned g, unsigned b) {
  const unsigned r0g0r1g1 = __byte_perm(r, g, 0x5140);
  const unsigned g1b1g2 = __byte_perm(g, b, 0x0251);
  const unsigned b2r3b3 = __byte_perm(b, r, 0x0372);
  return make_uint3(__byte_perm(r0g0r1g1, b, 0x2410),  // r0 g0 b0 r1
                    __byte_perm(g1b1g2, r, 0x2610),    // g1 b1 r2 g2
                    __byte_perm(b2r3b3, g, 0x2710));   // b2 r3 g3 b3
}

// Up to 16 bytes of a row that ends (or is misaligned) inside this chunk; missing bytes read as 0.
__device__ __forceinline__ uint4 load_partial(const std::uint8_t* p, int available) {
  unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int b = 0; b < kChunkBytes; ++b) {
    if (b < available) w[b / 4] |= static_cast<unsigned>(__ldg(p + b)) << (8 * (b % 4));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// ------------------------------------------------------------------------------------------------ kernel

// How the kernel got here (versions 0-6, each measured; docs/performance.md keeps the table): step 2 keeps a
// chunk column per thread with two rows in flight, the row pass is integer (dp2a) and walks rows per quad.
// Tried and dropped there: an L2 bulk prefetch of the source rows (issued lane by lane, it landed too late and
// cost 0.4-0.9 us), three rows in flight in step 2 (0.5 us slower), and later a third row copied with cp.async
// instead (6-7% slower). The earlier versions were removed from this file after commit b0eed9e, where the
// benchmark could still run them.
template <int R, Ratio kRatio>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm(R, kRatio)) resize_filter_kernel(const Params p) {
  constexpr int K = 2 * R + 1;
  constexpr int kTileH = tile_h(R);
  constexpr int kColRows = col_rows(R);
  constexpr int kOutBlockWords = out_block_words(R);
  constexpr int kOutPlaneWords = out_plane_words(R);
  constexpr int kRows = tile_rows(R);
  constexpr int kWords = resized_words(R);
  constexpr int kStride = resized_stride(R);
  constexpr int kPassWords = row_pass_words(R);

  // Each alias below is written only after a barrier that follows the last read of what it replaces.
  extern __shared__ __align__(16) unsigned char smem[];
  uint2* const row_table = reinterpret_cast<uint2*>(smem);                  // source rows a | b << 16; weights
  uint2* const col_table = reinterpret_cast<uint2*>(row_table + kRows);     // source offsets; right weight
  int2* const span = reinterpret_cast<int2*>(col_table + 4 * kWords);       // first staged byte, chunks
  unsigned* const resized = reinterpret_cast<unsigned*>(smem + head_bytes(R));
  unsigned* const staged = reinterpret_cast<unsigned*>(smem + head_bytes(R) + region_a_bytes(R));
  float* const rows_out = reinterpret_cast<float*>(staged);  // 4a-4b
  unsigned* const out_planes = filter_in_registers(R) ? staged : resized;

  const int tid = static_cast<int>(threadIdx.x);
  const int x0 = static_cast<int>(blockIdx.x) * kTileW;
  const int y0 = static_cast<int>(blockIdx.y) * kTileH;
  const int x_last = min(x0 + kTileW, p.out_w) - 1;  // last output column/row of this tile in the frame
  const int y_last = min(y0 + kTileH, p.out_h) - 1;
  const std::uint8_t* const in_frame = p.in + blockIdx.z * p.in_frame;

  // The exact-ratio path's items (step 2x): one is 4 resized pixels of one row (one word of each plane).
  constexpr int kItems = kRows * kWords;
  constexpr int kFirst = (4 - R % 4) % 4;  // an item's first resized column mod 4 (x0 is a multiple of 64)
  // Its pixel q's source pixel, counted from the item's first, and its left weight: the same for every item.
  constexpr auto offset = [](int q) { return first_source(kRatio, kFirst + q) - first_source(kRatio, kFirst); };
  constexpr auto quarters = [](int q) { return static_cast<unsigned>(left_quarters(kRatio, kFirst + q)); };
  constexpr int kSpan = 3 * (offset(3) + 2);  // window bytes
  // At 2:1 the window starts at a fixed offset mod 8 (6 * x), read as it lies; at 3:2 it moves by 2 bytes from
  // item to item (18 per item), so 32 bytes are read from the 8-byte boundary below it and shifted to its start.
  constexpr int kLead = kRatio == Ratio::two ? (8 - 6 * R % 8) % 8 : 0;
  constexpr int kSkip = kLead % 4;  // window bytes before its first byte
  constexpr int kWindowWords = (kSkip + kSpan + 3) / 4;
  constexpr int kLoadWords = kRatio == Ratio::two ? kWindowWords : 8;
  const int in_row_bytes = 3 * p.in_w;
  // For an item whose first resized column is x >= 0: its first source byte (.x) and the first byte its loads
  // read (.y).
  const auto window_of = [&](int x) {
    const int start = 3 * first_source(kRatio, x);
    return make_int2(start, kRatio == Ratio::two ? start - kSkip : start & ~7);
  };
  // Whether item word u of this tile reads only in-frame columns and bytes inside the source rows (the 8-byte
  // loads of step 2x), so that it needs neither clamp nor border; the words that do form one run.
  const auto fast_word = [&](int u) {
    const int x = x0 - R + 4 * u;
    return x >= 0 && x + 4 <= p.out_w && window_of(max(x, 0)).y + 4 * kLoadWords <= in_row_bytes;
  };

  // ---- 1. Source tables. Resized row y0 - r + i (column x0 - r + j), clamped to the last one an in-frame
  // output reads, with the border applied only where the halo leaves the frame (a block-uniform test).
  // The tile's span (tile_span) as its first staged byte and its 16-byte chunks.
  const auto span_of = [&]() {
    const int2 bytes = tile_span(x0, x_last, R, p.scale_x, p.in_w, p.out_w);
    return make_int2(bytes.x, (bytes.y - bytes.x + kChunkBytes - 1) / kChunkBytes);
  };
  bool in_fast_run = false;
  if (tid < kTableThreads) {
    if (tid < kRows) {
      int ry = min(y0 - R + tid, y_last + R);
      if (y0 - R < 0 || y0 + kTileH + R > p.out_h) ry = border_index(ry, p.out_h, p.border);
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
      row_table[tid] = make_uint2(static_cast<unsigned>(ya) | static_cast<unsigned>(yb) << 16, weights);
    }
    if (kRatio == Ratio::any && tid == 0) *span = span_of();
  } else if (kRatio == Ratio::any && tid < kTableThreads + 4 * kWords) {
    // Column j: the byte offsets of its two sources in a staged row (3 values per pixel, from the span's first
    // byte on) and the right one's weight.
    const int j = tid - kTableThreads;
    const int first_byte = span_of().x;
    int rx = min(x0 - R + j, x_last + R);
    if (x0 - R < 0 || x0 + kTileW + R > p.out_w) rx = border_index(rx, p.out_w, p.border);
    const LinearTaps t = linear_taps(rx, p.scale_x, p.in_w);
    col_table[j] = make_uint2(staged_offset(3 * t.i0 - first_byte) | staged_offset(3 * t.i1 - first_byte) << 16,
                              __float2uint_rn(t.w * 65536.f));
  } else if (kRatio != Ratio::any && tid < kTableThreads + kWords) {
    in_fast_run = fast_word(tid - kTableThreads);
  }
  // The exact-ratio path counts its fast words here; its slow ones lie before them (columns left of the frame)
  // or after them.
  int fast_words = 0;
  if constexpr (kRatio == Ratio::any) {
    __syncthreads();
  } else {
    fast_words = __syncthreads_count(in_fast_run);
  }
  // Launched as a programmatic dependent (see launch), this grid may start while the previous kernel in the
  // stream finishes; step 1 reads no global memory, and everything after waits here until that kernel has
  // completed and its writes are visible, so stream order holds for whatever either kernel reads or writes.
#if __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif

  if constexpr (kRatio != Ratio::any) {
    // ---- 2x. Exact ratio: steps 2-3 in one, straight from global memory, no staged rows and no barrier between
    // them. At 2:1 and 3:2 across, a resized pixel weighs two source pixels 3 bytes apart by (2, 2) or by (3, 1)
    // and (1, 3) quarters, and with a vertical scale of k/2 every row weight is a multiple of 1/4 too (the plan
    // checks both). A resized value is then (16 * S + 128) >> 8 for S = the four source bytes weighed by the
    // products of their quarters, which is the general path's value exactly (both round the exact mean half up).
    // One item is 4 resized pixels of one row (one word of each plane), from a window of 18 (3:2) or 24 (2:1)
    // bytes of each of its two source rows, read in 8-byte loads, consecutive lanes on consecutive items. Per pixel
    // two PRMTs per row put each channel's two bytes side by side, and dp4a weighs them (the rounding constant
    // rides in as the accumulator). Item (row i, word u) -> its 4 pixels x 3 channels, each 16 * S + 128, then
    // its word of each plane.
    const auto store = [&](int i, int u, const unsigned (&v)[3][4]) {
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        resized[(c * kRows + i) * kStride + u] = pack_bytes<1>(v[c][0], v[c][1], v[c][2], v[c][3]);
      }
    };
    const auto fast_item = [&](int i, int u) {
      const uint2 rt = row_table[i];
      const unsigned wa = (rt.y & 0xFFFFu) >> 14, wb = rt.y >> 30;  // row weights in quarters
      const int2 window = window_of(x0 - R + 4 * u);
      const int load_start = window.y;
      unsigned v[3][4];
      unsigned a[kWindowWords], b[kWindowWords];
      if constexpr (kRatio == Ratio::two) {
        load_words<kLead - kSkip>(a, row_address(in_frame + load_start, rt.x & 0xFFFFu, p.in_pitch));
        load_words<kLead - kSkip>(b, row_address(in_frame + load_start, rt.x >> 16, p.in_pitch));
      } else {
        unsigned raw_a[kLoadWords], raw_b[kLoadWords];
        load_words<0>(raw_a, row_address(in_frame + load_start, rt.x & 0xFFFFu, p.in_pitch));
        load_words<0>(raw_b, row_address(in_frame + load_start, rt.x >> 16, p.in_pitch));
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
        const unsigned left = quarters(phase);
        const unsigned pair = 16u * left | 16u * (4u - left) << 8;
        a_lo[phase] = wa * pair;
        b_lo[phase] = wb * pair;
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int src = kSkip + 3 * offset(q);  // pixel q: channel c at bytes src + c and src + 3 + c
        const unsigned wa_lo = a_lo[q % 2], wb_lo = b_lo[q % 2];
        const unsigned a01 = gather_bytes(a, src, src + 3, src + 1, src + 4);  // channels 0 and 1, row a
        const unsigned b01 = gather_bytes(b, src, src + 3, src + 1, src + 4);
        const unsigned a2 = gather_bytes(a, src + 2, src + 5, src + 2, src + 5);  // channel 2 (twice)
        const unsigned b2 = gather_bytes(b, src + 2, src + 5, src + 2, src + 5);
        v[0][q] = dp4a(a01, wa_lo, dp4a(b01, wb_lo, 128u));
        v[1][q] = dp4a(a01, wa_lo << 16, dp4a(b01, wb_lo << 16, 128u));
        v[2][q] = dp4a(a2, wa_lo, dp4a(b2, wb_lo, 128u));
      }
      store(i, u, v);
    };
    // A word whose window leaves the frame (in tiles at or next to its left and right edges): column by column,
    // clamped and with the border applied as in step 1 (the general path's columns), from byte loads.
    const auto slow_item = [&](int i, int u) {
      const uint2 rt = row_table[i];
      const unsigned wa = (rt.y & 0xFFFFu) >> 14, wb = rt.y >> 30;
      const int x = x0 - R + 4 * u;
      unsigned v[3][4];
      const bool edge = x0 - R < 0 || x0 + kTileW + R > p.out_w;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        int rx = min(x + q, x_last + R);
        if (edge) rx = border_index(rx, p.out_w, p.border);
        const unsigned left = static_cast<unsigned>(left_quarters(kRatio, rx));
        const int source = 3 * first_source(kRatio, rx);
        const std::uint8_t* const a = row_address(in_frame + source, rt.x & 0xFFFFu, p.in_pitch);
        const std::uint8_t* const b = row_address(in_frame + source, rt.x >> 16, p.in_pitch);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          const unsigned sum_a = __ldg(a + c) * left + __ldg(a + c + 3) * (4u - left);
          const unsigned sum_b = __ldg(b + c) * left + __ldg(b + c + 3) * (4u - left);
          v[c][q] = (sum_a * wa + sum_b * wb) * 16u + 128u;  // as dp4a computes it above
        }
      }
      store(i, u, v);
    };
    if (fast_words == kWords) {  // every tile but those at the frame's edges
      for (int item = tid; item < kItems; item += kThreads) fast_item(item / kWords, item % kWords);
    } else {
      // The fast words first, then the slow ones (left of the frame: words 0 .. left_slow - 1; then those after
      // the run), in one loop: the slow words take the threads that have one fast item fewer, so no thread waits
      // on more rounds of loads than in the other tiles (where there are as many items).
      const int left_slow = x0 - R < 0 ? (R - x0 + 3) / 4 : 0;
      const int fast_items = kRows * fast_words;
      const int slow_words = kWords - fast_words;
      for (int item = tid; item < kItems; item += kThreads) {
        if (item < fast_items) {
          fast_item(item / fast_words, left_slow + item % fast_words);
        } else {
          const int k = (item - fast_items) % slow_words;
          slow_item((item - fast_items) / slow_words, k < left_slow ? k : k + fast_words);
        }
      }
    }
    __syncthreads();
  } else {
    const int first_byte = span->x;
    const int chunks = span->y;
    const std::uint8_t* const in_span = in_frame + first_byte;
    const int bytes_left = 3 * p.in_w - first_byte;  // bytes of a source row from the span on
    const int lane = static_cast<int>(threadIdx.x % kWarpSize);
    const int warp = static_cast<int>(threadIdx.x / kWarpSize);

    for (int first = 0; first < kRows; first += p.chunk_rows) {
      const int rows = min(p.chunk_rows, kRows - first);

      // ---- 2. Vertical interpolation: lanes on consecutive 16-byte chunks of one source row pair. Staged rows
      // are runs of 9-word slots, one per chunk: its 16 values (8 words) and a copy of the next chunk's first
      // two, so that every pixel's three values are contiguous in some slot (step 3 reads them at one offset).
      // Consecutive lanes write consecutive slots, 9 words apart: the 32-bit stores hit 32 distinct banks.
      // Item -> staged row i and chunk k, both source rows' 16 bytes (missing bytes past the row's end read as
      // 0), the row weights and the slot the 16 interpolated values go to.
      const int items = rows * p.chunks;
      struct Staging {
        uint4 a, b;
        unsigned weights;
        int dst;
        bool live, first;
      };
      const auto load = [&](int item) {
        Staging s;
        const int i = p.chunks == 1 ? item : static_cast<int>(__umulhi(static_cast<unsigned>(item), p.chunks_magic));
        const int k = item - i * p.chunks;
        s.live = item < items && k < chunks;
        const uint2 rt = row_table[first + min(i, rows - 1)];
        const std::uint8_t* const chunk = in_span + kChunkBytes * k;
        const std::uint8_t* const a = row_address(chunk, rt.x & 0xFFFFu, p.in_pitch);
        const std::uint8_t* const b = row_address(chunk, rt.x >> 16, p.in_pitch);
        const int available = bytes_left - kChunkBytes * k;
        if (s.live && p.vec_in && available >= kChunkBytes) {
          s.a = __ldg(reinterpret_cast<const uint4*>(a));
          s.b = __ldg(reinterpret_cast<const uint4*>(b));
        } else if (s.live) {
          s.a = load_partial(a, available);
          s.b = load_partial(b, available);
        }
        s.weights = rt.y;
        s.dst = i * p.staged_row_words + kSlotWords * k;
        s.first = k == 0;
        return s;
      };
      const auto store = [&](const Staging& s) {
        const uint2 v0 = lerp_rows(s.a.x, s.b.x, s.weights);
        const uint2 v1 = lerp_rows(s.a.y, s.b.y, s.weights);
        const uint2 v2 = lerp_rows(s.a.z, s.b.z, s.weights);
        const uint2 v3 = lerp_rows(s.a.w, s.b.w, s.weights);
        unsigned* const dst = staged + s.dst;
        if (!s.first) dst[-1] = v0.x;  // the previous slot's copy
        dst[0] = v0.x;
        dst[1] = v0.y;
        dst[2] = v1.x;
        dst[3] = v1.y;
        dst[4] = v2.x;
        dst[5] = v2.y;
        dst[6] = v3.x;
        dst[7] = v3.y;
      };
      if (p.chunks <= kThreads) {
        // Each thread keeps one chunk k of rows i0, i0 + step, ...: the chunk's address, whether it takes the
        // 16-byte path and where it goes are worked out once; per row, one table read and two multiply-adds.
        // kRowsInFlight rows are loaded before any is interpolated.
        const int step = kThreads / p.chunks;
        const int i0 = tid / p.chunks;
        const int k = tid - i0 * p.chunks;
        if (i0 < step && k < chunks) {
          const std::uint8_t* const chunk = in_span + kChunkBytes * k;
          const int available = bytes_left - kChunkBytes * k;
          const bool vec = p.vec_in && available >= kChunkBytes;
          const auto row_load = [&](int i) {
            Staging s;
            const uint2 rt = row_table[first + i];
            const std::uint8_t* const a = row_address(chunk, rt.x & 0xFFFFu, p.in_pitch);
            const std::uint8_t* const b = row_address(chunk, rt.x >> 16, p.in_pitch);
            if (vec) {
              s.a = __ldg(reinterpret_cast<const uint4*>(a));
              s.b = __ldg(reinterpret_cast<const uint4*>(b));
            } else {
              s.a = load_partial(a, available);
              s.b = load_partial(b, available);
            }
            s.weights = rt.y;
            s.dst = i * p.staged_row_words + kSlotWords * k;
            s.live = true;
            s.first = k == 0;
            return s;
          };
          for (int i = i0; i < rows; i += kRowsInFlight * step) {
            Staging s[kRowsInFlight];
  #pragma unroll
            for (int n = 0; n < kRowsInFlight; ++n) {
              if (n == 0 || i + n * step < rows) s[n] = row_load(i + n * step);
            }
  #pragma unroll
            for (int n = 0; n < kRowsInFlight; ++n) {
              if (n == 0 || i + n * step < rows) store(s[n]);
            }
          }
        }
      } else {
        // Rows wider than one chunk per thread (wide downscales): items over all threads, two loaded at a time.
        for (int item = tid; item < items; item += 2 * kThreads) {
          const Staging s0 = load(item);
          const Staging s1 = load(item + kThreads);
          if (s0.live) store(s0);
          if (s1.live) store(s1);
        }
      }
      __syncthreads();

      // ---- 3. Horizontal interpolation -> resized planes, 4 pixels (one word u) of one staged row per thread
      // and channel. A warp takes one word of 32 consecutive rows, lane = row: the column table reads are
      // broadcasts, and the odd word strides of the staged and resized rows put the lanes in distinct banks.
      // Rows past the last whole 32 (the tail) are spread over the warps, several words per warp. (Running the
      // items down the rows of word 0, then word 1, ..., without a tail, was slower: every warp that straddles
      // two words then has 2-way bank conflicts.)
      {
        const auto interpolate = [&](int u, int i) {
          const unsigned char* const row = reinterpret_cast<const unsigned char*>(staged + i * p.staged_row_words);
          unsigned sum[3][4];
  #pragma unroll
          for (int e = 0; e < 4; ++e) {
            const uint2 t = col_table[4 * u + e];
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
            resized[(c * kRows + first + i) * kStride + u] = pack_bytes<3>(sum[c][0], sum[c][1], sum[c][2], sum[c][3]);
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
      __syncthreads();
    }
  }

  // ---- 4. Filter: 4 columns x kColRows rows of one channel per thread, row pass (integer, R + 1 dp2a per
  // output) then column pass (float). Up to radius kMaxRadiusInRegisters the thread runs the row pass of each
  // of the kColRows + 2R resized rows it reaches in registers and adds the result into every output that row
  // reaches: no row-pass tile in shared memory and no barrier between the passes, for the halo rows' row pass
  // done twice (by each of the two items they touch). Larger radii would spill there; they run the row pass
  // over the tile into shared memory first (4a), then the column pass reads it (4b).
  {
    // Row pass. Output j of a quad reads bytes j .. j + 2R of the words from 4q on, in pairs that start on even
    // bytes: (j + 2m, j + 2m + 1) weighed by T[2m], T[2m+1] for even j; (j - 1 + 2m, j + 2m) by T[2m-1], T[2m]
    // for odd j. A pair starting at byte b of a word is dp2a.lo (b = 0) or dp2a.hi (b = 2) of that word. The
    // sum, at most 255 * (2^15 + K/2) < 2^23, starts at the bits of 2^23 and so ends as the float 2^23 + sum.
    unsigned even[R + 1], odd[R + 1];
#pragma unroll
    for (int m = 0; m <= R; ++m) {
      even[m] = c_row_pairs[p.slot][m];
      odd[m] = c_row_pairs[p.slot][kPairSlots + m];
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
    for (int t = 0; t < K; ++t) taps[t] = c_taps[p.slot][t] * (1.f / static_cast<float>(1 << kRowTapBits));
    const float start = c_col_start[p.slot];
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
    unsigned* const dst = out_planes + c * kOutPlaneWords + g * kOutBlockWords + q;
#pragma unroll
    for (int o = 0; o < kColRows; ++o) {
      dst[o * kOutRowWords] = pack_bytes<0>(floor_to_byte(acc[o].x), floor_to_byte(acc[o].y),
                                             floor_to_byte(acc[o].z), floor_to_byte(acc[o].w));
    }
  }
  __syncthreads();

  // ---- 5. Copy-out: 16 pixels of one row per item, interleaved from the three planes into three 16-byte stores.
  std::uint8_t* const out = p.out + blockIdx.z * p.out_frame;
  const int row_bytes = 3 * (x_last - x0 + 1);
  for (int item = tid; item < kTileH * kOutGroups; item += kThreads) {
    const int y = item / kOutGroups;
    const int b0 = 48 * (item % kOutGroups);
    if (y0 + y > y_last || b0 >= row_bytes) continue;
    const int src = y / kColRows * kOutBlockWords + y % kColRows * kOutRowWords + 4 * (item % kOutGroups);
    std::uint8_t* const d = out + static_cast<std::size_t>(y0 + y) * p.out_pitch + 3 * x0 + b0;
    if (p.vec_out && b0 + 48 <= row_bytes) {
      const uint4 r = *reinterpret_cast<const uint4*>(out_planes + src);
      const uint4 g = *reinterpret_cast<const uint4*>(out_planes + kOutPlaneWords + src);
      const uint4 b = *reinterpret_cast<const uint4*>(out_planes + 2 * kOutPlaneWords + src);
      uint4* const d16 = reinterpret_cast<uint4*>(d);
      const uint3 p0 = interleave_rgb(r.x, g.x, b.x), p1 = interleave_rgb(r.y, g.y, b.y);
      const uint3 p2 = interleave_rgb(r.z, g.z, b.z), p3 = interleave_rgb(r.w, g.w, b.w);
      d16[0] = make_uint4(p0.x, p0.y, p0.z, p1.x);
      d16[1] = make_uint4(p1.y, p1.z, p2.x, p2.y);
      d16[2] = make_uint4(p2.z, p3.x, p3.y, p3.z);
    } else {
      const auto* const planes = reinterpret_cast<const std::uint8_t*>(out_planes + src);
      for (int b = 0; b < min(48, row_bytes - b0); ++b) d[b] = planes[4 * kOutPlaneWords * (b % 3) + b / 3];
    }
  }
}

// ------------------------------------------------------------------------------------------------- host

using Kernel = void (*)(Params);
template <Ratio kRatio, int... R>
constexpr std::array<Kernel, sizeof...(R)> make_kernels(std::integer_sequence<int, R...>) {
  return {&resize_filter_kernel<R, kRatio>...};
}
constexpr auto kKernels = make_kernels<Ratio::any>(std::make_integer_sequence<int, kMaxRadius + 1>{});
// The exact-ratio paths for the radii whose filter runs in registers (their shared memory holds no row sums).
constexpr auto kTwoKernels = make_kernels<Ratio::two>(std::make_integer_sequence<int, kMaxRadiusInRegisters + 1>{});
constexpr auto kThreeHalvesKernels =
    make_kernels<Ratio::three_halves>(std::make_integer_sequence<int, kMaxRadiusInRegisters + 1>{});

Kernel kernel_for(Ratio ratio, int radius) {
  const auto r = static_cast<std::size_t>(radius);
  switch (ratio) {
    case Ratio::two: return kTwoKernels[r];
    case Ratio::three_halves: return kThreeHalvesKernels[r];
    case Ratio::any: break;
  }
  return kKernels[r];
}

// The path for these sizes where the input rows are 8-byte aligned (step 2x's loads): 2:1 or 3:2 across with a
// vertical scale of k/2 up to 2 (every row weight, computed in float, exactly a multiple of 1/4), for radii up to
// kMaxRadiusInRegisters; the general path otherwise.
Ratio ratio_for(Extent in, Extent out, int radius) {
  if (!(out.width >= 1 && out.height >= 1)) return Ratio::any;  // refused by the plan
  if (!(radius <= kMaxRadiusInRegisters && 2 * in.height % out.height == 0 && in.height <= 2 * out.height)) {
    return Ratio::any;
  }
  if (in.width == 2 * out.width) return Ratio::two;
  if (2 * in.width == 3 * out.width) return Ratio::three_halves;
  return Ratio::any;
}

struct Plan {
  dim3 grid;
  std::size_t shared_bytes = 0;
  Ratio ratio = Ratio::any;
  int chunks = 0;
  int staged_row_words = 0;
  int chunk_rows = 0;  // 0 on the exact-ratio path, which stages no rows
  float scale_x = 0, scale_y = 0;  // source pixels per output pixel: the spans above and the kernel use the same
};

// The launch for these sizes, or (plan.chunks == 0) why there is none.
struct Planned {
  Plan plan;
  std::string refusal;
};

Planned plan_or_refusal(Extent in, Extent out, int radius, int frames, Ratio ratio) {
  const auto refuse = [](std::string why) { return Planned{{}, "resize_filter: " + std::move(why)}; };
  if (!(in.width >= 1 && in.height >= 1 && out.width >= 1 && out.height >= 1)) return refuse("empty frame");
  if (!(in.width <= kMaxDimension && in.height <= kMaxDimension && out.width <= kMaxDimension &&
        out.height <= kMaxDimension)) {
    return refuse("frames up to " + std::to_string(kMaxDimension) + " pixels a side");
  }
  if (!(frames >= 1 && frames <= 65535)) return refuse("1 to 65535 frames per launch");
  if (!(radius >= 0 && radius <= kMaxRadius)) {
    return refuse("odd filter size from 1 to " + std::to_string(kResizeFilterMaxTaps));
  }

  // The widest source span of any tile, computed by the kernel's own tile_span (so the same pixels): sizing the
  // staged rows to the widest tile rather than to a bound buys a block per SM at 1080p -> 720p and at 4K -> 1080p.
  Plan plan;
  plan.scale_x = static_cast<float>(static_cast<double>(in.width) / out.width);
  plan.scale_y = static_cast<float>(static_cast<double>(in.height) / out.height);
  int span_bytes = 0;
  for (int x0 = 0; x0 < out.width; x0 += kTileW) {
    const int2 bytes = tile_span(x0, std::min(x0 + kTileW, out.width) - 1, radius, plan.scale_x, in.width, out.width);
    span_bytes = std::max(span_bytes, bytes.y - bytes.x);
  }
  const int span = span_bytes / 3;  // whole pixels, for the refusal below
  // An odd count makes the staged row stride odd, and step 2's lanes, on consecutive items of rows of 9 * chunks
  // words, then store 9 words apart even across the end of a row: 32 distinct banks.
  plan.chunks = (span_bytes + kChunkBytes - 1) / kChunkBytes | 1;
  plan.staged_row_words = kSlotWords * plan.chunks;
  const int staged_row_bytes = 4 * plan.staged_row_words;
  const int budget = max_of(kStagingBudget, rows_pass_bytes(radius));
  if (staged_row_bytes > budget) {
    return refuse("horizontal downscale " + std::to_string(in.width) + " -> " + std::to_string(out.width) +
                  " is too wide: a tile would read " + std::to_string(span) + " source pixels per row, at most " +
                  std::to_string(budget / (4 * kSlotWords) * kChunkBytes / 3) + " fit in shared memory");
  }
  // As few passes as fit, of equal size (no pass of a single row).
  const int fit = budget / staged_row_bytes;
  const int passes = (tile_rows(radius) + fit - 1) / fit;
  plan.chunk_rows = (tile_rows(radius) + passes - 1) / passes;
  int region_b = max_of(filter_in_registers(radius) ? out_tile_bytes(radius) : rows_pass_bytes(radius),
                        plan.chunk_rows * staged_row_bytes);
  plan.ratio = ratio;
  if (ratio != Ratio::any) {
    plan.chunk_rows = 0;
    region_b = out_tile_bytes(radius);
  }
  plan.shared_bytes = static_cast<std::size_t>(head_bytes(radius) + region_a_bytes(radius) + region_b);
  plan.grid = dim3(static_cast<unsigned>((out.width + kTileW - 1) / kTileW),
                   static_cast<unsigned>((out.height + tile_h(radius) - 1) / tile_h(radius)),
                   static_cast<unsigned>(frames));
  return {plan, {}};
}

Plan make_plan(Extent in, Extent out, int radius, int frames, Ratio ratio) {
  Planned planned = plan_or_refusal(in, out, radius, frames, ratio);
  if (!planned.refusal.empty()) throw std::invalid_argument(std::move(planned.refusal));
  return planned.plan;
}

// Beyond the default 48 KiB a kernel must opt in to its dynamic shared memory (large K or wide downscales).
void allow_shared(Kernel kernel, std::size_t bytes) {
  constexpr std::size_t kDefaultLimit = 48 * 1024;
  if (bytes > kDefaultLimit) {
    IMGPIPE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  }
}

// The dynamic shared memory to launch a plan with. A grid of a few waves ends in a partly filled one; where
// fewer blocks per SM take as many waves, the SMs share their throughput among fewer blocks and the last wave
// is fuller (on the H200, one 4K frame, 1,020 blocks: 2 waves either way, 21.0 us at 4 blocks per SM against
// 23.3 at 5). The blocks then ask for just enough shared memory that one more does not fit; asking for more
// would take it from the L1 cache for nothing. Grids of one wave, and of many, launch as planned.
std::size_t launch_shared_bytes(Kernel kernel, const Plan& plan) {
  const long long blocks = static_cast<long long>(plan.grid.x) * plan.grid.y * plan.grid.z;
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  int most = 0;
  IMGPIPE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&most, kernel, kThreads, plan.shared_bytes));
  const auto waves = [&](int per_sm) {
    const long long wave = static_cast<long long>(sms) * per_sm;
    return (blocks + wave - 1) / wave;
  };
  if (most <= 1 || waves(most) == 1) return plan.shared_bytes;
  int fewer = most;
  while (fewer > 1 && waves(fewer - 1) == waves(most)) --fewer;
  if (fewer == most) return plan.shared_bytes;
  // Just over the share of fewer + 1 blocks, less the runtime's reserve per block, in 128-byte units.
  const int per_sm_bytes = device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  const int reserved = device_attribute(cudaDevAttrReservedSharedMemoryPerBlock);
  const auto padded = static_cast<std::size_t>((per_sm_bytes / (fewer + 1) - reserved) / 128 * 128 + 128);
  allow_shared(kernel, padded);  // the occupancy query counts no block past the kernel's shared-memory limit
  int fits = 0;
  IMGPIPE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, kernel, kThreads, padded));
  return fits == fewer && padded >= plan.shared_bytes ? padded : plan.shared_bytes;
}

int radius_of(const ResizeFilterTaps& taps) {
  require(taps.size() >= 1, "resize_filter: taps were moved from");
  return taps.size() / 2;
}

}  // namespace

ResizeFilterTaps::ResizeFilterTaps(std::span<const float> taps) : size_(static_cast<int>(taps.size())) {
  require(taps.size() % 2 == 1 && taps.size() <= static_cast<std::size_t>(kResizeFilterMaxTaps),
          "resize_filter: an odd number of taps from 1 to " + std::to_string(kResizeFilterMaxTaps));
  double sum = 0;
  for (float t : taps) {
    require(std::isfinite(t) && t >= 0.f, "resize_filter: taps must be finite and >= 0");
    sum += t;
  }
  require(std::abs(sum - 1.0) <= 1e-3, "resize_filter: taps must sum to 1");
  // The row pass's integer taps, rounded (not forced to sum to 2^15: each is then within 2^-16 of its float).
  const int k = size_;
  std::array<unsigned, kResizeFilterMaxTaps + 2> fixed{};  // fixed[k + 1] = T[k]; T[-1] = T[K] = 0
  double col_sum = 0;
  for (int i = 0; i < k; ++i) {
    fixed[static_cast<std::size_t>(i) + 1] =
        static_cast<unsigned>(std::lround(static_cast<double>(taps[static_cast<std::size_t>(i)]) * (1 << kRowTapBits)));
    col_sum += static_cast<double>(taps[static_cast<std::size_t>(i)]);
  }
  std::array<unsigned, 2 * kPairSlots> pairs{};
  for (int m = 0; 2 * m < k; ++m) {
    const auto at = [&](int i) { return fixed[static_cast<std::size_t>(i + 1)]; };  // T[i], i in -1 .. K
    pairs[static_cast<std::size_t>(m)] = at(2 * m) | at(2 * m + 1) << 16;
    pairs[static_cast<std::size_t>(kPairSlots + m)] = at(2 * m - 1) | at(2 * m) << 16;
  }
  const float col_start = static_cast<float>(0.5 - 8388608.0 * (col_sum / (1 << kRowTapBits)));
  slot_ = tap_slots().acquire();
  try {
    const auto slot = static_cast<std::size_t>(slot_);
    IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_taps, taps.data(), taps.size_bytes(), slot * sizeof(c_taps[0])));
    IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_row_pairs, pairs.data(), sizeof(pairs), slot * sizeof(c_row_pairs[0])));
    IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_col_start, &col_start, sizeof(float), slot * sizeof(float)));
    wait_for_uploads();
  } catch (...) {
    tap_slots().release(slot_);
    throw;
  }
}

void ResizeFilterTaps::release() noexcept {
  if (slot_ < 0) return;
  // Kernels already queued may still read this slot; the next owner's upload must not overtake them.
  check_noexcept(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  tap_slots().release(std::exchange(slot_, -1));
  size_ = 0;
}

ResizeFilterTaps::~ResizeFilterTaps() { release(); }

ResizeFilterTaps::ResizeFilterTaps(ResizeFilterTaps&& other) noexcept
    : slot_(std::exchange(other.slot_, -1)), size_(std::exchange(other.size_, 0)) {}

ResizeFilterTaps& ResizeFilterTaps::operator=(ResizeFilterTaps&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = std::exchange(other.slot_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

namespace {

void launch(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
            int frames, const ResizeFilterTaps& taps, BorderMode border, cudaStream_t stream) {
  const int radius = radius_of(taps);
  Params p{};
  set_frame_batch(p, first_in, in_frame_stride, first_out, out_frame_stride, frames);  // checked below
  const Plan plan = make_plan(first_in.extent, first_out.extent, radius, frames,
                              p.vec_in ? ratio_for(first_in.extent, first_out.extent, radius) : Ratio::any);
  const Kernel kernel = kernel_for(plan.ratio, radius);
  const std::string problem = frame_batch_problem(first_in, in_frame_stride, first_out, out_frame_stride, frames);
  require(problem.empty(), "resize_filter: " + problem);
  require(first_in.pitch <= 0xFFFFFFFFu, "resize_filter: input pitch of 4 GiB or more");

  p.scale_x = plan.scale_x;
  p.scale_y = plan.scale_y;
  p.border = border;
  p.slot = taps.slot();
  p.chunks = plan.chunks;
  p.chunks_magic = plan.chunks > 1 ? static_cast<unsigned>(((1ull << 32) + plan.chunks - 1) / plan.chunks) : 0u;
  p.staged_row_words = plan.staged_row_words;
  p.chunk_rows = plan.chunk_rows;

  const std::size_t shared_bytes = launch_shared_bytes(kernel, plan);
  allow_shared(kernel, shared_bytes);
  // Programmatic dependent launch: where the previous operation in the stream is a kernel, this grid is
  // launched once that kernel's warps have all finished rather than once it has completed, and builds its tables
  // (step 1) meanwhile; the kernel waits before its first global access. The kernel does not trigger its own
  // dependents earlier: triggering at block start let the next grid's blocks wait on the SMs for a whole launch,
  // which made graph replays of one 1080p frame 12% slower (docs/performance.md, "Seventh session").
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = plan.grid;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = 1;
  IMGPIPE_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, p));
  IMGPIPE_CUDA_LAUNCH_CHECK("resize_filter_kernel", stream);
}

}  // namespace

void resize_filter_aos_batch(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                             std::size_t out_frame_stride, int frames, const ResizeFilterTaps& taps,
                             BorderMode border, cudaStream_t stream) {
  launch(first_in, in_frame_stride, first_out, out_frame_stride, frames, taps, border, stream);
}

bool resize_filter_fits(Extent in, Extent out, int ksize) {
  return ksize % 2 == 1 && plan_or_refusal(in, out, ksize / 2, 1, Ratio::any).refusal.empty();
}

void resize_filter_aos(ConstAosView in, AosView out, const ResizeFilterTaps& taps, BorderMode border,
                       cudaStream_t stream) {
  resize_filter_aos_batch(in, 0, out, 0, 1, taps, border, stream);
}

ResizeFilterLaunch resize_filter_launch(Extent in, Extent out, int ksize, int frames) {
  require(ksize % 2 == 1, "resize_filter: odd filter size");
  const int radius = ksize / 2;
  const Plan plan = make_plan(in, out, radius, frames, ratio_for(in, out, radius));  // aligned frames
  const Kernel kernel = kernel_for(plan.ratio, radius);
  const std::size_t shared_bytes = launch_shared_bytes(kernel, plan);
  allow_shared(kernel, shared_bytes);
  ResizeFilterLaunch launch;
  launch.grid = plan.grid;
  launch.threads = kThreads;
  launch.shared_bytes = shared_bytes;
  launch.exact_ratio = plan.ratio != Ratio::any;
  launch.chunk_rows = plan.chunk_rows;
  cudaFuncAttributes attributes{};
  IMGPIPE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  launch.registers = attributes.numRegs;
  IMGPIPE_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&launch.blocks_per_sm, kernel, kThreads, shared_bytes));
  return launch;
}

}  // namespace imgpipe::cuda
