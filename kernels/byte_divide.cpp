#include "byte_divide.hpp"

#include <algorithm>
#include <cmath>

namespace imgpipe::cuda {
namespace {

// saturate_round's last steps, on its argument plus one half.
std::uint32_t saturated_floor(float value_plus_half) {
  return static_cast<std::uint32_t>(std::floor(std::clamp(value_plus_half, 0.f, 255.f)));
}

}  // namespace

std::optional<ByteDivide> exact_byte_divide(float scale, std::uint32_t max_sum) {
  constexpr std::uint64_t kTwoTo32 = std::uint64_t{1} << 32;
  if (!(scale > 0.f) || max_sum >= (1u << 24)) return std::nullopt;
  const double divisor = std::nearbyint(1.0 / static_cast<double>(scale));
  if (divisor < 2 || divisor >= (1u << 24)) return std::nullopt;
  const auto d = static_cast<std::uint64_t>(divisor);
  const ByteDivide divide{static_cast<std::uint32_t>((kTwoTo32 + d - 1) / d), static_cast<std::uint32_t>(d / 2)};
  for (std::uint32_t sum = 0; sum <= max_sum; ++sum) {
    const float value = static_cast<float>(sum);
    const float product = value * scale;
    const std::uint32_t apart = saturated_floor(product + 0.5f);
    const std::uint32_t fused = saturated_floor(std::fma(value, scale, 0.5f));
    const auto divided = static_cast<std::uint32_t>((std::uint64_t{sum} + divide.bias) * divide.multiplier >> 32);
    if (apart != divided || fused != divided) return std::nullopt;
  }
  return divide;
}

}  // namespace imgpipe::cuda
