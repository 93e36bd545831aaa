// imgpipe stream: video frames through the chain, one frame out for every frame in, in order.
#pragma once

#include <string>

namespace imgpipe::app {

struct StreamOptions {
  std::string input;   // a video file, or "-" for raw rgb24 on stdin
  std::string output;  // a video file, or "-" for raw rgb24 on stdout
  std::string ops;
  std::string size;    // WxH of raw input frames
  double fps = 0;      // output frame rate; 0: the input's, else 30
  std::string backend = "auto";
  std::string memory = "pinned";
  int slots = 3;
};

// Returns the exit code. Throws UsageError for bad arguments, before anything is read or written.
int run_stream_command(const StreamOptions& options);

}  // namespace imgpipe::app
