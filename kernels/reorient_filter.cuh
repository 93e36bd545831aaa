// A 3x3 filter and a reorientation in one launch on batches of interleaved RGB8 frames. Sharpen's cross and the
// sobel magnitude |Gx| + |Gy| give the same bytes before a transpose, rotation or flip as after it (reoriented),
// and both border rules are symmetric, so the filter then the reorientation equals the reorientation then the
// filter: one pass where the two kernels (filter3x3_aos or sobel_aos, then reorient_aos) take two.
#pragma once

#include "planes.hpp"
#include "transpose.cuh"

#include <cstddef>

#include <cuda_runtime.h>

namespace imgpipe::cuda {

// The filters every reorientation commutes with, in integer arithmetic: sharpen (0 -1 0 / -1 5 -1 / 0 -1 0,
// scale 1) and the sobel magnitude, each channel on its own, saturated to 0..255.
enum class SymmetricFilter { sharpen, sobel };

// `filter` with `border`, then `op`, on `frames` interleaved frames (1 to kMaxFramesPerLaunch), frame f at
// first_in.data + f * in_frame_stride and first_out.data + f * out_frame_stride (bytes), any pitch and alignment;
// first_out's extent is reoriented_extent(op, first_in.extent) (std::invalid_argument otherwise). The bytes of
// filter3x3_aos (sharpen's taps) or sobel_aos and then reorient_aos. Each block stages a 34x34-pixel input tile
// (32x32 and a one-pixel halo) as words and writes 32x32 output pixels as words.
void reorient_filter3x3_aos(Reorient op, SymmetricFilter filter, ConstAosView first_in, std::size_t in_frame_stride,
                            AosView first_out, std::size_t out_frame_stride, int frames, BorderMode border,
                            cudaStream_t stream);

}  // namespace imgpipe::cuda
