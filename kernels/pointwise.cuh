// Pointwise ops (gray, normalize's stretch): one kernel template, four pixels per thread, on frames of either
// layout (frame_access.cuh). Included by .cu files only.
//
// A thread loads the 4 pixels' three 32-bit words (one per plane, or the 12 interleaved bytes), applies the op
// per pixel in registers, and stores three words: a warp moves 384 contiguous bytes per access instead of
// single bytes. Rows whose pointers or pitch are not 4-byte aligned, and the last partial group of a row, go
// byte by byte.
#pragma once

#include "cuda_check.hpp"
#include "frame_access.cuh"
#include "launch.cuh"
#include "planes.hpp"

#include <cstdint>
#include <string>

namespace imgpipe::cuda {

constexpr int kPointwisePixels = 4;

// Op: `__device__ F prepare() const`, run once per thread (it may read per-frame parameters from device
// memory), returns F with `__device__ void operator()(std::uint8_t& r, std::uint8_t& g, std::uint8_t& b) const`,
// run once per pixel.
template <class Op, bool kWords, class Source, class Target>
__global__ void pointwise_kernel(Source in, Target out, int width, unsigned groups_per_row, unsigned long long groups,
                                 Op op) {
  const auto f = op.prepare();
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < groups;
       i += stride) {
    const unsigned g = static_cast<unsigned>(i);  // groups < 2^32
    const int y = static_cast<int>(g / groups_per_row);
    const int x = static_cast<int>(g - static_cast<unsigned>(y) * groups_per_row) * kPointwisePixels;
    if (kWords && x + kPointwisePixels <= width) {
      uchar4 p[3];
      in.load4(x, y, p);
      f(p[0].x, p[1].x, p[2].x);
      f(p[0].y, p[1].y, p[2].y);
      f(p[0].z, p[1].z, p[2].z);
      f(p[0].w, p[1].w, p[2].w);
      out.store4(x, y, p);
    } else {
      const int n = min(kPointwisePixels, width - x);
      for (int k = 0; k < n; ++k) {
        std::uint8_t r = *in.at(x + k, y, 0), gr = *in.at(x + k, y, 1), b = *in.at(x + k, y, 2);
        f(r, gr, b);
        *out.at(x + k, y, 0) = r;
        *out.at(x + k, y, 1) = gr;
        *out.at(x + k, y, 2) = b;
      }
    }
  }
}

template <class Op, bool kWords, class Source, class Target>
void launch_pointwise(Source in, Target out, Extent extent, Op op, const char* name, cudaStream_t stream) {
  const unsigned per_row = static_cast<unsigned>(div_up(extent.width, kPointwisePixels));
  const unsigned long long groups = static_cast<unsigned long long>(per_row) * static_cast<unsigned>(extent.height);
  require(groups < (1ull << 32), std::string(name) + ": frame too large");
  const OccupancyShape& shape = occupancy_shape<&pointwise_kernel<Op, kWords, Source, Target>>();
  pointwise_kernel<Op, kWords><<<grid_stride_blocks(groups, shape), shape.block, 0, stream>>>(
      in, out, extent.width, per_row, groups, op);
  IMGPIPE_CUDA_LAUNCH_CHECK(name, stream);
}

// Runs `op` over every pixel of `in` into `out` (equal extents, either layout each; the same planes for in
// place).
template <class Op>
void pointwise(const ConstFrameView& in, const FrameView& out, Op op, const char* name, cudaStream_t stream) {
  require(same_extent(in.extent(), out.extent()), std::string(name) + ": input and output extents differ");
  with_layouts(in, out, [&](const auto& source, const auto& target) {
    if (source.words_aligned() && target.words_aligned()) {
      launch_pointwise<Op, true>(source, target, in.extent(), op, name, stream);
    } else {
      launch_pointwise<Op, false>(source, target, in.extent(), op, name, stream);
    }
  });
}

}  // namespace imgpipe::cuda
