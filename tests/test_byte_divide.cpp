// exact_byte_divide: the interleaved separable filter's integer rounding, against round-half-up of the exact
// quotient and against the float rounding it replaces.
#include "byte_divide.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace imgpipe {
namespace {

std::uint32_t divided(const cuda::ByteDivide& d, std::uint32_t sum) {
  return static_cast<std::uint32_t>((std::uint64_t{sum} + d.bias) * d.multiplier >> 32);
}

TEST(ByteDivide, BoxScalesDivideExactlyForEverySum) {
  for (int ksize = 3; ksize <= 31; ksize += 2) {
    const auto area = static_cast<std::uint32_t>(ksize * ksize);
    const auto divide = cuda::exact_byte_divide(1.f / static_cast<float>(area), 255 * area);
    ASSERT_TRUE(divide.has_value()) << "box " << ksize;
    for (std::uint32_t sum = 0; sum <= 255 * area; ++sum) {
      ASSERT_EQ(divided(*divide, sum), (2 * sum + area) / (2 * area)) << "box " << ksize << ", sum " << sum;
    }
  }
}

TEST(ByteDivide, PowerOfTwoScaleIsAShift) {
  const auto divide = cuda::exact_byte_divide(1.f / 16.f, 255 * 16);
  ASSERT_TRUE(divide.has_value());
  EXPECT_EQ(divide->multiplier, 1u << 28);
  EXPECT_EQ(divide->bias, 8u);
}

TEST(ByteDivide, NoneWhereTheFloatRoundingIsNoDivision) {
  EXPECT_FALSE(cuda::exact_byte_divide(0.3f, 255 * 9).has_value()) << "0.3 is no reciprocal of an integer";
  EXPECT_FALSE(cuda::exact_byte_divide(1.f / 25.f, 2 * 255 * 25).has_value()) << "bytes past 255 saturate";
  EXPECT_FALSE(cuda::exact_byte_divide(1.f / 25.f, 1u << 24).has_value()) << "sums floats cannot hold";
  EXPECT_FALSE(cuda::exact_byte_divide(1.f, 255).has_value()) << "scale 1 divides by nothing";
  EXPECT_FALSE(cuda::exact_byte_divide(0.f, 255).has_value());
  EXPECT_FALSE(cuda::exact_byte_divide(-1.f / 25.f, 255).has_value());
}

}  // namespace
}  // namespace imgpipe
