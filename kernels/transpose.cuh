// Transpose, rotate and flip all live here: they only move pixels, and one kernel, the shared-memory tiled
// transpose, serves every one of them that swaps the axes (a quarter turn is a transpose with one axis
// reversed: the same tile, another output address). `Reorient` names the op as the chain does (transpose,
// rotate=90/180/270, flip=h/v); each variant below takes any of them. Exact: pixels only move.
// Three variants with the same shape, so tests and benchmarks can loop over them (and reorient_aos, below, on
// interleaved batches):
//   reorient_naive         AoS, one thread per pixel, reads coalesced, writes scattered.
//   reorient_tiled         planes, a 32x32 shared-memory tile, unpadded (bank conflicts on the transposed read).
//   reorient_tiled_padded  planes, the tile padded to 32x33: the optimized path's choice.
// Ops that keep the axes (rotate180, flips) need no tile: reading a row backwards, or another row, is coalesced
// as it is, so both tiled variants run one mirror-copy kernel for them: reorient_mirror, which also reads and
// writes the interleaved frame (the optimized path's first or last op).
// All are asynchronous on `stream`; `out.extent` must be reoriented_extent(op, in.extent); no overlap.
#pragma once

#include "planes.hpp"

#include <cuda_runtime.h>

#include <cstddef>

namespace imgpipe::cuda {

// Rotations are clockwise; flip_h mirrors left-right, flip_v top-bottom.
enum class Reorient { transpose, rotate90, rotate180, rotate270, flip_h, flip_v };

constexpr bool swaps_axes(Reorient op) {
  return op == Reorient::transpose || op == Reorient::rotate90 || op == Reorient::rotate270;
}
constexpr Extent reoriented_extent(Reorient op, Extent in) {
  return swaps_axes(op) ? Extent{in.height, in.width} : in;
}

void reorient_naive(Reorient op, ConstAosView in, AosView out, cudaStream_t stream);
void reorient_tiled(Reorient op, ConstPlanesView in, PlanesView out, cudaStream_t stream);
void reorient_tiled_padded(Reorient op, ConstPlanesView in, PlanesView out, cudaStream_t stream);
// rotate180, flip_h and flip_v only (std::invalid_argument otherwise), on frames of either layout.
void reorient_mirror(Reorient op, const ConstFrameView& in, const FrameView& out, cudaStream_t stream);
// Any op on `frames` interleaved frames (1 to kMaxFramesPerLaunch) in one launch, frame f at first_in.data + f *
// in_frame_stride and first_out.data + f * out_frame_stride (bytes), any pitch and alignment. The axis-swapping
// ops stage a 32x32 tile of the interleaved frame as words and write it back as words in its new place; the
// axis-keeping ones move four pixels a thread as three words, with no tile. reorient_mirror takes the second
// kernel too where both frames are interleaved.
void reorient_aos(Reorient op, ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                  std::size_t out_frame_stride, int frames, cudaStream_t stream);

}  // namespace imgpipe::cuda
