// Normalize: by atomics on the interleaved frame (naive) and by a device reduction on planes.
//
// Why the optimized version is fast: the naive kernel sends six atomics per pixel to the same six words,
// which the L2 serialises: millions of updates queue on six addresses. A tree reduction (CUB's
// DeviceReduce, the engine under thrust::reduce) has each thread fold many pixels in registers, each warp
// fold by shuffles and each block write one partial result; a second tiny pass folds the partials. All three
// channels fold at once: a pixel's value is one 32-bit word per side (minima, maxima; a byte per channel)
// and __vminu4 / __vmaxu4 combine four bytes in one instruction.
// Why CUB and not thrust::reduce: thrust::reduce returns its result to the host, which would stall the
// stream on every frame, and allocates its temporary storage on every call. cub::DeviceReduce writes the
// result to device memory, where the stretch kernel reads it, and takes temporary storage we keep.
// The input is a thrust::counting_iterator over pixel indices, mapped to the frame (planes, or the interleaved
// frame itself where normalize comes first in a chain) by the transform.
#include "normalize.cuh"

#include "cuda_check.hpp"
#include "frame_access.cuh"
#include "launch.cuh"
#include "pixel.cuh"
#include "pointwise.cuh"

#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>

namespace imgpipe::cuda {
namespace {

const dim3 kNaiveBlock(32, 8);

// The stretch of one channel as cv::normalize(NORM_MINMAX, 0..255) computes it for 8-bit data, so the bytes are
// OpenCV's: scale = 255 * (1 / (hi - lo)) in double (0 for a constant channel), shift = -lo * scale, both rounded
// to float, then cv::Mat::convertTo's fused multiply-add v * scale + shift, rounded half to even and saturated.
struct Stretch {
  float scale, shift;
};

__device__ __forceinline__ Stretch stretch_of(unsigned lo, unsigned hi) {
  const double scale = 255.0 * (hi > lo ? 1.0 / static_cast<double>(hi - lo) : 0.0);
  return {__double2float_rn(scale), __double2float_rn(-__dmul_rn(static_cast<double>(lo), scale))};
}

__device__ __forceinline__ std::uint8_t stretch(unsigned v, Stretch k) {
  return static_cast<std::uint8_t>(min(max(__float2int_rn(fmaf(static_cast<float>(v), k.scale, k.shift)), 0), 255));
}

// ---------------------------------------------------------------------------------------------- naive
// range: minima of channels 0..2, then maxima of channels 0..2.

__global__ void range_naive_kernel(ConstAosView in, unsigned* range) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= in.extent.width || y >= in.extent.height) return;
  const std::uint8_t* p = in.data + static_cast<std::size_t>(y) * in.pitch + 3 * static_cast<std::size_t>(x);
  for (int c = 0; c < 3; ++c) {
    atomicMin(&range[c], p[c]);
    atomicMax(&range[3 + c], p[c]);
  }
}

__global__ void stretch_naive_kernel(ConstAosView in, AosView out, const unsigned* range) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= in.extent.width || y >= in.extent.height) return;
  const std::uint8_t* s = in.data + static_cast<std::size_t>(y) * in.pitch + 3 * static_cast<std::size_t>(x);
  std::uint8_t* d = out.data + static_cast<std::size_t>(y) * out.pitch + 3 * static_cast<std::size_t>(x);
  for (int c = 0; c < 3; ++c) {
    d[c] = stretch(s[c], stretch_of(range[c], range[3 + c]));
  }
}

// ------------------------------------------------------------------------------------------ optimized

// Per-channel minima (lo) and maxima (hi), one byte per channel in bytes 0..2.
struct ChannelRange {
  unsigned lo;
  unsigned hi;
};

struct MergeRanges {
  __device__ ChannelRange operator()(const ChannelRange& a, const ChannelRange& b) const {
    return {__vminu4(a.lo, b.lo), __vmaxu4(a.hi, b.hi)};
  }
};

template <class Source>
struct PixelRange {  // pixel index -> the range of that one pixel
  Source frame;
  unsigned width;
  __device__ ChannelRange operator()(unsigned i) const {
    const int y = static_cast<int>(i / width);
    const int x = static_cast<int>(i - static_cast<unsigned>(y) * width);
    const unsigned v = *frame.at(x, y, 0) | (*frame.at(x, y, 1) << 8) | (*frame.at(x, y, 2) << 16);
    return {v, v};
  }
};

// The frame's per-channel range into `range` (device memory), by one CUB reduction.
template <class Source>
void reduce_range(Source source, Extent extent, ChannelRange* range, NormalizeScratch& scratch, cudaStream_t stream) {
  const auto items = static_cast<unsigned>(extent.width) * static_cast<unsigned>(extent.height);
  const thrust::counting_iterator<unsigned> indices(0u);
  const PixelRange<Source> pixel_range{source, static_cast<unsigned>(extent.width)};
  const ChannelRange empty{0xFFFFFFFFu, 0u};
  std::size_t temp_bytes = 0;
  IMGPIPE_CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, indices, range, items, MergeRanges{},
                                                        pixel_range, empty, stream));
  scratch.temp.grow(temp_bytes);
  IMGPIPE_CUDA_CHECK(cub::DeviceReduce::TransformReduce(scratch.temp.data(), temp_bytes, indices, range, items,
                                                        MergeRanges{}, pixel_range, empty, stream));
  IMGPIPE_CUDA_LAUNCH_CHECK("cub::DeviceReduce::TransformReduce", stream);
}

struct StretchOp {
  const ChannelRange* range;

  struct Stretches {
    Stretch channel[3];
    __device__ void operator()(std::uint8_t& r, std::uint8_t& g, std::uint8_t& b) const {
      r = stretch(r, channel[0]);
      g = stretch(g, channel[1]);
      b = stretch(b, channel[2]);
    }
  };

  __device__ Stretches prepare() const {
    const ChannelRange cr = *range;
    Stretches s;
#pragma unroll
    for (int c = 0; c < 3; ++c) s.channel[c] = stretch_of((cr.lo >> (8 * c)) & 0xFFu, (cr.hi >> (8 * c)) & 0xFFu);
    return s;
  }
};

}  // namespace

void normalize_naive(ConstAosView in, AosView out, NormalizeScratch& scratch, cudaStream_t stream) {
  require(same_extent(in.extent, out.extent), "normalize_naive: input and output extents differ");
  scratch.range.grow(6 * sizeof(unsigned));
  auto* range = reinterpret_cast<unsigned*>(scratch.range.data());
  IMGPIPE_CUDA_CHECK(cudaMemsetAsync(range, 0xFF, 3 * sizeof(unsigned), stream));  // minima start above 255
  IMGPIPE_CUDA_CHECK(cudaMemsetAsync(range + 3, 0, 3 * sizeof(unsigned), stream));
  const dim3 grid = cover(in.extent.width, in.extent.height, kNaiveBlock);
  range_naive_kernel<<<grid, kNaiveBlock, 0, stream>>>(in, range);
  IMGPIPE_CUDA_LAUNCH_CHECK("range_naive_kernel", stream);
  stretch_naive_kernel<<<grid, kNaiveBlock, 0, stream>>>(in, out, range);
  IMGPIPE_CUDA_LAUNCH_CHECK("stretch_naive_kernel", stream);
}

void normalize_frames(const ConstFrameView& in, const FrameView& out, NormalizeScratch& scratch,
                      cudaStream_t stream) {
  require(same_extent(in.extent(), out.extent()), "normalize: input and output extents differ");
  const unsigned long long pixels =
      static_cast<unsigned long long>(in.extent().width) * static_cast<unsigned long long>(in.extent().height);
  require(pixels > 0 && pixels < (1ull << 32), "normalize: frame empty or too large");
  scratch.range.grow(sizeof(ChannelRange));
  auto* range = reinterpret_cast<ChannelRange*>(scratch.range.data());
  if (in.interleaved) {
    reduce_range(AosSource{in.aos}, in.extent(), range, scratch, stream);
  } else {
    reduce_range(PlanesSource{in.planes}, in.extent(), range, scratch, stream);
  }
  pointwise(in, out, StretchOp{range}, "normalize (stretch)", stream);
}

}  // namespace imgpipe::cuda
