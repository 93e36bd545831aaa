#include "opencv_exact.hpp"

#include "overloaded.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

namespace imgpipe::opencv_exact {
namespace {

constexpr int kCoefScale = 2048;  // OpenCV's INTER_RESIZE_COEF_SCALE (11 fractional bits)

// saturate_cast<short>(float): round half to even, then clamp.
std::int16_t to_short(float v) {
  const long r = std::lrint(v);
  return static_cast<std::int16_t>(std::clamp<long>(r, std::numeric_limits<std::int16_t>::min(),
                                                    std::numeric_limits<std::int16_t>::max()));
}

LinearAxis make_axis(int in, int out, bool clamp_at_edges) {
  LinearAxis axis;
  axis.first.resize(static_cast<std::size_t>(out));
  axis.weight.resize(2 * static_cast<std::size_t>(out));
  axis.clamp_from = out;
  // As cv::resize computes it: the inverse scale, out / in, inverted.
  const double scale = 1.0 / (static_cast<double>(out) / in);
  for (int d = 0; d < out; ++d) {
    float t = static_cast<float>((d + 0.5) * scale - 0.5);
    int s = static_cast<int>(std::floor(t));
    t -= static_cast<float>(s);
    if (clamp_at_edges) {
      if (s < 0) t = 0, s = 0;
      if (s + 1 >= in) {
        axis.clamp_from = std::min(axis.clamp_from, d);
        if (s >= in - 1) t = 0, s = in - 1;
      }
    }
    axis.first[d] = s;
    axis.weight[2 * d] = to_short((1.f - t) * kCoefScale);
    axis.weight[2 * d + 1] = to_short(t * kCoefScale);
  }
  return axis;
}

}  // namespace

LinearAxis column_axis(int in, int out) { return make_axis(in, out, true); }
LinearAxis row_axis(int in, int out) { return make_axis(in, out, false); }

Image resize_linear(const Image& in, Size out) {
  const LinearAxis columns = column_axis(in.width(), out.width);
  const LinearAxis rows = row_axis(in.height(), out.height);

  // Horizontal pass of one source row: ints in units of 1/2048.
  const auto horizontal = [&](int y, std::vector<int>& h) {
    h.resize(static_cast<std::size_t>(out.width) * 3);
    for (int d = 0; d < out.width; ++d) {
      const int s = columns.first[d];
      for (int c = 0; c < 3; ++c) {
        const int a = in.at(s, y, c);
        h[3 * d + c] = d >= columns.clamp_from
                           ? a * kCoefScale
                           : a * columns.weight[2 * d] + in.at(s + 1, y, c) * columns.weight[2 * d + 1];
      }
    }
  };

  Image result(out);
  std::vector<int> h0, h1;
  for (int d = 0; d < out.height; ++d) {
    horizontal(std::clamp(rows.first[d], 0, in.height() - 1), h0);
    horizontal(std::clamp(rows.first[d] + 1, 0, in.height() - 1), h1);
    const int b0 = rows.weight[2 * d], b1 = rows.weight[2 * d + 1];
    for (int x = 0; x < out.width * 3; ++x) {
      const int v = (((b0 * (h0[x] >> 4)) >> 16) + ((b1 * (h1[x] >> 4)) >> 16) + 2) >> 2;
      result.data()[static_cast<std::size_t>(d) * out.width * 3 + x] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return result;
}

namespace {

// Where a read outside 0..n-1 lands, as cv::borderInterpolate.
int border_index(int p, int n, Border border) {
  if (p >= 0 && p < n) return p;
  if (border == Border::replicate || n == 1) return std::clamp(p, 0, n - 1);
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * n - 2 - p;  // reflect101: the edge pixel is not repeated
  return p;
}

}  // namespace

Image gaussian_blur(const Image& in, int ksize, double sigma, Border border) {
  const std::vector<int> taps = gaussian_fixed_point_taps(ksize, sigma);
  const int half = ksize / 2, w = in.width(), h = in.height();
  std::vector<int> rows(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        int sum = 0;
        for (int i = 0; i < ksize; ++i) sum += in.at(border_index(x + i - half, w, border), y, c) * taps[i];
        rows[(static_cast<std::size_t>(y) * w + x) * 3 + c] = sum;
      }
  Image out(in.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        std::int64_t sum = 0;
        for (int i = 0; i < ksize; ++i) {
          sum += static_cast<std::int64_t>(rows[(static_cast<std::size_t>(border_index(y + i - half, h, border)) * w + x) * 3 + c]) * taps[i];
        }
        out.at(x, y, c) = static_cast<std::uint8_t>(std::min<std::int64_t>(255, (sum + (1 << 15)) >> 16));
      }
  return out;
}

Image box_blur(const Image& in, int ksize, Border border) {
  const int half = ksize / 2, w = in.width(), h = in.height(), area = ksize * ksize;
  constexpr int kShift = 23;
  const double reciprocal = static_cast<double>(1 << kShift) / area;
  const int multiplier = static_cast<int>(std::floor(reciprocal)) + (reciprocal - std::floor(reciprocal) >= 0.5);
  const int delta = area / 2 + (reciprocal - std::floor(reciprocal) < 0.5);
  Image out(in.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        int sum = 0;
        for (int j = 0; j < ksize; ++j)
          for (int i = 0; i < ksize; ++i)
            sum += in.at(border_index(x + i - half, w, border), border_index(y + j - half, h, border), c);
        out.at(x, y, c) = static_cast<std::uint8_t>(area == 1     ? sum
                                                    : area <= 256 ? ((sum + delta) * multiplier) >> kShift
                                                                  : (2 * sum + area) / (2 * area));
      }
  return out;
}

Image gray(const Image& in) {
  Image out(in.size());
  for (int y = 0; y < in.height(); ++y)
    for (int x = 0; x < in.width(); ++x) {
      const int luma = (9798 * in.at(x, y, 0) + 19235 * in.at(x, y, 1) + 3735 * in.at(x, y, 2) + (1 << 14)) >> 15;
      for (int c = 0; c < 3; ++c) out.at(x, y, c) = static_cast<std::uint8_t>(luma);
    }
  return out;
}

namespace {

// `at(dx, dy)`: the neighbour at that offset of each pixel, borders applied; `combine` maps the 3x3 to a byte.
template <class Combine>
Image three_by_three(const Image& in, Border border, Combine combine) {
  const int w = in.width(), h = in.height();
  Image out(in.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const auto at = [&](int dx, int dy) {
          return static_cast<int>(in.at(border_index(x + dx, w, border), border_index(y + dy, h, border), c));
        };
        out.at(x, y, c) = static_cast<std::uint8_t>(combine(at));
      }
  return out;
}

}  // namespace

Image sharpen(const Image& in, Border border) {
  return three_by_three(in, border, [](const auto& at) {
    return std::clamp(5 * at(0, 0) - at(0, -1) - at(0, 1) - at(-1, 0) - at(1, 0), 0, 255);
  });
}

Image sobel(const Image& in, Border border) {
  return three_by_three(in, border, [](const auto& at) {
    const int gx = at(1, -1) + 2 * at(1, 0) + at(1, 1) - at(-1, -1) - 2 * at(-1, 0) - at(-1, 1);
    const int gy = at(-1, 1) + 2 * at(0, 1) + at(1, 1) - at(-1, -1) - 2 * at(0, -1) - at(1, -1);
    return std::min(255, std::min(255, std::abs(gx)) + std::min(255, std::abs(gy)));
  });
}

Image normalize(const Image& in) {
  Image out(in.size());
  const std::size_t pixels = static_cast<std::size_t>(in.width()) * in.height();
  for (int c = 0; c < 3; ++c) {
    int lo = 255, hi = 0;
    for (std::size_t i = 0; i < pixels; ++i) {
      lo = std::min<int>(lo, in.data()[3 * i + c]);
      hi = std::max<int>(hi, in.data()[3 * i + c]);
    }
    const double scale = 255.0 * (hi > lo ? 1.0 / (hi - lo) : 0.0);
    const float a = static_cast<float>(scale), b = static_cast<float>(0.0 - lo * scale);
    for (std::size_t i = 0; i < pixels; ++i) {
      const long v = std::lrint(std::fma(static_cast<float>(in.data()[3 * i + c]), a, b));
      out.data()[3 * i + c] = static_cast<std::uint8_t>(std::clamp<long>(v, 0, 255));
    }
  }
  return out;
}

Image normalize_ties() {
  const int channel_values[3][5] = {{1, 37, 7, 31, 20}, {1, 51, 6, 26, 46}, {1, 79, 14, 40, 79}};
  Image in({53, 7});
  for (int y = 0; y < in.height(); ++y)
    for (int x = 0; x < in.width(); ++x)
      for (int c = 0; c < 3; ++c) in.at(x, y, c) = static_cast<std::uint8_t>(channel_values[c][(x + y) % 5]);
  return in;
}

Image apply(const Chain& chain, const Image& in) {
  Image frame = in;
  for (const Op& op : chain.ops) {
    frame = std::visit(Overloaded{
                           [&](const Resize& r) {
                             return r.interp == Interp::linear ? resize_linear(frame, r.size)
                                                               : reference::apply(op, frame);
                           },
                           [&](const Gaussian& g) { return gaussian_blur(frame, g.ksize, g.sigma, g.border); },
                           [&](const Box& b) { return box_blur(frame, b.ksize, b.border); },
                           [&](const Sharpen& s) { return sharpen(frame, s.border); },
                           [&](const Sobel& s) { return sobel(frame, s.border); },
                           [&](const Gray&) { return gray(frame); },
                           [&](const Normalize&) { return normalize(frame); },
                           [&](const auto&) { return reference::apply(op, frame); },
                       },
                       op);
  }
  return frame;
}

std::vector<Size> scale_classes(Size in) {
  const auto scaled = [&](double fx, double fy) {
    return Size{std::max(1, static_cast<int>(in.width * fx)), std::max(1, static_cast<int>(in.height * fy))};
  };
  return {scaled(0.5, 0.5), scaled(1.0 / 3, 1.0 / 3), scaled(2.0 / 3, 2.0 / 3), scaled(0.37, 0.61),
          scaled(0.9, 1.13), scaled(1.5, 1.5),          scaled(2, 2),             scaled(3, 2.7),
          scaled(1, 1),      Size{in.width, 1},        Size{1, in.height},       Size{1, 1},
          Size{1280, 720},   Size{97, 1001}};
}

}  // namespace imgpipe::opencv_exact
