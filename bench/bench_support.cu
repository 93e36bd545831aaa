#include "bench_support.hpp"

#include "bench_npp.hpp"
#include "chain.hpp"
#include "cuda_check.hpp"
#include "overloaded.hpp"

#include <algorithm>
#include <stdexcept>
#include <variant>

namespace imgpipe::bench {
namespace {

__global__ void fill_kernel(std::uint8_t* data, std::size_t bytes, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += stride) {
    std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u ^ seed ^ static_cast<std::uint32_t>(i >> 32);
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    data[i] = static_cast<std::uint8_t>(x >> 24);
  }
}

}  // namespace

void fill_random(std::uint8_t* data, std::size_t bytes, std::uint32_t seed, cudaStream_t stream) {
  if (bytes == 0) return;
  constexpr int kFillBlocks = 1024, kFillThreads = 256;
  fill_kernel<<<kFillBlocks, kFillThreads, 0, stream>>>(data, bytes, seed);
  IMGPIPE_CUDA_LAUNCH_CHECK("fill_kernel", stream);
}

Summary summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  Summary s;
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min = samples.front();
  s.max = samples.back();
  s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0.0;
  return s;
}

void destroy_graph(cudaGraph_t g) noexcept { cuda::check_noexcept(cudaGraphDestroy(g), "cudaGraphDestroy"); }
void destroy_graph_exec(cudaGraphExec_t g) noexcept {
  cuda::check_noexcept(cudaGraphExecDestroy(g), "cudaGraphExecDestroy");
}

GraphExec capture_graph(cudaStream_t stream, const std::function<void()>& enqueue) {
  IMGPIPE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream, &broken);  // ends the (invalidated) capture; the error is the one thrown
    if (broken != nullptr) destroy_graph(broken);
    (void)cudaGetLastError();
    throw;
  }
  cudaGraph_t raw_graph = nullptr;
  IMGPIPE_CUDA_CHECK(cudaStreamEndCapture(stream, &raw_graph));
  const Graph graph(raw_graph);
  cudaGraphExec_t raw_exec = nullptr;
  IMGPIPE_CUDA_CHECK(cudaGraphInstantiate(&raw_exec, graph.get(), 0));
  return GraphExec(raw_exec);
}

bool npp_compiled_in() {
#ifdef IMGPIPE_HAVE_NPP
  return true;
#else
  return false;
#endif
}

#ifdef IMGPIPE_HAVE_NPP
void check_npp(NppStatus status, const char* call) {
  if (status < 0) throw std::runtime_error(std::string(call) + " failed with NppStatus " + std::to_string(status));
}

NppStreamContext npp_context(cudaStream_t stream) {
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  const auto attribute = [device](cudaDeviceAttr a) {
    int v = 0;
    IMGPIPE_CUDA_CHECK(cudaDeviceGetAttribute(&v, a, device));
    return v;
  };
  NppStreamContext ctx{};
  ctx.hStream = stream;
  ctx.nCudaDeviceId = device;
  ctx.nMultiProcessorCount = attribute(cudaDevAttrMultiProcessorCount);
  ctx.nMaxThreadsPerMultiProcessor = attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  ctx.nMaxThreadsPerBlock = attribute(cudaDevAttrMaxThreadsPerBlock);
  ctx.nSharedMemPerBlock = static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlock));
  ctx.nCudaDevAttrComputeCapabilityMajor = attribute(cudaDevAttrComputeCapabilityMajor);
  ctx.nCudaDevAttrComputeCapabilityMinor = attribute(cudaDevAttrComputeCapabilityMinor);
  unsigned flags = 0;
  IMGPIPE_CUDA_CHECK(cudaStreamGetFlags(stream, &flags));
  ctx.nStreamFlags = flags;
  return ctx;
}
#endif

// ------------------------------------------------------------------------------------------------- NPP

namespace {

// Why `op` has no NPP counterpart here, or "" when it has one.
std::string npp_gap(const Op& op) {
  return std::visit(Overloaded{
                        [](const Resize&) { return std::string(); },
                        [](const Gaussian& g) {
                          return g.ksize <= 15 ? std::string()
                                               : "gaussian=" + std::to_string(g.ksize) +
                                                     ": NPP's fixed Gaussian masks stop at 15x15";
                        },
                        [](const Box&) { return std::string(); },
                        [](const Sharpen&) { return std::string("sharpen: NPP's sharpen filter has other taps"); },
                        [](const Sobel&) { return std::string("sobel: NPP has no |Gx|+|Gy| RGB filter"); },
                        [](const Transpose&) { return std::string(); },
                        [](const Rotate&) { return std::string(); },
                        [](const Flip&) { return std::string(); },
                        [](const Gray&) { return std::string("gray: no single NPP call writes luma to 3 channels"); },
                        [](const Normalize&) { return std::string("normalize: not mapped to NPP here"); },
                    },
                    op);
}

}  // namespace

std::optional<std::string> NppChain::unsupported(const Chain& chain) {
  if (!npp_compiled_in()) return std::string("this build has no NPP (CMake did not find CUDA::nppig/nppif)");
  if (chain.ops.empty()) return std::string("an empty chain");
  for (const Op& op : chain.ops) {
    std::string gap = npp_gap(op);
    if (!gap.empty()) return gap;
  }
  return std::nullopt;
}

#ifdef IMGPIPE_HAVE_NPP

struct NppChain::Impl {
  Chain chain;
  std::vector<Size> sizes;  // before op i at i, after the last op at ops.size()
  NppStreamContext ctx{};
  cuda::DeviceBuffer scratch[3];  // ping-pong intermediates, plus one for the two-call rotations
  std::vector<std::string> calls;

  static NppiSize npp_size(Size s) { return {s.width, s.height}; }

  void mirror(const std::uint8_t* in, Size s, std::uint8_t* out, NppiAxis axis) {
    check_npp(nppiMirror_8u_C3R_Ctx(in, 3 * s.width, out, 3 * s.width, npp_size(s), axis, ctx),
              "nppiMirror_8u_C3R_Ctx");
  }
  void transpose(const std::uint8_t* in, Size s, std::uint8_t* out) {
    check_npp(nppiTranspose_8u_C3R_Ctx(in, 3 * s.width, out, 3 * s.height, npp_size(s), ctx),
              "nppiTranspose_8u_C3R_Ctx");
  }

  static NppiMaskSize gauss_mask(int k) {
    switch (k) {
      case 3: return NPP_MASK_SIZE_3_X_3;
      case 5: return NPP_MASK_SIZE_5_X_5;
      case 7: return NPP_MASK_SIZE_7_X_7;
      case 9: return NPP_MASK_SIZE_9_X_9;
      case 11: return NPP_MASK_SIZE_11_X_11;
      case 13: return NPP_MASK_SIZE_13_X_13;
      case 15: return NPP_MASK_SIZE_15_X_15;
    }
    throw std::invalid_argument("NPP Gaussian mask " + std::to_string(k));
  }

  void run_op(const Op& op, const std::uint8_t* in, Size is, std::uint8_t* out, Size os) {
    const int in_step = 3 * is.width, out_step = 3 * os.width;
    std::visit(
        Overloaded{
            [&](const Resize& r) {
              check_npp(nppiResize_8u_C3R_Ctx(in, in_step, npp_size(is), NppiRect{0, 0, is.width, is.height}, out,
                                              out_step, npp_size(os), NppiRect{0, 0, os.width, os.height},
                                              r.interp == Interp::linear ? NPPI_INTER_LINEAR : NPPI_INTER_NN, ctx),
                        "nppiResize_8u_C3R_Ctx");
            },
            [&](const Gaussian& g) {
              check_npp(nppiFilterGaussBorder_8u_C3R_Ctx(in, in_step, npp_size(is), NppiPoint{0, 0}, out, out_step,
                                                         npp_size(os), gauss_mask(g.ksize), NPP_BORDER_REPLICATE, ctx),
                        "nppiFilterGaussBorder_8u_C3R_Ctx");
            },
            [&](const Box& b) {
              check_npp(nppiFilterBoxBorder_8u_C3R_Ctx(in, in_step, npp_size(is), NppiPoint{0, 0}, out, out_step,
                                                       npp_size(os), NppiSize{b.ksize, b.ksize},
                                                       NppiPoint{b.ksize / 2, b.ksize / 2}, NPP_BORDER_REPLICATE, ctx),
                        "nppiFilterBoxBorder_8u_C3R_Ctx");
            },
            [&](const Transpose&) { transpose(in, is, out); },
            [&](const Rotate& r) {
              if (r.degrees == 180) {
                mirror(in, is, out, NPP_BOTH_AXIS);
                return;
              }
              // Clockwise 90: transpose, then mirror left-right; 270: transpose, then upside down.
              transpose(in, is, scratch[2].data());
              mirror(scratch[2].data(), os, out, r.degrees == 90 ? NPP_VERTICAL_AXIS : NPP_HORIZONTAL_AXIS);
            },
            [&](const Flip& f) {
              mirror(in, is, out, f.axis == Flip::Axis::horizontal ? NPP_VERTICAL_AXIS : NPP_HORIZONTAL_AXIS);
            },
            [&](const auto&) { throw std::logic_error("NppChain: unsupported op reached run"); },
        },
        op);
  }
};

NppChain::NppChain(const Chain& chain, Size in_size, cudaStream_t stream) : impl_(std::make_unique<Impl>()) {
  if (const auto why = unsupported(chain)) throw std::runtime_error("NPP cannot run this chain: " + *why);
  impl_->chain = chain;
  impl_->ctx = npp_context(stream);
  impl_->sizes.push_back(in_size);
  for (const Op& op : chain.ops) impl_->sizes.push_back(output_size(op, impl_->sizes.back()));
  std::size_t scratch = 0;
  for (std::size_t i = 1; i + 1 < impl_->sizes.size(); ++i) scratch = std::max(scratch, impl_->sizes[i].rgb_bytes());
  if (scratch > 0) {
    impl_->scratch[0].grow(scratch);
    impl_->scratch[1].grow(scratch);
  }
  for (std::size_t i = 0; i < chain.ops.size(); ++i) {  // the transposed frame of a quarter turn
    if (const auto* r = std::get_if<Rotate>(&chain.ops[i]); r && r->degrees != 180) {
      impl_->scratch[2].grow(impl_->sizes[i].rgb_bytes());
    }
  }
  for (const Op& op : chain.ops) {
    std::visit(Overloaded{
                   [&](const Resize& r) {
                     impl_->calls.push_back(std::string("nppiResize_8u_C3R ") +
                                            (r.interp == Interp::linear ? "linear" : "nearest"));
                   },
                   [&](const Gaussian& g) {
                     impl_->calls.push_back("nppiFilterGaussBorder_8u_C3R " + std::to_string(g.ksize) + "x" +
                                            std::to_string(g.ksize) + " (NPP taps)");
                   },
                   [&](const Box& b) {
                     impl_->calls.push_back("nppiFilterBoxBorder_8u_C3R " + std::to_string(b.ksize) + "x" +
                                            std::to_string(b.ksize));
                   },
                   [&](const Rotate& r) {
                     impl_->calls.push_back(r.degrees == 180 ? "nppiMirror_8u_C3R both axes"
                                                             : "nppiTranspose_8u_C3R + nppiMirror_8u_C3R");
                   },
                   [&](const Transpose&) { impl_->calls.push_back("nppiTranspose_8u_C3R"); },
                   [&](const Flip&) { impl_->calls.push_back("nppiMirror_8u_C3R"); },
                   [&](const auto&) {},
               },
               op);
  }
}

void NppChain::run(const std::uint8_t* in, std::uint8_t* out) {
  Impl& m = *impl_;
  const std::size_t n = m.chain.ops.size();
  const std::uint8_t* src = in;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t* dst = i + 1 == n ? out : m.scratch[i % 2].data();
    m.run_op(m.chain.ops[i], src, m.sizes[i], dst, m.sizes[i + 1]);
    src = dst;
  }
}

std::string NppChain::describe() const {
  std::string text;
  for (const std::string& c : impl_->calls) text += (text.empty() ? "" : " + ") + c;
  return text + ", replicate borders";
}

#else  // no NPP in this build: the class exists so callers need no #ifdef, and refuses to be made

struct NppChain::Impl {};

NppChain::NppChain(const Chain& chain, Size, cudaStream_t) {
  throw std::runtime_error("NPP cannot run this chain: " + unsupported(chain).value_or("no NPP"));
}
void NppChain::run(const std::uint8_t*, std::uint8_t*) {}
std::string NppChain::describe() const { return {}; }

#endif

NppChain::~NppChain() = default;

}  // namespace imgpipe::bench
