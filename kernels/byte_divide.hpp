// A filter's last step on 8-bit pixels, saturate_round(float(sum) * scale) (pixel.cuh), as integer arithmetic where
// it is a division: for every sum up to a bound the byte is the high word of (sum + bias) * multiplier, one
// __umulhi instead of two conversions, a fused multiply-add and two clamps.
#pragma once

#include <cstdint>
#include <optional>

namespace imgpipe::cuda {

struct ByteDivide {
  std::uint32_t multiplier = 0;  // 0: none, the kernel rounds in float
  std::uint32_t bias = 0;
};

// The division by D, 1 / scale rounded to an integer: multiplier ceil(2^32 / D), bias floor(D / 2). Returned only
// where, for every sum from 0 to max_sum, it gives the byte the float rounding gives with its multiply and add
// fused and apart (the device compiler may fuse them); checked sum by sum, nullopt where any differs or max_sum
// is 2^24 or more (floats hold every smaller sum exactly). The check is for set-up, not per frame: about 1 ms for
// box=31's 245,055 sums, 0.1 s for 2^24, on one core.
std::optional<ByteDivide> exact_byte_divide(float scale, std::uint32_t max_sum);

}  // namespace imgpipe::cuda
