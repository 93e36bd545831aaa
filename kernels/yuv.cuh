// Video frames as NVDEC decodes them, to the pipeline's interleaved RGB8: NV12 (8-bit) or P016 (10 to 16 bits
// in 16-bit samples, the value in the high bits), a full-size luma plane followed by one plane of interleaved
// U, V pairs at half width and half height.
//
// The conversion is FFmpeg's default one (libswscale's unscaled YUV 4:2:0 -> RGB24, which OpenCV's
// VideoCapture also uses), so a frame decoded on the GPU looks like the same frame decoded on the CPU: each
// chroma sample serves its 2x2 block of pixels (no chroma interpolation), the matrix is BT.601, BT.709 or
// BT.2020 (non-constant luminance) with limited (16-235) or full range, and the result is truncated, not
// rounded. On real clips this stays within 2 levels of FFmpeg's output (docs/video.md says how that was
// measured).
#pragma once

#include "planes.hpp"

#include <cuda_runtime.h>

#include <cstddef>

namespace imgpipe::cuda {

enum class YuvMatrix { bt601, bt709, bt2020 };

struct YuvColor {
  YuvMatrix matrix = YuvMatrix::bt601;
  bool full_range = false;
};

struct Nv12View {
  const void* luma = nullptr;
  const void* chroma = nullptr;  // U, V pairs, extent.height / 2 rounded up rows of the same pitch
  std::size_t pitch = 0;         // bytes per row of either plane
  Extent extent;
  int bytes_per_sample = 1;      // 1: NV12, 2: P016
};

// Asynchronous on `stream`; extents must match.
void nv12_to_rgb(const Nv12View& in, YuvColor color, AosView out, cudaStream_t stream);

}  // namespace imgpipe::cuda
