#include "stream.hpp"

#include "backend_choice.hpp"
#include "device_resources.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "folder.hpp"
#include "frame_stream.hpp"
#include "gpu_video.hpp"
#include "image_file.hpp"
#include "job.hpp"
#include "progress.hpp"
#include "signals.hpp"
#include "timings.hpp"
#include "video_demux.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

namespace imgpipe::app {
namespace {

constexpr double kDefaultFps = 30.0;

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// The video files a stream writes (for others, such as .webm or .flv, OpenCV's writer prints why it cannot and
// fails only once the first frame is decoded).

// A folder output (an existing folder, or a name ending in /) gets one image file per frame.
bool is_folder_output(const std::string& output) {
  std::error_code error;
  return output != "-" && (output.ends_with('/') || std::filesystem::is_directory(output, error));
}

// True when descriptor `fd` (stdin, stdout) is the file at `path`.
bool descriptor_is(int fd, const std::string& path) {
  struct stat by_fd {}, by_path {};
  return ::fstat(fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 && S_ISREG(by_fd.st_mode) &&
         same_file(by_fd, by_path);
}

// True when stdin and stdout are one regular file (`< frames.rgb >> frames.rgb`): every frame written would be
// read again, so the stream would never end.
bool stdin_is_stdout() {
  struct stat in {};
  struct stat out {};
  return ::fstat(STDIN_FILENO, &in) == 0 && ::fstat(STDOUT_FILENO, &out) == 0 && S_ISREG(in.st_mode) &&
         same_file(in, out);
}

// True when `path` and `other` (an input or output, "-" for stdin or stdout) are one file: the same file where
// both exist, else the same path once resolved (./out.mp4 and out.mp4 before either is written).
bool is_same_file(const std::string& path, const std::string& other, int other_descriptor) {
  if (other == "-") return descriptor_is(other_descriptor, path);
  struct stat path_info {};
  struct stat other_info {};
  if (::stat(path.c_str(), &path_info) == 0 && ::stat(other.c_str(), &other_info) == 0) {
    return same_file(path_info, other_info);
  }
  std::error_code error_a, error_b;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(path), error_a);
  const std::filesystem::path other_resolved =
      std::filesystem::weakly_canonical(std::filesystem::absolute(other), error_b);
  return !error_a && !error_b && resolved == other_resolved;
}

// Why the folder `path` could not be made, or "" when it exists or can be: the nearest folder above it must
// take new entries. It is made with the first frame written, so a run that writes none leaves nothing behind.
std::string why_folder_cannot_be_made(const std::filesystem::path& path) {
  std::error_code error;
  std::filesystem::path existing = std::filesystem::absolute(path, error);
  if (error) return error.message();
  if (std::filesystem::exists(existing, error)) return "";
  while (!std::filesystem::exists(existing, error) && existing.has_relative_path()) existing = existing.parent_path();
  if (!std::filesystem::is_directory(existing, error)) return std::generic_category().message(ENOTDIR);
  return ::access(existing.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
}

// The file an input names (a file: URL's path), which the checks before decoding look at.
std::string input_file_path(const std::string& input) { return io::local_file_named(input).string(); }

// Before anything is opened: an output that is the input (by any path: a link, a hard link, ./name, or the
// shell's redirection of stdin or stdout) would destroy it; an existing output needs --overwrite.
void check_output_path(const StreamOptions& options) {
  const bool raw_in = options.input == "-", raw_out = options.output == "-";
  const std::string input = input_file_path(options.input);
  const std::string refusal = "; writing it would destroy the input, so nothing was opened: choose another output";
  if (raw_out) {
    if (raw_in && stdin_is_stdout()) throw UsageError("stdout is the input file on stdin" + refusal);
    if (!raw_in && descriptor_is(STDOUT_FILENO, input)) {
      throw UsageError("stdout is the input file '" + options.input + "'" + refusal);
    }
    return;
  }
  if (is_folder_output(options.output)) {
    if (const std::string why = why_folder_cannot_be_made(options.output); !why.empty()) {
      throw UsageError("--output '" + options.output + "': cannot create the folder: " + why);
    }
    if (options.overwrite) return;
    // Any frame of this format, not only the first: a later one would be refused mid-stream. The first one
    // there is named.
    const std::string extension = "." + options.format;
    std::string first;
    std::error_code error;  // a folder not made yet holds none
    for (const auto& entry : std::filesystem::directory_iterator(options.output, error)) {
      const std::string name = entry.path().filename().string();
      if (io::ImageSequenceSink::is_frame_name(name, extension) &&
          (first.empty() || std::pair(name.size(), name) < std::pair(first.size(), first))) {
        first = name;
      }
    }
    if (!first.empty()) {
      throw UsageError("--output '" + options.output + "' already holds frames (" + first +
                       "); --overwrite replaces them");
    }
    return;
  }
  struct stat output {};
  if (::stat(options.output.c_str(), &output) == 0) {  // follows links
    struct stat input_info {};
    if (raw_in ? descriptor_is(STDIN_FILENO, options.output)
               : ::stat(input.c_str(), &input_info) == 0 && same_file(input_info, output)) {
      throw UsageError("--output '" + options.output + "' is the input " +
                       (raw_in ? std::string("on stdin") : "'" + options.input + "'") + " (the same file)" + refusal);
    }
    if (S_ISDIR(output.st_mode)) throw UsageError("--output '" + options.output + "' is a folder, not a video file");
  }
  const std::string extension = io::lowercase_extension(options.output);
  if (io::is_image_extension(extension)) {
    throw UsageError("--output '" + options.output + "' names an image file; a stream goes to a video file " +
                     "(.mp4, .mkv, .mov, .avi), to a folder of frames (a name ending in /) or to stdout (-)");
  }
  if (!io::is_video_output_extension(extension)) {
    throw UsageError("--output '" + options.output + "': imgpipe writes videos as .mp4, .mkv, .mov or .avi (or a " +
                     "folder of frames, a name ending in /, or raw frames to stdout, -)");
  }
  std::error_code error;
  if (!options.overwrite && std::filesystem::exists(std::filesystem::symlink_status(options.output, error))) {
    throw UsageError("--output '" + options.output + "' exists; --overwrite replaces it (once the new video is "
                     "complete)");
  }
}

// The video file's reader: NVDEC where --decoder asks for it (gpu) or allows it (auto, on an engine that keeps
// frames on the device), else the CPU decoder. auto says in one line why NVDEC did not take a stream it reads.
std::unique_ptr<io::FrameReader> open_video_input(const StreamOptions& options, const Engine& engine,
                                                  Progress& progress) {
  if (options.decoder == "gpu" || (options.decoder == "auto" && engine.device_frames())) {
    try {
      io::GpuVideoSplit split;
      split.decoders = options.decoders > 0 ? options.decoders : std::max(1, io::gpu_video_engines());
      return io::open_gpu_video_reader(options.input, split);
    } catch (const io::GpuVideoRefusal& e) {
      if (options.decoder == "gpu") throw UsageError(std::string("--decoder gpu: ") + e.what());
      if (io::elementary_stream_codec(options.input) || io::container_demuxing_unavailable().empty()) {
        progress.message(std::string(e.what()) + "; decoding on the CPU");
      }
    }
  }
  return io::open_video_reader(options.input, options.max_pixels, stop_fd());
}

// --encoder for a folder output: the GPU where the engine keeps frames on the device, nvJPEG runs here and the
// files are JPEG (gpu insists, auto falls back to the CPU).
bool encodes_frames_on_gpu(const StreamOptions& options, const Engine& engine) {
  if (options.encoder == "cpu") return false;
  const std::string why_not =
      options.format != "jpg" ? "--format " + options.format + " is not JPEG" : io::gpu_jpeg_unavailable(engine);
  if (why_not.empty()) return true;
  if (options.encoder == "gpu") throw UsageError("--encoder gpu: " + why_not);
  return false;
}

// A stream's damaged frames, which the decoder concealed and which were written.
std::string damaged_frames_message(const std::string& input, const std::vector<std::uint64_t>& frames) {
  constexpr std::size_t kListed = 10;
  std::string text = input + ": " + std::to_string(frames.size()) + " frame" + (frames.size() == 1 ? "" : "s") +
                     " damaged in the bitstream (";
  for (std::size_t i = 0; i < frames.size() && i < kListed; ++i) text += (i ? ", " : "") + std::to_string(frames[i]);
  if (frames.size() > kListed) text += ", ...";
  return text + "); the decoder concealed the damage and they were written";
}

struct StreamResult {
  int exit_code = kExitOk;
  std::uint64_t frames = 0;  // written
};

StreamResult run_one_stream(const StreamOptions& options, const EngineFactory& make_engine_for_stream) {
  Chain chain;
  try {
    chain = parse_chain(options.ops);
  } catch (const ChainError& e) {
    throw UsageError(std::string("--ops: ") + e.what());
  }
  if (options.max_pixels < 1) throw UsageError("--max-pixels must be at least 1");
  const bool raw_in = options.input == "-";
  const bool raw_out = options.output == "-";
  std::optional<Size> raw_size;
  if (raw_in) {
    if (options.size.empty()) throw UsageError("--input -: raw rgb24 frames need --size WxH");
    raw_size = parse_size(options.size);
    if (!raw_size) {
      throw UsageError("--size '" + options.size + "': expected WxH with W and H from 1 to " +
                       std::to_string(kMaxDimension));
    }
    if (raw_size->pixels() > options.max_pixels) {
      throw UsageError("--size " + options.size + " is " + std::to_string(raw_size->pixels()) +
                       " pixels a frame, more than the limit of " + std::to_string(options.max_pixels) +
                       kPixelLimitHint);
    }
  } else if (!options.size.empty()) {
    throw UsageError("--size applies to raw input (--input -); a video file knows its frame size");
  } else if (std::error_code error; options.input.find('%') == std::string::npos &&
                                    input_file_path(options.input).find("://") == std::string::npos &&
                                    !std::filesystem::exists(input_file_path(options.input), error)) {
    // Image sequences (frame_%04d.png) and URLs other than file: are OpenCV's to resolve; a file must exist.
    throw UsageError("--input '" + options.input + "' does not exist");
  }
  if (options.fps && !(*options.fps >= io::kMinFps && *options.fps <= io::kMaxFps)) {  // NaN too
    char text[160];
    std::snprintf(text, sizeof text, "--fps %g: the frame rate must be at least %g and at most %g", *options.fps,
                  io::kMinFps, io::kMaxFps);
    throw UsageError(text);
  }
  check_output_path(options);
  if (!options.timestamps.empty()) {
    // The file is written once the stream has run: a path it cannot take would fail only then.
    std::error_code error;
    if (std::filesystem::is_directory(options.timestamps, error)) {
      throw UsageError("--timestamps '" + options.timestamps + "' is a folder, not a file");
    }
    const std::filesystem::path folder = std::filesystem::path(options.timestamps).parent_path();
    if (::access(folder.empty() ? "." : folder.c_str(), W_OK) != 0) {
      throw UsageError("--timestamps '" + options.timestamps +
                       "': cannot write into its folder: " + std::strerror(errno));
    }
    // A device or a FIFO (/dev/stdout, a named pipe) is written into; only a file is replaced.
    const std::filesystem::file_status found = std::filesystem::status(options.timestamps, error);
    const bool written_into = std::filesystem::exists(found) && !std::filesystem::is_regular_file(found);
    if (!options.overwrite && !written_into &&
        std::filesystem::exists(std::filesystem::symlink_status(options.timestamps, error))) {
      throw UsageError("--timestamps '" + options.timestamps + "' exists; --overwrite replaces it");
    }
    if (is_same_file(options.timestamps, input_file_path(options.input), STDIN_FILENO) ||
        is_same_file(options.timestamps, options.output, STDOUT_FILENO)) {
      throw UsageError("--timestamps '" + options.timestamps + "' is the stream's input or output");
    }
  }
  if (raw_in && options.decoder == "gpu") throw UsageError("--decoder gpu: raw rgb24 input needs no decoder");
  const bool folder_out = is_folder_output(options.output);
  // A folder output's frames are encoded and written on several threads at once, out of order (each file is
  // its own); a video or raw output has one writer, in frame order.
  const int frame_writers =
      folder_out ? std::max(2, job_workers(0) / std::max(1, options.sharing_streams)) : 1;
  EngineOptions engine_options;
  engine_options.arithmetic = options.exact ? Arithmetic::exact : Arithmetic::fast;
  engine_options.slots = options.slots > 0 ? options.slots
                         : folder_out      ? job_slots(frame_writers)
                                           : kDefaultStreamSlots;
  try {
    engine_options.memory = parse_memory_mode(options.memory);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }
  try {
    if (!options.devices.empty()) engine_options.devices = parse_devices(options.devices);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--") + e.what());
  }
  // By default each device gets the frames in flight one device would have.
  const int devices = std::max<int>(1, static_cast<int>(engine_options.devices.size()));
  if (options.slots == 0) engine_options.slots = std::min(kMaxSlots, engine_options.slots * devices);
  if (engine_options.slots < devices) {
    throw UsageError("--slots " + std::to_string(options.slots) + " is fewer than the " + std::to_string(devices) +
                     " devices of --devices; every device needs a slot");
  }

  if (!folder_out && options.encoder == "gpu") {
    throw UsageError("--encoder gpu: applies to a folder output (one JPEG file per frame)");
  }

  // NVDEC decodes on the current device: the first one listed.
  std::optional<CurrentDevice> first_device;
  if (!engine_options.devices.empty()) first_device.emplace(engine_options.devices.front());
  std::unique_ptr<Engine> engine = make_engine_for_stream(chain, engine_options);
  Progress progress(options.message_prefix);
  const std::string input_name = raw_in ? "stdin" : options.input;
  std::unique_ptr<io::FrameReader> reader;
  if (raw_in) {
    reader = std::make_unique<io::RawFrameReader>(STDIN_FILENO, *raw_size, "stdin", stop_fd());
  } else {
    try {
      reader = open_video_input(options, *engine, progress);
    } catch (const io::PixelLimitError& e) {  // as for a frame over the limit, which NVDEC's reader finds
      progress.message(e.what() + std::string(kPixelLimitHint) + "; nothing was written");
      return {kExitSomeFailed, 0};
    } catch (const io::StreamCancelled&) {  // stopped before the input said what it holds
      progress.message(std::string("interrupted by ") + signal_name(stop_signal()) + " while waiting for " +
                       input_name + " to start; nothing was written");
      return {kExitSignalBase + stop_signal(), 0};
    }
  }
  if (reader->decodes_on_device() && engine_options.devices.size() > 1) {
    // NVDEC's frames stay on its device: one stream decodes slower than one device runs the chain, so the others
    // would add nothing but copies between devices.
    progress.message("NVDEC decodes on device " + std::to_string(engine_options.devices.front()) +
                     ", so the stream runs there alone (a folder of videos spreads over the devices)");
    engine_options.devices.resize(1);
    engine.reset();
    engine = make_engine_for_stream(chain, engine_options);
  }
  io::FrameStreamSource source(*reader, input_name, chain, options.max_pixels, !options.timestamps.empty());
  const io::Existing existing = options.overwrite ? io::Existing::replace : io::Existing::keep;
  std::unique_ptr<io::FrameWriter> writer;
  std::optional<io::GpuJpegEncoders> frame_encoder;
  std::unique_ptr<Sink> sink;
  if (folder_out) {
    if (encodes_frames_on_gpu(options, *engine)) {
      frame_encoder.emplace(engine_options.devices, io::GpuJpegEncoder::Options{options.quality});
    }
    if (!frame_encoder && options.format != "ppm" && !io::has_opencv_codecs()) {
      throw UsageError("--format " + options.format + ": this build writes PPM only on the CPU (no OpenCV)" +
                       (options.format == "jpg" ? "; JPEG needs the GPU encoder here" : ""));
    }
    sink = std::make_unique<io::ImageSequenceSink>(options.output, "." + options.format, options.quality, existing,
                                                   frame_encoder ? &*frame_encoder : nullptr);
  } else {
    if (raw_out) {
      writer = std::make_unique<io::RawFrameWriter>(STDOUT_FILENO, "stdout");
    } else {
      const double fps = options.fps.value_or(reader->frame_rate().value_or(kDefaultFps));
      // A video file's sound goes along, and an anamorphic video's shape and its colour space; raw frames have
      // none of them.
      const std::optional<DisplayAspect> shown_as = reader->display_aspect();
      writer = io::open_video_writer_at_first_frame(
          options.output, fps, existing,
          raw_in ? std::filesystem::path() : std::filesystem::path(input_file_path(options.input)),
          {shown_as ? std::optional(output_display_aspect(chain, *shown_as)) : std::nullopt,
           reader->rgb_color_space()});
    }
    sink = std::make_unique<io::FrameStreamSink>(*writer);
  }

  JobOptions job;
  job.workers = frame_writers;
  job.stop_at_first_failure = true;
  job.stop_requested = [] { return stop_signal() != 0; };  // what is in flight still finishes
  const JobSummary result = run_job(source, *engine, *sink, job, [&](const ItemResult& item) {
    if (item.status == ItemResult::Status::done && (item.item.index + 1) % 30 == 0) {
      const std::uint64_t done = item.item.index + 1;
      const std::optional<std::uint64_t> expected = reader->frames_expected();
      progress.show(std::to_string(done) + " frames" +
                    (expected && *expected >= done ? " of about " + std::to_string(*expected) + " (" +
                                                         std::to_string(100 * done / *expected) + "%)"
                                                   : ""));
    }
  });

  // The output, then the frames' times beside it: of the frames written, whatever stopped the stream. Frames of
  // an earlier run after the last one written (--overwrite into a folder of a longer video) are named, not
  // deleted: they are the user's files.
  auto finish_output = [&] {
    sink->close();
    if (folder_out) {
      const std::string extension = "." + options.format;
      std::uint64_t stale = result.done;
      std::error_code error;
      while (std::filesystem::exists(io::ImageSequenceSink::frame_path(options.output, stale, extension), error)) {
        ++stale;
      }
      if (stale > result.done) {
        progress.message("--output '" + options.output + "': " + std::to_string(stale - result.done) +
                         " frames from an earlier run follow the last one written (" +
                         io::ImageSequenceSink::frame_path(options.output, result.done, extension).filename().string() +
                         " to " +
                         io::ImageSequenceSink::frame_path(options.output, stale - 1, extension).filename().string() +
                         "); they are not this stream's");
      }
    }
    if (options.timestamps.empty() || result.done == 0) return;  // no frame, no times: nothing was written
    const std::string text = io::timestamps_v2(source.frame_times(), result.done,
                                               options.fps.value_or(reader->frame_rate().value_or(kDefaultFps)));
    io::write_file_atomically(options.timestamps,
                              {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, existing);
  };
  std::string video_encoder;
  if (!raw_out && !folder_out) {  // asking for NVENC opens an encode session: only for a video file
    const std::string no_nvenc = io::nvenc_unavailable();
    video_encoder = ", encoded on the CPU (" + io::video_writer_description(options.output) + "; NVENC: " +
                    (no_nvenc.empty() ? "present, but imgpipe has no NVENC writer yet" : no_nvenc) + ")";
  }
  auto summary = [&](const char* ending) {
    std::string notes = writer && !writer->audio().empty() ? "; " + writer->audio() : "";
    if (writer && !writer->tags_not_declared().empty()) notes += "; " + writer->tags_not_declared();
    char counts[128];
    std::snprintf(counts, sizeof counts, "%llu %s%s in %.2f s (%.1f frames/s) on the ",
                  static_cast<unsigned long long>(result.done), result.done == 1 ? "frame" : "frames", ending,
                  result.seconds, result.seconds > 0 ? result.done / result.seconds : 0.0);
    progress.message(counts + engine->describe() + ", decoded by " + reader->decoder() +
                     (raw_out         ? ""
                      : !folder_out   ? video_encoder
                      : frame_encoder ? ", written as JPEG by the GPU (nvJPEG)"
                                      : ", written by the CPU") +
                     notes);
    if (!options.timings) return;
    progress.message(stage_timings(result, "frame"));
    if (!frame_encoder) return;
    for (const auto& encoder : frame_encoder->all()) {
      progress.message(encoder_timings(*encoder, result.seconds, frame_encoder->all().size() > 1));
    }
  };
  auto stopped_by_signal = [&](const std::string& detail) {
    const int signal = stop_signal();
    summary(" written");
    progress.message(std::string("interrupted by ") + signal_name(signal) + ": stopped reading " + input_name +
                     " after " + std::to_string(source.frames_read()) +
                     " frames; the frames read were finished and written" + detail);
    return StreamResult{kExitSignalBase + signal, result.done};
  };
  // Frames already written are kept as a complete file; close() throws (exit 3) when it cannot be completed.
  if (!result.device_failure.empty()) {
    progress.message("the GPU failed: " + result.device_failure +
                     "; a sticky CUDA error leaves the device unusable for this process, so the stream stopped");
    finish_output();
    summary(" written before the GPU failed");
    return {kExitDevice, result.done};
  }
  if (result.first_failure) {
    const ItemResult& failure = *result.first_failure;
    try {
      std::rethrow_exception(failure.error);
    } catch (const io::StreamCancelled& e) {
      finish_output();
      return stopped_by_signal(std::string(" (") + e.what() + ")");
    } catch (const io::PixelLimitError& e) {
      progress.message(e.what() + std::string(kPixelLimitHint));
      finish_output();
      summary(" written before the bad frame");
      return {kExitSomeFailed, result.done};
    } catch (const std::exception& e) {
      if (failure.stage != Stage::read) throw;  // the engine or the output: the run stops, no output kept
      progress.message(e.what());
      finish_output();
      summary(" written before the bad frame");
      return {kExitSomeFailed, result.done};
    }
  }
  finish_output();
  if (stop_signal() != 0) return stopped_by_signal("");
  if (result.done == 0) {
    progress.message("no frames in " + input_name + "; nothing was written");
    return {kExitSomeFailed, 0};
  }
  summary("");
  int exit_code = kExitOk;
  if (const std::vector<std::uint64_t> damaged = reader->corrupt_frames(); !damaged.empty()) {
    progress.message(damaged_frames_message(input_name, damaged));
    exit_code = kExitSomeFailed;
  }
  if (const std::string damage = reader->container_damage(); !damage.empty()) {
    progress.message(input_name + ": the container is damaged or cut short (FFmpeg's demuxer: " + damage +
                     "); frames may be missing, the " + std::to_string(result.done) + " read were written");
    exit_code = kExitSomeFailed;
  }
  return {exit_code, result.done};
}

// The files a folder of videos runs: elementary streams and the containers OpenCV's FFmpeg reads.
bool is_video_file(const std::filesystem::path& path) {
  static const std::array<std::string_view, 13> containers{".mp4",  ".mkv", ".avi", ".mov",  ".webm", ".m4v", ".ts",
                                                           ".m2ts", ".mts", ".mpg", ".mpeg", ".flv",  ".3gp"};
  return io::elementary_stream_codec(path) ||
         std::ranges::find(containers, io::lowercase_extension(path)) != containers.end();
}

// Every video of a folder, --jobs at once in this process (one CUDA context: on the H200, 14 streams in one
// process decoded and ran the chain at twice the rate of 14 processes), each into a folder of frames named
// after it.
int run_video_folder(const StreamOptions& options, const EngineFactory& make_engine_for_stream) {
  if (!is_folder_output(options.output)) {
    throw UsageError("--input '" + options.input + "' is a folder of videos, so --output must be a folder (one "
                     "folder of frames per video; a name ending in /)");
  }
  if (!options.size.empty()) throw UsageError("--size applies to raw input (--input -)");
  if (!options.timestamps.empty()) throw UsageError("--timestamps names one file: give one video as --input");
  std::vector<std::filesystem::path> videos;
  for (const auto& entry : std::filesystem::directory_iterator(options.input)) {
    if (entry.is_regular_file() && is_video_file(entry.path())) videos.push_back(entry.path());
  }
  std::ranges::sort(videos);
  if (videos.empty()) {
    throw UsageError("--input '" + options.input +
                     "' holds no video files (.h264, .264, .avc, .hevc, .h265, "
                     ".265, .mp4, .mkv, .avi, .mov, .webm, .m4v, .ts, .m2ts, .mts, .mpg, .mpeg, .flv, .3gp)");
  }
  std::vector<int> devices;
  try {
    if (!options.devices.empty()) devices = parse_devices(options.devices);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--") + e.what());
  }
  int jobs = options.jobs;
  if (jobs <= 0) {  // one per NVDEC engine of every device, where the GPU says how many it has
    const int engines = io::gpu_video_engines();
    jobs = engines > 0 ? engines * std::max<int>(1, static_cast<int>(devices.size())) : 4;
  }
  jobs = std::min<int>(jobs, static_cast<int>(videos.size()));
  Progress progress;
  progress.message(std::to_string(videos.size()) + (videos.size() == 1 ? " video, " : " videos, ") +
                   std::to_string(jobs) + " at once" +
                   (devices.size() > 1 ? " over devices " + device_list_text(devices) : ""));
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> frames{0};
  std::vector<std::optional<int>> exit_codes(videos.size());  // none for a video never started (interrupted)
  const auto start = std::chrono::steady_clock::now();
  // Each thread runs its videos on one device, taking the next video once its last is done: a device whose
  // videos go slower takes fewer of them.
  auto work = [&](int thread) {
    for (std::size_t i; stop_signal() == 0 && (i = next++) < videos.size();) {
      StreamOptions one = options;
      if (!devices.empty()) one.devices = std::to_string(devices[static_cast<std::size_t>(thread) % devices.size()]);
      one.input = videos[i].string();
      one.output = (std::filesystem::path(options.output) / videos[i].filename()).string() + "/";
      one.message_prefix = videos[i].string() + ": ";
      one.decoders = options.decoders > 0 ? options.decoders : 1;  // the videos already share the engines
      one.sharing_streams = jobs;
      try {
        const StreamResult result = run_one_stream(one, make_engine_for_stream);
        exit_codes[i] = result.exit_code;
        frames += result.frames;
      } catch (const UsageError& e) {  // each exit code as the video alone would give it
        progress.message(prefixed(one.message_prefix, e.what()));
        exit_codes[i] = kExitUsage;
      } catch (const std::exception& e) {
        progress.message(prefixed(one.message_prefix, e.what()));
        exit_codes[i] = kExitRuntime;
      }
    }
  };
  std::vector<std::thread> streams;
  for (int j = 0; j < jobs; ++j) streams.emplace_back(work, j);
  for (std::thread& stream : streams) stream.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto clean = std::ranges::count(exit_codes, std::optional<int>(kExitOk));
  const auto not_started = std::ranges::count_if(exit_codes, [](const auto& code) { return !code; });
  const std::string not_started_text = not_started > 0 ? ", " + std::to_string(not_started) + " not started" : "";
  char text[240];
  std::snprintf(text, sizeof text, "%lld of %zu videos done cleanly%s, %llu frames in %.2f s (%.1f frames/s)",
                static_cast<long long>(clean), videos.size(), not_started_text.c_str(),
                static_cast<unsigned long long>(frames.load()), seconds, seconds > 0 ? frames.load() / seconds : 0.0);
  progress.message(text);
  if (const int signal = stop_signal(); signal != 0) return kExitSignalBase + signal;
  int worst = kExitOk;
  for (const std::optional<int>& code : exit_codes) worst = std::max(worst, code.value_or(kExitOk));
  return worst;
}

}  // namespace

int run_stream_command(const StreamOptions& options) {
  return run_stream_command(options, [&options](const Chain& chain, const EngineOptions& engine_options) {
    return make_engine(choose_backend_kind(options.backend), chain, engine_options);
  });
}

int run_stream_command(const StreamOptions& options, const EngineFactory& make_engine_for_stream) {
  if (std::error_code error; options.input != "-" && std::filesystem::is_directory(options.input, error)) {
    return run_video_folder(options, make_engine_for_stream);
  }
  return run_one_stream(options, make_engine_for_stream).exit_code;
}

}  // namespace imgpipe::app
