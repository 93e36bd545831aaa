// The imgpipe command end to end, run as a user would: on a copy of the photographs in data/.
#include "backends.hpp"
#include "chain.hpp"
#include "cpu_video.hpp"
#include "gpu_jpeg.hpp"
#include "gpu_video.hpp"
#include "image_file.hpp"
#include "ppm.hpp"
#include "reference.hpp"
#include "sample_videos.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"
#include "video_demux.hpp"
#include "video_encode.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#ifdef IMGPIPE_TEST_WITH_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace imgpipe {
namespace {

namespace fs = std::filesystem;
using testing::clip_vfr_made_at;
using testing::CommandResult;
using testing::quoted;
using testing::TempDir;
using testing::video_file;

CommandResult imgpipe(const std::string& arguments) { return testing::run_command(IMGPIPE_BINARY, arguments); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The photographs the command reads: data/images when this build reads PNG/JPEG, else their PPM copies.
fs::path photo_folder() { return fs::path(IMGPIPE_DATA_DIR) / (io::has_opencv_codecs() ? "images" : "ppm"); }

// A copy of the photographs, also one folder down, so relative paths are exercised.
fs::path make_input(const fs::path& root) {
  const fs::path in = root / "in";
  fs::create_directories(in / "nested" / "deeper");
  for (const auto& entry : fs::directory_iterator(photo_folder())) {
    fs::copy_file(entry.path(), in / entry.path().filename());
    fs::copy_file(entry.path(), in / "nested" / "deeper" / entry.path().filename());
  }
  return in;
}

std::map<fs::path, std::vector<std::uint8_t>> snapshot(const fs::path& folder) {
  std::map<fs::path, std::vector<std::uint8_t>> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (entry.is_regular_file()) files[entry.path()] = testing::file_bytes(entry.path());
  return files;
}

bool some_backend_usable() {
  for (const BackendInfo& b : available_backends())
    if (b.usable) return true;
  return false;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!some_backend_usable()) GTEST_SKIP() << "no backend is usable here (no OpenCV and no CUDA device)";
  }
  TempDir dir;
};

TEST_F(Cli, BatchWritesEveryImageAtTheChainSizeAndLeavesInputsAlone) {
  const fs::path in = make_input(dir.path()), out = dir.path() / "out";
  const auto before = snapshot(in);
  const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) + " --ops 'resize=64x48,gaussian=5:1.0' --jobs 3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, std::to_string(before.size()) + " done, 0 failed")) << run.output;
  for (const auto& [path, bytes] : before) {
    const fs::path output = out / path.lexically_relative(in);  // same relative path, name and extension
    ASSERT_TRUE(fs::exists(output)) << output;
    EXPECT_EQ(io::read_image(output).image.size(), (Size{64, 48})) << output;
  }
  EXPECT_EQ(snapshot(in), before);
  EXPECT_EQ(std::distance(fs::recursive_directory_iterator(out), fs::recursive_directory_iterator()),
            static_cast<std::ptrdiff_t>(before.size() + 2));  // the files and two folders, no temporaries
}

// Exact arithmetic is the default: every usable backend writes the same bytes with no flag and with --exact (the
// GPU ones compute OpenCV's arithmetic, the cpu one is OpenCV); --fast is taken, and both commands that run
// chains have both flags.
TEST_F(Cli, EveryUsableBackendGivesTheSameBytesByDefault) {
  const fs::path in = make_input(dir.path());
  std::map<std::string, std::map<fs::path, std::vector<std::uint8_t>>> outputs;
  for (const BackendInfo& b : available_backends()) {
    if (!b.usable) continue;
    const std::string name(to_string(b.kind));
    for (const std::string flag : {"", " --exact"}) {
      const fs::path out = dir.path() / ("out-" + name + (flag.empty() ? "" : "-exact"));
      const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) +
                                        " --ops 'resize=301x207,gaussian=5:1.0' --format ppm --backend " + name + flag);
      ASSERT_EQ(run.exit_code, 0) << name << flag << ": " << run.output;
      for (const auto& [path, bytes] : snapshot(out)) outputs[name + flag][path.lexically_relative(out)] = bytes;
    }
    const CommandResult fast = imgpipe("batch " + quoted(in) + " " + quoted(dir.path() / ("out-" + name + "-fast")) +
                                       " --ops 'resize=301x207,gaussian=5:1.0' --format ppm --fast --backend " + name);
    EXPECT_EQ(fast.exit_code, 0) << name << " --fast: " << fast.output;
  }
  ASSERT_FALSE(outputs.empty());
  for (const auto& [name, files] : outputs) {
    EXPECT_EQ(files, outputs.begin()->second) << name << " against " << outputs.begin()->first;
  }
  for (const char* command : {"batch --help", "stream --help"}) {
    const std::string help = imgpipe(command).output;
    EXPECT_TRUE(contains(help, "--exact") && contains(help, "--fast")) << command;
  }
}

TEST_F(Cli, TimingsSayWhereTheTimeWent) {
  const fs::path in = make_input(dir.path()), out = dir.path() / "out";
  const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) +
                                    " --ops flip=h --format ppm --decoder cpu --encoder cpu --timings");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "timings: start-up ")) << run.output;
  EXPECT_TRUE(contains(run.output, "timings: per image, on average (of which on a core): reading and decoding "))
      << run.output;
  EXPECT_TRUE(contains(run.output, "timings: CPU: ")) << run.output;
  EXPECT_FALSE(contains(run.output, "GPU JPEG")) << "codecs that were not used are timed: " << run.output;
  EXPECT_FALSE(contains(imgpipe("batch " + quoted(in) + " " + quoted(dir.path() / "quiet") + " --ops flip=h").output,
                        "timings:"));
}

TEST_F(Cli, FormatChangesTheExtension) {
  const fs::path in = make_input(dir.path()), out = dir.path() / "out";
  const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) + " --ops rotate=90 --format ppm");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const auto& entry : fs::directory_iterator(in)) {
    if (!entry.is_regular_file()) continue;
    const Image source = io::read_image(entry.path()).image;
    const Image rotated = io::read_ppm(out / entry.path().filename().replace_extension(".ppm"));
    EXPECT_EQ(rotated.size(), (Size{source.height(), source.width()})) << entry.path();
  }
}

TEST_F(Cli, ExistingOutputsAreKeptUnlessOverwriteIsGiven) {
  const fs::path in = make_input(dir.path()), out = dir.path() / "out";
  auto batch = [&](const std::string& options) {
    return imgpipe("batch " + quoted(in) + " " + quoted(out) + " --format ppm " + options);
  };
  ASSERT_EQ(batch("--ops flip=h").exit_code, 0);
  const auto first = snapshot(out);
  const CommandResult again = batch("--ops flip=v");
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_TRUE(contains(again.output, "exists; --overwrite replaces it")) << again.output;
  EXPECT_TRUE(contains(again.output, "0 done, " + std::to_string(first.size()) + " failed")) << again.output;
  EXPECT_EQ(snapshot(out), first);
  const CommandResult forced = batch("--ops flip=v --overwrite");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_NE(snapshot(out), first);
}

// N copies of a batch, one per shard, together write every output once; a file's shard follows its path.
TEST_F(Cli, ShardsSplitAFolderWithNoOverlapAndNoGap) {
  const fs::path in = make_input(dir.path());
  for (int i = 0; i < 12; ++i) {
    io::write_image(in / ("extra" + std::to_string(i) + ".ppm"), testing::random_image({9, 7}, static_cast<std::uint32_t>(i)));
  }
  const auto inputs = snapshot(in);
  std::map<fs::path, int> shard_of;
  for (int k = 0; k < 3; ++k) {
    const fs::path out = dir.path() / ("shard" + std::to_string(k));
    const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h --format ppm --shard " +
                                      std::to_string(k) + "/3");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    if (!fs::exists(out)) continue;  // an empty shard writes nothing
    EXPECT_TRUE(contains(run.output, "; shard " + std::to_string(k) + "/3: ")) << run.output;
    for (const auto& [path, bytes] : snapshot(out)) {
      const auto [at, fresh] = shard_of.emplace(path.lexically_relative(out), k);
      EXPECT_TRUE(fresh) << path << " is in shards " << at->second << " and " << k;
    }
  }
  EXPECT_EQ(shard_of.size(), inputs.size()) << "every input in exactly one shard";
  const CommandResult again = imgpipe("batch " + quoted(in) + " " + quoted(dir.path() / "again") +
                                      " --ops flip=h --format ppm --shard 1/3");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  for (const auto& [relative, k] : shard_of) {
    EXPECT_EQ(fs::exists(dir.path() / "again" / relative), k == 1) << relative << " moved to another shard";
  }
  for (const char* bad : {"3/3", "1/0", "-1/2", "1", "a/b", "1/2/3"}) {
    EXPECT_EQ(imgpipe("batch " + quoted(in) + " " + quoted(dir.path() / "bad") + " --ops flip=h --shard " + bad).exit_code,
              2)
        << bad;
  }
}

TEST_F(Cli, ABadFileIsReportedAndTheRestAreProcessed) {
  const fs::path in = make_input(dir.path()), out = dir.path() / "out";
  testing::write_bytes(in / "broken.ppm", "P6 100 100 255\nnot enough pixels");
  const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) + " --ops box=3");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, (in / "broken.ppm").string() + ": truncated raster")) << run.output;
  EXPECT_FALSE(fs::exists(out / "broken.ppm"));
  for (const auto& entry : fs::directory_iterator(photo_folder())) {
    EXPECT_TRUE(fs::exists(out / entry.path().filename())) << entry.path();
  }
}

TEST_F(Cli, TwoInputsWithOneOutputNameAreNotMixedUp) {
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  fs::create_directories(in);
  io::write_image(in / "a.ppm", testing::random_image({4, 4}, 1));
  io::write_image(in / "a.PPM", testing::random_image({6, 6}, 2));
  const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) + " --ops flip=h --format ppm");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "is already made from")) << run.output;
}

TEST(CliUsage, BadChainIsAUsageErrorNamingTheToken) {
  TempDir dir;
  const CommandResult run = imgpipe("batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "out") +
                          " --ops 'resize=640x480,gaussian=4'");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "bad op 'gaussian=4'")) << run.output;
  EXPECT_TRUE(contains(run.output, "odd integer from 3 to 31")) << run.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

TEST(CliUsage, GpuDecodeThreadsOutsideOneTo64IsAUsageError) {
  TempDir dir;
  for (const char* threads : {"0", "65", "four"}) {
    const CommandResult run = imgpipe("batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "out") +
                                      " --ops flip=h --gpu-decode-threads " + threads);
    EXPECT_EQ(run.exit_code, 2) << threads << ": " << run.output;
    EXPECT_TRUE(contains(run.output, "--gpu-decode-threads")) << run.output;
    EXPECT_FALSE(fs::exists(dir.path() / "out"));
  }
}

TEST(CliUsage, MissingInputFolderIsAUsageError) {
  TempDir dir;
  const CommandResult run = imgpipe("batch " + quoted(dir.path() / "nope") + " " + quoted(dir.path() / "out") + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, (dir.path() / "nope").string())) << run.output;
  EXPECT_TRUE(contains(run.output, "does not exist")) << run.output;
  EXPECT_TRUE(run.output.starts_with("imgpipe: ")) << run.output;
  EXPECT_TRUE(contains(run.output, "imgpipe batch --help")) << run.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

TEST(CliUsage, OutputInsideOrEqualToInputIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path() / "in");
  io::write_image(dir.path() / "in" / "a.ppm", testing::random_image({4, 4}, 1));
  for (const fs::path& out : {dir.path() / "in" / "out", dir.path() / "in", dir.path() / "in" / "."}) {
    const CommandResult run = imgpipe("batch " + quoted(dir.path() / "in") + " " + quoted(out) + " --ops flip=h");
    EXPECT_EQ(run.exit_code, 2) << out << run.output;
    EXPECT_TRUE(contains(run.output, "is the input folder")) << run.output;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "in" / "out"));
}

TEST(CliUsage, UnknownOptionsAndValuesAreUsageErrors) {
  EXPECT_EQ(imgpipe("").exit_code, 2);
  EXPECT_EQ(imgpipe("frobnicate").exit_code, 2);
  EXPECT_EQ(imgpipe("batch a b --ops flip=h --backend gpu").exit_code, 2);
  EXPECT_EQ(imgpipe("batch a b --ops flip=h --quality 101").exit_code, 2);
}

TEST(CliUsage, ExplicitGpuBackendWithoutADeviceFailsClearly) {
  for (const BackendInfo& b : available_backends()) {
    if (b.kind == BackendKind::optimized && b.usable) GTEST_SKIP() << "a CUDA device is usable here";
  }
  TempDir dir;
  const CommandResult run = imgpipe("batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "out") +
                          " --ops flip=h --backend optimized");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_TRUE(contains(run.output, "backend 'optimized' needs a CUDA device; none is usable here")) << run.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

TEST(CliUsage, DevicesThatAreNotThereOrNamedTwiceAreUsageErrors) {
  TempDir dir;
  const std::string batch = "batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "out") + " --ops flip=h";
  for (const auto& [devices, says] : {std::pair{"99", "there is no device 99"}, std::pair{"0,0", "named twice"},
                                      std::pair{"0,gpu1", "expected 'all' or device numbers"}}) {
    const CommandResult run = imgpipe(batch + " --devices " + devices);
    EXPECT_EQ(run.exit_code, 2) << devices << ": " << run.output;
    EXPECT_TRUE(contains(run.output, std::string("--devices '") + devices + "': ")) << run.output;
    EXPECT_TRUE(contains(run.output, says)) << run.output;
    EXPECT_FALSE(fs::exists(dir.path() / "out"));
  }
  const CommandResult stream = imgpipe("stream --input - --size 4x4 --output - --ops flip=h --devices 99");
  EXPECT_EQ(stream.exit_code, 2) << stream.output;
  EXPECT_TRUE(contains(stream.output, "--devices '99': there is no device 99")) << stream.output;
  const CommandResult bench = imgpipe("bench --ops flip=h --devices 1,1");
  EXPECT_EQ(bench.exit_code, 2) << bench.output;
  EXPECT_TRUE(contains(bench.output, "--devices '1,1': device 1 is named twice")) << bench.output;
}

TEST(CliUsage, GpuJpegDecodingOnAnEngineWithoutDeviceFramesIsAUsageErrorThatSaysWhy) {
  std::string engine;
  for (const BackendInfo& b : available_backends()) {
    if (b.kind == BackendKind::cpu && b.usable) engine = "--backend cpu";
    if (b.kind == BackendKind::optimized && b.usable && engine.empty()) engine = "--backend optimized --memory managed";
  }
  if (engine.empty()) GTEST_SKIP() << "no backend is usable here (no OpenCV and no CUDA device)";
  TempDir dir;
  for (const char* side : {"--decoder", "--encoder"}) {
    const CommandResult run = imgpipe("batch " + quoted(photo_folder()) + " " + quoted(dir.path() / "out") +
                                      " --ops flip=h " + engine + " " + side + " gpu");
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_TRUE(contains(run.output, std::string(side) + " gpu: the engine (")) << run.output;
    EXPECT_TRUE(contains(run.output, "keeps no frames on the device")) << run.output;
    EXPECT_FALSE(fs::exists(dir.path() / "out"));
  }
}

TEST(CliInfo, BackendsListsEveryKindAndWhatAutoPicks) {
  const CommandResult run = imgpipe("backends");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const char* kind : {"cpu", "naive", "optimized", "auto picks:", "JPEG", "NVDEC", "NVENC: "}) {
    EXPECT_TRUE(contains(run.output, kind)) << kind;
  }
  const std::string no_nvenc = io::nvenc_unavailable();
  EXPECT_TRUE(contains(run.output, no_nvenc.empty() ? "NVENC: present" : "NVENC: unavailable (" + no_nvenc + ")"))
      << run.output;
  EXPECT_TRUE(contains(run.output, "video files are written on the CPU (" + io::video_writers_description() + ")"))
      << run.output;
  EXPECT_TRUE(contains(run.output, "CPU video decoding: " + io::video_readers_description() + "\n")) << run.output;
  if (io::writes_timed_video("video.mp4")) {
    EXPECT_TRUE(contains(run.output, "(.mp4, .mkv and .mov: " + io::timed_video_encoder() + ", each frame at its time"))
        << run.output;
  }
}

TEST(CliInfo, VersionAndHelp) {
  const CommandResult version = imgpipe("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.output, "imgpipe " IMGPIPE_EXPECTED_VERSION "\n");
  const CommandResult help = imgpipe("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* part : {"batch", "backends", "resize=WxH", "gaussian=K", "Exit codes"}) {
    EXPECT_TRUE(contains(help.output, part)) << part;
  }
  const CommandResult stream = imgpipe("stream --help");
  EXPECT_EQ(stream.exit_code, 0);
  EXPECT_TRUE(contains(stream.output, "at most 1000; default")) << stream.output;
  EXPECT_TRUE(contains(stream.output, "JPEG/WebP quality of a folder output")) << stream.output;
}

#ifdef IMGPIPE_TEST_WITH_OPENCV
// The acceptance check: the main job on the cpu backend equals OpenCV's own resize + GaussianBlur.
TEST(CliMainJob, CpuBackendMatchesOpenCvResizeAndGaussianBlur) {
  TempDir dir;
  const fs::path in = fs::path(IMGPIPE_DATA_DIR) / "images", out = dir.path() / "out";
  const CommandResult run = imgpipe("batch " + quoted(in) + " " + quoted(out) +
                          " --ops 'resize=640x480,gaussian=5:1.0' --backend cpu --format png");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const auto& entry : fs::directory_iterator(in)) {
    cv::Mat expected;
    cv::resize(cv::imread(entry.path().string(), cv::IMREAD_COLOR), expected, cv::Size(640, 480), 0, 0,
               cv::INTER_LINEAR);
    cv::GaussianBlur(expected, expected, cv::Size(5, 5), 1.0, 1.0, cv::BORDER_REFLECT_101);
    const cv::Mat got = cv::imread((out / entry.path().filename().replace_extension(".png")).string());
    ASSERT_EQ(got.size(), expected.size()) << entry.path();
    EXPECT_LE(cv::norm(got, expected, cv::NORM_INF), 1) << entry.path();  // largest difference of any byte
  }
}
#endif

#ifdef IMGPIPE_TEST_WITH_OPENCV
// Every format the batch writes: the lossless ones keep the cpu backend's pixels exactly; WebP at the default
// quality 95 stays within a mean of 3 levels of them (1.5 to 2.2 on these photographs).
TEST(CliMainJob, WritesEveryOutputFormat) {
  TempDir dir;
  const fs::path in = fs::path(IMGPIPE_DATA_DIR) / "images";
  const auto run_as = [&](const std::string& format) {
    return imgpipe("batch " + quoted(in) + " " + quoted(dir.path() / format) + " --ops flip=h --backend cpu --format " +
                   format);
  };
  ASSERT_EQ(run_as("png").exit_code, 0);
  for (const std::string format : {"bmp", "tif", "webp"}) {
    const CommandResult run = run_as(format);
    ASSERT_EQ(run.exit_code, 0) << format << ": " << run.output;
    for (const auto& entry : fs::directory_iterator(in)) {
      const fs::path name = entry.path().filename();
      const Image png = io::read_image(dir.path() / "png" / fs::path(name).replace_extension(".png")).image;
      const Image got = io::read_image(dir.path() / format / fs::path(name).replace_extension("." + format)).image;
      ASSERT_EQ(got.size(), png.size()) << format << " " << name;
      if (format == "webp") {
        double total = 0;
        for (std::size_t i = 0; i < got.bytes(); ++i) total += std::abs(got.data()[i] - png.data()[i]);
        EXPECT_LT(total / static_cast<double>(got.bytes()), 3.0) << name;
      } else {
        EXPECT_EQ(testing::max_abs_diff(got, png), 0) << format << " " << name;
      }
    }
  }
  const CommandResult gif = run_as("gif");
  EXPECT_EQ(gif.exit_code, 2) << gif.output;
  EXPECT_NE(gif.output.find("--format: gif not in {same,png,jpg,ppm,webp,bmp,tif}"), std::string::npos) << gif.output;
}
#endif

// imgpipe stream on raw rgb24, as ffmpeg pipes it: every frame in gives one frame out, in order.
TEST(CliStream, RawFramesInGiveTheSameFramesOutInOrder) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend here";
  TempDir dir;
  const Size size{97, 61};
  const Chain chain = parse_chain("resize=48x30,sobel");
  std::vector<Image> frames;
  std::string raw;
  for (int i = 0; i < 7; ++i) {
    frames.push_back(testing::synthetic_image(size, 40 + i));
    raw.append(reinterpret_cast<const char*>(frames.back().data()), frames.back().bytes());
  }
  testing::write_bytes(dir.path() / "in.rgb", raw);
  const CommandResult run = imgpipe("stream --input - --size 97x61 --output - --ops resize=48x30,sobel < " +
                                    quoted(dir.path() / "in.rgb") + " > " + quoted(dir.path() / "out.rgb"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "7 frames")) << run.output;
  const std::vector<std::uint8_t> out = testing::file_bytes(dir.path() / "out.rgb");
  const Size out_size = output_size(chain, size);
  ASSERT_EQ(out.size(), 7 * out_size.rgb_bytes());
  // The backend --backend auto picks, in stream's default exact arithmetic, frame by frame through the
  // single-frame path.
  bool gpu = false;
  for (const BackendInfo& b : available_backends()) gpu = gpu || (b.kind == BackendKind::optimized && b.usable);
  auto backend = make_backend(gpu ? BackendKind::optimized : BackendKind::cpu, Arithmetic::exact);
  for (int i = 0; i < 7; ++i) {
    const Image expected = apply(*backend, chain, frames[i]);
    const auto first = out.begin() + static_cast<std::ptrdiff_t>(i * out_size.rgb_bytes());
    const Image got(out_size, std::vector<std::uint8_t>(first, first + static_cast<std::ptrdiff_t>(out_size.rgb_bytes())));
    EXPECT_EQ(testing::max_abs_diff(got, expected), 0) << "frame " << i;
  }
}

TEST(CliStream, AShortLastFrameIsAnErrorThatSaysSo) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend here";
  TempDir dir;
  testing::write_bytes(dir.path() / "in.rgb", std::string(2 * 12 + 5, '\x40'));  // two 2x2 frames and 5 bytes
  const CommandResult run = imgpipe("stream --input - --size 2x2 --output - --ops flip=h < " +
                                    quoted(dir.path() / "in.rgb") + " > " + quoted(dir.path() / "out.rgb"));
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "frame 2 is short: 5 of 12 bytes")) << run.output;
  EXPECT_EQ(testing::file_bytes(dir.path() / "out.rgb").size(), 24u) << "the two whole frames still come out";
}

TEST(CliStream, RawInputNeedsAValidSize) {
  EXPECT_EQ(imgpipe("stream --input - --output - --ops gray < /dev/null").exit_code, 2);
  const CommandResult bad = imgpipe("stream --input - --size 0x10 --output - --ops gray < /dev/null");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(contains(bad.output, "--size '0x10': expected WxH")) << bad.output;
}

// Whether the CPU decodes video files here: through FFmpeg's libraries, else OpenCV.
bool cpu_decodes_video() { return io::ffmpeg_video_decoding_unavailable().empty() || io::has_opencv_codecs(); }

// Why the sample streams cannot run through `imgpipe stream` here; empty when they can.
std::string why_no_video_stream() {
  if (!io::gpu_video_unavailable().empty() && !cpu_decodes_video()) {
    return "no video decoder here (no NVDEC, no FFmpeg libraries, no OpenCV)";
  }
  if (!some_backend_usable()) return "no usable backend here";
  return {};
}

TEST(CliStream, DecoderGpuWhereNvdecCannotRunIsAUsageErrorThatSaysWhy) {
  if (io::gpu_video_unavailable().empty()) GTEST_SKIP() << "NVDEC runs here";
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend here";
  const CommandResult run =
      imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output - --ops flip=h --decoder gpu");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "--decoder gpu: ")) << run.output;
  EXPECT_TRUE(contains(run.output, "clip.h264: " + io::gpu_video_unavailable())) << run.output;
}

// NVDEC reads containers where libavformat demuxes them for it; elsewhere --decoder gpu refuses them. Where
// it reads them, it still refuses a stream its engines do not take: clip.mp4 is H.264 in 4:4:4.
TEST(CliStream, ContainersGoToNvdecThroughLibavformat) {
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend here";
  const CommandResult run = imgpipe("stream --input " + quoted(video_file("clip_remuxed.mp4")) +
                                    " --output - --ops flip=h --decoder gpu > /dev/null");
  if (!io::gpu_video_unavailable().empty() || !io::container_demuxing_unavailable().empty()) {
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_TRUE(contains(run.output, "--decoder gpu: ")) << run.output;
    return;
  }
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "28 frames in")) << run.output;
  EXPECT_TRUE(contains(run.output, "decoded by NVDEC (H.264")) << run.output;
  EXPECT_TRUE(contains(run.output, "demuxed from QuickTime / MOV")) << run.output;
  const CommandResult refused = imgpipe("stream --input " + quoted(video_file("clip.mp4")) +
                                        " --output - --ops flip=h --decoder gpu > /dev/null");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(contains(refused.output, "clip.mp4: H.264 8-bit 4:4:4")) << refused.output;
}

// A phone's portrait video, whose container says to show it turned, comes out upright on every backend: its
// frames are the upright clip's, rotated. Where NVDEC runs, auto leaves it to the CPU decoder and says why.
TEST(CliStream, AVideoItsContainerShowsTurnedComesOutUpright) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (const std::string why = io::ffmpeg_video_decoding_unavailable(); !why.empty()) {
    GTEST_SKIP() << "OpenCV 4.6's reader turns such videos the other way: " << why;
  }
  if (!testing::has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to make the turned file with";
  TempDir dir;
  const fs::path turned = testing::turned_copy(dir.path(), 90);
  const fs::path upright_frames = dir.path() / "upright.rgb", turned_frames = dir.path() / "turned.rgb";
  const CommandResult upright = imgpipe("stream --input " + quoted(video_file("clip_remuxed.mp4")) +
                                        " --output - --ops flip=h,flip=h --decoder cpu > " + quoted(upright_frames));
  ASSERT_EQ(upright.exit_code, 0) << upright.output;
  const CommandResult run =
      imgpipe("stream --input " + quoted(turned) + " --output - --ops flip=h,flip=h > " + quoted(turned_frames));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "turned 270 degrees clockwise")) << run.output;
  if (io::gpu_video_unavailable().empty() && io::container_demuxing_unavailable().empty()) {
    EXPECT_TRUE(contains(run.output, "which NVDEC's path does not do; decoding on the CPU")) << run.output;
  }
  const std::vector<std::uint8_t> before = testing::file_bytes(upright_frames),
                                  after = testing::file_bytes(turned_frames);
  const Size size{240, 136};
  ASSERT_EQ(before.size(), 28 * size.rgb_bytes());
  ASSERT_EQ(after.size(), before.size());
  const auto frame_bytes = static_cast<std::ptrdiff_t>(size.rgb_bytes());
  for (std::ptrdiff_t n = 0; n < 28; ++n) {
    const auto first = before.begin() + n * frame_bytes;
    const Image expected = reference::apply(Op{Rotate{270}}, Image(size, {first, first + frame_bytes}));
    EXPECT_TRUE(std::equal(expected.data(), expected.data() + frame_bytes, after.begin() + n * frame_bytes))
        << "frame " << n;
  }
}

// --timestamps: the frames' times beside the output. NVDEC and FFmpeg's CPU decoder keep a container's own
// (clip_vfr.mkv: 25, then 12.5, then 50 frames/s); OpenCV's gives none, so its frames are 1/25 s apart, the rate
// the file declares.
TEST(CliStream, TimestampsKeepTheInputsTimingWhereTheDecoderHasIt) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!cpu_decodes_video() && !io::container_demuxing_unavailable().empty()) {
    GTEST_SKIP() << "no decoder here takes a Matroska file (no CPU decoder; NVDEC without containers: "
                 << io::container_demuxing_unavailable() << ")";
  }
  TempDir dir;
  const fs::path times = dir.path() / "times.txt";
  const std::string command = "stream --input " + quoted(video_file("clip_vfr.mkv")) +
                              " --output - --ops flip=h --timestamps " + quoted(times) + " > /dev/null";
  const CommandResult run = imgpipe(command);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const bool own_times = (io::gpu_video_unavailable().empty() && io::container_demuxing_unavailable().empty()) ||
                         io::ffmpeg_video_decoding_unavailable().empty();
  std::ifstream in(times);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "# timestamp format v2");
  std::vector<double> got;
  for (double ms; in >> ms;) got.push_back(ms);
  ASSERT_EQ(got.size(), 30u);
  for (int n = 0; n < 30; ++n) {
    const double made_at = 1000 * clip_vfr_made_at(n);
    EXPECT_NEAR(got[n], own_times ? made_at : n * 40.0, 1e-6) << "frame " << n;
  }
  const CommandResult again = imgpipe(command);
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_TRUE(contains(again.output, "--timestamps '" + times.string() + "' exists; --overwrite replaces it"))
      << again.output;
  const CommandResult folder = imgpipe("stream --input " + quoted(video_file("")) + " --output " +
                                       quoted(dir.path() / "frames/") + " --ops flip=h --timestamps " + quoted(times));
  EXPECT_EQ(folder.exit_code, 2) << folder.output;
  EXPECT_TRUE(contains(folder.output, "--timestamps names one file")) << folder.output;
}

// --timestamps naming the input or the output by another spelling (./name, a link) is refused before anything
// is opened, even with --overwrite: the input is kept, and no video is written only to be replaced by the text.
TEST(CliStream, TimestampsThatNameTheInputOrOutputByAnotherPathAreRefused) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path input = dir.path() / "clip.mp4", output = dir.path() / "out.mp4";
  fs::copy_file(video_file("clip.mp4"), input);
  fs::create_symlink(input, dir.path() / "link.mp4");
  const auto input_bytes = testing::file_bytes(input);
  for (const fs::path& times : {dir.path() / "." / "clip.mp4", dir.path() / "link.mp4", dir.path() / "." / "out.mp4"}) {
    const CommandResult run = imgpipe("stream --input " + quoted(input) + " --output " + quoted(output) +
                                      " --ops flip=h --overwrite --timestamps " + quoted(times));
    EXPECT_EQ(run.exit_code, 2) << times << "\n" << run.output;
    EXPECT_TRUE(contains(run.output, "is the stream's input or output")) << run.output;
    EXPECT_EQ(testing::file_bytes(input), input_bytes) << times;
    EXPECT_FALSE(fs::exists(output)) << times;
  }
}

// An image file or a container imgpipe does not write as --output is refused before anything is decoded: a
// stream's output is a video (.mp4, .mkv, .mov, .avi), a folder of frames or stdout.
TEST(CliStream, AnImageFileOrAnUnknownContainerAsOutputIsAUsageError) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const CommandResult run = imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output " +
                                    quoted(dir.path() / "out.jpg") + " --ops flip=h");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "names an image file; a stream goes to a video file")) << run.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out.jpg"));
  // So is a video container imgpipe does not write (OpenCV's writer would print its own lines, then fail).
  const CommandResult webm = imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output " +
                                     quoted(dir.path() / "out.webm") + " --ops flip=h");
  EXPECT_EQ(webm.exit_code, 2) << webm.output;
  EXPECT_TRUE(contains(webm.output, "imgpipe writes videos as .mp4, .mkv, .mov or .avi")) << webm.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out.webm"));
}

// A video file output keeps the frames' times where the decoder has them (NVDEC on a container, FFmpeg's CPU
// decoder: clip_vfr.mkv's 25, then 12.5, then 50 frames/s), else puts them 1/25 s apart, the rate the file
// declares.
TEST(CliStream, AVideoFileOutputKeepsEachFramesTime) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV, at one rate";
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) {
    GTEST_SKIP() << "no libavformat to read the output's times back: " << why;
  }
  if (!cpu_decodes_video() && !io::gpu_video_unavailable().empty()) {
    GTEST_SKIP() << "no decoder here takes a Matroska file (no CPU decoder, no NVDEC)";
  }
  TempDir dir;
  const fs::path out = dir.path() / "out.mkv";
  const CommandResult run =
      imgpipe("stream --input " + quoted(video_file("clip_vfr.mkv")) + " --output " + quoted(out) + " --ops flip=h");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, io::video_writer_description(out))) << run.output;
  const bool own_times = io::gpu_video_unavailable().empty() || io::ffmpeg_video_decoding_unavailable().empty();
  const std::unique_ptr<io::Bitstream> written = io::open_container(out);
  std::vector<double> times;
  while (const std::optional<io::BitstreamPiece> piece = written->next()) {
    if (piece->pts && !piece->discard) times.push_back(static_cast<double>(*piece->pts) * written->seconds_per_tick());
  }
  std::sort(times.begin(), times.end());
  ASSERT_EQ(times.size(), 30u);
  for (int n = 0; n < 30; ++n) {
    EXPECT_NEAR(times[n], own_times ? clip_vfr_made_at(n) : n * 0.04, 0.0005) << "frame " << n;
  }
}

// Relative names whose first part holds a colon are files, not URLs of a protocol "subs" or "cam".
TEST(CliStream, RelativeNamesWithAColonAreFiles) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV";
  if (!cpu_decodes_video() && !io::gpu_video_unavailable().empty()) GTEST_SKIP() << "no decoder for an MP4 here";
  TempDir dir;
  fs::copy_file(video_file("clip.mp4"), dir.path() / "subs:x.mp4");
  const CommandResult run = testing::run_command(
      "sh", "-c " + quoted(fs::path("cd " + quoted(dir.path()) + " && " + quoted(IMGPIPE_BINARY) +
                                    " stream --input subs:x.mp4 --output cam:1.mkv --ops flip=h")));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GT(fs::file_size(dir.path() / "cam:1.mkv"), 0u);
}

// An anamorphic video (360x240 shown as 16:9) keeps its shape on screen through the chain: a resize changes the
// pixels' shape instead, a quarter turn turns it.
TEST(CliStream, AnAnamorphicVideoKeepsItsShapeOnScreen) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV, in square pixels";
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!cpu_decodes_video() && !io::gpu_video_unavailable().empty()) {
    GTEST_SKIP() << "no decoder here takes a Matroska file (no CPU decoder, no NVDEC)";
  }
  TempDir dir;
  const fs::path in = dir.path() / "wide.mkv";
  const Image frame = testing::random_image({360, 240}, 5);
  const std::unique_ptr<io::FrameWriter> writer =
      io::open_timed_video_writer(in, frame.size(), 25, io::Existing::keep, {}, {DisplayAspect{16, 9}, std::nullopt});
  for (int f = 0; f < 3; ++f) writer->write(frame.view(), std::nullopt);
  writer->close();
  const std::optional<DisplayAspect> wide = DisplayAspect{16, 9}, tall = DisplayAspect{9, 16};
  // 320x180 shows 16:9 in square pixels, which a video need not declare.
  for (const auto& [ops, shape] :
       {std::pair{"flip=h", wide}, std::pair{"resize=180x240,gaussian=3", wide},
        std::pair{"resize=320x180", std::optional<DisplayAspect>()}, std::pair{"rotate=90", tall}}) {
    const fs::path out = dir.path() / "out.mkv";
    const CommandResult run =
        imgpipe("stream --input " + quoted(in) + " --output " + quoted(out) + " --overwrite --ops " + ops);
    ASSERT_EQ(run.exit_code, 0) << ops << "\n" << run.output;
    EXPECT_EQ(io::open_container(out)->display_aspect(), shape) << ops;
  }
}

// Three frames of 96x64 into `path` (.mkv) by FFmpeg's writer, which declares `space` where it is given.
void write_video_in_color_space(const fs::path& path, std::optional<io::RgbColorSpace> space) {
  const Image frame = testing::random_image({96, 64}, 7);
  const std::unique_ptr<io::FrameWriter> writer =
      io::open_timed_video_writer(path, frame.size(), 25, io::Existing::replace, {}, {std::nullopt, space});
  for (int f = 0; f < 3; ++f) writer->write(frame.view(), std::nullopt);
  writer->close();
}

// An HDR video's output declares the PQ or HLG its RGB values keep, and BT.2020; a video that declares no
// colour space makes an output that declares none.
TEST(CliStream, AVideosColorSpaceGoesToItsOutput) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV, which declares none";
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!cpu_decodes_video() && !io::gpu_video_unavailable().empty()) {
    GTEST_SKIP() << "no decoder here takes a Matroska file (no CPU decoder, no NVDEC)";
  }
  TempDir dir;
  for (const std::optional<io::RgbColorSpace> space :
       {std::optional(io::RgbColorSpace{9, 16}), std::optional(io::RgbColorSpace{9, 18}),
        std::optional<io::RgbColorSpace>()}) {
    const fs::path in = dir.path() / "in.mkv", out = dir.path() / "out.mp4";
    write_video_in_color_space(in, space);
    const CommandResult run =
        imgpipe("stream --input " + quoted(in) + " --output " + quoted(out) + " --overwrite --ops resize=48x32,gray");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(io::open_container(out)->rgb_color_space(), space);
  }
}

// OpenCV's writer (.avi) declares no colour space, and the summary says that the input's was left behind.
TEST(CliStream, AnAviOutputSaysItDeclaresNoColourSpace) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "no OpenCV here: .avi is not written";
  if (!io::writes_timed_video("in.mkv")) GTEST_SKIP() << "no FFmpeg writer here to make a video that declares one";
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  for (const std::optional<io::RgbColorSpace> space :
       {std::optional(io::RgbColorSpace{9, 18}), std::optional<io::RgbColorSpace>()}) {
    const fs::path in = dir.path() / "in.mkv", out = dir.path() / "out.avi";
    write_video_in_color_space(in, space);
    const CommandResult run =
        imgpipe("stream --input " + quoted(in) + " --output " + quoted(out) + " --overwrite --ops flip=h");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(contains(run.output,
                       "; colour space not declared: OpenCV's writer declares square pixels "
                       "and no colour space"),
              space.has_value())
        << run.output;
  }
}

// `video`'s pictures with 1.4 s of a 440 Hz tone in `codec`, made into `out` by the ffmpeg command.
CommandResult with_tone(const fs::path& video, const std::string& codec, const fs::path& out) {
  return testing::run_command("ffmpeg", "-loglevel error -i " + quoted(video) +
                                            " -f lavfi -i sine=duration=1.4 -map 0:v -map 1:a -c:v copy -c:a " + codec +
                                            " " + quoted(out));
}

// The times (seconds) of a file's packets of one kind (`streams`: "a" for audio, "v" for video) that are played
// (not cut by an edit list), by ffprobe, in the order they are shown.
std::vector<double> packet_times(const fs::path& path, const std::string& streams) {
  const CommandResult probe =
      testing::run_command("ffprobe", "-v error -select_streams " + streams +
                                          " -show_entries packet=pts_time,flags -of csv=p=0 " + quoted(path));
  EXPECT_EQ(probe.exit_code, 0) << probe.output;
  std::vector<double> times;
  std::istringstream lines(probe.output);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t comma = line.find(',');
    if (comma == std::string::npos || line.find('D', comma) != std::string::npos) continue;
    times.push_back(std::stod(line.substr(0, comma)));
  }
  std::sort(times.begin(), times.end());  // a video's packets come in decoding order
  return times;
}

// As many `times` as `expected`, each within `tolerance` of its expected one (`what` names them in a failure).
void expect_times_near(const std::vector<double>& times, const std::vector<double>& expected, double tolerance,
                       const std::string& what) {
  ASSERT_EQ(times.size(), expected.size()) << what;
  for (std::size_t n = 0; n < times.size(); ++n) EXPECT_NEAR(times[n], expected[n], tolerance) << what << " " << n;
}

// Two transport streams with sound, one after the other (as recordings are joined): the clock restarts halfway.
// The video's frames after the restart come a frame apart; the sound whose times went back is left out and
// counted, rather than failing the muxer and with it the whole video.
TEST(CliStream, SoundWhoseClockRestartsIsLeftOutNotFatal) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV, which takes no sound";
  if (!testing::has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to make a video with sound";
  if (!cpu_decodes_video() && !io::gpu_video_unavailable().empty()) GTEST_SKIP() << "no decoder for MPEG-TS here";
  TempDir dir;
  const fs::path part = dir.path() / "part.ts", joined = dir.path() / "joined.ts", out = dir.path() / "out.mkv";
  const CommandResult made = testing::run_command(
      "ffmpeg",
      "-loglevel error -f lavfi -i testsrc2=size=160x120:rate=25:duration=1 -f lavfi -i sine=duration=1 "
      "-c:v libx264 -c:a mp2 " +
          quoted(part));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::vector<std::uint8_t> bytes = testing::file_bytes(part);
  std::string twice(bytes.begin(), bytes.end());
  twice += twice;
  testing::write_bytes(joined, twice);
  const CommandResult run = imgpipe("stream --input " + quoted(joined) + " --output " + quoted(out) + " --ops flip=h");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "50 frames")) << run.output;
  EXPECT_TRUE(contains(run.output, "audio copied (mp2); ")) << run.output;
  EXPECT_TRUE(contains(run.output, " whose times went back (the input's clock restarts) left out")) << run.output;
  EXPECT_GT(packet_times(out, "a").size(), 20u);
}

// A video file output carries the input's sound, copied as it is at its times, up to the end of the last frame,
// where the container takes its codec; where it does not, or the writer is OpenCV's, the summary says so.
TEST(CliStream, AVideoFileOutputCarriesTheInputsSound) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV, which takes no sound";
  if (!testing::has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to make a video with sound";
  TempDir dir;
  const fs::path aac = dir.path() / "with_aac.mp4", pcm = dir.path() / "with_pcm.mkv";
  for (const CommandResult& made : {with_tone(video_file("clip_remuxed.mp4"), "aac", aac),
                                    with_tone(video_file("clip_vfr.mkv"), "pcm_s16le", pcm)}) {
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  // clip_remuxed.mp4's 28 frames are shown from 0 to 1.2 s (the last two 1 / 25 s after the one before).
  std::vector<double> expected;
  for (const double t : packet_times(aac, "a")) {
    if (t < 1.2) expected.push_back(t);
  }
  ASSERT_GT(expected.size(), 40u);
  for (const char* name : {"out.mkv", "out.mp4"}) {
    const fs::path out = dir.path() / name;
    const CommandResult run = imgpipe("stream --input " + quoted(aac) + " --output " + quoted(out) + " --ops flip=h");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_TRUE(contains(run.output, "; audio copied (aac)")) << run.output;
    ASSERT_NO_FATAL_FAILURE(expect_times_near(packet_times(out, "a"), expected, 0.0011, std::string(name) + " packet"));
  }
  const fs::path no_sound = dir.path() / "no_sound.mp4";
  const CommandResult refused =
      imgpipe("stream --input " + quoted(pcm) + " --output " + quoted(no_sound) + " --ops flip=h");
  ASSERT_EQ(refused.exit_code, 0) << refused.output;
  EXPECT_TRUE(contains(refused.output, "; audio not carried: MP4 (MPEG-4 Part 14) takes no pcm_s16le"))
      << refused.output;
  EXPECT_TRUE(packet_times(no_sound, "a").empty());
  // FLAC, which the MP4 muxer refuses only when it starts (as experimental): the video is still written.
  const fs::path flac = dir.path() / "with_flac.mkv", from_flac = dir.path() / "from_flac.mp4";
  ASSERT_EQ(with_tone(video_file("clip_vfr.mkv"), "flac", flac).exit_code, 0);
  const CommandResult flac_run =
      imgpipe("stream --input " + quoted(flac) + " --output " + quoted(from_flac) + " --ops flip=h");
  ASSERT_EQ(flac_run.exit_code, 0) << flac_run.output;
  EXPECT_TRUE(contains(flac_run.output, "; audio not carried: MP4 (MPEG-4 Part 14) takes no flac")) << flac_run.output;
  EXPECT_TRUE(fs::exists(from_flac));
  if (io::has_opencv_codecs()) {
    const CommandResult avi =
        imgpipe("stream --input " + quoted(aac) + " --output " + quoted(dir.path() / "out.avi") + " --ops flip=h");
    ASSERT_EQ(avi.exit_code, 0) << avi.output;
    EXPECT_TRUE(contains(avi.output, "; audio not carried: OpenCV's writer takes none")) << avi.output;
  }
}

// A video file output starts at 0, as the ffmpeg command's do, where the input starts late (a .ts's clock, a
// stream cut from a longer one): each frame at its time after the first frame's, and the sound moved with the
// pictures, without its packets from before the first frame.
TEST(CliStream, AVideoFileOutputStartsAtZeroWhereTheInputStartsLate) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV, at one rate from 0";
  if (!testing::has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to make a video that starts late";
  const bool nvdec_times = io::gpu_video_unavailable().empty() && io::container_demuxing_unavailable().empty();
  if (!nvdec_times && !io::ffmpeg_video_decoding_unavailable().empty()) {
    GTEST_SKIP() << "no decoder here gives a Matroska file's frames their times";
  }
  TempDir dir;
  const fs::path toned = dir.path() / "with_aac.mkv", late = dir.path() / "late.mkv";
  ASSERT_EQ(with_tone(video_file("clip_vfr.mkv"), "aac", toned).exit_code, 0);
  // The pictures 0.2 s after the sound, and the whole file 10 s late.
  const CommandResult made =
      testing::run_command("ffmpeg", "-loglevel error -i " + quoted(toned) + " -itsoffset 0.2 -i " + quoted(toned) +
                                         " -map 1:v -map 0:a -c copy -output_ts_offset 10 " + quoted(late));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::vector<double> late_frames = packet_times(late, "v");
  ASSERT_EQ(late_frames.size(), 30u);
  const double origin = late_frames.front();
  ASSERT_GT(origin, 10.0);
  std::vector<double> expected_frames;
  for (const double t : late_frames) expected_frames.push_back(t - origin);
  const std::vector<double> late_sound = packet_times(late, "a");
  std::vector<double> expected_sound;
  for (const double t : late_sound) {
    if (t >= origin) expected_sound.push_back(t - origin);
  }
  // Some of the sound comes before the first frame, and none after the last, whose end cuts the sound.
  ASSERT_GT(late_sound.size(), expected_sound.size());
  ASSERT_GT(expected_sound.size(), 40u);
  ASSERT_LT(late_sound.back(), late_frames.back());
  for (const char* name : {"out.mkv", "out.mp4"}) {
    const fs::path out = dir.path() / name;
    const CommandResult run = imgpipe("stream --input " + quoted(late) + " --output " + quoted(out) + " --ops flip=h");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_TRUE(contains(run.output, "; audio copied (aac)")) << run.output;
    ASSERT_NO_FATAL_FAILURE(
        expect_times_near(packet_times(out, "v"), expected_frames, 0.001, std::string(name) + " frame"));
    ASSERT_NO_FATAL_FAILURE(
        expect_times_near(packet_times(out, "a"), expected_sound, 0.0011, std::string(name) + " packet"));
  }
}

// OpenCV's writer (.avi) rounds an odd frame size down, so an odd size is refused with the way out rather than
// written a column and a row short.
TEST(CliStream, AnOddFrameSizeIsRefusedByOpenCvsWriterNotCut) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "no OpenCV here: .avi is not written";
  TempDir dir;
  const fs::path avi = dir.path() / "odd.avi";
  const CommandResult run =
      imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output " + quoted(avi) + " --ops resize=33x17");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_TRUE(contains(run.output, "a video of 33x17: OpenCV's writer (.avi) takes even widths and heights only"))
      << run.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 0) << "nothing left behind";
}

// A FIFO as --input with a video file output: its bytes are the decoder's alone, so the sound is not read from
// it a second time (the second reader would take bytes the decoder never sees), and every frame comes out.
TEST(CliStream, AFifoInputKeepsEveryFrameAndSaysWhyTheSoundStayedBehind) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!io::writes_timed_video("out.mkv")) GTEST_SKIP() << "this build writes videos with OpenCV, which takes no sound";
  if (!testing::has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to make a video with sound";
  TempDir dir;
  const fs::path with_sound = dir.path() / "with_sound.mkv", fifo = dir.path() / "fifo";
  ASSERT_EQ(with_tone(video_file("clip_vfr.mkv"), "aac", with_sound).exit_code, 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const CommandResult run = testing::run_command(
      IMGPIPE_BINARY,
      "stream --input " + quoted(fifo) + " --output " + quoted(dir.path() / "out.mkv") + " --ops flip=h",
      "cat " + quoted(with_sound) + " > " + quoted(fifo) + " & timeout 120");  // a second reader would hang
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "30 frames in")) << run.output;
  EXPECT_TRUE(contains(run.output, "audio not carried: the input is a pipe, a FIFO or a URL")) << run.output;
}

// An H.264 elementary stream through the decoder auto picks (NVDEC on a GPU engine, else the CPU's FFmpeg):
// every frame out, in order, within 2 levels of FFmpeg's own RGB (two flips are the identity).
TEST(CliStream, AnElementaryStreamDecodesLikeFfmpeg) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const CommandResult run = imgpipe("stream --input " + quoted(video_file("clip.h264")) +
                                    " --output - --ops flip=h,flip=h > " + quoted(dir.path() / "out.rgb"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "30 frames in")) << run.output;
  const bool nvdec = io::gpu_video_unavailable().empty();
  const std::string cpu_decoder = io::ffmpeg_video_decoding_unavailable().empty()
                                      ? "decoded by CPU (FFmpeg's h264 decoder, demuxed from raw H.264 video)"
                                      : "decoded by CPU (OpenCV)";
  EXPECT_TRUE(contains(run.output, nvdec ? "decoded by NVDEC (H.264" : cpu_decoder)) << run.output;
  const std::vector<std::uint8_t> out = testing::file_bytes(dir.path() / "out.rgb");
  const Size size{240, 136};
  ASSERT_EQ(out.size(), 30 * size.rgb_bytes());
  for (const int n : {0, 14, 29}) {
    const Image expected = io::read_ppm(video_file("ffmpeg_rgb") / ("clip.h264." + std::to_string(n) + ".ppm"));
    const auto first = out.begin() + static_cast<std::ptrdiff_t>(n * size.rgb_bytes());
    const Image got(size, std::vector<std::uint8_t>(first, first + static_cast<std::ptrdiff_t>(size.rgb_bytes())));
    EXPECT_LE(testing::max_abs_diff(got, expected), 2) << "frame " << n;
  }
}

// One stream over several NVDEC decoders: four copies of the sample (120 frames, an IDR picture every 12) cut
// into chunks of at least 48 pictures; the same bytes out as one decoder gives.
TEST(CliStream, OneStreamSplitOverDecodersGivesOneDecodersBytes) {
  if (!io::gpu_video_unavailable().empty()) GTEST_SKIP() << io::gpu_video_unavailable();
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend here";
  TempDir dir;
  const std::vector<std::uint8_t> once = testing::file_bytes(video_file("clip.h264"));
  {
    std::ofstream four(dir.path() / "four.h264", std::ios::binary);
    for (int copy = 0; copy < 4; ++copy) four.write(reinterpret_cast<const char*>(once.data()), once.size());
  }
  const std::string command = "stream --input " + quoted(dir.path() / "four.h264") + " --output - --ops gray";
  const CommandResult one = imgpipe(command + " --decoders 1 > " + quoted(dir.path() / "one.rgb"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const CommandResult split = imgpipe(command + " --decoders 3 > " + quoted(dir.path() / "split.rgb"));
  ASSERT_EQ(split.exit_code, 0) << split.output;
  EXPECT_TRUE(contains(split.output, "120 frames in")) << split.output;
  EXPECT_TRUE(contains(split.output, "3 decoders on 3 chunks cut at IDR pictures")) << split.output;
  EXPECT_EQ(testing::file_bytes(dir.path() / "split.rgb"), testing::file_bytes(dir.path() / "one.rgb"));

  const CommandResult short_clip =
      imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output - --ops gray > /dev/null");
  ASSERT_EQ(short_clip.exit_code, 0) << short_clip.output;
  EXPECT_TRUE(contains(short_clip.output, "one decoder: no IDR picture to cut the stream at after its first 48"))
      << short_clip.output;
}

// A video file output says which encoder wrote it, and why not NVENC.
TEST(CliStream, AVideoFileOutputNamesItsEncoder) {
  if (!io::has_opencv_codecs()) GTEST_SKIP() << "no OpenCV video writer in this build";
  if (!some_backend_usable()) GTEST_SKIP() << "no usable backend here";
  TempDir dir;
  const CommandResult run = imgpipe("stream --input " + quoted(video_file("clip.mp4")) + " --output " +
                                    quoted(dir.path() / "out.mp4") + " --ops flip=h");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string no_nvenc = io::nvenc_unavailable();
  EXPECT_TRUE(contains(run.output, "encoded on the CPU (" + io::video_writer_description(dir.path() / "out.mp4") +
                                       "; NVENC: " +
                                       (no_nvenc.empty() ? "present, but imgpipe has no NVENC writer yet" : no_nvenc) +
                                       ")"))
      << run.output;
}

TEST(CliStream, AFolderOutputGetsOneImagePerFrame) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path frames = dir.path() / "frames";
  const std::string command = "stream --input " + quoted(video_file("clip.h264")) + " --output " +
                              quoted(fs::path(frames.string() + "/")) + " --ops flip=h,flip=h --format ppm";
  const CommandResult run = imgpipe(command);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "30 frames in")) << run.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(frames), fs::directory_iterator{}), 30);
  const Image expected = io::read_ppm(video_file("ffmpeg_rgb") / "clip.h264.14.ppm");
  EXPECT_LE(testing::max_abs_diff(io::read_ppm(frames / "000014.ppm"), expected), 2);

  const CommandResult again = imgpipe(command);
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_TRUE(contains(again.output, "already holds frames (000000.ppm); --overwrite replaces them")) << again.output;
  EXPECT_EQ(imgpipe(command + " --overwrite").exit_code, 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(frames), fs::directory_iterator{}), 30) << "no temporaries left";
  // Frames of a longer video written there before are named when the new stream ends short of them.
  for (const char* stale : {"000030.ppm", "000031.ppm"}) fs::copy_file(frames / "000000.ppm", frames / stale);
  const CommandResult shorter = imgpipe(command + " --overwrite");
  EXPECT_EQ(shorter.exit_code, 0) << shorter.output;
  EXPECT_TRUE(contains(shorter.output,
                       "2 frames from an earlier run follow the last one written (000030.ppm to "
                       "000031.ppm); they are not this stream's"))
      << shorter.output;
  EXPECT_TRUE(fs::exists(frames / "000031.ppm")) << "the user's files are kept";
  // Any frame already there asks for --overwrite before anything is decoded, not only the first; a folder that
  // cannot be made is a usage error, as for batch.
  const fs::path later = dir.path() / "later";
  fs::create_directories(later);
  fs::copy_file(frames / "000003.ppm", later / "000003.ppm");
  const CommandResult held = imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output " +
                                     quoted(fs::path(later.string() + "/")) + " --ops flip=h --format ppm");
  EXPECT_EQ(held.exit_code, 2) << held.output;
  EXPECT_TRUE(contains(held.output, "already holds frames (000003.ppm); --overwrite replaces them")) << held.output;
  EXPECT_FALSE(fs::exists(later / "000000.ppm"));
  testing::write_bytes(dir.path() / "a-file", "x");
  const CommandResult under_a_file =
      imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output " +
              quoted(fs::path((dir.path() / "a-file" / "frames").string() + "/")) + " --ops flip=h --format ppm");
  EXPECT_EQ(under_a_file.exit_code, 2) << under_a_file.output;
  EXPECT_TRUE(contains(under_a_file.output, "cannot create the folder: Not a directory")) << under_a_file.output;

  if (!io::has_opencv_codecs()) return;  // the other formats are OpenCV's to write
  const fs::path tiffs = dir.path() / "tiffs";
  const CommandResult tif = imgpipe("stream --input " + quoted(video_file("clip.h264")) + " --output " +
                                    quoted(fs::path(tiffs.string() + "/")) + " --ops flip=h,flip=h --format tif");
  ASSERT_EQ(tif.exit_code, 0) << tif.output;
  EXPECT_EQ(testing::max_abs_diff(io::read_image(tiffs / "000014.tif").image, io::read_ppm(frames / "000014.ppm")), 0);
}

TEST(CliStream, TimingsSayWhereTheTimeWent) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const CommandResult run = imgpipe("stream --input " + quoted(video_file("clip.h264")) +
                                    " --output - --ops flip=h --timings > " + quoted(dir.path() / "out.rgb"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "timings: per frame, on average (of which on a core): reading and decoding "))
      << run.output;
  EXPECT_FALSE(contains(run.output, "GPU JPEG encoding")) << "an encoder that was not used is timed: " << run.output;
}

// A folder of videos: each into a folder of frames named after it, several at once; what is not a video is
// left alone.
// In a folder of videos, each video's messages start with its path, once: a message that names the file already
// gets no second name in front. Containers are taken by any of their usual names.
TEST(CliStream, AFolderOfVideosNamesEachVideoOnceInItsMessages) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  if (!cpu_decodes_video() && !io::container_demuxing_unavailable().empty()) {
    GTEST_SKIP() << "no decoder here takes an MP4 file (no CPU decoder, no container demuxer for NVDEC)";
  }
  TempDir dir;
  const fs::path videos = dir.path() / "videos";
  fs::create_directories(videos);
  fs::copy_file(video_file("clip.h264"), videos / "good.264");
  fs::copy_file(video_file("clip.mp4"), videos / "camcorder.mts");  // a container by any of its usual names
  testing::write_bytes(videos / "junk.mp4", "not a video");
  const CommandResult run =
      imgpipe("stream --input " + quoted(videos) + " --output " +
              quoted(fs::path((dir.path() / "out").string() + "/")) + " --ops flip=h --format ppm");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  const std::string junk = (videos / "junk.mp4").string() + ": ";
  EXPECT_TRUE(contains(run.output, "imgpipe: " + junk)) << run.output;
  EXPECT_FALSE(contains(run.output, junk + junk)) << run.output;
  EXPECT_FALSE(contains(run.output, "junk.mp4: " + junk)) << run.output;
  EXPECT_TRUE(contains(run.output, "imgpipe: " + (videos / "good.264").string() + ": 30 frames in")) << run.output;
  EXPECT_TRUE(contains(run.output, "imgpipe: " + (videos / "camcorder.mts").string() + ": ")) << run.output;
  EXPECT_TRUE(contains(run.output, "2 of 3 videos done cleanly")) << run.output;
}

TEST(CliStream, AFolderOfVideosGivesAFolderOfFramesPerVideo) {
  if (const std::string why = why_no_video_stream(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path videos = dir.path() / "videos";
  fs::create_directories(videos);
  for (const char* name : {"clip.h264", "clip.hevc"}) fs::copy_file(video_file(name), videos / name);
  fs::copy_file(video_file("clip.h264"), videos / "second.264");
  testing::write_bytes(videos / "notes.txt", "not a video");
  const fs::path out = dir.path() / "out";
  const CommandResult run =
      imgpipe("stream --input " + quoted(videos) + " --output " + quoted(fs::path(out.string() + "/")) +
              " --ops flip=h,flip=h --format ppm --jobs 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "3 videos, 2 at once")) << run.output;
  EXPECT_TRUE(contains(run.output, "3 of 3 videos done cleanly, 90 frames in")) << run.output;
  EXPECT_TRUE(contains(run.output, "second.264: 30 frames in")) << run.output;
  const Image expected = io::read_ppm(video_file("ffmpeg_rgb") / "clip.h264.29.ppm");
  for (const char* name : {"clip.h264", "second.264"}) {
    EXPECT_EQ(std::distance(fs::directory_iterator(out / name), fs::directory_iterator{}), 30) << name;
    EXPECT_LE(testing::max_abs_diff(io::read_ppm(out / name / "000029.ppm"), expected), 2) << name;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(out / "clip.hevc"), fs::directory_iterator{}), 30);
  EXPECT_FALSE(fs::exists(out / "notes.txt"));
  // The videos run on threads at once, and their messages come out whole: every line is imgpipe's own, and
  // auto's fallback to the cpu backend, where there is no GPU, is said once.
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.rfind("imgpipe: ", 0), 0u) << line;
  std::size_t notices = 0;
  for (std::size_t at = run.output.find("using the cpu backend"); at != std::string::npos;
       at = run.output.find("using the cpu backend", at + 1)) {
    ++notices;
  }
  EXPECT_LE(notices, 1u) << run.output;

  const CommandResult to_stdout = imgpipe("stream --input " + quoted(videos) + " --output - --ops flip=h");
  EXPECT_EQ(to_stdout.exit_code, 2) << to_stdout.output;
  EXPECT_TRUE(contains(to_stdout.output, "is a folder of videos, so --output must be a folder")) << to_stdout.output;

  const fs::path one = dir.path() / "one";
  fs::create_directories(one);
  fs::copy_file(video_file("clip.h264"), one / "clip.h264");
  const CommandResult single =
      imgpipe("stream --input " + quoted(one) + " --output " + quoted(fs::path((dir.path() / "out1").string() + "/")) +
              " --ops flip=h --format ppm");
  EXPECT_EQ(single.exit_code, 0) << single.output;
  EXPECT_TRUE(contains(single.output, "1 video, 1 at once")) << single.output;

  // A video that cannot be opened gives the folder the exit code it gives alone (3), and is not counted clean.
  testing::write_bytes(videos / "broken.mp4", "not a video");
  const CommandResult broken =
      imgpipe("stream --input " + quoted(videos) + " --output " +
              quoted(fs::path((dir.path() / "out2").string() + "/")) + " --ops flip=h --format ppm");
  EXPECT_EQ(broken.exit_code, 3) << broken.output;
  EXPECT_TRUE(contains(broken.output, "broken.mp4: ")) << broken.output;
  EXPECT_TRUE(contains(broken.output, "3 of 4 videos done cleanly")) << broken.output;
}

// Where the engine keeps frames on the device, JPEG frames are encoded from them by nvJPEG.
TEST(CliStream, JpegFramesAreEncodedOnTheGpuWhereTheyAreOnTheDevice) {
  if (!io::gpu_video_unavailable().empty() || !io::gpu_jpeg_unavailable().empty()) {
    GTEST_SKIP() << "needs NVDEC and nvJPEG on a CUDA device";
  }
  TempDir dir;
  const CommandResult run = imgpipe("stream --input " + quoted(video_file("clip.hevc")) + " --output " +
                                    quoted(fs::path(dir.path().string() + "/")) + " --ops resize=120x68 --encoder gpu");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "decoded by NVDEC (HEVC")) << run.output;
  EXPECT_TRUE(contains(run.output, "written as JPEG by the GPU (nvJPEG)")) << run.output;
  for (int n = 0; n < 30; ++n) {
    char name[16];
    std::snprintf(name, sizeof name, "%06d.jpg", n);
    const std::vector<std::uint8_t> jpeg = testing::file_bytes(dir.path() / name);
    EXPECT_TRUE(io::looks_like_jpeg(jpeg)) << name;
  }
}

}  // namespace
}  // namespace imgpipe
