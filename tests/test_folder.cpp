// Walking an input folder: which files count as images, in what order, under which relative names.
#include "folder.hpp"
#include "io_error.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_bytes;

TEST(Folder, ImageExtensionsIgnoreCase) {
  for (const char* ext : {".ppm", ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".JPG", ".Png"}) {
    EXPECT_TRUE(is_image_extension(ext)) << ext;
  }
  for (const char* ext : {"", ".", ".txt", ".gif", ".jpgx", "jpg", ".pp"}) EXPECT_FALSE(is_image_extension(ext)) << ext;
  EXPECT_EQ(lowercase_extension("a/B.JPeG"), ".jpeg");
  EXPECT_EQ(lowercase_extension("noext"), "");
}

TEST(Folder, ListsImagesRecursivelySortedAndRelative) {
  TempDir dir;
  for (const char* name : {"b.PNG", "a.jpg", "notes.txt", "noext", "sub/c.tiff", "sub/deeper/d.webp",
                           "sub/e.JPEG", "x.png/f.bmp", "sub/.hidden.ppm"}) {
    write_bytes(dir.path() / name, "x");
  }
  const std::vector<fs::path> expected = {"a.jpg", "b.PNG", "sub/.hidden.ppm", "sub/c.tiff", "sub/deeper/d.webp",
                                          "sub/e.JPEG", "x.png/f.bmp"};
  EXPECT_EQ(list_images(dir.path()), expected);  // the folder named x.png is walked, not listed
}

TEST(Folder, FollowsLinksToFilesButNotToFolders) {
  TempDir dir;
  write_bytes(dir.path() / "real/a.png", "x");
  fs::create_symlink("real/a.png", dir.path() / "link.png");
  fs::create_directory_symlink("..", dir.path() / "real/loop");  // would recurse forever if followed
  fs::create_symlink("missing.png", dir.path() / "dangling.png");
  EXPECT_EQ(list_images(dir.path()), (std::vector<fs::path>{"link.png", "real/a.png"}));
}

TEST(Folder, MissingFolderIsAnIoErrorNamingIt) {
  TempDir dir;
  try {
    list_images(dir.path() / "nope");
    FAIL() << "listed a missing folder";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), dir.path() / "nope");
    EXPECT_NE(e.reason().find("cannot list the folder"), std::string::npos);
  }
}

TEST(Folder, ExtensionListForMessages) {
  EXPECT_EQ(image_extensions_text(), ".ppm .png .jpg .jpeg .bmp .tif .tiff .webp");
}

}  // namespace
}  // namespace imgpipe::io
