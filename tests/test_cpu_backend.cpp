// The CPU backend (OpenCV's own functions) against the plain reference, op by op, on the real photographs
// in data/ and on odd sizes: geometric ops exact, interpolation, filters and colour within 1 per byte.
#include "backends.hpp"
#include "cpu_backend.hpp"
#include "reference.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace imgpipe {
namespace {

using testing::max_abs_diff;

struct OpCase {
  const char* chain;
  int tolerance;  // 0 for ops that only move pixels
};

std::ostream& operator<<(std::ostream& os, const OpCase& c) { return os << c.chain; }

// Every op (nearest resize has its own test below), each border, sigma given and derived.
const OpCase kEveryOp[] = {
    {"resize=300x200", 1},        {"resize=1031x777", 1},       {"gaussian=5:1.0", 1},      {"gaussian=7", 1},
    {"gaussian=15:3.0:replicate", 1}, {"box=3", 1},            {"box=9:replicate", 1},
    {"sharpen", 1},               {"sharpen=replicate", 1},     {"sobel", 1},
    {"sobel=replicate", 1},       {"transpose", 0},             {"rotate=90", 0},
    {"rotate=180", 0},            {"rotate=270", 0},            {"flip=h", 0},
    {"flip=v", 0},                {"gray", 1},                  {"normalize", 1},
};

// Large kernels cost the reference O(K^2) per pixel, so they run on the odd sizes only. OpenCV's 8-bit
// GaussianBlur rounds its taps to 8.8 fixed point; on images smaller than the kernel, reflection folds
// many rounded taps onto a few pixels and the difference from double precision reaches 2.
const OpCase kLargeKernels[] = {{"gaussian=31:6.5", 2}, {"gaussian=31", 2}, {"box=31:replicate", 1}};

const std::vector<testing::NamedImage>& photos() {
  static const std::vector<testing::NamedImage> images = testing::photos();
  return images;
}

Image run_cpu(const Chain& chain, const Image& in) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend();
  return apply(*cpu, chain, in);
}

class CpuBackendOp : public ::testing::TestWithParam<OpCase> {};
class CpuBackendLargeKernel : public ::testing::TestWithParam<OpCase> {};

void expect_close_on_odd_sizes(const OpCase& op) {
  const Chain chain = parse_chain(op.chain);
  std::uint32_t seed = 1;
  for (Size size : testing::odd_sizes()) {
    const Image in = testing::synthetic_image(size, seed++);
    EXPECT_LE(max_abs_diff(run_cpu(chain, in), reference::apply(chain, in)), op.tolerance) << to_string(size);
  }
}

TEST_P(CpuBackendOp, MatchesTheReferenceOnPhotographs) {
  const Chain chain = parse_chain(GetParam().chain);
  for (const auto& [name, photo] : photos()) {
    EXPECT_LE(max_abs_diff(run_cpu(chain, photo), reference::apply(chain, photo)), GetParam().tolerance) << name;
  }
}

TEST_P(CpuBackendOp, MatchesTheReferenceOnOddSizes) { expect_close_on_odd_sizes(GetParam()); }
TEST_P(CpuBackendLargeKernel, MatchesTheReferenceOnOddSizes) { expect_close_on_odd_sizes(GetParam()); }

INSTANTIATE_TEST_SUITE_P(EveryOp, CpuBackendOp, ::testing::ValuesIn(kEveryOp));
INSTANTIATE_TEST_SUITE_P(LargeKernels, CpuBackendLargeKernel, ::testing::ValuesIn(kLargeKernels));

// The backend's nearest resize is the reference's pixel for pixel.
void expect_nearest_exact(const Image& in, Size out_size) {
  const Chain chain{{Resize{out_size, Interp::nearest}}};
  EXPECT_EQ(max_abs_diff(run_cpu(chain, in), reference::apply(chain, in)), 0)
      << to_string(in.size()) << " -> " << to_string(out_size);
}

TEST(CpuBackend, NearestResizeIsTheReferenceOnPhotographs) {
  for (const auto& [name, photo] : photos()) {
    SCOPED_TRACE(name);
    for (Size out : {Size{97, 53}, Size{1003, 611}, Size{256, 256}, Size{photo.width() / 2, photo.height() / 2}})
      expect_nearest_exact(photo, out);
  }
}

TEST(CpuBackend, NearestResizeIsTheReferenceOnOddSizes) {
  std::uint32_t seed = 3;
  for (Size size : testing::odd_sizes()) {
    for (Size out : {Size{1, 1}, Size{7, 301}, Size{97, 53}}) expect_nearest_exact(testing::random_image(size, seed++), out);
  }
}

// Source indices OpenCV's INTER_NEAREST_EXACT may pick for output index d: the exact rule's
// floor((d + 0.5) * src / dst), or its neighbour where that position lies within OpenCV's 16.16
// fixed-point error of a pixel boundary (OpenCV 4.6 breaks exact ties downwards, later versions differ).
std::pair<int, int> nearest_candidates(int d, int src, int dst) {
  const double u = (d + 0.5) * src / dst;
  const double error = (d + 2) / 65536.0;
  auto clamp = [&](double v) { return std::clamp(static_cast<int>(std::floor(v)), 0, src - 1); };
  return {clamp(u - error), clamp(u + error)};
}

// Against the installed OpenCV's own INTER_NEAREST_EXACT. From OpenCV 5 it computes the exact rule, so every byte
// matches; OpenCV 4 rounds it in 16.16 fixed point, so every output pixel is the backend's pixel except where
// that fixed point may round to the neighbour, and there it is one of the two candidates.
TEST(CpuBackend, NearestIsOpenCvsInterNearestExactUpToItsFixedPoint) {
  for (const auto& [name, photo] : photos()) {
    for (Size out_size : {Size{97, 53}, Size{1003, 611}, Size{photo.width() / 2, photo.height() / 2}}) {
      SCOPED_TRACE(name + " -> " + to_string(out_size));
      const Image ours = run_cpu(Chain{{Resize{out_size, Interp::nearest}}}, photo);
      const cv::Mat in(photo.height(), photo.width(), CV_8UC3, const_cast<std::uint8_t*>(photo.data()));
      cv::Mat theirs;
      cv::resize(in, theirs, cv::Size(out_size.width, out_size.height), 0, 0, cv::INTER_NEAREST_EXACT);
      int mismatches = 0;
      for (int y = 0; y < out_size.height; ++y) {
        const auto [y0, y1] = nearest_candidates(y, photo.height(), out_size.height);
        for (int x = 0; x < out_size.width; ++x) {
          const auto [x0, x1] = nearest_candidates(x, photo.width(), out_size.width);
          const cv::Vec3b got = theirs.at<cv::Vec3b>(y, x);
          auto is_copy_of = [&](int sx, int sy) {
            return got[0] == photo.at(sx, sy, 0) && got[1] == photo.at(sx, sy, 1) && got[2] == photo.at(sx, sy, 2);
          };
          const bool ok = (x0 == x1 && y0 == y1) || CV_VERSION_MAJOR >= 5
                              ? got[0] == ours.at(x, y, 0) && got[1] == ours.at(x, y, 1) && got[2] == ours.at(x, y, 2)
                              : is_copy_of(x0, y0) || is_copy_of(x1, y0) || is_copy_of(x0, y1) || is_copy_of(x1, y1);
          if (!ok && ++mismatches <= 5) ADD_FAILURE() << "output pixel (" << x << ", " << y << ")";
        }
      }
      EXPECT_EQ(mismatches, 0);
    }
  }
}

TEST(CpuBackend, ChainOfSeveralOpsMatchesTheReference) {
  // Two approximate ops (resize, gaussian), each allowed 1; the geometric ones in between add nothing.
  const Chain chain = parse_chain("transpose,resize=333x222,flip=v,gaussian=5:1.0,rotate=270,flip=h");
  for (const auto& [name, photo] : photos()) {
    const Image cpu = run_cpu(chain, photo);
    EXPECT_EQ(cpu.size(), (Size{222, 333})) << name;
    EXPECT_LE(max_abs_diff(cpu, reference::apply(chain, photo)), 2) << name;
  }
}

TEST(CpuBackend, OneBackendRunsFramesOfChangingSizes) {
  // Scratch frames are reused between frames; a frame of another size must not see the last one's pixels.
  const Chain chain = parse_chain("gaussian=3,transpose,sobel,flip=h");
  const std::unique_ptr<Backend> cpu = make_cpu_backend();
  cpu->set_chain(chain);
  std::uint32_t seed = 7;
  for (Size size : testing::odd_sizes()) {
    const Image in = testing::random_image(size, seed++);
    Image out(output_size(chain, size));
    cpu->process(in.view(), out.view());
    EXPECT_EQ(max_abs_diff(out, run_cpu(chain, in)), 0) << to_string(size);
  }
}

TEST(CpuBackend, WritesEveryOutputByteAndLeavesTheInputAlone) {
  const Image in = testing::random_image({61, 43}, 5);
  const Image before = in;
  for (const char* text : {"flip=h", "sharpen,transpose", "resize=30x20,normalize"}) {
    const Chain chain = parse_chain(text);
    const std::unique_ptr<Backend> cpu = make_cpu_backend();
    cpu->set_chain(chain);
    Image a(output_size(chain, in.size())), b(output_size(chain, in.size()));
    std::fill(a.data(), a.data() + a.bytes(), 0x00);
    std::fill(b.data(), b.data() + b.bytes(), 0xFF);  // an unwritten byte would differ between a and b
    cpu->process(in.view(), a.view());
    cpu->process(in.view(), b.view());
    EXPECT_EQ(max_abs_diff(a, b), 0) << text;
    EXPECT_EQ(max_abs_diff(in, before), 0) << text;
  }
}

TEST(CpuBackend, RefusesAnOutputOfTheWrongSize) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend();
  cpu->set_chain(parse_chain("resize=10x10"));
  const Image in({20, 20});
  Image wrong({20, 20});
  EXPECT_THROW(cpu->process(in.view(), wrong.view()), std::invalid_argument);
}

TEST(CpuBackend, RefusesToRunWithoutAChain) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend();
  const Image in({4, 4});
  Image out({4, 4});
  EXPECT_THROW(cpu->process(in.view(), out.view()), std::logic_error);
}

TEST(CpuBackend, IsWhatTheRegistryMakes) {
  EXPECT_EQ(make_backend(BackendKind::cpu)->name(), "cpu");
  EXPECT_EQ(make_cpu_backend()->name(), "cpu");
}

}  // namespace
}  // namespace imgpipe
