#include "cpu_backend.hpp"

#include "overloaded.hpp"

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <variant>
#include <vector>

namespace imgpipe {
namespace {

int to_cv(Border border) { return border == Border::replicate ? cv::BORDER_REPLICATE : cv::BORDER_REFLECT_101; }

// Source index of output index d under the half-pixel rule floor((d + 0.5) * src / dst), in exact integers.
int nearest_source(int d, int src, int dst) {
  const std::int64_t s = (2 * static_cast<std::int64_t>(d) + 1) * src / (2 * static_cast<std::int64_t>(dst));
  return static_cast<int>(std::min<std::int64_t>(s, src - 1));
}

// Nearest resize by the exact half-pixel rule, the one the GPU paths and the reference use, and OpenCV 5's
// INTER_NEAREST_EXACT. OpenCV 4's INTER_NEAREST_EXACT computes the rule in 16.16 fixed point, which picks the
// neighbouring pixel near pixel boundaries (with a centre offset that changed in 4.7); cv::remap would clip
// source coordinates to 16 bits. So this is a row gather, run on OpenCV's thread pool.
void resize_nearest(const cv::Mat& src, cv::Mat& dst, Size size) {
  dst.create(size.height, size.width, CV_8UC3);
  std::vector<int> columns(size.width);
  for (int x = 0; x < size.width; ++x) columns[x] = nearest_source(x, src.cols, size.width);
  cv::parallel_for_(cv::Range(0, size.height), [&](const cv::Range& rows) {
    for (int y = rows.start; y < rows.end; ++y) {
      const auto* in = src.ptr<cv::Vec3b>(nearest_source(y, src.rows, size.height));
      auto* out = dst.ptr<cv::Vec3b>(y);
      for (int x = 0; x < size.width; ++x) out[x] = in[columns[x]];
    }
  });
}

int to_cv_rotation(int degrees) {
  switch (degrees) {
    case 90: return cv::ROTATE_90_CLOCKWISE;
    case 180: return cv::ROTATE_180;
    case 270: return cv::ROTATE_90_COUNTERCLOCKWISE;
  }
  throw std::invalid_argument("cpu backend: rotation by " + std::to_string(degrees) + " degrees");
}

// One op from src into dst. dst may be a header over the caller's output buffer: every function here
// writes into a dst of the right size and type in place, and none reads src after writing dst.
void run_op(const Op& op, const cv::Mat& src, cv::Mat& dst) {
  std::visit(
      Overloaded{
          [&](const Resize& r) {
            if (r.interp == Interp::nearest) return resize_nearest(src, dst, r.size);
            cv::resize(src, dst, cv::Size(r.size.width, r.size.height), 0, 0, cv::INTER_LINEAR);
          },
          [&](const Gaussian& g) {
            cv::GaussianBlur(src, dst, cv::Size(g.ksize, g.ksize), g.sigma, g.sigma, to_cv(g.border));
          },
          [&](const Box& b) { cv::blur(src, dst, cv::Size(b.ksize, b.ksize), cv::Point(-1, -1), to_cv(b.border)); },
          [&](const Sharpen& s) {
            static const cv::Matx33f kSharpen(0, -1, 0, -1, 5, -1, 0, -1, 0);
            cv::filter2D(src, dst, -1, kSharpen, cv::Point(-1, -1), 0, to_cv(s.border));
          },
          [&](const Sobel& s) {
            // |Gx| and |Gy| saturate to 255 each, and so does their sum: min(255, |Gx| + |Gy|) exactly.
            cv::Mat gx, gy, abs_gx, abs_gy;
            cv::Sobel(src, gx, CV_16S, 1, 0, 3, 1, 0, to_cv(s.border));
            cv::Sobel(src, gy, CV_16S, 0, 1, 3, 1, 0, to_cv(s.border));
            cv::convertScaleAbs(gx, abs_gx);
            cv::convertScaleAbs(gy, abs_gy);
            cv::add(abs_gx, abs_gy, dst);
          },
          [&](const Transpose&) { cv::transpose(src, dst); },
          [&](const Rotate& r) { cv::rotate(src, dst, to_cv_rotation(r.degrees)); },
          [&](const Flip& f) { cv::flip(src, dst, f.axis == Flip::Axis::horizontal ? 1 : 0); },
          [&](const Gray&) {
            cv::Mat luma;
            cv::cvtColor(src, luma, cv::COLOR_RGB2GRAY);
            cv::cvtColor(luma, dst, cv::COLOR_GRAY2RGB);
          },
          [&](const Normalize&) {
            std::array<cv::Mat, 3> channels;
            cv::split(src, channels.data());
            for (cv::Mat& channel : channels) cv::normalize(channel, channel, 0, 255, cv::NORM_MINMAX);
            cv::merge(channels.data(), channels.size(), dst);
          },
      },
      op);
}

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  void set_chain(const Chain& chain) override { chain_ = chain; }

  void process(ConstFrameView in, FrameView out) override {
    if (chain_.ops.empty()) throw std::logic_error("cpu backend: process() before set_chain() with at least one op");
    const Size expected = output_size(chain_, in.size);
    if (out.size != expected) {
      throw std::invalid_argument("cpu backend: output is " + to_string(out.size) + ", the chain makes " +
                                  to_string(in.size) + " into " + to_string(expected));
    }
    // Headers over the caller's buffers: the input is never copied, the last op writes straight into out.
    const cv::Mat input(in.size.height, in.size.width, CV_8UC3, const_cast<std::uint8_t*>(in.data));
    cv::Mat output(out.size.height, out.size.width, CV_8UC3, out.data);

    const cv::Mat* src = &input;
    for (std::size_t i = 0; i < chain_.ops.size(); ++i) {
      const bool last = i + 1 == chain_.ops.size();
      // Intermediates alternate between two scratch frames that keep their memory from frame to frame.
      cv::Mat& dst = last ? output : scratch_[i % 2];
      run_op(chain_.ops[i], *src, dst);
      src = &dst;
    }
    if (output.data != out.data) throw std::logic_error("cpu backend: OpenCV reallocated the output frame");
  }

 private:
  Chain chain_;
  std::array<cv::Mat, 2> scratch_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

std::string cpu_backend_description() {
  return "OpenCV " CV_VERSION " on " + std::to_string(cv::getNumThreads()) + " threads";
}

}  // namespace imgpipe
