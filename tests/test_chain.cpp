#include "chain.hpp"
#include "opencv_exact.hpp"
#include "reference.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace imgpipe {
namespace {

TEST(ChainParse, ReadsEveryOp) {
  const Chain chain = parse_chain(
      "resize=1280x720, resize=64x48:nearest,gaussian=5:1.0,gaussian=7,gaussian=3:0.5:replicate,box=3,"
      "box=31:replicate,sharpen,sharpen=replicate,sobel,transpose,rotate=90,rotate=270,flip=h,flip=v,gray,normalize");
  ASSERT_EQ(chain.ops.size(), 17u);
  const auto& r = std::get<Resize>(chain.ops[0]);
  EXPECT_EQ(r.size, (Size{1280, 720}));
  EXPECT_EQ(r.interp, Interp::linear);
  EXPECT_EQ(std::get<Resize>(chain.ops[1]).interp, Interp::nearest);
  const auto& g = std::get<Gaussian>(chain.ops[2]);
  EXPECT_EQ(g.ksize, 5);
  EXPECT_DOUBLE_EQ(g.sigma, 1.0);
  EXPECT_EQ(g.border, Border::reflect101);
  EXPECT_DOUBLE_EQ(std::get<Gaussian>(chain.ops[3]).sigma, 0.0);
  EXPECT_EQ(std::get<Gaussian>(chain.ops[4]).border, Border::replicate);
  EXPECT_EQ(std::get<Box>(chain.ops[6]).ksize, 31);
  EXPECT_EQ(std::get<Sharpen>(chain.ops[8]).border, Border::replicate);
  EXPECT_EQ(std::get<Rotate>(chain.ops[12]).degrees, 270);
  EXPECT_EQ(std::get<Flip>(chain.ops[14]).axis, Flip::Axis::vertical);
  EXPECT_TRUE(std::holds_alternative<Normalize>(chain.ops[16]));
}

// Blanks and tabs around an op's name, its '=' and its arguments are ignored, as docs/ops.md says.
TEST(ChainParse, BlanksAroundNamesAndArgumentsAreIgnored) {
  EXPECT_EQ(to_string(parse_chain(" resize =\t64x48 : nearest ,\tgaussian = 5 : 1.5 , gray ")),
            "resize=64x48:nearest,gaussian=5:1.5,gray");
}

TEST(ChainParse, RoundTripsThroughText) {
  const std::string text = "resize=640x480,gaussian=5:1.5:replicate,box=3,sobel,rotate=180,flip=h,gray,normalize";
  EXPECT_EQ(to_string(parse_chain(text)), text);
  EXPECT_EQ(to_string(parse_chain(to_string(parse_chain(text)))), text);
}

// Found by fuzz_chain: sigma was printed with an ostream's 6 significant digits, so "gaussian=5:1180.655"
// printed as "gaussian=5:1180.65", a different chain. The printed sigma must parse back to the same value.
TEST(ChainParse, PrintedSigmaParsesBackExactly) {
  for (const std::string text : {"gaussian=5:1180.655", "gaussian=5:1.23456789", "gaussian=3:0.1", "gaussian=7:1e-300",
                                 "gaussian=9:123456789.5"}) {
    const double sigma = std::get<Gaussian>(parse_chain(text).ops[0]).sigma;
    const std::string printed = to_string(parse_chain(text));
    EXPECT_EQ(std::get<Gaussian>(parse_chain(printed).ops[0]).sigma, sigma) << text << " printed as " << printed;
  }
  EXPECT_EQ(to_string(parse_chain("gaussian=5:1180.655")), "gaussian=5:1180.655");
}

struct BadChain {
  std::string text;
  std::string token;  // the token the error must name
};

class ChainParseBad : public ::testing::TestWithParam<BadChain> {};

TEST_P(ChainParseBad, NamesTheBadToken) {
  try {
    parse_chain(GetParam().text);
    FAIL() << "accepted '" << GetParam().text << "'";
  } catch (const ChainError& e) {
    EXPECT_EQ(e.token(), GetParam().token) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Strings, ChainParseBad,
    ::testing::Values(BadChain{"", ""}, BadChain{"blur=3", "blur=3"}, BadChain{"resize=0x10", "resize=0x10"},
                      BadChain{"resize=-4x10", "resize=-4x10"}, BadChain{"resize=640", "resize=640"},
                      BadChain{"resize=640x480x3", "resize=640x480x3"}, BadChain{"resize=99999x10", "resize=99999x10"},
                      BadChain{"resize=10x10:cubic", "resize=10x10:cubic"}, BadChain{"gaussian=4:1.0", "gaussian=4:1.0"},
                      BadChain{"gaussian=33", "gaussian=33"}, BadChain{"gaussian=5:-1", "gaussian=5:-1"},
                      BadChain{"gaussian=5:1:mirror", "gaussian=5:1:mirror"}, BadChain{"box=1", "box=1"},
                      BadChain{"box", "box"}, BadChain{"rotate=45", "rotate=45"}, BadChain{"flip=x", "flip=x"},
                      BadChain{"gray=1", "gray=1"}, BadChain{"resize=64x48,,gray", ""},
                      BadChain{"gray,normalise", "normalise"}, BadChain{"gaussian=5:", "gaussian=5:"},
                      BadChain{"gaussian=5:nan", "gaussian=5:nan"}));

TEST(ChainGeometry, OutputSizeFollowsTheOps) {
  EXPECT_EQ(output_size(parse_chain("resize=1280x720,gaussian=5:1.0"), {1920, 1080}), (Size{1280, 720}));
  EXPECT_EQ(output_size(parse_chain("transpose"), {640, 480}), (Size{480, 640}));
  EXPECT_EQ(output_size(parse_chain("rotate=90,rotate=180"), {640, 480}), (Size{480, 640}));
  EXPECT_EQ(output_size(parse_chain("rotate=270,resize=30x20,flip=v,transpose"), {640, 480}), (Size{20, 30}));
}

// An anamorphic video's shape on screen: a resize keeps it (its pixels stretch by what it squeezes the frame), a
// transpose or quarter turn turns it, the rest keep it; the pixel aspect shows a frame of any size in it.
TEST(ChainGeometry, DisplayAspectFollowsTheOps) {
  EXPECT_EQ(display_aspect(1440 * 4, 1080 * 3), (DisplayAspect{16, 9}));
  EXPECT_EQ(display_aspect(0, 9), std::nullopt);
  const DisplayAspect wide{16, 9};
  EXPECT_EQ(output_display_aspect(parse_chain("resize=180x240,gaussian=5,flip=h,rotate=180"), wide), wide);
  EXPECT_EQ(output_display_aspect(parse_chain("rotate=90"), wide), (DisplayAspect{9, 16}));
  EXPECT_EQ(output_display_aspect(parse_chain("transpose,rotate=270"), wide), wide);
  EXPECT_EQ(pixel_aspect(wide, {360, 240}), (DisplayAspect{32, 27}));
  EXPECT_EQ(pixel_aspect(wide, {1280, 720}), (DisplayAspect{1, 1}));
  EXPECT_EQ(pixel_aspect(DisplayAspect{9, 16}, {240, 360}), (DisplayAspect{27, 32}));
}

TEST(GaussianWeights, MatchOpenCvGetGaussianKernel) {
  // exp(-x^2 / (2 sigma^2)) normalised, as cv::getGaussianKernel documents (computed independently in Python);
  // with sigma derived from a small K it uses fixed tables instead.
  const std::vector<double> sigma1 = {0.05448868454964294, 0.24420134200323332, 0.4026199468942474,
                                      0.24420134200323332, 0.05448868454964294};
  const auto w = gaussian_weights(5, 1.0);
  ASSERT_EQ(w.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(w[i], sigma1[i], 1e-12);
  EXPECT_EQ(gaussian_weights(3, 0), (std::vector<double>{0.25, 0.5, 0.25}));
  double sum = 0;
  for (double v : gaussian_weights(31, 0)) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(MergeReorientations, ComposesEachStretchsTurnsAndFlipsIntoOneAtItsEnd) {
  const auto merged = [](const char* text) { return to_string(merge_reorientations(parse_chain(text))); };
  EXPECT_EQ(merged("rotate=90,flip=h,sharpen"), "sharpen,transpose");
  EXPECT_EQ(merged("rotate=90,rotate=90"), "rotate=180");
  EXPECT_EQ(merged("flip=h,flip=v"), "rotate=180");
  EXPECT_EQ(merged("transpose,rotate=90"), "flip=h");
  EXPECT_EQ(merged("flip=h,gray,flip=h"), "gray");
  EXPECT_EQ(merged("rotate=90,rotate=270"), "");
  EXPECT_EQ(merged("rotate=90,flip=v,sobel"), "sobel,transpose,rotate=180");  // the other diagonal: two ops
  // A resize is a wall: what is before it stays before it.
  EXPECT_EQ(merged("rotate=90,gaussian=5:1,resize=64x48,flip=v,box=3,rotate=180,normalize"),
            "gaussian=5:1,rotate=90,resize=64x48,box=3,normalize,flip=h");
  EXPECT_EQ(merged("transpose,resize=64x48:nearest,transpose"), "transpose,resize=64x48:nearest,transpose");
  EXPECT_EQ(merged("resize=64x48,gaussian=5:1"), "resize=64x48,gaussian=5:1");
}

// Every sequence of up to three transposes, rotations and flips moves each pixel where its merged form does.
TEST(MergeReorientations, EveryCompositionMovesThePixelsAsTheChainDoes) {
  const std::vector<std::string> ops = {"transpose", "rotate=90", "rotate=180", "rotate=270", "flip=h", "flip=v"};
  std::vector<std::string> chains;
  for (const std::string& a : ops) {
    chains.push_back(a);
    for (const std::string& b : ops) {
      chains.push_back(a + "," + b);
      for (const std::string& c : ops) chains.push_back(a + "," + b + "," + c);
    }
  }
  const Image image = testing::random_image({5, 3}, 17);
  for (const std::string& text : chains) {
    const Chain chain = parse_chain(text);
    const Chain merged = merge_reorientations(chain);
    EXPECT_LE(merged.ops.size(), std::min<std::size_t>(chain.ops.size(), 2)) << text;
    const Image expected = reference::apply(chain, image), actual = reference::apply(merged, image);
    ASSERT_EQ(actual.size(), expected.size()) << text << " merged to " << to_string(merged);
    EXPECT_EQ(testing::max_abs_diff(actual, expected), 0) << text << " merged to " << to_string(merged);
  }
}

// The filters and point ops a reorientation moves past give OpenCV's bytes either way (opencv_exact's models,
// proved equal to OpenCV by test_opencv_exact), on the photographs and odd sizes, with both borders.
TEST(MergeReorientations, TheFiltersAndPointOpsItMovesPastGiveTheSameBytes) {
  std::vector<testing::NamedImage> images = testing::photos();
  std::uint32_t seed = 3;
  for (const Size size : testing::odd_sizes()) {
    images.push_back({to_string(size), testing::synthetic_image(size, seed++)});
  }
  for (const char* text :
       {"rotate=90,flip=h,sharpen", "transpose,gaussian=5:1.0,rotate=270", "flip=v,box=5:replicate,flip=h",
        "rotate=90,flip=v,sobel", "transpose,sobel=replicate", "rotate=270,gaussian=7:2.0:replicate,gray",
        "flip=h,normalize,transpose,sharpen=replicate", "rotate=180,box=3,gaussian=3,flip=v"}) {
    const Chain chain = parse_chain(text);
    const Chain merged = merge_reorientations(chain);
    for (const testing::NamedImage& sample : images) {
      const Image expected = opencv_exact::apply(chain, sample.image);
      EXPECT_EQ(testing::max_abs_diff(opencv_exact::apply(merged, sample.image), expected), 0)
          << text << " merged to " << to_string(merged) << ", on " << sample.name;
    }
  }
}

}  // namespace
}  // namespace imgpipe
