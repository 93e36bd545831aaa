// The OpenCV side of read_image / write_image: every format converts to and from 8-bit RGB correctly.
// Fixtures are made with OpenCV directly, so the channel order is checked against OpenCV's own (BGR).
#include "image_file.hpp"
#include "test_crafted_images.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(ImageCodecs, LosslessFormatsRoundTripExactly) {
  TempDir dir;
  const Image image = testing::random_image({45, 31}, 4);
  for (const char* name : {"a.png", "a.bmp", "a.tif", "a.tiff", "a.PNG"}) {
    write_image(dir.path() / name, image);
    const ReadResult back = read_image(dir.path() / name);
    EXPECT_EQ(testing::max_abs_diff(back.image, image), 0) << name;
    EXPECT_TRUE(back.warnings.empty()) << name;
  }
}

double mean_abs_diff(const Image& a, const Image& b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return 255;
  double total = 0;
  for (std::size_t i = 0; i < a.bytes(); ++i) total += std::abs(a.data()[i] - b.data()[i]);
  return total / a.bytes();
}

TEST(ImageCodecs, JpegAndWebpFollowQuality) {
  TempDir dir;
  const Image image = testing::synthetic_image({160, 120}, 5);
  for (const char* ext : {".jpg", ".jpeg", ".webp"}) {
    const fs::path high = dir.path() / (std::string("high") + ext), low = dir.path() / (std::string("low") + ext);
    write_image(high, image, 95);
    write_image(low, image, 20);
    EXPECT_LT(fs::file_size(low), fs::file_size(high)) << ext;
    const double high_error = mean_abs_diff(read_image(high).image, image);
    EXPECT_LT(high_error, mean_abs_diff(read_image(low).image, image)) << ext;
    EXPECT_LT(high_error, 8.0) << ext;  // the synthetic image carries noise of sigma 6, which lossy codecs smooth
  }
}

TEST(ImageCodecs, ChannelOrderIsRgbInMemory) {
  TempDir dir;
  cv::Mat bgr(1, 2, CV_8UC3);
  bgr.at<cv::Vec3b>(0, 0) = {0, 0, 255};  // red, as OpenCV stores it
  bgr.at<cv::Vec3b>(0, 1) = {255, 0, 0};  // blue
  cv::imwrite((dir.path() / "in.png").string(), bgr);
  const Image rgb = read_image(dir.path() / "in.png").image;
  EXPECT_EQ(rgb.at(0, 0, 0), 255);
  EXPECT_EQ(rgb.at(0, 0, 2), 0);
  EXPECT_EQ(rgb.at(1, 0, 2), 255);

  write_image(dir.path() / "out.png", rgb);
  const cv::Mat again = cv::imread((dir.path() / "out.png").string(), cv::IMREAD_UNCHANGED);
  EXPECT_EQ(again.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 0, 255));
  EXPECT_EQ(again.at<cv::Vec3b>(0, 1), cv::Vec3b(255, 0, 0));
}

TEST(ImageCodecs, GrayscaleIsExpandedToThreeChannels) {
  TempDir dir;
  cv::Mat gray(2, 3, CV_8UC1);
  for (int i = 0; i < 6; ++i) gray.data[i] = static_cast<std::uint8_t>(i * 40);
  cv::imwrite((dir.path() / "gray.png").string(), gray);
  const ReadResult read = read_image(dir.path() / "gray.png");
  ASSERT_EQ(read.image.size(), (Size{3, 2}));
  for (int c = 0; c < 3; ++c) EXPECT_EQ(read.image.at(2, 1, c), 200);
  EXPECT_TRUE(read.warnings.empty());
}

TEST(ImageCodecs, SixteenBitSamplesAreScaledDown) {
  TempDir dir;
  cv::Mat deep(1, 3, CV_16UC3);
  deep.at<cv::Vec3w>(0, 0) = {0, 0, 0};
  deep.at<cv::Vec3w>(0, 1) = {257 * 100, 257 * 100, 257 * 100};
  deep.at<cv::Vec3w>(0, 2) = {65535, 65535, 65535};
  cv::imwrite((dir.path() / "deep.png").string(), deep);
  const Image image = read_image(dir.path() / "deep.png").image;
  EXPECT_EQ(image.at(0, 0, 0), 0);
  EXPECT_EQ(image.at(1, 0, 1), 100);
  EXPECT_EQ(image.at(2, 0, 2), 255);
}

// PNG as imread reads it: an eXIf chunk's orientation applied, 16-bit samples to their high byte, grey to three
// channels; one with an alpha channel or a tRNS chunk is read unchanged to warn of transparent pixels, then the
// alpha channel dropped.
TEST(ImageCodecs, PngIsReadAsImreadReadsIt) {
  TempDir dir;
  const auto expect_imread_pixels = [&](const std::string& name, const std::vector<std::uint8_t>& png) {
    const fs::path path = dir.path() / name;
    testing::write_bytes(path, testing::as_string(png));
    const cv::Mat expected = cv::imread(path.string(), cv::IMREAD_COLOR);
    const ReadResult read = read_image(path);
    EXPECT_EQ(read.image.size(), (Size{expected.cols, expected.rows})) << name;
    if (read.image.size() != Size{expected.cols, expected.rows}) return read;
    int largest = 0;
    for (int y = 0; y < expected.rows; ++y) {
      for (int x = 0; x < expected.cols; ++x) {
        for (int c = 0; c < 3; ++c) {
          largest = std::max(largest, std::abs(read.image.at(x, y, c) - expected.at<cv::Vec3b>(y, x)[2 - c]));
        }
      }
    }
    EXPECT_EQ(largest, 0) << name;
    return read;
  };
  const auto encoded = [](const cv::Mat& image) {
    std::vector<std::uint8_t> png;
    cv::imencode(".png", image, png);
    return png;
  };
  cv::Mat rgb(24, 40, CV_8UC3), deep(24, 40, CV_16UC3), deep_gray(24, 40, CV_16UC1), rgba(24, 40, CV_8UC4);
  cv::randu(rgb, 0, 256);
  cv::randu(deep, 0, 65536);
  cv::randu(deep_gray, 0, 65536);
  cv::randu(rgba, 0, 256);
  const std::vector<std::uint8_t> turned =
      testing::with_exif_chunk(encoded(rgb), testing::tiff(false, {{0x0112, 3, 1, 6}}));
  EXPECT_EQ(expect_imread_pixels("turned.png", turned).image.size(), (Size{24, 40})) << "orientation 6 turns it";
  expect_imread_pixels("deep.png", encoded(deep));
  expect_imread_pixels("deep_gray.png", encoded(deep_gray));
  EXPECT_EQ(expect_imread_pixels("rgba.png", encoded(rgba)).warnings.size(), 1u);
}

TEST(ImageCodecs, AnImageTooWideForWebpIsRefusedSayingSo) {
  TempDir dir;
  const Image wide = testing::random_image({16384, 1}, 5);
  try {
    write_image(dir.path() / "wide.webp", wide);
    FAIL() << "wrote a WebP wider than the format holds";
  } catch (const IoError& e) {
    EXPECT_EQ(e.reason(), "WebP holds at most 16383 pixels a side; this image is 16384x1");
  }
  EXPECT_FALSE(fs::exists(dir.path() / "wide.webp"));
  write_image(dir.path() / "widest.webp", testing::random_image({16383, 1}, 5));
  EXPECT_EQ(read_image(dir.path() / "widest.webp").image.size(), (Size{16383, 1}));
}

// A PPM of 16-bit samples (maxval 65535, two bytes each, most significant first) or of another maxval is read by
// OpenCV, as the same samples in a PNG are: imgpipe's own reader takes maxval 255 only.
TEST(ImageCodecs, PpmOfOtherDepthsIsReadAsOpenCvReadsIt) {
  TempDir dir;
  std::string deep = "P6\n3 1\n65535\n";
  for (const int sample : {0, 0, 0, 257 * 100, 257 * 100, 257 * 100, 65535, 65535, 65535}) {
    deep += static_cast<char>(sample >> 8);
    deep += static_cast<char>(sample & 0xFF);
  }
  testing::write_bytes(dir.path() / "deep.ppm", deep);
  const Image image = read_image(dir.path() / "deep.ppm").image;
  ASSERT_EQ(image.size(), (Size{3, 1}));
  EXPECT_EQ(image.at(0, 0, 0), 0);
  EXPECT_EQ(image.at(1, 0, 1), 100);
  EXPECT_EQ(image.at(2, 0, 2), 255);

  testing::write_bytes(dir.path() / "levels.ppm", "P6\n2 1\n100\n" + std::string("\x00\x32\x64\x64\x32\x00", 6));
  const Image levels = read_image(dir.path() / "levels.ppm").image;
  cv::Mat bgr = cv::imread((dir.path() / "levels.ppm").string(), cv::IMREAD_COLOR);
  ASSERT_EQ(levels.size(), (Size{2, 1}));
  for (int x = 0; x < 2; ++x) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(levels.at(x, 0, c), bgr.at<cv::Vec3b>(0, x)[2 - c]) << x << ", " << c;
  }
}

TEST(ImageCodecs, AlphaIsDroppedWithAWarningOnlyWhenSomethingIsTransparent) {
  TempDir dir;
  cv::Mat bgra(2, 2, CV_8UC4, cv::Scalar(10, 20, 30, 255));
  cv::imwrite((dir.path() / "opaque.png").string(), bgra);
  const ReadResult opaque = read_image(dir.path() / "opaque.png");
  EXPECT_TRUE(opaque.warnings.empty());
  EXPECT_EQ(opaque.image.at(1, 1, 0), 30);

  bgra.at<cv::Vec4b>(1, 0)[3] = 0;
  cv::imwrite((dir.path() / "holes.png").string(), bgra);
  const ReadResult holes = read_image(dir.path() / "holes.png");
  ASSERT_EQ(holes.warnings.size(), 1u);
  EXPECT_NE(holes.warnings[0].find("alpha channel was dropped"), std::string::npos);
  EXPECT_EQ(holes.image.at(0, 1, 2), 10);  // a transparent pixel keeps its stored colour
}

TEST(ImageCodecs, FloatSamplesAreRefusedClearly) {
  TempDir dir;
  cv::imwrite((dir.path() / "float.tif").string(), cv::Mat(2, 2, CV_32FC3, cv::Scalar(0.5, 0.5, 0.5)));
  try {
    read_image(dir.path() / "float.tif");
    FAIL() << "read float samples";
  } catch (const IoError& e) {
    EXPECT_NE(e.reason().find("32F are not supported"), std::string::npos) << e.reason();
  }
}

// A JPEG whose EXIF says "rotate 90 degrees clockwise to display" (orientation 6).
std::vector<std::uint8_t> jpeg_with_orientation_6(const cv::Mat& bgr) {
  std::vector<std::uint8_t> jpeg;
  cv::imencode(".jpg", bgr, jpeg, {cv::IMWRITE_JPEG_QUALITY, 100});
  return testing::with_app1(jpeg, testing::exif(testing::tiff(/*intel=*/true, {{0x0112, 3, 1, 6}})));
}

TEST(ImageCodecs, JpegExifOrientationIsApplied) {
  TempDir dir;
  cv::Mat bgr(16, 32, CV_8UC3, cv::Scalar(0, 0, 0));
  bgr(cv::Rect(0, 0, 8, 8)).setTo(cv::Scalar(255, 255, 255));  // a white block at the top left
  const std::vector<std::uint8_t> jpeg = jpeg_with_orientation_6(bgr);
  testing::write_bytes(dir.path() / "turned.jpg", std::string(jpeg.begin(), jpeg.end()));
  const Image image = read_image(dir.path() / "turned.jpg").image;
  ASSERT_EQ(image.size(), (Size{16, 32}));
  EXPECT_GT(image.at(12, 3, 0), 200);  // turned clockwise, the block is now at the top right
  EXPECT_LT(image.at(3, 3, 0), 50);
}

}  // namespace
}  // namespace imgpipe::io
