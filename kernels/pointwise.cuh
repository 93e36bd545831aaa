// Pointwise ops on planes (gray, normalize's stretch): one kernel template, four pixels per thread.
// Included by .cu files only.
//
// A thread loads one 32-bit word from each plane (4 pixels), applies the op per pixel in registers, and stores
// one word per plane: a warp moves 128 contiguous bytes per plane per access instead of 32. Rows whose
// pointers or pitch are not 4-byte aligned, and the last partial group of a row, go byte by byte.
#pragma once

#include "cuda_check.hpp"
#include "launch.cuh"
#include "planes.hpp"

#include <cstdint>

namespace imgpipe::cuda {

constexpr int kPointwisePixels = 4;

// Op: `__device__ F prepare() const`, run once per thread (it may read per-frame parameters from device
// memory), returns F with `__device__ void operator()(std::uint8_t& r, std::uint8_t& g, std::uint8_t& b) const`,
// run once per pixel.
template <class Op, bool kWords>
__global__ void pointwise_planes_kernel(ConstPlanesView in, PlanesView out, unsigned groups_per_row,
                                        unsigned long long groups, Op op) {
  const auto f = op.prepare();
  const int width = in.extent.width;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < groups;
       i += stride) {
    const unsigned g = static_cast<unsigned>(i);  // groups < 2^32
    const unsigned y = g / groups_per_row;
    const int x = static_cast<int>(g - y * groups_per_row) * kPointwisePixels;
    const std::size_t s = y * in.pitch + static_cast<std::size_t>(x);
    const std::size_t d = y * out.pitch + static_cast<std::size_t>(x);
    if (kWords && x + kPointwisePixels <= width) {
      uchar4 p[3];
#pragma unroll
      for (int c = 0; c < 3; ++c) p[c] = *reinterpret_cast<const uchar4*>(in.plane[c] + s);
      f(p[0].x, p[1].x, p[2].x);
      f(p[0].y, p[1].y, p[2].y);
      f(p[0].z, p[1].z, p[2].z);
      f(p[0].w, p[1].w, p[2].w);
#pragma unroll
      for (int c = 0; c < 3; ++c) *reinterpret_cast<uchar4*>(out.plane[c] + d) = p[c];
    } else {
      const int n = min(kPointwisePixels, width - x);
      for (int k = 0; k < n; ++k) {
        std::uint8_t r = in.plane[0][s + k], gr = in.plane[1][s + k], b = in.plane[2][s + k];
        f(r, gr, b);
        out.plane[0][d + k] = r;
        out.plane[1][d + k] = gr;
        out.plane[2][d + k] = b;
      }
    }
  }
}

template <class Op, bool kWords>
void launch_pointwise(ConstPlanesView in, PlanesView out, Op op, const char* name, cudaStream_t stream) {
  const unsigned per_row = static_cast<unsigned>(div_up(in.extent.width, kPointwisePixels));
  const unsigned long long groups = static_cast<unsigned long long>(per_row) * static_cast<unsigned>(in.extent.height);
  require(groups < (1ull << 32), std::string(name) + ": frame too large");
  const OccupancyShape& shape = occupancy_shape<&pointwise_planes_kernel<Op, kWords>>();
  pointwise_planes_kernel<Op, kWords><<<grid_stride_blocks(groups, shape), shape.block, 0, stream>>>(
      in, out, per_row, groups, op);
  IMGPIPE_CUDA_LAUNCH_CHECK(name, stream);
}

// Runs `op` over every pixel of `in` into `out` (equal extents; the same planes for in place).
template <class Op>
void pointwise_planes(ConstPlanesView in, PlanesView out, Op op, const char* name, cudaStream_t stream) {
  require(same_extent(in.extent, out.extent), std::string(name) + ": input and output extents differ");
  bool words = in.pitch % 4 == 0 && out.pitch % 4 == 0;
  for (int c = 0; c < 3; ++c) {
    words = words && reinterpret_cast<std::uintptr_t>(in.plane[c]) % 4 == 0 &&
            reinterpret_cast<std::uintptr_t>(out.plane[c]) % 4 == 0;
  }
  if (words) {
    launch_pointwise<Op, true>(in, out, op, name, stream);
  } else {
    launch_pointwise<Op, false>(in, out, op, name, stream);
  }
}

}  // namespace imgpipe::cuda
