// Device frame layouts. AoS: interleaved RGB8 rows. SoA: three pitched 8-bit planes, one per channel,
// so a warp reading one channel reads 32 consecutive bytes instead of every third byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace imgpipe::cuda {

struct Extent {
  int width = 0;
  int height = 0;
};

struct AosView {
  std::uint8_t* data = nullptr;
  Extent extent;
  std::size_t pitch = 0;  // bytes per row, >= 3 * width
};

struct ConstAosView {
  const std::uint8_t* data = nullptr;
  Extent extent;
  std::size_t pitch = 0;
};

struct PlanesView {
  std::uint8_t* plane[3] = {};
  Extent extent;
  std::size_t pitch = 0;  // bytes per row of each plane
};

struct ConstPlanesView {
  const std::uint8_t* plane[3] = {};
  Extent extent;
  std::size_t pitch = 0;
};

// A frame in either layout, for the ops that read and write both (gray, normalize, the flips and rotate180): the
// optimized path hands them the chain's interleaved input or output itself where they come first or last,
// instead of a separate deinterleave or interleave pass.
struct ConstFrameView {
  ConstPlanesView planes;  // unless interleaved
  ConstAosView aos;        // when interleaved
  bool interleaved = false;
  Extent extent() const { return interleaved ? aos.extent : planes.extent; }
};

struct FrameView {
  PlanesView planes;
  AosView aos;
  bool interleaved = false;
  Extent extent() const { return interleaved ? aos.extent : planes.extent; }
};

inline ConstFrameView as_frame(ConstPlanesView v) { return {v, {}, false}; }
inline ConstFrameView as_frame(ConstAosView v) { return {{}, v, true}; }
inline FrameView as_frame(PlanesView v) { return {v, {}, false}; }
inline FrameView as_frame(AosView v) { return {{}, v, true}; }

enum class BorderMode { reflect101, replicate };

// Why `frames` interleaved frames, frame f at first_in.data + f * in_frame_stride (and likewise out), cannot be
// a batched launch's input and output: a null frame, a pitch below 3 * width, or a frame stride below
// pitch * height. Empty when they can.
inline std::string frame_batch_problem(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                                       std::size_t out_frame_stride, int frames) {
  if (first_in.data == nullptr || first_out.data == nullptr) return "null frame";
  if (first_in.pitch < 3 * static_cast<std::size_t>(first_in.extent.width) ||
      first_out.pitch < 3 * static_cast<std::size_t>(first_out.extent.width)) {
    return "pitch below 3 * width";
  }
  if (frames > 1 && (in_frame_stride < first_in.pitch * static_cast<std::size_t>(first_in.extent.height) ||
                     out_frame_stride < first_out.pitch * static_cast<std::size_t>(first_out.extent.height))) {
    return "frame stride below pitch * height";
  }
  return {};
}

// Frame f of a batch whose first frame is `first` and whose frames start `stride` bytes apart.
inline ConstAosView frame_at(ConstAosView first, std::size_t stride, int f) {
  return {first.data + stride * static_cast<std::size_t>(f), first.extent, first.pitch};
}
inline AosView frame_at(AosView first, std::size_t stride, int f) {
  return {first.data + stride * static_cast<std::size_t>(f), first.extent, first.pitch};
}

// Whether every row of every frame starts on a `to`-byte boundary (so vector loads and stores may be used).
inline bool frame_rows_aligned(const void* first, std::size_t pitch, std::size_t frame_stride, int frames,
                               std::size_t to) {
  return reinterpret_cast<std::uintptr_t>(first) % to == 0 && pitch % to == 0 &&
         (frames == 1 || frame_stride % to == 0);
}

// Fills the frame-batch fields that the batched kernels' parameter blocks share: the first frames, pitches,
// frame strides, sizes, and whether every row takes 16-byte loads (vec_in) and stores (vec_out). The input
// pitch is narrowed to the block's own type, whose range the caller has checked.
template <typename Params>
void set_frame_batch(Params& p, ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                     std::size_t out_frame_stride, int frames) {
  p.in = first_in.data;
  p.out = first_out.data;
  p.in_pitch = static_cast<decltype(p.in_pitch)>(first_in.pitch);
  p.in_frame = in_frame_stride;
  p.out_pitch = first_out.pitch;
  p.out_frame = out_frame_stride;
  p.in_w = first_in.extent.width;
  p.in_h = first_in.extent.height;
  p.out_w = first_out.extent.width;
  p.out_h = first_out.extent.height;
  p.vec_in = frame_rows_aligned(first_in.data, first_in.pitch, in_frame_stride, frames, 16);
  p.vec_out = frame_rows_aligned(first_out.data, first_out.pitch, out_frame_stride, frames, 16);
}

}  // namespace imgpipe::cuda
