// The OpenCV-exact arithmetic (opencv_exact.hpp) against OpenCV itself: memcmp-equal outputs on the
// photographs, on odd sizes and on random bytes; resize at every scale class (down, up, exact ratios,
// non-integer, one pixel), Gaussian and box at every kernel size class, gray, sharpen, sobel, normalize, both
// borders, and the usual chains. Built where the build has OpenCV; runs everywhere there, no GPU involved.
#include "backends.hpp"
#include "opencv_exact.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>
#include <opencv2/imgproc.hpp>

#include <cstring>

namespace imgpipe {
namespace {

// OpenCV's view of an Image, and an Image of OpenCV's result.
cv::Mat as_mat(const Image& in) { return {in.height(), in.width(), CV_8UC3, const_cast<std::uint8_t*>(in.data())}; }

Image to_image(const cv::Mat& mat) {
  Image result({mat.cols, mat.rows});
  for (int y = 0; y < mat.rows; ++y) std::memcpy(&result.at(0, y, 0), mat.ptr(y), result.width() * 3);
  return result;
}

int to_cv(Border border) { return border == Border::reflect101 ? cv::BORDER_REFLECT_101 : cv::BORDER_REPLICATE; }

Image opencv_resize(const Image& in, Size out) {
  cv::Mat dst;
  cv::resize(as_mat(in), dst, cv::Size(out.width, out.height), 0, 0, cv::INTER_LINEAR);
  return to_image(dst);
}

// The first differing byte, as "x,y channel c: ours vs OpenCV's", or "" when equal.
std::string first_difference(const Image& ours, const Image& theirs) {
  for (int y = 0; y < ours.height(); ++y)
    for (int x = 0; x < ours.width(); ++x)
      for (int c = 0; c < 3; ++c)
        if (ours.at(x, y, c) != theirs.at(x, y, c)) {
          return std::to_string(x) + "," + std::to_string(y) + " channel " + std::to_string(c) + ": " +
                 std::to_string(ours.at(x, y, c)) + " vs " + std::to_string(theirs.at(x, y, c));
        }
  return "";
}

void expect_equal_to_opencv(const Image& in, const std::string& name) {
  for (const Size out : opencv_exact::scale_classes(in.size())) {
    SCOPED_TRACE(name + " " + to_string(in.size()) + " -> " + to_string(out));
    const Image ours = opencv_exact::resize_linear(in, out);
    const Image theirs = opencv_resize(in, out);
    EXPECT_EQ(first_difference(ours, theirs), "");
  }
}

TEST(OpenCvExactResize, LinearEqualsCvResizeOnEveryPhotographAtEveryScaleClass) {
  for (const auto& photo : testing::photos()) expect_equal_to_opencv(photo.image, photo.name);
}

TEST(OpenCvExactResize, LinearEqualsCvResizeOnOddSizesAndRandomBytes) {
  std::uint32_t seed = 1;
  for (const Size size : testing::odd_sizes()) {
    if (size.pixels() > 200000) continue;  // the 4097-wide cases add time, not arithmetic
    expect_equal_to_opencv(testing::synthetic_image(size, seed), "synthetic");
    expect_equal_to_opencv(testing::random_image(size, seed++), "random");
  }
}

Image opencv_gaussian(const Image& in, int ksize, double sigma, Border border) {
  cv::Mat dst;
  cv::GaussianBlur(as_mat(in), dst, cv::Size(ksize, ksize), sigma, sigma, to_cv(border));
  return to_image(dst);
}

struct GaussianCase {
  int ksize;
  double sigma;
};

// The chain's kernel sizes with sigma given and derived (the fixed tables for 3, 5 and 7), both borders.
void expect_gaussian_equal_to_opencv(const Image& in, const std::string& name) {
  for (const GaussianCase g : {GaussianCase{3, 0}, {3, 0.8}, {5, 0}, {5, 1.0}, {7, 0}, {7, 2.0}, {9, 0}, {11, 1.7},
                               {15, 3.0}, {31, 6.0}}) {
    for (const Border border : {Border::reflect101, Border::replicate}) {
      SCOPED_TRACE(name + " " + to_string(in.size()) + " gaussian " + std::to_string(g.ksize) + ":" +
                   std::to_string(g.sigma) + (border == Border::reflect101 ? " reflect101" : " replicate"));
      EXPECT_EQ(first_difference(opencv_exact::gaussian_blur(in, g.ksize, g.sigma, border),
                                 opencv_gaussian(in, g.ksize, g.sigma, border)),
                "");
    }
  }
}

TEST(OpenCvExactGaussian, EqualsCvGaussianBlurOnEveryPhotographForEverySizeSigmaAndBorder) {
  for (const auto& photo : testing::photos()) expect_gaussian_equal_to_opencv(photo.image, photo.name);
}

TEST(OpenCvExactGaussian, EqualsCvGaussianBlurOnOddSizesAndRandomBytes) {
  std::uint32_t seed = 11;
  for (const Size size : testing::odd_sizes()) {
    if (size.pixels() > 200000) continue;
    expect_gaussian_equal_to_opencv(testing::random_image(size, seed++), "random");
  }
}

Image opencv_box(const Image& in, int ksize, Border border) {
  cv::Mat dst;
  cv::blur(as_mat(in), dst, cv::Size(ksize, ksize), cv::Point(-1, -1), to_cv(border));
  return to_image(dst);
}

// Kernel sizes on both sides of 16 x 16 = 256, where OpenCV changes how it divides.
void expect_box_equal_to_opencv(const Image& in, const std::string& name, const std::vector<int>& sizes) {
  for (const int ksize : sizes) {
    for (const Border border : {Border::reflect101, Border::replicate}) {
      SCOPED_TRACE(name + " " + to_string(in.size()) + " box " + std::to_string(ksize) +
                   (border == Border::reflect101 ? " reflect101" : " replicate"));
      EXPECT_EQ(first_difference(opencv_exact::box_blur(in, ksize, border), opencv_box(in, ksize, border)), "");
    }
  }
}

TEST(OpenCvExactBox, EqualsCvBlurOnEveryPhotographForEverySizeAndBorder) {
  // The model sums every window afresh: the largest kernels run on the small images below.
  for (const auto& photo : testing::photos()) expect_box_equal_to_opencv(photo.image, photo.name, {1, 3, 5, 9, 17});
}

TEST(OpenCvExactBox, EqualsCvBlurOnOddSizesAndRandomBytes) {
  std::uint32_t seed = 21;
  for (const Size size : testing::odd_sizes()) {
    if (size.pixels() > 200000) continue;
    expect_box_equal_to_opencv(testing::random_image(size, seed++), "random", {1, 3, 5, 7, 9, 15, 17, 31});
  }
}

// The cpu backend's own gray, sharpen and sobel (pipeline/cpu), the OpenCV calls this model must equal.
Image cpu_backend(const Image& in, const std::string& chain) { return apply(*make_backend(BackendKind::cpu), parse_chain(chain), in); }

TEST(OpenCvExactPointAndThreeByThree, GraySharpenSobelAndNormalizeEqualTheCpuBackendOnPhotographsAndOddSizes) {
  std::vector<testing::NamedImage> images = testing::photos();
  std::uint32_t seed = 31;
  for (const Size size : testing::odd_sizes()) {
    if (size.pixels() <= 200000) images.push_back({"random", testing::random_image(size, seed++)});
  }
  for (const auto& [name, in] : images) {
    SCOPED_TRACE(name + " " + to_string(in.size()));
    EXPECT_EQ(first_difference(opencv_exact::gray(in), cpu_backend(in, "gray")), "");
    for (const Border border : {Border::reflect101, Border::replicate}) {
      const std::string suffix = border == Border::reflect101 ? "" : "=replicate";
      EXPECT_EQ(first_difference(opencv_exact::sharpen(in, border), cpu_backend(in, "sharpen" + suffix)), "");
      EXPECT_EQ(first_difference(opencv_exact::sobel(in, border), cpu_backend(in, "sobel" + suffix)), "");
    }
    EXPECT_EQ(first_difference(opencv_exact::normalize(in), cpu_backend(in, "normalize")), "");
    // A narrow range, where the stretch's scale has many significant bits and the rounding is tested hardest.
    const Image narrow = cpu_backend(in, "gray");
    Image dim(in.size());
    for (std::size_t i = 0; i < in.size().rgb_bytes(); ++i) {
      dim.data()[i] = static_cast<std::uint8_t>(40 + narrow.data()[i] / 7);
    }
    EXPECT_EQ(first_difference(opencv_exact::normalize(dim), cpu_backend(dim, "normalize")), "");
  }
}

// The stretch's ties (opencv_exact::normalize_ties), across OpenCV's SIMD body and its scalar tail.
TEST(OpenCvExactNormalize, RoundsTiesAsTheFusedMultiplyAddOnCraftedRanges) {
  const Image in = opencv_exact::normalize_ties();
  EXPECT_EQ(first_difference(opencv_exact::normalize(in), cpu_backend(in, "normalize")), "");
}

// The usual chains, composed from the pieces above, equal the cpu backend running them.
TEST(OpenCvExactChains, ResizeThenFilterEqualsTheCpuBackendOnEveryPhotograph) {
  for (const auto& photo : testing::photos()) {
    SCOPED_TRACE(photo.name);
    const Image& in = photo.image;
    const Image small = opencv_exact::resize_linear(in, {320, 240});
    EXPECT_EQ(first_difference(opencv_exact::gaussian_blur(small, 5, 1.0, Border::reflect101),
                               cpu_backend(in, "resize=320x240,gaussian=5:1.0")),
              "");
    const Image odd = opencv_exact::resize_linear(in, {301, 207});
    EXPECT_EQ(first_difference(opencv_exact::gaussian_blur(odd, 7, 2.0, Border::reflect101),
                               cpu_backend(in, "resize=301x207,gaussian=7:2.0")),
              "");
    EXPECT_EQ(first_difference(opencv_exact::box_blur(small, 3, Border::reflect101),
                               cpu_backend(in, "resize=320x240,box=3")),
              "");
  }
}

}  // namespace
}  // namespace imgpipe
