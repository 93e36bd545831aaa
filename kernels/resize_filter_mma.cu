// Fused bilinear resize + separable filter as two matrix products per tile, on the tensor cores.
//
// Why: resize then filter is linear in the source bytes and separable, so each output tile is
//   out_c = V_band * S_c * H_band^T
// where S_c is the tile's source window of channel c, V_band (32 x window rows) holds, for each output row, the
// weight of each source row (the K filter taps spread over the two bilinear source rows of each resized row
// they touch, the filter's border folded in), and H_band the same for columns. The SIMT kernel of
// resize_filter.cu spends about 40 instructions per output byte on the same arithmetic; here it is mma.sync
// on fp16 with fp32 accumulation, with no per-output index arithmetic at all. The price: V and H are mostly
// zeros (a band of width about K * scale + 2 in a window of 64 or 80), so most of the tensor-core work
// multiplies zeros, and the window is converted to fp16 and the intermediate scattered into planes in shared
// memory. Measured on the H200 (docs/performance.md) this is 1.6x slower than resize_filter_aos, which is why
// the pipeline does not use it.
//
// Precision: source bytes are exact in fp16. Each weight is rounded to fp16 (relative error <= 2^-11), the
// vertical product's result too (<= 2^-11 relative, values up to 255), so an output is within
// 255 * (2 * 2^-11) + 255 * 2^-12 < 0.32 of the exact composite. The composite does not round the resized
// image to 8 bits as resize-then-filter does (which moves a result by at most 0.5), so the rounded output is
// within 1 of resize-then-filter, the +-1 the GPU paths promise.
//
// One block: a 32x32 output tile, all three channels, 128 threads (4 warps), three steps:
//   1. stage the source window: the band's source rows x the 16-byte-aligned bytes of its source columns,
//      copied with cp.async (every chunk in flight at once), then converted to fp16 in shared memory (two byte
//      permutes and two subtracts per 4 bytes). Channels stay interleaved: rows mix only with rows, so the
//      vertical product does not care which channel a byte belongs to.
//   2. vertical product T = V_band * S over every staged byte column (ldmatrix.trans for S; V's fragments,
//      prepared on the host in lane order, loaded into registers while the window arrives); the fp32 results
//      go to shared memory as fp16, de-interleaved into three planes T_c.
//   3. horizontal product out_c = T_c * H_band^T, rounded to bytes, interleaved into an output tile, copied
//      out in 16-byte stores.
// Shared row strides are 4 (mod 8) words, so every ldmatrix phase hits 32 distinct banks.
#include "resize_filter_mma.cuh"

#include "cuda_check.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace imgpipe::cuda {
namespace {

constexpr int kTile = 32;       // output rows and columns per block
constexpr int kThreads = 128;   // 4 warps
constexpr int kMaxTaps = 31;
constexpr int kMaxDimension = 65535;
constexpr int kMaxSharedBytes = 100 * 1024;  // two blocks per SM at least
constexpr int kOutRowBytes = 3 * kTile;

constexpr int round_up(int v, int to) { return (v + to - 1) / to * to; }
// Halves per shared row for `cols` columns: 16-byte aligned rows whose word stride is 4 (mod 8).
constexpr int padded_stride(int cols) { return round_up(cols, 16) + 8; }

struct Params {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::size_t in_pitch, in_frame, out_pitch, out_frame;
  int in_w, in_h, out_w, out_h;
  const uint4* v_frags;   // [row band][m tile 0..1][row step][lane]: a0..a3 of V
  const uint2* h_frags;   // [col band][col step][n tile 0..3][lane]: b0, b1 of H^T
  const int* row_start;   // [row band]: first source row of the window
  const int* col_start;   // [col band]: first source pixel of the window
  int row_steps, col_steps, window_bytes;
  bool vec_in, vec_out;
};

// ---------------------------------------------------------------------------------------------- device

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const __half* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

// d += a * b, m16n8k16, fp16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma(float (&d)[4], uint4 a, unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
#else
  __trap();  // mma.sync m16n8k16 needs sm_80; an older build target fails the launch (see the header)
#endif
}

// Two bytes of `word` (selected by `selector`) as a half2 of their exact values: 0x64XX is the half 1024 + XX.
__device__ __forceinline__ unsigned bytes_to_half2(unsigned word, unsigned selector) {
  const unsigned biased = __byte_perm(word, 0x64646464u, selector);
  const __half2 v = __hsub2(*reinterpret_cast<const __half2*>(&biased), __half2half2(__ushort_as_half(0x6400)));
  return *reinterpret_cast<const unsigned*>(&v);
}

// Bytes byte .. byte + 15 of a row, those past its end as 0: the path for unaligned rows and the frame's edge.
__device__ __forceinline__ uint4 load_chunk(const std::uint8_t* row, int byte, int row_bytes) {
  unsigned w[4] = {0, 0, 0, 0};
  for (int j = 0; j < 16; ++j) {
    if (byte + j < row_bytes) w[j / 4] |= static_cast<unsigned>(row[byte + j]) << (8 * (j % 4));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// 16 bytes global -> shared without passing through registers, so every chunk of the window is in flight at once.
__device__ __forceinline__ void copy_async_16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)), "l"(global));
}

__device__ __forceinline__ void wait_async_copies() { asm volatile("cp.async.wait_all;\n" ::); }

// RowSteps: 16-row k-steps of the vertical product (the window's source rows / 16), a template parameter so
// that V's fragments and S's fragments of one column pair sit in registers, all loads issued before the MMAs.
template <int RowSteps>
__global__ void __launch_bounds__(kThreads, 4) resize_filter_mma_kernel(Params p) {
  constexpr int kRows = 16 * RowSteps;
  extern __shared__ __align__(16) unsigned char smem[];
  const int cols = 16 * p.col_steps;
  const int s_stride = padded_stride(p.window_bytes), t_stride = padded_stride(cols);
  // staged (S, fp16) first; after it one region that holds the raw bytes until S is built, then the planes T_c.
  // The output tile reuses S's bytes once the vertical product has read them.
  // (layout_for sizes the first region for the larger of the two.)
  __half* staged = reinterpret_cast<__half*>(smem);
  unsigned char* after_staged = smem + max(2 * kRows * s_stride, kTile * kOutRowBytes);
  std::uint8_t* raw = after_staged;
  __half* planes = reinterpret_cast<__half*>(after_staged);
  std::uint8_t* tile = smem;

  const int band_x = blockIdx.x, band_y = blockIdx.y;
  const std::uint8_t* in = p.in + p.in_frame * blockIdx.z;
  const int first_row = p.row_start[band_y];
  const int first_pixel = p.col_start[band_x];
  const int first_byte = (3 * first_pixel) & ~15;
  const int row_bytes = 3 * p.in_w;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  // 1a. The raw window, rows and bytes beyond the frame as zeros (their weights are zero).
  const int chunks_per_row = p.window_bytes / 16;
  const bool whole_rows_in_frame = p.vec_in && first_byte + p.window_bytes <= row_bytes;  // block-uniform
  for (int i = threadIdx.x; i < kRows * chunks_per_row; i += kThreads) {
    const int r = i / chunks_per_row, chunk = i - r * chunks_per_row;
    const int source_row = first_row + r;
    std::uint8_t* dst = raw + r * p.window_bytes + 16 * chunk;
    const std::uint8_t* src = in + p.in_pitch * source_row + first_byte + 16 * chunk;
    if (source_row >= p.in_h) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    } else if (whole_rows_in_frame) {
      copy_async_16(dst, src);
    } else {
      *reinterpret_cast<uint4*>(dst) = load_chunk(in + p.in_pitch * source_row, first_byte + 16 * chunk, row_bytes);
    }
  }
  // V's fragments for this band while the window arrives.
  uint4 v[2][RowSteps];
  const uint4* v_frags = p.v_frags + static_cast<std::size_t>(band_y) * 2 * RowSteps * 32;
#pragma unroll
  for (int m = 0; m < 2; ++m) {
#pragma unroll
    for (int k = 0; k < RowSteps; ++k) v[m][k] = __ldg(v_frags + (m * RowSteps + k) * 32 + lane);
  }
  wait_async_copies();
  __syncthreads();

  // 1b. S = the window as fp16.
  for (int i = threadIdx.x; i < kRows * chunks_per_row; i += kThreads) {
    const int r = i / chunks_per_row, chunk = i - r * chunks_per_row;
    const uint4 bytes = *reinterpret_cast<const uint4*>(raw + r * p.window_bytes + 16 * chunk);
    uint4* dst = reinterpret_cast<uint4*>(staged + r * s_stride + 16 * chunk);
    dst[0] = make_uint4(bytes_to_half2(bytes.x, 0x4140), bytes_to_half2(bytes.x, 0x4342),
                        bytes_to_half2(bytes.y, 0x4140), bytes_to_half2(bytes.y, 0x4342));
    dst[1] = make_uint4(bytes_to_half2(bytes.z, 0x4140), bytes_to_half2(bytes.z, 0x4342),
                        bytes_to_half2(bytes.w, 0x4140), bytes_to_half2(bytes.w, 0x4342));
  }
  __syncthreads();

  // Lane roles in the m16n8k16 fragments, and the row/column a lane addresses for ldmatrix x4.
  const int group = lane >> 2, pair = lane & 3;
  const int ld_row = (lane & 7) + ((lane >> 3) & 1) * 8, ld_col = (lane >> 4) * 8;

  // 2. T = V * S, two 8-column n tiles per ldmatrix, warps striding over the window's byte columns.
  for (int n16 = warp; n16 < chunks_per_row; n16 += kThreads / 32) {
    unsigned b[RowSteps][4];
#pragma unroll
    for (int k = 0; k < RowSteps; ++k) ldmatrix_x4_trans(b[k], staged + (16 * k + ld_row) * s_stride + 16 * n16 + ld_col);
    float acc[2][2][4] = {};
#pragma unroll
    for (int k = 0; k < RowSteps; ++k) {
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        mma(acc[m][0], v[m][k], b[k][0], b[k][1]);
        mma(acc[m][1], v[m][k], b[k][2], b[k][3]);
      }
    }
    // Column j of the window is byte first_byte + j: pixel (first_byte + j) / 3, channel the remainder.
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int byte = first_byte + 16 * n16 + 8 * n + 2 * pair + e;
        const int pixel = byte / 3, channel = byte - 3 * pixel;
        const int column = pixel - first_pixel;
        if (column < 0 || column >= cols) continue;
        __half* plane = planes + channel * kTile * t_stride + column;
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          plane[(16 * m + group) * t_stride] = __float2half_rn(acc[m][n][e]);
          plane[(16 * m + group + 8) * t_stride] = __float2half_rn(acc[m][n][2 + e]);
        }
      }
    }
  }
  __syncthreads();

  // 3. out_c = T_c * H^T: warp w takes rows 16 * (w & 1) .. + 15 and output columns 16 * (w >> 1) .. + 15.
  const int m = warp & 1, n_first = 2 * (warp >> 1);
  const uint2* h_frags = p.h_frags + static_cast<std::size_t>(band_x) * p.col_steps * 4 * 32;
  float acc[3][2][4] = {};
#pragma unroll 2
  for (int k = 0; k < p.col_steps; ++k) {
    const uint2 b0 = __ldg(h_frags + (k * 4 + n_first) * 32 + lane);
    const uint2 b1 = __ldg(h_frags + (k * 4 + n_first + 1) * 32 + lane);
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      unsigned a[4];
      ldmatrix_x4(a, planes + (c * kTile + 16 * m + ld_row) * t_stride + 16 * k + ld_col);
      const uint4 a4 = make_uint4(a[0], a[1], a[2], a[3]);
      mma(acc[c][0], a4, b0.x, b0.y);
      mma(acc[c][1], a4, b1.x, b1.y);
    }
  }
#pragma unroll
  for (int c = 0; c < 3; ++c) {
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = 16 * m + group + 8 * (e >> 1), col = 8 * (n_first + n) + 2 * pair + (e & 1);
        const float value = fminf(fmaxf(acc[c][n][e], 0.f), 255.f);
        tile[row * kOutRowBytes + 3 * col + c] = static_cast<std::uint8_t>(__float2uint_rn(value));
      }
    }
  }
  __syncthreads();

  // Copy-out of the rows and bytes inside the frame.
  const int out_y = band_y * kTile, out_byte = band_x * kOutRowBytes;
  const int tile_rows = min(kTile, p.out_h - out_y), tile_bytes = min(kOutRowBytes, 3 * (p.out_w - band_x * kTile));
  std::uint8_t* out = p.out + p.out_frame * blockIdx.z + p.out_pitch * out_y + out_byte;
  if (p.vec_out && tile_bytes == kOutRowBytes) {
    constexpr int kChunks = kOutRowBytes / 16;
    for (int i = threadIdx.x; i < tile_rows * kChunks; i += kThreads) {
      const int r = i / kChunks, chunk = i - r * kChunks;
      *reinterpret_cast<uint4*>(out + p.out_pitch * r + 16 * chunk) =
          *reinterpret_cast<const uint4*>(tile + r * kOutRowBytes + 16 * chunk);
    }
  } else {
    for (int i = threadIdx.x; i < tile_rows * kOutRowBytes; i += kThreads) {
      const int r = i / kOutRowBytes, b = i - r * kOutRowBytes;
      if (b < tile_bytes) out[p.out_pitch * r + b] = tile[r * kOutRowBytes + b];
    }
  }
}

using Kernel = void (*)(Params);
constexpr int kMaxRowSteps = 8;
template <int... S>
constexpr std::array<Kernel, sizeof...(S)> make_kernels(std::integer_sequence<int, S...>) {
  return {&resize_filter_mma_kernel<S + 1>...};
}
constexpr auto kKernels = make_kernels(std::make_integer_sequence<int, kMaxRowSteps>{});

// ------------------------------------------------------------------------------------------------ host

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("resize_filter_mma: " + what);
}
void require(bool ok, const char* what) { require(ok, std::string(what)); }

int border_index(int p, int n, BorderMode border) {
  if (n == 1) return 0;
  if (border == BorderMode::replicate) return std::clamp(p, 0, n - 1);
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;  // reflect101
  return p;
}

// For each output index along one axis, the weight of every source index: filter tap i of output o lands on
// resized index border(o + i - r), whose bilinear sample (half-pixel centres, clamped edges, as OpenCV's
// INTER_LINEAR) weighs two source indices.
std::vector<std::map<int, double>> composite_weights(int n_in, int n_out, std::span<const float> taps,
                                                     BorderMode border) {
  const int radius = static_cast<int>(taps.size()) / 2;
  const double scale = static_cast<double>(n_in) / n_out;
  std::vector<std::map<int, double>> weights(static_cast<std::size_t>(n_out));
  for (int o = 0; o < n_out; ++o) {
    for (int i = 0; i < static_cast<int>(taps.size()); ++i) {
      const int resized = border_index(o + i - radius, n_out, border);
      const double f = (resized + 0.5) * scale - 0.5;
      const int s0 = static_cast<int>(std::floor(f));
      const double b = f - s0;
      const double tap = taps[static_cast<std::size_t>(i)];
      weights[static_cast<std::size_t>(o)][std::clamp(s0, 0, n_in - 1)] += tap * (1 - b);
      weights[static_cast<std::size_t>(o)][std::clamp(s0 + 1, 0, n_in - 1)] += tap * b;
    }
  }
  return weights;
}

// The 32-output bands of one axis: each band's first source index and the widest band's source span.
struct Bands {
  std::vector<int> start;
  int span = 0;  // source indices, over all bands
};

// Bands from each output's source range [lo, hi] (one pass, no weights needed: fits() uses it too).
template <class Range>
Bands bands_of(int n_out, Range range) {
  Bands bands;
  for (int first = 0; first < n_out; first += kTile) {
    int lo = INT32_MAX, hi = INT32_MIN;
    for (int o = first; o < std::min(n_out, first + kTile); ++o) {
      const auto [a, b] = range(o);
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
    bands.start.push_back(lo);
    bands.span = std::max(bands.span, hi - lo + 1);
  }
  return bands;
}

// Source range of output o without the weights: the bilinear samples of resized o - r .. o + r (border
// applied), each covering floor(f) .. floor(f) + 1, clamped.
std::pair<int, int> source_range(int o, int n_in, int n_out, int radius, BorderMode border) {
  const double scale = static_cast<double>(n_in) / n_out;
  int lo = INT32_MAX, hi = INT32_MIN;
  for (int i = -radius; i <= radius; ++i) {
    const int s0 = static_cast<int>(std::floor((border_index(o + i, n_out, border) + 0.5) * scale - 0.5));
    lo = std::min(lo, std::clamp(s0, 0, n_in - 1));
    hi = std::max(hi, std::clamp(s0 + 1, 0, n_in - 1));
  }
  return {lo, hi};
}

ResizeFilterMatrices::Layout layout_for(const Bands& rows, const Bands& cols) {
  ResizeFilterMatrices::Layout l;
  l.row_bands = static_cast<int>(rows.start.size());
  l.col_bands = static_cast<int>(cols.start.size());
  l.row_steps = round_up(rows.span, 16) / 16;
  l.col_steps = round_up(cols.span, 16) / 16;
  for (const int start : cols.start) {
    const int first_byte = (3 * start) & ~15;
    l.window_bytes = std::max(l.window_bytes, round_up(3 * (start + 16 * l.col_steps) - first_byte, 16));
  }
  // S, then the raw window or (later) the planes T_c; the output tile reuses S.
  const int staged = 2 * 16 * l.row_steps * padded_stride(l.window_bytes);
  const int raw = 16 * l.row_steps * l.window_bytes, planes = 2 * 3 * kTile * padded_stride(16 * l.col_steps);
  l.shared_bytes = static_cast<std::size_t>(std::max(staged, kTile * kOutRowBytes) + std::max(raw, planes));
  return l;
}

ResizeFilterMatrices::Layout plan(Extent in, Extent out, int ksize, BorderMode border) {
  const int radius = ksize / 2;
  const Bands rows = bands_of(out.height, [&](int o) { return source_range(o, in.height, out.height, radius, border); });
  const Bands cols = bands_of(out.width, [&](int o) { return source_range(o, in.width, out.width, radius, border); });
  return layout_for(rows, cols);
}

// Where each table lies in the one device buffer: V's fragments, H's fragments, the row bands' first source
// rows, the column bands' first source pixels (bytes from its start; `end` is its size).
struct TableOffsets {
  std::size_t v = 0, h = 0, rows = 0, cols = 0, end = 0;
};

TableOffsets table_offsets(const ResizeFilterMatrices::Layout& l) {
  TableOffsets t;
  t.h = static_cast<std::size_t>(l.row_bands) * 2 * l.row_steps * 32 * sizeof(uint4);
  t.rows = t.h + static_cast<std::size_t>(l.col_bands) * l.col_steps * 4 * 32 * sizeof(uint2);
  t.cols = t.rows + static_cast<std::size_t>(l.row_bands) * sizeof(int);
  t.end = t.cols + static_cast<std::size_t>(l.col_bands) * sizeof(int);
  return t;
}

bool sizes_ok(Extent in, Extent out) {
  return in.width >= 1 && in.height >= 1 && out.width >= 1 && out.height >= 1 && in.width <= kMaxDimension &&
         in.height <= kMaxDimension && out.width <= kMaxDimension && out.height <= kMaxDimension;
}

unsigned short half_bits(double v) {
  const __half h = __double2half(v);
  unsigned short bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

unsigned pack(double lo, double hi) { return half_bits(lo) | static_cast<unsigned>(half_bits(hi)) << 16; }

double weight(const std::vector<std::map<int, double>>& w, int o, int source) {
  if (o >= static_cast<int>(w.size())) return 0;
  const auto& m = w[static_cast<std::size_t>(o)];
  const auto it = m.find(source);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

bool ResizeFilterMatrices::fits(Extent in, Extent out, int ksize) {
  if (!sizes_ok(in, out) || ksize < 1 || ksize > kMaxTaps || ksize % 2 == 0) return false;
  // Either border gives the same spans away from the edges; reflect101 is the wider at them.
  for (const BorderMode border : {BorderMode::reflect101, BorderMode::replicate}) {
    const ResizeFilterMatrices::Layout l = plan(in, out, ksize, border);
    if (l.shared_bytes > kMaxSharedBytes || l.row_steps > kMaxRowSteps) return false;
  }
  return true;
}

ResizeFilterMatrices::ResizeFilterMatrices(Extent in, Extent out, std::span<const float> taps, BorderMode border)
    : in_(in), out_(out) {
  const int k = static_cast<int>(taps.size());
  require(k % 2 == 1 && k <= kMaxTaps, "an odd number of taps from 1 to " + std::to_string(kMaxTaps));
  double sum = 0;
  for (const float t : taps) {
    require(std::isfinite(t) && t >= 0.f, "taps must be finite and >= 0");
    sum += t;
  }
  require(std::abs(sum - 1.0) <= 1e-3, "taps must sum to 1");
  require(sizes_ok(in, out), "frames from 1x1 to " + std::to_string(kMaxDimension) + " pixels a side");
  require(fits(in, out, k), "a tile's source window for " + std::to_string(in.width) + "x" +
                                std::to_string(in.height) + " -> " + std::to_string(out.width) + "x" +
                                std::to_string(out.height) + " does not fit shared memory");

  const auto v = composite_weights(in.height, out.height, taps, border);
  const auto h = composite_weights(in.width, out.width, taps, border);
  const auto range_of = [](const std::vector<std::map<int, double>>& w) {
    return [&w](int o) {
      const auto& m = w[static_cast<std::size_t>(o)];
      return std::pair{m.begin()->first, m.rbegin()->first};
    };
  };
  const Bands rows = bands_of(out.height, range_of(v));
  const Bands cols = bands_of(out.width, range_of(h));
  layout_ = layout_for(rows, cols);

  // V's A fragments: row g / g + 8 and columns 2t, 2t + 1 / 2t + 8, 2t + 9 of a 16x16 block, lane = 4g + t.
  const TableOffsets at = table_offsets(layout_);
  std::vector<uint4> v_frags((at.h - at.v) / sizeof(uint4));
  for (int band = 0; band < layout_.row_bands; ++band) {
    for (int m = 0; m < 2; ++m) {
      for (int step = 0; step < layout_.row_steps; ++step) {
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const int row = band * kTile + 16 * m + g;
          const int source = rows.start[static_cast<std::size_t>(band)] + 16 * step + 2 * t;
          const auto a = [&](int dr, int dc) { return weight(v, row + dr, source + dc); };
          v_frags[((static_cast<std::size_t>(band) * 2 + m) * layout_.row_steps + step) * 32 + lane] =
              make_uint4(pack(a(0, 0), a(0, 1)), pack(a(8, 0), a(8, 1)), pack(a(0, 8), a(0, 9)), pack(a(8, 8), a(8, 9)));
        }
      }
    }
  }
  // H^T's B fragments: rows (source pixels) 2t, 2t + 1 / 2t + 8, 2t + 9 and column (output) g of a 16x8 block.
  std::vector<uint2> h_frags((at.rows - at.h) / sizeof(uint2));
  for (int band = 0; band < layout_.col_bands; ++band) {
    for (int step = 0; step < layout_.col_steps; ++step) {
      for (int n = 0; n < 4; ++n) {
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const int col = band * kTile + 8 * n + g;
          const int source = cols.start[static_cast<std::size_t>(band)] + 16 * step + 2 * t;
          const auto b = [&](int dk) { return weight(h, col, source + dk); };
          h_frags[((static_cast<std::size_t>(band) * layout_.col_steps + step) * 4 + n) * 32 + lane] =
              make_uint2(pack(b(0), b(1)), pack(b(8), b(9)));
        }
      }
    }
  }

  tables_.grow(at.end);
  std::uint8_t* d = tables_.data();
  IMGPIPE_CUDA_CHECK(cudaMemcpy(d + at.v, v_frags.data(), at.h - at.v, cudaMemcpyHostToDevice));
  IMGPIPE_CUDA_CHECK(cudaMemcpy(d + at.h, h_frags.data(), at.rows - at.h, cudaMemcpyHostToDevice));
  IMGPIPE_CUDA_CHECK(cudaMemcpy(d + at.rows, rows.start.data(), at.cols - at.rows, cudaMemcpyHostToDevice));
  IMGPIPE_CUDA_CHECK(cudaMemcpy(d + at.cols, cols.start.data(), at.end - at.cols, cudaMemcpyHostToDevice));
  wait_for_uploads();
}

namespace {

Params params_for(const ResizeFilterMatrices& m) {
  const ResizeFilterMatrices::Layout& l = m.layout();
  const auto* base = static_cast<const std::uint8_t*>(m.device_tables());
  const TableOffsets at = table_offsets(l);
  Params p{};
  p.v_frags = reinterpret_cast<const uint4*>(base + at.v);
  p.h_frags = reinterpret_cast<const uint2*>(base + at.h);
  p.row_start = reinterpret_cast<const int*>(base + at.rows);
  p.col_start = reinterpret_cast<const int*>(base + at.cols);
  p.row_steps = l.row_steps;
  p.col_steps = l.col_steps;
  p.window_bytes = l.window_bytes;
  return p;
}

Kernel kernel_for(const ResizeFilterMatrices::Layout& l) { return kKernels[static_cast<std::size_t>(l.row_steps - 1)]; }

void allow_shared(Kernel kernel, std::size_t bytes) {
  IMGPIPE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

}  // namespace

void resize_filter_mma(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                       std::size_t out_frame_stride, int frames, const ResizeFilterMatrices& matrices,
                       cudaStream_t stream) {
  const Extent in = first_in.extent, out = first_out.extent;
  require(matrices.device_tables() != nullptr, "matrices were moved from");
  require(in.width == matrices.in().width && in.height == matrices.in().height &&
              out.width == matrices.out().width && out.height == matrices.out().height,
          "frames of other sizes than the matrices were built for");
  require(frames >= 1 && frames <= 65535, "1 to 65535 frames per launch");
  const std::string problem = frame_batch_problem(first_in, in_frame_stride, first_out, out_frame_stride, frames);
  require(problem.empty(), problem);

  Params p = params_for(matrices);
  set_frame_batch(p, first_in, in_frame_stride, first_out, out_frame_stride, frames);

  const ResizeFilterMatrices::Layout& l = matrices.layout();
  const Kernel kernel = kernel_for(l);
  allow_shared(kernel, l.shared_bytes);
  const dim3 grid(static_cast<unsigned>(l.col_bands), static_cast<unsigned>(l.row_bands), static_cast<unsigned>(frames));
  kernel<<<grid, kThreads, l.shared_bytes, stream>>>(p);
  IMGPIPE_CUDA_LAUNCH_CHECK("resize_filter_mma_kernel", stream);
}

ResizeFilterMmaLaunch resize_filter_mma_launch(const ResizeFilterMatrices& matrices, int frames) {
  const ResizeFilterMatrices::Layout& l = matrices.layout();
  const Kernel kernel = kernel_for(l);
  allow_shared(kernel, l.shared_bytes);
  ResizeFilterMmaLaunch launch;
  launch.grid = dim3(static_cast<unsigned>(l.col_bands), static_cast<unsigned>(l.row_bands), static_cast<unsigned>(frames));
  launch.threads = kThreads;
  launch.shared_bytes = l.shared_bytes;
  cudaFuncAttributes attributes{};
  IMGPIPE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  launch.registers = attributes.numRegs;
  IMGPIPE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&launch.blocks_per_sm, kernel, kThreads, l.shared_bytes));
  return launch;
}

}  // namespace imgpipe::cuda
