// imgpipe stream: video frames through the chain, one frame out for every frame in, in order.
#pragma once

#include "backend_choice.hpp"
#include "chain.hpp"
#include "engine.hpp"
#include "ppm.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace imgpipe::app {

constexpr double kMaxFps = 1000;

struct StreamOptions {
  std::string input;   // a video file, or "-" for raw rgb24 on stdin
  std::string output;  // a video file, or "-" for raw rgb24 on stdout
  std::string ops;
  std::string size;    // WxH of raw input frames
  std::optional<double> fps;  // output frame rate; default: the input's, else 30
  bool overwrite = false;     // replace an existing output file
  std::string backend = "auto";
  std::string memory = "pinned";
  int slots = 3;
  std::uint64_t max_pixels = io::kDefaultMaxPixels;  // per frame: the input, and every frame the chain makes
};

// Returns the exit code: kExitOk; kExitSomeFailed when the input had no frames or a bad frame ended it (the
// frames before it were written); kExitDevice after a sticky CUDA error; 128 + the signal after SIGINT/SIGTERM.
// Throws UsageError for bad arguments, before anything is read or written.
// The engine comes from `make_engine_for_stream` (default: make_engine for --backend).
int run_stream_command(const StreamOptions& options);
int run_stream_command(const StreamOptions& options, const EngineFactory& make_engine_for_stream);

// The reader imgpipe stream runs on: every frame must have the first frame's size (a video's output has one
// size) and stay within `max_pixels`, for the frame and every frame the chain makes from it; errors name the
// frame, counted from 0. After SIGINT/SIGTERM (stop_signal()) it reports the end of the stream, so what is in
// flight is finished and nothing new is read; a cancelled raw read ends the stream the same way.
class StreamGuard final : public FrameReader {
 public:
  StreamGuard(FrameReader& inner, std::string name, const Chain& chain, std::uint64_t max_pixels);
  std::optional<Size> next_size() override;
  void read(FrameView frame) override;
  std::uint64_t frames_read() const { return frames_; }
  bool failed() const { return failed_; }  // the input itself was bad (not the engine, not the output)

 private:
  FrameReader& inner_;
  std::string name_;
  Chain chain_;
  std::uint64_t max_pixels_;
  std::optional<Size> first_;
  std::uint64_t frames_ = 0;
  bool failed_ = false;
};

}  // namespace imgpipe::app
