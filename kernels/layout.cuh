// Layout: the interleaved RGB frame (AoS) to three planes (SoA) and back, and the buffer planes live in.
// The optimized path converts once on the way in and once on the way out; every stage between reads planes.
#pragma once

#include "cuda_resources.hpp"
#include "planes.hpp"

#include <cuda_runtime.h>

#include <cstddef>

namespace imgpipe::cuda {

inline ConstAosView as_const(const AosView& v) { return {v.data, v.extent, v.pitch}; }
inline ConstPlanesView as_const(const PlanesView& v) {
  return {{v.plane[0], v.plane[1], v.plane[2]}, v.extent, v.pitch};
}

// AoS -> planes in one coalesced pass; 16-byte words when both sides' pointers and pitches allow, else
// 4-byte words, else bytes. Extents must match; the views must not overlap. Asynchronous on `stream`.
void deinterleave(ConstAosView in, PlanesView out, cudaStream_t stream);
// Planes -> AoS, the same way back.
void interleave(ConstPlanesView in, AosView out, cudaStream_t stream);

// Three 8-bit planes in one device allocation. Rows are padded to a pitch that suits vector access and
// textures, and each plane starts on the device's texture alignment, so a texture can cover a whole plane.
// The pitch is fixed per allocation: every view of it, whatever its extent, uses pitch().
class PlaneBuffer {
 public:
  PlaneBuffer() = default;
  explicit PlaneBuffer(Extent extent) { reserve(extent); }

  // Makes room for frames up to `extent`, never shrinking. A reallocation invalidates earlier views and
  // happens only for a frame wider or taller than any before; freeing the old memory waits for the device.
  void reserve(Extent extent);
  // The first extent.height rows and extent.width columns of each plane; throws if that does not fit.
  PlanesView view(Extent extent) const;
  // Everything allocated: pitch() x rows() per plane.
  ConstPlanesView whole() const;
  std::size_t pitch() const noexcept { return pitch_; }
  int rows() const noexcept { return rows_; }

 private:
  std::uint8_t* plane(int c) const noexcept { return base_ + static_cast<std::size_t>(c) * plane_stride_; }

  DeviceBuffer memory_;
  std::uint8_t* base_ = nullptr;  // memory_ rounded up to the texture alignment
  std::size_t pitch_ = 0;
  std::size_t plane_stride_ = 0;
  int rows_ = 0;
};

}  // namespace imgpipe::cuda
