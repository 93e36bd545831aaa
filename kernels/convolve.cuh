// Neighbourhood filters: any KxK taps (gaussian, box, sharpen) and sobel, with borders per BorderMode.
//   naive:     interleaved frame; a 2-D loop over KxK taps read from a global-memory array, a border test for
//              every tap of every pixel.
//   optimized: planes, or the interleaved frame where a chain starts or ends; taps in this file's __constant__
//              bank (ConstantTaps), a shared-memory tile with its halo, separable filters as a row pass and a
//              column pass in one kernel, 3x3 filters from the same kind of tile; only blocks whose halo leaves
//              the frame run the border arithmetic.
// Kernel sizes are odd, from 3 to kMaxTaps (radius 1 to kMaxRadius). Taps correlate: tap (i, j) weighs the
// pixel at offset (i - r, j - r). Results are accumulated in float, multiplied by the filter's scale (1 unless
// given), rounded half up and saturated. Sums of integer taps (sharpen, sobel, and a box given taps of 1 and
// scale 1 / K^2) and of taps in units of 1/256 (OpenCV's fixed-point Gaussian) are exact in float for 8-bit
// input, so those filters give OpenCV's bytes. All launches are asynchronous on `stream`; in and out extents are
// equal and the views must not overlap.
#pragma once

#include "byte_divide.hpp"
#include "limits.hpp"
#include "normalize.cuh"
#include "planes.hpp"
#include "tap_slots.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <span>

namespace imgpipe::cuda {

// A filter's taps in this file's __constant__ bank: one slot (a TapSlot), uploaded once at construction and
// held until destruction, so planned chains never overwrite each other's taps and nothing is uploaded per frame.
// Move-only. Destruction waits for the device before the slot is reused (see TapSlot).
class ConstantTaps {
 public:
  // 1 to kMaxTaps values; throws std::invalid_argument otherwise, std::runtime_error when every slot is taken.
  // `scale` multiplies the filtered sum before it is rounded.
  explicit ConstantTaps(std::span<const float> taps, float scale = 1.f);

  int slot() const noexcept { return slot_.index(); }            // -1 once moved from
  int size() const noexcept { return slot_.held() ? size_ : 0; }  // 0 once moved from
  float scale() const noexcept { return scale_; }

  // The taps as whole multiples of 1 / unit(), unit 1 (box, sharpen) or 256 (OpenCV's fixed-point Gaussian),
  // also held as integers in the slot for the interleaved kernels; 0 when they are neither. The sums of those
  // integers' positive and negative parts.
  int unit() const noexcept { return unit_; }
  int positive_sum() const noexcept { return positive_sum_; }
  int negative_sum() const noexcept { return negative_sum_; }
  // Whether the taps are sharpen's cross, 0 -1 0 / -1 5 -1 / 0 -1 0, with scale 1: filter3x3_aos then runs them
  // as constants of its kernel.
  bool sharpen_cross() const noexcept { return sharpen_cross_; }
  // Whether every tap is 1 (the box's): separable_aos then sums its windows by additions, multiplying nothing.
  bool all_ones() const noexcept { return all_ones_; }
  // How separable_aos rounds its sums (these taps on rows, then on columns, with this scale): as byte 2 of the sum
  // plus 2^15 where the scale is 2^-16 and the taps sum to 256 (OpenCV's Gaussian), else as an integer division
  // where that is one for every sum the taps can make (exact_byte_divide; multiplier 0 where not, or for the
  // first case).
  bool separable_top_byte() const noexcept { return separable_top_byte_; }
  ByteDivide separable_divide() const noexcept { return separable_divide_; }

 private:
  TapSlot slot_;
  int size_ = 0;
  float scale_ = 1.f;
  int unit_ = 0;
  int positive_sum_ = 0;
  int negative_sum_ = 0;
  bool sharpen_cross_ = false;
  bool all_ones_ = false;
  bool separable_top_byte_ = false;
  ByteDivide separable_divide_;
};

// naive: `taps` is a device array of ksize * ksize floats, row-major; `scale` multiplies the sum before rounding.
void filter2d_naive(ConstAosView in, AosView out, const float* taps, int ksize, float scale, BorderMode border,
                    cudaStream_t stream);
void sobel_naive(ConstAosView in, AosView out, BorderMode border, cudaStream_t stream);

// optimized: `taps` (an odd count, 3 to kMaxTaps) filter the rows, then the columns: the KxK filter that is
// their outer product, as for gaussian and box.
void separable_planes(ConstPlanesView in, PlanesView out, const ConstantTaps& taps, BorderMode border,
                      cudaStream_t stream);
// The same on frames of either layout in and out: the interleaved frame's channels are read (or written) in
// place, one byte in three, instead of through a deinterleave (interleave) pass.
void separable_frames(const ConstFrameView& in, const FrameView& out, const ConstantTaps& taps, BorderMode border,
                      cudaStream_t stream);
// Ablation twins of separable_planes for benchmarks: the same tiled kernel with one technique swapped back.
//   TapSource::global         taps read from `global_taps` (device memory, taps.size() floats, equal to `taps`)
//                             through the general load path instead of the __constant__ bank;
//   BorderPolicy::per_element every staged element tested against the frame (and mapped when outside), as the
//                             naive kernel does, instead of one block-uniform inside/outside decision.
// constant + block_uniform is exactly separable_planes. Results are identical for every combination.
enum class TapSource { constant, global };
enum class BorderPolicy { block_uniform, per_element };
void separable_planes_variant(ConstPlanesView in, PlanesView out, const ConstantTaps& taps, const float* global_taps,
                              TapSource source, BorderPolicy policy, BorderMode border, cudaStream_t stream);

// The separable filter and the 3x3 filters on `frames` interleaved frames per launch (1 to kMaxFramesPerLaunch),
// frame f at first_in.data + f * in_frame_stride and first_out.data + f * out_frame_stride (bytes), any pitch
// and alignment. A tile of 64x32 pixels (64x16 in short launches: AosTiles) and its halo comes into shared memory
// as whole words; with the taps as integers, the separable filter's column pass weighs two bytes per 32-bit
// multiply-add (16-bit lanes) and its row pass weighs the 32-bit column sums, which gives separable_frames'
// (filter3x3_frames', sobel_frames') bytes exactly; each thread stores its outputs four bytes at a time. Taps that the
// lanes cannot hold (separable_aos_takes, filter3x3_aos_takes false) run separable_frames / filter3x3_frames frame by
// frame.
//
// The tiles' height. by_launch: 64x16 for a launch whose 64x32 tiles make fewer blocks than two waves of the
// device's resident blocks (aos_half_tiles_pay), where twice the blocks keep more SMs busy: one 1080p frame on an
// H100 took 13.86 us for a 5x5 Gaussian against 16.03 with 64x32 tiles; 64x32 otherwise, where the taller tiles'
// smaller halo share wins (16 1080p frames: 8.13 against 8.75 us a frame with 64x16; docs/performance.md). full
// and half name one height.
enum class AosTiles { by_launch, full, half };
bool aos_half_tiles_pay(long long full_tile_blocks, int resident_blocks);
bool separable_aos_takes(const ConstantTaps& taps);
bool filter3x3_aos_takes(const ConstantTaps& taps);
void separable_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                   int frames, const ConstantTaps& taps, BorderMode border, cudaStream_t stream,
                   AosTiles tiles = AosTiles::by_launch);
void filter3x3_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                   int frames, const ConstantTaps& taps, BorderMode border, cudaStream_t stream,
                   AosTiles tiles = AosTiles::by_launch);
void sobel_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
               int frames, BorderMode border, cudaStream_t stream, AosTiles tiles = AosTiles::by_launch);
// Gray (gray.cuh) and then sobel_aos or filter3x3_aos in one launch, with the same arguments: each block turns its
// staged tile to luma before the filter reads it, so the gray frame is never written out; the bytes of gray_aos
// and then the filter. gray_filter3x3_aos needs taps that filter3x3_aos_takes (std::invalid_argument otherwise).
void gray_sobel_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
                    int frames, BorderMode border, cudaStream_t stream, AosTiles tiles = AosTiles::by_launch);
void gray_filter3x3_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                        std::size_t out_frame_stride, int frames, const ConstantTaps& taps, BorderMode border,
                        cudaStream_t stream, AosTiles tiles = AosTiles::by_launch);
// Gray, sobel and normalize (normalize.cuh) in two launches, the bytes of gray_sobel_aos and then normalize_aos:
// the first writes each frame's magnitudes, equal in the three channels after gray, as one byte per pixel into
// scratch.luma and folds their range, the second stretches them into the output's three bytes: 8 bytes a pixel
// cross DRAM where gray_sobel_aos and normalize_aos move 15.
void gray_sobel_normalize_aos(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                              std::size_t out_frame_stride, int frames, BorderMode border, NormalizeScratch& scratch,
                              cudaStream_t stream, AosTiles tiles = AosTiles::by_launch);

// 3x3 filters on frames of either layout in and out, as separable_frames. `taps`: nine values, row-major
// (sharpen).
void filter3x3_frames(const ConstFrameView& in, const FrameView& out, const ConstantTaps& taps, BorderMode border,
                      cudaStream_t stream);
void sobel_frames(const ConstFrameView& in, const FrameView& out, BorderMode border, cudaStream_t stream);

}  // namespace imgpipe::cuda
