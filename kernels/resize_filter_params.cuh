// What the host hands the fused resize + filter kernel, and which of its instantiations a launch takes: the
// interface between resize_filter.cu (the kernel, its __constant__ taps) and resize_filter_launch.cu (the plan).
// Types and a lookup only; the launch (resize_filter_launch.cu) enqueues the kernel on the caller's stream.
#pragma once

#include "planes.hpp"
#include "resize_filter.cuh"
#include "resize_filter_geometry.cuh"

#include <cstddef>
#include <cstdint>

namespace imgpipe::cuda::resize_filter {

// The kernel's parameters: frames, sizes and the plan's numbers. Filled by the launch, read by every step.
struct Params {
  const std::uint8_t* in;
  std::uint8_t* out;
  std::size_t in_frame, out_pitch, out_frame;
  unsigned in_pitch;  // < 2^32 (checked): row addresses are one 32x32->64-bit multiply-add
  int in_w, in_h, out_w, out_h;
  float scale_x, scale_y;  // source pixels per output pixel
  BorderMode border;
  int slot;                // the taps' slot in resize_filter.cu's __constant__ banks
  int chunks;              // staging items per staged row: enough for the widest span any tile reads; odd
  unsigned chunks_magic;   // ceil(2^32 / chunks): item / chunks as one multiply-high (chunks > 1)
  int staged_row_words;    // 9 per chunk: odd, so that lanes on consecutive rows hit distinct banks
  int chunk_rows;          // staged rows per pass of steps 2-3
  bool vec_in, vec_out;    // 16-byte loads / stores are aligned
};

// The part of the output a block computes: columns x0 .. x_last and rows y0 .. y_last (the last ones inside the
// frame) of one frame, whose source frame starts at in_frame.
struct Tile {
  int x0, y0, x_last, y_last;
  const std::uint8_t* in_frame;
};

using Kernel = void (*)(Params);

// The kernel for filters of `radius` (0 to kMaxRadius) on the path for `ratio` with `arithmetic`; the exact-ratio
// paths exist up to kMaxRadiusInRegisters (the plan picks Ratio::any beyond), and the opencv arithmetic only on
// them.
Kernel kernel_for(Ratio ratio, int radius, ResizeFilterArithmetic arithmetic);

}  // namespace imgpipe::cuda::resize_filter
