#include "engine.hpp"

namespace imgpipe {

std::unique_ptr<Engine> make_engine(BackendKind kind, const Chain& chain, const EngineOptions& options) {
  if (kind == BackendKind::optimized) return make_gpu_engine(GpuPath::optimized, chain, options);
  return make_backend_engine(make_backend(kind), chain, options.slots);
}

}  // namespace imgpipe
