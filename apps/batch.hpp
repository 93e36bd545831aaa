// imgpipe batch: every image under a folder through the chain, into another folder.
#pragma once

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
  std::string memory = "pinned";  // GPU host buffers: pageable | pinned | managed
  int slots = 0;                  // frames in flight; 0: jobs + 2, at most kMaxSlots
};

// Runs the batch and returns its exit code (kExitOk or kExitSomeFailed). Throws UsageError for bad
// arguments, before anything is written, and std::runtime_error when no backend can run or one fails for good.
int run_batch(const BatchOptions& options);

}  // namespace imgpipe::app
