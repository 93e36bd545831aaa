// JPEG YCbCr planes to interleaved RGB8 by libjpeg's arithmetic. Each thread makes four neighbouring pixels of a
// row, so their 12 bytes leave as three 32-bit stores, and works out their chroma from the chroma samples around
// them, as libjpeg's upsampler would for those pixels.
#include "jpeg_ycbcr.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"

namespace imgpipe::cuda {
namespace {

constexpr int kPixelsPerThread = 4;
const dim3 kBlock(32, 8);

__device__ __forceinline__ int sample(const std::uint8_t* plane, std::size_t pitch, int x, int y) {
  return __ldg(plane + static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(x));
}

// The luma bytes of pixels x .. x + 3 (0 past the row's end): one 32-bit load where all four lie in the row and
// are aligned.
__device__ __forceinline__ void luma_quad(const std::uint8_t* plane, std::size_t pitch, int x, int y, int width,
                                          int (&luma)[kPixelsPerThread]) {
  const std::uint8_t* at = plane + static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(x);
  if (x + kPixelsPerThread <= width && (reinterpret_cast<std::uintptr_t>(at) & 3u) == 0) {
    const std::uint32_t word = __ldg(reinterpret_cast<const std::uint32_t*>(at));
#pragma unroll
    for (int i = 0; i < kPixelsPerThread; ++i) luma[i] = (word >> (8 * i)) & 0xFFu;
    return;
  }
#pragma unroll
  for (int i = 0; i < kPixelsPerThread; ++i) luma[i] = x + i < width ? __ldg(at + i) : 0;
}

// The chroma of pixels x .. x + 3 (x a multiple of 4) from a plane of half the width: libjpeg's
// h2v1_fancy_upsample (4:2:2) or h2v2_fancy_upsample (4:2:0). Each output column takes 3 parts its own sample
// and 1 part the nearer neighbour, rounding alternately down and up; 4:2:0 first sums 3 parts the own row and 1
// the nearer one (the edge row stands in for the missing one), so its sums are 4x and its rounding +8 / +7. The
// edge columns copy the edge sample, which is what the sum gives with the edge column standing in for the
// missing neighbour.
template <JpegChroma kChroma>
__device__ __forceinline__ void half_width_chroma(const std::uint8_t* plane, std::size_t pitch, int x, int y, Extent c,
                                                  int (&chroma)[kPixelsPerThread]) {
  const int cx = x >> 1;
  const int cy = kChroma == JpegChroma::half ? y >> 1 : y;
  int near_row = cy;
  if constexpr (kChroma == JpegChroma::half) near_row = (y & 1) == 0 ? max(cy - 1, 0) : min(cy + 1, c.height - 1);
  int column[4];  // samples, or 4:2:0's vertical sums, of chroma columns cx - 1 .. cx + 2
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int at = min(max(cx - 1 + i, 0), c.width - 1);
    column[i] = sample(plane, pitch, at, cy);
    if constexpr (kChroma == JpegChroma::half) column[i] = 3 * column[i] + sample(plane, pitch, at, near_row);
  }
  constexpr int kShift = kChroma == JpegChroma::half ? 4 : 2;
  constexpr int kRoundDown = kChroma == JpegChroma::half ? 8 : 1, kRoundUp = kChroma == JpegChroma::half ? 7 : 2;
  chroma[0] = (3 * column[1] + column[0] + kRoundDown) >> kShift;
  chroma[1] = (3 * column[1] + column[2] + kRoundUp) >> kShift;
  chroma[2] = (3 * column[2] + column[1] + kRoundDown) >> kShift;
  chroma[3] = (3 * column[2] + column[3] + kRoundUp) >> kShift;
}

// jdcolor.c's ycc_rgb_convert: weights with 16 fractional bits, each term rounded as its tables round it.
constexpr int kFractionBits = 16;
constexpr int kHalf = 1 << (kFractionBits - 1);
constexpr int fixed(double x) { return static_cast<int>(x * (1 << kFractionBits) + 0.5); }
constexpr int kCrToR = fixed(1.40200), kCbToG = fixed(0.34414), kCrToG = fixed(0.71414), kCbToB = fixed(1.77200);

__device__ __forceinline__ std::uint32_t clamp_byte(int v) { return static_cast<std::uint32_t>(min(max(v, 0), 255)); }

template <JpegChroma kChroma>
__global__ void jpeg_planes_to_rgb_kernel(JpegPlanes in, Extent chroma_extent, AosView out) {
  const int x = (blockIdx.x * blockDim.x + threadIdx.x) * kPixelsPerThread;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= out.extent.width || y >= out.extent.height) return;
  int luma[kPixelsPerThread];
  luma_quad(in.plane[0], in.pitch[0], x, y, out.extent.width, luma);
  std::uint32_t bytes[3 * kPixelsPerThread];
  if constexpr (kChroma == JpegChroma::none) {
#pragma unroll
    for (int i = 0; i < kPixelsPerThread; ++i) bytes[3 * i] = bytes[3 * i + 1] = bytes[3 * i + 2] = luma[i];
  } else {
    int cb[kPixelsPerThread], cr[kPixelsPerThread];
    if constexpr (kChroma == JpegChroma::full) {
#pragma unroll
      for (int i = 0; i < kPixelsPerThread; ++i) {
        const int column = min(x + i, chroma_extent.width - 1);
        cb[i] = sample(in.plane[1], in.pitch[1], column, y);
        cr[i] = sample(in.plane[2], in.pitch[2], column, y);
      }
    } else {
      half_width_chroma<kChroma>(in.plane[1], in.pitch[1], x, y, chroma_extent, cb);
      half_width_chroma<kChroma>(in.plane[2], in.pitch[2], x, y, chroma_extent, cr);
    }
#pragma unroll
    for (int i = 0; i < kPixelsPerThread; ++i) {
      const int b = cb[i] - 128, r = cr[i] - 128;
      bytes[3 * i] = clamp_byte(luma[i] + ((kCrToR * r + kHalf) >> kFractionBits));
      bytes[3 * i + 1] = clamp_byte(luma[i] + ((-kCbToG * b + kHalf - kCrToG * r) >> kFractionBits));
      bytes[3 * i + 2] = clamp_byte(luma[i] + ((kCbToB * b + kHalf) >> kFractionBits));
    }
  }
  std::uint8_t* rgb = out.data + static_cast<std::size_t>(y) * out.pitch + 3 * static_cast<std::size_t>(x);
  if (x + kPixelsPerThread <= out.extent.width && (reinterpret_cast<std::uintptr_t>(rgb) & 3u) == 0) {
    auto* words = reinterpret_cast<std::uint32_t*>(rgb);
#pragma unroll
    for (int w = 0; w < 3; ++w) {
      words[w] = bytes[4 * w] | bytes[4 * w + 1] << 8 | bytes[4 * w + 2] << 16 | bytes[4 * w + 3] << 24;
    }
    return;
  }
  const int count = 3 * min(kPixelsPerThread, out.extent.width - x);
#pragma unroll
  for (int i = 0; i < 3 * kPixelsPerThread; ++i) {
    if (i < count) rgb[i] = static_cast<std::uint8_t>(bytes[i]);
  }
}

template <JpegChroma kChroma>
void launch(const JpegPlanes& in, Extent chroma, AosView out, cudaStream_t stream) {
  const dim3 grid = cover(div_up(in.extent.width, kPixelsPerThread), in.extent.height, kBlock);
  jpeg_planes_to_rgb_kernel<kChroma><<<grid, kBlock, 0, stream>>>(in, chroma, out);
}

}  // namespace

Extent jpeg_chroma_extent(Extent luma, JpegChroma chroma) {
  switch (chroma) {
    case JpegChroma::full: return luma;
    case JpegChroma::half_width: return {div_up(luma.width, 2), luma.height};
    case JpegChroma::half: return {div_up(luma.width, 2), div_up(luma.height, 2)};
    case JpegChroma::none: return {0, 0};
  }
  return {0, 0};
}

void jpeg_planes_to_rgb(const JpegPlanes& in, AosView out, cudaStream_t stream) {
  require(same_extent(in.extent, out.extent), "jpeg_planes_to_rgb: input and output extents differ");
  const Extent chroma = jpeg_chroma_extent(in.extent, in.chroma);
  const int planes = in.chroma == JpegChroma::none ? 1 : 3;
  for (int p = 0; p < planes; ++p) {
    const int width = p == 0 ? in.extent.width : chroma.width;
    require(in.plane[p] != nullptr && in.pitch[p] >= static_cast<std::size_t>(width),
            "jpeg_planes_to_rgb: a plane is missing or its pitch is below its width");
  }
  require(out.pitch >= 3 * static_cast<std::size_t>(out.extent.width),
          "jpeg_planes_to_rgb: pitch below the row's bytes");
  if (in.extent.width == 0 || in.extent.height == 0) return;
  switch (in.chroma) {
    case JpegChroma::full:
      launch<JpegChroma::full>(in, chroma, out, stream);
      break;
    case JpegChroma::half_width:
      launch<JpegChroma::half_width>(in, chroma, out, stream);
      break;
    case JpegChroma::half:
      launch<JpegChroma::half>(in, chroma, out, stream);
      break;
    case JpegChroma::none:
      launch<JpegChroma::none>(in, chroma, out, stream);
      break;
  }
  IMGPIPE_CUDA_LAUNCH_CHECK("jpeg_planes_to_rgb_kernel", stream);
}

}  // namespace imgpipe::cuda
