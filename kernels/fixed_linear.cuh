// OpenCV's fixed-point INTER_LINEAR for 8-bit frames (modules/imgproc/src/resize.cpp), as device functions: the
// exact resize kernels (resize.cu) and the exact fused resize + filter (convolve.cu) give its bytes through these.
// Included by .cu files only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace imgpipe::cuda {

// One axis of OpenCV's fixed-point INTER_LINEAR: source indices and weights in units of 1/2048
// (INTER_RESIZE_COEF_SCALE). The position is float((d + 0.5) * scale - 0.5), scale = 1 / (out / in) in double,
// each step rounded on its own as the CPU does (no contraction into a fused multiply-add); the weights are
// round-half-even((1 - t) * 2048) and (t * 2048). Columns reset s and t at the image's edges; rows keep their
// weights and only clamp the indices they read.
struct FixedTap {
  int i0, i1;
  int w0, w1;
};

__device__ __forceinline__ FixedTap fixed_tap(int dst, double scale, int src_len, bool reset_at_edges) {
  float t = __double2float_rn(__dadd_rn(__dmul_rn(dst + 0.5, scale), -0.5));
  int s = __float2int_rd(t);
  t = __fsub_rn(t, static_cast<float>(s));
  if (reset_at_edges) {
    if (s < 0) s = 0, t = 0.f;
    if (s >= src_len - 1) s = src_len - 1, t = 0.f;
  }
  return {min(max(s, 0), src_len - 1), min(max(s + 1, 0), src_len - 1),
          __float2int_rn(__fmul_rn(__fsub_rn(1.f, t), 2048.f)), __float2int_rn(__fmul_rn(t, 2048.f))};
}

// OpenCV's two passes for one output value: each source row interpolated horizontally to an int in 1/2048, then
// ((b0 * (h0 >> 4)) >> 16) + ((b1 * (h1 >> 4)) >> 16) + 2) >> 2, saturated. `src` points at the channel in pixel
// (0, 0); `step` is the distance between horizontal neighbours.
__device__ __forceinline__ std::uint8_t fixed_bilinear(const std::uint8_t* src, std::size_t pitch, int step,
                                                       FixedTap tx, FixedTap ty) {
  const std::uint8_t* r0 = src + static_cast<std::size_t>(ty.i0) * pitch;
  const std::uint8_t* r1 = src + static_cast<std::size_t>(ty.i1) * pitch;
  const int h0 = r0[tx.i0 * step] * tx.w0 + r0[tx.i1 * step] * tx.w1;
  const int h1 = r1[tx.i0 * step] * tx.w0 + r1[tx.i1 * step] * tx.w1;
  const int v = (((ty.w0 * (h0 >> 4)) >> 16) + ((ty.w1 * (h1 >> 4)) >> 16) + 2) >> 2;
  return static_cast<std::uint8_t>(min(max(v, 0), 255));
}

// As cv::resize computes it: the inverse of out / in, per axis.
inline double2 opencv_scale(int in_width, int in_height, int out_width, int out_height) {
  return {1.0 / (static_cast<double>(out_width) / in_width), 1.0 / (static_cast<double>(out_height) / in_height)};
}

}  // namespace imgpipe::cuda
