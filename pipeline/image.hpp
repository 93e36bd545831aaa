// Host frames: 8-bit interleaved RGB (R, G, B per pixel), rows packed (3 * width bytes per row).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace imgpipe {

struct Size {
  int width = 0;
  int height = 0;
  auto operator<=>(const Size&) const = default;
  std::size_t pixels() const { return static_cast<std::size_t>(width) * static_cast<std::size_t>(height); }
  std::size_t rgb_bytes() const { return pixels() * 3; }
};

std::string to_string(Size size);

// A frame someone else owns (a pinned slot, an Image, a decoder's buffer).
struct FrameView {
  std::uint8_t* data = nullptr;
  Size size;
};

struct ConstFrameView {
  const std::uint8_t* data = nullptr;
  Size size;
  ConstFrameView() = default;
  ConstFrameView(const std::uint8_t* d, Size s) : data(d), size(s) {}
  ConstFrameView(FrameView v) : data(v.data), size(v.size) {}  // NOLINT: a writable view reads too
};

// Lends the buffer a frame of `size` is decoded into (an engine slot's input, or an Image's pixels).
using FrameAllocator = std::function<FrameView(Size)>;

class Image {
 public:
  Image() = default;
  explicit Image(Size size) : size_(size), pixels_(size.rgb_bytes()) {}
  Image(Size size, std::vector<std::uint8_t> pixels);

  Size size() const { return size_; }
  int width() const { return size_.width; }
  int height() const { return size_.height; }
  bool empty() const { return pixels_.empty(); }
  std::uint8_t* data() { return pixels_.data(); }
  const std::uint8_t* data() const { return pixels_.data(); }
  std::size_t bytes() const { return pixels_.size(); }
  std::uint8_t& at(int x, int y, int c) { return pixels_[(static_cast<std::size_t>(y) * size_.width + x) * 3 + c]; }
  std::uint8_t at(int x, int y, int c) const {
    return pixels_[(static_cast<std::size_t>(y) * size_.width + x) * 3 + c];
  }
  FrameView view() { return {pixels_.data(), size_}; }
  ConstFrameView view() const { return {pixels_.data(), size_}; }

 private:
  Size size_;
  std::vector<std::uint8_t> pixels_;
};

}  // namespace imgpipe
