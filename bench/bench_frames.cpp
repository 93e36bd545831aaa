#include "bench_frames.hpp"

#include "folder.hpp"
#include "frame_stream.hpp"
#include "image_file.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>

namespace imgpipe::bench {
namespace {

namespace fs = std::filesystem;

constexpr Size kDefaultSize{1920, 1080};

std::uint32_t hash(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

std::uint8_t clamp8(double v) { return static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0)); }

}  // namespace

Image synthetic_frame(Size size, int index) {
  Image image(size);
  const double w = std::max(1, size.width - 1), h = std::max(1, size.height - 1);
  const double t = 0.05 * index;  // motion per frame
  const double two_pi = 2 * std::numbers::pi;
  tbb::parallel_for(tbb::blocked_range<int>(0, size.height), [&](const tbb::blocked_range<int>& rows) {
    for (int y = rows.begin(); y < rows.end(); ++y) {
      std::uint8_t* row = image.data() + static_cast<std::size_t>(y) * 3 * size.width;
      const double v = y / h;
      for (int x = 0; x < size.width; ++x) {
        const double u = x / w;
        double rgb[3] = {40 + 180 * u, 30 + 190 * v, 128 + 90 * std::sin(two_pi * (1.5 * u + v) + t)};
        // A disc and a rectangle with hard edges, moving across the frame.
        const double cx = 0.3 + 0.25 * std::sin(t), cy = 0.5 + 0.2 * std::cos(0.7 * t);
        if ((u - cx) * (u - cx) + (v - cy) * (v - cy) < 0.02) {
          rgb[0] = 250 - 0.5 * rgb[0];
          rgb[1] = 0.3 * rgb[1];
          rgb[2] = 200;
        }
        const double rx = std::fmod(0.1 + 0.03 * index, 0.8);
        if (u > rx && u < rx + 0.15 && v > 0.15 && v < 0.35) {
          rgb[0] = 20;
          rgb[1] = 220;
          rgb[2] = 60 + 100 * v;
        }
        // Fine stripes in the lower band: detail the filters and the resize must work on.
        if (v > 0.7 && v < 0.9) {
          const double stripes = 60 * std::sin(two_pi * (u * size.width / 6.0 + v * size.height / 11.0));
          for (double& c : rgb) c += stripes;
        }
        const std::uint32_t noise = hash(static_cast<std::uint32_t>(x) * 73856093u ^
                                         static_cast<std::uint32_t>(y) * 19349663u ^
                                         static_cast<std::uint32_t>(index) * 83492791u);
        for (int c = 0; c < 3; ++c) {
          const int n = static_cast<int>((noise >> (8 * c)) & 15u) - 8;  // +-8
          row[3 * x + c] = clamp8(rgb[c] + n);
        }
      }
    }
  });
  return image;
}

Image fit_to_size(const Image& frame, Size size) {
  if (frame.size() == size) return frame;
  if (frame.empty()) throw std::invalid_argument("fit_to_size: empty frame");
  Image out(size);
  const std::size_t src_row = 3 * static_cast<std::size_t>(frame.width());
  for (int y = 0; y < size.height; ++y) {
    const std::uint8_t* src = frame.data() + static_cast<std::size_t>(y % frame.height()) * src_row;
    std::uint8_t* dst = out.data() + static_cast<std::size_t>(y) * 3 * size.width;
    for (int x = 0; x < size.width;) {
      const int run = std::min(size.width - x, frame.width() - x % frame.width());
      std::copy_n(src + 3 * static_cast<std::size_t>(x % frame.width()), 3 * static_cast<std::size_t>(run),
                  dst + 3 * static_cast<std::size_t>(x));
      x += run;
    }
  }
  return out;
}

BenchFrames load_bench_frames(const std::optional<fs::path>& input, std::optional<Size> size, int count) {
  BenchFrames result;
  count = std::max(1, count);
  if (!input) {
    result.size = size.value_or(kDefaultSize);
    for (int i = 0; i < count; ++i) result.frames.push_back(synthetic_frame(result.size, i));
    result.source = "synthetic (" + std::to_string(count) + " distinct frames)";
    return result;
  }

  std::vector<Image> raw;
  std::string what;
  if (fs::is_directory(*input)) {
    const std::vector<fs::path> files = io::list_images(*input);
    if (files.empty()) throw std::runtime_error(input->string() + ": no images (" + io::image_extensions_text() + ")");
    for (std::size_t i = 0; i < files.size() && static_cast<int>(raw.size()) < count; ++i) {
      raw.push_back(io::read_image(*input / files[i]).image);
    }
    what = std::to_string(raw.size()) + " images of the folder";
  } else if (io::is_image_extension(io::lowercase_extension(*input))) {
    raw.push_back(io::read_image(*input).image);
    what = "one image";
  } else {
    const std::unique_ptr<io::FrameReader> reader = io::open_video_reader(*input);
    while (static_cast<int>(raw.size()) < count) {
      const std::optional<Size> next = reader->next_size();
      if (!next) break;
      Image frame(*next);
      reader->read(frame.view());
      raw.push_back(std::move(frame));
    }
    if (raw.empty()) throw std::runtime_error(input->string() + ": the video has no frames");
    what = "the first " + std::to_string(raw.size()) + " video frames";
  }
  result.size = size.value_or(raw.front().size());
  bool fitted = false;
  for (const Image& frame : raw) {
    fitted = fitted || frame.size() != result.size;
    result.frames.push_back(fit_to_size(frame, result.size));
  }
  result.source = input->string() + " (" + what + (fitted ? ", tiled or cut to " + to_string(result.size) : "") + ")";
  return result;
}

}  // namespace imgpipe::bench
