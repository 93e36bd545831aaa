// Layout: AoS <-> SoA, one pass each way.
//
// Why it is fast: a byte-per-thread split makes every warp issue 96 one-byte loads for 32 pixels and three
// 32-byte stores. Here a thread moves 16 pixels: three 16-byte loads take 48 contiguous bytes of the frame
// (16 RGB triples), the bytes are sorted into planes in registers, and one 16-byte store writes each plane.
// A warp moves 1.5 KiB with 96 wide loads and 96 wide stores, every byte of every sector used, so the pass
// runs at copy speed. Rows whose pitch or start is not 16-byte aligned fall back to 4-byte words (4 pixels),
// and unaligned views to bytes; a partial group at the end of a row is always done byte by byte.
// The grid is sized by occupancy and walked with a grid-stride loop over row-major groups.
#include "layout.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"

#include <algorithm>
#include <cstdint>

namespace imgpipe::cuda {
namespace {

// Byte i of a little-endian run of 32-bit words (constant i after unrolling: a register bit-field extract).
__device__ __forceinline__ std::uint32_t byte_at(const std::uint32_t* words, int i) {
  return (words[i >> 2] >> (8 * (i & 3))) & 0xFFu;
}

// kBytes (16 or 4) aligned bytes to and from kBytes / 4 words.
template <int kBytes>
__device__ __forceinline__ void load_words(const std::uint8_t* p, std::uint32_t* w) {
  if constexpr (kBytes == 16) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
  } else {
    w[0] = __ldg(reinterpret_cast<const unsigned int*>(p));
  }
}

template <int kBytes>
__device__ __forceinline__ void store_words(std::uint8_t* p, const std::uint32_t* w) {
  if constexpr (kBytes == 16) {
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    *reinterpret_cast<unsigned int*>(p) = w[0];
  }
}

// Groups of kPixels pixels (16, 4 or 1) numbered row by row; there are fewer than 2^32 of them.
struct Groups {
  unsigned per_row;
  unsigned long long total;
};

__device__ __forceinline__ void locate(unsigned long long i, Groups groups, int pixels, unsigned& y, int& x) {
  const unsigned g = static_cast<unsigned>(i);
  y = g / groups.per_row;
  x = static_cast<int>(g - y * groups.per_row) * pixels;
}

template <int kPixels>
__global__ void deinterleave_kernel(ConstAosView in, PlanesView out, Groups groups) {
  const int width = in.extent.width;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < groups.total; i += stride) {
    unsigned y;
    int x;
    locate(i, groups, kPixels, y, x);
    const std::uint8_t* src = in.data + y * in.pitch + 3 * static_cast<std::size_t>(x);
    const std::size_t dst = y * out.pitch + static_cast<std::size_t>(x);
    if constexpr (kPixels > 1) {
      if (x + kPixels <= width) {
        constexpr int kWords = kPixels / 4;  // words per plane; the AoS side holds three times as many
        std::uint32_t aos[3 * kWords];
#pragma unroll
        for (int k = 0; k < 3; ++k) load_words<kPixels>(src + k * kPixels, aos + k * kWords);
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          std::uint32_t plane[kWords];
#pragma unroll
          for (int j = 0; j < kWords; ++j) {
            plane[j] = 0;
#pragma unroll
            for (int b = 0; b < 4; ++b) plane[j] |= byte_at(aos, 3 * (4 * j + b) + c) << (8 * b);
          }
          store_words<kPixels>(out.plane[c] + dst, plane);
        }
        continue;
      }
    }
    const int end = min(x + kPixels, width);
    for (int p = x; p < end; ++p)
      for (int c = 0; c < 3; ++c) out.plane[c][dst + (p - x)] = src[3 * (p - x) + c];
  }
}

template <int kPixels>
__global__ void interleave_kernel(ConstPlanesView in, AosView out, Groups groups) {
  const int width = in.extent.width;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < groups.total; i += stride) {
    unsigned y;
    int x;
    locate(i, groups, kPixels, y, x);
    const std::size_t src = y * in.pitch + static_cast<std::size_t>(x);
    std::uint8_t* dst = out.data + y * out.pitch + 3 * static_cast<std::size_t>(x);
    if constexpr (kPixels > 1) {
      if (x + kPixels <= width) {
        constexpr int kWords = kPixels / 4;
        std::uint32_t planes[3][kWords];
#pragma unroll
        for (int c = 0; c < 3; ++c) load_words<kPixels>(in.plane[c] + src, planes[c]);
        std::uint32_t aos[3 * kWords];
#pragma unroll
        for (int j = 0; j < 3 * kWords; ++j) {
          aos[j] = 0;
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            const int byte = 4 * j + b;  // AoS byte 3p + c holds channel c of pixel p
            aos[j] |= byte_at(planes[byte % 3], byte / 3) << (8 * b);
          }
        }
#pragma unroll
        for (int k = 0; k < 3; ++k) store_words<kPixels>(dst + k * kPixels, aos + k * kWords);
        continue;
      }
    }
    const int end = min(x + kPixels, width);
    for (int p = x; p < end; ++p)
      for (int c = 0; c < 3; ++c) dst[3 * (p - x) + c] = in.plane[c][src + (p - x)];
  }
}

bool aligned(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

// The widest word (16, 4 or 1 bytes) that every pointer and pitch of both views allows.
template <class Plane>
int word_bytes(const void* aos, std::size_t aos_pitch, Plane* const (&planes)[3], std::size_t plane_pitch) {
  for (int w : {16, 4}) {
    bool ok = aligned(aos, w) && aos_pitch % w == 0 && plane_pitch % w == 0;
    for (const void* p : planes) ok = ok && aligned(p, w);
    if (ok) return w;
  }
  return 1;
}

template <int kPixels>
Groups groups_for(Extent e) {
  const Groups g{static_cast<unsigned>(div_up(e.width, kPixels)),
                 static_cast<unsigned long long>(div_up(e.width, kPixels)) * static_cast<unsigned>(e.height)};
  require(g.total < (1ull << 32), "layout: frame too large");
  return g;
}

template <int kPixels>
void launch_deinterleave(ConstAosView in, PlanesView out, cudaStream_t stream) {
  const Groups groups = groups_for<kPixels>(in.extent);
  const OccupancyShape& shape = occupancy_shape<&deinterleave_kernel<kPixels>>();
  deinterleave_kernel<kPixels><<<grid_stride_blocks(groups.total, shape), shape.block, 0, stream>>>(in, out, groups);
  IMGPIPE_CUDA_LAUNCH_CHECK("deinterleave_kernel", stream);
}

template <int kPixels>
void launch_interleave(ConstPlanesView in, AosView out, cudaStream_t stream) {
  const Groups groups = groups_for<kPixels>(in.extent);
  const OccupancyShape& shape = occupancy_shape<&interleave_kernel<kPixels>>();
  interleave_kernel<kPixels><<<grid_stride_blocks(groups.total, shape), shape.block, 0, stream>>>(in, out, groups);
  IMGPIPE_CUDA_LAUNCH_CHECK("interleave_kernel", stream);
}

std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

// Row starts on a cache line: aligned for 16-byte words and coalesced; raised to the texture pitch alignment.
constexpr std::size_t kPitchAlign = 128;

}  // namespace

void deinterleave(ConstAosView in, PlanesView out, cudaStream_t stream) {
  require(same_extent(in.extent, out.extent), "deinterleave: input and output extents differ");
  require(in.pitch >= 3 * static_cast<std::size_t>(in.extent.width) &&
              out.pitch >= static_cast<std::size_t>(out.extent.width),
          "deinterleave: pitch smaller than a row");
  switch (word_bytes(in.data, in.pitch, out.plane, out.pitch)) {
    case 16: return launch_deinterleave<16>(in, out, stream);
    case 4: return launch_deinterleave<4>(in, out, stream);
    default: return launch_deinterleave<1>(in, out, stream);
  }
}

void interleave(ConstPlanesView in, AosView out, cudaStream_t stream) {
  require(same_extent(in.extent, out.extent), "interleave: input and output extents differ");
  require(out.pitch >= 3 * static_cast<std::size_t>(out.extent.width) &&
              in.pitch >= static_cast<std::size_t>(in.extent.width),
          "interleave: pitch smaller than a row");
  switch (word_bytes(out.data, out.pitch, in.plane, in.pitch)) {
    case 16: return launch_interleave<16>(in, out, stream);
    case 4: return launch_interleave<4>(in, out, stream);
    default: return launch_interleave<1>(in, out, stream);
  }
}

void PlaneBuffer::reserve(Extent extent) {
  require(extent.width >= 0 && extent.height >= 0, "PlaneBuffer: negative extent");
  if (static_cast<std::size_t>(extent.width) <= pitch_ && extent.height <= rows_) return;
  const std::size_t pitch_align =
      std::max<std::size_t>(kPitchAlign, device_attribute(cudaDevAttrTexturePitchAlignment));
  const std::size_t base_align = std::max<std::size_t>(kPitchAlign, device_attribute(cudaDevAttrTextureAlignment));
  const std::size_t pitch =
      round_up(std::max({pitch_, static_cast<std::size_t>(extent.width), std::size_t{1}}), pitch_align);
  const int rows = std::max({rows_, extent.height, 1});
  const std::size_t stride = round_up(pitch * static_cast<std::size_t>(rows), base_align);
  memory_ = DeviceBuffer();  // free first: the peak stays one buffer, and cudaFree waits for queued work on it
  base_ = nullptr;
  pitch_ = plane_stride_ = 0;
  rows_ = 0;
  memory_.grow(3 * stride + base_align);
  const auto address = reinterpret_cast<std::uintptr_t>(memory_.data());
  base_ = memory_.data() + (round_up(address, base_align) - address);
  pitch_ = pitch;
  plane_stride_ = stride;
  rows_ = rows;
}

PlanesView PlaneBuffer::view(Extent extent) const {
  require(extent.width >= 0 && extent.height >= 0 && static_cast<std::size_t>(extent.width) <= pitch_ &&
              extent.height <= rows_,
          "PlaneBuffer: extent larger than reserved");
  return {{plane(0), plane(1), plane(2)}, extent, pitch_};
}

ConstPlanesView PlaneBuffer::whole() const {
  return {{plane(0), plane(1), plane(2)}, {static_cast<int>(pitch_), rows_}, pitch_};
}

}  // namespace imgpipe::cuda
