// read_image / write_image in any build: PPM natively, the format chosen by content when reading and by
// extension when writing, and clear errors (naming the file) for what cannot be read or written.
#include "image_file.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_bytes;

// The reason an IoError for `path` gives; fails the test when `action` throws nothing or names another path.
template <class Action>
std::string reason_for(const fs::path& path, Action action) {
  try {
    action();
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), path);
    return e.reason();
  }
  ADD_FAILURE() << "no IoError for " << path;
  return "";
}

TEST(ImageFile, PpmRoundTripsInAnyBuild) {
  TempDir dir;
  const Image image = testing::random_image({29, 17}, 9);
  write_image(dir.path() / "a.ppm", image);
  const ReadResult back = read_image(dir.path() / "a.ppm");
  EXPECT_EQ(testing::max_abs_diff(back.image, image), 0);
  EXPECT_TRUE(back.warnings.empty());
}

TEST(ImageFile, ReadingGoesByContentNotName) {
  TempDir dir;
  const Image image = testing::random_image({3, 2}, 2);
  write_image(dir.path() / "a.ppm", image);
  fs::copy_file(dir.path() / "a.ppm", dir.path() / "misnamed.jpg");
  EXPECT_EQ(testing::max_abs_diff(read_image(dir.path() / "misnamed.jpg").image, image), 0);
}

TEST(ImageFile, UnreadableFilesNameTheFileAndTheReason) {
  TempDir dir;
  write_bytes(dir.path() / "empty.png", "");
  EXPECT_EQ(reason_for(dir.path() / "empty.png", [&] { read_image(dir.path() / "empty.png"); }), "empty file");
  fs::create_directory(dir.path() / "folder.jpg");
  EXPECT_NE(reason_for(dir.path() / "folder.jpg", [&] { read_image(dir.path() / "folder.jpg"); }).find("directory"),
            std::string::npos);
  EXPECT_NE(reason_for(dir.path() / "gone.png", [&] { read_image(dir.path() / "gone.png"); }).find("No such file"),
            std::string::npos);
  write_bytes(dir.path() / "short.ppm", "P6 4 4 255\n123");
  EXPECT_NE(reason_for(dir.path() / "short.ppm", [&] { read_image(dir.path() / "short.ppm"); }).find("truncated"),
            std::string::npos);
}

TEST(ImageFile, NonPpmContentNeedsOpenCvOrIsDecodedByIt) {
  TempDir dir;
  const fs::path garbage = dir.path() / "garbage.png";
  write_bytes(garbage, "\x89PNG\r\n\x1a\n this is not really a PNG");
  const std::string reason = reason_for(garbage, [&] { read_image(garbage); });
  if (has_opencv_codecs()) {
    EXPECT_NE(reason.find("not a decodable image"), std::string::npos) << reason;
  } else {
    EXPECT_EQ(reason, "reading .png needs a build with OpenCV; this build reads and writes PPM only");
  }
}

TEST(ImageFile, WritingChoosesTheFormatByExtension) {
  TempDir dir;
  const Image image = testing::random_image({8, 8}, 3);
  EXPECT_EQ(reason_for(dir.path() / "a.gif", [&] { write_image(dir.path() / "a.gif", image); }),
            "unknown image extension '.gif'; imgpipe writes .ppm .png .jpg .jpeg .bmp .tif .tiff .webp");
  EXPECT_EQ(reason_for(dir.path() / "a.ppm", [&] { write_image(dir.path() / "a.ppm", Image()); }),
            "cannot write an empty image");
  if (!has_opencv_codecs()) {
    EXPECT_EQ(reason_for(dir.path() / "a.png", [&] { write_image(dir.path() / "a.png", image); }),
              "writing .png needs a build with OpenCV; this build reads and writes PPM only");
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));  // nothing half-written
  EXPECT_THROW(write_image(dir.path() / "a.jpg", image, 0), std::invalid_argument);
}

TEST(ImageFile, WriteFailuresNameTheOutput) {
  TempDir dir;
  const fs::path path = dir.path() / "missing-folder" / "a.ppm";
  EXPECT_NE(reason_for(path, [&] { write_image(path, Image({2, 2})); }).find("cannot create"), std::string::npos);
}

}  // namespace
}  // namespace imgpipe::io
