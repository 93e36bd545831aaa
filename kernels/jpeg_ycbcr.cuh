// The planes a baseline JPEG decoder leaves after its inverse DCT (nvJPEG's NVJPEG_OUTPUT_YUV: luma at full
// size, Cb and Cr at full size, half width or half width and height, or luma alone), to the pipeline's
// interleaved RGB8, by libjpeg's rules: its "fancy" chroma upsampling (a triangle filter, jdsample.c) and its
// fixed-point YCbCr -> RGB (jdcolor.c). libjpeg-turbo is what OpenCV's imread decodes JPEG with, so where the
// planes are libjpeg's own (the H200's JPEG engines give them bit for bit), the frame is imread's byte for byte.
#pragma once

#include "planes.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace imgpipe::cuda {

// How the chroma planes are sampled against luma.
enum class JpegChroma {
  full,        // 4:4:4
  half_width,  // 4:2:2: (width + 1) / 2 columns, every row
  half,        // 4:2:0: (width + 1) / 2 columns, (height + 1) / 2 rows
  none,        // grayscale: luma only
};

struct JpegPlanes {
  const std::uint8_t* plane[3] = {};  // Y, Cb, Cr; Cb and Cr unused for JpegChroma::none
  std::size_t pitch[3] = {};
  Extent extent;  // the image, that is the luma plane
  JpegChroma chroma = JpegChroma::half;
};

// Chroma planes' extent for an image of `luma` extent.
Extent jpeg_chroma_extent(Extent luma, JpegChroma chroma);

// Asynchronous on `stream`; extents must match.
void jpeg_planes_to_rgb(const JpegPlanes& in, AosView out, cudaStream_t stream);

}  // namespace imgpipe::cuda
