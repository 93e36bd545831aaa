// JPEG on the CPU through TurboJPEG (io/cpu_jpeg.cpp) against OpenCV's own codec: every file decodes to
// imdecode's pixels and every image encodes to imencode's bytes, byte for byte, for real photographs, every
// chroma subsampling, progressive files, odd and tiny sizes, every EXIF orientation, CMYK, and files libjpeg
// finds corrupt. Variants are encoded with TurboJPEG here, since OpenCV's imwrite writes 4:2:0 only.
#include "image_file.hpp"
#include "image_header.hpp"
#include "test_crafted_images.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <turbojpeg.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using testing::exif;
using testing::tiff;
using testing::with_app1;

std::vector<fs::path> sample_jpegs() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(fs::path(IMGPIPE_DATA_DIR) / "images")) {
    if (entry.path().extension() == ".jpg") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// OpenCV's answer: imdecode as imread(IMREAD_COLOR), as RGB.
cv::Mat imdecode_rgb(const Bytes& jpeg) {
  const cv::Mat bgr = cv::imdecode(jpeg, cv::IMREAD_COLOR);
  cv::Mat rgb;
  if (!bgr.empty()) cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

Image decode(const Bytes& jpeg, std::vector<std::string>* warnings = nullptr) {
  Image image;
  std::vector<std::string> said = decode_image(jpeg, ".jpg", [&](Size size) {
    image = Image(size);
    std::fill(image.data(), image.data() + image.bytes(), std::uint8_t{0xA5});  // poisoned
    return image.view();
  });
  if (warnings) *warnings = said;
  return image;
}

void expect_decodes_as_opencv(const Bytes& jpeg, const std::string& what) {
  const cv::Mat expected = imdecode_rgb(jpeg);
  ASSERT_FALSE(expected.empty()) << what << ": OpenCV cannot decode the fixture";
  const Image got = decode(jpeg);
  ASSERT_EQ(got.size(), (Size{expected.cols, expected.rows})) << what;
  EXPECT_TRUE(std::equal(got.data(), got.data() + got.bytes(), expected.data)) << what << ": pixels differ";
}

struct TurboDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};

// `pixels` (RGB, gray or CMYK by `format`) as a JPEG made by TurboJPEG.
Bytes turbo_encode(const cv::Mat& pixels, int format, int subsampling, int quality, int flags = 0) {
  const std::unique_ptr<void, TurboDeleter> handle(tjInitCompress());
  unsigned char* out = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(handle.get(), pixels.data, pixels.cols, static_cast<int>(pixels.step), pixels.rows, format,
                        &out, &size, subsampling, quality, flags),
            0)
      << tjGetErrorStr2(handle.get());
  Bytes jpeg(out, out + size);
  tjFree(out);
  return jpeg;
}

cv::Mat photo_rgb(const std::string& name) {
  cv::Mat rgb;
  cv::cvtColor(cv::imread((fs::path(IMGPIPE_DATA_DIR) / "images" / name).string(), cv::IMREAD_COLOR), rgb,
               cv::COLOR_BGR2RGB);
  return rgb;
}

TEST(CpuJpeg, RealPhotographsDecodeToImreadsPixels) {
  const std::vector<fs::path> photos = sample_jpegs();
  ASSERT_GE(photos.size(), 3u);
  for (const fs::path& photo : photos) expect_decodes_as_opencv(testing::file_bytes(photo), photo.filename().string());
}

TEST(CpuJpeg, EverySubsamplingSizeAndScanLayoutDecodesToImreadsPixels) {
  const cv::Mat photo = photo_rgb("astronaut.jpg");
  cv::Mat gray;
  cv::cvtColor(photo, gray, cv::COLOR_RGB2GRAY);
  const std::pair<int, const char*> subsamplings[] = {
      {TJSAMP_444, "4:4:4"}, {TJSAMP_422, "4:2:2"}, {TJSAMP_420, "4:2:0"}, {TJSAMP_440, "4:4:0"}, {TJSAMP_411, "4:1:1"}};
  const cv::Size sizes[] = {{512, 512}, {333, 215}, {1, 1}, {3, 7}, {17, 2}};
  for (const cv::Size size : sizes) {
    const cv::Mat rgb = photo(cv::Rect(0, 0, size.width, size.height)).clone();
    const cv::Mat luma = gray(cv::Rect(0, 0, size.width, size.height)).clone();
    const std::string at = std::to_string(size.width) + "x" + std::to_string(size.height);
    for (const auto& [subsampling, name] : subsamplings) {
      for (int quality : {30, 90, 100}) {
        for (int flags : {0, TJFLAG_PROGRESSIVE}) {
          expect_decodes_as_opencv(turbo_encode(rgb, TJPF_RGB, subsampling, quality, flags),
                                   at + " " + name + " q" + std::to_string(quality) + (flags ? " progressive" : ""));
        }
      }
    }
    expect_decodes_as_opencv(turbo_encode(luma, TJPF_GRAY, TJSAMP_GRAY, 90), at + " grayscale");
    Bytes restarts;
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    cv::imencode(".jpg", bgr, restarts, {cv::IMWRITE_JPEG_QUALITY, 85, cv::IMWRITE_JPEG_RST_INTERVAL, 3});
    expect_decodes_as_opencv(restarts, at + " restart markers");
  }
}

TEST(CpuJpeg, CmykAndYcckFilesAreLeftToOpenCvsOwnConversion) {
  const cv::Mat photo = photo_rgb("coffee.jpg");
  cv::Mat cmyk(photo.rows, photo.cols, CV_8UC4);
  for (int y = 0; y < photo.rows; ++y) {
    for (int x = 0; x < photo.cols; ++x) {
      const cv::Vec3b p = photo.at<cv::Vec3b>(y, x);
      const std::uint8_t k = static_cast<std::uint8_t>(255 - std::max({p[0], p[1], p[2]}));
      cmyk.at<cv::Vec4b>(y, x) = {static_cast<std::uint8_t>(255 - p[0] - k), static_cast<std::uint8_t>(255 - p[1] - k),
                                  static_cast<std::uint8_t>(255 - p[2] - k), k};
    }
  }
  expect_decodes_as_opencv(turbo_encode(cmyk, TJPF_CMYK, TJSAMP_444, 90), "YCCK");
}

// --- EXIF orientation ------------------------------------------------------------------------------------

Bytes small_photo_jpeg() {
  const cv::Mat rgb = photo_rgb("rocket.jpg")(cv::Rect(5, 9, 37, 21)).clone();  // not square, odd sizes
  return turbo_encode(rgb, TJPF_RGB, TJSAMP_420, 95);
}

TEST(CpuJpeg, EveryExifOrientationInEitherByteOrderTurnsAsImreadTurns) {
  const Bytes plain = small_photo_jpeg();
  for (bool intel : {true, false}) {
    for (std::uint16_t orientation = 0; orientation <= 9; ++orientation) {
      const Bytes jpeg = with_app1(plain, exif(tiff(intel, {{0x0112, 3, 1, orientation}})));
      const ExifOrientation read = read_image_header(jpeg).orientation;
      EXPECT_EQ(read.value, orientation);
      EXPECT_FALSE(read.ambiguous);
      expect_decodes_as_opencv(jpeg, std::string(intel ? "II" : "MM") + " orientation " + std::to_string(orientation));
    }
  }
}

TEST(CpuJpeg, OrientationIsReadFromTheFirstApp1SegmentAsImreadReadsIt) {
  const Bytes plain = small_photo_jpeg();
  const Bytes turned = exif(tiff(true, {{0x0112, 3, 1, 6}}));
  const std::string xmp = "http://ns.adobe.com/xap/1.0/";
  const struct {
    const char* what;
    Bytes jpeg;
    std::uint16_t value;
    bool ambiguous;
  } cases[] = {
      {"no APP1", plain, 1, false},
      {"XMP before the Exif segment: OpenCV reads only the first", with_app1(with_app1(plain, turned),
                                                                             Bytes(xmp.begin(), xmp.end())), 1, false},
      {"two Orientation entries: the first counts", with_app1(plain, exif(tiff(true, {{0x0112, 3, 1, 3},
                                                                                      {0x0112, 3, 1, 6}}))), 3, false},
      {"a sorted IFD with a camera's usual strings", with_app1(plain, exif(tiff(false, {{0x010F, 2, 4, 0x41424300},
                                                                                        {0x0110, 2, 3, 0x58590000},
                                                                                        {0x0112, 3, 1, 8}}))),
       8, false},
      {"the IFD past the end of the segment", with_app1(plain, exif(tiff(true, {{0x0112, 3, 1, 6}}, 4000))), 1, false},
      {"a string before Orientation pointing past the end", with_app1(plain, exif(tiff(true, {{0x010E, 2, 64, 900},
                                                                                              {0x0112, 3, 1, 6}}))),
       1, true},
      {"a resolution before Orientation pointing past the end",
       with_app1(plain, exif(tiff(true, {{0x011A, 5, 1, 900}, {0x0112, 3, 1, 6}}))), 1, true},
  };
  for (const auto& c : cases) {
    const ExifOrientation read = read_image_header(c.jpeg).orientation;
    EXPECT_EQ(read.value, c.value) << c.what;
    EXPECT_EQ(read.ambiguous, c.ambiguous) << c.what;
    expect_decodes_as_opencv(c.jpeg, c.what);  // an ambiguous file is OpenCV's to decode, so equal by definition
  }
}

TEST(CpuJpeg, OrientationInAByteOrderThatIsNeitherIntelNorMotorolaIsLeftToOpenCv) {
  Bytes odd = tiff(false, {{0x0112, 3, 1, 6}});
  odd[0] = 'X';
  odd[1] = 'Y';
  const Bytes jpeg = with_app1(small_photo_jpeg(), exif(odd));
  EXPECT_TRUE(read_image_header(jpeg).orientation.ambiguous);
  expect_decodes_as_opencv(jpeg, "byte order XY");
}

// --- Corrupt files ---------------------------------------------------------------------------------------

TEST(CpuJpeg, DataLibjpegFindsCorruptIsDecodedAsImreadDoesWithAWarning) {
  Bytes jpeg = testing::file_bytes(sample_jpegs().front());
  // A restart marker in the middle of a scan that has no restart interval: libjpeg warns of a premature end of
  // the data segment and fills the rest of the scan.
  jpeg[jpeg.size() / 2] = 0xFF;
  jpeg[jpeg.size() / 2 + 1] = 0xD3;
  std::vector<std::string> warnings;
  decode(jpeg, &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "libjpeg: Corrupt JPEG data: premature end of data segment; decoded anyway");
  expect_decodes_as_opencv(jpeg, "stray bytes");
}

TEST(CpuJpeg, AFileLibjpegCannotDecodeIsRefusedWithItsReason) {
  Bytes jpeg = small_photo_jpeg();
  // The frame header's sample precision: 12 bits, which an 8-bit libjpeg refuses.
  const std::uint8_t baseline_frame[] = {0xFF, 0xC0};
  const auto sof = std::search(jpeg.begin(), jpeg.end(), std::begin(baseline_frame), std::end(baseline_frame));
  ASSERT_NE(sof, jpeg.end());
  *(sof + 4) = 12;
  try {
    decode(jpeg);
    FAIL() << "decoded a 12-bit JPEG";
  } catch (const IoError& e) {
    EXPECT_NE(e.reason().find("not a decodable image: "), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find("precision"), std::string::npos) << e.reason();
  }
  EXPECT_TRUE(imdecode_rgb(jpeg).empty()) << "OpenCV decodes what imgpipe refuses";
}

TEST(CpuJpeg, AWarningFollowedByAnErrorIsAnError) {
  // Stray bytes before the frame header (a warning), and no quantization table (an error). TurboJPEG 2.1 reports
  // such a file as a warning only, which must not pass for a decoded frame.
  const Bytes photo = small_photo_jpeg();
  Bytes jpeg(photo.begin(), photo.begin() + 2);
  for (std::size_t at = 2; at + 4 <= photo.size();) {
    const std::size_t length = (std::size_t{photo[at + 2]} << 8) | photo[at + 3];
    if (photo[at + 1] == 0xDA) {  // the scan runs to the end of the file
      jpeg.insert(jpeg.end(), photo.begin() + static_cast<std::ptrdiff_t>(at), photo.end());
      break;
    }
    if (photo[at + 1] == 0xC0) jpeg.insert(jpeg.end(), {0x12, 0x34});
    if (photo[at + 1] != 0xDB) {
      jpeg.insert(jpeg.end(), photo.begin() + static_cast<std::ptrdiff_t>(at),
                  photo.begin() + static_cast<std::ptrdiff_t>(at + 2 + length));
    }
    at += 2 + length;
  }
  ASSERT_TRUE(imdecode_rgb(jpeg).empty()) << "OpenCV decodes the fixture";
  EXPECT_THROW(decode(jpeg), IoError);
}

// Files with a few bytes changed, as a disk or a transfer corrupts them: imgpipe decodes what imread decodes, to
// the same pixels, and refuses what it refuses. The exception is imgpipe's own refusal of a JPEG whose scan runs
// to the end of the file without an end-of-image marker (ImageHeader::truncated), which imread fills with grey.
TEST(CpuJpeg, CorruptedFilesDecodeAsImreadDecodesThemOrNotAtAll) {
  const cv::Mat photo = photo_rgb("coffee.jpg")(cv::Rect(0, 0, 157, 93)).clone();
  Bytes restarts;
  cv::Mat bgr;
  cv::cvtColor(photo, bgr, cv::COLOR_RGB2BGR);
  cv::imencode(".jpg", bgr, restarts, {cv::IMWRITE_JPEG_QUALITY, 85, cv::IMWRITE_JPEG_RST_INTERVAL, 2});
  const Bytes originals[] = {turbo_encode(photo, TJPF_RGB, TJSAMP_420, 85),
                             turbo_encode(photo, TJPF_RGB, TJSAMP_422, 85, TJFLAG_PROGRESSIVE), restarts,
                             with_app1(turbo_encode(photo, TJPF_RGB, TJSAMP_444, 85), exif(tiff(true, {{0x0112, 3, 1, 6}})))};
  std::mt19937 random(2026);
  int decoded = 0, refused = 0, truncated = 0;
  for (const Bytes& original : originals) {
    for (int trial = 0; trial < 250; ++trial) {
      Bytes jpeg = original;
      for (int change = 1 + static_cast<int>(random() % 4); change > 0; --change) {
        const std::size_t at = 2 + random() % (jpeg.size() - 4);
        jpeg[at] = (random() % 2) ? static_cast<std::uint8_t>(jpeg[at] ^ (1u << (random() % 8)))
                                  : static_cast<std::uint8_t>(random());
      }
      const cv::Mat expected = imdecode_rgb(jpeg);
      Image got;
      std::string refusal;
      try {
        got = decode(jpeg);
      } catch (const IoError& e) {
        refusal = e.reason();
      }
      if (refusal.find("truncated JPEG") == 0) {
        ++truncated;
      } else if (expected.empty()) {
        EXPECT_FALSE(refusal.empty()) << "decoded a file imread refuses, trial " << trial;
        ++refused;
      } else {
        ASSERT_TRUE(refusal.empty()) << refusal << ", trial " << trial;
        ASSERT_EQ(got.size(), (Size{expected.cols, expected.rows})) << "trial " << trial;
        EXPECT_TRUE(std::equal(got.data(), got.data() + got.bytes(), expected.data)) << "trial " << trial;
        ++decoded;
      }
    }
  }
  std::printf("corrupted files: %d decoded as imread decodes them, %d refused as imread refuses them, "
              "%d refused as truncated\n", decoded, refused, truncated);
  EXPECT_GT(refused, 0);
  EXPECT_GT(decoded, 500);
}

// --- Encoding --------------------------------------------------------------------------------------------

TEST(CpuJpeg, EncodesImencodesBytesAtEveryQuality) {
  for (const fs::path& photo : sample_jpegs()) {
    const cv::Mat bgr = cv::imread(photo.string(), cv::IMREAD_COLOR);
    for (const cv::Rect crop : {cv::Rect(0, 0, bgr.cols, bgr.rows), cv::Rect(3, 1, 97, 61), cv::Rect(0, 0, 1, 1)}) {
      const cv::Mat part = bgr(crop).clone();
      cv::Mat rgb;
      cv::cvtColor(part, rgb, cv::COLOR_BGR2RGB);
      for (int quality : {1, 50, 90, 95, 100}) {
        Bytes expected;
        ASSERT_TRUE(cv::imencode(".jpg", part, expected, {cv::IMWRITE_JPEG_QUALITY, quality}));
        const Bytes got = encode_image(ConstFrameView(rgb.data, Size{rgb.cols, rgb.rows}), ".jpg", quality);
        EXPECT_TRUE(got == expected) << photo.filename() << " " << crop << " q" << quality << ": " << got.size()
                                     << " bytes against OpenCV's " << expected.size();
      }
    }
  }
}

}  // namespace
}  // namespace imgpipe::io
