// imgpipe batch: every image under a folder through the chain, into another folder.
#pragma once

#include "backend_choice.hpp"
#include "engine.hpp"
#include "gpu_jpeg.hpp"
#include "ppm.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace imgpipe::app {

struct BatchOptions {
  std::filesystem::path input_dir;
  std::filesystem::path output_dir;
  std::string ops;
  std::string backend = "auto";
  std::string format = "same";  // same | png | jpg | ppm
  int quality = 95;             // JPEG and WebP
  int jobs = 0;                 // decode/encode threads; 0: one per hardware thread
  bool overwrite = false;
  bool skip_existing = false;   // existing outputs are skipped (counted, not failed): resumes an interrupted batch
  bool follow_links = false;    // walk folders reached through symbolic links (each once, never the output)
  std::string shard;            // "K/N": only the files of shard K of N (io::keep_shard); empty: every file
  std::uint64_t max_pixels = io::kDefaultMaxPixels;  // per frame: the input, and every frame the chain makes
  std::string memory = "pinned";  // GPU host buffers: pageable | pinned | managed
  std::string devices = "all";    // CUDA devices of the optimized backend: all | a list such as 0,1 (parse_devices)
  int slots = 0;                  // frames in flight; 0: jobs + 2, at least 3 per device (io::kGpuJpegSlots per
                                  // device when decoding JPEG on the GPU)
  std::string decoder = "auto";   // JPEG decoding: auto | gpu | cpu
  std::string encoder = "auto";   // JPEG encoding: auto | gpu | cpu
  bool full_chroma = false;       // GPU JPEG encoding in 4:4:4 instead of 4:2:0
  int gpu_decode_threads = io::GpuJpegDecoder::Options{}.decode_threads;  // feeding the hardware JPEG decoder
  bool exact = true;              // GPU backends round as OpenCV does (Arithmetic::exact); --fast clears it
  bool timings = false;           // after the summary, where the time went (start-up, the job's stages, codecs)
};

// Runs the batch and returns its exit code: kExitOk, kExitSomeFailed, kExitDevice after a sticky CUDA error,
// or 128 + the signal after SIGINT/SIGTERM (see signals.hpp). Throws UsageError for bad arguments, before
// anything is written, and std::runtime_error when no backend can run.
// The engine comes from `make_engine_for_batch` (default: make_engine for --backend).
int run_batch(const BatchOptions& options);
int run_batch(const BatchOptions& options, const EngineFactory& make_engine_for_batch);

}  // namespace imgpipe::app
