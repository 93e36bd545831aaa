// imgpipe: batch-process image folders through an op chain on the CPU (OpenCV) or the GPU (CUDA).
#include "backends.hpp"
#include "backend_choice.hpp"
#include "batch.hpp"
#include "bench_command.hpp"
#include "chain.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "frame_stream.hpp"
#include "gpu_jpeg.hpp"
#include "gpu_video.hpp"
#include "image_file.hpp"
#include "library_logging.hpp"
#include "progress.hpp"
#include "signals.hpp"
#include "stream.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace {

using namespace imgpipe;
using namespace imgpipe::app;

constexpr const char* kExitCodesHelp = R"(Exit codes:
  0    every file (or frame) succeeded
  1    some files failed (each is reported on stderr with its path and reason); a stream had no
       frames, or a bad frame ended it (the frames before it were written)
  2    usage error: bad arguments, a bad op chain, bad folders; nothing was written
  3    no usable backend, or a failure that stopped the run
  4    the GPU failed with a sticky CUDA error (e.g. an illegal address); the run stopped
  130  SIGINT, 143 SIGTERM: no new files or frames were read, those in flight were finished;
       a second Ctrl-C aborts at once with 130, removing the outputs not yet complete)";

// As printf's %g writes it: 1000, not std::to_string's 1000.000000.
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

int list_backends() {
  std::printf("%-10s %-12s %-7s %s\n", "backend", "compiled in", "usable", "detail");
  for (const BackendInfo& b : available_backends()) {
    std::printf("%-10s %-12s %-7s %s\n", std::string(to_string(b.kind)).c_str(), b.compiled_in ? "yes" : "no",
                b.usable ? "yes" : "no", b.detail.c_str());
  }
  try {
    std::printf("auto picks: %s\n", std::string(to_string(resolve_auto_backend(nullptr))).c_str());
  } catch (const std::exception& e) {
    std::printf("auto picks: nothing (%s)\n", e.what());
  }
  for (const std::string& line : io::describe_gpu_jpeg()) std::printf("%s\n", line.c_str());
  for (const std::string& line : io::describe_gpu_video()) std::printf("%s\n", line.c_str());
  std::printf("CPU image codecs: %s\n", io::describe_cpu_codecs().c_str());
  std::printf("CPU video decoding: %s\n", io::video_readers_description().c_str());
  return kExitOk;
}

// How the GPU engine holds frames and rounds, shared by batch and stream.
void add_engine_options(CLI::App& command, std::string& memory, int& slots, const std::string& slots_default,
                        bool& exact) {
  command.add_flag("--exact,!--fast", exact,
                   "--exact (the default): GPU backends give the cpu backend's bytes for every op (OpenCV's 8-bit "
                   "arithmetic); --fast: linear resize runs the fastest kernels instead, within one level of those "
                   "bytes")
      ->capture_default_str();
  command.add_option("--memory", memory, "GPU engine host buffers: pageable, pinned or managed (unified memory)")
      ->check(CLI::IsMember({"pageable", "pinned", "managed"}))
      ->capture_default_str();
  auto* option = command.add_option(
      "--slots", slots,
      "Frames in flight in the GPU engine (" + std::string(slots_default.empty() ? "1" : "0") + ".." +
          std::to_string(kMaxSlots) + ")" + (slots_default.empty() ? "" : "; " + slots_default));
  option->check(CLI::Range(slots_default.empty() ? 1 : 0, kMaxSlots));
  if (slots_default.empty()) option->capture_default_str();
}

// --devices, shared by batch, stream and bench.
void add_devices_option(CLI::App& command, std::string& devices, const std::string& what) {
  command.add_option("--devices", devices,
                     "CUDA devices the optimized backend runs on: all, or device numbers such as 0,1 (as "
                     "CUDA_VISIBLE_DEVICES leaves them numbered); " + what);
}

constexpr std::uint64_t kMostMaxPixels = std::uint64_t{1} << 34;

// IMGPIPE_MAX_PIXELS's value: a whole number from 1 to kMostMaxPixels, digits only, as --max-pixels takes it.
std::optional<std::uint64_t> max_pixels_value(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (value < 1 || value > kMostMaxPixels) return std::nullopt;
  return value;
}

// The decompression-bomb guard, shared by batch and stream.
void add_max_pixels_option(CLI::App& command, std::uint64_t& max_pixels) {
  command
      .add_option("--max-pixels", max_pixels,
                  "Refuse images (and frames the chain makes) above this many pixels, from the header, "
                  "before decoding; where not given, IMGPIPE_MAX_PIXELS in the environment sets it")
      ->check(CLI::Range(std::uint64_t{1}, kMostMaxPixels))
      ->capture_default_str();
}

// The first word that is not an option, when it names no command: CLI11 alone would only say that a command
// is required.
// (imgpipe's own options before the command are flags, so that word is the command.)
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (command->get_name() == argv[i]) return "";
    }
    return argv[i];
  }
  return "";
}

std::string command_list(const CLI::App& app) {
  std::string list;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    list += (list.empty() ? "" : ", ") + command->get_name();
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"imgpipe: a streaming RGB image pipeline; op chains on the CPU (OpenCV) or a CUDA GPU", "imgpipe"};
  app.set_version_flag("--version", std::string("imgpipe ") + IMGPIPE_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // imgpipe's own flags (--verbose) after the command too
  app.footer(std::string(chain_help()) + "\n\n" + kExitCodesHelp);

  BatchOptions batch;
  CLI::App* batch_command =
      app.add_subcommand("batch", "Run the chain on every image under INPUT_DIR (recursively) into OUTPUT_DIR");
  batch_command->add_option("INPUT_DIR", batch.input_dir, "Folder of images; never modified")
      ->required()
      ->check(CLI::ExistingDirectory);
  batch_command->add_option("OUTPUT_DIR", batch.output_dir, "Where outputs go, keeping relative paths and base names")
      ->required()
      ->check(CLI::Validator([](const std::string& folder) { return folder.empty() ? "an empty folder name" : ""; },
                             "FOLDER"));
  batch_command->add_option("--ops", batch.ops, "The op chain, e.g. \"resize=1280x720,gaussian=5:1.0\"")->required();
  batch_command->add_option("--backend", batch.backend, "auto: optimized with a CUDA device, else cpu")
      ->check(CLI::IsMember({"auto", "cpu", "naive", "optimized"}))
      ->capture_default_str();
  batch_command->add_option("--format", batch.format, "Output format; same keeps each input's")
      ->check(CLI::IsMember({"same", "png", "jpg", "ppm", "webp", "bmp", "tif"}))
      ->capture_default_str();
  batch_command->add_option("--quality", batch.quality, "JPEG/WebP quality")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  batch_command->add_option("--jobs", batch.jobs, "Decode/encode threads; 0 = one per hardware thread")
      ->check(CLI::Range(0, kMaxJobs))
      ->capture_default_str();
  auto* overwrite =
      batch_command->add_flag("--overwrite", batch.overwrite, "Replace existing outputs (otherwise each is reported)");
  batch_command->add_flag("--skip-existing", batch.skip_existing,
                          "Skip inputs whose output exists (resumes an interrupted batch)")
      ->excludes(overwrite);
  add_max_pixels_option(*batch_command, batch.max_pixels);
  batch_command->add_option("--shard", batch.shard,
                            "K/N: only shard K (from 0) of N, for N copies of this command on N machines with no "
                            "overlap (the split hashes each file's relative path; README: Slurm, Kubernetes)");
  batch_command->add_flag("--follow-links", batch.follow_links,
                          "Also walk folders reached through symbolic links (each folder once, so loops end; never "
                          "links back into the input or into the output folder)");
  add_engine_options(*batch_command, batch.memory, batch.slots,
                     "0: jobs + 2 (at least 3 per device), or " + std::to_string(io::kGpuJpegSlots) +
                         " per device when JPEG is decoded on the GPU",
                     batch.exact);
  add_devices_option(*batch_command, batch.devices,
                     "default all: each device runs its own engine slots and GPU JPEG codecs, and takes the "
                     "next images whenever it has the least work queued");
  batch_command->add_option("--decoder", batch.decoder,
                            "JPEG decoding: gpu (nvJPEG: hardware JPEG engines, else GPU hybrid; what they refuse "
                            "falls back to the CPU), cpu, or auto (gpu on the optimized backend with nvJPEG)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}))
      ->capture_default_str();
  batch_command->add_option("--encoder", batch.encoder,
                            "JPEG encoding: gpu (nvJPEG, on the SMs), cpu, or auto (gpu on the optimized backend with nvJPEG)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}))
      ->capture_default_str();
  batch_command->add_option("--gpu-decode-threads", batch.gpu_decode_threads,
                            "Threads handing JPEG files to the GPU's hardware JPEG decoder, two files in flight each "
                            "(the default was fastest in the folder job on an H200, whose decoder has 7 engines)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  batch_command->add_flag("--full-chroma", batch.full_chroma,
                          "GPU JPEG encoding with 4:4:4 chroma (default 4:2:0, as the CPU encoder writes)");
  batch_command->add_flag("--timings", batch.timings,
                          "After the summary, show where the time went: start-up, each stage of the job per image "
                          "(and the part of it on a core), the cores in use, and how busy the GPU JPEG codecs were");
  batch_command->footer(std::string(chain_help()));

  StreamOptions stream;
  CLI::App* stream_command = app.add_subcommand(
      "stream", "Run the chain on every frame of a video file, or of raw rgb24 frames on stdin (with --size)");
  stream_command->add_option("--input", stream.input,
                             "Video file, - for raw rgb24 frames on stdin, or a folder of videos (each into a folder "
                             "of frames in --output, --jobs at once)")
      ->required();
  stream_command->add_option("--jobs", stream.jobs,
                             "A folder of videos: streams at once; 0 = one per NVDEC engine (7 on an H200), else 4")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  stream_command->add_option("--output", stream.output,
                             "Video file (.mp4, .mkv, .mov: each frame at its time where FFmpeg's libraries are built "
                             "in; .avi), - for raw rgb24 on stdout, or a folder (existing, or a name ending in /) for "
                             "one image per frame, 000000.jpg on. Never the input file; an existing file is refused "
                             "unless --overwrite is given")
      ->required();
  stream_command->add_flag("--overwrite", stream.overwrite,
                           "Replace an existing output file (only once the new one is complete)");
  stream_command->add_option("--ops", stream.ops, "The op chain, e.g. \"resize=1280x720,gaussian=5:1.0\"")->required();
  stream_command->add_option("--size", stream.size, "WxH of the raw input frames (--input -)");
  add_max_pixels_option(*stream_command, stream.max_pixels);
  stream_command->add_option("--fps", stream.fps,
                             "Output frame rate for a video file (for frames without a time of their own), at least " +
                                 number_text(io::kMinFps) + " and at most " + number_text(io::kMaxFps) +
                                 "; default: the rate the input declares, else 30");
  stream_command->add_option("--timestamps", stream.timestamps,
                             "Also write each output frame's time, in ms, to this file (mkvmerge's timestamp format "
                             "v2): the input's own times where it has them (a container's), else 1/fps apart; an "
                             "existing file is replaced only with --overwrite, a device or FIFO (/dev/stderr) is "
                             "written into");
  stream_command->add_option("--backend", stream.backend, "auto: optimized with a CUDA device, else cpu")
      ->check(CLI::IsMember({"auto", "cpu", "naive", "optimized"}))
      ->capture_default_str();
  add_engine_options(*stream_command, stream.memory, stream.slots,
                     "0: " + std::to_string(kDefaultStreamSlots) +
                         ", or for a folder output one per frame writer + 2 (the hardware threads share the "
                         "writers out over the videos running at once, at least 2 each); as many per device "
                         "when one stream spreads over several",
                     stream.exact);
  add_devices_option(*stream_command, stream.devices,
                     "default: the first device. A folder's videos each run on one of them in turn; one stream "
                     "of raw frames or frames decoded on the CPU spreads over them; one that NVDEC decodes stays "
                     "on the first");
  stream_command
      ->add_option("--decoder", stream.decoder,
                   "Video decoding: gpu (NVDEC, for H.264 and HEVC: elementary streams .h264, .264, .avc, "
                   ".hevc, .h265, .265 and, where the build has FFmpeg's libavformat, containers such as "
                   ".mp4, .mkv, .mov), cpu (FFmpeg's libraries where the build has them, else OpenCV), or "
                   "auto (gpu where the engine keeps frames on the device and NVDEC takes the stream, else "
                   "cpu, saying why)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}))
      ->capture_default_str();
  stream_command->add_option("--decoders", stream.decoders,
                             "NVDEC decoders one stream is split over: the stream is cut at its IDR pictures and "
                             "the pieces decoded side by side, frames kept in order; 0 = one per NVDEC engine for "
                             "a single video, one per video of a folder; 1 = no split")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  stream_command->add_option("--format", stream.format, "Image files of a folder output")
      ->check(CLI::IsMember({"jpg", "png", "ppm", "webp", "bmp", "tif"}))
      ->capture_default_str();
  stream_command->add_option("--quality", stream.quality, "JPEG/WebP quality of a folder output")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  stream_command->add_option("--encoder", stream.encoder,
                             "JPEG of a folder output: gpu (nvJPEG, from the device frames), cpu, or auto (gpu on the "
                             "optimized backend with nvJPEG)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}))
      ->capture_default_str();
  stream_command->add_flag("--timings", stream.timings,
                           "After the summary, show the mean time a frame spent in each stage (and the part of it on "
                           "a core), and how busy the GPU JPEG encoder was");
  stream_command->footer(std::string(chain_help()) + R"(

A video output keeps the input's frame rate, is written under a temporary name and renamed into place
once complete; a failed write exits with 3 and leaves nothing under the output's name.

With ffmpeg (pass the frame rate on: raw video carries none, and ffmpeg would assume 25 fps):
  ffmpeg -i in.mp4 -f rawvideo -pix_fmt rgb24 - | imgpipe stream --input - --size 1920x1080 --output - \
    --ops resize=1280x720 | ffmpeg -f rawvideo -pix_fmt rgb24 -s 1280x720 -framerate 30 -i - out.mp4)");

  bench::Options bench;
  CLI::App* bench_command = add_bench_command(app, bench);

  CLI::App* backends_command =
      app.add_subcommand("backends", "List the backends compiled in, whether each is usable here, and the GPU");

  bool verbose = false;
  app.add_flag("--verbose", verbose, "Show the warnings of the libraries imgpipe uses (OpenCV, FFmpeg, GStreamer)");

  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    std::cerr << "imgpipe: '" << printable(unknown) << "' is not a command; the commands are " << command_list(app)
              << " (imgpipe --help explains them)\n";
    return kExitUsage;
  }
  // CLI11's errors as imgpipe's own: prefixed like every other message, pointing at the help of the command given.
  app.failure_message([](const CLI::App* root, const CLI::Error& e) {
    std::string command = "imgpipe";
    for (const CLI::App* sub : root->get_subcommands()) command += " " + sub->get_name();
    return "imgpipe: " + std::string(e.what()) + " (" + command + " --help explains the options)\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version, or the error
    return code == 0 ? kExitOk : kExitUsage;
  }
  // IMGPIPE_MAX_PIXELS where --max-pixels is not given, read here rather than through CLI11's envname: CLI11 2.4
  // and later drop an environment value that fails the option's check, and a bad limit must be an error. It is
  // named as the environment's, not blamed on a flag that was not given.
  const bool max_pixels_given = std::any_of(argv + 1, argv + argc, [](const char* argument) {
    return std::string_view(argument).starts_with("--max-pixels");
  });
  if (const char* environment = std::getenv("IMGPIPE_MAX_PIXELS");
      environment != nullptr && !max_pixels_given && (*batch_command || *stream_command)) {
    const std::optional<std::uint64_t> limit = max_pixels_value(environment);
    if (!limit) {
      std::cerr << "imgpipe: IMGPIPE_MAX_PIXELS='" << printable(environment)
                << "' in the environment: expected a whole number of pixels from 1 to " << kMostMaxPixels
                << ", as --max-pixels takes (imgpipe " << (*batch_command ? "batch" : "stream")
                << " --help explains the options)\n";
      return kExitUsage;
    }
    batch.max_pixels = stream.max_pixels = *limit;
  }

  io::set_library_logging(verbose);
  try {
    if (*batch_command || *stream_command) install_signal_handling();  // SIGINT/SIGTERM: finish, summarise, 130/143
    if (*bench_command) report_failed_writes();
    if (*backends_command) return list_backends();
    if (*batch_command) return run_batch(batch);
    if (*bench_command) return run_bench(bench);
    if (*stream_command) return run_stream_command(stream);
  } catch (const UsageError& e) {
    std::cerr << "imgpipe: " << printable(e.what()) << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "imgpipe: " << printable(e.what()) << "\n";
    return kExitRuntime;
  }
  return kExitUsage;  // unreachable: require_subcommand(1) rejects a missing command
}
