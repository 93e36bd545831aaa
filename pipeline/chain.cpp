#include "chain.hpp"

#include "overloaded.hpp"

#include <charconv>
#include <cmath>
#include <optional>
#include <numeric>
#include <string>

namespace imgpipe {

ChainError::ChainError(const std::string& token, const std::string& expected)
    : std::invalid_argument("bad op '" + token + "': expected " + expected), token_(token) {}

namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, int& value) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc{} && end == s.data() + s.size();
}

bool parse_double(std::string_view s, double& value) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc{} && end == s.data() + s.size() && std::isfinite(value);
}

struct Token {
  std::string text;  // the whole op as written, for messages
  std::string_view name;
  std::vector<std::string_view> args;
};

Border parse_border(const Token& t, std::string_view arg) {
  if (arg == "reflect101" || arg == "reflect") return Border::reflect101;
  if (arg == "replicate") return Border::replicate;
  throw ChainError(t.text, "border 'reflect101' or 'replicate', got '" + std::string(arg) + "'");
}

void expect_args(const Token& t, std::size_t min, std::size_t max, const std::string& usage) {
  if (t.args.size() < min || t.args.size() > max) throw ChainError(t.text, usage);
}

int parse_ksize(const Token& t, std::string_view arg, const std::string& usage) {
  int k = 0;
  if (!parse_int(arg, k) || k < 3 || k > kMaxFilterSize || k % 2 == 0) {
    throw ChainError(t.text, usage + " (kernel size an odd integer from 3 to " +
                                 std::to_string(kMaxFilterSize) + ", got '" + std::string(arg) + "')");
  }
  return k;
}

Border optional_border(const Token& t, std::size_t index) {
  return t.args.size() > index ? parse_border(t, t.args[index]) : Border::reflect101;
}

Op parse_op(const Token& t) {
  const std::string_view n = t.name;
  if (n == "resize") {
    const std::string usage = "resize=WxH[:linear|nearest] with W and H from 1 to " + std::to_string(kMaxDimension);
    expect_args(t, 1, 2, usage);
    Resize r;
    if (const auto size = parse_size(t.args[0])) r.size = *size;
    else throw ChainError(t.text, usage);
    if (t.args.size() == 2) {
      if (t.args[1] == "linear") r.interp = Interp::linear;
      else if (t.args[1] == "nearest") r.interp = Interp::nearest;
      else throw ChainError(t.text, usage);
    }
    return r;
  }
  if (n == "gaussian") {
    const std::string usage = "gaussian=K[:SIGMA][:reflect101|replicate]";
    expect_args(t, 1, 3, usage);
    Gaussian g;
    g.ksize = parse_ksize(t, t.args[0], usage);
    std::size_t next = 1;
    if (t.args.size() > 1 && t.args[1] != "reflect101" && t.args[1] != "reflect" && t.args[1] != "replicate") {
      if (!parse_double(t.args[1], g.sigma) || g.sigma < 0) {
        throw ChainError(t.text, usage + " (SIGMA a finite number >= 0, 0 derives it from K; got '" +
                                     std::string(t.args[1]) + "')");
      }
      next = 2;
    }
    if (t.args.size() > next + 1) throw ChainError(t.text, usage);
    g.border = optional_border(t, next);
    return g;
  }
  if (n == "box") {
    const std::string usage = "box=K[:reflect101|replicate]";
    expect_args(t, 1, 2, usage);
    return Box{parse_ksize(t, t.args[0], usage), optional_border(t, 1)};
  }
  if (n == "sharpen") {
    expect_args(t, 0, 1, "sharpen[=reflect101|replicate]");
    return Sharpen{optional_border(t, 0)};
  }
  if (n == "sobel") {
    expect_args(t, 0, 1, "sobel[=reflect101|replicate]");
    return Sobel{optional_border(t, 0)};
  }
  if (n == "transpose") {
    expect_args(t, 0, 0, "transpose (no arguments)");
    return Transpose{};
  }
  if (n == "rotate") {
    const std::string usage = "rotate=90|180|270 (degrees clockwise)";
    expect_args(t, 1, 1, usage);
    int degrees = 0;
    if (!parse_int(t.args[0], degrees) || (degrees != 90 && degrees != 180 && degrees != 270)) {
      throw ChainError(t.text, usage);
    }
    return Rotate{degrees};
  }
  if (n == "flip") {
    const std::string usage = "flip=h|v (h mirrors left-right, v upside down)";
    expect_args(t, 1, 1, usage);
    if (t.args[0] == "h") return Flip{Flip::Axis::horizontal};
    if (t.args[0] == "v") return Flip{Flip::Axis::vertical};
    throw ChainError(t.text, usage);
  }
  if (n == "gray") {
    expect_args(t, 0, 0, "gray (no arguments)");
    return Gray{};
  }
  if (n == "normalize") {
    expect_args(t, 0, 0, "normalize (no arguments)");
    return Normalize{};
  }
  throw ChainError(t.text, "one of resize, gaussian, box, sharpen, sobel, transpose, rotate, flip, gray, normalize");
}

std::string border_suffix(Border b) { return b == Border::replicate ? ":replicate" : ""; }

}  // namespace

std::optional<Size> parse_size(std::string_view text) {
  const auto x = text.find('x');
  Size size;
  if (x == std::string_view::npos || !parse_int(text.substr(0, x), size.width) ||
      !parse_int(text.substr(x + 1), size.height) || size.width < 1 || size.height < 1 ||
      size.width > kMaxDimension || size.height > kMaxDimension) {
    return std::nullopt;
  }
  return size;
}

Chain parse_chain(std::string_view text) {
  Chain chain;
  if (trim(text).empty()) throw ChainError(std::string(text), "at least one op, e.g. resize=1280x720,gaussian=5:1.0");
  for (std::string_view part : split(text, ',')) {
    part = trim(part);
    Token t;
    t.text = std::string(part);
    if (part.empty()) throw ChainError("", "an op between commas");
    const auto eq = part.find('=');
    t.name = trim(part.substr(0, eq));
    if (eq != std::string_view::npos) {
      t.args = split(part.substr(eq + 1), ':');
      for (auto& a : t.args) {
        a = trim(a);
        if (a.empty()) throw ChainError(t.text, "no empty arguments");
      }
    }
    chain.ops.push_back(parse_op(t));
  }
  return chain;
}

std::string to_string(const Op& op) {
  return std::visit(
      Overloaded{
          [](const Resize& r) {
            return "resize=" + to_string(r.size) + (r.interp == Interp::nearest ? ":nearest" : "");
          },
          [](const Gaussian& g) {
            // Shortest text that parses back to the same double (an ostream's 6 digits would not).
            char sigma[32];
            char* end = std::to_chars(sigma, sigma + sizeof sigma, g.sigma).ptr;
            return "gaussian=" + std::to_string(g.ksize) + ':' + std::string(sigma, end) + border_suffix(g.border);
          },
          [](const Box& b) { return "box=" + std::to_string(b.ksize) + border_suffix(b.border); },
          [](const Sharpen& s) { return std::string("sharpen") + (s.border == Border::replicate ? "=replicate" : ""); },
          [](const Sobel& s) { return std::string("sobel") + (s.border == Border::replicate ? "=replicate" : ""); },
          [](const Transpose&) { return std::string("transpose"); },
          [](const Rotate& r) { return "rotate=" + std::to_string(r.degrees); },
          [](const Flip& f) { return std::string(f.axis == Flip::Axis::horizontal ? "flip=h" : "flip=v"); },
          [](const Gray&) { return std::string("gray"); },
          [](const Normalize&) { return std::string("normalize"); },
      },
      op);
}

std::string to_string(const Chain& chain) {
  std::string s;
  for (const Op& op : chain.ops) {
    if (!s.empty()) s += ',';
    s += to_string(op);
  }
  return s;
}

Size output_size(const Op& op, Size in) {
  if (const auto* r = std::get_if<Resize>(&op)) return r->size;
  if (std::holds_alternative<Transpose>(op)) return {in.height, in.width};
  if (const auto* r = std::get_if<Rotate>(&op); r && r->degrees != 180) return {in.height, in.width};
  return in;
}

Size output_size(const Chain& chain, Size in) {
  for (const Op& op : chain.ops) in = output_size(op, in);
  return in;
}

std::optional<DisplayAspect> display_aspect(std::int64_t width, std::int64_t height) {
  if (width <= 0 || height <= 0) return std::nullopt;
  const std::int64_t common = std::gcd(width, height);
  return DisplayAspect{width / common, height / common};
}

DisplayAspect output_display_aspect(const Chain& chain, DisplayAspect input) {
  for (const Op& op : chain.ops) {
    const auto* rotate = std::get_if<Rotate>(&op);
    if (std::holds_alternative<Transpose>(op) || (rotate != nullptr && rotate->degrees != 180)) {
      std::swap(input.width, input.height);
    }
  }
  return input;
}

DisplayAspect pixel_aspect(DisplayAspect aspect, Size size) {
  // An aspect's terms stay below 2^47 (a side of at most 65535 times an int ratio's term), the sides below 2^16.
  return *display_aspect(aspect.width * size.height, aspect.height * size.width);
}

Size largest_frame(const Chain& chain, Size in) {
  Size largest = in;
  for (const Op& op : chain.ops) {
    in = output_size(op, in);
    if (in.pixels() > largest.pixels()) largest = in;
  }
  return largest;
}

namespace {

// A transpose, rotation or flip as the signed permutation that takes a pixel's offset from the frame's centre
// (x right, y down) to its offset in the output: (x, y) -> (xx x + xy y, yx x + yy y).
struct Orientation {
  int xx = 1, xy = 0, yx = 0, yy = 1;
  bool operator==(const Orientation&) const = default;
};

// `first`, then `second`.
Orientation then(Orientation first, Orientation second) {
  return {second.xx * first.xx + second.xy * first.yx, second.xx * first.xy + second.xy * first.yy,
          second.yx * first.xx + second.yy * first.yx, second.yx * first.xy + second.yy * first.yy};
}

// The orientation a geometric op applies; nullopt for every other op.
std::optional<Orientation> orientation_of(const Op& op) {
  if (std::holds_alternative<Transpose>(op)) return Orientation{0, 1, 1, 0};
  if (const auto* r = std::get_if<Rotate>(&op)) {
    switch (r->degrees) {  // clockwise, with y pointing down
      case 90: return Orientation{0, -1, 1, 0};
      case 180: return Orientation{-1, 0, 0, -1};
      case 270: return Orientation{0, 1, -1, 0};
    }
  }
  if (const auto* f = std::get_if<Flip>(&op)) {
    return f->axis == Flip::Axis::horizontal ? Orientation{-1, 0, 0, 1} : Orientation{1, 0, 0, -1};
  }
  return std::nullopt;
}

// The fewest ops that apply `o`.
void append_ops(Orientation o, std::vector<Op>& ops) {
  if (o == Orientation{}) return;
  for (const Op op : {Op{Transpose{}}, Op{Rotate{90}}, Op{Rotate{180}}, Op{Rotate{270}},
                      Op{Flip{Flip::Axis::horizontal}}, Op{Flip{Flip::Axis::vertical}}}) {
    if (orientation_of(op) == o) {
      ops.push_back(op);
      return;
    }
  }
  ops.push_back(Transpose{});  // the transpose across the other diagonal
  ops.push_back(Rotate{180});
}

// Whether `op` gives the same frame before a reorientation as after it (reoriented). Listed op by op, so a new
// op must take a side here.
bool commutes_with_reorientation(const Op& op) {
  return std::visit(Overloaded{
                        [](const Resize&) { return false; },
                        [](const Gaussian&) { return true; },
                        [](const Box&) { return true; },
                        [](const Sharpen&) { return true; },
                        [](const Sobel&) { return true; },  // |Gx| + |Gy|: a reorientation swaps or negates them
                        [](const Transpose&) { return false; },
                        [](const Rotate&) { return false; },
                        [](const Flip&) { return false; },
                        [](const Gray&) { return true; },
                        [](const Normalize&) { return true; },
                    },
                    op);
}

}  // namespace

Chain merge_reorientations(const Chain& chain) {
  Chain merged;
  Orientation pending;  // the stretch's reorientations so far, composed
  for (const Op& op : chain.ops) {
    if (const auto o = orientation_of(op)) {
      pending = then(pending, *o);
      continue;
    }
    if (!commutes_with_reorientation(op)) {
      append_ops(pending, merged.ops);
      pending = {};
    }
    merged.ops.push_back(op);
  }
  append_ops(pending, merged.ops);
  return merged;
}

std::vector<double> gaussian_weights(int ksize, double sigma) {
  // cv::getGaussianKernel keeps fixed binomial-like tables for small kernels when sigma is derived.
  static const double kSmall[4][7] = {{1.0},
                                      {0.25, 0.5, 0.25},
                                      {0.0625, 0.25, 0.375, 0.25, 0.0625},
                                      {0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125}};
  const bool fixed = ksize % 2 == 1 && ksize <= 7 && sigma <= 0;
  const double s = sigma > 0 ? sigma : ((ksize - 1) * 0.5 - 1) * 0.3 + 0.8;
  const double scale2 = -0.5 / (s * s);
  std::vector<double> w(static_cast<std::size_t>(ksize));
  double sum = 0;
  for (int i = 0; i < ksize; ++i) {
    const double x = i - (ksize - 1) * 0.5;
    w[i] = fixed ? kSmall[ksize >> 1][i] : std::exp(scale2 * x * x);
    sum += w[i];
  }
  for (double& v : w) v /= sum;
  return w;
}

std::vector<int> gaussian_fixed_point_taps(int ksize, double sigma) {
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

std::string_view chain_help() {
  return R"(An op chain is ops separated by commas, applied left to right, e.g. "resize=1280x720,gaussian=5:1.0".
  resize=WxH[:linear|nearest]   bilinear (OpenCV INTER_LINEAR) or nearest (OpenCV INTER_NEAREST_EXACT)
  gaussian=K[:SIGMA][:BORDER]   Gaussian blur, odd K 3..31, SIGMA 0 derives it from K
  box=K[:BORDER]                mean over a KxK box, odd K 3..31
  sharpen[=BORDER]              3x3 sharpen [0 -1 0; -1 5 -1; 0 -1 0]
  sobel[=BORDER]                edge magnitude min(255, |Gx|+|Gy|) per channel
  transpose                     swap rows and columns
  rotate=90|180|270             rotate clockwise
  flip=h|v                      mirror left-right (h) or upside down (v)
  gray                          BT.601 luma in all three channels
  normalize                     stretch each channel's min..max to 0..255
BORDER is reflect101 (default, OpenCV's BORDER_DEFAULT) or replicate.)";
}

}  // namespace imgpipe
