// The GPU backends: a chain planned once for the device (taps uploaded, kernels chosen), then run on
// device-resident frames, frame after frame, on the caller's stream.
//   naive:     every op on the interleaved frame with the naive kernels, ping-ponging between two AoS buffers.
//   optimized: the chain's transposes, rotations and flips merged first, one per stretch between resizes
//              (merge_reorientations). Then, where every op from some point of the chain on has an interleaved kernel
//              (the filters, the geometric ops, gray, normalize), those ops run on interleaved frames, ping-ponging
//              between two interleaved buffers, a batch of frames per launch (where the whole chain runs so, gray
//              and a sharpen or sobel after it as one launch, with a normalize after the sobel as two, and a sharpen
//              or sobel with the reorientation after it as one); otherwise one
//              deinterleave into planes, every op on planes with the optimized kernels, ping-ponging between two plane
//              buffers, one interleave at the end. A linear resize at the head of the chain followed by gaussian or
//              box, or alone (at the fused kernel's exact ratios, or where its output pays), is one fused pass on the
//              interleaved frame (its output is `out`, or the frame the rest starts from; FusedHead says when). Filter
//              taps sit in __constant__ slots from construction on; textures are made when a plane buffer is
//              (re)allocated; buffers grow to the largest frame seen, so once warm nothing is allocated or uploaded per
//              frame.
#include "gpu_backend.hpp"

#include "convolve.cuh"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "gray.cuh"
#include "layout.cuh"
#include "normalize.cuh"
#include "overloaded.hpp"
#include "reorient_filter.cuh"
#include "resize.cuh"
#include "resize_filter.cuh"
#include "transpose.cuh"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <variant>
#include <vector>

namespace imgpipe {
namespace {

cuda::Extent extent_of(Size s) { return {s.width, s.height}; }

cuda::AosView aos(std::uint8_t* data, Size s) { return {data, extent_of(s), 3 * static_cast<std::size_t>(s.width)}; }
cuda::ConstAosView aos(const std::uint8_t* data, Size s) {
  return {data, extent_of(s), 3 * static_cast<std::size_t>(s.width)};
}

cuda::BorderMode border_of(Border b) {
  return b == Border::replicate ? cuda::BorderMode::replicate : cuda::BorderMode::reflect101;
}

cuda::Reorient reorient_of(const Rotate& r) {
  switch (r.degrees) {
    case 90: return cuda::Reorient::rotate90;
    case 180: return cuda::Reorient::rotate180;
    case 270: return cuda::Reorient::rotate270;
  }
  throw std::invalid_argument("GPU backend: rotate by " + std::to_string(r.degrees) + " degrees");
}
cuda::Reorient reorient_of(const Flip& f) {
  return f.axis == Flip::Axis::horizontal ? cuda::Reorient::flip_h : cuda::Reorient::flip_v;
}
// The reorientation a transpose, rotate or flip applies; nullopt for every other op.
std::optional<cuda::Reorient> reorient_of(const Op& op) {
  if (std::holds_alternative<Transpose>(op)) return cuda::Reorient::transpose;
  if (const auto* r = std::get_if<Rotate>(&op)) return reorient_of(*r);
  if (const auto* f = std::get_if<Flip>(&op)) return reorient_of(*f);
  return std::nullopt;
}

// A separable filter's 1-D weights and the scale applied to its sum before rounding: OpenCV's integer arithmetic,
// which float holds exactly for 8-bit input, so every path gives OpenCV's bytes at no cost: Gaussian taps in
// units of 1/256 (both passes' sums stay below 2^24 units of 1/65536), box taps of 1 with the sum scaled by
// 1 / K^2 once (the rounded quotient is OpenCV's: K^2 is odd, so S / K^2 is never within float's error of a
// tie). Only the fast fused head takes the chain's own weights (gaussian_weights, 1/K), in its own arithmetic.
struct Weights {
  std::vector<double> taps;
  double scale = 1.0;
};

Weights weights_1d(const Gaussian& g) {
  Weights w;
  for (int tap : gaussian_fixed_point_taps(g.ksize, g.sigma)) w.taps.push_back(tap / 256.0);
  return w;
}

Weights weights_1d(const Box& b) {
  return {std::vector<double>(static_cast<std::size_t>(b.ksize), 1.0), 1.0 / (b.ksize * b.ksize)};
}

std::vector<double> chain_weights(const Gaussian& g) { return gaussian_weights(g.ksize, g.sigma); }
std::vector<double> chain_weights(const Box& b) {
  return std::vector<double>(static_cast<std::size_t>(b.ksize), 1.0 / b.ksize);
}

const std::vector<double> kSharpen = {0, -1, 0, -1, 5, -1, 0, -1, 0};

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// KxK row-major taps, the outer product of 1-D weights (computed in double, rounded once).
std::vector<double> outer(const std::vector<double>& w) {
  std::vector<double> taps;
  taps.reserve(w.size() * w.size());
  for (double wy : w)
    for (double wx : w) taps.push_back(wy * wx);
  return taps;
}

// Frame size before op i at index i, after the last op at index ops.size(); refilled per frame, no allocation.
void fill_sizes(const Chain& chain, Size in, std::vector<Size>& sizes) {
  sizes.resize(chain.ops.size() + 1);
  sizes[0] = in;
  for (std::size_t i = 0; i < chain.ops.size(); ++i) sizes[i + 1] = output_size(chain.ops[i], sizes[i]);
}

// ----------------------------------------------------------------------------------------------- naive

class NaivePlan {
 public:
  NaivePlan(const Chain& chain, Arithmetic arithmetic) : chain_(chain), arithmetic_(arithmetic) {
    for (const Op& op : chain.ops) {
      Step step;
      const auto upload = [&step](const std::vector<double>& taps, int ksize, double scale) {
        const std::vector<float> f = to_float(taps);
        step.taps.grow(f.size() * sizeof(float));
        IMGPIPE_CUDA_CHECK(cudaMemcpy(step.taps.data(), f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice));
        cuda::wait_for_uploads();
        step.ksize = ksize;
        step.scale = static_cast<float>(scale);
      };
      const auto upload_separable = [&](const Weights& w) { upload(outer(w.taps), static_cast<int>(w.taps.size()), w.scale); };
      if (const auto* g = std::get_if<Gaussian>(&op)) upload_separable(weights_1d(*g));
      if (const auto* b = std::get_if<Box>(&op)) upload_separable(weights_1d(*b));
      if (std::holds_alternative<Sharpen>(op)) upload(kSharpen, 3, 1.0);
      steps_.push_back(std::move(step));
    }
  }

  void run(const std::uint8_t* in, Size in_size, std::uint8_t* out, cudaStream_t stream) {
    fill_sizes(chain_, in_size, sizes_);
    const std::size_t n = chain_.ops.size();
    if (n == 0) {
      IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(out, in, in_size.rgb_bytes(), cudaMemcpyDeviceToDevice, stream));
      return;
    }
    std::size_t scratch = 0;  // intermediate frames only: the first op reads `in`, the last writes `out`
    for (std::size_t i = 1; i < n; ++i) scratch = std::max(scratch, sizes_[i].rgb_bytes());
    frames_[0].grow(scratch);
    frames_[1].grow(scratch);
    const std::uint8_t* src = in;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint8_t* dst = i + 1 == n ? out : frames_[i % 2].data();
      run_op(i, aos(src, sizes_[i]), aos(dst, sizes_[i + 1]), stream);
      src = dst;
    }
  }

 private:
  struct Step {
    cuda::DeviceBuffer taps;  // KxK filter taps in global memory, uploaded at plan time
    int ksize = 0;
    float scale = 1.f;
  };

  void run_op(std::size_t i, cuda::ConstAosView in, cuda::AosView out, cudaStream_t stream) {
    const Step& step = steps_[i];
    const auto filter = [&](Border border) {
      cuda::filter2d_naive(in, out, reinterpret_cast<const float*>(step.taps.data()), step.ksize, step.scale,
                           border_of(border), stream);
    };
    std::visit(Overloaded{
                   [&](const Resize& r) {
                     if (r.interp == Interp::nearest) cuda::resize_nearest_naive(in, out, stream);
                     else if (arithmetic_ == Arithmetic::exact) cuda::resize_linear_exact_naive(in, out, stream);
                     else cuda::resize_linear_naive(in, out, stream);
                   },
                   [&](const Gaussian& g) { filter(g.border); },
                   [&](const Box& b) { filter(b.border); },
                   [&](const Sharpen& s) { filter(s.border); },
                   [&](const Sobel& s) { cuda::sobel_naive(in, out, border_of(s.border), stream); },
                   [&](const Transpose&) { cuda::reorient_naive(cuda::Reorient::transpose, in, out, stream); },
                   [&](const Rotate& r) { cuda::reorient_naive(reorient_of(r), in, out, stream); },
                   [&](const Flip& f) { cuda::reorient_naive(reorient_of(f), in, out, stream); },
                   [&](const Gray&) { cuda::gray_naive(in, out, stream); },
                   [&](const Normalize&) { cuda::normalize_naive(in, out, normalize_, stream); },
               },
               chain_.ops[i]);
  }

  Chain chain_;
  Arithmetic arithmetic_;
  std::vector<Step> steps_;
  std::vector<Size> sizes_;
  cuda::DeviceBuffer frames_[2];
  cuda::NormalizeScratch normalize_;
};

// ------------------------------------------------------------------------------------------- optimized
// A stage reads frame `extent` from plane buffer `in` and writes the whole of `out`.

bool same_planes(const cuda::ConstPlanesView& a, const cuda::ConstPlanesView& b) {
  return a.plane[0] == b.plane[0] && a.plane[1] == b.plane[1] && a.plane[2] == b.plane[2] && a.pitch == b.pitch &&
         a.extent.width == b.extent.width && a.extent.height == b.extent.height;
}

// Stages that run on planes only.
struct PlanesOnly {
  bool takes_interleaved() const { return false; }
  bool batches() const { return false; }
};

// `frames` interleaved frames of one size, frame f at in.data + f * in_stride (and out likewise).
struct InterleavedBatch {
  cuda::ConstAosView in;
  std::size_t in_stride;
  cuda::AosView out;
  std::size_t out_stride;
  int frames;
};

// A linear resize reads planes through the texture unit, or a batch of interleaved frames by hand
// (resize_linear_aos); a chain of stages that all batch never makes planes.
struct ResizeLinearStage {
  // Textures over the whole input buffer, made when that buffer is first seen or reallocated. Where the
  // texture unit cannot cover it (over 65000 rows), the hand-written bilinear runs instead.
  std::optional<cuda::LinearPlaneTextures> textures;
  cuda::ConstPlanesView planned_for;

  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    const cuda::ConstPlanesView whole = in.whole();
    if (!same_planes(whole, planned_for)) {
      textures.reset();
      if (cuda::LinearPlaneTextures::fit(whole)) textures.emplace(whole);
      planned_for = whole;
    }
    if (textures) {
      cuda::resize_linear_planes(*textures, extent, out, stream);
    } else {
      cuda::resize_linear_planes_hand(cuda::as_const(in.view(extent)), out, stream);
    }
  }
  bool takes_interleaved() const { return false; }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::resize_linear_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, false, stream);
  }
};

struct ResizeExactStage {  // OpenCV's fixed-point bilinear, by hand, on planes or a batch of interleaved frames
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    cuda::resize_linear_exact_planes(cuda::as_const(in.view(extent)), out, stream);
  }
  bool takes_interleaved() const { return false; }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::resize_linear_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, true, stream);
  }
};

struct ResizeNearestStage : PlanesOnly {
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    cuda::resize_nearest_planes(cuda::as_const(in.view(extent)), out, stream);
  }
};

// The stages from here on also run on frames of either layout (run_frame) where takes_interleaved() says so:
// first in the chain they read the interleaved input, last they write the interleaved output, without a layout
// pass. Those with run_batch also run on interleaved frames alone, a batch of them at a time: where every stage
// from some point of the chain on has it, the chain runs there without planes.

struct SeparableStage {  // gaussian, box
  cuda::ConstantTaps taps;
  cuda::BorderMode border;
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    run_frame(cuda::as_frame(cuda::as_const(in.view(extent))), cuda::as_frame(out), stream);
  }
  bool takes_interleaved() const { return true; }
  void run_frame(const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t stream) {
    cuda::separable_frames(in, out, taps, border, stream);
  }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::separable_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, taps, border, stream);
  }
};

struct SharpenStage {
  cuda::ConstantTaps taps;
  cuda::BorderMode border;
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    run_frame(cuda::as_frame(cuda::as_const(in.view(extent))), cuda::as_frame(out), stream);
  }
  bool takes_interleaved() const { return true; }
  void run_frame(const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t stream) {
    cuda::filter3x3_frames(in, out, taps, border, stream);
  }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::filter3x3_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, taps, border, stream);
  }
};

struct SobelStage {
  cuda::BorderMode border;
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    run_frame(cuda::as_frame(cuda::as_const(in.view(extent))), cuda::as_frame(out), stream);
  }
  bool takes_interleaved() const { return true; }
  void run_frame(const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t stream) {
    cuda::sobel_frames(in, out, border, stream);
  }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::sobel_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, border, stream);
  }
};

struct ReorientStage {
  cuda::Reorient op;
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    cuda::reorient_tiled_padded(op, cuda::as_const(in.view(extent)), out, stream);
  }
  bool takes_interleaved() const { return !cuda::swaps_axes(op); }  // the tiled transposes read planes
  void run_frame(const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t stream) {
    cuda::reorient_mirror(op, in, out, stream);
  }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::reorient_aos(op, b.in, b.in_stride, b.out, b.out_stride, b.frames, stream);
  }
};

struct GrayStage {
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    run_frame(cuda::as_frame(cuda::as_const(in.view(extent))), cuda::as_frame(out), stream);
  }
  bool takes_interleaved() const { return true; }
  void run_frame(const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t stream) {
    cuda::gray_frames(in, out, stream);
  }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::gray_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, stream);
  }
};

struct NormalizeStage {
  cuda::NormalizeScratch scratch;
  void run(const cuda::PlaneBuffer& in, cuda::Extent extent, cuda::PlanesView out, cudaStream_t stream) {
    run_frame(cuda::as_frame(cuda::as_const(in.view(extent))), cuda::as_frame(out), stream);
  }
  bool takes_interleaved() const { return true; }
  void run_frame(const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t stream) {
    cuda::normalize_frames(in, out, scratch, stream);
  }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::normalize_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, scratch, stream);
  }
};

// Gray and the sharpen or sobel after it as one launch (gray_filter3x3_aos, gray_sobel_aos): each block turns its
// staged tile to luma, so the gray frame is never written. A normalize after the sobel joins them
// (gray_sobel_normalize_aos): one byte per pixel and its range, then the stretch. The plan makes it only where the
// whole chain runs batched on interleaved frames, so it never runs on planes.
struct GrayThenFilterStage {
  std::optional<cuda::ConstantTaps> taps;  // sharpen's; none for sobel
  cuda::BorderMode border;
  bool then_normalize = false;  // sobel with the normalize after it: gray_sobel_normalize_aos
  cuda::NormalizeScratch scratch;
  void run(const cuda::PlaneBuffer&, cuda::Extent, cuda::PlanesView, cudaStream_t) {
    throw std::logic_error("optimized plan: gray fused with a filter in a chain that makes planes");
  }
  bool takes_interleaved() const { return false; }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    if (taps) {
      cuda::gray_filter3x3_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, *taps, border, stream);
    } else if (then_normalize) {
      cuda::gray_sobel_normalize_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, border, scratch, stream);
    } else {
      cuda::gray_sobel_aos(b.in, b.in_stride, b.out, b.out_stride, b.frames, border, stream);
    }
  }
};

// A sharpen or sobel and the reorientation after it as one launch (reorient_filter3x3_aos): the filtered frame is
// never written. merge_reorientations moves every reorientation past the filters, so that is where they meet. The
// plan makes it only where the whole chain runs batched on interleaved frames, so it never runs on planes.
struct FilterThenReorientStage {
  cuda::SymmetricFilter filter;
  cuda::BorderMode border;
  cuda::Reorient op;
  void run(const cuda::PlaneBuffer&, cuda::Extent, cuda::PlanesView, cudaStream_t) {
    throw std::logic_error("optimized plan: a filter fused with a reorientation in a chain that makes planes");
  }
  bool takes_interleaved() const { return false; }
  bool batches() const { return true; }
  void run_batch(const InterleavedBatch& b, cudaStream_t stream) {
    cuda::reorient_filter3x3_aos(op, filter, b.in, b.in_stride, b.out, b.out_stride, b.frames, border, stream);
  }
};

using Stage = std::variant<ResizeLinearStage, ResizeExactStage, ResizeNearestStage, SeparableStage, SharpenStage,
                           SobelStage, ReorientStage, GrayStage, NormalizeStage, GrayThenFilterStage,
                           FilterThenReorientStage>;

bool takes_interleaved(const Stage& stage) {
  return std::visit([](const auto& s) { return s.takes_interleaved(); }, stage);
}
bool batches(const Stage& stage) {
  return std::visit([](const auto& s) { return s.batches(); }, stage);
}

// Whether `op`'s stage runs on planes only (ResizeNearestStage); every other stage runs batched on interleaved
// frames.
bool needs_planes(const Op& op) {
  const auto* resize = std::get_if<Resize>(&op);
  return resize != nullptr && resize->interp == Interp::nearest;
}

// The ops from i that one GrayThenFilterStage covers where the chain needs no planes: gray with a sharpen or sobel
// right after it (2), and a normalize after the sobel (3); 0 where op i starts no such run.
std::size_t gray_then_filter_ops(const std::vector<Op>& ops, std::size_t i) {
  if (i + 1 >= ops.size() || !std::holds_alternative<Gray>(ops[i])) return 0;
  if (std::holds_alternative<Sharpen>(ops[i + 1])) return 2;
  if (!std::holds_alternative<Sobel>(ops[i + 1])) return 0;
  return i + 2 < ops.size() && std::holds_alternative<Normalize>(ops[i + 2]) ? 3 : 2;
}

Stage gray_then_filter_stage(const Op& filter, bool then_normalize) {
  if (const auto* sharpen = std::get_if<Sharpen>(&filter)) {
    return GrayThenFilterStage{cuda::ConstantTaps(to_float(kSharpen)), border_of(sharpen->border)};
  }
  return GrayThenFilterStage{std::nullopt, border_of(std::get<Sobel>(filter).border), then_normalize};
}

// The FilterThenReorientStage for ops i and i + 1 where the chain needs no planes: a sharpen or sobel, then a
// transpose, rotate or flip; nullopt where they are not such a pair.
std::optional<Stage> filter_then_reorient_stage(const std::vector<Op>& ops, std::size_t i) {
  if (i + 1 >= ops.size()) return std::nullopt;
  const std::optional<cuda::Reorient> op = reorient_of(ops[i + 1]);
  if (!op) return std::nullopt;
  if (const auto* sharpen = std::get_if<Sharpen>(&ops[i])) {
    return FilterThenReorientStage{cuda::SymmetricFilter::sharpen, border_of(sharpen->border), *op};
  }
  if (const auto* sobel = std::get_if<Sobel>(&ops[i])) {
    return FilterThenReorientStage{cuda::SymmetricFilter::sobel, border_of(sobel->border), *op};
  }
  return std::nullopt;
}

// The stage that runs `op` on planes; filter taps go to constant memory here, once.
Stage make_stage(const Op& op, Arithmetic arithmetic) {
  const auto separable = [](const Weights& w, Border border) -> Stage {
    return SeparableStage{cuda::ConstantTaps(to_float(w.taps), static_cast<float>(w.scale)), border_of(border)};
  };
  return std::visit(
      Overloaded{
          [&](const Resize& r) -> Stage {
            if (r.interp == Interp::nearest) return ResizeNearestStage{};
            if (arithmetic == Arithmetic::exact) return ResizeExactStage{};
            return ResizeLinearStage{};
          },
          [&](const Gaussian& g) { return separable(weights_1d(g), g.border); },
          [&](const Box& b) { return separable(weights_1d(b), b.border); },
          [](const Sharpen& s) -> Stage { return SharpenStage{cuda::ConstantTaps(to_float(kSharpen)), border_of(s.border)}; },
          [](const Sobel& s) -> Stage { return SobelStage{border_of(s.border)}; },
          [](const Transpose&) -> Stage { return ReorientStage{cuda::Reorient::transpose}; },
          [](const Rotate& r) -> Stage { return ReorientStage{reorient_of(r)}; },
          [](const Flip& f) -> Stage { return ReorientStage{reorient_of(f)}; },
          [](const Gray&) -> Stage { return GrayStage{}; },
          [](const Normalize&) -> Stage { return NormalizeStage{}; },
      },
      op);
}

// A linear resize at the head of the chain, with the gaussian or box directly after it, or alone (one tap): one
// pass of resize_filter_aos (kernels/resize_filter.cuh) on the interleaved frame, for one frame or a batch, its
// taps in that kernel's constant bank, uploaded at plan time. fast: the chain's own weights in the kernel's own
// arithmetic, at every ratio for a resize and its filter (on the H200 the fused pass beat the two batched
// interleaved stages at every size measured, docs/performance.md); a lone resize at the exact ratios, and at
// others where its output is large enough to pay (resize_filter_lone_resize_pays). exact: OpenCV's arithmetic
// (a Gaussian only, whose taps are whole 1/256), at the exact ratios only and on 16-byte aligned rows;
// elsewhere the resize and the filter run as stages.
struct FusedHead {
  cuda::ResizeFilterTaps taps;
  cuda::BorderMode border;
  int ksize;
  std::size_t ops;  // the chain's ops it covers: the resize, and the filter where there is one

  // Whether it takes these sizes: the kernel refuses extreme horizontal downscales.
  bool fits(Size in, Size resized) const { return cuda::resize_filter_fits(extent_of(in), extent_of(resized), ksize); }

  // Whether it takes these frames: fits() holds for their sizes, `at_exact_ratio` says whether they are at the
  // kernel's exact ratios, and `lone_resize_pays` whether resize_filter_lone_resize_pays holds for them.
  bool takes(const std::uint8_t* in, Size in_size, int frames, bool at_exact_ratio, bool lone_resize_pays) const {
    if (taps.arithmetic() == cuda::ResizeFilterArithmetic::fast) {
      return at_exact_ratio || ops == 2 || lone_resize_pays;
    }
    return at_exact_ratio && cuda::frame_rows_aligned(in, 3 * static_cast<std::size_t>(in_size.width),
                                                      in_size.rgb_bytes(), frames, 16);
  }

  // `frames` packed frames of `in_size` from `in` into packed frames of `resized` at `out`; takes() holds.
  void run(const std::uint8_t* in, Size in_size, int frames, std::uint8_t* out, Size resized,
           cudaStream_t stream) const {
    if (frames == 1) {
      cuda::resize_filter_aos(aos(in, in_size), aos(out, resized), taps, border, stream);
    } else {
      cuda::resize_filter_aos_batch(aos(in, in_size), in_size.rgb_bytes(), aos(out, resized), resized.rgb_bytes(),
                                    frames, taps, border, stream);
    }
  }
};

std::optional<FusedHead> fused_head(const Chain& chain, Arithmetic arithmetic) {
  if (chain.ops.empty()) return std::nullopt;
  const auto* resize = std::get_if<Resize>(&chain.ops[0]);
  if (resize == nullptr || resize->interp != Interp::linear) return std::nullopt;
  const auto opencv = cuda::ResizeFilterArithmetic::opencv;
  if (chain.ops.size() >= 2) {
    const auto head = [&](const auto& filter, std::vector<float> taps,
                          cuda::ResizeFilterArithmetic kind) -> std::optional<FusedHead> {
      return FusedHead{cuda::ResizeFilterTaps(std::move(taps), kind), border_of(filter.border), filter.ksize, 2};
    };
    if (const auto* g = std::get_if<Gaussian>(&chain.ops[1])) {
      if (arithmetic == Arithmetic::fast) {
        return head(*g, to_float(chain_weights(*g)), cuda::ResizeFilterArithmetic::fast);
      }
      return head(*g, to_float(weights_1d(*g).taps), opencv);
    }
    if (const auto* b = std::get_if<Box>(&chain.ops[1])) {
      // OpenCV's box taps are not whole 1/256: in exact arithmetic the resize and the box run as stages.
      if (arithmetic == Arithmetic::fast) {
        return head(*b, to_float(chain_weights(*b)), cuda::ResizeFilterArithmetic::fast);
      }
      return std::nullopt;
    }
  }
  const auto kind = arithmetic == Arithmetic::exact ? opencv : cuda::ResizeFilterArithmetic::fast;
  return FusedHead{cuda::ResizeFilterTaps(std::vector<float>{1.f}, kind), cuda::BorderMode::reflect101, 1, 1};
}

class OptimizedPlan {
 public:
  // Stages, each covering ops [first, first + count) of the chain: one per op, but gray and the sharpen or sobel after
  // it (and a normalize after the sobel) are one where the whole chain runs on interleaved frames
  // (gray_then_filter_ops), and so are a sharpen or sobel and the reorientation after it
  // (filter_then_reorient_stage). A linear resize at the head of the chain, with a gaussian or box directly after it or
  // alone, is one pass of resize_filter_aos (kernels/resize_filter.cuh) straight from the interleaved input where
  // FusedHead takes the frames; such a head writes `out`, or an interleaved scratch frame that the remaining stages
  // start from. A lone resize fuses only where it is the whole chain or does not enlarge the frame (planes made after
  // it would otherwise cost more than the resize saved). The stages stay planned for every frame the head does not
  // take. The plan is made for the chain with its reorientations merged (merge_reorientations): the same frames, fewer
  // passes, and a resize that a flip or turn kept from its filter fuses with it.
  OptimizedPlan(const Chain& chain, Arithmetic arithmetic)
      : chain_(merge_reorientations(chain)), head_(fused_head(chain_, arithmetic)) {
    const bool interleaved_throughout = std::none_of(chain_.ops.begin(), chain_.ops.end(), needs_planes);
    stages_.reserve(chain_.ops.size());
    for (std::size_t i = 0; i < chain_.ops.size(); ++i) {
      if (const std::size_t ops = interleaved_throughout ? gray_then_filter_ops(chain_.ops, i) : 0; ops > 0) {
        stages_.push_back({gray_then_filter_stage(chain_.ops[i + 1], ops == 3), i, ops});
        i += ops - 1;
        continue;
      }
      if (auto fused = interleaved_throughout ? filter_then_reorient_stage(chain_.ops, i) : std::nullopt) {
        stages_.push_back({std::move(*fused), i, 2});
        ++i;
        continue;
      }
      stages_.push_back({make_stage(chain_.ops[i], arithmetic), i, 1});
    }
    batches_from_.assign(stages_.size() + 1, true);
    for (std::size_t p = stages_.size(); p-- > 0;) batches_from_[p] = batches_from_[p + 1] && batches(stages_[p].stage);
  }

  void run(const std::uint8_t* in, Size in_size, std::uint8_t* out, cudaStream_t stream) {
    fill_sizes(chain_, in_size, sizes_);
    if (!fuses(in_size) || !head_->takes(in, in_size, 1, at_exact_ratio_, lone_resize_pays_)) {
      run_stages(in, 0, 1, out, stream);
      return;
    }
    const Size resized = sizes_[head_->ops];
    if (stages_.size() == head_->ops) {
      head_->run(in, in_size, 1, out, resized, stream);
      return;
    }
    head_frames_.grow(resized.rgb_bytes());
    head_->run(in, in_size, 1, head_frames_.data(), resized, stream);
    run_stages(head_frames_.data(), head_->ops, 1, out, stream);
  }

  // `frames` packed frames back to back (frame f at f * in_size.rgb_bytes()). A fused head runs as one batched
  // launch for a batch of them, and so do the stages after it (or the whole chain, when nothing fuses) where
  // they all run on interleaved frames; otherwise those go frame by frame.
  void run_batch(const std::uint8_t* in, Size in_size, int frames, std::uint8_t* out, cudaStream_t stream) {
    fill_sizes(chain_, in_size, sizes_);
    const Size out_size = sizes_.back();
    const bool head = fuses(in_size) && head_->takes(in, in_size, frames, at_exact_ratio_, lone_resize_pays_);
    const std::size_t first_stage = head ? head_->ops : 0;
    const Size resized = sizes_[first_stage];
    const bool alone = stages_.size() == first_stage;
    const int per_batch = batch_size(first_stage);
    for (int first = 0; first < frames; first += per_batch) {
      const int count = std::min(per_batch, frames - first);
      const std::uint8_t* rest_in = in + frame_offset(in_size, first);
      std::uint8_t* batch_out = out + frame_offset(out_size, first);
      if (head) {
        if (alone) {
          head_->run(rest_in, in_size, count, batch_out, resized, stream);
          continue;
        }
        head_frames_.grow(resized.rgb_bytes() * static_cast<std::size_t>(count));
        head_->run(rest_in, in_size, count, head_frames_.data(), resized, stream);
        rest_in = head_frames_.data();
      }
      run_stages(rest_in, first_stage, count, batch_out, stream);
    }
  }

 private:
  static constexpr int kMaxBatch = 64;  // frames per batched launch: bounds the head's scratch
  // What the interleaved ping-pong buffers may hold for a batch, together; a batch of frames larger than that
  // (64 4K frames would take 3.2 GB) is cut into smaller batches.
  static constexpr std::size_t kInterleavedScratch = std::size_t{512} << 20;

  struct PlannedStage {
    Stage stage;
    std::size_t first;  // the ops it covers
    std::size_t count;
  };

  static std::size_t frame_offset(Size s, int f) { return s.rgb_bytes() * static_cast<std::size_t>(f); }

  // The frame before stage p, and after the last at p = stages_.size(); sizes_ filled.
  Size size_before(std::size_t p) const { return p < stages_.size() ? sizes_[stages_[p].first] : sizes_.back(); }

  // The largest frame between two stages from `first` on: what the interleaved ping-pong buffers hold per frame.
  std::size_t largest_intermediate(std::size_t first) const {
    std::size_t bytes = 0;
    for (std::size_t p = first + 1; p < stages_.size(); ++p) bytes = std::max(bytes, size_before(p).rgb_bytes());
    return bytes;
  }

  // Frames per batch when the stages from `first` on run after a batched head or batched themselves.
  int batch_size(std::size_t first) const {
    if (!batches_from_[first]) return kMaxBatch;
    const std::size_t bytes = largest_intermediate(first);
    if (bytes == 0) return kMaxBatch;
    return static_cast<int>(std::clamp<std::size_t>(kInterleavedScratch / (2 * bytes), 1, kMaxBatch));
  }

  // Stages from `first` on over `frames` packed interleaved frames from `in` into packed frames at `out`: as
  // batches on interleaved frames where every one of them runs so, else frame by frame through run_planes.
  void run_stages(const std::uint8_t* in, std::size_t first, int frames, std::uint8_t* out, cudaStream_t stream) {
    if (first == stages_.size()) {  // the empty chain
      IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(out, in, frame_offset(sizes_.back(), frames), cudaMemcpyDeviceToDevice,
                                         stream));
      return;
    }
    if (batches_from_[first]) {
      run_interleaved(in, first, frames, out, stream);
      return;
    }
    const Size in_size = size_before(first), out_size = sizes_.back();
    for (int f = 0; f < frames; ++f) {
      run_planes(in + frame_offset(in_size, f), first, out + frame_offset(out_size, f), stream);
    }
  }

  // Stages from `first` on, each one batched launch (or one per frame) on interleaved frames, ping-ponging
  // between two interleaved buffers; no planes, no layout passes.
  void run_interleaved(const std::uint8_t* in, std::size_t first, int frames, std::uint8_t* out,
                       cudaStream_t stream) {
    // Stage p writes buffer (p - first) % 2 unless it is the last: the second buffer only from three stages on.
    const std::size_t scratch = largest_intermediate(first) * static_cast<std::size_t>(frames);
    for (std::size_t k = 0; k < 2 && first + k + 1 < stages_.size(); ++k) interleaved_[k].grow(scratch);
    const std::uint8_t* src = in;
    for (std::size_t p = first; p < stages_.size(); ++p) {
      const Size from = size_before(p), to = size_before(p + 1);
      std::uint8_t* dst = p + 1 == stages_.size() ? out : interleaved_[(p - first) % 2].data();
      const InterleavedBatch batch{aos(src, from), from.rgb_bytes(), aos(dst, to), to.rgb_bytes(), frames};
      std::visit(
          [&](auto& stage) {
            if constexpr (requires { stage.run_batch(batch, stream); }) {
              stage.run_batch(batch, stream);
            } else {
              throw std::logic_error("optimized plan: a planes-only stage in an interleaved run");
            }
          },
          stages_[p].stage);
      src = dst;
    }
  }

  // Whether this input size runs the fused head (sizes_ filled for it); the answer is kept per input size.
  bool fuses(Size in_size) {
    if (!head_) return false;
    if (in_size != fits_for_) {
      const Size resized = sizes_[head_->ops];
      const bool enlarges_before_planes = head_->ops == 1 && stages_.size() > 1 && resized.pixels() > in_size.pixels();
      fits_ = !enlarges_before_planes && head_->fits(in_size, resized);
      at_exact_ratio_ =
          fits_ && cuda::resize_filter_at_exact_ratio(extent_of(in_size), extent_of(resized), head_->ksize);
      lone_resize_pays_ = fits_ && head_->ops == 1 && cuda::resize_filter_lone_resize_pays(extent_of(resized));
      fits_for_ = in_size;
    }
    return fits_;
  }

  // Stages from `first` on, starting from the interleaved frame `in` (the chain's frame before stage
  // `first`): deinterleave, the plane stages, interleave into `out`; a first stage that takes the interleaved
  // frame reads `in` itself, and a last one writes `out` itself, in place of those passes.
  void run_planes(const std::uint8_t* in, std::size_t first, std::uint8_t* out, cudaStream_t stream) {
    // The layout passes, unless the first stage reads the interleaved input or the last writes the output.
    const bool staged = first < stages_.size();
    const bool reads_interleaved = staged && takes_interleaved(stages_[first].stage);
    const bool writes_interleaved = staged && takes_interleaved(stages_.back().stage);
    const std::size_t last = stages_.size() - 1;
    // Buffer k holds the frames at even (k = 0) or odd (k = 1) positions of the stage sequence, so each
    // grows only to the frames it holds: a transpose does not make both buffers square. Positions held in the
    // interleaved input or output take none.
    cuda::Extent need[2] = {};
    for (std::size_t p = first; p <= stages_.size(); ++p) {
      if ((p == first && reads_interleaved) || (p == stages_.size() && writes_interleaved)) continue;
      const Size s = size_before(p);
      need[(p - first) % 2].width = std::max(need[(p - first) % 2].width, s.width);
      need[(p - first) % 2].height = std::max(need[(p - first) % 2].height, s.height);
    }
    for (int k = 0; k < 2; ++k) {
      if (need[k].width > 0) planes_[k].reserve(need[k]);
    }

    const Size in_size = size_before(first);
    const Size out_size = sizes_.back();
    if (!reads_interleaved) cuda::deinterleave(aos(in, in_size), planes_[0].view(extent_of(in_size)), stream);
    int current = 0;
    for (std::size_t p = first; p < stages_.size(); ++p) {
      PlannedStage& s = stages_[p];
      const cuda::Extent from = extent_of(sizes_[s.first]);
      const cuda::Extent to = extent_of(sizes_[s.first + s.count]);
      const bool from_input = p == first && reads_interleaved, to_output = p == last && writes_interleaved;
      std::visit(
          [&](auto& stage) {
            if constexpr (requires { stage.run_frame(cuda::ConstFrameView{}, cuda::FrameView{}, stream); }) {
              if (from_input || to_output) {
                stage.run_frame(from_input ? cuda::as_frame(aos(in, in_size))
                                           : cuda::as_frame(cuda::as_const(planes_[current].view(from))),
                                to_output ? cuda::as_frame(aos(out, out_size))
                                          : cuda::as_frame(planes_[1 - current].view(to)),
                                stream);
                return;
              }
            }
            stage.run(planes_[current], from, planes_[1 - current].view(to), stream);
          },
          s.stage);
      current = 1 - current;
    }
    if (!writes_interleaved) {
      cuda::interleave(cuda::as_const(planes_[current].view(extent_of(out_size))), aos(out, out_size), stream);
    }
  }

  Chain chain_;
  std::optional<FusedHead> head_;
  std::vector<PlannedStage> stages_;
  std::vector<Size> sizes_;
  cuda::PlaneBuffer planes_[2];
  cuda::DeviceBuffer head_frames_;  // the fused head's output when more ops follow
  cuda::DeviceBuffer interleaved_[2];  // run_interleaved's frames between its stages
  std::vector<bool> batches_from_;     // at p: every stage from p on runs batched on interleaved frames
  Size fits_for_{};                 // the input size fuses() and the two flags below last answered for
  bool fits_ = false;
  bool at_exact_ratio_ = false;     // the head's sizes are at the fused kernel's exact ratios
  bool lone_resize_pays_ = false;   // a lone resize's output is large enough for the fused kernel at any ratio
};

using Plan = std::variant<NaivePlan, OptimizedPlan>;

Plan make_plan(GpuPath path, const Chain& chain, Arithmetic arithmetic) {
  if (path == GpuPath::naive) return Plan(std::in_place_type<NaivePlan>, chain, arithmetic);
  return Plan(std::in_place_type<OptimizedPlan>, chain, arithmetic);
}

// ---------------------------------------------------------------------------------------------- backend

class GpuBackend final : public Backend {
 public:
  GpuBackend(GpuPath path, Arithmetic arithmetic) : path_(path), arithmetic_(arithmetic) {
    if (path == GpuPath::optimized) stream_ = cuda::Stream::create();
  }

  std::string name() const override { return path_ == GpuPath::naive ? "naive" : "optimized"; }

  void set_chain(const Chain& chain) override {
    chain_.reset();  // release the old plan's constant-memory slots first
    chain_.emplace(path_, chain, arithmetic_);
  }

  void process(ConstFrameView in, FrameView out) override {
    if (!chain_) throw std::logic_error(name() + " backend: process() before set_chain()");
    const Size expected = output_size(chain_->chain(), in.size);
    if (out.size != expected) {
      throw std::invalid_argument(name() + " backend: output is " + to_string(out.size) + ", the chain makes " +
                                  to_string(expected) + " from " + to_string(in.size));
    }
    device_in_.grow(in.size.rgb_bytes());
    device_out_.grow(out.size.rgb_bytes());
    if (path_ == GpuPath::naive) {
      // The baseline: pageable synchronous copies, and the kernels on the legacy default stream, which
      // orders them after the upload and before the download.
      IMGPIPE_CUDA_CHECK(cudaMemcpy(device_in_.data(), in.data, in.size.rgb_bytes(), cudaMemcpyHostToDevice));
      chain_->run(device_in_.data(), in.size, device_out_.data(), cudaStreamLegacy);
      IMGPIPE_CUDA_CHECK(cudaMemcpy(out.data, device_out_.data(), out.size.rgb_bytes(), cudaMemcpyDeviceToHost));
      return;
    }
    const cudaStream_t stream = stream_.get();
    IMGPIPE_CUDA_CHECK(
        cudaMemcpyAsync(device_in_.data(), in.data, in.size.rgb_bytes(), cudaMemcpyHostToDevice, stream));
    chain_->run(device_in_.data(), in.size, device_out_.data(), stream);
    IMGPIPE_CUDA_CHECK(
        cudaMemcpyAsync(out.data, device_out_.data(), out.size.rgb_bytes(), cudaMemcpyDeviceToHost, stream));
    stream_.synchronize();
  }

 private:
  GpuPath path_;
  Arithmetic arithmetic_;
  cuda::Stream stream_;  // optimized only: its own non-blocking stream
  std::optional<DeviceChain> chain_;
  cuda::DeviceBuffer device_in_, device_out_;
};

}  // namespace

struct DeviceChain::Impl {
  Impl(GpuPath p, const Chain& c, Arithmetic a) : path(p), arithmetic(a), chain(c), plan(make_plan(p, c, a)) {}
  GpuPath path;
  Arithmetic arithmetic;
  Chain chain;
  Plan plan;
};

DeviceChain::DeviceChain(GpuPath path, const Chain& chain, Arithmetic arithmetic)
    : impl_(std::make_unique<Impl>(path, chain, arithmetic)) {}
DeviceChain::~DeviceChain() = default;
DeviceChain::DeviceChain(DeviceChain&&) noexcept = default;
DeviceChain& DeviceChain::operator=(DeviceChain&&) noexcept = default;

GpuPath DeviceChain::path() const { return impl_->path; }
Arithmetic DeviceChain::arithmetic() const { return impl_->arithmetic; }
const Chain& DeviceChain::chain() const { return impl_->chain; }

void DeviceChain::run(const std::uint8_t* in, Size in_size, std::uint8_t* out, cudaStream_t stream) {
  std::visit([&](auto& plan) { plan.run(in, in_size, out, stream); }, impl_->plan);
}

void DeviceChain::run_batch(const std::uint8_t* in, Size in_size, int frames, std::uint8_t* out,
                            cudaStream_t stream) {
  if (frames < 0) throw std::invalid_argument("DeviceChain::run_batch: a negative frame count");
  if (frames == 0) return;
  std::visit(Overloaded{
                 [&](NaivePlan& plan) {
                   const Size out_size = output_size(impl_->chain, in_size);
                   for (int f = 0; f < frames; ++f) {
                     plan.run(in + in_size.rgb_bytes() * static_cast<std::size_t>(f), in_size,
                              out + out_size.rgb_bytes() * static_cast<std::size_t>(f), stream);
                   }
                 },
                 [&](OptimizedPlan& plan) { plan.run_batch(in, in_size, frames, out, stream); },
             },
             impl_->plan);
}

std::unique_ptr<Backend> make_gpu_backend(GpuPath path, Arithmetic arithmetic) {
  if (!cuda::device_available()) {
    throw std::runtime_error(std::string("the ") + (path == GpuPath::naive ? "naive" : "optimized") +
                             " GPU backend needs a CUDA device, and the CUDA runtime sees none here");
  }
  return std::make_unique<GpuBackend>(path, arithmetic);
}

}  // namespace imgpipe
