#include "stream.hpp"

#include "backend_choice.hpp"
#include "cuda_check.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "frame_stream.hpp"
#include "signals.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace imgpipe::app {
namespace {

constexpr double kDefaultFps = 30.0;

// A video file is opened at the first frame, once the chain's output size is known.
class LazyVideoWriter final : public FrameWriter {
 public:
  LazyVideoWriter(std::string path, double fps, io::Existing existing)
      : path_(std::move(path)), fps_(fps), existing_(existing) {}
  void write(ConstFrameView frame) override {
    if (!writer_) writer_ = io::open_video_writer(path_, frame.size, fps_, existing_);
    writer_->write(frame);
  }
  void close() override {
    if (writer_) writer_->close();
  }

 private:
  std::string path_;
  double fps_;
  io::Existing existing_;
  std::unique_ptr<FrameWriter> writer_;
};

// Counts frames and, on a terminal, shows progress on stderr.
class CountingWriter final : public FrameWriter {
 public:
  explicit CountingWriter(FrameWriter& inner) : inner_(inner), terminal_(::isatty(STDERR_FILENO) == 1) {}
  void write(ConstFrameView frame) override {
    inner_.write(frame);
    ++frames_;
    if (terminal_ && frames_ % 30 == 0) std::cerr << "\r\033[K" << frames_ << " frames" << std::flush;
  }
  void close() override { inner_.close(); }
  void clear_progress() const {
    if (terminal_) std::cerr << "\r\033[K" << std::flush;
  }
  std::uint64_t frames() const { return frames_; }

 private:
  FrameWriter& inner_;
  bool terminal_;
  std::uint64_t frames_ = 0;
};

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// True when descriptor `fd` (stdin, stdout) is the file at `path`.
bool descriptor_is(int fd, const std::string& path) {
  struct stat by_fd {}, by_path {};
  return ::fstat(fd, &by_fd) == 0 && ::stat(path.c_str(), &by_path) == 0 && S_ISREG(by_fd.st_mode) &&
         same_file(by_fd, by_path);
}

// Before anything is opened: an output that is the input (by any path: a link, a hard link, ./name, or the
// shell's redirection of stdin or stdout) would destroy it; an existing output needs --overwrite.
void check_output_path(const StreamOptions& options) {
  const bool raw_in = options.input == "-", raw_out = options.output == "-";
  const std::string refusal = "; writing it would destroy the input, so nothing was opened: choose another output";
  if (raw_out) {
    if (!raw_in && descriptor_is(STDOUT_FILENO, options.input)) {
      throw UsageError("stdout is the input file '" + options.input + "'" + refusal);
    }
    return;
  }
  struct stat output {};
  if (::stat(options.output.c_str(), &output) == 0) {  // follows links
    struct stat input {};
    if (raw_in ? descriptor_is(STDIN_FILENO, options.output)
               : ::stat(options.input.c_str(), &input) == 0 && same_file(input, output)) {
      throw UsageError("--output '" + options.output + "' is the input " +
                       (raw_in ? std::string("on stdin") : "'" + options.input + "'") + " (the same file)" + refusal);
    }
    if (S_ISDIR(output.st_mode)) throw UsageError("--output '" + options.output + "' is a folder, not a video file");
  }
  std::error_code error;
  if (!options.overwrite && std::filesystem::exists(std::filesystem::symlink_status(options.output, error))) {
    throw UsageError("--output '" + options.output + "' exists; --overwrite replaces it (once the new video is "
                     "complete)");
  }
}

}  // namespace

StreamGuard::StreamGuard(FrameReader& inner, std::string name, const Chain& chain, std::uint64_t max_pixels)
    : inner_(inner), name_(std::move(name)), chain_(chain), max_pixels_(max_pixels) {}

std::optional<Size> StreamGuard::next_size() {
  if (stop_signal() != 0) return std::nullopt;
  std::optional<Size> size;
  try {
    size = inner_.next_size();
  } catch (const io::StreamCancelled&) {
    return std::nullopt;  // between frames: nothing was lost
  } catch (...) {
    failed_ = true;
    throw;
  }
  if (!size) return size;
  const std::string frame = name_ + ": frame " + std::to_string(frames_);
  if (!first_) first_ = *size;
  if (*size != *first_) {
    failed_ = true;
    throw io::IoError(frame + " is " + to_string(*size) + " but the stream began at " + to_string(*first_) +
                      "; a stream keeps one frame size");
  }
  Size largest = *size, step = *size;
  for (const Op& op : chain_.ops) {
    step = output_size(op, step);
    if (step.pixels() > largest.pixels()) largest = step;
  }
  if (largest.pixels() > max_pixels_) {
    failed_ = true;
    throw io::PixelLimitError(frame + ": " +
                              (largest == *size ? "the frame" : "the chain makes a " + to_string(largest) + " frame that") +
                              " has " + std::to_string(largest.pixels()) + " pixels, more than the limit of " +
                              std::to_string(max_pixels_) + "; --max-pixels or IMGPIPE_MAX_PIXELS raises it");
  }
  return size;
}

void StreamGuard::read(FrameView frame) {
  try {
    inner_.read(frame);
  } catch (const io::StreamCancelled&) {
    throw;
  } catch (...) {
    failed_ = true;
    throw;
  }
  ++frames_;
}

int run_stream_command(const StreamOptions& options) {
  return run_stream_command(options, [&options](const Chain& chain, const EngineOptions& engine_options) {
    return make_engine(choose_backend_kind(options.backend), chain, engine_options);
  });
}

int run_stream_command(const StreamOptions& options, const EngineFactory& make_engine_for_stream) {
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
                       "; --max-pixels or IMGPIPE_MAX_PIXELS raises it");
    }
  } else if (!options.size.empty()) {
    throw UsageError("--size applies to raw input (--input -); a video file knows its frame size");
  } else if (std::error_code error; options.input.find('%') == std::string::npos &&
                                    options.input.find("://") == std::string::npos &&
                                    !std::filesystem::exists(options.input, error)) {
    // Image sequences (frame_%04d.png) and URLs are OpenCV's to resolve; a plain path must exist.
    throw UsageError("--input '" + options.input + "' does not exist");
  }
  if (options.fps && !(std::isfinite(*options.fps) && *options.fps > 0 && *options.fps <= kMaxFps)) {
    char text[160];
    std::snprintf(text, sizeof text, "--fps %g: the frame rate must be above 0 and at most %g", *options.fps, kMaxFps);
    throw UsageError(text);
  }
  check_output_path(options);
  EngineOptions engine_options;
  engine_options.slots = options.slots;
  try {
    engine_options.memory = parse_memory_mode(options.memory);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }

  const std::string input_name = raw_in ? "stdin" : options.input;
  std::unique_ptr<FrameReader> reader;
  if (raw_in) {
    reader = std::make_unique<io::RawFrameReader>(STDIN_FILENO, *raw_size, "stdin", stop_fd());
  } else {
    reader = io::open_video_reader(options.input, options.max_pixels);
  }
  StreamGuard guarded(*reader, input_name, chain, options.max_pixels);
  std::unique_ptr<FrameWriter> sink;
  if (raw_out) {
    sink = std::make_unique<io::RawFrameWriter>(STDOUT_FILENO, "stdout");
  } else {
    const double fps =
        options.fps.value_or(raw_in ? kDefaultFps : io::video_fps(options.input).value_or(kDefaultFps));
    sink = std::make_unique<LazyVideoWriter>(options.output, fps,
                                             options.overwrite ? io::Existing::replace : io::Existing::keep);
  }
  const std::unique_ptr<Engine> engine = make_engine_for_stream(chain, engine_options);

  CountingWriter writer(*sink);
  const auto start = std::chrono::steady_clock::now();
  auto summary = [&](const char* ending) {
    writer.clear_progress();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::uint64_t frames = writer.frames();
    char text[320];
    std::snprintf(text, sizeof text, "imgpipe: %llu frames%s in %.2f s (%.1f frames/s) on the %s\n",
                  static_cast<unsigned long long>(frames), ending, seconds, seconds > 0 ? frames / seconds : 0.0,
                  engine->describe().c_str());
    std::cerr << text;
  };
  auto stopped_by_signal = [&](const std::string& detail) {
    const int signal = stop_signal();
    summary(" written");
    std::cerr << "imgpipe: interrupted by " << signal_name(signal) << ": stopped reading " << input_name << " after "
              << guarded.frames_read() << " frames; the frames read were finished and written" << detail << "\n";
    return kExitSignalBase + signal;
  };
  // Frames already written are kept as a complete file; close() throws (exit 3) when it cannot be completed.
  try {
    run_stream(*engine, guarded, writer);
  } catch (const io::StreamCancelled& e) {
    writer.close();
    return stopped_by_signal(std::string(" (") + e.what() + ")");
  } catch (const cuda::CudaError& e) {
    if (!e.sticky()) throw;
    writer.clear_progress();
    std::cerr << "imgpipe: the GPU failed: " << e.what()
              << "; a sticky CUDA error leaves the device unusable for this process, so the stream stopped\n";
    writer.close();
    summary(" written before the GPU failed");
    return kExitDevice;
  } catch (const std::exception& e) {
    if (!guarded.failed()) throw;  // the engine or the output: a failure that stops the run, no output kept
    writer.clear_progress();
    std::cerr << "imgpipe: " << e.what() << "\n";
    writer.close();
    summary(" written before the bad frame");
    return kExitSomeFailed;
  }
  writer.close();
  if (stop_signal() != 0) return stopped_by_signal("");
  if (writer.frames() == 0) {
    writer.clear_progress();
    std::cerr << "imgpipe: no frames in " << input_name << "; nothing was written\n";
    return kExitSomeFailed;
  }
  summary("");
  return kExitOk;
}

}  // namespace imgpipe::app
