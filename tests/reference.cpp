#include "reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <variant>

namespace imgpipe::reference {
namespace {

std::uint8_t to_byte(double v) { return static_cast<std::uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0)); }

// Where a filter reads outside the image.
int border_index(int p, int n, Border border) {
  if (n == 1) return 0;
  if (border == Border::replicate) return std::clamp(p, 0, n - 1);
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;  // reflect101: dcb|abcd|cba
  return p;
}

// Any KxK filter as plain taps (row-major, taps[j][i] for offset (i - r, j - r)).
Image correlate(const Image& in, const std::vector<std::vector<double>>& taps, Border border) {
  const int k = static_cast<int>(taps.size());
  const int r = k / 2;
  Image out(in.size());
  for (int y = 0; y < in.height(); ++y)
    for (int x = 0; x < in.width(); ++x)
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int j = 0; j < k; ++j)
          for (int i = 0; i < k; ++i)
            sum += taps[j][i] *
                   in.at(border_index(x + i - r, in.width(), border), border_index(y + j - r, in.height(), border), c);
        out.at(x, y, c) = to_byte(sum);
      }
  return out;
}

// The 1-D Gaussian, normalised to sum 1; with sigma 0 the width comes from K (and the four smallest
// kernels are the fixed binomial-like tables OpenCV documents for that case).
std::vector<double> gaussian_1d(int k, double sigma) {
  std::vector<double> w(k);
  if (sigma <= 0 && k <= 7) {
    switch (k) {
      case 1: w = {1}; break;
      case 3: w = {1, 2, 1}; break;
      case 5: w = {1, 4, 6, 4, 1}; break;
      case 7: w = {1, 3.5, 7, 9, 7, 3.5, 1}; break;
    }
  } else {
    if (sigma <= 0) sigma = 0.3 * ((k - 1) * 0.5 - 1) + 0.8;
    for (int i = 0; i < k; ++i) {
      const double d = i - k / 2;
      w[i] = std::exp(-d * d / (2 * sigma * sigma));
    }
  }
  double total = 0;
  for (double v : w) total += v;
  for (double& v : w) v /= total;
  return w;
}

Image resize_linear(const Image& in, Size size) {
  Image out(size);
  const double sx = static_cast<double>(in.width()) / size.width;
  const double sy = static_cast<double>(in.height()) / size.height;
  for (int y = 0; y < size.height; ++y) {
    const double fy = (y + 0.5) * sy - 0.5;
    const int y0 = static_cast<int>(std::floor(fy));
    const double b = fy - y0;
    const int ya = std::clamp(y0, 0, in.height() - 1), yb = std::clamp(y0 + 1, 0, in.height() - 1);
    for (int x = 0; x < size.width; ++x) {
      const double fx = (x + 0.5) * sx - 0.5;
      const int x0 = static_cast<int>(std::floor(fx));
      const double a = fx - x0;
      const int xa = std::clamp(x0, 0, in.width() - 1), xb = std::clamp(x0 + 1, 0, in.width() - 1);
      for (int c = 0; c < 3; ++c) {
        const double top = (1 - a) * in.at(xa, ya, c) + a * in.at(xb, ya, c);
        const double bottom = (1 - a) * in.at(xa, yb, c) + a * in.at(xb, yb, c);
        out.at(x, y, c) = to_byte((1 - b) * top + b * bottom);
      }
    }
  }
  return out;
}

Image resize_nearest(const Image& in, Size size) {
  Image out(size);
  for (int y = 0; y < size.height; ++y) {
    const int src_y = std::min(static_cast<int>(std::floor((y + 0.5) * in.height() / size.height)), in.height() - 1);
    for (int x = 0; x < size.width; ++x) {
      const int src_x = std::min(static_cast<int>(std::floor((x + 0.5) * in.width() / size.width)), in.width() - 1);
      for (int c = 0; c < 3; ++c) out.at(x, y, c) = in.at(src_x, src_y, c);
    }
  }
  return out;
}

// Output pixel (x, y) of an op that only moves pixels comes from source pixel map(x, y).
template <typename Map>
Image remap(const Image& in, Size out_size, Map map) {
  Image out(out_size);
  for (int y = 0; y < out_size.height; ++y)
    for (int x = 0; x < out_size.width; ++x) {
      const auto [sx, sy] = map(x, y);
      for (int c = 0; c < 3; ++c) out.at(x, y, c) = in.at(sx, sy, c);
    }
  return out;
}

struct Apply {
  const Image& in;

  Image operator()(const Resize& r) const {
    return r.interp == Interp::linear ? resize_linear(in, r.size) : resize_nearest(in, r.size);
  }
  Image operator()(const Gaussian& g) const {
    const auto w = gaussian_1d(g.ksize, g.sigma);
    std::vector<std::vector<double>> taps(g.ksize, std::vector<double>(g.ksize));
    for (int j = 0; j < g.ksize; ++j)
      for (int i = 0; i < g.ksize; ++i) taps[j][i] = w[j] * w[i];
    return correlate(in, taps, g.border);
  }
  Image operator()(const Box& b) const {
    const double v = 1.0 / (b.ksize * b.ksize);
    return correlate(in, std::vector<std::vector<double>>(b.ksize, std::vector<double>(b.ksize, v)), b.border);
  }
  Image operator()(const Sharpen& s) const { return correlate(in, {{0, -1, 0}, {-1, 5, -1}, {0, -1, 0}}, s.border); }
  Image operator()(const Sobel& s) const {
    const Image gx = correlate_abs({{-1, 0, 1}, {-2, 0, 2}, {-1, 0, 1}}, s.border);
    const Image gy = correlate_abs({{-1, -2, -1}, {0, 0, 0}, {1, 2, 1}}, s.border);
    Image out(in.size());
    for (std::size_t i = 0; i < out.bytes(); ++i) out.data()[i] = std::min(255, gx.data()[i] + gy.data()[i]);
    return out;
  }
  Image operator()(const Transpose&) const {
    return remap(in, {in.height(), in.width()}, [](int x, int y) { return std::pair{y, x}; });
  }
  Image operator()(const Rotate& r) const {
    const int w = in.width(), h = in.height();
    switch (r.degrees) {
      case 90: return remap(in, {h, w}, [h](int x, int y) { return std::pair{y, h - 1 - x}; });
      case 180: return remap(in, {w, h}, [w, h](int x, int y) { return std::pair{w - 1 - x, h - 1 - y}; });
      case 270: return remap(in, {h, w}, [w](int x, int y) { return std::pair{w - 1 - y, x}; });
    }
    throw std::invalid_argument("reference: rotate by " + std::to_string(r.degrees));
  }
  Image operator()(const Flip& f) const {
    const int w = in.width(), h = in.height();
    if (f.axis == Flip::Axis::horizontal) return remap(in, in.size(), [w](int x, int y) { return std::pair{w - 1 - x, y}; });
    return remap(in, in.size(), [h](int x, int y) { return std::pair{x, h - 1 - y}; });
  }
  Image operator()(const Gray&) const {
    Image out(in.size());
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x) {
        const std::uint8_t luma = to_byte(0.299 * in.at(x, y, 0) + 0.587 * in.at(x, y, 1) + 0.114 * in.at(x, y, 2));
        for (int c = 0; c < 3; ++c) out.at(x, y, c) = luma;
      }
    return out;
  }
  Image operator()(const Normalize&) const {
    std::array<int, 3> lo{255, 255, 255}, hi{0, 0, 0};
    for (std::size_t i = 0; i < in.bytes(); ++i) {
      lo[i % 3] = std::min<int>(lo[i % 3], in.data()[i]);
      hi[i % 3] = std::max<int>(hi[i % 3], in.data()[i]);
    }
    Image out(in.size());
    for (std::size_t i = 0; i < in.bytes(); ++i) {
      const int c = static_cast<int>(i % 3);
      out.data()[i] = hi[c] > lo[c] ? to_byte((in.data()[i] - lo[c]) * 255.0 / (hi[c] - lo[c])) : 0;
    }
    return out;
  }

  // |taps (*) in| saturated to 8 bits, for Sobel's two gradients.
  Image correlate_abs(const std::vector<std::vector<double>>& taps, Border border) const {
    std::vector<std::vector<double>> negated = taps;
    for (auto& row : negated)
      for (double& v : row) v = -v;
    const Image pos = correlate(in, taps, border);
    const Image neg = correlate(in, negated, border);
    Image out(in.size());
    for (std::size_t i = 0; i < out.bytes(); ++i) out.data()[i] = std::max(pos.data()[i], neg.data()[i]);
    return out;
  }
};

}  // namespace

Image apply(const Op& op, const Image& in) { return std::visit(Apply{in}, op); }

Image apply(const Chain& chain, const Image& in) {
  Image image = in;
  for (const Op& op : chain.ops) image = reference::apply(op, image);  // qualified: ADL would find std::apply
  return image;
}

}  // namespace imgpipe::reference
