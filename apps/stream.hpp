// imgpipe stream: video frames through the chain, one frame out for every frame in, in order.
#pragma once

#include "backend_choice.hpp"
#include "engine.hpp"
#include "ppm.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace imgpipe::app {

// Frames in flight for a video or raw output, whose one writer takes frames in order.
constexpr int kDefaultStreamSlots = 3;

struct StreamOptions {
  std::string input;   // a video file, "-" for raw rgb24 on stdin, or a folder of videos (run --jobs at once)
  std::string output;  // a video file, "-" for raw rgb24 on stdout, or a folder (an existing one, or a name
                       // ending in /) for one image file per frame
  std::string ops;
  std::string size;    // WxH of raw input frames
  std::optional<double> fps;  // output frame rate; default: the input's, else 30
  std::string timestamps;     // where to write each output frame's time (mkvmerge's timestamp format v2); empty: none
  bool overwrite = false;     // replace an existing output file
  std::string backend = "auto";
  std::string decoder = "auto";  // video input: gpu (NVDEC), cpu, or auto (gpu where the engine keeps frames on the device)
  std::string format = "jpg";    // image files of a folder output: jpg, png or ppm
  int quality = 95;              // JPEG quality of a folder output
  std::string encoder = "auto";  // JPEG of a folder output: gpu (nvJPEG), cpu, or auto (as --decoder)
  int jobs = 0;                  // a folder of videos: streams at once; 0: one per NVDEC engine, else 4
  int decoders = 0;  // NVDEC decoders one stream is split over at its IDR pictures; 0: one per engine for a
                     // single video, one for each video of a folder
  std::string message_prefix;  // before every message that does not start with it (the video, in a folder)
  std::string memory = "pinned";
  std::string devices;  // CUDA devices (parse_devices), empty: the current one. A stream of host frames spreads
                        // over them, NVDEC's stays on the first; a folder's videos each run on one, in turn
  int slots = 0;       // 0: kDefaultStreamSlots, or the frame writers + 2 for a folder output; as many per device
  int sharing_streams = 1;  // streams of a folder of videos running at once, whose frame writers share the cores
  bool exact = true;  // GPU backends round as OpenCV does (Arithmetic::exact); --fast clears it
  bool timings = false;  // after the summary, the mean time a frame spent in each stage, and the GPU encoder's load
  std::uint64_t max_pixels = io::kDefaultMaxPixels;  // per frame: the input, and every frame the chain makes
};

// Returns the exit code: kExitOk; kExitSomeFailed when the input had no frames, a bad frame ended it (the
// frames before it were written), the decoder reported damaged frames (concealed and written) or the demuxer a
// damaged container (a file cut short); kExitDevice after a sticky CUDA error; 128 + the signal after
// SIGINT/SIGTERM.
// Throws UsageError for bad arguments, before anything is read or written.
// The engine comes from `make_engine_for_stream` (default: make_engine for --backend).
int run_stream_command(const StreamOptions& options);
int run_stream_command(const StreamOptions& options, const EngineFactory& make_engine_for_stream);

}  // namespace imgpipe::app
