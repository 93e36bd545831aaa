// Resize: hand bilinear and nearest on the interleaved frame; texture-filtered bilinear and nearest on planes.
//
// Why the texture version is fast: a hand bilinear sample costs four dependent byte loads through L1, the
// weight arithmetic and three lerps, per channel, from an interleaved frame where a warp's loads scatter over
// three times the bytes it needs. A texture fetch with cudaFilterModeLinear does the four reads, the weights
// and the lerps in the texture unit, in one instruction, through a cache built for 2-D locality; on planes
// each fetch reads one channel's contiguous texels. The price is precision: the unit's weights carry 8
// fractional bits, so results may differ from the exact bilinear by one level (the tests allow ±1).
// Nearest needs no filtering: an exact integer index per row and column, one byte per plane.
// The exact kernels follow OpenCV's own fixed-point INTER_LINEAR for 8-bit frames (modules/imgproc/src/resize.cpp)
// step by step, so they give its bytes; the texture unit's 8-bit weight fractions cannot, so exact resize
// interpolates by hand on both paths.
// One thread per output pixel, handling all three planes, so the coordinate math is shared between them.
#include "resize.cuh"

#include "aos_tile.cuh"
#include "cuda_check.hpp"
#include "fixed_linear.cuh"
#include "launch.cuh"
#include "pixel.cuh"

#include <cstdint>

namespace imgpipe::cuda {
namespace {

const dim3 kNaiveBlock(32, 8);

// One axis of a bilinear sample: source indices i0, i1 and the weight of i1 (OpenCV INTER_LINEAR).
struct LinearTap {
  int i0, i1;
  float w1;
};

__device__ __forceinline__ LinearTap linear_tap(int dst, float scale, int src_len) {
  const float s = (dst + 0.5f) * scale - 0.5f;
  int i = __float2int_rd(s);
  float w = s - static_cast<float>(i);
  if (i < 0) {  // before the first pixel centre: the edge pixel
    i = 0;
    w = 0.f;
  }
  if (i >= src_len - 1) {  // past the last one: the other edge
    i = src_len - 1;
    w = 0.f;
  }
  return {i, min(i + 1, src_len - 1), w};
}

// `src` points at channel 0 of pixel (0, 0); `step` is the distance between horizontal neighbours.
__device__ __forceinline__ std::uint8_t bilinear(const std::uint8_t* src, std::size_t pitch, int step,
                                                 LinearTap tx, LinearTap ty) {
  const std::uint8_t* r0 = src + static_cast<std::size_t>(ty.i0) * pitch;
  const std::uint8_t* r1 = src + static_cast<std::size_t>(ty.i1) * pitch;
  const float a = r0[tx.i0 * step], b = r0[tx.i1 * step], c = r1[tx.i0 * step], d = r1[tx.i1 * step];
  const float top = fmaf(tx.w1, b - a, a);
  const float bottom = fmaf(tx.w1, d - c, c);
  return saturate_round(fmaf(ty.w1, bottom - top, top));
}

// INTER_NEAREST_EXACT: floor((dst + 0.5) * src_len / dst_len) = ((2 dst + 1) src_len) / (2 dst_len), exactly.
__device__ __forceinline__ int nearest_index(int dst, int src_len, int dst_len) {
  const unsigned long long i =
      ((2ull * dst + 1ull) * static_cast<unsigned>(src_len)) / (2ull * static_cast<unsigned>(dst_len));
  return min(static_cast<int>(i), src_len - 1);
}

__device__ __forceinline__ bool pixel_of(Extent e, int& x, int& y) {
  x = blockIdx.x * blockDim.x + threadIdx.x;
  y = blockIdx.y * blockDim.y + threadIdx.y;
  return x < e.width && y < e.height;
}

__device__ __forceinline__ std::size_t offset(int x, int y, std::size_t pitch) {
  return static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(x);
}

__global__ void resize_linear_naive_kernel(ConstAosView in, AosView out, float2 scale) {
  int x, y;
  if (!pixel_of(out.extent, x, y)) return;
  const LinearTap tx = linear_tap(x, scale.x, in.extent.width);
  const LinearTap ty = linear_tap(y, scale.y, in.extent.height);
  std::uint8_t* d = out.data + offset(3 * x, y, out.pitch);
  for (int c = 0; c < 3; ++c) d[c] = bilinear(in.data + c, in.pitch, 3, tx, ty);
}

__global__ void resize_exact_naive_kernel(ConstAosView in, AosView out, double2 scale) {
  int x, y;
  if (!pixel_of(out.extent, x, y)) return;
  const FixedTap tx = fixed_tap(x, scale.x, in.extent.width, true);
  const FixedTap ty = fixed_tap(y, scale.y, in.extent.height, false);
  std::uint8_t* d = out.data + offset(3 * x, y, out.pitch);
  for (int c = 0; c < 3; ++c) d[c] = fixed_bilinear(in.data + c, in.pitch, 3, tx, ty);
}

__global__ void resize_nearest_naive_kernel(ConstAosView in, AosView out) {
  int x, y;
  if (!pixel_of(out.extent, x, y)) return;
  const int sx = nearest_index(x, in.extent.width, out.extent.width);
  const int sy = nearest_index(y, in.extent.height, out.extent.height);
  const std::uint8_t* s = in.data + offset(3 * sx, sy, in.pitch);
  std::uint8_t* d = out.data + offset(3 * x, y, out.pitch);
  for (int c = 0; c < 3; ++c) d[c] = s[c];
}

// ---- Bilinear on interleaved frames, batched: four output pixels a thread.
// Each output pixel's two source pixels sit side by side in a row (six bytes), so they come as two or three
// aligned words funnel-shifted into place rather than as twelve single bytes; the row taps are worked out once
// for the four pixels, and their twelve output bytes leave as three words. The arithmetic is the naive kernels'
// (fast: linear_tap and bilinear; exact: OpenCV's fixed point), so the bytes are theirs.
constexpr int kResizeGroup = 4;  // output pixels per thread
constexpr int kResizeThreadsX = 64, kResizeThreadsY = 4;

// Source pixels i0 and i1 of a row, as bytes p0.c0 p0.c1 p0.c2 p1.c0 (low word) p1.c1 p1.c2 (high word).
__device__ __forceinline__ std::uint64_t pixel_pair(const std::uint8_t* row, int row_bytes, int i0, int i1) {
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(row);
  const std::uintptr_t at = begin + 3 * static_cast<unsigned>(i0);
  const std::uintptr_t aligned = at & ~std::uintptr_t{3};
  const unsigned shift = 8 * static_cast<unsigned>(at & 3u);
  const int words = shift <= 16 ? 2 : 3;  // bytes at .. at + 5
  if (i1 == i0 + 1 && aligned >= begin && aligned + 4 * words <= begin + row_bytes) {
    const unsigned* w = reinterpret_cast<const unsigned*>(aligned);
    const unsigned w0 = __ldg(w), w1 = __ldg(w + 1), w2 = words == 3 ? __ldg(w + 2) : 0u;
    return __funnelshift_r(w0, w1, shift) | static_cast<std::uint64_t>(__funnelshift_r(w1, w2, shift)) << 32;
  }
  std::uint64_t v = 0;
#pragma unroll
  for (int b = 0; b < 6; ++b) {
    const int source = b < 3 ? 3 * i0 + b : 3 * i1 + b - 3;
    v |= static_cast<std::uint64_t>(__ldg(row + source)) << (8 * b);
  }
  return v;
}

__device__ __forceinline__ int channel_of(std::uint64_t pair, int pixel, int c) {
  return static_cast<int>((pair >> (8 * (3 * pixel + c))) & 0xFFu);
}

template <bool kExact>
__global__ void __launch_bounds__(kResizeThreadsX* kResizeThreadsY)
    resize_linear_aos_kernel(AosFrames in, AosFramesOut out, float2 scale, double2 exact_scale) {
  const int first = kResizeGroup * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (first >= out.extent.width || y >= out.extent.height) return;
  const std::uint8_t* frame = in.data + blockIdx.z * in.frame_stride;
  const int row_bytes = 3 * in.extent.width;
  int y0, y1;
  LinearTap ty{};
  FixedTap fy{};
  if constexpr (kExact) {
    fy = fixed_tap(y, exact_scale.y, in.extent.height, false);
    y0 = fy.i0, y1 = fy.i1;
  } else {
    ty = linear_tap(y, scale.y, in.extent.height);
    y0 = ty.i0, y1 = ty.i1;
  }
  const std::uint8_t* r0 = frame + static_cast<std::size_t>(y0) * in.pitch;
  const std::uint8_t* r1 = frame + static_cast<std::size_t>(y1) * in.pitch;
  const int count = min(kResizeGroup, out.extent.width - first);
  std::uint32_t packed[3] = {};
#pragma unroll
  for (int k = 0; k < kResizeGroup; ++k) {
    if (k < count) {
      std::uint64_t top, bottom;
      std::uint8_t v[3];
      if constexpr (kExact) {
        const FixedTap fx = fixed_tap(first + k, exact_scale.x, in.extent.width, true);
        top = pixel_pair(r0, row_bytes, fx.i0, fx.i1);
        bottom = pixel_pair(r1, row_bytes, fx.i0, fx.i1);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          const int h0 = channel_of(top, 0, c) * fx.w0 + channel_of(top, 1, c) * fx.w1;
          const int h1 = channel_of(bottom, 0, c) * fx.w0 + channel_of(bottom, 1, c) * fx.w1;
          const int r = (((fy.w0 * (h0 >> 4)) >> 16) + ((fy.w1 * (h1 >> 4)) >> 16) + 2) >> 2;
          v[c] = static_cast<std::uint8_t>(min(max(r, 0), 255));
        }
      } else {
        const LinearTap tx = linear_tap(first + k, scale.x, in.extent.width);
        top = pixel_pair(r0, row_bytes, tx.i0, tx.i1);
        bottom = pixel_pair(r1, row_bytes, tx.i0, tx.i1);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          const float a = channel_of(top, 0, c), b = channel_of(top, 1, c);
          const float d0 = channel_of(bottom, 0, c), d1 = channel_of(bottom, 1, c);
          const float upper = fmaf(tx.w1, b - a, a), lower = fmaf(tx.w1, d1 - d0, d0);
          v[c] = saturate_round(fmaf(ty.w1, lower - upper, upper));
        }
      }
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        const int byte = 3 * k + c;
        packed[byte / 4] |= static_cast<std::uint32_t>(v[c]) << (8 * (byte % 4));
      }
    }
  }
  std::uint8_t* dst = out.data + blockIdx.z * out.frame_stride + static_cast<std::size_t>(y) * out.pitch + 3 * first;
  if (count == kResizeGroup && (reinterpret_cast<std::uintptr_t>(dst) & 3u) == 0) {
    std::uint32_t* d = reinterpret_cast<std::uint32_t*>(dst);
    d[0] = packed[0];
    d[1] = packed[1];
    d[2] = packed[2];
    return;
  }
  for (int b = 0; b < 3 * count; ++b) dst[b] = static_cast<std::uint8_t>(packed[b / 4] >> (8 * (b % 4)));
}

struct PlaneTextures {
  cudaTextureObject_t plane[3];
};

__global__ void resize_linear_texture_kernel(PlaneTextures tex, Extent src, PlanesView out, float2 scale) {
  int x, y;
  if (!pixel_of(out.extent, x, y)) return;
  // Texel centres sit at +0.5 and the unit subtracts it again, so (dst + 0.5) * scale is OpenCV's source
  // coordinate. Clamping to the first and last centres is OpenCV's edge rule, and keeps the filter inside
  // the frame when the texture (a whole buffer) is larger than it.
  const float u = fminf(fmaxf((x + 0.5f) * scale.x, 0.5f), src.width - 0.5f);
  const float v = fminf(fmaxf((y + 0.5f) * scale.y, 0.5f), src.height - 0.5f);
  const std::size_t o = offset(x, y, out.pitch);
  for (int c = 0; c < 3; ++c) {
    out.plane[c][o] = static_cast<std::uint8_t>(__float2int_rd(fmaf(tex2D<float>(tex.plane[c], u, v), 255.f, 0.5f)));
  }
}

__global__ void resize_linear_hand_kernel(ConstPlanesView in, PlanesView out, float2 scale) {
  int x, y;
  if (!pixel_of(out.extent, x, y)) return;
  const LinearTap tx = linear_tap(x, scale.x, in.extent.width);
  const LinearTap ty = linear_tap(y, scale.y, in.extent.height);
  const std::size_t o = offset(x, y, out.pitch);
  for (int c = 0; c < 3; ++c) out.plane[c][o] = bilinear(in.plane[c], in.pitch, 1, tx, ty);
}

__global__ void resize_exact_planes_kernel(ConstPlanesView in, PlanesView out, double2 scale) {
  int x, y;
  if (!pixel_of(out.extent, x, y)) return;
  const FixedTap tx = fixed_tap(x, scale.x, in.extent.width, true);
  const FixedTap ty = fixed_tap(y, scale.y, in.extent.height, false);
  const std::size_t o = offset(x, y, out.pitch);
  for (int c = 0; c < 3; ++c) out.plane[c][o] = fixed_bilinear(in.plane[c], in.pitch, 1, tx, ty);
}

__global__ void resize_nearest_planes_kernel(ConstPlanesView in, PlanesView out) {
  int x, y;
  if (!pixel_of(out.extent, x, y)) return;
  const std::size_t s = offset(nearest_index(x, in.extent.width, out.extent.width),
                               nearest_index(y, in.extent.height, out.extent.height), in.pitch);
  const std::size_t d = offset(x, y, out.pitch);
  for (int c = 0; c < 3; ++c) out.plane[c][d] = in.plane[c][s];
}

float2 scale_of(Extent in, Extent out) {
  return {static_cast<float>(static_cast<double>(in.width) / out.width),
          static_cast<float>(static_cast<double>(in.height) / out.height)};
}

double2 opencv_scale_of(Extent in, Extent out) { return opencv_scale(in.width, in.height, out.width, out.height); }

void require_frames(Extent in, Extent out) {
  require(in.width > 0 && in.height > 0 && out.width > 0 && out.height > 0, "resize: empty frame");
}

// Launches `kernel` over the output frame with an occupancy-sized block one warp wide.
template <auto Kernel, class... Args>
void launch_over(Extent out, cudaStream_t stream, const char* name, Args... args) {
  const dim3 block = warp_wide_block(occupancy_shape<Kernel>());
  Kernel<<<cover(out.width, out.height, block), block, 0, stream>>>(args...);
  IMGPIPE_CUDA_LAUNCH_CHECK(name, stream);
}

bool aligned(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

// Threads the current device keeps resident at once; asked once per process (a launch shape, not a limit).
int resident_threads() {
  static const int threads =
      device_attribute(cudaDevAttrMultiProcessorCount) * device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  return threads;
}

}  // namespace

void resize_linear_naive(ConstAosView in, AosView out, cudaStream_t stream) {
  require_frames(in.extent, out.extent);
  resize_linear_naive_kernel<<<cover(out.extent.width, out.extent.height, kNaiveBlock), kNaiveBlock, 0, stream>>>(
      in, out, scale_of(in.extent, out.extent));
  IMGPIPE_CUDA_LAUNCH_CHECK("resize_linear_naive_kernel", stream);
}

void resize_linear_exact_naive(ConstAosView in, AosView out, cudaStream_t stream) {
  require_frames(in.extent, out.extent);
  resize_exact_naive_kernel<<<cover(out.extent.width, out.extent.height, kNaiveBlock), kNaiveBlock, 0, stream>>>(
      in, out, opencv_scale_of(in.extent, out.extent));
  IMGPIPE_CUDA_LAUNCH_CHECK("resize_exact_naive_kernel", stream);
}

void resize_nearest_naive(ConstAosView in, AosView out, cudaStream_t stream) {
  require_frames(in.extent, out.extent);
  resize_nearest_naive_kernel<<<cover(out.extent.width, out.extent.height, kNaiveBlock), kNaiveBlock, 0, stream>>>(
      in, out);
  IMGPIPE_CUDA_LAUNCH_CHECK("resize_nearest_naive_kernel", stream);
}

void resize_linear_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                       std::size_t out_frame_stride, int frames, bool exact, cudaStream_t stream) {
  require_frames(first_in.extent, first_out.extent);
  const auto [in, out] = aos_batch(first_in, in_frame_stride, first_out, out_frame_stride, frames, "resize_linear_aos");
  // Four pixels a thread pays where the launch has threads to spare: at least two full waves of them. Below
  // that, one frame (1080p or less) takes the naive kernel's thread per pixel and byte loads, measured faster on
  // an H200. A batch stays one launch at any size: a launch per frame of small outputs took 1.7-4.2x as long on
  // an H100 (docs/performance.md).
  const unsigned long long quads =
      static_cast<unsigned long long>(div_up(out.extent.width, kResizeGroup)) * static_cast<unsigned>(out.extent.height);
  if (frames == 1 && quads < 2ull * static_cast<unsigned long long>(resident_threads())) {
    if (exact) {
      resize_linear_exact_naive(first_in, first_out, stream);
    } else {
      resize_linear_naive(first_in, first_out, stream);
    }
    return;
  }
  const dim3 grid(static_cast<unsigned>(div_up(div_up(out.extent.width, kResizeGroup), kResizeThreadsX)),
                  static_cast<unsigned>(div_up(out.extent.height, kResizeThreadsY)), static_cast<unsigned>(frames));
  const dim3 block(kResizeThreadsX, kResizeThreadsY);
  const float2 scale = scale_of(in.extent, out.extent);
  const double2 exact_scale = opencv_scale_of(in.extent, out.extent);
  if (exact) {
    resize_linear_aos_kernel<true><<<grid, block, 0, stream>>>(in, out, scale, exact_scale);
  } else {
    resize_linear_aos_kernel<false><<<grid, block, 0, stream>>>(in, out, scale, exact_scale);
  }
  IMGPIPE_CUDA_LAUNCH_CHECK("resize_linear_aos_kernel", stream);
}

bool LinearPlaneTextures::fit(ConstPlanesView whole) {
  const auto pitch_align = static_cast<std::size_t>(device_attribute(cudaDevAttrTexturePitchAlignment));
  const auto base_align = static_cast<std::size_t>(device_attribute(cudaDevAttrTextureAlignment));
  bool ok = whole.extent.width > 0 && whole.extent.height > 0 &&
            whole.extent.width <= device_attribute(cudaDevAttrMaxTexture2DLinearWidth) &&
            whole.extent.height <= device_attribute(cudaDevAttrMaxTexture2DLinearHeight) &&
            whole.pitch <= static_cast<std::size_t>(device_attribute(cudaDevAttrMaxTexture2DLinearPitch)) &&
            whole.pitch % pitch_align == 0;
  for (const std::uint8_t* p : whole.plane) ok = ok && aligned(p, base_align);
  return ok;
}

LinearPlaneTextures::LinearPlaneTextures(ConstPlanesView whole) : source_(whole) {
  require(fit(whole), "LinearPlaneTextures: the device cannot bind textures over these planes");
  cudaTextureDesc desc{};
  desc.addressMode[0] = desc.addressMode[1] = cudaAddressModeClamp;
  desc.filterMode = cudaFilterModeLinear;
  desc.readMode = cudaReadModeNormalizedFloat;
  desc.normalizedCoords = 0;
  for (int c = 0; c < 3; ++c) {
    cudaResourceDesc res{};
    res.resType = cudaResourceTypePitch2D;
    res.res.pitch2D.devPtr = const_cast<std::uint8_t*>(whole.plane[c]);  // textures only read
    res.res.pitch2D.desc = cudaCreateChannelDesc<unsigned char>();
    res.res.pitch2D.width = static_cast<std::size_t>(whole.extent.width);
    res.res.pitch2D.height = static_cast<std::size_t>(whole.extent.height);
    res.res.pitch2D.pitchInBytes = whole.pitch;
    cudaTextureObject_t t = 0;
    IMGPIPE_CUDA_CHECK(cudaCreateTextureObject(&t, &res, &desc, nullptr));
    textures_[c] = TextureObject(t);
  }
}

void resize_linear_planes(const LinearPlaneTextures& in, Extent in_extent, PlanesView out, cudaStream_t stream) {
  require_frames(in_extent, out.extent);
  require(in_extent.width <= in.source().extent.width && in_extent.height <= in.source().extent.height,
          "resize_linear_planes: frame larger than its textures");
  const PlaneTextures tex{{in.plane(0), in.plane(1), in.plane(2)}};
  launch_over<&resize_linear_texture_kernel>(out.extent, stream, "resize_linear_texture_kernel", tex, in_extent,
                                             out, scale_of(in_extent, out.extent));
}

void resize_linear_planes_hand(ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  require_frames(in.extent, out.extent);
  launch_over<&resize_linear_hand_kernel>(out.extent, stream, "resize_linear_hand_kernel", in, out,
                                          scale_of(in.extent, out.extent));
}

void resize_linear_exact_planes(ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  require_frames(in.extent, out.extent);
  launch_over<&resize_exact_planes_kernel>(out.extent, stream, "resize_exact_planes_kernel", in, out,
                                           opencv_scale_of(in.extent, out.extent));
}

void resize_nearest_planes(ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  require_frames(in.extent, out.extent);
  launch_over<&resize_nearest_planes_kernel>(out.extent, stream, "resize_nearest_planes_kernel", in, out);
}

}  // namespace imgpipe::cuda
