// Normalize: by atomics on the interleaved frame (naive) and by per-thread folds on frames of either layout and
// batches of interleaved frames (optimized).
//
// Why the optimized version is fast: the naive kernel sends six atomics per pixel to the same six words,
// which the L2 serialises: millions of updates queue on six addresses. Here each thread folds many pixels in
// registers, sixteen at a time as three 16-byte words of the interleaved frame (pointwise.cuh's walk_runs):
// __vminu4 / __vmaxu4 fold four bytes in one instruction, each byte position of the 48 keeping its channel. A
// block then folds its threads' results through shared memory and sends six atomics, one per channel and side,
// to its frame's words in device memory, where the stretch kernel reads them: no host round trip per frame,
// and a batch of frames is one launch for the ranges and one for the stretch.
#include "normalize.cuh"

#include "channel_range.cuh"
#include "cuda_check.hpp"
#include "frame_access.cuh"
#include "launch.cuh"
#include "pixel.cuh"
#include "pointwise.cuh"

#include <cstdint>

namespace imgpipe::cuda {
namespace {

const dim3 kNaiveBlock(32, 8);
constexpr unsigned kStretchLumaThreadsX = 64, kStretchLumaThreadsY = 4;

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
// The ranges' words and the stretch: channel_range.cuh.

// The ranges of a batch of interleaved frames, frame blockIdx.y's into range + kRangeWords * blockIdx.y.
__global__ void __launch_bounds__(kWalkThreads) range_aos_kernel(AosRuns runs, unsigned* range) {
  // Each of a chunk's 48 byte positions keeps its own minimum and maximum; byte i is channel i % 3.
  std::uint32_t lo[12], hi[12];
#pragma unroll
  for (int k = 0; k < 12; ++k) lo[k] = 0xFFFFFFFFu, hi[k] = 0u;
  ChannelRange pixels;
  walk_runs<false>(
      runs, blockIdx.y,
      [&](std::uint32_t(&w)[12]) {
#pragma unroll
        for (int k = 0; k < 12; ++k) lo[k] = __vminu4(lo[k], w[k]), hi[k] = __vmaxu4(hi[k], w[k]);
      },
      [&](std::uint8_t(&p)[3]) {
        const unsigned packed = p[0] | (p[1] << 8) | (p[2] << 16);
        pixels.add(packed, packed);
      });
#pragma unroll
  for (int p = 0; p < 16; ++p) {
    const auto three = [&](const std::uint32_t(&w)[12]) {
      return chunk_byte(w, 3 * p) | (chunk_byte(w, 3 * p + 1) << 8) | (chunk_byte(w, 3 * p + 2) << 16);
    };
    pixels.add(three(lo), three(hi));
  }
  fold_block(pixels, range + kRangeWords * blockIdx.y);
}

// The range of one frame of planes, four pixels a thread at a time where the rows allow.
template <bool kWords>
__global__ void range_planes_kernel(PlanesSource in, int width, unsigned groups_per_row, unsigned long long groups,
                                    unsigned* range) {
  ChannelRange r;
  for_each_pixel_group(groups_per_row, groups, [&](int x, int y) {
    if (kWords && x + kPointwisePixels <= width) {
      uchar4 p[3];
      in.load4(x, y, p);
      // Bytes 0..2 of each fold: the four pixels' channels folded first, byte by byte.
      const auto pixel = [&](int k) {
        const auto byte = [&](const uchar4& v) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; };
        return static_cast<unsigned>(byte(p[0])) | (static_cast<unsigned>(byte(p[1])) << 8) |
               (static_cast<unsigned>(byte(p[2])) << 16);
      };
#pragma unroll
      for (int k = 0; k < kPointwisePixels; ++k) r.add(pixel(k), pixel(k));
    } else {
      for (int k = 0; k < min(kPointwisePixels, width - x); ++k) {
        const unsigned packed = *in.at(x + k, y, 0) | (*in.at(x + k, y, 1) << 8) | (*in.at(x + k, y, 2) << 16);
        r.add(packed, packed);
      }
    }
  });
  fold_block(r, range);
}

// Frame `frame`'s stretches from its range words.
struct StretchOp {
  const unsigned* range;

  struct Stretches {
    Stretch channel[3];
    __device__ void operator()(std::uint8_t& r, std::uint8_t& g, std::uint8_t& b) const {
      r = stretch(r, channel[0]);
      g = stretch(g, channel[1]);
      b = stretch(b, channel[2]);
    }
  };

  __device__ Stretches prepare(int frame) const {
    const unsigned* words = range + kRangeWords * frame;
    Stretches s;
#pragma unroll
    for (int c = 0; c < 3; ++c) s.channel[c] = stretch_of_channel(words, c);
    return s;
  }
};

// Luma frame gridDim.z - 1 - blockIdx.z stretched into interleaved frame `frame` of out, four pixels a thread,
// the frames and the rows taken from the last: those the kernel before wrote last, most likely still in L2, are
// read first.
__global__ void __launch_bounds__(kStretchLumaThreadsX* kStretchLumaThreadsY)
    stretch_luma_kernel(LumaFrames luma, const unsigned* range, std::uint8_t* out, std::size_t out_pitch,
                        std::size_t out_frame_stride) {
  wait_for_previous_grid();
  const unsigned frame = gridDim.z - 1 - blockIdx.z;
  const int y = static_cast<int>((gridDim.y - 1 - blockIdx.y) * blockDim.y + threadIdx.y);
  const int x = static_cast<int>(kPointwisePixels * (blockIdx.x * blockDim.x + threadIdx.x));
  if (y >= luma.extent.height || x >= luma.extent.width) return;
  const Stretch k = stretch_of_channel(range + kRangeWords * frame, 0);
  const std::uint8_t* src = luma.data + frame * luma.frame_stride + static_cast<std::size_t>(y) * luma.pitch + x;
  std::uint8_t* dst = out + frame * out_frame_stride + static_cast<std::size_t>(y) * out_pitch + 3 * x;
  const int n = min(kPointwisePixels, luma.extent.width - x);
  std::uint32_t s = 0;  // the stretched bytes of the four pixels
  if (n == kPointwisePixels && reinterpret_cast<std::uintptr_t>(src) % 4 == 0) {
    const std::uint32_t v = *reinterpret_cast<const std::uint32_t*>(src);
#pragma unroll
    for (int i = 0; i < kPointwisePixels; ++i) {
      s |= static_cast<std::uint32_t>(stretch((v >> (8 * i)) & 0xFFu, k)) << (8 * i);
    }
  } else {
    for (int i = 0; i < n; ++i) s |= static_cast<std::uint32_t>(stretch(src[i], k)) << (8 * i);
  }
  if (n == kPointwisePixels && reinterpret_cast<std::uintptr_t>(dst) % 4 == 0) {
    // bytes s0 s0 s0 s1 | s1 s1 s2 s2 | s2 s3 s3 s3
    auto* words = reinterpret_cast<std::uint32_t*>(dst);
    words[0] = __byte_perm(s, 0, 0x1000);
    words[1] = __byte_perm(s, 0, 0x2211);
    words[2] = __byte_perm(s, 0, 0x3332);
  } else {
    for (int i = 0; i < n; ++i) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = static_cast<std::uint8_t>(s >> (8 * i));
  }
}

// The ranges of a batch of interleaved frames (checked by the caller), into `range`.
void range_aos(ConstAosView first, std::size_t frame_stride, int frames, unsigned* range, cudaStream_t stream) {
  const AosRuns runs = aos_runs(first, frame_stride, {const_cast<std::uint8_t*>(first.data), first.extent, first.pitch},
                                frame_stride, "normalize");
  const dim3 grid(blocks_per_frame<&range_aos_kernel>(runs, frames), static_cast<unsigned>(frames));
  range_aos_kernel<<<grid, kWalkThreads, 0, stream>>>(runs, range);
  IMGPIPE_CUDA_LAUNCH_CHECK("range_aos_kernel", stream);
}

template <bool kWords>
void launch_range_planes(PlanesSource in, Extent extent, unsigned* range, cudaStream_t stream) {
  const unsigned per_row = static_cast<unsigned>(div_up(extent.width, kPointwisePixels));
  const unsigned long long groups = static_cast<unsigned long long>(per_row) * static_cast<unsigned>(extent.height);
  const OccupancyShape& shape = occupancy_shape<&range_planes_kernel<kWords>>();
  range_planes_kernel<kWords><<<grid_stride_blocks(groups, shape), shape.block, 0, stream>>>(in, extent.width, per_row,
                                                                                               groups, range);
  IMGPIPE_CUDA_LAUNCH_CHECK("range_planes_kernel", stream);
}

}  // namespace

unsigned* fresh_normalize_ranges(NormalizeScratch& scratch, int frames, cudaStream_t stream) {
  const std::size_t bytes = kRangeWords * sizeof(unsigned) * static_cast<std::size_t>(frames);
  scratch.range.grow(bytes);
  IMGPIPE_CUDA_CHECK(cudaMemsetAsync(scratch.range.data(), 0xFF, bytes, stream));
  return reinterpret_cast<unsigned*>(scratch.range.data());
}

void stretch_luma_aos(const LumaFrames& luma, const unsigned* range, AosView first_out, std::size_t out_frame_stride,
                      int frames, cudaStream_t stream) {
  require(same_extent(luma.extent, first_out.extent), "stretch_luma_aos: luma and output extents differ");
  require(frames >= 1 && frames <= kMaxFramesPerLaunch,
          "stretch_luma_aos: 1 to " + std::to_string(kMaxFramesPerLaunch) + " frames per launch");
  const dim3 block(kStretchLumaThreadsX, kStretchLumaThreadsY);
  const dim3 grid(static_cast<unsigned>(div_up(div_up(luma.extent.width, kPointwisePixels), static_cast<int>(block.x))),
                  static_cast<unsigned>(div_up(luma.extent.height, static_cast<int>(block.y))),
                  static_cast<unsigned>(frames));
  launch_dependent(&stretch_luma_kernel, grid, block, 0, stream, luma, range, first_out.data, first_out.pitch,
                   out_frame_stride);
  IMGPIPE_CUDA_LAUNCH_CHECK("stretch_luma_kernel", stream);
}

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
  if (in.interleaved && out.interleaved) {
    normalize_aos(in.aos, in.aos.pitch * static_cast<std::size_t>(in.aos.extent.height), out.aos,
                  out.aos.pitch * static_cast<std::size_t>(out.aos.extent.height), 1, scratch, stream);
    return;
  }
  unsigned* range = fresh_normalize_ranges(scratch, 1, stream);
  if (in.interleaved) {
    range_aos(in.aos, in.aos.pitch * static_cast<std::size_t>(in.aos.extent.height), 1, range, stream);
  } else if (PlanesSource source{in.planes}; source.words_aligned()) {
    launch_range_planes<true>(source, in.extent(), range, stream);
  } else {
    launch_range_planes<false>(source, in.extent(), range, stream);
  }
  pointwise(in, out, StretchOp{range}, "normalize (stretch)", stream);
}

void normalize_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                   int frames, NormalizeScratch& scratch, cudaStream_t stream) {
  require(frames >= 1 && frames <= kMaxFramesPerLaunch,
          "normalize_aos: 1 to " + std::to_string(kMaxFramesPerLaunch) + " frames per launch");
  const std::string problem = frame_batch_problem(first_in, in_frame_stride, first_out, out_frame_stride, frames);
  require(problem.empty(), "normalize_aos: " + problem);
  unsigned* range = fresh_normalize_ranges(scratch, frames, stream);
  range_aos(first_in, in_frame_stride, frames, range, stream);
  pointwise_aos(first_in, in_frame_stride, first_out, out_frame_stride, frames, StretchOp{range},
                "normalize_aos (stretch)", stream);
}

}  // namespace imgpipe::cuda
