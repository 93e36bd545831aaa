// The dihedral ops: transpose, rotations by quarter turns (clockwise), mirror flips. Exact: pixels only move.
// Three variants with the same shape, so tests and benchmarks can loop over them:
//   dihedral_naive         AoS, one thread per pixel, reads coalesced, writes scattered.
//   dihedral_tiled         planes, a 32x32 shared-memory tile, unpadded (bank conflicts on the transposed read).
//   dihedral_tiled_padded  planes, the tile padded to 32x33: the optimized path's choice.
// Ops that keep the axes (rotate180, flips) need no tile: both tiled variants run one coalesced kernel for them.
// All are asynchronous on `stream`; `out.extent` must be dihedral_extent(op, in.extent); no overlap.
#pragma once

#include "planes.hpp"

#include <cuda_runtime.h>

namespace imgpipe::cuda {

enum class Dihedral { transpose, rotate90, rotate180, rotate270, flip_h, flip_v };

constexpr bool swaps_axes(Dihedral op) {
  return op == Dihedral::transpose || op == Dihedral::rotate90 || op == Dihedral::rotate270;
}
constexpr Extent dihedral_extent(Dihedral op, Extent in) {
  return swaps_axes(op) ? Extent{in.height, in.width} : in;
}

void dihedral_naive(Dihedral op, ConstAosView in, AosView out, cudaStream_t stream);
void dihedral_tiled(Dihedral op, ConstPlanesView in, PlanesView out, cudaStream_t stream);
void dihedral_tiled_padded(Dihedral op, ConstPlanesView in, PlanesView out, cudaStream_t stream);

}  // namespace imgpipe::cuda
