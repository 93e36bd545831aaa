// Fused bilinear resize + separable filter on the tensor cores, interleaved RGB8 in and out: the same images
// as resize_filter_aos (resize_filter.cuh) within +-1, for the sizes where a tile's source window fits
// shared memory. A measured alternative, not the pipeline's path: on the H200 it is 1.6x slower than
// resize_filter_aos (docs/performance.md, "Tensor cores"), so DeviceChain runs resize_filter_aos and the
// benchmark runs both. See resize_filter_mma.cu.
#pragma once

#include "cuda_resources.hpp"
#include "planes.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <span>

namespace imgpipe::cuda {

// Resize then filter is linear in the source, and separable: out = V * src * H^T per channel, where row y of
// V holds the weights that output row y gives to each source row (the filter's taps spread over the bilinear
// weights of the resized rows they touch, the filter's border folded in), and H the same for columns. This
// object holds V and H for one (input size, output size, filter, border), cut into the 32-row and 32-column
// bands of the kernel's output tiles, as fp16 tensor-core fragments in device memory. Built on the host and
// uploaded once; kernels only read it. Move-only.
class ResizeFilterMatrices {
 public:
  // Taps: an odd count from 1 to 31, each >= 0, summing to 1 within 1e-3. Throws std::invalid_argument for
  // bad taps, sizes out of 1..65535, or sizes fits() refuses; CudaError from the upload.
  ResizeFilterMatrices(Extent in, Extent out, std::span<const float> taps, BorderMode border);
  ResizeFilterMatrices(ResizeFilterMatrices&&) noexcept = default;
  ResizeFilterMatrices& operator=(ResizeFilterMatrices&&) noexcept = default;

  // Whether a tile's source window fits shared memory: downscales up to about 3x with K = 5 (2.5x with
  // K = 31), any upscale. Host arithmetic only.
  static bool fits(Extent in, Extent out, int ksize);

  Extent in() const noexcept { return in_; }
  Extent out() const noexcept { return out_; }

  // For the kernel's launch (resize_filter_mma.cu).
  struct Layout {
    int row_bands = 0, col_bands = 0;
    int row_steps = 0;    // 16-row k-steps of a row band's source window (source rows = 16 * row_steps)
    int col_steps = 0;    // 16-pixel k-steps of a column band's source window
    int window_bytes = 0; // bytes staged per source row: the column window plus its 16-byte alignment
    std::size_t shared_bytes = 0;
  };
  const Layout& layout() const noexcept { return layout_; }
  const void* device_tables() const noexcept { return tables_.data(); }

 private:
  Extent in_{}, out_{};
  Layout layout_;
  DeviceBuffer tables_;
};

// out = filter(resize(in)) for `frames` frames per launch (frame f at first_in.data + f * in_frame_stride,
// written at first_out.data + f * out_frame_stride; strides >= pitch * height when frames > 1), with the
// matrices built for exactly these extents (std::invalid_argument otherwise). Asynchronous, on `stream`.
// Needs compute capability 8.0 or newer (CudaError from the launch otherwise).
void resize_filter_mma(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                       std::size_t out_frame_stride, int frames, const ResizeFilterMatrices& matrices,
                       cudaStream_t stream);

// What the device makes of the launch (for benchmarks and notes).
struct ResizeFilterMmaLaunch {
  dim3 grid;
  int threads = 0;
  std::size_t shared_bytes = 0;
  int registers = 0;
  int blocks_per_sm = 0;
};
ResizeFilterMmaLaunch resize_filter_mma_launch(const ResizeFilterMatrices& matrices, int frames);

}  // namespace imgpipe::cuda
