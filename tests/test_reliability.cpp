// Bad input and faults, end to end (docs/reliability.md maps every case to its test here):
// the imgpipe command run as a user would on bad files, decompression bombs, bad arguments, bad streams,
// signals, unwritable outputs and full disks; and the batch driven in-process against engine test doubles
// for GPU out-of-memory and sticky CUDA errors (with real-GPU versions that run where a device is).
#include "backends.hpp"
#include "batch.hpp"
#include "chain.hpp"
#include "cpu_video.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "frame_stream.hpp"
#include "image_file.hpp"
#include "job.hpp"
#include "ppm.hpp"
#include "reference.hpp"
#include "sample_videos.hpp"
#include "signals.hpp"
#include "stream.hpp"
#include "test_crafted_images.hpp"
#include "test_frame_reader.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"
#include "video_encode.hpp"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

// A kernel that writes through a null pointer: a real illegal-address fault (test_gpu_fault.cu).
void imgpipe_test_launch_illegal_write(cudaStream_t stream);

namespace imgpipe {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_bytes;

// ---------------------------------------------------------------------------------------------------------
// Running the command

using testing::CommandResult;
using testing::quoted;

CommandResult imgpipe_cmd(const std::string& arguments, const std::string& environment = "") {
  return testing::run_command(IMGPIPE_BINARY, arguments, environment);
}

// "f<i>.ppm"
std::string numbered(int i) {
  std::string name(1, 'f');
  name += std::to_string(i);
  name += ".ppm";
  return name;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// imgpipe as a child process with its own descriptors, for signals and resource limits.
struct SpawnOptions {
  int stdin_fd = -1;   // default: /dev/null
  int stdout_fd = -1;  // default: the stderr file
  fs::path stderr_path;
  std::optional<rlim_t> file_size_limit;  // RLIMIT_FSIZE, bytes
  std::vector<std::string> prefix;        // e.g. setpriv ... -- (run as another user)
};

pid_t spawn_imgpipe(const std::vector<std::string>& arguments, const SpawnOptions& options) {
  std::vector<std::string> words = options.prefix;
  words.push_back(IMGPIPE_BINARY);
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  const int err = ::open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::dup2(options.stdin_fd >= 0 ? options.stdin_fd : null_in, STDIN_FILENO);
    ::dup2(options.stdout_fd >= 0 ? options.stdout_fd : err, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    if (options.file_size_limit) {
      const rlimit limit{*options.file_size_limit, *options.file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(err);
  ::close(null_in);
  return pid;
}

// Exit code, or -signal when the child was killed by one.
int wait_for(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1000;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// ---------------------------------------------------------------------------------------------------------
// Inputs

fs::path photo_folder() { return fs::path(IMGPIPE_DATA_DIR) / (io::has_opencv_codecs() ? "images" : "ppm"); }

std::vector<fs::path> photo_names() {
  std::vector<fs::path> names;
  for (const auto& entry : fs::directory_iterator(photo_folder())) names.push_back(entry.path().filename());
  return names;
}

fs::path make_input(const fs::path& root) {
  const fs::path in = root / "in";
  fs::create_directories(in);
  for (const fs::path& name : photo_names()) fs::copy_file(photo_folder() / name, in / name);
  return in;
}

std::vector<fs::path> temporaries_in(const fs::path& folder) {
  std::vector<fs::path> found;
  if (!fs::exists(folder)) return found;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (contains(entry.path().filename().string(), ".imgpipe-tmp-")) found.push_back(entry.path());
  }
  return found;
}

bool some_backend_usable() {
  for (const BackendInfo& b : available_backends())
    if (b.usable) return true;
  return false;
}

// What `setpriv` needs to run imgpipe as an unprivileged user when the tests run as root (root ignores file
// permissions, so permission faults cannot be shown as root). Empty prefix: already unprivileged.
struct Unprivileged {
  std::vector<std::string> prefix;
  std::string shell_prefix;
  std::string skip_reason;  // non-empty: no honest way here
};

Unprivileged unprivileged() {
  Unprivileged u;
  if (::geteuid() != 0) return u;
  u.prefix = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  u.shell_prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups --";
  if (std::system(("setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x '" + std::string(IMGPIPE_BINARY) +
                   "' 2>/dev/null")
                      .c_str()) != 0) {
    u.skip_reason = "running as root, which ignores file permissions, and setpriv cannot run imgpipe as user 65534 "
                    "here (no setpriv, or the build folder is not readable by other users)";
  }
  return u;
}

// True when `path` cannot be read by the user imgpipe will run as.
bool unreadable_for(const Unprivileged& u, const fs::path& path) {
  return std::system((u.shell_prefix + " test -r " + quoted(path) + " 2>/dev/null").c_str()) != 0;
}

class Reliability : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!some_backend_usable()) GTEST_SKIP() << "no backend is usable here (no OpenCV and no CUDA device)";
  }

  // Runs the batch with one bad input beside the photographs and checks the contract: the bad file is named
  // on stderr with `reason`, counted, the exit code is 1, and every photograph still comes out whole.
  void expect_reported(const fs::path& bad, const std::string& reason, const std::string& shell_prefix = "",
                       const std::string& options = "") {
    const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h " + options,
                                          shell_prefix);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_TRUE(contains(run.output, bad.string() + ": " + reason)) << "expected '" << bad.string() << ": " << reason
                                                                   << "' in:\n" << run.output;
    EXPECT_TRUE(contains(run.output, std::to_string(photo_names().size()) + " done, 1 failed")) << run.output;
    for (const fs::path& name : photo_names()) {
      const Image source = io::read_image(photo_folder() / name).image;
      ASSERT_TRUE(fs::exists(out / name)) << name;
      EXPECT_EQ(io::read_image(out / name).image.size(), source.size()) << name;
    }
    EXPECT_FALSE(fs::is_regular_file(out / bad.lexically_relative(in))) << "no output for the bad file";
    EXPECT_TRUE(temporaries_in(out).empty());
  }

  TempDir dir;
  fs::path in = make_input(dir.path());
  fs::path out = dir.path() / "out";
};

// ---------------------------------------------------------------------------------------------------------
// Bad files: each reported with its path and reason, counted, exit 1, every good file still processed

TEST_F(Reliability, ZeroByteFile) {
  write_bytes(in / "zero.png", "");
  expect_reported(in / "zero.png", "empty file");
}

// A name with a terminal escape sequence and a line break is shown with those bytes as \xHH: it can neither
// recolour the terminal nor split its message.
TEST_F(Reliability, ControlCharactersInANameAreShownEscaped) {
  write_bytes(in / "bad\x1b[31m\nname.png", "");
  const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, (in / "bad\\x1b[31m\\x0aname.png").string() + ": empty file")) << run.output;
  EXPECT_FALSE(contains(run.output, "\x1b")) << run.output;
}

TEST_F(Reliability, RandomBytesWithAnImageExtension) {
  std::string noise(4096, '\0');
  std::uint32_t state = 7;
  for (char& c : noise) c = static_cast<char>((state = state * 1664525u + 1013904223u) >> 24);
  noise[0] = 'Z';  // no format's magic number, whatever the generator gives
  write_bytes(in / "noise.jpg", noise);
  expect_reported(in / "noise.jpg", io::has_opencv_codecs()
                                        ? "not a decodable image"
                                        : "reading .jpg needs a build with OpenCV");
}

TEST_F(Reliability, RandomBytesNamedPpm) {
  write_bytes(in / "noise.ppm", "Z" + std::string(100, 'q'));
  expect_reported(in / "noise.ppm", io::has_opencv_codecs() ? "not a decodable image"  // content, not the name, decides
                                                              : "not a binary PPM: found no netpbm magic number");
}

TEST_F(Reliability, TruncatedJpegIsRefusedNotDecodedWithGreyRows) {
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "this build reads PPM only (no OpenCV)";
  const std::vector<std::uint8_t> whole = testing::file_bytes(fs::path(IMGPIPE_DATA_DIR) / "images/coffee.jpg");
  write_bytes(in / "cut.jpg", std::string(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(whole.size() / 2)));
  expect_reported(in / "cut.jpg", "truncated JPEG: the file ends before its end-of-image marker");
}

TEST_F(Reliability, JpegWithRecoverableCorruptionIsDecodedWithAWarningNamingIt) {
#ifndef IMGPIPE_HAVE_TURBOJPEG
  GTEST_SKIP() << "this build decodes JPEG on the CPU through OpenCV, which leaves libjpeg's warning on stderr";
#endif
  std::vector<std::uint8_t> jpeg = testing::file_bytes(fs::path(IMGPIPE_DATA_DIR) / "images/coffee.jpg");
  jpeg[jpeg.size() / 2] = 0xFF;  // a restart marker mid-scan, where the scan has no restart interval
  jpeg[jpeg.size() / 2 + 1] = 0xD3;
  write_bytes(in / "marked.jpg", std::string(jpeg.begin(), jpeg.end()));
  const CommandResult run =
      imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h --backend cpu");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, (in / "marked.jpg").string() +
                                       ": warning: libjpeg: Corrupt JPEG data: premature end of data segment; "
                                       "decoded anyway"))
      << run.output;
  EXPECT_TRUE(contains(run.output, std::to_string(photo_names().size() + 1) + " done, 0 failed")) << run.output;
  EXPECT_EQ(io::read_image(out / "marked.jpg").image.size(), io::read_image(in / "coffee.jpg").image.size());
}

TEST_F(Reliability, TruncatedPng) {
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "this build reads PPM only (no OpenCV)";
  const std::vector<std::uint8_t> whole = testing::file_bytes(fs::path(IMGPIPE_DATA_DIR) / "images/coins.png");
  write_bytes(in / "cut.png", std::string(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(whole.size() / 2)));
  expect_reported(in / "cut.png", "truncated PNG: the file ends inside its IDAT chunk");
}

TEST_F(Reliability, TruncatedPpm) {
  write_bytes(in / "cut.ppm", "P6 64 64 255\n" + std::string(1000, 'x'));
  expect_reported(in / "cut.ppm", "truncated raster");
}

TEST_F(Reliability, DirectoryNamedLikeAnImageIsReportedAndItsImagesProcessed) {
  const fs::path folder = in / "album.png";
  fs::create_directories(folder);
  io::write_image(folder / "inner.ppm", testing::random_image({5, 4}, 3));
  const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, folder.string() + ": not processed: is a directory, not an image file")) << run.output;
  EXPECT_TRUE(contains(run.output, std::to_string(photo_names().size() + 1) + " done, 1 failed")) << run.output;
  EXPECT_EQ(io::read_image(out / "album.png" / "inner.ppm").image.size(), (Size{5, 4}));
}

TEST_F(Reliability, BrokenLinkAndFifoAreReportedWithoutBlocking) {
  fs::create_symlink("nowhere.png", in / "dangling.png");
  ASSERT_EQ(::mkfifo((in / "pipe.ppm").c_str(), 0644), 0);  // opening it to read would wait for a writer forever
  const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, (in / "dangling.png").string() + ": not processed: is a broken symbolic link"))
      << run.output;
  EXPECT_TRUE(contains(run.output, (in / "pipe.ppm").string() + ": not processed: is not a regular file")) << run.output;
  EXPECT_TRUE(contains(run.output, std::to_string(photo_names().size()) + " done, 2 failed")) << run.output;
}

TEST_F(Reliability, FileWithoutReadPermission) {
  const Unprivileged user = unprivileged();
  if (!user.skip_reason.empty()) GTEST_SKIP() << user.skip_reason;
  io::write_image(in / "secret.ppm", testing::random_image({4, 4}, 1));
  ::chmod((in / "secret.ppm").c_str(), 0);
  if (!unreadable_for(user, in / "secret.ppm")) GTEST_SKIP() << "this user reads files without read permission";
  fs::create_directories(out);
  ::chmod(out.c_str(), 0777);  // writable by the unprivileged user
  expect_reported(in / "secret.ppm", "cannot open: Permission denied", user.shell_prefix);
}

TEST_F(Reliability, UnreadableSubfolderIsReportedAndTheRestProcessed) {
  const Unprivileged user = unprivileged();
  if (!user.skip_reason.empty()) GTEST_SKIP() << user.skip_reason;
  fs::create_directories(in / "locked");
  io::write_image(in / "locked" / "a.ppm", testing::random_image({4, 4}, 1));
  ::chmod((in / "locked").c_str(), 0);
  if (!unreadable_for(user, in / "locked")) GTEST_SKIP() << "this user reads folders without read permission";
  fs::create_directories(out);
  ::chmod(out.c_str(), 0777);
  expect_reported(in / "locked", "not processed: cannot list the folder: Permission denied", user.shell_prefix);
  ::chmod((in / "locked").c_str(), 0755);  // so TempDir can remove it
}

// ---------------------------------------------------------------------------------------------------------
// Decompression bombs and the pixel limit

TEST_F(Reliability, PngDeclaring100000x100000IsRefusedFromItsHeader) {
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "this build reads PPM only (no OpenCV); PpmBomb covers it";
  write_bytes(in / "bomb.png", testing::as_string(testing::declared_png(100000, 100000)));
  expect_reported(in / "bomb.png",
                  "image of 100000x100000 (10000000000 pixels) exceeds the limit of 268435456 pixels; its PNG header "
                  "says so, and nothing was decoded; --max-pixels or IMGPIPE_MAX_PIXELS raises the limit");
}

TEST_F(Reliability, JpegDeclaring65535x65535IsRefusedFromItsHeader) {
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "this build reads PPM only (no OpenCV); PpmBomb covers it";
  write_bytes(in / "bomb.jpg", testing::as_string(testing::declared_jpeg(65535, 65535)));
  expect_reported(in / "bomb.jpg", "image of 65535x65535 (4294836225 pixels) exceeds the limit of 268435456 pixels");
}

TEST_F(Reliability, PpmBomb) {
  write_bytes(in / "bomb.ppm", "P6 100000 100000 255\nabc");
  expect_reported(in / "bomb.ppm", "image of 100000x100000 (10000000000 pixels) exceeds the limit of 268435456 pixels");
}

TEST_F(Reliability, MaxPixelsComesFromTheFlagOrTheEnvironmentAndTheFlagWins) {
  const std::string batch = "batch " + quoted(in) + " " + quoted(out) + " --ops flip=h --format ppm";
  const std::string refused = "exceeds the limit of 1000 pixels";
  const std::size_t photos = photo_names().size();
  CommandResult run = imgpipe_cmd(batch + " --max-pixels 1000");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, refused)) << run.output;
  EXPECT_TRUE(contains(run.output, "0 done, " + std::to_string(photos) + " failed")) << run.output;
  run = imgpipe_cmd(batch, "IMGPIPE_MAX_PIXELS=1000");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, refused)) << run.output;
  run = imgpipe_cmd(batch + " --max-pixels 100000000", "IMGPIPE_MAX_PIXELS=1000");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, std::to_string(photos) + " done, 0 failed")) << run.output;
}

TEST(ReliabilityUsage, BadMaxPixelsValuesAreUsageErrors) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const std::string batch = "batch " + quoted(photo_folder()) + " " + quoted(out) + " --ops flip=h";
  for (const char* value : {"0", "-5", "abc", "1e9", "99999999999999999999"}) {
    const CommandResult run = imgpipe_cmd(batch + " --max-pixels " + value);
    EXPECT_EQ(run.exit_code, 2) << value << run.output;
    EXPECT_TRUE(contains(run.output, "--max-pixels")) << run.output;
  }
  const CommandResult env = imgpipe_cmd(batch, "IMGPIPE_MAX_PIXELS=lots");
  EXPECT_EQ(env.exit_code, 2) << env.output;
  EXPECT_TRUE(contains(env.output, "--max-pixels")) << env.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(Reliability, AChainThatBlowsAnImageUpPastTheLimitIsRefusedPerFile) {
  const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops resize=65535x65535,box=3");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "the chain makes a 65535x65535 frame (4294836225 pixels)")) << run.output;
  EXPECT_TRUE(contains(run.output, "0 done, " + std::to_string(photo_names().size()) + " failed")) << run.output;
}

TEST_F(Reliability, AFileLargerThanAnyImageWithinTheLimitIsRefusedUnread) {
  write_bytes(in / "huge.ppm", "P6 1 1 255\n");
  ASSERT_EQ(::truncate((in / "huge.ppm").c_str(), off_t{3} << 30), 0);  // 3 GiB, sparse
  expect_reported(in / "huge.ppm", "the file is 3221225472 bytes, more than any image within the pixel limit can need");
}

TEST(ReliabilityUsage, RawStreamSizeOverTheLimitIsAUsageError) {
  const CommandResult run = imgpipe_cmd("stream --input - --size 20000x20000 --output - --ops flip=h < /dev/null");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "--size 20000x20000 is 400000000 pixels a frame, more than the limit")) << run.output;
  if (!some_backend_usable()) return;  // the rest needs an engine
  EXPECT_EQ(imgpipe_cmd("stream --input - --size 20000x20000 --output - --ops flip=h --max-pixels 400000000 < /dev/null")
                .exit_code,
            1)
      << "within a raised limit, an empty input is just empty";
}

TEST(ReliabilityStream, VideoDeclaringMoreThanTheLimitIsRefusedBeforeDecoding) {
  if (!io::has_opencv_codecs() && !io::ffmpeg_video_decoding_unavailable().empty()) {
    GTEST_SKIP() << "this build decodes no video on the CPU (no FFmpeg libraries, no OpenCV)";
  }
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  const CommandResult run = imgpipe_cmd("stream --input " + quoted(fs::path(IMGPIPE_DATA_DIR) / "video/clip.mp4") +
                                        " --output " + quoted(dir.path() / "out.mp4") + " --ops flip=h --max-pixels 100");
  EXPECT_EQ(run.exit_code, 1) << "as for any frame over the limit\n" << run.output;
  EXPECT_TRUE(contains(run.output, "exceeds the limit of 100 pixels (the frame size the video declares")) << run.output;
  EXPECT_TRUE(contains(run.output, "; --max-pixels or IMGPIPE_MAX_PIXELS raises the limit")) << run.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out.mp4"));
}

// ---------------------------------------------------------------------------------------------------------
// Bad arguments: a clear usage error, exit 2, nothing written

void expect_usage_error(const std::string& arguments, const std::string& message, const fs::path& must_not_exist) {
  const CommandResult run = imgpipe_cmd(arguments);
  EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
  EXPECT_TRUE(contains(run.output, message)) << "expected '" << message << "' in:\n" << run.output;
  EXPECT_FALSE(fs::exists(must_not_exist)) << arguments;
}

TEST(ReliabilityUsage, BadOpsAreUsageErrorsNamingTheToken) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const std::string batch = "batch " + quoted(photo_folder()) + " " + quoted(out) + " --ops ";
  expect_usage_error(batch + "'flip=h,blur=3'", "bad op 'blur=3': expected one of resize,", out);
  expect_usage_error(batch + "resize=0x0", "bad op 'resize=0x0'", out);
  expect_usage_error(batch + "resize=-5x10", "bad op 'resize=-5x10'", out);
  expect_usage_error(batch + "resize=70000x10", "bad op 'resize=70000x10'", out);
  expect_usage_error(batch + "box=4", "bad op 'box=4'", out);
  expect_usage_error(batch + "gaussian=6:1.0", "bad op 'gaussian=6:1.0'", out);
  expect_usage_error(batch + "gaussian=33", "bad op 'gaussian=33'", out);
  expect_usage_error(batch + "''", "--ops", out);
}

TEST(ReliabilityUsage, BadRawSizesAreUsageErrors) {
  for (const char* size : {"0x0", "-3x4", "4x-3", "70000x1", "12", "x", "4x4x4"}) {
    const CommandResult run =
        imgpipe_cmd(std::string("stream --input - --size '") + size + "' --output - --ops flip=h < /dev/null");
    EXPECT_EQ(run.exit_code, 2) << size << run.output;
    EXPECT_TRUE(contains(run.output, "--size")) << size << run.output;
  }
}

TEST(ReliabilityUsage, OutputFolderThroughALinkIntoTheInputIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path() / "in");
  io::write_image(dir.path() / "in" / "a.ppm", testing::random_image({4, 4}, 1));
  fs::create_directory_symlink("in", dir.path() / "alias");
  expect_usage_error("batch " + quoted(dir.path() / "in") + " " + quoted(dir.path() / "alias" / "out") + " --ops flip=h",
                     "is the input folder", dir.path() / "in" / "out");
}

// A link inside the output folder that leads back into the input folder: the outputs that would go through it
// are refused by name, and the input under it is left as it was, even with --overwrite.
TEST(ReliabilityUsage, AnOutputFolderLinkIntoTheInputIsNeverWrittenThrough) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  const fs::path input = dir.path() / "in" / "sub" / "a.ppm";
  fs::create_directories(input.parent_path());
  io::write_image(input, testing::random_image({4, 4}, 1));
  io::write_image(dir.path() / "in" / "b.ppm", testing::random_image({4, 4}, 2));
  fs::create_directories(dir.path() / "out");
  fs::create_directory_symlink("../in/sub", dir.path() / "out" / "sub");
  const std::string before = read_text(input);
  const CommandResult run = imgpipe_cmd("batch " + quoted(dir.path() / "in") + " " + quoted(dir.path() / "out") +
                                        " --ops flip=h --overwrite");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, (dir.path() / "out" / "sub" / "a.ppm").string() + ": not written: its folder " +
                                       (dir.path() / "out" / "sub").string() + " leads into the input folder"))
      << run.output;
  EXPECT_EQ(read_text(input), before);
  EXPECT_TRUE(fs::exists(dir.path() / "out" / "b.ppm")) << "the other files are written";
}

// On a file system without hard links or renameat2's flags (FAT, exFAT, SMB), outputs are still written under
// their names, and an existing one is still kept.
TEST_F(Reliability, OutputsAreWrittenOnAFileSystemWithoutHardLinks) {
  TempDir dir;
  fs::create_directories(dir.path() / "in");
  io::write_image(dir.path() / "in" / "a.ppm", testing::random_image({4, 4}, 1));
  io::write_image(dir.path() / "in" / "b.ppm", testing::random_image({4, 4}, 2));
  write_bytes(dir.path() / "out" / "b.ppm", "the user's file");
  const std::string environment =
      "LD_PRELOAD=" + quoted(NO_HARD_LINKS_LIBRARY) + " ASAN_OPTIONS=verify_asan_link_order=0";
  const CommandResult run = imgpipe_cmd(
      "batch " + quoted(dir.path() / "in") + " " + quoted(dir.path() / "out") + " --ops flip=h", environment);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "1 done, 1 failed")) << run.output;
  EXPECT_TRUE(contains(run.output, "output " + (dir.path() / "out" / "b.ppm").string() + " exists")) << run.output;
  EXPECT_EQ(io::read_image(dir.path() / "out" / "a.ppm").image.size(), (Size{4, 4}));
  EXPECT_EQ(read_text(dir.path() / "out" / "b.ppm"), "the user's file");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path() / "out")) ++files;
  EXPECT_EQ(files, 2u) << "no temporary left";
}

TEST(ReliabilityUsage, OutputFolderThatCannotBeCreated) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend (the folder is created after the backend)";
  TempDir dir;
  write_bytes(dir.path() / "file", "a regular file");
  expect_usage_error("batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "file" / "out") + " --ops flip=h",
                     "cannot create the output folder '" + (dir.path() / "file" / "out").string() + "'",
                     dir.path() / "file" / "out");
}

TEST(ReliabilityUsage, AnEmptyOutputFolderNameIsAUsageError) {
  const CommandResult run = imgpipe_cmd("batch " + quoted(photo_folder()) + " '' --ops flip=h");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "OUTPUT_DIR: an empty folder name")) << run.output;
}

// A bad IMGPIPE_MAX_PIXELS is named as the environment's, not blamed on a --max-pixels that was not given.
TEST(ReliabilityUsage, ABadMaxPixelsFromTheEnvironmentIsNamedAsSuch) {
  TempDir dir;
  const std::string batch = "batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "out") + " --ops flip=h";
  const CommandResult run = imgpipe_cmd(batch, "IMGPIPE_MAX_PIXELS=lots");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output,
                       "IMGPIPE_MAX_PIXELS='lots' in the environment: expected a whole number of pixels "
                       "from 1 to 17179869184"))
      << run.output;
  // Whole numbers in range only, whichever CLI11 the build has (2.4 and later would drop a value its check refuses).
  for (const char* value : {"0", "-5", "+5", "' 5'", "1e9", "17179869185", "99999999999999999999", "''"}) {
    const CommandResult bad = imgpipe_cmd(batch, std::string("IMGPIPE_MAX_PIXELS=") + value);
    EXPECT_EQ(bad.exit_code, 2) << value << ": " << bad.output;
    EXPECT_TRUE(contains(bad.output, "in the environment: expected a whole number of pixels")) << bad.output;
  }
  const CommandResult flag = imgpipe_cmd(batch + " --max-pixels 0", "IMGPIPE_MAX_PIXELS=lots");
  EXPECT_TRUE(contains(flag.output, "--max-pixels: Value 0 not in range")) << flag.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

TEST(ReliabilityUsage, OverwriteAndSkipExistingContradict) {
  TempDir dir;
  expect_usage_error("batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "out") +
                         " --ops flip=h --overwrite --skip-existing",
                     "--overwrite excludes --skip-existing", dir.path() / "out");
}

TEST(ReliabilityUsage, MissingInputs) {
  TempDir dir;
  expect_usage_error("batch " + quoted(dir.path() / "nope") + " " + quoted(dir.path() / "out") + " --ops flip=h",
                     "does not exist", dir.path() / "out");
  expect_usage_error("stream --input " + quoted(dir.path() / "nope.mp4") + " --output " +
                         quoted(dir.path() / "out.mp4") + " --ops flip=h",
                     "--input '" + (dir.path() / "nope.mp4").string() + "' does not exist", dir.path() / "out.mp4");
  fs::create_directories(dir.path() / "empty");
  expect_usage_error("batch " + quoted(dir.path() / "empty") + " " + quoted(dir.path() / "out") + " --ops flip=h",
                     "no images", dir.path() / "out");
}

// ---------------------------------------------------------------------------------------------------------
// Streams

TEST(ReliabilityStream, ZeroFrameInput) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  const CommandResult run =
      imgpipe_cmd("stream --input - --size 4x4 --output - --ops flip=h --timestamps " +
                  quoted(dir.path() / "times.txt") + " < /dev/null > " + quoted(dir.path() / "out.rgb"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "no frames in stdin; nothing was written")) << run.output;
  EXPECT_EQ(fs::file_size(dir.path() / "out.rgb"), 0u);
  EXPECT_FALSE(fs::exists(dir.path() / "times.txt")) << "no frame, so no times";
}

TEST(ReliabilityStream, VideoThatCannotBeOpened) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  write_bytes(dir.path() / "notes.mp4", "this is text, not a video");
  const CommandResult run = imgpipe_cmd("stream --input " + quoted(dir.path() / "notes.mp4") + " --output " +
                                        quoted(dir.path() / "out.mp4") + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  // libavformat says why where NVDEC reads containers (a GPU, and a build with it), the CPU decoder otherwise.
  const std::string named = (dir.path() / "notes.mp4").string() + ": ";
  const bool cpu_decoder = io::has_opencv_codecs() || io::ffmpeg_video_decoding_unavailable().empty();
  EXPECT_TRUE(contains(run.output, named + "cannot be opened as a video container") ||
              contains(run.output, named + (cpu_decoder ? "cannot open as a video" : "this video file needs a build")))
      << run.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out.mp4"));
}

// A Matroska file cut short: its demuxer ends the stream as if it were whole, having logged the cut. The frames
// before the cut are written, a message names the file, and the exit code says the run was not clean.
TEST(ReliabilityStream, AVideoCutShortIsNamedAndItsFramesWritten) {
  if (const std::string why = io::ffmpeg_video_decoding_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  const std::string clip = read_text(fs::path(IMGPIPE_DATA_DIR) / "video/clip_vfr.mkv");
  const fs::path cut = dir.path() / "cut.mkv";
  write_bytes(cut, clip.substr(0, clip.size() * 6 / 10));
  const CommandResult run =
      imgpipe_cmd("stream --input " + quoted(cut) + " --output " + quoted(dir.path() / "out.mkv") + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, cut.string() + ": the container is damaged or cut short (FFmpeg's demuxer: "))
      << run.output;
  EXPECT_TRUE(contains(run.output, "frames may be missing")) << run.output;
  EXPECT_GT(fs::file_size(dir.path() / "out.mkv"), 0u);
}

// A FIFO (or a device) named by --timestamps is written into, never renamed over: with or without --overwrite,
// it is still a FIFO afterwards and its reader gets the times.
TEST(ReliabilityStream, TimestampsIntoAFifoAreWrittenIntoIt) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  const fs::path fifo = dir.path() / "times.fifo", got = dir.path() / "got.txt", frames = dir.path() / "in.rgb";
  write_bytes(frames, std::string(4 * 4 * 4 * 3, '\x40'));  // four 4x4 frames
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string overwrite : {"", " --overwrite"}) {
    // The reader gives up after 20 s, so that a run which never opens the FIFO cannot hang the test.
    const std::string script = "timeout 20 cat " + quoted(fifo) + " > " + quoted(got) + " & reader=$!; " +
                               quoted(IMGPIPE_BINARY) + " stream --input - --size 4x4 --output - --ops flip=h " +
                               "--timestamps " + quoted(fifo) + overwrite + " < " + quoted(frames) +
                               " > /dev/null; code=$?; wait $reader; exit $code";
    const CommandResult run = testing::run_command("sh", "-c " + quoted(fs::path(script)));
    EXPECT_EQ(run.exit_code, 0) << overwrite << "\n" << run.output;
    EXPECT_TRUE(fs::is_fifo(fifo)) << overwrite;
    EXPECT_EQ(read_text(got), "# timestamp format v2\n0.000\n33.333\n66.667\n100.000\n") << overwrite;
  }
}

TEST(ReliabilityStream, ShortLastRawFrameNamesTheFrameAndExitsOne) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  write_bytes(dir.path() / "in.rgb", std::string(3 * 12 + 7, '\x10'));
  const CommandResult run = imgpipe_cmd("stream --input - --size 2x2 --output - --ops flip=h < " +
                                        quoted(dir.path() / "in.rgb") + " > " + quoted(dir.path() / "out.rgb"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "stdin: frame 3 is short: 7 of 12 bytes")) << run.output;
  EXPECT_TRUE(contains(run.output, "3 frames written before the bad frame")) << run.output;
  EXPECT_EQ(fs::file_size(dir.path() / "out.rgb"), 36u);
}

TEST(ReliabilityStream, OutputOnAFullDevice) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here to stand in for a full disk";
  TempDir dir;
  write_bytes(dir.path() / "in.rgb", std::string(5 * 12, '\x10'));
  const CommandResult run = imgpipe_cmd("stream --input - --size 2x2 --output - --ops flip=h < " +
                                        quoted(dir.path() / "in.rgb") + " > /dev/full");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_TRUE(contains(run.output, "stdout: write failed: No space left on device")) << run.output;
}

using testing::VectorReader;

class CountingWriter final : public io::FrameWriter {
 public:
  void write(ConstFrameView, std::optional<double>) override { ++frames; }
  int frames = 0;
};

// A stream keeps one frame size: a change names the frame; the frames before it still come out. (A raw stream
// cannot change size; a video reported by OpenCV can, and every reader goes through the stream source.)
TEST(ReliabilityStream, FrameSizeChangeMidStreamNamesTheFrame) {
  const Chain chain = parse_chain("flip=h");
  std::vector<Image> frames = {Image({4, 4}), Image({4, 4}), Image({4, 4}), Image({5, 4}), Image({4, 4})};
  VectorReader inner(frames);
  io::FrameStreamSource source(inner, "clip.mp4", chain, io::kDefaultMaxPixels);
  class CopyBackend final : public Backend {
   public:
    std::string name() const override { return "copy"; }
    void set_chain(const Chain&) override {}
    void process(ConstFrameView in, FrameView out) override { std::memcpy(out.data, in.data, in.size.rgb_bytes()); }
  };
  const auto engine = make_backend_engine(std::make_unique<CopyBackend>(), chain, 2);
  CountingWriter writer;
  io::FrameStreamSink sink(writer);
  JobOptions options;
  options.stop_at_first_failure = true;
  const JobSummary summary = run_job(source, *engine, sink, options);
  ASSERT_TRUE(summary.first_failure.has_value()) << "a size change went through";
  EXPECT_EQ(summary.first_failure->stage, Stage::read);
  try {
    std::rethrow_exception(summary.first_failure->error);
  } catch (const io::IoError& e) {
    EXPECT_EQ(std::string(e.what()), "clip.mp4: frame 3 is 5x4 but the stream began at 4x4; a stream keeps one frame size");
  }
  EXPECT_EQ(writer.frames, 3);
  EXPECT_EQ(summary.done, 3u);
}

TEST(ReliabilityStream, AFrameTheChainBlowsUpPastTheLimitNamesTheFrame) {
  std::vector<Image> frames = {Image({4, 4})};
  VectorReader inner(frames);
  io::FrameStreamSource source(inner, "stdin", parse_chain("resize=100x100"), 1000);
  try {
    source.next();
    FAIL() << "went past the limit";
  } catch (const io::PixelLimitError& e) {
    EXPECT_TRUE(contains(e.what(), "stdin: frame 0: the chain makes a 100x100 frame that has 10000 pixels")) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Faults: resuming, signals, unwritable outputs, full disks

TEST_F(Reliability, SkipExistingResumesAnInterruptedBatch) {
  const std::string batch = "batch " + quoted(in) + " " + quoted(out) + " --ops flip=h --format ppm";
  ASSERT_EQ(imgpipe_cmd(batch).exit_code, 0);
  std::map<fs::path, std::vector<std::uint8_t>> kept;
  std::vector<fs::path> outputs;
  for (const auto& entry : fs::directory_iterator(out)) outputs.push_back(entry.path());
  std::sort(outputs.begin(), outputs.end());
  ASSERT_GE(outputs.size(), 3u);
  fs::remove(outputs[0]);  // as if the run had stopped before these two
  fs::remove(outputs[2]);
  for (const fs::path& path : outputs)
    if (fs::exists(path)) {
      write_bytes(path, "kept");  // a skipped output is not even read: its bytes stay whatever they are
      kept[path] = testing::file_bytes(path);
    }
  const CommandResult run = imgpipe_cmd(batch + " --skip-existing");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "2 done, 0 failed, " + std::to_string(outputs.size() - 2) + " skipped (output exists)"))
      << run.output;
  for (const auto& [path, bytes] : kept) EXPECT_EQ(testing::file_bytes(path), bytes) << path;
  EXPECT_GT(io::read_ppm(outputs[0]).size().pixels(), 0u) << "restored";
  EXPECT_GT(io::read_ppm(outputs[2]).size().pixels(), 0u) << "restored";
}

// Many images, so a signal sent when the first output appears lands while the batch is running.
fs::path make_many(const fs::path& root, int count) {
  const fs::path folder = root / "many";
  fs::create_directories(folder);
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "img%04d.ppm", i);
    io::write_image(folder / name, testing::random_image({256, 256}, static_cast<std::uint32_t>(i)));
  }
  return folder;
}

bool wait_for_first_output(const fs::path& folder, pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);  // a hang guard, not a timing check
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(folder)) {
      for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().filename().string()[0] != '.') return true;
      }
    }
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) return false;  // (reaped: the caller must not wait again)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

void signal_a_running_batch(int signal_number) {
  TempDir dir;
  const fs::path many = make_many(dir.path(), 200), out = dir.path() / "out";
  SpawnOptions options;
  options.stderr_path = dir.path() / "stderr.txt";
  const pid_t child = spawn_imgpipe({"batch", many.string(), out.string(), "--ops", "gaussian=31,box=31,gaussian=31",
                                     "--jobs", "1", "--format", "ppm"},
                                    options);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(wait_for_first_output(out, child)) << read_text(options.stderr_path);
  ::kill(child, signal_number);
  const int exit_code = wait_for(child);
  const std::string err = read_text(options.stderr_path);
  if (exit_code == 0) GTEST_SKIP() << "the batch finished before the signal arrived; nothing to check\n" << err;
  EXPECT_EQ(exit_code, 128 + signal_number) << err;
  EXPECT_TRUE(contains(err, std::string("interrupted by ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM"))) << err;
  EXPECT_TRUE(contains(err, " done, 0 failed")) << err;  // the summary
  EXPECT_TRUE(temporaries_in(out).empty());
  std::size_t outputs = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    ++outputs;
    EXPECT_EQ(io::read_ppm(entry.path()).size(), (Size{256, 256})) << entry.path() << " is not whole";
  }
  EXPECT_GE(outputs, 1u);
  EXPECT_TRUE(contains(err, std::to_string(outputs) + " done, 0 failed")) << "every file counted done is there\n" << err;
}

TEST_F(Reliability, SigintFinishesInFlightLeavesNoTemporariesAndExits130) { signal_a_running_batch(SIGINT); }

TEST_F(Reliability, SigtermExits143) { signal_a_running_batch(SIGTERM); }

// Deterministic: stdin stays open, so only the signal can end the run; imgpipe is blocked reading it.
TEST(ReliabilityStream, SigintStopsARawStreamBlockedOnItsInput) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  int input[2], output[2];
  ASSERT_EQ(::pipe2(input, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(output, O_CLOEXEC), 0);
  SpawnOptions options;
  options.stdin_fd = input[0];
  options.stdout_fd = output[1];
  options.stderr_path = dir.path() / "stderr.txt";
  const pid_t child =
      spawn_imgpipe({"stream", "--input", "-", "--size", "2x2", "--output", "-", "--ops", "flip=h", "--slots", "3"},
                    options);
  ::close(input[0]);
  ::close(output[1]);
  const std::string frames(4 * 12 + 5, '\x22');  // four frames and the start of a fifth
  ASSERT_EQ(::write(input[1], frames.data(), frames.size()), static_cast<ssize_t>(frames.size()));
  std::string out;
  char buffer[256];
  while (out.size() < 12) {  // the first frame out: the handlers are installed, the reader is running
    const ssize_t n = ::read(output[0], buffer, sizeof buffer);
    ASSERT_GT(n, 0) << read_text(options.stderr_path);
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::kill(child, SIGINT);
  for (ssize_t n; (n = ::read(output[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(n));
  const int exit_code = wait_for(child);
  ::close(input[1]);
  ::close(output[0]);
  const std::string err = read_text(options.stderr_path);
  EXPECT_EQ(exit_code, 130) << err;
  EXPECT_TRUE(contains(err, "interrupted by SIGINT: stopped reading stdin")) << err;
  EXPECT_EQ(out.size() % 12, 0u) << "whole frames only";
  EXPECT_TRUE(contains(err, std::to_string(out.size() / 12) + " frames written")) << err;
}

// SIGINT to `child`, then its exit code: -1 where a signal ended it, -2 where it still ran 20 s later (then
// killed).
int interrupt_and_wait(pid_t child) {
  ::kill(child, SIGINT);
  for (int waited_ms = 0; waited_ms < 20000; waited_ms += 10) {  // a hang guard
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child, SIGKILL);
  wait_for(child);
  return -2;
}

// A video read from a FIFO that stalls (a live feed), named as a path or as a file: URL: SIGINT stops it at once,
// and the frames read so far are written as a whole file, as for raw frames on stdin. A stop before the feed
// starts writes nothing.
TEST(ReliabilityStream, SigintStopsAVideoFifoThatStalls) {
  if (const std::string why = io::ffmpeg_video_decoding_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder";
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  for (const bool fed : {true, false}) {
    const fs::path fifo = dir.path() / (fed ? "feed" : "silent"), out = dir.path() / (fed ? "fed.mkv" : "silent.mkv");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string input = fed ? fifo.string() : "file:" + fifo.string();  // FFmpeg's URL for the same FIFO
    SpawnOptions options;
    options.stderr_path = dir.path() / "stderr.txt";
    const pid_t child =
        spawn_imgpipe({"stream", "--input", input, "--output", out.string(), "--ops", "flip=h"}, options);
    ASSERT_GT(child, 0);
    const int feed = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // once imgpipe has opened it
    ASSERT_GE(feed, 0);
    if (fed) {
      const std::string clip = read_text(fs::path(IMGPIPE_DATA_DIR) / "video/clip_vfr.mkv");
      ASSERT_EQ(::write(feed, clip.data(), clip.size()), static_cast<ssize_t>(clip.size()));
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));  // the feed stalls, open
    const int exit_code = interrupt_and_wait(child);
    ::close(feed);
    const std::string err = read_text(options.stderr_path);
    EXPECT_EQ(exit_code, 130) << err;
    if (fed) {
      EXPECT_TRUE(contains(err, "interrupted by SIGINT: stopped reading " + input + " after ")) << err;
      EXPECT_TRUE(io::open_video_reader(out)->next_size().has_value()) << "a whole file with the frames read";
    } else {
      EXPECT_TRUE(contains(err, "interrupted by SIGINT while waiting for " + input + " to start")) << err;
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

// One connection to a listening socket on 127.0.0.1: a live source serving a stream at tcp://127.0.0.1:PORT.
class LoopbackServer {
 public:
  LoopbackServer() : listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_, 1) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error(std::string("a loopback socket: ") + std::strerror(errno));
    }
    url_ = "tcp://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  ~LoopbackServer() {
    if (connection_ >= 0) ::close(connection_);
    ::close(listener_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  const std::string& url() const { return url_; }
  // Waits up to 20 s for the client; false where none came.
  bool accept_client() {
    pollfd waiting{listener_, POLLIN, 0};
    if (::poll(&waiting, 1, 20000) != 1) return false;
    connection_ = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    return connection_ >= 0;
  }
  bool send(const std::string& bytes) {
    return ::send(connection_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

 private:
  int listener_;
  int connection_ = -1;
  std::string url_;
};

// A video from a URL whose source stalls: SIGINT stops it at once, as for a FIFO, whichever decoder was free to
// take it (NVDEC's path leaves URLs to the CPU decoder, whose network waits the stop reaches).
TEST(ReliabilityStream, SigintStopsAVideoUrlThatStalls) {
  if (const std::string why = io::ffmpeg_video_decoding_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder";
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  for (const bool fed : {true, false}) {
    LoopbackServer server;
    const fs::path out = dir.path() / (fed ? "fed.mkv" : "silent.mkv");
    SpawnOptions options;
    options.stderr_path = dir.path() / "stderr.txt";
    const pid_t child =
        spawn_imgpipe({"stream", "--input", server.url(), "--output", out.string(), "--ops", "flip=h"}, options);
    ASSERT_GT(child, 0);
    const bool connected = server.accept_client();
    EXPECT_TRUE(connected) << "imgpipe did not connect to " << server.url();
    if (connected && fed) {
      EXPECT_TRUE(server.send(read_text(fs::path(IMGPIPE_DATA_DIR) / "video/clip_vfr.mkv")));
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));  // the source stalls, connected
    const int exit_code = interrupt_and_wait(child);
    const std::string err = read_text(options.stderr_path);
    EXPECT_EQ(exit_code, 130) << err;
    if (fed) {
      EXPECT_TRUE(contains(err, "interrupted by SIGINT: stopped reading " + server.url() + " after ")) << err;
      EXPECT_TRUE(io::open_video_reader(out)->next_size().has_value()) << "a whole file with the frames read";
    } else {
      EXPECT_TRUE(contains(err, "interrupted by SIGINT while waiting for " + server.url() + " to start")) << err;
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

TEST_F(Reliability, AnOutputSubfolderThatIsAFileFailsOnlyItsFiles) {
  fs::create_directories(in / "nested");
  io::write_image(in / "nested" / "a.ppm", testing::random_image({4, 4}, 1));
  write_bytes(out / "nested", "a regular file where the folder should be");
  const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, (out / "nested").string() + ": cannot create the folder")) << run.output;
  EXPECT_TRUE(contains(run.output, std::to_string(photo_names().size()) + " done, 1 failed")) << run.output;
  EXPECT_TRUE(temporaries_in(out).empty());
}

TEST_F(Reliability, ReadOnlyOutputFolderFailsEveryFileClearlyAndEnds) {
  const Unprivileged user = unprivileged();
  if (!user.skip_reason.empty()) GTEST_SKIP() << user.skip_reason;
  fs::create_directories(out);
  ::chmod(out.c_str(), 0555);
  if (user.prefix.empty() && ::access(out.c_str(), W_OK) == 0) GTEST_SKIP() << "this user writes into read-only folders";
  const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h", user.shell_prefix);
  ::chmod(out.c_str(), 0755);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  for (const fs::path& name : photo_names()) {
    EXPECT_TRUE(contains(run.output, (out / name).string() +
                                         ": cannot create a temporary file in its folder: Permission denied"))
        << run.output;
  }
  EXPECT_TRUE(contains(run.output, "0 done, " + std::to_string(photo_names().size()) + " failed")) << run.output;
}

// A full disk, as the file-size limit: write() fails midway through the big outputs (EFBIG, as ENOSPC would);
// those files are reported, their temporaries removed, the small output written. imgpipe itself ignores
// SIGXFSZ (the test does not), or the limit would kill it.
TEST_F(Reliability, AWriteFailingMidwayFailsThatFileAndLeavesNoTemporary) {
  io::write_image(in / "tiny.ppm", testing::random_image({4, 4}, 2));
  SpawnOptions options;
  options.stderr_path = dir.path() / "stderr.txt";
  options.file_size_limit = 4096;
  const pid_t child = spawn_imgpipe({"batch", in.string(), out.string(), "--ops", "flip=h", "--format", "ppm"}, options);
  const int exit_code = wait_for(child);
  const std::string err = read_text(options.stderr_path);
  EXPECT_EQ(exit_code, 1) << err;
  for (const fs::path& name : photo_names()) {
    const fs::path output = out / fs::path(name).replace_extension(".ppm");
    EXPECT_TRUE(contains(err, output.string() + ": cannot write: File too large")) << err;
    EXPECT_FALSE(fs::exists(output));
  }
  EXPECT_TRUE(contains(err, "1 done, " + std::to_string(photo_names().size()) + " failed")) << err;
  EXPECT_EQ(io::read_ppm(out / "tiny.ppm").size(), (Size{4, 4}));
  EXPECT_TRUE(temporaries_in(out).empty());
}

// ---------------------------------------------------------------------------------------------------------
// GPU faults through the batch, against engine test doubles (no GPU needed): the handling logic

// Captures std::cerr (the batch's reports and summary) for the test's duration.
class CaptureStderr {
 public:
  CaptureStderr() : old_(std::cerr.rdbuf(buffer_.rdbuf())) {}
  ~CaptureStderr() { std::cerr.rdbuf(old_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::stringstream buffer_;
  std::streambuf* old_;
};

// Slots in host memory, each frame computed by the reference: the base of the fault-injecting test engines.
class ReferenceTestEngine : public Engine {
 public:
  ReferenceTestEngine(const Chain& chain, int slots) : Engine(slots), buffers_(static_cast<std::size_t>(slots)) {
    set_chain(chain);
  }

 protected:
  void prepare(FrameSlot& slot, Size in, Size out) override {
    auto& b = buffers_[static_cast<std::size_t>(slot.index)];
    b.input.resize(in.rgb_bytes());
    b.output.resize(out.rgb_bytes());
    slot.input = {b.input.data(), in};
    slot.output = {b.output.data(), out};
  }
  void start(FrameSlot& slot) override {
    const Image in(slot.input.size, std::vector<std::uint8_t>(slot.input.data, slot.input.data + slot.input.size.rgb_bytes()));
    const Image result = reference::apply(chain(), in);
    std::memcpy(slot.output.data, result.data(), result.bytes());
  }

 private:
  struct Buffers {
    std::vector<std::uint8_t> input, output;
  };
  std::vector<Buffers> buffers_;
};

// Fails on cue the way the GPU ring engine does: cudaMalloc of a slot's buffers (CudaBadAlloc from acquire) or
// a sticky fault reported when a frame is waited for.
class FaultyEngine final : public ReferenceTestEngine {
 public:
  struct Faults {
    std::size_t bad_alloc_above_pixels = ~std::size_t{0};
    std::optional<std::uint64_t> sticky_at_frame;      // sequence number whose wait fails, and every wait after
    std::optional<std::uint64_t> signal_at_submission;  // request_stop(SIGINT) when this frame is submitted
  };
  FaultyEngine(const Chain& chain, int slots, Faults faults) : ReferenceTestEngine(chain, slots), faults_(faults) {}
  std::string describe() const override { return "faulty test engine"; }

 protected:
  void prepare(FrameSlot& slot, Size in, Size out) override {
    if (in.pixels() > faults_.bad_alloc_above_pixels) {
      throw cuda::CudaBadAlloc(cudaErrorMemoryAllocation, "cudaMalloc(&p, bytes) failed: cudaErrorMemoryAllocation "
                                                          "(out of memory) at a test double");
    }
    ReferenceTestEngine::prepare(slot, in, out);
  }
  void start(FrameSlot& slot) override {
    if (faults_.signal_at_submission && slot.sequence == *faults_.signal_at_submission) app::request_stop(SIGINT);
    ReferenceTestEngine::start(slot);
  }
  void wait(FrameSlot& slot) override {
    if (faults_.sticky_at_frame && slot.sequence >= *faults_.sticky_at_frame) {
      throw cuda::CudaError(cudaErrorIllegalAddress, "cudaEventSynchronize(get()) failed: cudaErrorIllegalAddress "
                                                     "(an illegal memory access was encountered) at a test double");
    }
  }

 private:
  Faults faults_;
};

// Six PPMs (readable in any build), the fourth one large.
fs::path make_mixed(const fs::path& root) {
  const fs::path folder = root / "in";
  fs::create_directories(folder);
  for (int i = 0; i < 6; ++i) {
    const Size size = i == 3 ? Size{300, 200} : Size{16 + i, 12};
    io::write_image(folder / (numbered(i)), testing::random_image(size, static_cast<std::uint32_t>(i)));
  }
  return folder;
}

app::BatchOptions mixed_options(const fs::path& root) {
  app::BatchOptions options;
  options.input_dir = make_mixed(root);
  options.output_dir = root / "out";
  options.ops = "flip=h";
  options.jobs = 2;
  return options;
}

template <class Set>
FaultyEngine::Faults with(Set set) {
  FaultyEngine::Faults faults;
  set(faults);
  return faults;
}

app::EngineFactory faulty(FaultyEngine::Faults faults) {
  return [faults](const Chain& chain, const EngineOptions& engine_options) -> std::unique_ptr<Engine> {
    return std::make_unique<FaultyEngine>(chain, engine_options.slots, faults);
  };
}

TEST(ReliabilityGpuHandling, OutOfMemoryOnOneImageFailsOnlyThatImage) {
  TempDir dir;
  const app::BatchOptions options = mixed_options(dir.path());
  CaptureStderr err;
  const int code = app::run_batch(options, faulty(with([](auto& f) { f.bad_alloc_above_pixels = 10000; })));
  EXPECT_EQ(code, app::kExitSomeFailed) << err.text();
  EXPECT_TRUE(contains(err.text(), (options.input_dir / "f3.ppm").string() +
                                       ": not enough GPU memory for this 300x200 image (cudaMalloc"))
      << err.text();
  EXPECT_TRUE(contains(err.text(), "skipped, the batch goes on")) << err.text();
  EXPECT_TRUE(contains(err.text(), "5 done, 1 failed")) << err.text();
  for (int i : {0, 1, 2, 4, 5}) {
    const Image source = io::read_ppm(options.input_dir / (numbered(i)));
    EXPECT_EQ(testing::max_abs_diff(io::read_ppm(options.output_dir / (numbered(i))),
                                    reference::apply(parse_chain("flip=h"), source)),
              0);
  }
  EXPECT_FALSE(fs::exists(options.output_dir / "f3.ppm"));
}

// One slot, so that the frames are submitted in file order and the fault hits the third file; with more, frames
// complete in any order and which ones finish before the fault is up to the threads (Job's tests cover that).
TEST(ReliabilityGpuHandling, StickyErrorStopsTheRunWithExitCode4) {
  TempDir dir;
  app::BatchOptions options = mixed_options(dir.path());
  options.slots = 1;
  CaptureStderr err;
  const int code = app::run_batch(options, faulty(with([](auto& f) { f.sticky_at_frame = 2; })));
  EXPECT_EQ(code, app::kExitDevice) << err.text();
  EXPECT_EQ(code, 4);
  EXPECT_TRUE(contains(err.text(), "the GPU failed: cudaEventSynchronize(get()) failed: cudaErrorIllegalAddress"))
      << err.text();
  EXPECT_TRUE(contains(err.text(), "the run stopped")) << err.text();
  EXPECT_TRUE(contains(err.text(), "2 done,")) << err.text();
  EXPECT_TRUE(fs::exists(options.output_dir / "f0.ppm"));
  EXPECT_TRUE(fs::exists(options.output_dir / "f1.ppm"));
  for (int i = 2; i < 6; ++i) EXPECT_FALSE(fs::exists(options.output_dir / (numbered(i)))) << i;
  EXPECT_TRUE(temporaries_in(options.output_dir).empty());
}

TEST(ReliabilityGpuHandling, ASignalStopsReadingAndFinishesWhatIsInFlight) {
  TempDir dir;
  app::BatchOptions options = mixed_options(dir.path());
  options.slots = 2;
  app::clear_stop_for_tests();
  CaptureStderr err;
  const int code = app::run_batch(options, faulty(with([](auto& f) { f.signal_at_submission = 1; })));
  app::clear_stop_for_tests();
  EXPECT_EQ(code, 130) << err.text();
  EXPECT_TRUE(contains(err.text(), "interrupted by SIGINT: no new files were started; files in flight were finished"))
      << err.text();
  EXPECT_TRUE(contains(err.text(), "not started")) << err.text();
  EXPECT_TRUE(fs::exists(options.output_dir / "f0.ppm"));
  EXPECT_TRUE(fs::exists(options.output_dir / "f1.ppm")) << "the frame submitted as the signal came is finished";
  EXPECT_FALSE(fs::exists(options.output_dir / "f5.ppm")) << "at most slots + 1 files can have been started";
  EXPECT_TRUE(temporaries_in(options.output_dir).empty());
}

// Points one of this process's descriptors (stdin, stdout) at a file for the test's duration.
class RedirectFd {
 public:
  RedirectFd(int fd, const fs::path& path, int flags) : fd_(fd), saved_(::dup(fd)) {
    std::fflush(nullptr);
    const int file = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    ::dup2(file, fd);
    ::close(file);
  }
  ~RedirectFd() {
    std::fflush(nullptr);
    ::dup2(saved_, fd_);
    ::close(saved_);
  }

 private:
  int fd_;
  int saved_;
};

TEST(ReliabilityGpuHandling, StickyErrorStopsAStreamWithExitCode4) {
  TempDir dir;
  write_bytes(dir.path() / "in.rgb", std::string(5 * 12, '\x30'));  // five 2x2 frames
  app::StreamOptions options;
  options.input = "-";
  options.output = "-";
  options.size = "2x2";
  options.ops = "flip=h";
  options.slots = 1;
  int code = -1;
  CaptureStderr err;
  {
    RedirectFd in(STDIN_FILENO, dir.path() / "in.rgb", O_RDONLY);
    RedirectFd out(STDOUT_FILENO, dir.path() / "out.rgb", O_WRONLY | O_CREAT | O_TRUNC);
    code = app::run_stream_command(options, faulty(with([](auto& f) { f.sticky_at_frame = 2; })));
  }
  EXPECT_EQ(code, app::kExitDevice) << err.text();
  EXPECT_TRUE(contains(err.text(), "the GPU failed: cudaEventSynchronize(get()) failed: cudaErrorIllegalAddress"))
      << err.text();
  EXPECT_TRUE(contains(err.text(), "2 frames written before the GPU failed")) << err.text();
  EXPECT_EQ(fs::file_size(dir.path() / "out.rgb"), 24u);
}

// ---------------------------------------------------------------------------------------------------------
// The same faults on a real GPU (the H200); these skip without a CUDA device.

TEST(ReliabilityGpu, RealOutOfMemoryOnOneImageFailsOnlyThatImage) {
  if (!cuda::device_available()) GTEST_SKIP() << "needs a CUDA device";
  TempDir dir;
  const fs::path in = dir.path() / "in";
  fs::create_directories(in);
  io::write_image(in / "a.ppm", testing::random_image({64, 64}, 1));
  io::write_image(in / "b_huge.ppm", testing::random_image({9000, 9000}, 2));  // 243 MB in, 243 MB out on the device
  io::write_image(in / "c.ppm", testing::random_image({64, 64}, 3));
  app::BatchOptions options;
  options.input_dir = in;
  options.output_dir = dir.path() / "out";
  options.ops = "flip=h";
  options.backend = "optimized";
  options.jobs = 1;
  options.slots = 1;  // one slot: the huge frame must grow the same buffers the small ones use
  // Leave 256 MiB free: the small frames fit, the huge one cannot (a real cudaMalloc failure, not a double).
  // Taken in pieces (1 GiB, then 64 MiB), so no single huge cudaMalloc has to succeed.
  constexpr std::size_t kHeadroom = std::size_t{256} << 20;
  std::vector<cuda::DeviceBuffer> hog;
  for (const std::size_t piece : {std::size_t{1} << 30, std::size_t{64} << 20}) {
    while (true) {
      std::size_t free = 0, total = 0;
      ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
      if (free < kHeadroom + piece) break;
      hog.emplace_back(piece);
    }
  }
  CaptureStderr err;
  const int code = app::run_batch(options);
  EXPECT_EQ(code, app::kExitSomeFailed) << err.text();
  EXPECT_TRUE(contains(err.text(), (in / "b_huge.ppm").string() + ": not enough GPU memory for this 9000x9000 image"))
      << err.text();
  EXPECT_TRUE(contains(err.text(), "2 done, 1 failed")) << err.text();
  EXPECT_TRUE(fs::exists(options.output_dir / "a.ppm"));
  EXPECT_TRUE(fs::exists(options.output_dir / "c.ppm"));
}

// A kernel really faults (illegal address). The CUDA context is broken for the rest of the process, so the
// batch runs in a death-test child, re-executed fresh ("threadsafe"), which exits with run_batch's code.
class IllegalAddressEngine final : public ReferenceTestEngine {
 public:
  IllegalAddressEngine(const Chain& chain, int slots)
      : ReferenceTestEngine(chain, slots), stream_(cuda::Stream::create()) {}
  std::string describe() const override { return "engine whose third frame faults on the GPU"; }

 protected:
  void start(FrameSlot& slot) override {
    if (slot.sequence == 2) imgpipe_test_launch_illegal_write(stream_.get());
    ReferenceTestEngine::start(slot);
  }
  void wait(FrameSlot&) override { stream_.synchronize(); }

 private:
  cuda::Stream stream_;
};

TEST(ReliabilityGpu, RealStickyErrorStopsTheRunWithExitCode4) {
  if (!cuda::device_available()) GTEST_SKIP() << "needs a CUDA device";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        TempDir dir;
        app::BatchOptions options = mixed_options(dir.path());
        options.slots = 1;
        const int code = app::run_batch(options, [](const Chain& chain, const EngineOptions& engine_options) {
          return std::unique_ptr<Engine>(std::make_unique<IllegalAddressEngine>(chain, engine_options.slots));
        });
        const bool first_two = fs::exists(options.output_dir / "f0.ppm") && fs::exists(options.output_dir / "f1.ppm");
        const bool none_after = !fs::exists(options.output_dir / "f2.ppm") && !fs::exists(options.output_dir / "f5.ppm");
        std::cerr.flush();
        ::_exit(first_two && none_after && temporaries_in(options.output_dir).empty() ? code : 99);
      },
      ::testing::ExitedWithCode(4), "the GPU failed: .*cudaErrorIllegalAddress");
}


// ---------------------------------------------------------------------------------------------------------
// Outputs that must never cost the user a file (docs/reliability.md, "Never lose a file")

// A raw rgb24 file of `frames` frames of `size`, and a video made from it by imgpipe itself at `fps`.
fs::path make_raw(const fs::path& path, Size size, int frames) {
  std::string bytes;
  for (int i = 0; i < frames; ++i) {
    const Image frame = testing::random_image(size, static_cast<std::uint32_t>(i));
    bytes.append(reinterpret_cast<const char*>(frame.data()), size.rgb_bytes());
  }
  write_bytes(path, bytes);
  return path;
}

fs::path make_video(const fs::path& path, int frames, double fps) {
  const fs::path raw = make_raw(path.parent_path() / (path.filename().string() + ".rgb"), {64, 48}, frames);
  char rate[32];
  std::snprintf(rate, sizeof rate, "%g", fps);
  const CommandResult run = imgpipe_cmd("stream --input - --size 64x48 --fps " + std::string(rate) + " --output " +
                                        quoted(path) + " --ops flip=h < " + quoted(raw));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  return path;
}

class StreamOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
    if (!io::has_opencv_codecs()) GTEST_SKIP() << "this build has no video support (no OpenCV)";
    input = make_video(dir.path() / "clip.avi", 12, 10);
    input_bytes = testing::file_bytes(input);
  }
  CommandResult stream(const std::string& output, const std::string& options = "", const std::string& prefix = "") {
    return imgpipe_cmd("stream --input " + quoted(input) + " --output " + output + " --ops flip=h " + options, prefix);
  }
  TempDir dir;
  fs::path input;
  std::vector<std::uint8_t> input_bytes;
};

TEST_F(StreamOutputs, AnOutputThatIsTheInputIsRefusedByAnyPath) {
  fs::create_symlink("clip.avi", dir.path() / "alias.avi");
  fs::create_hard_link(input, dir.path() / "hard.avi");
  for (const fs::path& output : {input, dir.path() / "." / "clip.avi", dir.path() / "alias.avi", dir.path() / "hard.avi"}) {
    const CommandResult run = stream(quoted(output), "--overwrite");
    EXPECT_EQ(run.exit_code, 2) << output << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "is the input")) << run.output;
    EXPECT_TRUE(contains(run.output, "would destroy the input")) << run.output;
    EXPECT_EQ(testing::file_bytes(input), input_bytes) << output;
  }
  // Raw input redirected from the output file, and stdout redirected onto the input file (appending).
  const fs::path raw = make_raw(dir.path() / "frames.rgb", {8, 8}, 3);
  const auto raw_bytes = testing::file_bytes(raw);
  CommandResult run = imgpipe_cmd("stream --input - --size 8x8 --output " + quoted(raw) + " --overwrite --ops flip=h < " +
                                  quoted(raw));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "is the input on stdin")) << run.output;
  run = stream("- >> " + quoted(input));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "stdout is the input file")) << run.output;
  EXPECT_EQ(testing::file_bytes(raw), raw_bytes);
  EXPECT_EQ(testing::file_bytes(input), input_bytes);
}

// FFmpeg opens a file: URL as the path after "file:", so such an input is that file to every check.
TEST_F(StreamOutputs, AFileUrlInputIsTheFileItNames) {
  const std::string url = "file://" + input.string();
  CommandResult run = imgpipe_cmd("stream --input " + quoted(fs::path(url)) + " --output " + quoted(input) +
                                  " --ops flip=h --overwrite");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "is the input '" + url + "' (the same file)")) << run.output;
  EXPECT_EQ(testing::file_bytes(input), input_bytes);
  run = imgpipe_cmd("stream --input " + quoted(fs::path("file:" + (dir.path() / "nope.avi").string())) + " --output " +
                    quoted(dir.path() / "out.mkv") + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "does not exist")) << run.output;
  run = imgpipe_cmd("stream --input " + quoted(fs::path(url)) + " --output " + quoted(dir.path() / "out.mkv") +
                    " --ops flip=h");
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

// --timestamps is written once the stream has run: a path it cannot take is refused before anything is opened.
TEST(ReliabilityStream, ATimestampsPathThatCannotBeWrittenIsRefusedBeforeTheStream) {
  TempDir dir;
  const fs::path raw = make_raw(dir.path() / "frames.rgb", {2, 2}, 3);
  const fs::path out = dir.path() / "out.rgb";
  const std::pair<fs::path, std::string> cases[] = {
      {dir.path() / "missing" / "times.txt", "': cannot write into its folder: No such file or directory"},
      {dir.path(), "' is a folder, not a file"}};
  for (const auto& [timestamps, message] : cases) {
    const CommandResult run = imgpipe_cmd("stream --input - --size 2x2 --output - --ops flip=h --timestamps " +
                                          quoted(timestamps) + " < " + quoted(raw) + " > " + quoted(out));
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_TRUE(contains(run.output, "--timestamps '" + timestamps.string() + message)) << run.output;
    EXPECT_EQ(fs::file_size(out), 0u) << "no frame was written";
  }
}

// A folder output is made with the first frame written: a run that ends before one (a usage error, a video
// that cannot be opened, no frames) leaves no folder behind.
TEST(ReliabilityStream, AFolderOutputIsMadeWithTheFirstFrame) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const std::string to_folder = " --output " + quoted(fs::path((out / "a" / "b").string() + "/")) + " --ops flip=h";
  CommandResult run = imgpipe_cmd("stream --input - --size 2x2" + to_folder + " --decoder gpu < /dev/null");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "raw rgb24 input needs no decoder")) << run.output;
  EXPECT_FALSE(fs::exists(out));
  if (!some_backend_usable()) return;  // the rest needs an engine
  write_bytes(dir.path() / "notes.mp4", "this is text, not a video");
  run = imgpipe_cmd("stream --input " + quoted(dir.path() / "notes.mp4") + to_folder);
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_FALSE(fs::exists(out));
  run = imgpipe_cmd("stream --input - --size 2x2" + to_folder + " --format ppm < /dev/null");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_FALSE(fs::exists(out));
  run = imgpipe_cmd("stream --input - --size 2x2" + to_folder + " --format ppm < " +
                    quoted(make_raw(dir.path() / "frames.rgb", {2, 2}, 2)));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::exists(out / "a" / "b" / "000001.ppm"));
}

// Raw frames read from a file and appended to it: each frame written would be read again, without end (the
// file-size limit stops such a run here).
TEST(ReliabilityStream, RawStdoutAppendingToTheFileOnStdinIsRefused) {
  TempDir dir;
  const fs::path raw = make_raw(dir.path() / "frames.rgb", {8, 8}, 3);
  const auto raw_bytes = testing::file_bytes(raw);
  const CommandResult run = imgpipe_cmd(
      "stream --input - --size 8x8 --output - --ops flip=h < " + quoted(raw) + " >> " + quoted(raw), "ulimit -f 64;");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "stdout is the input file on stdin")) << run.output;
  EXPECT_EQ(testing::file_bytes(raw), raw_bytes);
}

TEST_F(StreamOutputs, AnExistingOutputIsKeptUnlessOverwriteIsGiven) {
  const fs::path output = dir.path() / "out.avi";
  write_bytes(output, "the user's file");
  CommandResult run = stream(quoted(output));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "exists; --overwrite replaces it")) << run.output;
  EXPECT_EQ(read_text(output), "the user's file");
  run = stream(quoted(output), "--overwrite");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(io::video_fps(output).value_or(0), 10.0) << "the input's frame rate is kept";
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_TRUE(contains(imgpipe_cmd("stream --help").output, "--overwrite"));
}

// A write that fails (here the file-size limit, EFBIG; a full disk is ENOSPC the same way): exit 3, the file
// and the OS error named, nothing under the output's name, no temporary, an existing file left as it was.
TEST_F(StreamOutputs, AFailedVideoWriteIsReportedAndLeavesNothingBehind) {
  for (const char* name : {"out.mp4", "out.avi", "out.mkv"}) {
    const fs::path output = dir.path() / name;
    const CommandResult run = stream(quoted(output), "", "ulimit -f 1;");
    EXPECT_EQ(run.exit_code, 3) << name << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, output.string() + ": writing the video failed: File too large")) << run.output;
    EXPECT_FALSE(fs::exists(output)) << name;
    EXPECT_TRUE(temporaries_in(dir.path()).empty()) << name;
  }
  const fs::path existing = dir.path() / "kept.avi";
  write_bytes(existing, "the user's file");
  const CommandResult run = stream(quoted(existing), "--overwrite", "ulimit -f 1;");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_EQ(read_text(existing), "the user's file");
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// A real full disk: an 8 KiB tmpfs, where this test may mount one (root with CAP_SYS_ADMIN, as in CI).
TEST_F(StreamOutputs, AFullDiskIsReportedWithItsOsError) {
  const fs::path small = dir.path() / "small";
  fs::create_directories(small);
  if (std::system(("mount -t tmpfs -o size=8k tmpfs " + quoted(small) + " 2> /dev/null").c_str()) != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root); the ulimit test covers the same path";
  }
  write_bytes(small / "kept.avi", "the user's file");
  const CommandResult fresh = stream(quoted(small / "out.avi"));
  const CommandResult over = stream(quoted(small / "kept.avi"), "--overwrite");
  const bool nothing_left = !fs::exists(small / "out.avi") && temporaries_in(small).empty();
  const std::string kept = read_text(small / "kept.avi");
  EXPECT_EQ(std::system(("umount " + quoted(small)).c_str()), 0) << "the test tmpfs at " << small << " stays mounted";
  EXPECT_EQ(fresh.exit_code, 3) << fresh.output;
  EXPECT_TRUE(contains(fresh.output, (small / "out.avi").string() + ": writing the video failed: No space left on device"))
      << fresh.output;
  EXPECT_EQ(over.exit_code, 3) << over.output;
  EXPECT_TRUE(nothing_left);
  EXPECT_EQ(kept, "the user's file");
}

TEST_F(StreamOutputs, AVideoOutputThatCannotBeOpenedIsReported) {
  const CommandResult run = stream(quoted(dir.path() / "missing" / "out.avi"));
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_TRUE(contains(run.output, (dir.path() / "missing" / "out.avi").string() + ": cannot open for writing"))
      << run.output;
}

// What the README's ffmpeg pipe does, with the frame rate passed on: a 10 fps clip comes back at 10 fps.
TEST_F(StreamOutputs, TheReadmesFfmpegPipeKeepsTheFrameRate) {
  if (!testing::has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg here";
  const fs::path output = dir.path() / "piped.avi";
  const CommandResult run = testing::run_command(
      "ffmpeg", "-loglevel error -i " + quoted(input) + " -f rawvideo -pix_fmt rgb24 - | '" IMGPIPE_BINARY
                "' stream --input - --size 64x48 --output - --ops flip=h | ffmpeg -loglevel error -f rawvideo "
                "-pix_fmt rgb24 -s 64x48 -framerate 10 -i - " + quoted(output));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(io::video_fps(output).value_or(0), 10.0);
  const std::string readme = read_text(fs::path(IMGPIPE_DATA_DIR).parent_path() / "README.md");
  EXPECT_TRUE(contains(readme, "-framerate")) << "the README's example passes the frame rate on";
}

TEST(ReliabilityStream, AReaderThatClosesStdoutIsAFailureNamingThePipe) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  TempDir dir;
  const fs::path raw = make_raw(dir.path() / "in.rgb", {64, 64}, 50);
  const CommandResult run = testing::run_command(
      "bash", "-c \"'" IMGPIPE_BINARY "' stream --input - --size 64x64 --output - --ops flip=h < " + quoted(raw) +
                  " | head -c 100 > /dev/null; exit \\${PIPESTATUS[0]}\"");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_TRUE(contains(run.output, "stdout: write failed: Broken pipe")) << run.output;
}

TEST(ReliabilityUsage, AnInputFolderInsideTheOutputFolderIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path() / "out" / "in");
  io::write_image(dir.path() / "out" / "in" / "a.ppm", testing::random_image({4, 4}, 1));
  expect_usage_error("batch " + quoted(dir.path() / "out" / "in") + " " + quoted(dir.path() / "out") + " --ops flip=h",
                     "is inside the output folder", dir.path() / "out" / "a.ppm");
}

TEST_F(Reliability, UnsupportedFilesAndLinksToFoldersAreCountedInTheSummary) {
  write_bytes(in / "anim.gif", "GIF89a");
  write_bytes(in / "nested" / "notes.txt", "text");
  fs::create_directories(dir.path() / "elsewhere");
  io::write_image(dir.path() / "elsewhere" / "far.ppm", testing::random_image({6, 4}, 2));
  fs::create_directory_symlink(dir.path() / "elsewhere", in / "linked");
  fs::create_directory_symlink(in, dir.path() / "elsewhere" / "back");  // a loop once followed
  CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "skipped: 2 unsupported, 1 link not followed")) << run.output;
  EXPECT_FALSE(fs::exists(out / "linked"));
  run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(dir.path() / "out2") + " --ops flip=h --follow-links");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "skipped: 2 unsupported, 1 link not followed")) << "the link back is not followed\n"
                                                                                   << run.output;
  EXPECT_EQ(io::read_image(dir.path() / "out2" / "linked" / "far.ppm").image.size(), (Size{6, 4}));
  EXPECT_TRUE(contains(imgpipe_cmd("batch --help").output, "--follow-links"));
}

TEST_F(Reliability, FollowedLinksNeverLeadIntoTheOutputFolder) {
  fs::create_directories(out);
  io::write_image(out / "old.ppm", testing::random_image({4, 4}, 3));
  fs::create_directory_symlink(out, in / "to-out");
  const CommandResult run = imgpipe_cmd("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h --follow-links");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "1 link not followed")) << run.output;
  EXPECT_FALSE(fs::exists(out / "to-out"));
}

// A followed link to a folder above the output folder: the walk passes the output folder over wherever it meets
// it, so a resumed batch never takes its own outputs for inputs (each run would nest them one level deeper).
TEST_F(Reliability, AFollowedLinkToAFolderAboveTheOutputsNeverWalksThem) {
  const fs::path photos = dir.path() / "photos", shared = dir.path() / "shared", shared_out = shared / "out";
  fs::create_directories(photos);
  fs::create_directories(shared);
  io::write_image(photos / "a.ppm", testing::random_image({4, 4}, 4));
  io::write_image(shared / "b.ppm", testing::random_image({6, 4}, 5));
  fs::create_directory_symlink(shared, photos / "shared");
  for (int run = 0; run < 3; ++run) {
    const CommandResult result = imgpipe_cmd("batch " + quoted(photos) + " " + quoted(shared_out) +
                                             " --ops flip=h --follow-links --skip-existing");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    std::vector<fs::path> outputs;
    for (const auto& entry : fs::recursive_directory_iterator(shared_out)) {
      if (entry.is_regular_file()) outputs.push_back(fs::relative(entry.path(), shared_out));
    }
    std::sort(outputs.begin(), outputs.end());
    EXPECT_EQ(outputs, (std::vector<fs::path>{"a.ppm", "shared/b.ppm"})) << "run " << run << "\n" << result.output;
  }
}

// A followed link to a folder above the input folder walks that folder once, and the input folder inside it not
// again: every input has one output.
TEST_F(Reliability, AFollowedLinkToAFolderAboveTheInputWalksTheInputOnce) {
  const fs::path top = dir.path() / "top", photos = top / "photos", results = dir.path() / "results";
  fs::create_directories(photos);
  fs::create_directories(top / "beside");
  io::write_image(photos / "a.ppm", testing::random_image({4, 4}, 6));
  io::write_image(top / "beside" / "c.ppm", testing::random_image({4, 6}, 7));
  fs::create_directory_symlink(top, photos / "up");
  const CommandResult result =
      imgpipe_cmd("batch " + quoted(photos) + " " + quoted(results) + " --ops flip=h --follow-links");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "2 done, 0 failed")) << result.output;
  EXPECT_TRUE(fs::exists(results / "a.ppm"));
  EXPECT_TRUE(fs::exists(results / "up" / "beside" / "c.ppm"));
  EXPECT_FALSE(fs::exists(results / "up" / "photos")) << "the input folder was walked a second time";
}

TEST(ReliabilityUsage, BenchRowsThatNeedAGpuFailWithoutOne) {
  if (cuda::device_available()) GTEST_SKIP() << "a CUDA device is usable here; the GPU rows can run";
  const CommandResult run = imgpipe_cmd("bench --ops flip=h --size 32x24 --frames 2 --repeats 1 --warmup 0 "
                                        "--ceiling-mib 1 --backends optimized");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_TRUE(contains(run.output, "--backends optimized: these rows need a CUDA device")) << run.output;
  const CommandResult cpu_only = imgpipe_cmd("bench --ops flip=h --size 32x24 --frames 2 --repeats 1 --warmup 0 "
                                             "--ceiling-mib 1 --sections e2e");
  EXPECT_EQ(cpu_only.exit_code, 0) << "without --backends, the rows that can run are the run\n" << cpu_only.output;
}

TEST(ReliabilityUsage, AnUnknownCommandIsNamedAndTheCommandsListed) {
  for (const char* line : {"resize in out", "--verbose resize in out"}) {
    const CommandResult run = imgpipe_cmd(line);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_TRUE(contains(run.output, "'resize' is not a command; the commands are batch, stream, bench, backends"))
        << run.output;
  }
}

TEST(ReliabilityUsage, NumericArgumentsOutOfRangeNameTheArgumentAndTheRange) {
  TempDir dir;
  const std::string stream = "stream --input - --size 4x4 --output - --ops ";
  for (const char* fps : {"0", "-5", "nan", "inf", "1e9", "1e-300", "0.0009"}) {
    const CommandResult run = imgpipe_cmd(stream + "flip=h --fps " + fps + " < /dev/null");
    EXPECT_EQ(run.exit_code, 2) << fps << run.output;
    EXPECT_TRUE(contains(run.output, "the frame rate must be at least 0.001 and at most 1000")) << run.output;
  }
  for (const char* sigma : {"nan", "-1", "inf", "-inf", "x", "1e999"}) {
    const CommandResult run = imgpipe_cmd(stream + "gaussian=5:" + sigma + " < /dev/null");
    EXPECT_EQ(run.exit_code, 2) << sigma << run.output;
    EXPECT_TRUE(contains(run.output, std::string("SIGMA a finite number >= 0, 0 derives it from K; got '") + sigma))
        << run.output;
  }
  for (const char* size : {"nanx4", "4xinf", "-4x4", "0x4"}) {
    const CommandResult run = imgpipe_cmd(stream + "resize=" + size + " < /dev/null");
    EXPECT_EQ(run.exit_code, 2) << size << run.output;
    EXPECT_TRUE(contains(run.output, "W and H from 1 to 65535")) << run.output;
  }
  const CommandResult quality = imgpipe_cmd("batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "o") +
                                            " --ops flip=h --quality 0");
  EXPECT_EQ(quality.exit_code, 2);
  EXPECT_TRUE(contains(quality.output, "--quality")) << quality.output;
}

// Library logging is quiet by default: a video OpenCV cannot open makes FFmpeg, GStreamer and OpenCV complain,
// and only imgpipe's own lines reach stderr; --verbose lets theirs through.
TEST(ReliabilityStream, LibraryWarningsAreQuietUnlessVerbose) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend";
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "this build has no video support (no OpenCV)";
  TempDir dir;
  write_bytes(dir.path() / "notes.mp4", "this is text, not a video");
  const std::string arguments =
      "stream --input " + quoted(dir.path() / "notes.mp4") + " --output " + quoted(dir.path() / "out.mp4") + " --ops flip=h";
  const CommandResult quiet = imgpipe_cmd(arguments);
  EXPECT_EQ(quiet.exit_code, 3);
  std::istringstream lines(quiet.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      EXPECT_TRUE(line.starts_with("imgpipe: ")) << "a library's line: " << line;
    }
  }
  const CommandResult verbose = imgpipe_cmd(arguments + " --verbose");
  EXPECT_EQ(verbose.exit_code, 3);
  EXPECT_TRUE(contains(verbose.output, "moov atom not found")) << verbose.output;
}

// The first SIGINT is acknowledged and lets the files in flight finish; a second one aborts at once with 130,
// and no temporary (no partial output) is left; every output present is whole.
TEST_F(Reliability, ASecondSigintAbortsAtOnceAndLeavesNoPartialOutput) {
  const fs::path many = make_many(dir.path(), 200), outputs = dir.path() / "aborted";
  SpawnOptions options;
  options.stderr_path = dir.path() / "stderr.txt";
  const pid_t child = spawn_imgpipe({"batch", many.string(), outputs.string(), "--ops",
                                     "gaussian=31,box=31,gaussian=31", "--jobs", "2", "--format", "ppm"},
                                    options);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(wait_for_first_output(outputs, child)) << read_text(options.stderr_path);
  ::kill(child, SIGINT);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);  // a hang guard
  while (!contains(read_text(options.stderr_path), "press Ctrl-C again") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(child, SIGINT);
  const int exit_code = wait_for(child);
  const std::string err = read_text(options.stderr_path);
  EXPECT_TRUE(contains(err, "imgpipe: stopping: finishing the frames in flight (press Ctrl-C again to abort at once)"))
      << err;
  EXPECT_FALSE(err.starts_with("\n") || contains(err, "\n\n")) << "stderr is a file: no progress line to break\n"
                                                               << err;
  if (contains(err, " done, 0 failed")) GTEST_SKIP() << "the batch finished before the second signal\n" << err;
  EXPECT_EQ(exit_code, 130) << err;
  EXPECT_TRUE(contains(err, "imgpipe: aborted; unfinished outputs were removed")) << err;
  EXPECT_TRUE(temporaries_in(outputs).empty());
  for (const auto& entry : fs::directory_iterator(outputs)) {
    EXPECT_EQ(io::read_ppm(entry.path()).size(), (Size{256, 256})) << entry.path() << " is not whole";
  }
}

}  // namespace
}  // namespace imgpipe
