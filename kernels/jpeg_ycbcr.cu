// JPEG YCbCr planes to interleaved RGB8 by libjpeg's arithmetic. One thread per output pixel: it works out its
// own chroma from the two or four chroma samples around it, as libjpeg's upsampler would for that pixel.
#include "jpeg_ycbcr.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"

namespace imgpipe::cuda {
namespace {

const dim3 kBlock(32, 8);

__device__ __forceinline__ int sample(const std::uint8_t* plane, std::size_t pitch, int x, int y) {
  return __ldg(plane + static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(x));
}

// h2v1_fancy_upsample: each output column takes 3/4 of its own sample and 1/4 of the nearer neighbour, rounding
// alternately down and up; the outermost columns copy the edge sample.
__device__ __forceinline__ int half_width_chroma(const std::uint8_t* plane, std::size_t pitch, int x, int y,
                                                 int columns) {
  const int cx = x >> 1;
  const int own = sample(plane, pitch, cx, y);
  if ((x & 1) == 0) return cx == 0 ? own : (3 * own + sample(plane, pitch, cx - 1, y) + 1) >> 2;
  return cx == columns - 1 ? own : (3 * own + sample(plane, pitch, cx + 1, y) + 2) >> 2;
}

// h2v2_fancy_upsample: first vertically, 3 parts the own row and 1 the nearer one (the edge row stands in for
// the missing one), kept at 4x; then horizontally as above at 16x, with +8 / +7 rounding.
__device__ __forceinline__ int half_chroma(const std::uint8_t* plane, std::size_t pitch, int x, int y, Extent c) {
  const int cx = x >> 1, cy = y >> 1;
  const int near_row = (y & 1) == 0 ? max(cy - 1, 0) : min(cy + 1, c.height - 1);
  const auto column_sum = [&](int column) {
    return 3 * sample(plane, pitch, column, cy) + sample(plane, pitch, column, near_row);
  };
  const int own = column_sum(cx);
  if ((x & 1) == 0) return cx == 0 ? (4 * own + 8) >> 4 : (3 * own + column_sum(cx - 1) + 8) >> 4;
  return cx == c.width - 1 ? (4 * own + 7) >> 4 : (3 * own + column_sum(cx + 1) + 7) >> 4;
}

// jdcolor.c's ycc_rgb_convert: weights with 16 fractional bits, each term rounded as its tables round it.
constexpr int kFractionBits = 16;
constexpr int kHalf = 1 << (kFractionBits - 1);
constexpr int fixed(double x) { return static_cast<int>(x * (1 << kFractionBits) + 0.5); }
constexpr int kCrToR = fixed(1.40200), kCbToG = fixed(0.34414), kCrToG = fixed(0.71414), kCbToB = fixed(1.77200);

__device__ __forceinline__ std::uint8_t clamp_byte(int v) { return static_cast<std::uint8_t>(min(max(v, 0), 255)); }

__global__ void jpeg_planes_to_rgb_kernel(JpegPlanes in, Extent chroma_extent, AosView out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= out.extent.width || y >= out.extent.height) return;
  const int luma = sample(in.plane[0], in.pitch[0], x, y);
  std::uint8_t* rgb = out.data + static_cast<std::size_t>(y) * out.pitch + 3 * static_cast<std::size_t>(x);
  if (in.chroma == JpegChroma::none) {
    rgb[0] = rgb[1] = rgb[2] = static_cast<std::uint8_t>(luma);
    return;
  }
  int cb, cr;
  if (in.chroma == JpegChroma::full) {
    cb = sample(in.plane[1], in.pitch[1], x, y);
    cr = sample(in.plane[2], in.pitch[2], x, y);
  } else if (in.chroma == JpegChroma::half_width) {
    cb = half_width_chroma(in.plane[1], in.pitch[1], x, y, chroma_extent.width);
    cr = half_width_chroma(in.plane[2], in.pitch[2], x, y, chroma_extent.width);
  } else {
    cb = half_chroma(in.plane[1], in.pitch[1], x, y, chroma_extent);
    cr = half_chroma(in.plane[2], in.pitch[2], x, y, chroma_extent);
  }
  cb -= 128;
  cr -= 128;
  rgb[0] = clamp_byte(luma + ((kCrToR * cr + kHalf) >> kFractionBits));
  rgb[1] = clamp_byte(luma + ((-kCbToG * cb + kHalf - kCrToG * cr) >> kFractionBits));
  rgb[2] = clamp_byte(luma + ((kCbToB * cb + kHalf) >> kFractionBits));
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
  jpeg_planes_to_rgb_kernel<<<cover(in.extent.width, in.extent.height, kBlock), kBlock, 0, stream>>>(in, chroma, out);
  IMGPIPE_CUDA_LAUNCH_CHECK("jpeg_planes_to_rgb_kernel", stream);
}

}  // namespace imgpipe::cuda
