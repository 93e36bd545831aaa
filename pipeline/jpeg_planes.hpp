// A JPEG decoder's YCbCr planes to the engine's frames, for io's GPU JPEG decoder: the conversion kernel of
// kernels/jpeg_ycbcr.cuh under the pipeline's names, so that io never reaches into kernels/.
#pragma once

#include "image.hpp"
#include "jpeg_ycbcr.cuh"

namespace imgpipe {

using JpegChroma = cuda::JpegChroma;
using JpegPlanes = cuda::JpegPlanes;

// The Cb and Cr planes' size for an image of `luma` size.
inline Size jpeg_chroma_size(Size luma, JpegChroma chroma) {
  const cuda::Extent extent = cuda::jpeg_chroma_extent({luma.width, luma.height}, chroma);
  return {extent.width, extent.height};
}

// `planes` into packed interleaved RGB8 of their extent at `rgb`, asynchronously on `stream`.
inline void convert_jpeg_planes(const JpegPlanes& planes, std::uint8_t* rgb, cudaStream_t stream) {
  cuda::jpeg_planes_to_rgb(planes, {rgb, planes.extent, 3 * static_cast<std::size_t>(planes.extent.width)}, stream);
}

}  // namespace imgpipe
