// The pointwise ops on batches of interleaved frames (gray_aos, normalize_aos; kernels/pointwise.cuh): several
// frames per launch (16 for normalize too), each its own range for normalize, at every alignment of rows, frames
// and base addresses, packed frames walked as one run and padded rows one run each, 16-byte words where input and
// output allow them and single bytes where they do not, and in place. Every frame equals the naive kernel's bytes
// and the reference within ±1; outputs are poisoned first, and the bytes between rows and frames must stay poison.
// Skips without a CUDA device.
#include "gpu_test_support.hpp"
#include "gray.cuh"
#include "normalize.cuh"
#include "reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace imgpipe::testing {
namespace {

// `frames` interleaved frames per launch, as the optimized path runs them.
using BatchOp = std::function<void(cuda::ConstAosView, std::size_t, cuda::AosView, std::size_t, int, cudaStream_t)>;
// One frame, as the naive path runs it.
using NaiveOp = std::function<void(cuda::ConstAosView, cuda::AosView, cudaStream_t)>;

struct PointwiseCase {
  std::string name;
  Op op;
  BatchOp batched;
  NaiveOp naive;
};

std::vector<PointwiseCase> cases(cuda::NormalizeScratch& batch_scratch, cuda::NormalizeScratch& naive_scratch) {
  return {{"gray", Gray{},
           [](cuda::ConstAosView in, std::size_t is, cuda::AosView out, std::size_t os, int n, cudaStream_t s) {
             cuda::gray_aos(in, is, out, os, n, s);
           },
           [](cuda::ConstAosView in, cuda::AosView out, cudaStream_t s) { cuda::gray_naive(in, out, s); }},
          {"normalize", Normalize{},
           [&](cuda::ConstAosView in, std::size_t is, cuda::AosView out, std::size_t os, int n, cudaStream_t s) {
             cuda::normalize_aos(in, is, out, os, n, batch_scratch, s);
           },
           [&](cuda::ConstAosView in, cuda::AosView out, cudaStream_t s) {
             cuda::normalize_naive(in, out, naive_scratch, s);
           }}};
}

// Frame f of a batch: random bytes squeezed into a range of its own per channel, so that each frame's stretch
// differs from its neighbours'; frame 2's green channel is constant (normalize makes it 0).
Image frame(Size size, int f) {
  Image image = random_image(size, 90u + static_cast<std::uint32_t>(f));
  for (std::size_t i = 0; i < image.bytes(); ++i) {
    const int c = static_cast<int>(i % 3);
    const int lo = 10 * (f + c), hi = f == 2 && c == 1 ? lo : 255 - 20 * f - 7 * c;
    image.data()[i] = static_cast<std::uint8_t>(lo + image.data()[i] * (hi - lo) / 255);
  }
  return image;
}

// In and out layouts: packed and aligned (one 16-byte-word run per frame); packed at an offset both share (a run
// with pixels before its first word); rows padded and misaligned (a run per row); packed, with the output one byte
// further into its buffer than the input (no word lines up: single bytes).
struct Layouts {
  FrameLayout in, out;
  const char* what;
};
const Layouts kLayouts[] = {{{0, 0, 0}, {0, 0, 0}, "packed"},
                            {{7, 0, 0}, {7, 0, 0}, "packed at offset 7"},
                            {kMisaligned, kMisaligned, "misaligned rows"},
                            {{0, 0, 0}, {1, 0, 0}, "output one byte further"}};

TEST(PointwiseInterleaved, BatchesAtAnyAlignmentGiveTheNaiveKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  cuda::NormalizeScratch batch_scratch, naive_scratch;
  constexpr int kFrames = 3;
  for (const PointwiseCase& c : cases(batch_scratch, naive_scratch)) {
    for (const Size size : std::vector<Size>{{1, 1}, {3, 7}, {5, 1}, {16, 3}, {17, 5}, {33, 65}, {203, 117}, {640, 360}}) {
      for (const Layouts& layouts : kLayouts) {
        const Device device;
        const FrameBatch in(device, size, kFrames, layouts.in), out(device, size, kFrames, layouts.out);
        std::vector<Image> frames;
        for (int f = 0; f < kFrames; ++f) {
          frames.push_back(frame(size, f));
          in.upload(f, frames.back());
        }
        c.batched(cuda::as_const(in.first()), in.stride(), out.first(), out.stride(), kFrames, device.stream());
        const std::string what = c.name + " on " + to_string(size) + ", " + layouts.what;
        EXPECT_EQ(out.written_outside_frames(), 0u) << what << ": bytes outside the frames were written";
        for (int f = 0; f < kFrames; ++f) {
          const Image& image = frames[static_cast<std::size_t>(f)];
          const cuda::DeviceBuffer d_in = device.upload(image);
          const cuda::DeviceBuffer d_out = device.poisoned(image.bytes());
          c.naive(cuda::as_const(aos(d_in.data(), size)), aos(d_out.data(), size), device.stream());
          const Image got = out.download(f);
          EXPECT_TRUE(within(got, device.download(d_out.data(), size), 0)) << what << ", frame " << f;
          EXPECT_TRUE(within(got, reference::apply(c.op, image), 1)) << what << ", frame " << f << " (reference)";
        }
      }
    }
  }
}

TEST(PointwiseInterleaved, InPlaceGivesTheSameBytes) {
  SKIP_WITHOUT_DEVICE();
  cuda::NormalizeScratch batch_scratch, naive_scratch;
  constexpr int kFrames = 2;
  const Size size{203, 117};
  for (const PointwiseCase& c : cases(batch_scratch, naive_scratch)) {
    for (const FrameLayout& layout : {FrameLayout{}, kMisaligned}) {
      const Device device;
      const FrameBatch frames(device, size, kFrames, layout);
      std::vector<Image> images;
      for (int f = 0; f < kFrames; ++f) {
        images.push_back(frame(size, f));
        frames.upload(f, images.back());
      }
      c.batched(cuda::as_const(frames.first()), frames.stride(), frames.first(), frames.stride(), kFrames,
                device.stream());
      for (int f = 0; f < kFrames; ++f) {
        EXPECT_TRUE(within(frames.download(f), reference::apply(c.op, images[static_cast<std::size_t>(f)]), 1))
            << c.name << " in place, pitch +" << layout.pitch_pad << ", frame " << f;
      }
    }
  }
}

// One frame per launch, large enough to be spread over many blocks, packed and with padded rows.
TEST(PointwiseInterleaved, OneLargeFrameGivesTheNaiveKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  cuda::NormalizeScratch batch_scratch, naive_scratch;
  const Size size{2731, 1999};
  const Image image = frame(size, 1);
  for (const PointwiseCase& c : cases(batch_scratch, naive_scratch)) {
    for (const FrameLayout& layout : {FrameLayout{}, FrameLayout{0, 16, 0}}) {
      const Device device;
      const FrameBatch in(device, size, 1, layout), out(device, size, 1, layout);
      in.upload(0, image);
      c.batched(cuda::as_const(in.first()), in.stride(), out.first(), out.stride(), 1, device.stream());
      const cuda::DeviceBuffer d_in = device.upload(image);
      const cuda::DeviceBuffer d_out = device.poisoned(image.bytes());
      c.naive(cuda::as_const(aos(d_in.data(), size)), aos(d_out.data(), size), device.stream());
      EXPECT_EQ(out.written_outside_frames(), 0u) << c.name << ", pitch +" << layout.pitch_pad;
      EXPECT_TRUE(within(out.download(0), device.download(d_out.data(), size), 0)) << c.name << ", pitch +" << layout.pitch_pad;
    }
  }
}

// normalize_aos on 16 frames of 1280x720 per launch, as the optimized path batches them: a frame stretched by
// another frame's range would show, each frame squeezed into a range of its own. Twice with one scratch, packed
// and with padded rows, against the naive kernels.
TEST(PointwiseInterleaved, NormalizeOfManyFramesPerLaunchStretchesEachByItsOwnRange) {
  SKIP_WITHOUT_DEVICE();
  cuda::NormalizeScratch batch_scratch, naive_scratch;
  constexpr int kFrames = 16;
  const Size size{1280, 720};
  std::vector<Image> frames;
  for (int f = 0; f < kFrames; ++f) {
    Image image = random_image(size, 300u + static_cast<std::uint32_t>(f));
    for (std::size_t i = 0; i < image.bytes(); ++i) {
      const int c = static_cast<int>(i % 3), lo = f + 3 * c, hi = 255 - 2 * f - 5 * c;
      image.data()[i] = static_cast<std::uint8_t>(lo + image.data()[i] * (hi - lo) / 255);
    }
    frames.push_back(std::move(image));
  }
  const Device device;
  for (const FrameLayout& layout : {FrameLayout{}, kMisaligned}) {
    const FrameBatch in(device, size, kFrames, layout), out(device, size, kFrames, layout);
    for (int f = 0; f < kFrames; ++f) in.upload(f, frames[static_cast<std::size_t>(f)]);
    cuda::normalize_aos(cuda::as_const(in.first()), in.stride(), out.first(), out.stride(), kFrames, batch_scratch,
                        device.stream());
    EXPECT_EQ(out.written_outside_frames(), 0u) << "pitch +" << layout.pitch_pad;
    for (int f = 0; f < kFrames; ++f) {
      const Image& image = frames[static_cast<std::size_t>(f)];
      const cuda::DeviceBuffer d_in = device.upload(image);
      const cuda::DeviceBuffer d_out = device.poisoned(image.bytes());
      cuda::normalize_naive(cuda::as_const(aos(d_in.data(), size)), aos(d_out.data(), size), naive_scratch,
                            device.stream());
      EXPECT_TRUE(within(out.download(f), device.download(d_out.data(), size), 0))
          << "pitch +" << layout.pitch_pad << ", frame " << f;
    }
  }
}

// A batch is refused, naming the op, where its frames overlap or its arguments are out of range.
TEST(PointwiseInterleaved, RefusesBadBatches) {
  SKIP_WITHOUT_DEVICE();
  const Device device;
  const Size size{8, 4};
  const cuda::DeviceBuffer buffer = device.poisoned(4 * size.rgb_bytes());
  const cuda::AosView first = aos(buffer.data(), size);
  cuda::NormalizeScratch scratch;
  const auto refused = [](const std::function<void()>& call, const std::string& name) {
    try {
      call();
      ADD_FAILURE() << name << ": no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  refused([&] { cuda::gray_aos(cuda::as_const(first), size.rgb_bytes() / 2, first, size.rgb_bytes(), 2, device.stream()); },
          "gray_aos");
  refused([&] { cuda::gray_aos(cuda::as_const(first), size.rgb_bytes(), first, size.rgb_bytes(), 0, device.stream()); },
          "gray_aos");
  refused([&] {
    cuda::normalize_aos(cuda::as_const(first), size.rgb_bytes(), first, size.rgb_bytes() / 2, 2, scratch, device.stream());
  }, "normalize_aos");
}

}  // namespace
}  // namespace imgpipe::testing
