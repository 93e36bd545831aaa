#include "opencv_exact.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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

std::vector<int> gaussian_taps(int ksize, double sigma) {
  std::vector<double> k(static_cast<std::size_t>(ksize));
  const int half = ksize / 2;
  if (sigma <= 0 && ksize <= 7) {
    static const std::vector<double> fixed[] = {{1.0},
                                                {0.25, 0.5, 0.25},
                                                {0.0625, 0.25, 0.375, 0.25, 0.0625},
                                                {0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125}};
    k = fixed[half];
  } else {
    const double s = sigma > 0 ? sigma : std::fma(ksize, 0.15, 0.35);
    const double scale = -0.125 / (s * s);
    double sum = 1.0;  // the centre, exp(0)
    for (int i = 0, x = 1 - ksize; i < half; ++i, x += 2) {
      k[i] = std::exp(static_cast<double>(x * x) * scale);
      sum += 2 * k[i];
    }
    const double normalise = 1.0 / sum;
    for (int i = 0; i < half; ++i) k[i] = k[ksize - 1 - i] = k[i] * normalise;
    k[half] = normalise;
  }
  std::vector<int> taps(static_cast<std::size_t>(ksize));
  double carried = 0;
  int sum = 0;
  for (int i = 0; i < half; ++i) {
    const double wanted = k[i] * 256 + carried;
    const int tap = static_cast<int>(std::nearbyint(wanted));
    carried = wanted - tap;
    taps[i] = taps[ksize - 1 - i] = tap;
    sum += 2 * tap;
  }
  taps[half] = 256 - sum;
  return taps;
}

Image gaussian_blur(const Image& in, int ksize, double sigma, Border border) {
  const std::vector<int> taps = gaussian_taps(ksize, sigma);
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

}  // namespace imgpipe::opencv_exact
