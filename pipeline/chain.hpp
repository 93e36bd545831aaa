// The op chain: imgpipe's one language for what to do to a frame, e.g. "resize=1280x720,gaussian=5:1.0".
// Parsed and validated once; every backend plans from the parsed form.
#pragma once

#include "image.hpp"
#include "limits.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace imgpipe {

// Pixels outside the image, for neighbourhood filters. reflect101 is OpenCV's default (dcb|abcd|cba).
enum class Border { reflect101, replicate };
enum class Interp { linear, nearest };

// Bilinear follows OpenCV's INTER_LINEAR (half-pixel centres, clamped edges);
// nearest takes source index floor((x + 0.5) * src / dst), computed exactly: OpenCV 5's INTER_NEAREST_EXACT and
// Pillow's NEAREST. OpenCV 4's INTER_NEAREST_EXACT approximates it in 16.16 fixed point (see README).
struct Resize {
  Size size;
  Interp interp = Interp::linear;
};
// Weights as cv::getGaussianKernel(ksize, sigma); sigma <= 0 derives it from ksize.
struct Gaussian {
  int ksize = 5;
  double sigma = 0.0;
  Border border = Border::reflect101;
};
struct Box {  // normalised mean, as cv::blur
  int ksize = 3;
  Border border = Border::reflect101;
};
struct Sharpen {  // 3x3 [0 -1 0; -1 5 -1; 0 -1 0]
  Border border = Border::reflect101;
};
struct Sobel {  // min(255, |Gx| + |Gy|) with 3x3 Sobel taps, per channel
  Border border = Border::reflect101;
};
struct Transpose {};
struct Rotate {  // clockwise
  int degrees = 90;
};
struct Flip {
  enum class Axis { horizontal, vertical } axis = Axis::horizontal;  // horizontal mirrors left-right
};
struct Gray {};       // BT.601 luma, written to all three channels
struct Normalize {};  // per-channel min..max stretched to 0..255 (a constant channel becomes 0, as cv::normalize)

using Op = std::variant<Resize, Gaussian, Box, Sharpen, Sobel, Transpose, Rotate, Flip, Gray, Normalize>;

struct Chain {
  std::vector<Op> ops;
};

class ChainError : public std::invalid_argument {
 public:
  ChainError(const std::string& token, const std::string& expected);
  const std::string& token() const { return token_; }

 private:
  std::string token_;
};

// The kernels' limits (kernels/limits.hpp), as the chain's parser checks them.
inline constexpr int kMaxFilterSize = cuda::kMaxTaps;
inline constexpr int kMaxDimension = cuda::kMaxDimension;

// Throws ChainError naming the bad token and what was expected there.
Chain parse_chain(std::string_view text);

// "WxH" with both sides from 1 to kMaxDimension, as resize= and --size take it; nullopt otherwise.
std::optional<Size> parse_size(std::string_view text);

std::string to_string(const Op& op);
std::string to_string(const Chain& chain);

Size output_size(const Op& op, Size in);
Size output_size(const Chain& chain, Size in);
// The shape a video's frames are shown in, width to height, where its pixels are not square (an anamorphic
// video: its frame's width and height times its sample aspect ratio), reduced to lowest terms.
struct DisplayAspect {
  std::int64_t width = 1;
  std::int64_t height = 1;
  bool operator==(const DisplayAspect&) const = default;
};
// width:height reduced; nullopt unless both are positive.
std::optional<DisplayAspect> display_aspect(std::int64_t width, std::int64_t height);
// The shape the chain's output is shown in for an input shown as `input`: a resize keeps it, as ffmpeg's scale
// filter keeps it (the pixels stretch by what the resize squeezes the frame), and each transpose or quarter turn
// turns it.
DisplayAspect output_display_aspect(const Chain& chain, DisplayAspect input);
// The sample aspect ratio (a pixel's width to its height) that shows a frame of `size` as `aspect`, reduced.
DisplayAspect pixel_aspect(DisplayAspect aspect, Size size);

// The largest frame the chain makes from an input of `in`: the input itself, then every op's output. Sources
// check it against their pixel limit before asking for memory, so a chain that blows a small image up is
// refused before the engine allocates for it.
Size largest_frame(const Chain& chain, Size in);

// The same frames in fewer passes, for a planner: in each stretch of the chain between resizes, the transposes,
// rotations and flips compose into one reorientation at the stretch's end. The filters and point ops they move
// past commute with them (symmetric taps, mirrored borders, per-pixel or per-channel arithmetic), so in OpenCV's
// arithmetic the merged chain makes the same bytes. Turns and flips that cancel out go; the one composition with
// no op of its own, the transpose across the other diagonal, stays two ops (transpose,rotate=180). Resizes do
// not move: OpenCV's bilinear rounding is not mirror-symmetric.
Chain merge_reorientations(const Chain& chain);

// The separable weights cv::getGaussianKernel(ksize, sigma, CV_64F) returns.
std::vector<double> gaussian_weights(int ksize, double sigma);
// The taps cv::GaussianBlur uses on 8-bit frames (its bit-exact path), in units of 1/256, summing to 256: the
// Gaussian in double precision (sigma <= 0: the fixed 3-, 5- and 7-tap tables, else sigma 0.15 * ksize + 0.35),
// normalised to sum 1, then rounded to 1/256 with the rounding error carried from tap to tap towards the centre,
// whose tap takes what is left of 256.
std::vector<int> gaussian_fixed_point_taps(int ksize, double sigma);

// Help text for the chain language, shared by every command.
std::string_view chain_help();

}  // namespace imgpipe
