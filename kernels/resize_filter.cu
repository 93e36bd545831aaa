// Fused bilinear resize + separable filter, interleaved RGB8 in and out: the kernel, composed of its steps, and
// the __constant__ banks its taps live in. The plan and the launch are in resize_filter_launch.cu.
//
// Why fuse: resize-then-filter as two kernels moves the input once, the resized frame twice and the output once
// (1080p -> 720p: 6.2 + 2 * 2.8 + 2.8 = 14.5 MB). Fused, the resized tile and its filter halo live in shared
// memory and only the input and output touch DRAM: 6.2 + 2.8 = 9.0 MB, one launch instead of two (or five, with
// the deinterleave and interleave passes of a planar path).
//
// One block computes a 64-column tile of the output (all three channels; 28 rows for K = 5, else 32) with 192
// threads (resize_filter_geometry.cuh: the tile, its shared memory, its bank-conflict-free strides), in five
// steps separated by barriers. Each step's header says why it is written as it is; steps 2 and 5 are written out
// in the kernel below, because as functions of their own they changed the SASS nvcc 13.0 generates.
//   1. source tables (resize_filter_tables.cuh): for each of the tile's rows + 2r resized rows the tile needs
//      (filter halo included, border applied) its two source rows and their weights; the same for each resized
//      column; the span of source columns the tile reads.
//   2. vertical interpolation (below, from resize_filter_interpolate.cuh's parts): the source rows' bytes over the
//      columns the tile reads, interpolated into 16-bit fixed point (8 fraction bits), still interleaved, in
//      shared memory.
//   3. horizontal interpolation (resize_filter_interpolate.cuh): the resized tile, rounded to 8 bits, as three
//      planes. (Steps 2-3 repeat over groups of rows when a very wide downscale makes the staged rows large.)
//   4. filter (resize_filter_passes.cuh): per thread 4 columns x 7 or 8 rows of one channel. The row pass (the K
//      taps along each resized row, integer, R + 1 dp2a per output) gives 2^23-biased floats, which the column
//      pass (the K taps down each column, float) adds up, rounded half up -> the output tile, three 8-bit planes.
//      With one tap (a lone resize) the filter is the identity and is skipped: step 5 reads the resized planes.
//   5. copy-out (below): the output tile's rows that lie inside the frame. Held as three 8-bit planes (one 32-bit
//      store per 4 outputs in step 4), the tile is interleaved on the way out into 16-byte stores.
// Exact ratios (2:1 or 3:2 across, a vertical scale of k/2, K <= 9) replace steps 2-3 with step 2x
// (resize_filter_exact_ratio.cuh), which reads the source straight from global memory; the ratio is a template
// parameter, as is the filter radius. At those ratios a third parameter gives OpenCV's own arithmetic instead
// (ResizeFilterArithmetic::opencv): its fixed-point row weights and rounding in steps 1 and 2x, and a column pass
// without the row sums' bias in step 4, with the same loads, layout and barriers.
//
// Launched as a programmatic dependent (resize_filter_launch.cu), the kernel starts while the previous kernel in
// its stream completes, builds its tables (step 1, no global memory) meanwhile, and waits for that kernel's
// writes before step 2. The earlier versions of this kernel, measured against this one in docs/performance.md,
// can still be run by the benchmark at commit b0eed9e.
#include "resize_filter.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"
#include "limits.hpp"
#include "resize_filter_bytes.cuh"
#include "resize_filter_exact_ratio.cuh"
#include "resize_filter_geometry.cuh"
#include "resize_filter_interpolate.cuh"
#include "resize_filter_params.cuh"
#include "resize_filter_passes.cuh"
#include "resize_filter_tables.cuh"
#include "tap_slots.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <utility>

namespace imgpipe::cuda {
namespace resize_filter {
namespace {

// The taps of every ResizeFilterTaps in the process, one slot each, in the three forms step 4 reads (TapBanks,
// resize_filter_passes.cuh, says what each holds).
__constant__ float c_taps[kTapSlots][kMaxTaps];
__constant__ unsigned c_row_pairs[kTapSlots][2 * kPairSlots];
__constant__ float c_col_start[kTapSlots];

constexpr int kOutGroups = kTileW / 16;  // step 5: 16 pixels (three 16-byte stores) per item

TapSlots& tap_slots() {
  static TapSlots slots;
  return slots;
}

// A filter's taps (checked by ResizeFilterTaps) into slot `slot` of the banks, in the three forms the passes read.
void upload_taps(int slot, std::span<const float> taps) {
  // The row pass's integer taps, rounded (not forced to sum to 2^15: each is then within 2^-16 of its float).
  const int k = static_cast<int>(taps.size());
  std::array<unsigned, kMaxTaps + 2> fixed{};  // fixed[k + 1] = T[k]; T[-1] = T[K] = 0
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
  const auto at = static_cast<std::size_t>(slot);
  IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_taps, taps.data(), taps.size_bytes(), at * sizeof(c_taps[0])));
  IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_row_pairs, pairs.data(), sizeof(pairs), at * sizeof(c_row_pairs[0])));
  IMGPIPE_CUDA_CHECK(cudaMemcpyToSymbol(c_col_start, &col_start, sizeof(float), at * sizeof(float)));
  wait_for_uploads();
}

template <int R, Ratio kRatio, bool kOpenCv>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm(R, kRatio)) resize_filter_kernel(const Params p) {
  constexpr int kTileH = tile_h(R);
  constexpr int kColRows = col_rows(R);
  constexpr int kOutBlockWords = out_block_words(R);
  constexpr int kOutPlaneWords = out_plane_words(R);
  constexpr int kRows = tile_rows(R);

  extern __shared__ __align__(16) unsigned char smem[];
  const SharedTile<R> shared(smem);
  const int tid = static_cast<int>(threadIdx.x);
  const int x0 = static_cast<int>(blockIdx.x) * kTileW;
  const int y0 = static_cast<int>(blockIdx.y) * kTileH;
  const int x_last = min(x0 + kTileW, p.out_w) - 1;  // last output column/row of this tile in the frame
  const int y_last = min(y0 + kTileH, p.out_h) - 1;
  const std::uint8_t* const in_frame = p.in + blockIdx.z * p.in_frame;
  const Tile tile{x0, y0, x_last, y_last, in_frame};

  // ---- 1. Source tables (resize_filter_tables.cuh).
  const bool in_fast_run = build_source_tables<R, kRatio, kOpenCv>(p, tile, shared, tid);
  // The exact-ratio path counts its fast words here; its slow ones lie before them (columns left of the frame)
  // or after them.
  int fast_words = 0;
  if constexpr (kRatio == Ratio::any) {
    __syncthreads();
  } else {
    fast_words = __syncthreads_count(in_fast_run);
  }
  // Launched as a programmatic dependent (launch_dependent, launch.cuh), this grid may start while the previous
  // kernel in the stream finishes; step 1 reads no global memory, and everything after waits here until that
  // kernel has completed and its writes are visible, so stream order holds for whatever either kernel reads or
  // writes.
  wait_for_previous_grid();

  if constexpr (kRatio != Ratio::any) {
    // ---- 2x. Exact ratio: steps 2-3 in one, straight from global memory (resize_filter_exact_ratio.cuh).
    resize_exact_ratio<R, kRatio, kOpenCv>(p, tile, shared, fast_words, tid);
    __syncthreads();
  } else {
    const int first_byte = shared.span->x;
    const int chunks = shared.span->y;
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
        const uint2 rt = shared.row_table[first + min(i, rows - 1)];
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
        unsigned* const dst = shared.staged + s.dst;
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
            const uint2 rt = shared.row_table[first + i];
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

      // ---- 3. Horizontal interpolation -> the resized planes (resize_filter_interpolate.cuh).
      interpolate_rows<R>(p, shared, first, rows, lane, warp);
      __syncthreads();
    }
  }

  // ---- 4. Filter: row pass, column pass -> the output planes (resize_filter_passes.cuh). One tap (a lone resize)
  // is the identity, since taps sum to 1, and is skipped (a lone tap within the 1e-3 allowed of 1 is taken as 1).
  if constexpr (R > 0) {
    filter_tile<R, kOpenCv>(shared, TapBanks{c_taps, c_row_pairs, c_col_start}, p.slot, tid);
    __syncthreads();
  }
  // Where step 5 reads its three planes: the output planes, or with one tap the resized planes (odd row stride).
  constexpr int kPlaneWords = R == 0 ? kRows * resized_stride(R) : kOutPlaneWords;
  const unsigned* const planes = R == 0 ? shared.resized : shared.out_planes;
  // Four words from there: one 16-byte load from the output planes, four 4-byte ones from the resized planes.
  const auto four_words = [](const unsigned* words) {
    if constexpr (R == 0) {
      return make_uint4(words[0], words[1], words[2], words[3]);
    } else {
      return *reinterpret_cast<const uint4*>(words);
    }
  };

  // ---- 5. Copy-out: 16 pixels of one row per item, interleaved from the three planes into three 16-byte stores.
  std::uint8_t* const out = p.out + blockIdx.z * p.out_frame;
  const int row_bytes = 3 * (x_last - x0 + 1);
  for (int item = tid; item < kTileH * kOutGroups; item += kThreads) {
    const int y = item / kOutGroups;
    const int b0 = 48 * (item % kOutGroups);
    if (y0 + y > y_last || b0 >= row_bytes) continue;
    const int w = 4 * (item % kOutGroups);
    const int src =
        R == 0 ? y * resized_stride(R) + w : y / kColRows * kOutBlockWords + y % kColRows * kOutRowWords + w;
    std::uint8_t* const d = out + static_cast<std::size_t>(y0 + y) * p.out_pitch + 3 * x0 + b0;
    if (b0 + 48 <= row_bytes) {
      const uint4 r = four_words(planes + src);
      const uint4 g = four_words(planes + kPlaneWords + src);
      const uint4 b = four_words(planes + 2 * kPlaneWords + src);
      const uint3 p0 = interleave_rgb(r.x, g.x, b.x), p1 = interleave_rgb(r.y, g.y, b.y);
      const uint3 p2 = interleave_rgb(r.z, g.z, b.z), p3 = interleave_rgb(r.w, g.w, b.w);
      if (p.vec_out) {
        uint4* const d16 = reinterpret_cast<uint4*>(d);
        d16[0] = make_uint4(p0.x, p0.y, p0.z, p1.x);
        d16[1] = make_uint4(p1.y, p1.z, p2.x, p2.y);
        d16[2] = make_uint4(p2.z, p3.x, p3.y, p3.z);
      } else {
        const unsigned words[12] = {p0.x, p0.y, p0.z, p1.x, p1.y, p1.z, p2.x, p2.y, p2.z, p3.x, p3.y, p3.z};
        store_48_bytes(d, words);
      }
    } else {
      const auto* const bytes = reinterpret_cast<const std::uint8_t*>(planes + src);
      for (int b = 0; b < min(48, row_bytes - b0); ++b) d[b] = bytes[4 * kPlaneWords * (b % 3) + b / 3];
    }
  }
}

template <Ratio kRatio, bool kOpenCv, int... R>
constexpr std::array<Kernel, sizeof...(R)> make_kernels(std::integer_sequence<int, R...>) {
  return {&resize_filter_kernel<R, kRatio, kOpenCv>...};
}
constexpr auto kKernels = make_kernels<Ratio::any, false>(std::make_integer_sequence<int, kMaxRadius + 1>{});
// The exact-ratio paths for the radii whose filter runs in registers (their shared memory holds no row sums), in
// both arithmetics.
constexpr auto kInRegisters = std::make_integer_sequence<int, kMaxRadiusInRegisters + 1>{};
constexpr auto kTwoKernels = make_kernels<Ratio::two, false>(kInRegisters);
constexpr auto kThreeHalvesKernels = make_kernels<Ratio::three_halves, false>(kInRegisters);
constexpr auto kTwoOpenCvKernels = make_kernels<Ratio::two, true>(kInRegisters);
constexpr auto kThreeHalvesOpenCvKernels = make_kernels<Ratio::three_halves, true>(kInRegisters);

}  // namespace

Kernel kernel_for(Ratio ratio, int radius, ResizeFilterArithmetic arithmetic) {
  const auto r = static_cast<std::size_t>(radius);
  const bool opencv = arithmetic == ResizeFilterArithmetic::opencv;
  switch (ratio) {
    case Ratio::two: return opencv ? kTwoOpenCvKernels[r] : kTwoKernels[r];
    case Ratio::three_halves: return opencv ? kThreeHalvesOpenCvKernels[r] : kThreeHalvesKernels[r];
    case Ratio::any: break;
  }
  return kKernels[r];
}

}  // namespace resize_filter

ResizeFilterTaps::ResizeFilterTaps(std::span<const float> taps, ResizeFilterArithmetic arithmetic)
    : size_(static_cast<int>(taps.size())), arithmetic_(arithmetic) {
  require(taps.size() % 2 == 1 && taps.size() <= static_cast<std::size_t>(kMaxTaps),
          "resize_filter: an odd number of taps from 1 to " + std::to_string(kMaxTaps));
  double sum = 0;
  for (float t : taps) {
    require(std::isfinite(t) && t >= 0.f, "resize_filter: taps must be finite and >= 0");
    require(arithmetic == ResizeFilterArithmetic::fast || std::nearbyint(t * 256.f) == t * 256.f,
            "resize_filter: OpenCV's arithmetic takes taps in whole 1/256");
    sum += t;
  }
  require(std::abs(sum - 1.0) <= 1e-3, "resize_filter: taps must sum to 1");  // exactly, in whole 1/256
  slot_ = TapSlot(resize_filter::tap_slots(), taps, [&](int slot) { resize_filter::upload_taps(slot, taps); });
}

}  // namespace imgpipe::cuda
