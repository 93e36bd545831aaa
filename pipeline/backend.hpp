// What every backend does: told the chain once (plan), then run frame after frame.
#pragma once

#include "chain.hpp"
#include "image.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Plans for `chain` (coefficients, kernels, buffers); frames of any size may follow.
  virtual void set_chain(const Chain& chain) = 0;
  // Runs the planned chain on one frame. `out.size` must equal output_size(chain, in.size).
  // Synchronous: `out` is complete when this returns. Not thread-safe: one caller at a time.
  virtual void process(ConstFrameView in, FrameView out) = 0;
};

enum class BackendKind { cpu, naive, optimized };

std::string_view to_string(BackendKind kind);
// "cpu" | "naive" | "optimized"; throws std::invalid_argument otherwise.
BackendKind parse_backend_kind(std::string_view name);

struct BackendInfo {
  BackendKind kind;
  bool compiled_in = false;
  bool usable = false;
  std::string detail;  // why not usable, or what it runs on
};

// What is compiled into this build and usable on this machine (the GPU's name if any).
std::vector<BackendInfo> available_backends();

// Throws std::runtime_error with a clear reason when the kind is not compiled in or not usable here.
std::unique_ptr<Backend> make_backend(BackendKind kind);

// Convenience for one-shot use: plans, allocates the output and runs.
Image apply(Backend& backend, const Chain& chain, const Image& in);

}  // namespace imgpipe
