// GPU JPEG (io/gpu_jpeg.hpp) against OpenCV's decoder on real photographs and their variants (odd size, 4:2:2,
// 4:4:4, progressive, grayscale, every EXIF orientation), made with OpenCV's Python module by make_jpeg_samples.py;
// the encoder by round trip; and the batch command decoding and encoding a folder on the GPU, with a corrupt
// and a truncated file among the photos. Skips without a CUDA device, without nvJPEG, or without the samples.
#include "batch.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "exit_codes.hpp"
#include "file_bytes.hpp"
#include "gpu_jpeg.hpp"
#include "ppm.hpp"
#include "signals.hpp"
#include "image_file.hpp"
#include "skip_without_device.hpp"
#include "test_crafted_images.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace imgpipe {
namespace {

namespace fs = std::filesystem;

const fs::path kSamples = IMGPIPE_JPEG_SAMPLES_DIR;

#define SKIP_WITHOUT_GPU_JPEG()                                                                          \
  SKIP_WITHOUT_DEVICE();                                                                                 \
  if (const std::string why = io::gpu_jpeg_unavailable(); !why.empty()) GTEST_SKIP() << why;            \
  if (!fs::exists(kSamples / "samples.txt"))                                                             \
  GTEST_SKIP() << "no JPEG samples in " << kSamples << ": make_jpeg_samples.py needs OpenCV's Python module"

std::vector<std::string> sample_names() {
  std::ifstream list(kSamples / "samples.txt");
  std::vector<std::string> names;
  for (std::string name; std::getline(list, name);) names.push_back(name);
  return names;
}

struct Decoded {
  Image image;
  io::JpegDecoder decoder{};
};

// Decodes into a poisoned device buffer, so a pixel the decoder did not write shows.
Decoded decode_on_gpu(io::GpuJpegDecoder& decoder, std::span<const std::uint8_t> jpeg) {
  cuda::DeviceBuffer buffer;
  const cuda::Stream stream = cuda::Stream::create();
  Size size;
  Decoded out;
  out.decoder = decoder.decode(
      jpeg,
      [&](Size s) {
        size = s;
        buffer.grow(s.rgb_bytes());
        IMGPIPE_CUDA_CHECK(cudaMemset(buffer.data(), 0xA5, s.rgb_bytes()));
        return DeviceFrame{buffer.data(), s, stream.get()};
      },
      io::kDefaultMaxPixels);
  out.image = Image(size);
  IMGPIPE_CUDA_CHECK(cudaMemcpy(out.image.data(), buffer.data(), size.rgb_bytes(), cudaMemcpyDeviceToHost));
  return out;
}

struct Difference {
  int max = 0;
  double mean = 0;
  double psnr = 0;  // dB; infinity for equal images
};

Difference difference(const Image& a, const Image& b) {
  Difference d;
  double sum = 0, squares = 0;
  for (std::size_t i = 0; i < a.bytes(); ++i) {
    const int delta = std::abs(int(a.data()[i]) - int(b.data()[i]));
    d.max = std::max(d.max, delta);
    sum += delta;
    squares += double(delta) * delta;
  }
  d.mean = sum / double(a.bytes());
  const double mse = squares / double(a.bytes());
  d.psnr = mse == 0 ? INFINITY : 10 * std::log10(255.0 * 255.0 / mse);
  return d;
}

// The GPU decoders against OpenCV's (libjpeg-turbo with its default "fancy" chroma upsampling), as
// docs/gpu-jpeg.md states it. The hardware engines' YCbCr planes of 4:2:0, 4:4:4 and grayscale files, converted
// by libjpeg's rules, are imread's bytes exactly. Elsewhere (4:2:2 and other layouts, which the engines convert
// to RGB themselves, and the hybrid backend's progressive files) nvJPEG upsamples chroma and rounds its IDCT
// differently, so colour edges move by a few levels; the picture as a whole stays within these bounds.
constexpr double kMinPsnr = 40.0;
constexpr double kMaxMeanDifference = 1.0;

// Every sample is 4:2:0, 4:4:4 or grayscale but the one whose name says 4:2:2.
bool converted_from_planes(const std::string& name, io::JpegDecoder decoder) {
  return decoder == io::JpegDecoder::hardware && name.find("_422") == std::string::npos;
}

// Each test below runs with the files handed to the engines both ways: the decoupled decoder's threads and the
// batched lanes.
class GpuJpegDecodeThrough : public ::testing::TestWithParam<io::GpuJpegDecoder::HardwareApi> {
 protected:
  static io::GpuJpegDecoder::Options options() { return {.hardware_api = GetParam()}; }
};

INSTANTIATE_TEST_SUITE_P(HardwareApis, GpuJpegDecodeThrough,
                         ::testing::Values(io::GpuJpegDecoder::HardwareApi::decoupled,
                                           io::GpuJpegDecoder::HardwareApi::batched),
                         [](const auto& info) {
                           return info.param == io::GpuJpegDecoder::HardwareApi::decoupled ? "Decoupled" : "Batched";
                         });

TEST_P(GpuJpegDecodeThrough, HardwareDecodesEqualOpenCvAndTheRestStayWithinTheDocumentedTolerance) {
  SKIP_WITHOUT_GPU_JPEG();
  io::GpuJpegDecoder decoder(options());
  std::printf("%-24s %-11s %-13s %4s %6s %7s\n", "sample", "size", "decoder", "max", "mean", "PSNR dB");
  for (const std::string& name : sample_names()) {
    SCOPED_TRACE(name);
    const Image expected = io::read_ppm(kSamples / (name + ".ppm"));
    const std::vector<std::uint8_t> jpeg = io::read_file(kSamples / (name + ".jpg"));
    const Decoded got = decode_on_gpu(decoder, jpeg);
    ASSERT_EQ(got.image.size(), expected.size()) << "EXIF orientation or size differs from OpenCV's";
    const Difference d = difference(got.image, expected);
    std::printf("%-24s %-11s %-13s %4d %6.3f %7.2f\n", name.c_str(), to_string(got.image.size()).c_str(),
                std::string(to_string(got.decoder)).c_str(), d.max, d.mean, d.psnr);
    if (converted_from_planes(name, got.decoder)) {
      EXPECT_EQ(d.max, 0) << "the hardware's planes, converted as libjpeg converts them, are imread's bytes";
    }
    EXPECT_GE(d.psnr, kMinPsnr);
    EXPECT_LE(d.mean, kMaxMeanDifference);
    if (name.find("progressive") != std::string::npos) {
      EXPECT_NE(got.decoder, io::JpegDecoder::hardware) << "the hardware backend decodes baseline JPEG only";
    }
    if ((name.find("1080p") != std::string::npos || name.find("_422") != std::string::npos) &&
        decoder.has_hardware()) {
      EXPECT_EQ(got.decoder, io::JpegDecoder::hardware) << "a baseline photo belongs on the hardware";
    }
  }
  if (decoder.has_hardware()) {
    const io::GpuJpegDecoder::HardwareActivity activity = decoder.hardware_activity();
    EXPECT_GT(activity.files, 0u);
    if (GetParam() == io::GpuJpegDecoder::HardwareApi::batched) {
      EXPECT_EQ(activity.api, io::GpuJpegDecoder::HardwareApi::batched);
    }
    std::printf("hardware files went through the %s API\n",
                activity.api == io::GpuJpegDecoder::HardwareApi::decoupled ? "decoupled" : "batched");
  }
}

TEST_P(GpuJpegDecodeThrough, FilesDecodedTogetherEqualEachDecodedAlone) {
  SKIP_WITHOUT_GPU_JPEG();
  io::GpuJpegDecoder decoder(options());
  std::vector<std::vector<std::uint8_t>> files;
  std::vector<Image> alone;
  for (const std::string& name : sample_names()) {
    files.push_back(io::read_file(kSamples / (name + ".jpg")));
    alone.push_back(decode_on_gpu(decoder, files.back()).image);
  }
  // Many threads at once, each file several times: the batched lanes batch whatever waits together, the
  // decoupled decoder's threads take the files in turn into their states.
  constexpr int kRounds = 4;
  std::vector<std::future<Image>> together;
  for (int round = 0; round < kRounds; ++round) {
    for (const auto& file : files) {
      together.push_back(std::async(std::launch::async, [&] { return decode_on_gpu(decoder, file).image; }));
    }
  }
  for (std::size_t i = 0; i < together.size(); ++i) {
    const Image image = together[i].get();
    const Image& expected = alone[i % files.size()];
    ASSERT_EQ(image.size(), expected.size());
    EXPECT_EQ(std::memcmp(image.data(), expected.data(), image.bytes()), 0) << "file " << i % files.size();
  }
}

TEST(GpuJpegDecode, RefusesBytesNoGpuDecoderTakesWithoutAllocating) {
  SKIP_WITHOUT_GPU_JPEG();
  io::GpuJpegDecoder decoder({});
  const std::vector<std::uint8_t> garbage = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x02, 'n', 'o', 't', ' ', 'a', ' ', 'J'};
  bool allocated = false;
  try {
    decoder.decode(garbage, [&](Size) { allocated = true; return DeviceFrame{}; }, io::kDefaultMaxPixels);
    FAIL() << "garbage was decoded";
  } catch (const io::GpuJpegRefusal& refusal) {
    EXPECT_FALSE(refusal.allocated());
  }
  EXPECT_FALSE(allocated);
}

TEST(GpuJpegDecode, RefusesAnImageOverThePixelLimitBeforeAllocating) {
  SKIP_WITHOUT_GPU_JPEG();
  io::GpuJpegDecoder decoder({});
  const std::vector<std::uint8_t> jpeg = io::read_file(kSamples / "rocket_1080p_q90.jpg");
  bool allocated = false;
  EXPECT_THROW(decoder.decode(jpeg, [&](Size) { allocated = true; return DeviceFrame{}; }, 1000),
               io::PixelLimitError);
  EXPECT_FALSE(allocated);
}

// Where nvJPEG's own reading of the EXIF orientation and imread's differ, the GPU turns the frame as imread
// does (and so as the CPU decoder does): only the first APP1 segment counts, and the first Orientation entry.
TEST(GpuJpegDecode, TurnsAFileUprightByImreadsReadingOfItsExif) {
  SKIP_WITHOUT_GPU_JPEG();
  io::GpuJpegDecoder decoder({});
  using testing::exif;
  using testing::tiff;
  using testing::with_app1;
  const std::vector<std::uint8_t> plain = io::read_file(kSamples / "rocket_1080p_q90.jpg");
  const Decoded upright = decode_on_gpu(decoder, plain);
  ASSERT_EQ(upright.image.size(), (Size{1920, 1080}));

  const std::string xmp = "http://ns.adobe.com/xap/1.0/";
  const Decoded xmp_first =
      decode_on_gpu(decoder, with_app1(with_app1(plain, exif(tiff(true, {{0x0112, 3, 1, 6}}))),
                                       std::vector<std::uint8_t>(xmp.begin(), xmp.end())));
  ASSERT_EQ(xmp_first.image.size(), upright.image.size()) << "the Exif segment after an XMP one turned the frame";
  EXPECT_EQ(difference(xmp_first.image, upright.image).max, 0);

  const Decoded turned = decode_on_gpu(decoder, with_app1(plain, exif(tiff(false, {{0x0112, 3, 1, 3}}))));
  ASSERT_EQ(turned.image.size(), upright.image.size());
  const Decoded first_entry =
      decode_on_gpu(decoder, with_app1(plain, exif(tiff(false, {{0x0112, 3, 1, 3}, {0x0112, 3, 1, 6}}))));
  ASSERT_EQ(first_entry.image.size(), upright.image.size()) << "the second Orientation entry counted";
  EXPECT_EQ(difference(first_entry.image, turned.image).max, 0);
  EXPECT_GT(difference(turned.image, upright.image).max, 0) << "orientation 3 turned nothing";

  // An IFD malformed before its Orientation entry: with OpenCV in the build, the CPU decoder takes the file.
  const std::vector<std::uint8_t> ambiguous =
      with_app1(plain, exif(tiff(true, {{0x010E, 2, 64, 900}, {0x0112, 3, 1, 6}})));
  if (io::has_opencv_codecs()) {
    bool allocated = false;
    try {
      decoder.decode(ambiguous, [&](Size) { allocated = true; return DeviceFrame{}; }, io::kDefaultMaxPixels);
      FAIL() << "decoded a file whose orientation only OpenCV can read";
    } catch (const io::GpuJpegRefusal& refusal) {
      EXPECT_FALSE(refusal.allocated());
    }
    EXPECT_FALSE(allocated);
  } else {
    EXPECT_NO_THROW(decode_on_gpu(decoder, ambiguous));
  }
}

// Encodes OpenCV's decode of a photo on the GPU, decodes the result on the GPU, and compares with the photo.
Difference round_trip(const Image& photo, const io::GpuJpegEncoder::Options& options, std::vector<std::uint8_t>& jpeg) {
  io::GpuJpegEncoder encoder(options);
  io::GpuJpegDecoder decoder({});
  cuda::DeviceBuffer frame(photo.bytes());
  IMGPIPE_CUDA_CHECK(cudaMemcpy(frame.data(), photo.data(), photo.bytes(), cudaMemcpyHostToDevice));
  jpeg = encoder.encode(DeviceFrame{frame.data(), photo.size(), nullptr});
  const Decoded back = decode_on_gpu(decoder, jpeg);
  EXPECT_EQ(back.image.size(), photo.size());
  return difference(back.image, photo);
}

TEST(GpuJpegEncode, RoundTripKeepsThePhotographAtEveryChroma) {
  SKIP_WITHOUT_GPU_JPEG();
  for (const char* name : {"rocket_1080p_q90", "astronaut_odd_333x217"}) {
    SCOPED_TRACE(name);
    const Image photo = io::read_ppm(kSamples / (std::string(name) + ".ppm"));
    std::vector<std::uint8_t> at_420, at_444;
    const Difference d420 = round_trip(photo, {95, false}, at_420);
    const Difference d444 = round_trip(photo, {95, true}, at_444);
    std::printf("%s: quality 95, 4:2:0 %zu bytes %.2f dB; 4:4:4 %zu bytes %.2f dB\n", name, at_420.size(), d420.psnr,
                at_444.size(), d444.psnr);
    ASSERT_GE(at_420.size(), 4u);
    EXPECT_TRUE(io::looks_like_jpeg(at_420));
    EXPECT_EQ(at_420[at_420.size() - 2], 0xFF);
    EXPECT_EQ(at_420.back(), 0xD9);  // a whole file, ending in EOI
    EXPECT_GE(d420.psnr, 36.0);
    EXPECT_GT(d444.psnr, d420.psnr) << "full chroma keeps more of the picture";
    EXPECT_GT(at_444.size(), at_420.size());
  }
  const Image photo = io::read_ppm(kSamples / "rocket_1080p_q90.ppm");
  std::vector<std::uint8_t> low, high;
  round_trip(photo, {50, false}, low);
  round_trip(photo, {95, false}, high);
  EXPECT_LT(low.size(), high.size()) << "quality reaches the encoder";
}

// `imgpipe batch IN OUT --ops resize=320x240,gaussian=3:0.8 --decoder gpu --encoder gpu --quality 90` on the
// optimized backend; its outputs are 320x240 JPEGs.
app::BatchOptions gpu_batch_options(const fs::path& in, const fs::path& out) {
  app::BatchOptions options;
  options.input_dir = in;
  options.output_dir = out;
  options.ops = "resize=320x240,gaussian=3:0.8";
  options.backend = "optimized";
  options.decoder = "gpu";
  options.encoder = "gpu";
  options.quality = 90;
  return options;
}

// The files under `out` after a gpu_batch_options() run, each checked to be a whole 320x240 JPEG and none a
// temporary.
std::size_t whole_outputs(const fs::path& out) {
  io::GpuJpegDecoder decoder({});
  std::size_t outputs = 0;
  for (const auto& entry : fs::recursive_directory_iterator(out)) {
    const std::string file = entry.path().filename().string();
    if (file[0] == '.') {
      ADD_FAILURE() << "a temporary was left behind: " << file;
      continue;
    }
    ++outputs;
    EXPECT_EQ(decode_on_gpu(decoder, io::read_file(entry.path())).image.size(), (Size{320, 240})) << file;
  }
  return outputs;
}

TEST(GpuJpegBatch, DecodesAndEncodesAFolderOnTheGpuAndReportsTheCorruptFiles) {
  SKIP_WITHOUT_GPU_JPEG();
  const testing::TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  fs::create_directories(in);
  const std::vector<std::string> names = sample_names();
  for (int copy = 0; copy < 3; ++copy) {  // enough files to fill hardware batches
    for (const std::string& name : names) {
      fs::copy_file(kSamples / (name + ".jpg"), in / (name + "_" + std::to_string(copy) + ".jpg"));
    }
  }
  const std::vector<std::uint8_t> photo = io::read_file(kSamples / "rocket_1080p_q90.jpg");
  const std::string whole(photo.begin(), photo.end());
  testing::write_bytes(in / "m_truncated.jpg", whole.substr(0, whole.size() / 2));
  std::string scrambled_photo = whole;
  for (std::size_t i = whole.size() / 3; i < whole.size() - 2; i += 7) scrambled_photo[i] = '\xFF';
  testing::write_bytes(in / "m_scrambled.jpg", scrambled_photo);
  testing::write_bytes(in / "m_not_a_jpeg.jpg", "plain text, not an image");

  const app::BatchOptions options = gpu_batch_options(in, out);
  const int code = app::run_batch(options);
  EXPECT_EQ(code, app::kExitSomeFailed);

  const std::size_t outputs = whole_outputs(out);
  // A scrambled entropy-coded segment may still decode (to garbage, as libjpeg's would): written or refused,
  // either is fair, but never a half-written file.
  const std::size_t scrambled = fs::exists(out / "m_scrambled.jpg") ? 1 : 0;
  EXPECT_EQ(outputs, names.size() * 3 + scrambled) << "every photo written, no corrupt file written";
  EXPECT_FALSE(fs::exists(out / "m_truncated.jpg"));
  EXPECT_FALSE(fs::exists(out / "m_not_a_jpeg.jpg"));
}

// SIGINT in the middle of a GPU JPEG batch: no new file is started, the files in flight are finished, and every
// output is a whole JPEG under its own name, with no temporary left behind.
TEST(GpuJpegBatch, SigintFinishesTheFilesInFlightAndLeavesOnlyWholeOutputs) {
  SKIP_WITHOUT_GPU_JPEG();
  const testing::TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  fs::create_directories(in);
  constexpr int kFiles = 400;  // several hardware batches of 1080p photos: the signal comes while most wait
  for (int i = 0; i < kFiles; ++i) {
    fs::copy_file(kSamples / "rocket_1080p_q90.jpg", in / ("photo_" + std::to_string(1000 + i) + ".jpg"));
  }
  const app::BatchOptions options = gpu_batch_options(in, out);
  app::clear_stop_for_tests();
  std::future<int> batch = std::async(std::launch::async, [&] { return app::run_batch(options); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);  // a hang guard
  bool written = false;
  while (!written && std::chrono::steady_clock::now() < deadline &&
         batch.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    if (!fs::exists(out)) continue;
    for (const auto& entry : fs::directory_iterator(out)) written |= entry.path().filename().string()[0] != '.';
  }
  app::request_stop(SIGINT);
  const int code = batch.get();
  app::clear_stop_for_tests();
  ASSERT_TRUE(written) << "no output appeared";
  if (code == app::kExitOk) GTEST_SKIP() << "the batch finished before the signal; nothing to check";
  EXPECT_EQ(code, 130);

  const std::size_t outputs = whole_outputs(out);
  EXPECT_GE(outputs, 1u);
  EXPECT_LT(outputs, static_cast<std::size_t>(kFiles)) << "files were started after the signal";
}

}  // namespace
}  // namespace imgpipe
