// --backend auto|cpu|naive|optimized, shared by every command.
#pragma once

#include "backend.hpp"
#include "chain.hpp"
#include "engine.hpp"

#include <functional>
#include <memory>
#include <string_view>

namespace imgpipe::app {

// What "auto" means on this machine: optimized when a CUDA device is usable, else cpu when it is compiled in.
// `fallback_notice` is set to a one-line explanation when auto falls back to cpu.
// Throws std::runtime_error when neither is possible.
BackendKind resolve_auto_backend(std::string* fallback_notice);

// The backend kind named by `choice` ("auto" or a BackendKind); prints auto's fallback notice on stderr.
BackendKind choose_backend_kind(std::string_view choice);

// Makes the engine a command runs on; by default from --backend. Tests pass a test double (an engine whose
// allocations or device fail on cue).
using EngineFactory = std::function<std::unique_ptr<Engine>(const Chain&, const EngineOptions&)>;

}  // namespace imgpipe::app
