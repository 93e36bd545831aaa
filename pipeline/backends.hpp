// The one place that knows every backend: which are compiled into this build, which this machine can run,
// and how to make one or the engine that runs it (target imgpipe_backends).
#pragma once

#include "backend.hpp"
#include "chain.hpp"
#include "engine.hpp"
#include "image.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe {

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

// What "auto" means on this machine: optimized when a CUDA device is usable, else cpu when it is compiled in.
// `fallback_notice` is set to a one-line explanation when auto falls back to cpu.
// Throws std::runtime_error when neither is possible.
BackendKind resolve_auto_backend(std::string* fallback_notice);

// Throws std::runtime_error with a clear reason when the kind is not compiled in or not usable here.
// `arithmetic` picks how the GPU paths round; the cpu backend is OpenCV itself, exact either way.
std::unique_ptr<Backend> make_backend(BackendKind kind, Arithmetic arithmetic = Arithmetic::fast);

// The engine for a backend kind: cpu and naive run synchronously (the naive one is the baseline: pageable
// memory, synchronous copies, one stream); optimized is the GPU ring with `options`.
std::unique_ptr<Engine> make_engine(BackendKind kind, const Chain& chain, const EngineOptions& options);

// The CUDA devices `text` names, as --devices takes them: "all" (every visible device, in order; none where no
// device is usable) or a list of device numbers ("0,2"), each visible and named once. Throws
// std::invalid_argument saying what is wrong.
std::vector<int> parse_devices(std::string_view text);

// Convenience for one-shot use: plans, allocates the output and runs.
Image apply(Backend& backend, const Chain& chain, const Image& in);

}  // namespace imgpipe
