// Pointwise ops (gray, normalize's stretch) on frames of either layout (frame_access.cuh), and on batches of
// interleaved frames. Included by .cu files only.
//
// Either layout: a thread loads 4 pixels' three 32-bit words (one per plane, or the 12 interleaved bytes),
// applies the op per pixel in registers, and stores three words: a warp moves 384 contiguous bytes per access
// instead of single bytes. Rows whose pointers or pitch are not 4-byte aligned, and the last partial group of a
// row, go byte by byte.
//
// Interleaved batches (pointwise_aos): a frame whose rows follow one another with no gap is one run of bytes,
// otherwise each row is one, and each thread takes 16 pixels of a run at a time as three 16-byte words
// (walk_runs): a warp moves 1536 contiguous bytes in three coalesced 16-byte loads and hands each thread its 48
// bytes through shared memory. One launch covers every frame (blockIdx.y), so a batch of small frames fills the
// GPU where one frame's launch cannot.
#pragma once

#include "cuda_check.hpp"
#include "frame_access.cuh"
#include "launch.cuh"
#include "planes.hpp"

#include <cub/warp/warp_load.cuh>
#include <cub/warp/warp_store.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace imgpipe::cuda {

constexpr int kPointwisePixels = 4;

// Calls visit(x, y) for each group of kPointwisePixels pixels of a frame, x its first column: `groups` (< 2^32)
// of them laid row by row, `groups_per_row` to a row, spread over the grid's threads.
template <class Visit>
__device__ __forceinline__ void for_each_pixel_group(unsigned groups_per_row, unsigned long long groups,
                                                     Visit visit) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < groups;
       i += stride) {
    const unsigned g = static_cast<unsigned>(i);
    const int y = static_cast<int>(g / groups_per_row);
    visit(static_cast<int>(g - static_cast<unsigned>(y) * groups_per_row) * kPointwisePixels, y);
  }
}

// Op: `__device__ F prepare(int frame) const`, run once per thread and frame of a batch (it may read that
// frame's parameters from device memory), returns F with `__device__ void operator()(std::uint8_t& r,
// std::uint8_t& g, std::uint8_t& b) const`, run once per pixel.
template <class Op, bool kWords, class Source, class Target>
__global__ void pointwise_kernel(Source in, Target out, int width, unsigned groups_per_row, unsigned long long groups,
                                 Op op) {
  const auto f = op.prepare(0);
  for_each_pixel_group(groups_per_row, groups, [&](int x, int y) {
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
  });
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

// ------------------------------------------------------------------------------- interleaved batches

// A batch of interleaved frames as runs of whole pixels: per frame `runs` runs of `run_bytes` bytes, run k of
// frame f at in + f * in_frame + k * in_pitch (out likewise). `vector`: in and out lie alike modulo 16, so the
// same byte offsets of a run are 16-byte aligned in both; otherwise chunks are moved byte by byte.
struct AosRuns {
  const std::uint8_t* in = nullptr;
  std::uint8_t* out = nullptr;
  std::size_t in_pitch = 0, out_pitch = 0, in_frame = 0, out_frame = 0;
  unsigned run_bytes = 0;
  unsigned runs = 0;
  bool vector = false;
};

constexpr unsigned kChunkBytes = 48;  // 16 pixels, three 16-byte words: one thread's share of a warp's run piece
constexpr unsigned kWarpChunks = kWarpSize;
constexpr int kWalkThreads = 256;  // walk_runs' block: its warps' exchange buffers are static shared memory

// The runs of `frames` frames, frame f at first_in.data + f * in_frame_stride (and out likewise; a batch checked
// by the caller). `out` may be `in` with its stride for a walk that only reads.
inline AosRuns aos_runs(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                        std::size_t out_frame_stride, const std::string& what) {
  require(same_extent(first_in.extent, first_out.extent), what + ": input and output extents differ");
  const std::size_t row = 3 * static_cast<std::size_t>(first_in.extent.width);
  const auto height = static_cast<std::size_t>(first_in.extent.height);
  // Rows of at most 3 * 65535 bytes, at most 65535 of them: a run's offsets and a frame's work items fit 32 bits.
  const bool one_run = first_in.pitch == row && first_out.pitch == row && row * height < (1ull << 31);
  AosRuns r;
  r.in = first_in.data;
  r.out = first_out.data;
  r.in_pitch = first_in.pitch;
  r.out_pitch = first_out.pitch;
  r.in_frame = in_frame_stride;
  r.out_frame = out_frame_stride;
  r.run_bytes = static_cast<unsigned>(one_run ? row * height : row);
  r.runs = one_run ? 1u : static_cast<unsigned>(height);
  const auto residue = [](std::uintptr_t v) { return v % 16; };
  r.vector =
      residue(reinterpret_cast<std::uintptr_t>(first_in.data)) ==
          residue(reinterpret_cast<std::uintptr_t>(first_out.data)) &&
      residue(first_in.pitch) == residue(first_out.pitch) && residue(in_frame_stride) == residue(out_frame_stride);
  return r;
}

// A warp's work items per run: pieces of kWarpChunks chunks, the last of which also takes the run's pixels
// before and after its chunks.
__host__ __device__ inline unsigned pieces_per_run(const AosRuns& r) {
  return r.run_bytes / (kWarpChunks * kChunkBytes) + 1;
}

// Byte i of a chunk's words (i known once the caller's loop is unrolled, so `w` stays in registers).
__device__ __forceinline__ std::uint8_t chunk_byte(const std::uint32_t (&w)[12], int i) {
  return static_cast<std::uint8_t>(w[i / 4] >> (8 * (i % 4)));
}
__device__ __forceinline__ void set_chunk_byte(std::uint32_t (&w)[12], int i, std::uint8_t v) {
  const int shift = 8 * (i % 4);
  w[i / 4] = (w[i / 4] & ~(0xFFu << shift)) | (static_cast<std::uint32_t>(v) << shift);
}

// Every pixel of frame `frame`, spread over the warps of the grid's blocks of that frame (blockIdx.y), blocks of
// kWalkThreads: `chunk(w)` for each 16 pixels of a run from its first byte that is 16-byte aligned at a pixel
// boundary on (w: their 48 bytes as words, pixel p's channel c at byte 3p + c), `pixel(p)` for each pixel before
// and after those chunks (p: its three bytes). With kStore the words and bytes the functions leave are written to
// out. A warp moves 32 consecutive chunks with coalesced 16-byte loads and stores, each thread's three words
// handed to it through shared memory (CUB's warp transpose): a thread reading its own 48 bytes straight from
// memory would leave each load instruction half of every sector it touches, doubling the L2's traffic.
template <bool kStore, class Chunk, class Pixel>
__device__ __forceinline__ void walk_runs(const AosRuns& r, unsigned frame, Chunk&& chunk, Pixel&& pixel) {
  using Load = cub::WarpLoad<uint4, 3, cub::WARP_LOAD_TRANSPOSE>;
  using Store = cub::WarpStore<uint4, 3, cub::WARP_STORE_TRANSPOSE>;
  union Exchange {
    typename Load::TempStorage load;
    typename Store::TempStorage store;
  };
  constexpr unsigned kWarps = kWalkThreads / kWarpSize;
  __shared__ Exchange exchange[kWarps];
  const unsigned lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const unsigned pieces = pieces_per_run(r), items = r.runs * pieces;
  for (unsigned i = blockIdx.x * kWarps + warp; i < items; i += gridDim.x * kWarps) {  // warp-uniform
    const unsigned run = r.runs == 1 ? 0u : i / pieces, piece = i - run * pieces;
    const std::uint8_t* src = r.in + frame * r.in_frame + run * r.in_pitch;
    std::uint8_t* dst = r.out + frame * r.out_frame + run * r.out_pitch;
    // The head: the pixels before the first 16-byte boundary that is also a pixel's first byte (at most 45
    // bytes); none where the chunks move byte by byte.
    unsigned head = 0;
    if (r.vector) {
      head = static_cast<unsigned>(-reinterpret_cast<std::uintptr_t>(src)) & 15u;
      while (head % 3 != 0) head += 16;
      head = min(head, r.run_bytes);
    }
    const unsigned chunks = (r.run_bytes - head) / kChunkBytes, first = piece * kWarpChunks;
    if (first < chunks) {
      const unsigned valid = min(kWarpChunks, chunks - first);
      const unsigned at = head + (first + lane) * kChunkBytes;  // this thread's chunk, where lane < valid
      std::uint32_t w[12];
      if (r.vector) {
        uint4 q[3];
        Load(exchange[warp].load)
            .Load(reinterpret_cast<const uint4*>(src + head) + 3 * first, q, static_cast<int>(3 * valid), uint4{});
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          w[4 * k] = q[k].x, w[4 * k + 1] = q[k].y, w[4 * k + 2] = q[k].z, w[4 * k + 3] = q[k].w;
        }
      } else if (lane < valid) {
#pragma unroll
        for (int k = 0; k < 48; ++k) set_chunk_byte(w, k, src[at + k]);
      }
      if (lane < valid) chunk(w);
      if constexpr (kStore) {
        if (r.vector) {
          uint4 q[3];
#pragma unroll
          for (int k = 0; k < 3; ++k) q[k] = make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
          __syncwarp();  // the load's exchange is read before the store's overwrites it
          Store(exchange[warp].store)
              .Store(reinterpret_cast<uint4*>(dst + head) + 3 * first, q, static_cast<int>(3 * valid));
        } else if (lane < valid) {
#pragma unroll
          for (int k = 0; k < 48; ++k) dst[at + k] = chunk_byte(w, k);
        }
      }
      __syncwarp();  // the next piece's exchange waits for this one's
    }
    if (piece == pieces - 1) {  // the run's edges: up to 15 pixels before the chunks (lanes 0..15), 15 after
      const unsigned tail = head + chunks * kChunkBytes;
      const unsigned at = lane < 16 ? 3 * lane : tail + 3 * (lane - 16);
      if (at < (lane < 16 ? head : r.run_bytes)) {
        std::uint8_t p[3] = {src[at], src[at + 1], src[at + 2]};
        pixel(p);
        if constexpr (kStore) dst[at] = p[0], dst[at + 1] = p[1], dst[at + 2] = p[2];
      }
    }
  }
}

template <class Op>
__global__ void __launch_bounds__(kWalkThreads) pointwise_aos_kernel(AosRuns r, Op op) {
  wait_for_previous_grid();  // before prepare, which may read what the kernel before wrote
  const auto f = op.prepare(static_cast<int>(blockIdx.y));
  walk_runs<true>(
      r, blockIdx.y,
      [&](std::uint32_t(&w)[12]) {
#pragma unroll
        for (int p = 0; p < 16; ++p) {
          std::uint8_t red = chunk_byte(w, 3 * p), green = chunk_byte(w, 3 * p + 1), blue = chunk_byte(w, 3 * p + 2);
          f(red, green, blue);
          set_chunk_byte(w, 3 * p, red);
          set_chunk_byte(w, 3 * p + 1, green);
          set_chunk_byte(w, 3 * p + 2, blue);
        }
      },
      [&](std::uint8_t(&p)[3]) { f(p[0], p[1], p[2]); });
}

// Blocks per frame for a batch walked by `kernel` (blocks of kWalkThreads): enough to fill the GPU once over all
// frames, and no more than the frame's warp items need.
template <auto Kernel>
unsigned blocks_per_frame(const AosRuns& r, int frames) {
  static const int filling = [] {
    int per_sm = 0;
    IMGPIPE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kWalkThreads, 0));
    return std::max(1, per_sm) * device_attribute(cudaDevAttrMultiProcessorCount);
  }();
  constexpr unsigned kWarps = kWalkThreads / kWarpSize;
  const unsigned needed = (r.runs * pieces_per_run(r) + kWarps - 1) / kWarps;
  return std::max(1u, std::min(needed, static_cast<unsigned>(div_up(filling, frames))));
}

// Runs `op` over every pixel of `frames` interleaved frames (1 to kMaxFramesPerLaunch), frame f at first_in.data
// + f * in_frame_stride (and out likewise), in one launch.
template <class Op>
void pointwise_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                   int frames, Op op, const std::string& what, cudaStream_t stream) {
  require(frames >= 1 && frames <= kMaxFramesPerLaunch,
          what + ": 1 to " + std::to_string(kMaxFramesPerLaunch) + " frames per launch");
  const std::string problem = frame_batch_problem(first_in, in_frame_stride, first_out, out_frame_stride, frames);
  require(problem.empty(), what + ": " + problem);
  const AosRuns runs = aos_runs(first_in, in_frame_stride, first_out, out_frame_stride, what);
  const dim3 grid(blocks_per_frame<&pointwise_aos_kernel<Op>>(runs, frames), static_cast<unsigned>(frames));
  launch_dependent(&pointwise_aos_kernel<Op>, grid, dim3(kWalkThreads), 0, stream, runs, op);
  IMGPIPE_CUDA_LAUNCH_CHECK(what.c_str(), stream);
}

}  // namespace imgpipe::cuda
