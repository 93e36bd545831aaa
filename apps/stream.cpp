#include "stream.hpp"

#include "backend_choice.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "frame_stream.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace imgpipe::app {
namespace {

constexpr double kDefaultFps = 30.0;

// A video file is opened at the first frame, once the chain's output size is known.
class LazyVideoWriter final : public FrameWriter {
 public:
  LazyVideoWriter(std::string path, double fps) : path_(std::move(path)), fps_(fps) {}
  void write(ConstFrameView frame) override {
    if (!writer_) writer_ = io::open_video_writer(path_, frame.size, fps_);
    writer_->write(frame);
  }

 private:
  std::string path_;
  double fps_;
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
  void clear_progress() const {
    if (terminal_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  FrameWriter& inner_;
  bool terminal_;
  std::uint64_t frames_ = 0;
};

}  // namespace

int run_stream_command(const StreamOptions& options) {
  Chain chain;
  try {
    chain = parse_chain(options.ops);
  } catch (const ChainError& e) {
    throw UsageError(std::string("--ops: ") + e.what());
  }
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
  } else if (!options.size.empty()) {
    throw UsageError("--size applies to raw input (--input -); a video file knows its frame size");
  }
  if (options.fps < 0) throw UsageError("--fps must be positive");
  EngineOptions engine_options;
  engine_options.slots = options.slots;
  try {
    engine_options.memory = parse_memory_mode(options.memory);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }

  std::unique_ptr<FrameReader> reader;
  if (raw_in) {
    reader = std::make_unique<io::RawFrameReader>(STDIN_FILENO, *raw_size, "stdin");
  } else {
    reader = io::open_video_reader(options.input);
  }
  std::unique_ptr<FrameWriter> sink;
  if (raw_out) {
    sink = std::make_unique<io::RawFrameWriter>(STDOUT_FILENO, "stdout");
  } else {
    double fps = options.fps;
    if (fps == 0) fps = raw_in ? kDefaultFps : io::video_fps(options.input).value_or(kDefaultFps);
    sink = std::make_unique<LazyVideoWriter>(options.output, fps);
  }
  const std::unique_ptr<Engine> engine = make_engine(choose_backend_kind(options.backend), chain, engine_options);

  CountingWriter writer(*sink);
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t frames = run_stream(*engine, *reader, writer);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  writer.clear_progress();
  if (frames == 0) {
    std::cerr << "imgpipe: no frames in " << (raw_in ? "stdin" : options.input) << "\n";
    return kExitSomeFailed;
  }
  char summary[256];
  std::snprintf(summary, sizeof summary, "imgpipe: %llu frames in %.2f s (%.1f frames/s) on the %s\n",
                static_cast<unsigned long long>(frames), seconds, seconds > 0 ? frames / seconds : 0.0,
                engine->describe().c_str());
  std::cerr << summary;
  return kExitOk;
}

}  // namespace imgpipe::app
