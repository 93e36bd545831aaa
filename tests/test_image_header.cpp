// io/ against bad input: headers read without decoding (sizes, truncation), the pixel limit as a parameter,
// files too large to be an image, folders full of things that are not images, and writes that fail or must not
// replace an existing file. docs/reliability.md lists what each test proves.
#include "file_bytes.hpp"
#include "folder.hpp"
#include "image_file.hpp"
#include "image_header.hpp"
#include "ppm.hpp"
#include "test_crafted_images.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <thread>

#ifdef IMGPIPE_TEST_WITH_OPENCV
#include <opencv2/imgcodecs.hpp>
#endif

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_bytes;
using Bytes = std::vector<std::uint8_t>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Bytes bytes_of(const std::string& text) { return Bytes(text.begin(), text.end()); }

void put_le(Bytes& b, std::uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_be16(Bytes& b, std::uint32_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}

using testing::as_string;
using testing::declared_jpeg;
using testing::declared_png;
using testing::put_be32;

Bytes file(const fs::path& path) { return testing::file_bytes(path); }

fs::path data(const std::string& relative) { return fs::path(IMGPIPE_DATA_DIR) / relative; }

// The photographs' sizes from their PPM copies (readable in any build).
Size photo_size(const std::string& stem) { return read_ppm(data("ppm/" + stem + ".ppm")).size(); }

TEST(ImageHeader, RealPngAndJpegDeclareTheirSizeAndAreWhole) {
  for (const char* name : {"astronaut.jpg", "chelsea.png", "coffee.jpg", "coins.png", "rocket.jpg"}) {
    const Bytes bytes = file(data(std::string("images/") + name));
    const ImageHeader header = read_image_header(bytes);
    const Size expected = photo_size(fs::path(name).stem().string());
    ASSERT_TRUE(header.size.has_value()) << name;
    EXPECT_EQ(header.size->width, static_cast<std::uint64_t>(expected.width)) << name;
    EXPECT_EQ(header.size->height, static_cast<std::uint64_t>(expected.height)) << name;
    EXPECT_EQ(header.truncated, "") << name;
  }
}

TEST(ImageHeader, TruncatedJpegAndPngAreCaughtAtEveryLength) {
  for (const char* name : {"coffee.jpg", "coins.png"}) {
    const Bytes whole = file(data(std::string("images/") + name));
    for (double fraction : {0.001, 0.1, 0.5, 0.9, 0.999}) {
      const Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(whole.size() * fraction));
      const std::string truncated = read_image_header(cut).truncated;
      EXPECT_TRUE(contains(truncated, "truncated")) << name << " cut to " << cut.size() << " bytes: " << truncated;
    }
    const Bytes last_byte_missing(whole.begin(), whole.end() - 1);
    EXPECT_NE(read_image_header(last_byte_missing).truncated, "") << name;
  }
  // Bytes after the end-of-image marker (camera trailers) do not make a JPEG truncated.
  Bytes trailer = file(data("images/coffee.jpg"));
  trailer.insert(trailer.end(), {'t', 'r', 'a', 'i', 'l', 'e', 'r'});
  EXPECT_EQ(read_image_header(trailer).truncated, "");
}

TEST(ImageHeader, CraftedHeadersDeclareHugeSizes) {
  const ImageHeader png = read_image_header(declared_png(100000, 100000));
  EXPECT_EQ(png.format, "PNG");
  ASSERT_TRUE(png.size);
  EXPECT_EQ(png.size->pixels(), 10'000'000'000u);
  EXPECT_EQ(png.truncated, "");
  const ImageHeader jpeg = read_image_header(declared_jpeg(65535, 65535));
  EXPECT_EQ(jpeg.format, "JPEG");
  ASSERT_TRUE(jpeg.size);
  EXPECT_EQ(jpeg.size->width, 65535u);
  EXPECT_EQ(jpeg.size->height, 65535u);
  EXPECT_EQ(jpeg.truncated, "");
}

TEST(ImageHeader, BmpWebpAndTiffHeaders) {
  Bytes bmp = {'B', 'M'};
  bmp.resize(14, 0);                                // file size, reserved, pixel offset
  put_le(bmp, 40, 4);                               // BITMAPINFOHEADER
  put_le(bmp, 70000, 4);                            // width
  put_le(bmp, static_cast<std::uint32_t>(-80000), 4);  // height, negative: rows top-down
  ASSERT_TRUE(read_image_header(bmp).size);
  EXPECT_EQ(read_image_header(bmp).size->pixels(), std::uint64_t{70000} * 80000);

  auto webp = [](const char* chunk, const Bytes& payload) {
    Bytes b = bytes_of("RIFF");
    put_le(b, 100, 4);
    b.insert(b.end(), {'W', 'E', 'B', 'P'});
    b.insert(b.end(), chunk, chunk + 4);
    put_le(b, static_cast<std::uint32_t>(payload.size()), 4);
    b.insert(b.end(), payload.begin(), payload.end());
    b.resize(40, 0);
    return b;
  };
  Bytes vp8x = {0, 0, 0, 0};
  put_le(vp8x, 16383, 3);
  put_le(vp8x, 9, 3);
  const ImageHeader x = read_image_header(webp("VP8X", vp8x));
  EXPECT_EQ(x.size->width, 16384u);
  EXPECT_EQ(x.size->height, 10u);
  EXPECT_FALSE(x.animated);
  Bytes animation = vp8x;
  animation[0] = 0x02;  // the VP8X flag for an animation
  EXPECT_TRUE(read_image_header(webp("VP8X", animation)).animated);
#ifdef IMGPIPE_TEST_WITH_OPENCV
  TempDir dir;
  write_bytes(dir.path() / "animated.webp", as_string(webp("VP8X", animation)));
  try {
    read_image(dir.path() / "animated.webp");
    FAIL() << "read an animated WebP";
  } catch (const IoError& e) {
    EXPECT_NE(e.reason().find("an animated WebP, which OpenCV does not read"), std::string::npos) << e.what();
  }
#endif
  Bytes vp8l = {0x2F};
  put_le(vp8l, (99u) | (49u << 14), 4);
  EXPECT_EQ(read_image_header(webp("VP8L", vp8l)).size->width, 100u);
  EXPECT_EQ(read_image_header(webp("VP8L", vp8l)).size->height, 50u);
  Bytes vp8 = {0, 0, 0, 0x9D, 0x01, 0x2A};
  put_le(vp8, 640, 2);
  put_le(vp8, 480, 2);
  EXPECT_EQ(read_image_header(webp("VP8 ", vp8)).size->pixels(), 640u * 480u);

  for (bool little : {true, false}) {
    Bytes tiff = little ? Bytes{'I', 'I', 42, 0} : Bytes{'M', 'M', 0, 42};
    auto u16 = [&](std::uint32_t v) { little ? put_le(tiff, v, 2) : put_be16(tiff, v); };
    auto u32 = [&](std::uint32_t v) { little ? put_le(tiff, v, 4) : put_be32(tiff, v); };
    u32(8);  // the first IFD
    u16(2);  // two entries
    u16(256), u16(4), u32(1), u32(200000);         // ImageWidth, LONG
    u16(257), u16(3), u32(1), u16(30000), u16(0);  // ImageLength, SHORT (first in the value field)
    const ImageHeader header = read_image_header(tiff);
    EXPECT_EQ(header.format, "TIFF");
    ASSERT_TRUE(header.size) << little;
    EXPECT_EQ(header.size->width, 200000u) << little;
    EXPECT_EQ(header.size->height, 30000u) << little;
  }
}

TEST(ImageHeader, GarbageNeverThrowsAndDeclaresNothingUseful) {
  std::uint32_t state = 12345;
  for (int round = 0; round < 2000; ++round) {
    Bytes bytes(static_cast<std::size_t>(round % 64));
    for (auto& b : bytes) b = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    if (round % 5 == 0 && bytes.size() >= 2) bytes[0] = 0xFF, bytes[1] = 0xD8;
    if (round % 7 == 0 && bytes.size() >= 8) std::memcpy(bytes.data(), "\x89PNG\r\n\x1a\n", 8);
    EXPECT_NO_THROW(read_image_header(bytes));
  }
  EXPECT_EQ(read_image_header({}).format, "");
}

#ifdef IMGPIPE_TEST_WITH_OPENCV
TEST(ImageHeader, AgreesWithOpenCvOnEveryFormatItEncodes) {
  const Image image = testing::random_image({37, 21}, 4);
  const cv::Mat mat(21, 37, CV_8UC3, const_cast<std::uint8_t*>(image.data()));
  for (const char* ext : {".png", ".jpg", ".bmp", ".tiff", ".webp"}) {
    std::vector<std::uint8_t> encoded;
    ASSERT_TRUE(cv::imencode(ext, mat, encoded)) << ext;
    const ImageHeader header = read_image_header(encoded);
    ASSERT_TRUE(header.size.has_value()) << ext;
    EXPECT_EQ(header.size->width, 37u) << ext;
    EXPECT_EQ(header.size->height, 21u) << ext;
    EXPECT_EQ(header.truncated, "") << ext;
  }
}

// The decompression bomb: refused from the header, before OpenCV decodes anything and before `allocate`.
TEST(PixelLimit, CraftedHeadersAreRefusedBeforeAnyAllocation) {
  TempDir dir;
  write_bytes(dir.path() / "bomb.png", as_string(declared_png(100000, 100000)));
  write_bytes(dir.path() / "bomb.jpg", as_string(declared_jpeg(65535, 65535)));
  for (const char* name : {"bomb.png", "bomb.jpg"}) {
    int allocations = 0;
    try {
      read_image_into(dir.path() / name, [&](Size) -> FrameView {
        ++allocations;
        throw std::logic_error("allocate must not be called");
      });
      ADD_FAILURE() << name << " was decoded";
    } catch (const PixelLimitError& e) {
      EXPECT_EQ(e.path(), dir.path() / name);
      EXPECT_TRUE(contains(e.reason(), "exceeds the limit of " + std::to_string(kDefaultMaxPixels) + " pixels"))
          << e.reason();
      EXPECT_TRUE(contains(e.reason(), "header says so, and nothing was decoded")) << e.reason();
    }
    EXPECT_EQ(allocations, 0) << name;
  }
}

TEST(PixelLimit, IsAParameterForEveryFormat) {
  for (const char* name : {"images/coins.png", "images/coffee.jpg", "ppm/coins.ppm"}) {
    const Image full = read_image(data(name)).image;
    const std::uint64_t pixels = full.size().pixels();
    EXPECT_EQ(read_image(data(name), pixels).image.size(), full.size()) << name;  // exactly at the limit: fine
    EXPECT_THROW(read_image(data(name), pixels - 1), PixelLimitError) << name;
  }
}
#endif

TEST(PixelLimit, PpmTakesTheLimitAsAParameterAndKeepsItsDefault) {
  const std::string header = "P6 100 100 255\n";
  Bytes bytes = bytes_of(header);
  bytes.resize(header.size() + 100 * 100 * 3, 7);
  EXPECT_EQ(decode_ppm(bytes).size(), (Size{100, 100}));
  EXPECT_EQ(decode_ppm(bytes, 10000).size(), (Size{100, 100}));
  try {
    decode_ppm(bytes, 9999);
    FAIL() << "decoded past the limit";
  } catch (const PixelLimitError& e) {
    EXPECT_EQ(e.reason(), "image of 100x100 (10000 pixels) exceeds the limit of 9999 pixels");
  }
  EXPECT_EQ(kDefaultMaxPixels, kDefaultMaxPixels);
}

TEST(PixelLimit, AFileLargerThanAnyImageWithinTheLimitIsRefusedUnread) {
  TempDir dir;
  const fs::path huge = dir.path() / "huge.ppm";
  write_bytes(huge, "P6 1 1 255\n");
  // Sparse: the size is there, the disk blocks are not.
  ASSERT_EQ(::truncate(huge.c_str(), static_cast<off_t>(max_image_file_bytes(1000) + 1)), 0);
  try {
    read_image(huge, 1000);
    FAIL() << "read a file larger than the bound";
  } catch (const PixelLimitError& e) {
    EXPECT_TRUE(contains(e.reason(), "refused without reading it")) << e.reason();
  }
  EXPECT_EQ(max_image_file_bytes(1000), 8000u + (64u << 20));
  EXPECT_EQ(max_image_file_bytes(~std::uint64_t{0}), ~std::uint64_t{0});  // saturates
}

TEST(ReadFile, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path() / "pipe.ppm";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  try {
    read_image(fifo);  // would block forever in open() without O_NONBLOCK: no writer exists
    FAIL() << "read a FIFO";
  } catch (const IoError& e) {
    EXPECT_TRUE(contains(e.reason(), "not a regular file")) << e.reason();
  }
}

TEST(FolderEntries, ThingsNamedLikeImagesThatAreNotFilesAreListedWithTheReason) {
  TempDir dir;
  write_bytes(dir.path() / "a.ppm", "x");
  write_bytes(dir.path() / "x.png" / "inside.ppm", "x");
  fs::create_directory(dir.path() / "real");
  fs::create_directory_symlink("real", dir.path() / "linked.jpg");
  fs::create_symlink("missing.png", dir.path() / "dangling.png");
  ASSERT_EQ(::mkfifo((dir.path() / "fifo.bmp").c_str(), 0644), 0);
  write_bytes(dir.path() / "notes.txt", "x");
  const std::vector<FolderEntry> entries = list_image_entries(dir.path());
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0], (FolderEntry{"a.ppm", ""}));
  EXPECT_EQ(entries[1].relative, "dangling.png");
  EXPECT_TRUE(contains(entries[1].problem, "broken symbolic link"));
  EXPECT_EQ(entries[2].relative, "fifo.bmp");
  EXPECT_TRUE(contains(entries[2].problem, "not a regular file"));
  EXPECT_EQ(entries[3].relative, "linked.jpg");
  EXPECT_TRUE(contains(entries[3].problem, "link to a directory"));
  EXPECT_EQ(entries[4].relative, "x.png");
  EXPECT_TRUE(contains(entries[4].problem, "is a directory, not an image file"));
  EXPECT_EQ(entries[5], (FolderEntry{"x.png/inside.ppm", ""}));  // the folder is still walked
  EXPECT_EQ(list_images(dir.path()), (std::vector<fs::path>{"a.ppm", "x.png/inside.ppm"}));
}

TEST(FolderEntries, AnUnreadableSubfolderIsAnEntryNotTheEndOfTheWalk) {
  TempDir dir;
  write_bytes(dir.path() / "a.ppm", "x");
  write_bytes(dir.path() / "locked" / "b.ppm", "x");
  ::chmod((dir.path() / "locked").c_str(), 0);
  const bool readable = ::access((dir.path() / "locked").c_str(), R_OK) == 0;
  if (readable) {
    ::chmod((dir.path() / "locked").c_str(), 0755);
    GTEST_SKIP() << "this user reads folders without read permission (root ignores permissions); "
                    "test_reliability's FileWithoutReadPermission covers it as an unprivileged user";
  }
  const std::vector<FolderEntry> entries = list_image_entries(dir.path());
  ::chmod((dir.path() / "locked").c_str(), 0755);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].relative, "locked");
  EXPECT_TRUE(contains(entries[1].problem, "cannot list the folder")) << entries[1].problem;
  EXPECT_THROW(list_image_entries(dir.path() / "missing"), IoError);
}

std::vector<fs::path> temporaries_in(const fs::path& folder) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (contains(entry.path().filename().string(), ".imgpipe-tmp-")) found.push_back(entry.path());
  }
  return found;
}

TEST(AtomicWrite, KeepNeverReplacesAnExistingFile) {
  TempDir dir;
  const fs::path path = dir.path() / "out.bin";
  write_bytes(path, "original");
  const Bytes replacement = bytes_of("replacement");
  try {
    write_file_atomically(path, replacement, Existing::keep);
    FAIL() << "replaced an existing file";
  } catch (const IoError& e) {
    EXPECT_TRUE(contains(e.reason(), "exists")) << e.reason();
  }
  EXPECT_EQ(file(path), bytes_of("original"));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  write_file_atomically(dir.path() / "new.bin", replacement, Existing::keep);
  EXPECT_EQ(file(dir.path() / "new.bin"), replacement);
  write_file_atomically(path, replacement, Existing::replace);
  EXPECT_EQ(file(path), replacement);
}

// A file whose name is near the file system's limit (255 bytes) is written all the same: its temporary's name is
// cut short to fit, at a character's start, and keeps the extension last.
TEST(AtomicWrite, ANameNearTheLimitGetsATemporaryThatFits) {
  TempDir dir;
  std::string name;
  for (int i = 0; i < 80; ++i) name += "\u00e9x";  // 240 bytes, a two-byte character in every three
  name += ".jpeg";
  const fs::path path = dir.path() / name;
  const fs::path temporary = temporary_name_for(path);
  const std::string kept = temporary.filename().string();
  EXPECT_LE(kept.size(), 255u);
  for (std::size_t i = 0; i < kept.size(); ++i) {  // no character cut in two: each lead byte has its second byte
    const auto byte = static_cast<unsigned char>(kept[i]);
    if ((byte & 0xE0u) == 0xC0u) {
      ASSERT_LT(i + 1, kept.size());
      EXPECT_EQ(static_cast<unsigned char>(kept[++i]) & 0xC0u, 0x80u) << kept;
    } else {
      EXPECT_LT(byte, 0x80u) << kept;
    }
  }
  EXPECT_EQ(temporary.extension(), ".jpeg");
  EXPECT_EQ(temporary.parent_path(), dir.path());
  write_file_atomically(path, bytes_of("contents"));
  EXPECT_EQ(file(path), bytes_of("contents"));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// The exit code of `body` run in a child process (which must end with _exit), or -1 when it did not exit.
int exit_code_in_child(const std::function<void()>& body) {
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    body();
    _exit(100);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// A write that fails midway (here the file-size limit, EFBIG; a full disk fails the same write() with ENOSPC)
// leaves neither a truncated file under the real name nor the temporary. In a child process: the limit
// and the ignored SIGXFSZ must not leak into the other tests.
TEST(AtomicWrite, AWriteThatFailsMidwayLeavesNothingBehind) {
  TempDir dir;
  const fs::path path = dir.path() / "big.bin";
  const int code = exit_code_in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_file_atomically(path, Bytes(100000, 1));
    } catch (const IoError& e) {
      _exit(contains(e.reason(), "cannot write: File too large") ? 0 : 2);
    }
    _exit(1);
  });
  EXPECT_EQ(code, 0) << "1: the write succeeded, 2: another reason";
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// What a second SIGINT does (remove_unfinished_temporaries, then _exit), in a child process: a temporary being
// written is removed, and a write that starts once the abort has begun creates no file at all, even while the
// process has not exited yet (the writer waits for the exit).
TEST(AtomicWrite, AnAbortRemovesTheTemporariesAndNoWriteCreatesOneAfterIt) {
  TempDir dir;
  const fs::path late = dir.path() / "late.bin";
  const int code = exit_code_in_child([&] {
    TemporaryFile pending(dir.path() / "pending.bin");
    write_bytes(pending.name(), "half a file");
    remove_unfinished_temporaries();
    std::thread writer([&] { write_file_atomically(late, Bytes(1000, 1)); });
    writer.detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    _exit(temporaries_in(dir.path()).empty() && !fs::exists(late) ? 0 : 1);
  });
  EXPECT_EQ(code, 0) << "a temporary or the late file exists after the abort began";
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_FALSE(fs::exists(late));
}

}  // namespace
}  // namespace imgpipe::io
