// OpenCV's 8-bit arithmetic written out, for the GPU's OpenCV-exact mode to follow and be checked against:
// the same integer steps as the OpenCV functions the cpu backend calls, so the results are the same bytes.
// test_opencv_exact proves each against OpenCV itself (memcmp-equal) on photographs, odd sizes and every
// scale class. Derived from OpenCV 4.6's documented behaviour and its source (modules/imgproc/src/resize.cpp
// and smooth.dispatch.cpp), for builds without IPP (Debian's): with IPP, OpenCV may route these through IPP, whose
// rounding differs.
#pragma once

#include "chain.hpp"
#include "image.hpp"

#include <cstdint>
#include <vector>

namespace imgpipe::opencv_exact {

// cv::resize(INTER_LINEAR) on 8-bit frames, as a separable fixed-point interpolation:
//   source position  f = float((d + 0.5) * (double(in) / out) - 0.5),  s = floor(f),  t = f - s
//   weights          round-to-nearest-even short((1 - t) * 2048) and short(t * 2048)   (INTER_RESIZE_COEF_SCALE)
//   horizontal       H = a0 * S[s] + a1 * S[s + 1], an int in units of 1/2048; a column left of the image
//                    takes s = 0, t = 0, one at or right of the last takes s = last, weight 2048 alone
//   vertical         rows s and s + 1 clamped to the image; out = ((b0 * (H0 >> 4)) >> 16)
//                    + ((b1 * (H1 >> 4)) >> 16) + 2) >> 2, saturated to 0..255
struct LinearAxis {
  std::vector<int> first;            // s per output index
  std::vector<std::int16_t> weight;  // 2 per output index: (1 - t), t in units of 1/2048
  int clamp_from = 0;                // columns: output indices from here on take `first` with weight 2048 alone
};
// Columns clamp as the horizontal pass does (s and t reset at the edges); rows keep their weights and are
// clamped to the image only when read, as the vertical pass does.
LinearAxis column_axis(int in, int out);
LinearAxis row_axis(int in, int out);

Image resize_linear(const Image& in, Size out);

// cv::GaussianBlur on 8-bit frames (bit-exact since OpenCV 4.0), as integer sums:
//   taps       gaussian_fixed_point_taps (chain.hpp), units of 1/256
//   rows       H = sum of source * tap, exact (units of 1/256)
//   columns    out = (sum of H * tap + 2^15) >> 16, saturated to 0..255
// Borders as the chain names them (reflect101: cv::BORDER_REFLECT_101, replicate: cv::BORDER_REPLICATE).
Image gaussian_blur(const Image& in, int ksize, double sigma, Border border);

// cv::blur on 8-bit frames: the exact integer sum S of the ksize x ksize window, then
//   ksize 1          out = S
//   ksize^2 <= 256   (16-bit sums) out = ((S + delta) * m) >> 23, OpenCV's reciprocal multiply: with
//                    d = ksize^2, m = floor(2^23 / d) + (its fraction >= 0.5), delta = d / 2 + (fraction < 0.5)
//   larger           out = S / d rounded to nearest (d is odd, so there is never a tie)
Image box_blur(const Image& in, int ksize, Border border);

// cv::cvtColor(RGB2GRAY) then GRAY2RGB: Y = (9798 R + 19235 G + 3735 B + 2^14) >> 15 in all three channels
// (15-bit weights; the 14-bit 4899, 9617, 1868 of OpenCV's YUV conversions differ from it by one level).
Image gray(const Image& in);

// cv::filter2D with the sharpen taps [0 -1 0; -1 5 -1; 0 -1 0]: OpenCV sums in float, which holds these integer
// sums exactly, so out = clamp(5 c - up - down - left - right, 0, 255).
Image sharpen(const Image& in, Border border);

// The cpu backend's sobel: cv::Sobel (3x3, 16-bit) in x and in y, cv::convertScaleAbs of each (|G| saturated
// to 255), cv::add (saturated): out = min(255, min(255, |Gx|) + min(255, |Gy|)).
Image sobel(const Image& in, Border border);

// cv::normalize(NORM_MINMAX, 0..255) of each channel, as the cpu backend runs it: with the channel's lo and hi,
//   scale = 255 * (1 / (hi - lo)) in double (0 when hi == lo), shift = -lo * scale,
//   out   = round-half-even(fma(v, float(scale), float(shift))), saturated: cv::Mat::convertTo's single-precision
//           multiply-add, fused as OpenCV's AVX2 code runs it.
Image normalize(const Image& in);
// A 53x7 frame whose channel ranges put the stretch exactly on halves (lo 1, hi 37: 7 -> 42.5), which the fused
// multiply-add rounds to even where a separate multiply and add would round up.
Image normalize_ties();

// A chain with the models above for the ops OpenCV computes (linear resize, gaussian, box, gray, sharpen, sobel,
// normalize), and the reference (reference.hpp) for the exact ones (nearest resize, transpose, rotate, flip): the
// bytes the cpu backend gives.
Image apply(const Chain& chain, const Image& in);

// Output sizes of every resize class for an input of `in`: halves and thirds (exact ratios), 3:2 and 2:3, down and
// up by non-integer factors, doubling and tripling, the same size, one row, one column, one pixel, and two fixed
// sizes.
std::vector<Size> scale_classes(Size in);

}  // namespace imgpipe::opencv_exact
