// What the GPU kernel and backend tests share: one stream for a test's traffic, device buffers poisoned before
// every run (so a pixel nobody wrote fails), a byte-for-byte comparison with a tolerance that names the first
// bad pixel, and the two image sets every test runs on: the photographs and sizes no tile divides.
// Nothing here measures speed.
#pragma once

#include "chain.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "gpu_backend.hpp"
#include "layout.cuh"
#include "skip_without_device.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

namespace imgpipe {

// Readable test parameters in gtest's listings and failure reports.
inline void PrintTo(GpuPath path, std::ostream* os) { *os << (path == GpuPath::naive ? "naive" : "optimized"); }

namespace testing {

inline constexpr unsigned char kPoison = 0xA5;

// Test traffic on one stream, so uploads, poisoning, kernels and downloads run in issue order.
class Device {
 public:
  Device() : stream_(cuda::Stream::create()) {}
  cudaStream_t stream() const { return stream_.get(); }

  cuda::DeviceBuffer poisoned(std::size_t bytes) const {
    cuda::DeviceBuffer buffer(bytes);
    IMGPIPE_CUDA_CHECK(cudaMemsetAsync(buffer.data(), kPoison, bytes, stream()));
    return buffer;
  }
  // `image` into a poisoned buffer at byte `offset`, rows `pitch` bytes apart.
  cuda::DeviceBuffer upload(const Image& image, std::size_t pitch, std::size_t offset) const {
    cuda::DeviceBuffer buffer = poisoned(offset + pitch * static_cast<std::size_t>(image.height()));
    const std::size_t row = 3 * static_cast<std::size_t>(image.width());
    IMGPIPE_CUDA_CHECK(cudaMemcpy2DAsync(buffer.data() + offset, pitch, image.data(), row, row, image.height(),
                                         cudaMemcpyHostToDevice, stream()));
    return buffer;
  }
  cuda::DeviceBuffer upload(const Image& image) const { return upload(image, 3 * std::size_t(image.width()), 0); }
  void poison(const cuda::PlaneBuffer& planes) const {
    const cuda::ConstPlanesView whole = planes.whole();
    for (const std::uint8_t* p : whole.plane) {
      IMGPIPE_CUDA_CHECK(cudaMemsetAsync(const_cast<std::uint8_t*>(p), kPoison, whole.pitch * whole.extent.height,
                                         stream()));
    }
  }
  // Rows of `bytes_per_row` bytes, `pitch` apart, back to the host; waits for everything queued before.
  std::vector<std::uint8_t> download(const std::uint8_t* data, std::size_t pitch, std::size_t bytes_per_row,
                                     int rows) const {
    std::vector<std::uint8_t> host(bytes_per_row * static_cast<std::size_t>(rows));
    IMGPIPE_CUDA_CHECK(cudaMemcpy2DAsync(host.data(), bytes_per_row, data, pitch, bytes_per_row, rows,
                                         cudaMemcpyDeviceToHost, stream()));
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    return host;
  }
  Image download(const std::uint8_t* data, Size size, std::size_t pitch) const {
    return Image(size, download(data, pitch, 3 * static_cast<std::size_t>(size.width), size.height));
  }
  Image download(const std::uint8_t* data, Size size) const { return download(data, size, 3 * std::size_t(size.width)); }

 private:
  cuda::Stream stream_;
};

inline cuda::Extent extent_of(Size s) { return {s.width, s.height}; }
inline cuda::AosView aos(std::uint8_t* data, Size s, std::size_t pitch) { return {data, extent_of(s), pitch}; }
inline cuda::AosView aos(std::uint8_t* data, Size s) { return aos(data, s, 3 * std::size_t(s.width)); }

// Where a batch's frames lie in their buffer: the first `offset` bytes in, rows `pitch_pad` bytes longer than their
// pixels, `frame_gap` bytes between frames.
struct FrameLayout {
  std::size_t offset = 0;
  std::size_t pitch_pad = 0;
  std::size_t frame_gap = 0;
};

// No row after the first word-aligned, no frame either: what the batched kernels must take at any alignment.
inline constexpr FrameLayout kMisaligned{1, 1, 5};

// `frames` frames of one size in one poisoned device buffer laid out as `layout`, for the batched kernels: frames
// uploaded into it, or written there by a kernel and read back, and the count of bytes outside the frames that
// are no longer poison.
class FrameBatch {
 public:
  FrameBatch(const Device& device, Size size, int frames, FrameLayout layout)
      : device_(device),
        size_(size),
        frames_(frames),
        layout_(layout),
        buffer_(device.poisoned(layout.offset + stride() * static_cast<std::size_t>(frames))) {}

  std::size_t pitch() const { return 3 * static_cast<std::size_t>(size_.width) + layout_.pitch_pad; }
  std::size_t stride() const { return pitch() * static_cast<std::size_t>(size_.height) + layout_.frame_gap; }
  cuda::AosView first() const { return aos(buffer_.data() + layout_.offset, size_, pitch()); }

  void upload(int f, const Image& image) const {
    const std::size_t row = 3 * static_cast<std::size_t>(size_.width);
    IMGPIPE_CUDA_CHECK(cudaMemcpy2DAsync(first().data + stride() * static_cast<std::size_t>(f), pitch(), image.data(),
                                         row, row, size_.height, cudaMemcpyHostToDevice, device_.stream()));
  }
  Image download(int f) const {
    return device_.download(first().data + stride() * static_cast<std::size_t>(f), size_, pitch());
  }
  std::size_t written_outside_frames() const {
    const std::size_t bytes = layout_.offset + stride() * static_cast<std::size_t>(frames_);
    const std::vector<std::uint8_t> all = device_.download(buffer_.data(), bytes, bytes, 1);
    const std::size_t row = 3 * static_cast<std::size_t>(size_.width);
    std::size_t written = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const std::size_t at = i - layout_.offset;
      const bool in_frame = i >= layout_.offset && at % stride() < pitch() * static_cast<std::size_t>(size_.height) &&
                            at % stride() % pitch() < row;
      if (!in_frame && all[i] != kPoison) ++written;
    }
    return written;
  }

 private:
  const Device& device_;
  Size size_;
  int frames_;
  FrameLayout layout_;
  cuda::DeviceBuffer buffer_;
};

// Every value of `actual` within `tolerance` of `expected`; on failure, how many are not and the first one.
inline ::testing::AssertionResult within(const Image& actual, const Image& expected, int tolerance) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << to_string(actual.size()) << ", expected "
                                         << to_string(expected.size());
  }
  std::size_t bad = 0, first = 0;
  int worst = 0;
  for (std::size_t i = 0; i < actual.bytes(); ++i) {
    const int d = std::abs(actual.data()[i] - expected.data()[i]);
    if (d > tolerance && bad++ == 0) first = i;
    worst = std::max(worst, d);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const std::size_t pixel = first / 3;
  return ::testing::AssertionFailure()
         << bad << " of " << actual.bytes() << " values off by more than " << tolerance << " (worst " << worst
         << "); first at x=" << pixel % actual.width() << " y=" << pixel / actual.width() << " c=" << first % 3
         << ": got " << int(actual.data()[first]) << ", expected " << int(expected.data()[first])
         << (actual.data()[first] == kPoison ? " (the poison: never written?)" : "");
}

// Uploads `in`, runs `chain` on the device with `path` into a poisoned buffer, downloads.
inline Image run_device_chain(GpuPath path, const Chain& chain, const Image& in,
                              Arithmetic arithmetic = Arithmetic::fast) {
  const Device device;
  const Size out_size = output_size(chain, in.size());
  const cuda::DeviceBuffer d_in = device.upload(in);
  const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes());
  DeviceChain device_chain(path, chain, arithmetic);
  device_chain.run(d_in.data(), in.size(), d_out.data(), device.stream());
  return device.download(d_out.data(), out_size);
}

inline std::string path_name(GpuPath path) { return path == GpuPath::naive ? "naive" : "optimized"; }

enum class Images { photos, odd_sizes };

inline std::string images_name(Images set) { return set == Images::photos ? "photos" : "odd_sizes"; }
inline void PrintTo(Images set, std::ostream* os) { *os << images_name(set); }

inline std::vector<NamedImage> load(Images set) {
  if (set == Images::photos) return photos();
  std::vector<NamedImage> images;
  std::uint32_t seed = 1;
  for (Size s : odd_sizes()) images.push_back({to_string(s), synthetic_image(s, seed++)});
  return images;
}

inline std::string describe(const NamedImage& sample) {
  return sample.name + " (" + to_string(sample.image.size()) + ")";
}

// Tests of one chain on each path, instantiated as BothPaths.
class GpuPathTest : public ::testing::TestWithParam<GpuPath> {};

}  // namespace testing
}  // namespace imgpipe
