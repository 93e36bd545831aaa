// Resize: bilinear (OpenCV INTER_LINEAR: source = (dst + 0.5) * scale - 0.5, edges clamped) and nearest
// (INTER_NEAREST_EXACT: source = floor((dst + 0.5) * src / dst), computed exactly in integers).
//   naive:     on the interleaved frame, bilinear weights computed by hand from global memory.
//   optimized: bilinear on the interleaved frame, a batch of frames per launch, four output pixels a thread
//              (resize_linear_aos: the naive kernels' bytes, fast or exact); on planes, where a chain needs
//              them, bilinear through texture objects with hardware linear filtering.
//   exact:     bilinear as OpenCV's fixed-point INTER_LINEAR computes it for 8-bit frames, byte for byte; by
//              hand on both layouts (texture filtering cannot give OpenCV's rounding).
// The output extent is the target size; all are asynchronous on `stream`; input and output must not overlap.
#pragma once

#include "cuda_resources.hpp"
#include "planes.hpp"

#include <cuda_runtime.h>

#include <array>
#include <cstddef>

namespace imgpipe::cuda {

void resize_linear_naive(ConstAosView in, AosView out, cudaStream_t stream);
void resize_nearest_naive(ConstAosView in, AosView out, cudaStream_t stream);
void resize_linear_exact_naive(ConstAosView in, AosView out, cudaStream_t stream);
// Bilinear on `frames` interleaved frames (1 to kMaxFramesPerLaunch) in one launch, frame f at first_in.data + f *
// in_frame_stride and first_out.data + f * out_frame_stride, any pitch and alignment: resize_linear_naive's bytes,
// or resize_linear_exact_naive's where `exact`. Batches too small for two waves of its threads run those naive
// kernels instead, a launch per frame, being faster there.
void resize_linear_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                       std::size_t out_frame_stride, int frames, bool exact, cudaStream_t stream);

// Three textures (one per plane, 8-bit texels read as normalised floats, linear filtering, clamp addressing,
// unnormalised coordinates) over a whole plane buffer. They cover the allocation rather than one frame, so
// frames of any extent inside it use them unchanged: make them once per buffer (at plan time or when the
// buffer grows), never per frame.
class LinearPlaneTextures {
 public:
  // Whether the device can bind textures over planes of this allocation (2-D linear-memory limits).
  static bool fit(ConstPlanesView whole);
  explicit LinearPlaneTextures(ConstPlanesView whole);
  // The planes they read; a buffer that reallocated no longer matches.
  const ConstPlanesView& source() const noexcept { return source_; }
  cudaTextureObject_t plane(int c) const noexcept { return textures_[c].get(); }

 private:
  ConstPlanesView source_;
  std::array<TextureObject, 3> textures_;
};

// Bilinear from the textured planes: frame `in_extent` at the top-left of `in.source()`. Within ±1 of the
// exact result: the texture unit interpolates with 8-bit weight fractions.
void resize_linear_planes(const LinearPlaneTextures& in, Extent in_extent, PlanesView out, cudaStream_t stream);
// Bilinear on planes by hand: for allocations the texture unit cannot cover (LinearPlaneTextures::fit false).
void resize_linear_planes_hand(ConstPlanesView in, PlanesView out, cudaStream_t stream);
void resize_nearest_planes(ConstPlanesView in, PlanesView out, cudaStream_t stream);
void resize_linear_exact_planes(ConstPlanesView in, PlanesView out, cudaStream_t stream);

}  // namespace imgpipe::cuda
