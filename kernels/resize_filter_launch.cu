// Fused bilinear resize + separable filter: the host side. Plans a launch (the path, the staged rows, the shared
// memory, the grid) from the frame sizes with the kernel's own geometry (resize_filter_geometry.cuh), refuses
// what the kernel cannot take, and launches resize_filter.cu's kernel as a programmatic dependent.
#include "resize_filter.cuh"

#include "cuda_check.hpp"
#include "launch.cuh"
#include "limits.hpp"
#include "resize_filter_geometry.cuh"
#include "resize_filter_params.cuh"

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace imgpipe::cuda {
namespace resize_filter {
namespace {

constexpr int kStagingBudget = 40 * 1024;  // staged-row bytes per pass, at least

// The path for these sizes where the input rows are 8-byte aligned (step 2x's loads): 2:1 or 3:2 across with a
// vertical scale of k/2 up to 2 (every row weight, computed in float, exactly a multiple of 1/4), for radii up to
// kMaxRadiusInRegisters; the general path otherwise.
Ratio ratio_for(Extent in, Extent out, int radius) {
  if (!(out.width >= 1 && out.height >= 1)) return Ratio::any;  // refused by the plan
  if (!(radius <= kMaxRadiusInRegisters && 2 * in.height % out.height == 0 && in.height <= 2 * out.height)) {
    return Ratio::any;
  }
  if (in.width == 2 * out.width) return Ratio::two;
  if (2 * in.width == 3 * out.width) return Ratio::three_halves;
  return Ratio::any;
}

struct Plan {
  dim3 grid;
  std::size_t shared_bytes = 0;
  Ratio ratio = Ratio::any;
  int chunks = 0;
  int staged_row_words = 0;
  int chunk_rows = 0;  // 0 on the exact-ratio path, which stages no rows
  float scale_x = 0, scale_y = 0;  // source pixels per output pixel: the spans above and the kernel use the same
};

// The launch for these sizes, or (plan.chunks == 0) why there is none.
struct Planned {
  Plan plan;
  std::string refusal;
};

Planned plan_or_refusal(Extent in, Extent out, int radius, int frames, Ratio ratio) {
  const auto refuse = [](std::string why) { return Planned{{}, "resize_filter: " + std::move(why)}; };
  if (!(in.width >= 1 && in.height >= 1 && out.width >= 1 && out.height >= 1)) return refuse("empty frame");
  if (!(in.width <= kMaxDimension && in.height <= kMaxDimension && out.width <= kMaxDimension &&
        out.height <= kMaxDimension)) {
    return refuse("frames up to " + std::to_string(kMaxDimension) + " pixels a side");
  }
  if (!(frames >= 1 && frames <= kMaxFramesPerLaunch)) {
    return refuse("1 to " + std::to_string(kMaxFramesPerLaunch) + " frames per launch");
  }
  if (!(radius >= 0 && radius <= kMaxRadius)) {
    return refuse("odd filter size from 1 to " + std::to_string(kMaxTaps));
  }

  // The widest source span of any tile, computed by the kernel's own tile_span (so the same pixels): sizing the
  // staged rows to the widest tile rather than to a bound buys a block per SM at 1080p -> 720p and at 4K -> 1080p.
  Plan plan;
  plan.scale_x = static_cast<float>(static_cast<double>(in.width) / out.width);
  plan.scale_y = static_cast<float>(static_cast<double>(in.height) / out.height);
  int span_bytes = 0;
  for (int x0 = 0; x0 < out.width; x0 += kTileW) {
    const int2 bytes = tile_span(x0, std::min(x0 + kTileW, out.width) - 1, radius, plan.scale_x, in.width, out.width);
    span_bytes = std::max(span_bytes, bytes.y - bytes.x);
  }
  const int span = span_bytes / 3;  // whole pixels, for the refusal below
  // An odd count makes the staged row stride odd, and step 2's lanes, on consecutive items of rows of 9 * chunks
  // words, then store 9 words apart even across the end of a row: 32 distinct banks.
  plan.chunks = (span_bytes + kChunkBytes - 1) / kChunkBytes | 1;
  plan.staged_row_words = kSlotWords * plan.chunks;
  const int staged_row_bytes = 4 * plan.staged_row_words;
  const int budget = max_of(kStagingBudget, rows_pass_bytes(radius));
  if (staged_row_bytes > budget) {
    return refuse("horizontal downscale " + std::to_string(in.width) + " -> " + std::to_string(out.width) +
                  " is too wide: a tile would read " + std::to_string(span) + " source pixels per row, at most " +
                  std::to_string(budget / (4 * kSlotWords) * kChunkBytes / 3) + " fit in shared memory");
  }
  // As few passes as fit, of equal size (no pass of a single row).
  const int fit = budget / staged_row_bytes;
  const int passes = (tile_rows(radius) + fit - 1) / fit;
  plan.chunk_rows = (tile_rows(radius) + passes - 1) / passes;
  int region_b = max_of(filter_in_registers(radius) ? out_tile_bytes(radius) : rows_pass_bytes(radius),
                        plan.chunk_rows * staged_row_bytes);
  plan.ratio = ratio;
  if (ratio != Ratio::any) {
    plan.chunk_rows = 0;
    region_b = out_tile_bytes(radius);
  }
  plan.shared_bytes = static_cast<std::size_t>(head_bytes(radius) + region_a_bytes(radius) + region_b);
  plan.grid = dim3(static_cast<unsigned>((out.width + kTileW - 1) / kTileW),
                   static_cast<unsigned>((out.height + tile_h(radius) - 1) / tile_h(radius)),
                   static_cast<unsigned>(frames));
  return {plan, {}};
}

Plan make_plan(Extent in, Extent out, int radius, int frames, Ratio ratio) {
  Planned planned = plan_or_refusal(in, out, radius, frames, ratio);
  if (!planned.refusal.empty()) throw std::invalid_argument(std::move(planned.refusal));
  return planned.plan;
}

// Blocks of `kernel` that one SM holds with `bytes` of dynamic shared memory, asked of the driver once per device,
// kernel and amount: its occupancy queries took about 2 us of every launch on the host. The amounts asked are the
// plans' and their fitted ones (below), a few per kernel, so the memo stays small whatever the frame sizes.
int blocks_per_sm(Kernel kernel, std::size_t bytes) {
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  using Key = std::tuple<int, const void*, std::size_t>;
  const Key key{device, reinterpret_cast<const void*>(kernel), bytes};
  static std::mutex mutex;
  static std::map<Key, int> known;
  {
    const std::scoped_lock lock(mutex);
    if (const auto found = known.find(key); found != known.end()) return found->second;
  }
  allow_dynamic_shared(kernel, bytes);  // the occupancy query counts no block past the kernel's shared-memory limit
  int blocks = 0;
  IMGPIPE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, bytes));
  const std::scoped_lock lock(mutex);
  known.emplace(key, blocks);
  return blocks;
}

// The dynamic shared memory to launch a plan with. A grid of a few waves ends in a partly filled one; where
// fewer blocks per SM take as many waves, the SMs share their throughput among fewer blocks and the last wave
// is fuller (on the H200, one 4K frame, 1,020 blocks: 2 waves either way, 21.0 us at 4 blocks per SM against
// 23.3 at 5). The blocks then ask for just enough shared memory that one more does not fit; asking for more
// would take it from the L1 cache for nothing. Grids of one wave, and of many, launch as planned.
std::size_t launch_shared_bytes(Kernel kernel, const Plan& plan) {
  const long long blocks = static_cast<long long>(plan.grid.x) * plan.grid.y * plan.grid.z;
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  const int most = blocks_per_sm(kernel, plan.shared_bytes);
  const auto waves = [&](int per_sm) {
    const long long wave = static_cast<long long>(sms) * per_sm;
    return (blocks + wave - 1) / wave;
  };
  if (most <= 1 || waves(most) == 1) return plan.shared_bytes;
  int fewer = most;
  while (fewer > 1 && waves(fewer - 1) == waves(most)) --fewer;
  if (fewer == most) return plan.shared_bytes;
  // Just over the share of fewer + 1 blocks, less the runtime's reserve per block, in 128-byte units.
  const int per_sm_bytes = device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  const int reserved = device_attribute(cudaDevAttrReservedSharedMemoryPerBlock);
  const auto padded = static_cast<std::size_t>((per_sm_bytes / (fewer + 1) - reserved) / 128 * 128 + 128);
  return blocks_per_sm(kernel, padded) == fewer && padded >= plan.shared_bytes ? padded : plan.shared_bytes;
}

int radius_of(const ResizeFilterTaps& taps) {
  require(taps.size() >= 1, "resize_filter: taps were moved from");
  return taps.size() / 2;
}

void launch(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out, std::size_t out_frame_stride,
            int frames, const ResizeFilterTaps& taps, BorderMode border, cudaStream_t stream) {
  const int radius = radius_of(taps);
  Params p{};
  set_frame_batch(p, first_in, in_frame_stride, first_out, out_frame_stride, frames);  // checked below
  const Plan plan = make_plan(first_in.extent, first_out.extent, radius, frames,
                              p.vec_in ? ratio_for(first_in.extent, first_out.extent, radius) : Ratio::any);
  require(taps.arithmetic() == ResizeFilterArithmetic::fast || plan.ratio != Ratio::any,
          "resize_filter: OpenCV's arithmetic takes 2:1 or 3:2 across, a vertical scale of k/2 up to 2, up to 9 "
          "taps and 16-byte aligned input rows (resize_filter_exact_ratio_fits)");
  const Kernel kernel = kernel_for(plan.ratio, radius, taps.arithmetic());
  const std::string problem = frame_batch_problem(first_in, in_frame_stride, first_out, out_frame_stride, frames);
  require(problem.empty(), "resize_filter: " + problem);
  require(first_in.pitch <= 0xFFFFFFFFu, "resize_filter: input pitch of 4 GiB or more");

  p.scale_x = plan.scale_x;
  p.scale_y = plan.scale_y;
  p.border = border;
  p.slot = taps.slot();
  p.chunks = plan.chunks;
  p.chunks_magic = plan.chunks > 1 ? static_cast<unsigned>(((1ull << 32) + plan.chunks - 1) / plan.chunks) : 0u;
  p.staged_row_words = plan.staged_row_words;
  p.chunk_rows = plan.chunk_rows;

  const std::size_t shared_bytes = launch_shared_bytes(kernel, plan);
  allow_dynamic_shared(kernel, shared_bytes);
  // Launched as a programmatic dependent (launch.cuh), the kernel builds its tables while the kernel before it in
  // the stream finishes.
  launch_dependent(kernel, plan.grid, dim3(kThreads), shared_bytes, stream, p);
  IMGPIPE_CUDA_LAUNCH_CHECK("resize_filter_kernel", stream);
}

// The shape of a launch for these sizes (frames whose rows are 16-byte aligned) and the device's view of it.
ResizeFilterLaunch describe_launch(Extent in, Extent out, int ksize, int frames) {
  require(ksize % 2 == 1, "resize_filter: odd filter size");
  const int radius = ksize / 2;
  const Plan plan = make_plan(in, out, radius, frames, ratio_for(in, out, radius));  // aligned frames
  const Kernel kernel = kernel_for(plan.ratio, radius, ResizeFilterArithmetic::fast);
  const std::size_t shared_bytes = launch_shared_bytes(kernel, plan);
  allow_dynamic_shared(kernel, shared_bytes);
  ResizeFilterLaunch shape;
  shape.grid = plan.grid;
  shape.threads = kThreads;
  shape.shared_bytes = shared_bytes;
  shape.exact_ratio = plan.ratio != Ratio::any;
  shape.chunk_rows = plan.chunk_rows;
  cudaFuncAttributes attributes{};
  IMGPIPE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  shape.registers = attributes.numRegs;
  IMGPIPE_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&shape.blocks_per_sm, kernel, kThreads, shared_bytes));
  return shape;
}

}  // namespace
}  // namespace resize_filter

void resize_filter_aos_batch(ConstAosView first_in, std::size_t in_frame_stride, AosView first_out,
                             std::size_t out_frame_stride, int frames, const ResizeFilterTaps& taps,
                             BorderMode border, cudaStream_t stream) {
  resize_filter::launch(first_in, in_frame_stride, first_out, out_frame_stride, frames, taps, border, stream);
}

bool resize_filter_fits(Extent in, Extent out, int ksize) {
  return ksize % 2 == 1 &&
         resize_filter::plan_or_refusal(in, out, ksize / 2, 1, resize_filter::Ratio::any).refusal.empty();
}

bool resize_filter_at_exact_ratio(Extent in, Extent out, int ksize) {
  return resize_filter_fits(in, out, ksize) &&
         resize_filter::ratio_for(in, out, ksize / 2) != resize_filter::Ratio::any;
}

bool resize_filter_lone_resize_pays(Extent out) {
  constexpr long long kTilesPerSm = 3;
  const long long tiles = static_cast<long long>(div_up(out.width, resize_filter::kTileW)) *
                          div_up(out.height, resize_filter::tile_h(0));
  return tiles >= kTilesPerSm * device_attribute(cudaDevAttrMultiProcessorCount);
}

bool resize_filter_exact_ratio_fits(ConstAosView first_in, std::size_t in_frame_stride, int frames, Extent out,
                                    int ksize) {
  return resize_filter_at_exact_ratio(first_in.extent, out, ksize) &&
         frame_rows_aligned(first_in.data, first_in.pitch, in_frame_stride, frames, 16);
}

void resize_filter_aos(ConstAosView in, AosView out, const ResizeFilterTaps& taps, BorderMode border,
                       cudaStream_t stream) {
  resize_filter_aos_batch(in, 0, out, 0, 1, taps, border, stream);
}

ResizeFilterLaunch resize_filter_launch(Extent in, Extent out, int ksize, int frames) {
  return resize_filter::describe_launch(in, out, ksize, frames);
}

}  // namespace imgpipe::cuda
