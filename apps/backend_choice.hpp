// --backend auto|cpu|naive|optimized, shared by every command.
#pragma once

#include "backends.hpp"
#include "chain.hpp"
#include "engine.hpp"

#include <functional>
#include <memory>
#include <string_view>

namespace imgpipe::app {

// The backend kind named by `choice` ("auto" or a BackendKind); prints auto's fallback notice on stderr, once.
BackendKind choose_backend_kind(std::string_view choice);

// Makes the engine a command runs on; by default from --backend. Tests pass a test double (an engine whose
// allocations or device fail on cue).
using EngineFactory = std::function<std::unique_ptr<Engine>(const Chain&, const EngineOptions&)>;

}  // namespace imgpipe::app
