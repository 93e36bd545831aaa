// Device-side access to a frame of either layout (planes.hpp's ConstFrameView / FrameView), so that one kernel
// template reads and writes both: a channel's byte at a pixel, and four pixels of a row as one uchar4 per
// channel (three 32-bit words either way: one per plane, or the 12 interleaved bytes). Included by .cu files.
#pragma once

#include "pixel.cuh"
#include "planes.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace imgpipe::cuda {

// A channel chosen at run time is selected with plane_of, never by indexing the view's array (which would copy
// the kernel parameter to local memory).
struct PlanesSource {
  ConstPlanesView v;
  __device__ const std::uint8_t* at(int x, int y, int c) const {
    return plane_of(v, static_cast<unsigned>(c)) + static_cast<std::size_t>(y) * v.pitch + x;
  }
  // Pixels x .. x + 3 of row y; x a multiple of 4 and words_aligned().
  __device__ void load4(int x, int y, uchar4 (&p)[3]) const {
#pragma unroll
    for (int c = 0; c < 3; ++c) p[c] = *reinterpret_cast<const uchar4*>(at(x, y, c));
  }
  bool words_aligned() const {
    bool aligned = v.pitch % 4 == 0;
    for (const std::uint8_t* plane : v.plane) aligned = aligned && reinterpret_cast<std::uintptr_t>(plane) % 4 == 0;
    return aligned;
  }
};

struct PlanesTarget {
  PlanesView v;
  __device__ std::uint8_t* at(int x, int y, int c) const {
    return plane_of(v, static_cast<unsigned>(c)) + static_cast<std::size_t>(y) * v.pitch + x;
  }
  __device__ void store4(int x, int y, const uchar4 (&p)[3]) const {
#pragma unroll
    for (int c = 0; c < 3; ++c) *reinterpret_cast<uchar4*>(at(x, y, c)) = p[c];
  }
  bool words_aligned() const {
    bool aligned = v.pitch % 4 == 0;
    for (std::uint8_t* plane : v.plane) aligned = aligned && reinterpret_cast<std::uintptr_t>(plane) % 4 == 0;
    return aligned;
  }
};

// Four interleaved pixels are the words r0 g0 b0 r1 | g1 b1 r2 g2 | b2 r3 g3 b3, 4-byte aligned when the row is
// and x is a multiple of 4.
struct AosSource {
  ConstAosView v;
  __device__ const std::uint8_t* at(int x, int y, int c) const {
    return v.data + static_cast<std::size_t>(y) * v.pitch + 3 * static_cast<std::size_t>(x) + c;
  }
  __device__ void load4(int x, int y, uchar4 (&p)[3]) const {
    const uchar4* w = reinterpret_cast<const uchar4*>(at(x, y, 0));
    const uchar4 a = w[0], b = w[1], c = w[2];
    p[0] = make_uchar4(a.x, a.w, b.z, c.y);
    p[1] = make_uchar4(a.y, b.x, b.w, c.z);
    p[2] = make_uchar4(a.z, b.y, c.x, c.w);
  }
  bool words_aligned() const { return v.pitch % 4 == 0 && reinterpret_cast<std::uintptr_t>(v.data) % 4 == 0; }
};

struct AosTarget {
  AosView v;
  __device__ std::uint8_t* at(int x, int y, int c) const {
    return v.data + static_cast<std::size_t>(y) * v.pitch + 3 * static_cast<std::size_t>(x) + c;
  }
  __device__ void store4(int x, int y, const uchar4 (&p)[3]) const {
    uchar4* w = reinterpret_cast<uchar4*>(at(x, y, 0));
    w[0] = make_uchar4(p[0].x, p[1].x, p[2].x, p[0].y);
    w[1] = make_uchar4(p[1].y, p[2].y, p[0].z, p[1].z);
    w[2] = make_uchar4(p[2].z, p[0].w, p[1].w, p[2].w);
  }
  bool words_aligned() const { return v.pitch % 4 == 0 && reinterpret_cast<std::uintptr_t>(v.data) % 4 == 0; }
};

// f(source, target) with the accessors for the layouts of `in` and `out`: four instantiations of whatever f
// launches.
template <class F>
void with_layouts(const ConstFrameView& in, const FrameView& out, F&& f) {
  const auto to_target = [&](const auto& source) {
    if (out.interleaved) {
      std::forward<F>(f)(source, AosTarget{out.aos});
    } else {
      std::forward<F>(f)(source, PlanesTarget{out.planes});
    }
  };
  if (in.interleaved) {
    to_target(AosSource{in.aos});
  } else {
    to_target(PlanesSource{in.planes});
  }
}

}  // namespace imgpipe::cuda
