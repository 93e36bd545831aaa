// Fused bilinear resize + separable filter on interleaved RGB8 frames: one launch, one read of the input,
// one write of the output; the resized tile never leaves the chip. See resize_filter.cu for the design.
#pragma once

#include "limits.hpp"
#include "planes.hpp"
#include "tap_slots.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <span>

namespace imgpipe::cuda {

// How the fused kernel rounds. fast: its own fixed point, within +-1 of resize-then-filter. opencv: OpenCV's
// bytes, as cv::resize (INTER_LINEAR, 8-bit fixed point) then cv::GaussianBlur (8-bit taps, bit-exact) compute
// them; only at the exact ratios, for taps in units of 1/256 (see resize_filter_exact_ratio_fits).
enum class ResizeFilterArithmetic { fast, opencv };

// The filter's 1-D taps (used for rows and for columns), held in a __constant__ slot of resize_filter.cu (a
// TapSlot), and the arithmetic the kernel runs them with. Uploaded once here (cudaMemcpyToSymbol to the current
// device); kernels receive the slot index only. Taps: an odd count from 1 to kMaxTaps (31), each >= 0, summing
// to 1 within 1e-3 (Gaussian or box weights), so a filtered value never leaves [0, 255] and needs no clamp; for
// the opencv arithmetic each a whole number of 1/256 and summing to exactly 1 (OpenCV's 8-bit Gaussian taps).
// One tap is taken as 1: the kernel then skips the filter and gives the plain resize.
// Throws std::invalid_argument otherwise, and std::runtime_error when every slot is taken. Move-only. The
// destructor synchronises the device before freeing the slot, so a later owner cannot overwrite taps that a
// queued kernel still reads (see TapSlot).
class ResizeFilterTaps {
 public:
  explicit ResizeFilterTaps(std::span<const float> taps,
                            ResizeFilterArithmetic arithmetic = ResizeFilterArithmetic::fast);

  int size() const noexcept { return slot_.held() ? size_ : 0; }  // 0 once moved from
  int slot() const noexcept { return slot_.index(); }            // -1 once moved from
  ResizeFilterArithmetic arithmetic() const noexcept { return arithmetic_; }

 private:
  TapSlot slot_;
  int size_ = 0;
  ResizeFilterArithmetic arithmetic_ = ResizeFilterArithmetic::fast;
};

// out = filter(resize(in)): bilinear resize to out.extent with OpenCV INTER_LINEAR semantics (half-pixel
// centres, clamped edges), the resized value rounded to 8 bits, then the separable filter with `border`
// applied to the resized image. Equals resize-then-filter within +-1 per 8-bit value, or exactly OpenCV's bytes
// with taps of the opencv arithmetic (which take only what resize_filter_exact_ratio_fits accepts).
// Asynchronous, enqueued on `stream`. `in` and `out` must not overlap.
// Any size from 1x1 to kMaxDimension (65535) a side, up or down. Throws std::invalid_argument for empty or
// larger extents, a pitch below 3 * width (or an input pitch of 4 GiB or more), a moved-from `taps`, or a
// horizontal downscale so wide that the source span of one tile row no longer fits shared memory: beyond 84x in
// the worst case (K = 19; 101x for K = 5, 90x for K = 31). The vertical scale is unlimited (each resized row
// reads just two source rows).
void resize_filter_aos(ConstAosView in, AosView out, const ResizeFilterTaps& taps, BorderMode border,
                       cudaStream_t stream);

// The same for `frames` frames per launch: frame f is read at first_in.data + f * in_frame_stride and
// written at first_out.data + f * out_frame_stride (bytes; each stride >= pitch * height). One launch
// fills the GPU where a single 1080p frame cannot. frames in 1..kMaxFramesPerLaunch (65535).
void resize_filter_aos_batch(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                             std::size_t out_frame_stride, int frames, const ResizeFilterTaps& taps,
                             BorderMode border, cudaStream_t stream);

// Whether resize_filter_aos takes these sizes with a filter of `ksize` taps (what it would otherwise refuse
// with std::invalid_argument: sizes out of range, an even or too large ksize, too wide a downscale). Callers
// with a fallback ask this first; it touches no device.
bool resize_filter_fits(Extent in, Extent out, int ksize);

// Whether a launch takes these frames on its exact-ratio path, the only one of the opencv arithmetic: 2:1 or 3:2
// across with a vertical scale of 1/2, 1, 3/2 or 2 (every OpenCV weight a multiple of 1/4), ksize <= 9, and
// 16-byte aligned input rows. Touches no device.
bool resize_filter_exact_ratio_fits(ConstAosView first_in, std::size_t in_frame_stride, int frames, Extent out,
                                    int ksize);
// Its part that depends on the sizes alone, for callers that ask once per size and check the rows' alignment
// (frame_rows_aligned, 16 bytes) per launch.
bool resize_filter_at_exact_ratio(Extent in, Extent out, int ksize);
// Whether a lone resize (one tap) to `out` at a ratio with no exact-ratio path is faster here than in
// resize_linear_aos: where one frame's output holds at least three of this kernel's 64x32 tiles per SM. With
// fewer, each block stages its stretch of source rows while the SMs run a fraction of their blocks, and the
// four-pixels-a-thread kernel measured faster on an H200, one frame per launch and 16 (docs/performance.md).
bool resize_filter_lone_resize_pays(Extent out);

// How a launch for these sizes is shaped, and what the device makes of it (for benchmarks and notes), for frames
// whose rows are 16-byte aligned.
struct ResizeFilterLaunch {
  dim3 grid;
  int threads = 0;
  std::size_t shared_bytes = 0;  // dynamic shared memory per block, as launched (see blocks_per_sm)
  bool exact_ratio = false;      // 2:1 or 3:2 across and k/2 down, K <= 9: resized straight from global memory
  int chunk_rows = 0;            // vertically interpolated rows staged per pass (all tile rows when it fits; none
                                 // on the exact-ratio path)
  int registers = 0;             // per thread, from cudaFuncGetAttributes
  int blocks_per_sm = 0;         // from cudaOccupancyMaxActiveBlocksPerMultiprocessor; a grid of a few waves
                                 // may ask for more shared memory than it uses, to run fewer blocks per SM
};
ResizeFilterLaunch resize_filter_launch(Extent in, Extent out, int ksize, int frames);

}  // namespace imgpipe::cuda
