// The reference checked on cases small enough to work out by hand, and on identities between ops.
#include "reference.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>

namespace imgpipe {
namespace {

using testing::max_abs_diff;

Image gray_ramp(Size size, const std::vector<std::uint8_t>& values) {
  Image image(size);
  for (std::size_t i = 0; i < values.size(); ++i)
    for (int c = 0; c < 3; ++c) image.data()[i * 3 + c] = values[i];
  return image;
}

std::vector<std::uint8_t> channel0(const Image& image) {
  std::vector<std::uint8_t> v;
  for (std::size_t i = 0; i < image.bytes(); i += 3) v.push_back(image.data()[i]);
  return v;
}

TEST(Reference, BilinearUpscaleByTwoUsesHalfPixelCentres) {
  // 1-D 0, 100 -> 4 samples at source x = -0.25, 0.25, 0.75, 1.25: clamped 0, 25, 75, 100.
  const Image out = reference::apply(Op{Resize{{4, 1}}}, gray_ramp({2, 1}, {0, 100}));
  EXPECT_EQ(channel0(out), (std::vector<std::uint8_t>{0, 25, 75, 100}));
}

TEST(Reference, BilinearDownscaleByTwoAveragesPairs) {
  const Image out = reference::apply(Op{Resize{{2, 1}}}, gray_ramp({4, 1}, {0, 10, 20, 31}));
  EXPECT_EQ(channel0(out), (std::vector<std::uint8_t>{5, 26}));  // 25.5 rounds up
}

TEST(Reference, NearestPicksTheCentreSample) {
  const Image out = reference::apply(Op{Resize{{2, 1}, Interp::nearest}}, gray_ramp({5, 1}, {0, 1, 2, 3, 4}));
  EXPECT_EQ(channel0(out), (std::vector<std::uint8_t>{1, 3}));  // floor(0.5 * 2.5), floor(1.5 * 2.5)
}

TEST(Reference, BoxBordersReflect101AndReplicate) {
  const Image in = gray_ramp({3, 1}, {0, 30, 90});
  // reflect101 row: 30 | 0 30 90 | 30 ; replicate: 0 | 0 30 90 | 90. A single row borders on itself.
  EXPECT_EQ(channel0(reference::apply(Op{Box{3}}, in)), (std::vector<std::uint8_t>{20, 40, 50}));
  EXPECT_EQ(channel0(reference::apply(Op{Box{3, Border::replicate}}, in)), (std::vector<std::uint8_t>{10, 40, 70}));
}

TEST(Reference, SharpenAndSobelOnAStep) {
  const Image in = gray_ramp({4, 1}, {10, 10, 50, 50});
  // sharpen: 5c - l - r - up - down, up/down reflect onto the row itself: 3c - l - r.
  EXPECT_EQ(channel0(reference::apply(Op{Sharpen{}}, in)), (std::vector<std::uint8_t>{10, 0, 90, 50}));
  // Gx = 4 * (r - l) on a single row (rows above/below are the same row); Gy = 0.
  EXPECT_EQ(channel0(reference::apply(Op{Sobel{}}, in)), (std::vector<std::uint8_t>{0, 160, 160, 0}));
}

TEST(Reference, GaussianKeepsAConstantImage) {
  Image flat({9, 7});
  std::fill(flat.data(), flat.data() + flat.bytes(), 77);
  EXPECT_EQ(max_abs_diff(reference::apply(Op{Gaussian{7, 2.0}}, flat), flat), 0);
  EXPECT_EQ(max_abs_diff(reference::apply(Op{Gaussian{5, 0.0, Border::replicate}}, flat), flat), 0);
}

// One tap with the width from K (sigma 0) is the identity, as cv::getGaussianKernel(1, 0) = [1].
TEST(Reference, OneTapGaussianIsTheIdentity) {
  const Image ramp = testing::synthetic_image({13, 5}, 3);
  EXPECT_EQ(max_abs_diff(reference::apply(Op{Gaussian{1, 0.0}}, ramp), ramp), 0);
  EXPECT_EQ(max_abs_diff(reference::apply(Op{Gaussian{1, 1.5}}, ramp), ramp), 0);
}

TEST(Reference, GrayAndNormalize) {
  Image px({2, 1});
  const std::uint8_t rgb[6] = {255, 0, 0, 0, 0, 255};
  std::copy(rgb, rgb + 6, px.data());
  const Image gray = reference::apply(Op{Gray{}}, px);
  EXPECT_EQ(gray.at(0, 0, 0), 76);  // 0.299 * 255 = 76.2
  EXPECT_EQ(gray.at(1, 0, 2), 29);  // 0.114 * 255 = 29.1
  const Image stretched = reference::apply(Op{Normalize{}}, gray_ramp({3, 1}, {50, 100, 150}));
  EXPECT_EQ(channel0(stretched), (std::vector<std::uint8_t>{0, 128, 255}));  // 127.5 rounds up
  Image flat({2, 2});
  std::fill(flat.data(), flat.data() + flat.bytes(), 9);
  EXPECT_EQ(channel0(reference::apply(Op{Normalize{}}, flat)), (std::vector<std::uint8_t>(4, 0)));
}

TEST(Reference, GeometricIdentities) {
  const Image in = testing::random_image({13, 7}, 1);
  auto run = [&](const char* chain) { return reference::apply(parse_chain(chain), in); };
  EXPECT_EQ(max_abs_diff(run("transpose,transpose"), in), 0);
  EXPECT_EQ(max_abs_diff(run("rotate=90,rotate=90,rotate=90,rotate=90"), in), 0);
  EXPECT_EQ(max_abs_diff(run("rotate=90,rotate=270"), in), 0);
  EXPECT_EQ(max_abs_diff(run("flip=h,flip=h"), in), 0);
  EXPECT_EQ(max_abs_diff(run("rotate=90"), run("transpose,flip=h")), 0);
  EXPECT_EQ(max_abs_diff(run("rotate=180"), run("flip=h,flip=v")), 0);
  const Image t = run("rotate=90");
  EXPECT_EQ(t.at(0, 0, 0), in.at(0, 6, 0));  // clockwise: the bottom-left corner comes to the top left
}

}  // namespace
}  // namespace imgpipe
