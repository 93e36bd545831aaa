// NV12 / P016 to interleaved RGB8. One thread per 2x2 block of pixels: it reads the block's one chroma pair
// once, and a warp's loads and stores of each row are contiguous.
#include "yuv.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"

#include <cstdint>

namespace imgpipe::cuda {
namespace {

const dim3 kBlock(32, 8);

// RGB = scale * (Y - black) + weights * (U - 128, V - 128), with the chroma offsets and the range expansion
// folded into the weights; 16-bit samples are read as 8-bit values with a fraction (divided by 256).
struct YuvToRgb {
  float luma_scale, luma_offset;
  float v_to_r, u_to_g, v_to_g, u_to_b;
};

YuvToRgb coefficients(YuvColor color) {
  const double kr = color.matrix == YuvMatrix::bt709 ? 0.2126 : color.matrix == YuvMatrix::bt2020 ? 0.2627 : 0.299;
  const double kb = color.matrix == YuvMatrix::bt709 ? 0.0722 : color.matrix == YuvMatrix::bt2020 ? 0.0593 : 0.114;
  const double kg = 1.0 - kr - kb;
  const double luma_scale = color.full_range ? 1.0 : 255.0 / 219.0;
  const double chroma_scale = color.full_range ? 1.0 : 255.0 / 224.0;
  const double black = color.full_range ? 0.0 : 16.0;
  return {static_cast<float>(luma_scale), static_cast<float>(-black * luma_scale),
          static_cast<float>(2.0 * (1.0 - kr) * chroma_scale),
          static_cast<float>(-2.0 * kb * (1.0 - kb) / kg * chroma_scale),
          static_cast<float>(-2.0 * kr * (1.0 - kr) / kg * chroma_scale),
          static_cast<float>(2.0 * (1.0 - kb) * chroma_scale)};
}

template <typename Sample>
__device__ __forceinline__ float sample_value(Sample s) {
  if constexpr (sizeof(Sample) == 1) {
    return static_cast<float>(s);
  } else {
    return static_cast<float>(s) * (1.0f / 256.0f);
  }
}

// Truncated, as libswscale's table-driven conversion effectively does.
__device__ __forceinline__ std::uint8_t to_byte(float v) {
  return static_cast<std::uint8_t>(fminf(fmaxf(v, 0.0f), 255.0f));
}

template <typename Sample>
__global__ void nv12_to_rgb_kernel(Nv12View in, YuvToRgb k, AosView out) {
  const int cx = blockIdx.x * blockDim.x + threadIdx.x;
  const int cy = blockIdx.y * blockDim.y + threadIdx.y;
  const int x = 2 * cx, y = 2 * cy;
  if (x >= out.extent.width || y >= out.extent.height) return;
  const auto* chroma_row = reinterpret_cast<const Sample*>(static_cast<const std::uint8_t*>(in.chroma) +
                                                           static_cast<std::size_t>(cy) * in.pitch);
  const float u = sample_value(chroma_row[2 * cx]) - 128.0f;
  const float v = sample_value(chroma_row[2 * cx + 1]) - 128.0f;
  const float r_add = k.v_to_r * v, g_add = k.u_to_g * u + k.v_to_g * v, b_add = k.u_to_b * u;
  const int columns = min(2, out.extent.width - x);
  const int rows = min(2, out.extent.height - y);
  for (int row = 0; row < rows; ++row) {
    const auto* luma_row = reinterpret_cast<const Sample*>(static_cast<const std::uint8_t*>(in.luma) +
                                                           static_cast<std::size_t>(y + row) * in.pitch);
    std::uint8_t* rgb = out.data + static_cast<std::size_t>(y + row) * out.pitch + 3 * static_cast<std::size_t>(x);
    for (int column = 0; column < columns; ++column) {
      const float luma = k.luma_scale * sample_value(luma_row[x + column]) + k.luma_offset;
      rgb[3 * column + 0] = to_byte(luma + r_add);
      rgb[3 * column + 1] = to_byte(luma + g_add);
      rgb[3 * column + 2] = to_byte(luma + b_add);
    }
  }
}

}  // namespace

void nv12_to_rgb(const Nv12View& in, YuvColor color, AosView out, cudaStream_t stream) {
  require(same_extent(in.extent, out.extent), "nv12_to_rgb: input and output extents differ");
  require(in.bytes_per_sample == 1 || in.bytes_per_sample == 2, "nv12_to_rgb: samples are 1 or 2 bytes");
  const auto aligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % in.bytes_per_sample == 0; };
  require(aligned(in.luma) && aligned(in.chroma) && in.pitch % in.bytes_per_sample == 0,
          "nv12_to_rgb: 16-bit samples need 2-byte aligned planes and pitch");
  // A chroma row holds a U, V pair for every two pixels, an odd width's last one included.
  require(in.pitch >= 2 * static_cast<std::size_t>(div_up(in.extent.width, 2)) * in.bytes_per_sample &&
              out.pitch >= 3 * static_cast<std::size_t>(out.extent.width),
          "nv12_to_rgb: pitch below the row's bytes");
  if (in.extent.width == 0 || in.extent.height == 0) return;
  const dim3 grid = cover(div_up(in.extent.width, 2), div_up(in.extent.height, 2), kBlock);
  if (in.bytes_per_sample == 1) {
    nv12_to_rgb_kernel<std::uint8_t><<<grid, kBlock, 0, stream>>>(in, coefficients(color), out);
  } else {
    nv12_to_rgb_kernel<std::uint16_t><<<grid, kBlock, 0, stream>>>(in, coefficients(color), out);
  }
  IMGPIPE_CUDA_LAUNCH_CHECK("nv12_to_rgb_kernel", stream);
}

}  // namespace imgpipe::cuda
