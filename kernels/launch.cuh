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
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

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

// Beyond the default 48 KiB a kernel must opt in to its dynamic shared memory, on each device it runs on. The
// largest amount allowed so far is kept per kernel and device, so launches after the first skip the driver call.
template <class... Params>
void allow_dynamic_shared(void (*kernel)(Params...), std::size_t bytes) {
  constexpr std::size_t kDefaultLimit = 48 * 1024;
  if (bytes <= kDefaultLimit) return;
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, std::size_t> allowed;
  const std::scoped_lock lock(mutex);
  std::size_t& limit = allowed[{device, reinterpret_cast<const void*>(kernel)}];
  if (bytes <= limit) return;
  IMGPIPE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  limit = bytes;
}

// Launcher preconditions: a violated one is a caller's bug, reported before anything is enqueued.
inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}
inline bool same_extent(Extent a, Extent b) { return a.width == b.width && a.height == b.height; }

// Programmatic dependent launch (sm_90): where the previous operation in the stream is a kernel, this grid is
// launched as that kernel's last blocks finish rather than once it has completed, which hides most of the gap
// between two launches. The kernel must call wait_for_previous_grid() before its first access to global memory;
// the wait returns once the previous kernel has completed and its writes are visible, so stream order holds.
// Kernels launched so do not trigger their dependents early: triggering at block start made graph replays of one
// 1080p frame of the fused resize + filter kernel 12% slower on an H200 (docs/performance.md).
template <class... Params, class... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
                      Args&&... args) {
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = 1;
  IMGPIPE_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

// In a kernel started by launch_dependent: waits for the kernel before it in the stream (a no-op otherwise).
__device__ __forceinline__ void wait_for_previous_grid() {
#if __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}

// An attribute of the current device (alignments, texture limits).
inline int device_attribute(cudaDeviceAttr attr) {
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  int value = 0;
  IMGPIPE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

}  // namespace imgpipe::cuda
