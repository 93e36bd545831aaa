// Measurement pieces shared by imgpipe_bench_kernels and `imgpipe bench`: deterministic device bytes, the
// median and spread of repeated timings, owned CUDA graphs, and NPP (the peer to beat) when the toolkit has it.
// No NPP type appears here: NPP is private to imgpipe_bench (bench_npp.hpp has the helpers that take them).
// Speed lives in the programs that use these; ctest asserts none of it.
#pragma once

#include "cuda_resources.hpp"
#include "image.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace imgpipe {
struct Chain;
}

namespace imgpipe::bench {

// Fills `bytes` of device memory with deterministic bytes that are neither zeros nor a short pattern.
// Asynchronous, enqueued on `stream`.
void fill_random(std::uint8_t* data, std::size_t bytes, std::uint32_t seed, cudaStream_t stream);

// The median of repeated measurements and their spread, (max - min) / median.
struct Summary {
  double median = 0;
  double spread = 0;
  double min = 0;
  double max = 0;
};
Summary summarize(std::vector<double> samples);  // throws std::invalid_argument when empty

void destroy_graph(cudaGraph_t g) noexcept;
void destroy_graph_exec(cudaGraphExec_t g) noexcept;
using Graph = cuda::UniqueHandle<cudaGraph_t, destroy_graph>;
using GraphExec = cuda::UniqueHandle<cudaGraphExec_t, destroy_graph_exec>;

// Captures what `enqueue` queues on `stream` (thread-local capture mode) into an instantiated graph. When a
// call inside is not allowed under capture, the capture is ended, discarded and the error rethrown.
GraphExec capture_graph(cudaStream_t stream, const std::function<void()>& enqueue);

// True when this build has NPP (CMake found CUDA::nppig and CUDA::nppif).
bool npp_compiled_in();

// An imgpipe chain on NPP's own functions, for frames resident on the device; built on any toolkit, usable only
// where npp_compiled_in(). NPP's borders are replicate and its Gaussian taps are its own fixed masks (3x3 to
// 15x15), so results differ slightly from imgpipe's; the work per frame is the same kind.
class NppChain {
 public:
  // Why NPP cannot run `chain` here (no NPP in the build, or an op without an NPP counterpart), or nullopt.
  static std::optional<std::string> unsupported(const Chain& chain);
  // Throws std::runtime_error with unsupported()'s reason.
  NppChain(const Chain& chain, Size in_size, cudaStream_t stream);
  ~NppChain();
  NppChain(const NppChain&) = delete;
  NppChain& operator=(const NppChain&) = delete;

  // A short description of the NPP calls, e.g. "nppiResize_8u_C3R (linear) + nppiFilterGaussBorder_8u_C3R 5x5".
  std::string describe() const;
  // Packed RGB8 frames of the planned sizes (pitch 3 * width); asynchronous on the planned stream.
  void run(const std::uint8_t* in, std::uint8_t* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace imgpipe::bench
