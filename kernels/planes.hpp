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

// Whether every row of every frame starts on a `to`-byte boundary (so vector loads and stores may be used).
inline bool frame_rows_aligned(const void* first, std::size_t pitch, std::size_t frame_stride, int frames,
                               std::size_t to) {
  return reinterpret_cast<std::uintptr_t>(first) % to == 0 && pitch % to == 0 &&
         (frames == 1 || frame_stride % to == 0);
}

}  // namespace imgpipe::cuda
