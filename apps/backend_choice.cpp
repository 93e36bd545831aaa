#include "backend_choice.hpp"

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>

namespace imgpipe::app {

BackendKind resolve_auto_backend(std::string* fallback_notice) {
  const std::vector<BackendInfo> backends = available_backends();
  auto info = [&](BackendKind kind) {
    return *std::find_if(backends.begin(), backends.end(), [&](const BackendInfo& b) { return b.kind == kind; });
  };
  const BackendInfo gpu = info(BackendKind::optimized);
  if (gpu.usable) return BackendKind::optimized;
  const BackendInfo cpu = info(BackendKind::cpu);
  if (!cpu.usable) {
    throw std::runtime_error("no usable backend: no CUDA device (" + gpu.detail + "), and the cpu backend is " +
                             cpu.detail);
  }
  if (fallback_notice) *fallback_notice = "no usable CUDA device (" + gpu.detail + "); using the cpu backend";
  return BackendKind::cpu;
}

BackendKind choose_backend_kind(std::string_view choice) {
  if (choice != "auto") return parse_backend_kind(choice);
  std::string notice;
  const BackendKind kind = resolve_auto_backend(&notice);
  if (!notice.empty()) std::cerr << "imgpipe: " << notice << "\n";
  return kind;
}

}  // namespace imgpipe::app
