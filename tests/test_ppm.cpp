// The built-in PPM codec: round trips, the netpbm header rules, and every way a header or raster can be bad.
#include "ppm.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<std::uint8_t> bytes_of(const std::string& header, std::size_t raster_bytes, std::uint8_t fill = 7) {
  std::vector<std::uint8_t> bytes(header.begin(), header.end());
  bytes.resize(bytes.size() + raster_bytes, fill);
  return bytes;
}

// The reason decode_ppm gives for `bytes`, or "" when it decodes.
std::string refusal(const std::vector<std::uint8_t>& bytes) {
  try {
    decode_ppm(bytes);
  } catch (const IoError& e) {
    return e.reason();
  }
  return "";
}

TEST(Ppm, EncodeDecodeRoundTripIsExact) {
  for (Size size : testing::odd_sizes()) {
    const Image image = testing::random_image(size, 42);
    const Image back = decode_ppm(encode_ppm(image));
    EXPECT_EQ(back.size(), image.size());
    EXPECT_EQ(testing::max_abs_diff(back, image), 0) << to_string(size);
  }
}

TEST(Ppm, EncodeWritesTheCanonicalHeader) {
  const std::vector<std::uint8_t> bytes = encode_ppm(Image({3, 2}));
  const std::string header = "P6\n3 2\n255\n";
  ASSERT_EQ(bytes.size(), header.size() + 18);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + header.size()), header);
}

TEST(Ppm, FileRoundTripLeavesNoTemporaryBehind) {
  TempDir dir;
  const Image image = testing::synthetic_image({37, 19}, 3);
  write_ppm(dir.path() / "a.ppm", image);
  EXPECT_EQ(testing::max_abs_diff(read_ppm(dir.path() / "a.ppm"), image), 0);
  write_ppm(dir.path() / "a.ppm", testing::random_image({5, 5}, 1));  // replaces the old file whole
  EXPECT_EQ(read_ppm(dir.path() / "a.ppm").size(), (Size{5, 5}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(Ppm, HeaderMayHaveCommentsAndAnyWhitespace) {
  const std::string headers[] = {
      "P6 2 1 255\n",
      "P6\n# made by hand\n2 1\n255\n",
      "P6\t2\r\n1 # width then height\n  255 ",
      "P6#comment right after the magic\n2\n#\n1\n255\r",
      "P6\n2 1\n255\n",
  };
  for (const std::string& header : headers) {
    std::vector<std::uint8_t> bytes = bytes_of(header, 0);
    const std::uint8_t raster[6] = {1, 2, 3, 4, 5, 6};
    bytes.insert(bytes.end(), raster, raster + 6);
    const Image image = decode_ppm(bytes);
    ASSERT_EQ(image.size(), (Size{2, 1})) << header;
    EXPECT_EQ(image.at(1, 0, 2), 6) << header;
  }
}

TEST(Ppm, RasterMayBeginWithWhitespaceOrHashBytes) {
  // Only one byte separates maxval from the raster; what follows is pixels even if it looks like text.
  std::vector<std::uint8_t> bytes = bytes_of("P6 1 1 255\n", 0);
  bytes.insert(bytes.end(), {'\n', '#', ' '});
  const Image image = decode_ppm(bytes);
  EXPECT_EQ(image.at(0, 0, 0), '\n');
  EXPECT_EQ(image.at(0, 0, 1), '#');
}

TEST(Ppm, ACommentAfterTheMaxvalEndsTheHeaderAtItsNewline) {
  std::vector<std::uint8_t> bytes = bytes_of("P6 1 1 255# made by hand\n", 0);
  bytes.insert(bytes.end(), {10, 20, 30});
  const Image image = decode_ppm(bytes);
  EXPECT_EQ(image.at(0, 0, 0), 10);
  EXPECT_EQ(image.at(0, 0, 2), 30);
  EXPECT_NE(refusal(bytes_of("P6 1 1 255# no newline", 0)).find("runs to the end"), std::string::npos);
}

TEST(Ppm, TrailingBytesAfterTheRasterAreIgnored) {
  EXPECT_EQ(decode_ppm(bytes_of("P6 2 2 255\n", 12 + 100)).size(), (Size{2, 2}));
}

TEST(Ppm, RefusesOtherNetpbmKindsAndNonPpm) {
  EXPECT_NE(refusal(bytes_of("P3 1 1 255\n", 3)).find("P3 (ASCII pixmap)"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P5 1 1 255\n", 1)).find("P5 (binary graymap)"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("\x89PNG\r\n", 10)).find("not a binary PPM"), std::string::npos);
  EXPECT_EQ(refusal({}), "empty file");
}

TEST(Ppm, RefusesMaxvalOtherThan255) {
  EXPECT_NE(refusal(bytes_of("P6 1 1 65535\n", 6)).find("maxval 65535 is not supported"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 1 1 15\n", 3)).find("maxval 15"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 1 1 0\n", 3)).find("maxval 0"), std::string::npos);
}

TEST(Ppm, RefusesBadHeaderFields) {
  EXPECT_NE(refusal(bytes_of("P6 0 1 255\n", 3)).find("has no pixels"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 -1 1 255\n", 3)).find("expected the width"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 2x1 255\n", 6)).find("the width is followed by 'x'"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 2 1.5 255\n", 6)).find("the height is followed by '.'"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 99999999999999999999 1 255\n", 6)).find("absurdly large"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 1 1 255x", 3)).find("the maxval is followed by 'x'"), std::string::npos);
}

TEST(Ppm, RefusesTruncatedHeadersAndRasters) {
  EXPECT_NE(refusal(bytes_of("P6 2 ", 0)).find("ends before the height"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 2 1 # no maxval", 0)).find("ends before the maxval"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 2 1 255", 0)).find("ends after the maxval"), std::string::npos);
  EXPECT_EQ(refusal(bytes_of("P6 4 3 255\n", 36)), "");
  EXPECT_EQ(refusal(bytes_of("P6 4 3 255\n", 35)),
            "truncated raster: 4x3 needs 36 bytes of pixels, the file has 35");
}

TEST(Ppm, RefusesHugeDimensionsBeforeAllocating) {
  // 1e9 x 1e9 would be 3 EB; the header alone is enough to refuse it, with no allocation attempted.
  const std::string reason = refusal(bytes_of("P6 1000000000 1000000000 255\n", 16));
  EXPECT_NE(reason.find("exceeds the limit of " + std::to_string(kDefaultMaxPixels) + " pixels"), std::string::npos);
  EXPECT_NE(refusal(bytes_of("P6 16385 16384 255\n", 3)).find("exceeds the limit"), std::string::npos);
}

TEST(Ppm, FileErrorsNameThePath) {
  TempDir dir;
  const fs::path missing = dir.path() / "missing.ppm";
  try {
    read_ppm(missing);
    FAIL() << "read a missing file";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), missing);
    EXPECT_NE(std::string(e.what()).find(missing.string() + ": cannot open: No such file"), std::string::npos);
  }
  const fs::path truncated = dir.path() / "truncated.ppm";
  testing::write_bytes(truncated, "P6 2 2 255\n" + std::string(5, 'x'));
  try {
    read_ppm(truncated);
    FAIL() << "read a truncated file";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), truncated);
    EXPECT_NE(e.reason().find("truncated raster"), std::string::npos);
  }
  EXPECT_THROW(read_ppm(dir.path()), IoError);  // a directory
  EXPECT_THROW(write_ppm(dir.path() / "no-such-folder" / "a.ppm", Image({1, 1})), IoError);
  EXPECT_THROW(encode_ppm(Image()), IoError);
}

}  // namespace
}  // namespace imgpipe::io
