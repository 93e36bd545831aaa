// Gray: on the interleaved frame (naive) and on frames of either layout (optimized).
//
// Why the optimized version is fast: the naive kernel's warp reads 96 bytes with 96 one-byte loads and writes
// them back the same way. The optimized one reads 16-byte words of interleaved frames (16 pixels a thread, a
// batch of frames per launch), or three 32-bit words per 4 pixels of planes, so a warp moves whole lines per
// access, and the grid is sized by occupancy with a grid-stride loop instead of one tiny thread per pixel
// (pointwise.cuh).
#include "gray.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"
#include "pixel.cuh"
#include "pointwise.cuh"

#include <cstdint>

namespace imgpipe::cuda {
namespace {

const dim3 kNaiveBlock(32, 8);

__global__ void gray_naive_kernel(ConstAosView in, AosView out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= in.extent.width || y >= in.extent.height) return;
  const std::uint8_t* s = in.data + static_cast<std::size_t>(y) * in.pitch + 3 * static_cast<std::size_t>(x);
  std::uint8_t* d = out.data + static_cast<std::size_t>(y) * out.pitch + 3 * static_cast<std::size_t>(x);
  d[0] = d[1] = d[2] = luma(s[0], s[1], s[2]);
}

struct GrayOp {
  __device__ GrayOp prepare(int) const { return *this; }
  __device__ void operator()(std::uint8_t& r, std::uint8_t& g, std::uint8_t& b) const { r = g = b = luma(r, g, b); }
};

}  // namespace

void gray_naive(ConstAosView in, AosView out, cudaStream_t stream) {
  require(same_extent(in.extent, out.extent), "gray_naive: input and output extents differ");
  gray_naive_kernel<<<cover(in.extent.width, in.extent.height, kNaiveBlock), kNaiveBlock, 0, stream>>>(in, out);
  IMGPIPE_CUDA_LAUNCH_CHECK("gray_naive_kernel", stream);
}

void gray_planes(ConstPlanesView in, PlanesView out, cudaStream_t stream) {
  pointwise(as_frame(in), as_frame(out), GrayOp{}, "gray_planes", stream);
}

void gray_frames(const ConstFrameView& in, const FrameView& out, cudaStream_t stream) {
  if (in.interleaved && out.interleaved) {
    gray_aos(in.aos, in.aos.pitch * static_cast<std::size_t>(in.aos.extent.height), out.aos,
             out.aos.pitch * static_cast<std::size_t>(out.aos.extent.height), 1, stream);
    return;
  }
  pointwise(in, out, GrayOp{}, "gray_frames", stream);
}

void gray_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
              int frames, cudaStream_t stream) {
  pointwise_aos(first_in, in_frame_stride, first_out, out_frame_stride, frames, GrayOp{}, "gray_aos", stream);
}

}  // namespace imgpipe::cuda
