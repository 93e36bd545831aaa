// The frames `imgpipe bench` runs: synthetic ones with the structure of a photograph, or real ones from files.
#pragma once

#include "image.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace imgpipe::bench {

// A frame that looks like footage: smooth gradients, hard-edged shapes that move with `index`, a band of fine
// stripes (high frequencies for the filters), and per-pixel noise, so no two frames and no two rows are equal
// and nothing is zero or constant. Deterministic in (size, index). Rows are made in parallel.
Image synthetic_frame(Size size, int index);

// `frame` repeated or cut to `size`: pixel (x, y) is frame's (x mod width, y mod height). Keeps the photo's
// own content at its own scale, with no resampling to favour any backend.
Image fit_to_size(const Image& frame, Size size);

struct BenchFrames {
  std::vector<Image> frames;  // all of one size
  Size size;
  std::string source;  // "synthetic", or the input path and what was read from it
};

// Up to `count` distinct frames. Without `input`: synthetic ones of `size` (1920x1080 when not given).
// With `input`: a folder's images (sorted, recursively) or one image file (every frame is that image), or a
// video's first frames; each is fitted to `size`, or to the first frame's size when `size` is not given.
// Throws io::IoError or std::runtime_error when nothing can be read.
BenchFrames load_bench_frames(const std::optional<std::filesystem::path>& input, std::optional<Size> size,
                              int count);

}  // namespace imgpipe::bench
