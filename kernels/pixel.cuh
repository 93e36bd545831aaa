// Device-side pixel helpers shared by the kernel files. Included by .cu files only.
#pragma once

#include "planes.hpp"

#include <cstdint>

namespace imgpipe::cuda {

// Source index for position p of an axis of n pixels read past its edge (OpenCV's borderInterpolate).
// reflect101 (dcb|abcd|cba) is periodic with period 2(n-1): one modulo instead of a reflect loop, so any
// distance outside the image costs the same.
__device__ __forceinline__ int border_index(int p, int n, BorderMode mode) {
  if (n == 1) return 0;
  if (mode == BorderMode::replicate) return min(max(p, 0), n - 1);
  const int period = 2 * (n - 1);
  int q = p % period;
  if (q < 0) q += period;
  return q < n ? q : period - q;
}

// Round half up and saturate to 0..255, as the reference's floor(v + 0.5) clamped.
__device__ __forceinline__ std::uint8_t saturate_round(float v) {
  return static_cast<std::uint8_t>(__float2int_rd(fminf(fmaxf(v + 0.5f, 0.f), 255.f)));
}

// |Gx| + |Gy| with 3x3 Sobel taps, saturated; p(j, i) is the pixel at offset (i - 1, j - 1). A reorientation
// swaps Gx and Gy or negates one of them, so the magnitude of a reoriented frame is the reoriented magnitude.
template <class Pixel>
__device__ __forceinline__ std::uint8_t sobel_at(Pixel p) {
  const int gx = p(0, 2) + 2 * p(1, 2) + p(2, 2) - p(0, 0) - 2 * p(1, 0) - p(2, 0);
  const int gy = p(2, 0) + 2 * p(2, 1) + p(2, 2) - p(0, 0) - 2 * p(0, 1) - p(0, 2);
  return static_cast<std::uint8_t>(min(255, abs(gx) + abs(gy)));
}

// Plane z of a view. Indexing a kernel parameter's array with a run-time z would copy the whole view to
// the stack (local memory); selecting keeps every read in the parameter bank.
template <class View>
__device__ __forceinline__ auto plane_of(const View& v, unsigned z) {
  return z == 0 ? v.plane[0] : (z == 1 ? v.plane[1] : v.plane[2]);
}

// OpenCV's RGB2GRAY for 8-bit frames: BT.601 weights in 15-bit fixed point, rounded half up.
constexpr unsigned kLumaR = 9798u, kLumaG = 19235u, kLumaB = 3735u, kLumaShift = 15u;
__device__ __forceinline__ std::uint8_t luma(unsigned r, unsigned g, unsigned b) {
  return static_cast<std::uint8_t>((r * kLumaR + g * kLumaG + b * kLumaB + (1u << (kLumaShift - 1))) >> kLumaShift);
}

// luma() of the pixel whose R, G and B are bytes 0, 1 and 2 of `rgbx` (byte 3 is weighed by 0): the weights split
// into their high and low bytes, two dp4a in place of unpacking the bytes and three multiply-adds.
__device__ __forceinline__ std::uint8_t luma_of_word(std::uint32_t rgbx) {
  constexpr unsigned kHigh = kLumaR >> 8 | (kLumaG >> 8) << 8 | (kLumaB >> 8) << 16;
  constexpr unsigned kLow = (kLumaR & 0xFFu) | (kLumaG & 0xFFu) << 8 | (kLumaB & 0xFFu) << 16;
  const unsigned sum = __dp4a(rgbx, kHigh, 0u) * 256u + __dp4a(rgbx, kLow, 1u << (kLumaShift - 1));
  return static_cast<std::uint8_t>(sum >> kLumaShift);
}

}  // namespace imgpipe::cuda
