// Device frame layouts. AoS: interleaved RGB8 rows. SoA: three pitched 8-bit planes, one per channel,
// so a warp reading one channel reads 32 consecutive bytes instead of every third byte.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace imgpipe::cuda
