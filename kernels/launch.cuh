// Launch shapes shared by the kernel files. Included by .cu files only (it instantiates occupancy queries).
//
// Kernels whose block shape is free (elementwise work) take the block size that maximises occupancy, asked of
// the runtime once per kernel and process (cudaOccupancyMaxPotentialBlockSize), and a grid that covers the
// work but never exceeds what fills the device; a grid-stride loop does the rest. Kernels whose tile dictates
// the block (transpose, filters) keep their fixed, named shapes instead.
#pragma once

#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "limits.hpp"

#include "planes.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace imgpipe::cuda {

struct OccupancyShape {
  int block = 0;      // threads per block, a multiple of kWarpSize
  int full_grid = 0;  // the fewest blocks of that size that fill every SM
};

// One query per kernel per process: the answer depends on the kernel and the device, never on the frame.
template <auto Kernel>
const OccupancyShape& occupancy_shape() {
  static const OccupancyShape shape = [] {
    OccupancyShape s;
    IMGPIPE_CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&s.full_grid, &s.block, Kernel));
    s.block = std::max(kWarpSize, s.block / kWarpSize * kWarpSize);
    return s;
  }();
  return shape;
}

// Blocks for a grid-stride loop over `items`.
inline unsigned grid_stride_blocks(unsigned long long items, const OccupancyShape& s) {
  const unsigned long long needed = (items + s.block - 1) / s.block;
  return static_cast<unsigned>(std::clamp<unsigned long long>(needed, 1, static_cast<unsigned>(s.full_grid)));
}

// A 2-D block one warp wide, so each row of threads touches 32 consecutive bytes of a plane.
inline dim3 warp_wide_block(const OccupancyShape& s) {
  return dim3(kWarpSize, static_cast<unsigned>(s.block / kWarpSize));
}

// Grid covering a width x height frame (times `planes` in z) with `block`.
inline dim3 cover(int width, int height, dim3 block, int planes = 1) {
  return dim3(static_cast<unsigned>(div_up(width, static_cast<int>(block.x))),
              static_cast<unsigned>(div_up(height, static_cast<int>(block.y))), static_cast<unsigned>(planes));
}

// Launcher preconditions: a violated one is a caller's bug, reported before anything is enqueued.
inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}
inline bool same_extent(Extent a, Extent b) { return a.width == b.width && a.height == b.height; }

// An attribute of the current device (alignments, texture limits).
inline int device_attribute(cudaDeviceAttr attr) {
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  int value = 0;
  IMGPIPE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

}  // namespace imgpipe::cuda
