#include "backends.hpp"

#include "cuda_check.hpp"
#include "gpu_backend.hpp"

#ifdef IMGPIPE_HAVE_CPU_BACKEND
#include "cpu_backend.hpp"
#endif

#include <cuda_runtime.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace imgpipe {
namespace {

constexpr const char* kNoOpenCv =
    "not in this build (it runs on OpenCV, which was not found or was turned off with IMGPIPE_WITH_OPENCV=OFF "
    "when imgpipe was configured)";

// Why the CUDA runtime sees no usable device, in its own words.
std::string no_device_reason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();  // leave no error behind for later CUDA calls
  if (error == cudaSuccess) return "cudaGetDeviceCount: no CUDA device";
  std::string reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error);
  // On a machine with no NVIDIA driver at all, CUDA's words read like a version problem; say what they mean.
  if (error == cudaErrorInsufficientDriver) reason += " (no NVIDIA driver here, or one older than this CUDA runtime)";
  return reason;
}

// The device the GPU backends would run on, e.g. "NVIDIA H200 (sm_90, 139.8 GiB)".
std::string device_description() {
  int device = 0;
  cudaDeviceProp properties{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "CUDA device (properties unavailable)";
  }
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(properties.totalGlobalMem) / (1u << 30));
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ", " + memory + ")";
}

GpuPath gpu_path(BackendKind kind) { return kind == BackendKind::naive ? GpuPath::naive : GpuPath::optimized; }

}  // namespace

std::string_view to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::cpu: return "cpu";
    case BackendKind::naive: return "naive";
    case BackendKind::optimized: return "optimized";
  }
  throw std::invalid_argument("to_string: not a BackendKind");
}

BackendKind parse_backend_kind(std::string_view name) {
  if (name == "cpu") return BackendKind::cpu;
  if (name == "naive") return BackendKind::naive;
  if (name == "optimized") return BackendKind::optimized;
  throw std::invalid_argument("unknown backend '" + std::string(name) + "': expected auto, cpu, naive or optimized");
}

std::vector<BackendInfo> available_backends() {
  std::vector<BackendInfo> backends;
#ifdef IMGPIPE_HAVE_CPU_BACKEND
  backends.push_back({BackendKind::cpu, true, true, cpu_backend_description()});
#else
  backends.push_back({BackendKind::cpu, false, false, kNoOpenCv});
#endif
  const bool gpu_usable = cuda::device_available();
  const std::string gpu_detail = gpu_usable ? device_description() : no_device_reason();
  for (BackendKind kind : {BackendKind::naive, BackendKind::optimized}) {
    backends.push_back({kind, true, gpu_usable, gpu_detail});
  }
  return backends;
}

namespace {
void require_device(BackendKind kind) {
  if (!cuda::device_available()) {
    throw std::runtime_error("backend '" + std::string(to_string(kind)) +
                             "' needs a CUDA device; none is usable here (" + no_device_reason() + ")");
  }
}
}  // namespace

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

std::unique_ptr<Backend> make_backend(BackendKind kind, Arithmetic arithmetic) {
  if (kind == BackendKind::cpu) {
#ifdef IMGPIPE_HAVE_CPU_BACKEND
    return make_cpu_backend();
#else
    throw std::runtime_error(std::string("backend 'cpu' is ") + kNoOpenCv);
#endif
  }
  require_device(kind);
  return make_gpu_backend(gpu_path(kind), arithmetic);
}

std::unique_ptr<Engine> make_engine(BackendKind kind, const Chain& chain, const EngineOptions& options) {
  if (kind != BackendKind::optimized) {
    return make_backend_engine(make_backend(kind, options.arithmetic), chain, options.slots);
  }
  require_device(kind);
  return make_gpu_engine(GpuPath::optimized, chain, options);
}

std::vector<int> parse_devices(std::string_view text) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear "no device" so later calls start clean
    count = 0;
  }
  std::vector<int> devices;
  if (text == "all") {
    for (int d = 0; d < count; ++d) devices.push_back(d);
    return devices;
  }
  const std::string visible = count == 0   ? "no CUDA device is usable here"
                              : count == 1 ? "device 0 is the only one visible"
                                           : "devices 0.." + std::to_string(count - 1) + " are visible";
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view number = text.substr(at, comma - at);
    int device = -1;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), device);
    if (number.empty() || error != std::errc() || end != number.data() + number.size()) {
      throw std::invalid_argument("devices '" + std::string(text) + "': expected 'all' or device numbers such as 0,1");
    }
    if (std::ranges::find(devices, device) != devices.end()) {
      throw std::invalid_argument("devices '" + std::string(text) + "': device " + std::to_string(device) +
                                  " is named twice");
    }
    devices.push_back(device);
    at = comma + 1;
  }
  for (const int device : devices) {
    if (device < 0 || device >= count) {
      throw std::invalid_argument("devices '" + std::string(text) + "': there is no device " + std::to_string(device) +
                                  "; " + visible);
    }
  }
  return devices;
}

Image apply(Backend& backend, const Chain& chain, const Image& in) {
  backend.set_chain(chain);
  Image out(output_size(chain, in.size()));
  backend.process(in.view(), out.view());
  return out;
}

}  // namespace imgpipe
