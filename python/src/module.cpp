// imgpipe for Python: the same chain, backends, engines and jobs as the command, on NumPy arrays (host) and on
// any device array that speaks DLPack (CuPy, PyTorch, JAX) or __cuda_array_interface__ (Numba), without copies
// on the device.
#include "backends.hpp"
#include "chain.hpp"
#include "device_error.hpp"
#include "device_resources.hpp"
#include "engine.hpp"
#include "file_bytes.hpp"
#include "folder.hpp"
#include "frame_stream.hpp"
#include "gpu_backend.hpp"
#include "gpu_jpeg.hpp"
#include "image_file.hpp"
#include "image_folder.hpp"
#include "io_error.hpp"
#include "job.hpp"
#include "library_logging.hpp"
#include "rgb_color_space.hpp"

#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace imgpipe::python {
namespace {

using Frames = nb::ndarray<const std::uint8_t, nb::c_contig>;  // HxWx3 or NxHxWx3, host or device, read only
using OutFrames = nb::ndarray<std::uint8_t, nb::c_contig>;      // where a device call writes

constexpr const char* kLimitHint = "; max_pixels= raises the limit";
constexpr std::string_view kExistingOutputHint = "overwrite=True replaces it, skip_existing=True skips it";

// The frames an array holds: (H, W, 3) is one frame, (N, H, W, 3) a batch of N.
struct Shape {
  Size size;
  int frames = 1;
  bool batch = false;
};

Shape shape_of(std::span<const std::size_t> extents) {
  const std::size_t ndim = extents.size();
  if (!((ndim == 3 || ndim == 4) && extents[ndim - 1] == 3)) {
    throw nb::value_error("expected uint8 frames of shape (H, W, 3) or (N, H, W, 3), interleaved RGB");
  }
  if (ndim == 4 && extents[0] > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw nb::value_error(("a batch of " + std::to_string(extents[0]) + " frames: at most " +
                           std::to_string(std::numeric_limits<int>::max()) + " frames a call")
                              .c_str());
  }
  Shape s;
  s.batch = ndim == 4;
  s.frames = s.batch ? static_cast<int>(extents[0]) : 1;
  const std::size_t h = extents[ndim - 3], w = extents[ndim - 2];
  if (h < 1 || w < 1 || h > static_cast<std::size_t>(kMaxDimension) || w > static_cast<std::size_t>(kMaxDimension)) {
    throw nb::value_error(("frame size " + std::to_string(w) + "x" + std::to_string(h) + ": sides from 1 to " +
                           std::to_string(kMaxDimension))
                              .c_str());
  }
  s.size = {static_cast<int>(w), static_cast<int>(h)};
  return s;
}

Shape shape_of(const Frames& a) {
  std::vector<std::size_t> extents(a.ndim());
  for (std::size_t i = 0; i < extents.size(); ++i) extents[i] = a.shape(i);
  return shape_of(extents);
}

std::vector<std::size_t> shape_for(const Shape& in, Size out) {
  std::vector<std::size_t> shape;
  if (in.batch) shape.push_back(static_cast<std::size_t>(in.frames));
  shape.insert(shape.end(), {static_cast<std::size_t>(out.height), static_cast<std::size_t>(out.width), 3});
  return shape;
}

// A stream as Python libraries hand it over: an int (cudaStream_t), or an object with `cuda_stream` (PyTorch)
// or `ptr` (CuPy). None is the legacy default stream, which CuPy's and PyTorch's default streams are too.
cudaStream_t stream_of(const nb::object& stream) {
  if (stream.is_none()) return nullptr;
  nb::object handle = stream;
  for (const char* attribute : {"cuda_stream", "ptr"}) {
    if (nb::hasattr(stream, attribute)) {
      handle = stream.attr(attribute);
      break;
    }
  }
  std::uintptr_t value = 0;
  if (!nb::try_cast(handle, value)) {
    throw nb::type_error(
        "stream: expected None, a cudaStream_t as a non-negative int, or an object with "
        "`cuda_stream` (PyTorch) or `ptr` (CuPy)");
  }
  return reinterpret_cast<cudaStream_t>(value);
}

// How often a thread waiting for a job runs Python's signal handlers: Ctrl-C stops the job within this, plus the
// time the items in flight take to finish.
constexpr std::chrono::milliseconds kSignalPollInterval{50};

// run_job for a caller that released the GIL, stopped by Ctrl-C as Python code is. Python runs signal handlers
// only on the main thread, when that thread asks (PyErr_CheckSignals), and the job polls stop_requested on its
// own worker threads. So the job runs on a thread of its own while the calling thread waits for it, taking the
// GIL every kSignalPollInterval to run the handlers. A handler that raises (KeyboardInterrupt) stops the job:
// the items in flight are finished, no other starts, and its exception is thrown once the job is over, in place
// of the job's own outcome (an error the caller catches must not swallow the Ctrl-C). Off the main thread no
// handler runs, and the job goes to its end.
JobSummary run_job_until_interrupted(Source& source, Engine& engine, Sink& sink, JobOptions options,
                                     const std::function<void(const ItemResult&)>& on_result = {}) {
  std::atomic<bool> interrupted = false;
  options.stop_requested = [&] { return interrupted.load(); };
  std::future<JobSummary> job =
      std::async(std::launch::async, [&] { return run_job(source, engine, sink, options, on_result); });
  std::optional<nb::python_error> interruption;
  while (job.wait_for(kSignalPollInterval) != std::future_status::ready) {
    if (interruption) continue;  // a second Ctrl-C stays pending: Python raises it once the call has returned
    const nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      interruption.emplace();  // takes the handler's exception out of the error indicator, for later
      interrupted = true;
    }
  }
  if (interruption) throw std::move(*interruption);
  return job.get();
}

// Host frames of a NumPy batch as a job's source and sink: each frame is copied into the engine slot the job
// lends (pinned memory on the GPU engine) and its output out of it, while other frames upload, compute and
// download.
class ArrayFrames final : public Source, public Sink {
 public:
  ArrayFrames(const std::uint8_t* in, Size in_size, std::uint8_t* out, Size out_size, int frames)
      : in_(in), in_size_(in_size), out_(out), out_size_(out_size), frames_(frames) {}
  std::optional<Item> next() override {
    if (next_ == static_cast<std::uint64_t>(frames_)) return std::nullopt;
    const std::uint64_t index = next_++;
    return Item{index, "frame " + std::to_string(index), {}, false, std::nullopt};
  }
  std::vector<std::string> read(const Item& item, const FrameAllocator& allocate) override {
    const FrameView slot = allocate(in_size_);
    std::memcpy(slot.data, in_ + item.index * in_size_.rgb_bytes(), in_size_.rgb_bytes());
    return {};
  }
  bool concurrent_reads() const override { return true; }
  void write(const Item& item, ConstFrameView frame) override {
    std::memcpy(out_ + item.index * out_size_.rgb_bytes(), frame.data, out_size_.rgb_bytes());
  }
  bool concurrent_writes() const override { return true; }

 private:
  const std::uint8_t* in_;
  Size in_size_;
  std::uint8_t* out_;
  Size out_size_;
  int frames_;
  std::uint64_t next_ = 0;
};

// Device memory a returned array owns; freed when the last Python reference to it goes.
nb::capsule device_owner(void* data) {
  return nb::capsule(data, [](void* p) noexcept { cuda::check_noexcept(cudaFree(p), "cudaFree"); });
}

// How an array reaches imgpipe: a CUDA array through DLPack or, without __dlpack__, __cuda_array_interface__;
// anything else (NumPy) through nanobind as it is. DLPack is preferred: an array offering both (CuPy, PyTorch)
// comes in through DLPack and its interface is not read.
enum class Interchange { dlpack_cuda, cuda_array_interface, other };

Interchange interchange_of(const nb::handle& array) {
  constexpr int kDlpackCuda = 2;
  // DLPack's exporters define __dlpack_device__ beside __dlpack__: one lookup tells both.
  if (const nb::object device = nb::getattr(array, "__dlpack_device__", nb::none()); !device.is_none()) {
    return nb::cast<int>(device()[0]) == kDlpackCuda ? Interchange::dlpack_cuda : Interchange::other;
  }
  return nb::hasattr(array, "__cuda_array_interface__") ? Interchange::cuda_array_interface : Interchange::other;
}

// A CUDA array's DLPack capsule, taken through DLPack's handshake with the stream the work will run on (1: the
// legacy default stream), so the producer orders its pending writes before that stream instead of waiting for
// them on the host.
nb::object dlpack_capsule(const nb::handle& array, cudaStream_t stream) {
  return array.attr("__dlpack__")(nb::arg("stream") = stream ? reinterpret_cast<std::uintptr_t>(stream) : 1);
}

// Nothing is converted or copied: C-contiguous uint8 only.
Frames cast_frames(const nb::handle& frames) {
  Frames result;
  if (!nb::try_cast(frames, result, /*convert=*/false)) {
    throw nb::type_error("frames must be a C-contiguous uint8 array (NumPy, or a device array with __dlpack__ or "
                         "__cuda_array_interface__) of shape (H, W, 3) or (N, H, W, 3)");
  }
  return result;
}

// What an array's __cuda_array_interface__ (version 2 or 3) says, checked on the host before the device is
// touched: C-contiguous uint8 frames without a mask.
struct CudaArrayInterface {
  std::uintptr_t pointer = 0;
  bool readonly = false;
  std::vector<std::size_t> shape;
  std::optional<cudaStream_t> stream;  // version 3: where the producer may still have work on the data
};

CudaArrayInterface describe_cuda_array(const nb::object& array, const std::string& role) {
  const std::string prefix = "__cuda_array_interface__ of " + role + ": ";
  const auto type_error = [&](const std::string& why) { return nb::type_error((prefix + why).c_str()); };
  const auto value_error = [&](const std::string& why) { return nb::value_error((prefix + why).c_str()); };
  nb::dict entries;
  if (!nb::try_cast(array.attr("__cuda_array_interface__"), entries)) throw type_error("not a dict");
  const auto entry = [&](const char* key) { return entries.get(key, nb::none()); };

  int version = 0;
  if (!nb::try_cast(entry("version"), version) || (version != 2 && version != 3)) {
    throw type_error("version " + nb::cast<std::string>(nb::repr(entry("version"))) + ": only versions 2 and 3 are read");
  }
  std::string typestr;
  // One-byte types have no byte order, so every prefix means the same uint8.
  if (!nb::try_cast(entry("typestr"), typestr) || (typestr != "|u1" && typestr != "<u1" && typestr != ">u1")) {
    throw type_error("typestr " + nb::cast<std::string>(nb::repr(entry("typestr"))) + ": frames must be uint8 ('|u1')");
  }
  if (!entry("mask").is_none()) throw type_error("masked arrays are not taken (mask must be None)");

  CudaArrayInterface described;
  if (!nb::try_cast(entry("shape"), described.shape)) throw type_error("shape must be a tuple of ints");
  shape_of(described.shape);
  if (const nb::object strides_entry = entry("strides"); !strides_entry.is_none()) {
    std::vector<std::int64_t> strides;
    if (!nb::try_cast(strides_entry, strides) || strides.size() != described.shape.size()) {
      throw type_error("strides must be None or a tuple of ints, one per dimension");
    }
    // C-contiguous: each stride is the bytes of one item of the dimension; a dimension of one item may say anything.
    std::int64_t contiguous = 1;
    for (std::size_t i = strides.size(); i-- > 0;) {
      if (described.shape[i] != 1 && strides[i] != contiguous) {
        throw type_error("strides " + nb::cast<std::string>(nb::repr(strides_entry)) +
                         " are not C-contiguous; nothing is copied on the way in, so pass a contiguous array");
      }
      contiguous *= static_cast<std::int64_t>(described.shape[i]);
    }
  }
  std::pair<std::uintptr_t, bool> data;
  if (!nb::try_cast(entry("data"), data)) throw type_error("data must be a tuple (pointer, readonly)");
  described.pointer = data.first;
  described.readonly = data.second;
  if (const nb::object stream_entry = entry("stream"); !stream_entry.is_none()) {
    std::uintptr_t stream = 0;
    if (!nb::try_cast(stream_entry, stream)) throw type_error("stream must be None or a stream handle (int)");
    // The interface's codes, 1 (legacy default) and 2 (per-thread default), are CUDA's own handles for them.
    if (stream == 0) {
      throw value_error("stream 0 is not allowed by the interface (None: nothing to wait for; 1: the legacy "
                        "default stream; 2: the per-thread default stream)");
    }
    described.stream = reinterpret_cast<cudaStream_t>(stream);
  }
  return described;
}

// The interface's pointers belong to the current device: they must be device (or managed) memory of it.
int device_of(std::uintptr_t pointer, const std::string& role) {
  const std::string prefix = "__cuda_array_interface__ of " + role + ": ";
  cudaPointerAttributes attributes{};
  IMGPIPE_CUDA_CHECK(cudaPointerGetAttributes(&attributes, reinterpret_cast<const void*>(pointer)));
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    throw nb::value_error((prefix + "the data pointer is not device memory (host or unregistered memory)").c_str());
  }
  int current = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&current));
  if (attributes.device != current) {
    throw nb::value_error((prefix + "the data is on device " + std::to_string(attributes.device) +
                           " but the current device is " + std::to_string(current) + "; make that device current")
                              .c_str());
  }
  return current;
}

// The interface's stream rules (version 3) between the streams producers name and the stream imgpipe runs on:
// a producer's pending work on its array comes before imgpipe's, and its later work after imgpipe's, so it
// neither changes an input nor reads an output (or reuses their memory) too early.
class ProducerStreams {
 public:
  explicit ProducerStreams(cudaStream_t ours) : ours_(canonical(ours)) {}

  // Before imgpipe's work is enqueued.
  void wait_for(cudaStream_t producer) {
    producer = canonical(producer);
    if (producer == ours_ || std::ranges::find(producers_, producer) != producers_.end()) return;
    const DeviceEvent pending = DeviceEvent::create();
    pending.record(producer);
    IMGPIPE_CUDA_CHECK(cudaStreamWaitEvent(ours_, pending.get()));
    producers_.push_back(producer);
  }

  // After imgpipe's work is enqueued.
  void make_producers_wait() const {
    if (producers_.empty()) return;
    const DeviceEvent done = DeviceEvent::create();
    done.record(ours_);
    for (const cudaStream_t producer : producers_) IMGPIPE_CUDA_CHECK(cudaStreamWaitEvent(producer, done.get()));
  }

 private:
  // The module runs with the legacy default stream, which both 0 and cudaStreamLegacy name.
  static cudaStream_t canonical(cudaStream_t stream) { return stream ? stream : cudaStreamLegacy; }

  cudaStream_t ours_;
  std::vector<cudaStream_t> producers_;
};

// A device array as its __cuda_array_interface__ describes it, as an ndarray that keeps `owner` alive, once its
// memory is checked and its producer's pending work is ordered before imgpipe's. An array imgpipe writes
// (OutFrames) must not be read-only.
template <class Array>
Array attach_cuda_array(const CudaArrayInterface& described, const nb::object& owner, const std::string& role,
                        ProducerStreams& producers) {
  if (!Array::ReadOnly && described.readonly) {
    throw nb::value_error(("__cuda_array_interface__ of " + role + ": read-only, and imgpipe writes into it").c_str());
  }
  const int device = device_of(described.pointer, role);
  if (described.stream) producers.wait_for(*described.stream);
  return Array(reinterpret_cast<typename Array::VoidPtr>(described.pointer), described.shape.size(),
               described.shape.data(), owner, nullptr, nb::dtype<std::uint8_t>(), nb::device::cuda::value, device);
}

// out= of a device call: a C-contiguous uint8 device array of the output's shape on the input's device, through
// DLPack (with the stream handshake, as for the input) or __cuda_array_interface__.
OutFrames device_out(const nb::object& out_object, const std::vector<std::size_t>& shape, int device,
                     cudaStream_t stream, ProducerStreams& producers) {
  constexpr const char* kOutOfShape =
      "out= must be a contiguous uint8 device array on the input's device, of the output's shape";
  OutFrames out;
  switch (interchange_of(out_object)) {
    case Interchange::dlpack_cuda:
      if (!nb::try_cast(dlpack_capsule(out_object, stream), out, /*convert=*/false)) throw nb::value_error(kOutOfShape);
      break;
    case Interchange::cuda_array_interface:
      out = attach_cuda_array<OutFrames>(describe_cuda_array(out_object, "out"), out_object, "out", producers);
      break;
    case Interchange::other: throw nb::value_error(kOutOfShape);
  }
  if (out.device_id() != device || out.ndim() != shape.size()) throw nb::value_error(kOutOfShape);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (out.shape(i) != shape[i]) throw nb::value_error("out= must have the output's shape");
  }
  return out;
}

// The array type a new device result takes: the input's own library where nanobind makes its arrays (CuPy,
// PyTorch), else one that speaks DLPack (nanobind's array, for jax.numpy.from_dlpack, cupy.from_dlpack...).
enum class DeviceLibrary { cupy, pytorch, other };

DeviceLibrary library_of(const nb::handle& array) {
  const nb::object module = nb::getattr(array.type(), "__module__", nb::none());
  std::string_view name;
  if (nb::isinstance<nb::str>(module)) name = nb::borrow<nb::str>(module).c_str();
  if (name.starts_with("cupy")) return DeviceLibrary::cupy;
  if (name.starts_with("torch")) return DeviceLibrary::pytorch;
  return DeviceLibrary::other;
}

class Pipeline {
 public:
  Pipeline(const std::string& ops, const std::string& backend, int slots, bool exact, std::optional<int> device)
      : chain_(parse_chain(ops)), slots_(slots), arithmetic_(exact ? Arithmetic::exact : Arithmetic::fast) {
    if (slots < 1 || slots > kMaxSlots) {
      throw nb::value_error(("slots: from 1 to " + std::to_string(kMaxSlots)).c_str());
    }
    std::string notice;
    kind_ = backend == "auto" ? resolve_auto_backend(&notice) : parse_backend_kind(backend);
    fallback_notice_ = notice;
    if (kind_ == BackendKind::cpu) return;
    require_device();
    if (device) {
      try {
        device_ = parse_devices(std::to_string(*device)).front();
      } catch (const std::invalid_argument& e) {
        throw nb::value_error(e.what());
      }
    }
  }

  std::string chain() const { return to_string(chain_); }
  std::string backend() const { return std::string(to_string(kind_)); }
  const Chain& parsed_chain() const { return chain_; }
  BackendKind kind() const { return kind_; }
  Arithmetic arithmetic() const { return arithmetic_; }
  bool exact() const { return arithmetic_ == Arithmetic::exact; }
  const std::string& fallback_notice() const { return fallback_notice_; }
  std::optional<int> device() const { return device_; }
  // The engine's devices for host frames: the one asked for, else the current device.
  std::vector<int> engine_devices() const { return device_ ? std::vector<int>{*device_} : std::vector<int>{}; }
  std::pair<int, int> output_size(std::pair<int, int> size) const {
    if (size.first < 1 || size.second < 1 || size.first > kMaxDimension || size.second > kMaxDimension) {
      throw nb::value_error(("frame size " + std::to_string(size.first) + "x" + std::to_string(size.second) +
                             ": sides from 1 to " + std::to_string(kMaxDimension))
                                .c_str());
    }
    const Size out = imgpipe::output_size(chain_, {size.first, size.second});
    return {out.width, out.height};
  }

  nb::object call(const nb::object& frames_object, const nb::object& stream_object, const nb::object& out) {
    const Interchange interchange = interchange_of(frames_object);
    // A bad __cuda_array_interface__ is reported as such on every backend, before the device is touched.
    std::optional<CudaArrayInterface> described;
    if (interchange == Interchange::cuda_array_interface) described = describe_cuda_array(frames_object, "frames");
    if (interchange != Interchange::other && kind_ == BackendKind::cpu) {
      throw nb::type_error("the cpu backend takes host (NumPy) arrays; use backend='optimized' for device arrays");
    }
    const cudaStream_t stream = stream_of(stream_object);
    ProducerStreams producers(stream);
    const Frames frames = interchange == Interchange::dlpack_cuda ? cast_frames(dlpack_capsule(frames_object, stream))
                          : described ? attach_cuda_array<Frames>(*described, frames_object, "frames", producers)
                                      : cast_frames(frames_object);
    const Shape in = shape_of(frames);
    const Size out_size = imgpipe::output_size(chain_, in.size);
    if (frames.device_type() == nb::device::cuda::value) {
      return on_device(frames, in, out_size, stream, producers, out, library_of(frames_object));
    }
    if (frames.device_type() != nb::device::cpu::value) throw nb::type_error("frames must be on the host or a CUDA device");
    if (!out.is_none()) throw nb::value_error("out= is for device arrays; host calls return a new array");
    return on_host(frames, in, out_size);
  }

 private:
  static void require_device() {
    if (!cuda::device_available()) throw std::runtime_error("this backend needs a CUDA device; none is usable here");
  }

  nb::object on_host(const Frames& frames, const Shape& in, Size out_size) {
    const std::vector<std::size_t> shape = shape_for(in, out_size);
    const std::size_t bytes = static_cast<std::size_t>(in.frames) * out_size.rgb_bytes();
    auto* result = new std::uint8_t[bytes];
    nb::capsule owner(result, [](void* p) noexcept { delete[] static_cast<std::uint8_t*>(p); });
    const std::uint8_t* data = frames.data();
    {
      nb::gil_scoped_release released;
      std::lock_guard lock(mutex_);
      std::optional<CurrentDevice> on_device;
      if (device_) on_device.emplace(*device_);
      if (in.frames == 1) {
        if (!backend_) {
          backend_ = make_backend(kind_, arithmetic_);
          backend_->set_chain(chain_);
        }
        backend_->process({data, in.size}, {result, out_size});
      } else {
        if (!engine_) {
          engine_ = make_engine(kind_, chain_, EngineOptions{slots_, MemoryMode::pinned, true, arithmetic_,
                                                             engine_devices()});
        }
        ArrayFrames array(data, in.size, result, out_size, in.frames);
        const JobSummary summary = run_job_until_interrupted(array, *engine_, array, JobOptions{slots_, true, {}});
        if (summary.first_failure) std::rethrow_exception(summary.first_failure->error);
      }
    }
    return nb::cast(nb::ndarray<nb::numpy, std::uint8_t>(result, shape.size(), shape.data(), owner));
  }

  nb::object on_device(const Frames& frames, const Shape& in, Size out_size, cudaStream_t stream,
                       ProducerStreams& producers, const nb::object& out_object, DeviceLibrary library) {
    const std::vector<std::size_t> shape = shape_for(in, out_size);
    IMGPIPE_CUDA_CHECK(cudaSetDevice(frames.device_id()));
    std::uint8_t* result = nullptr;
    nb::object owner;
    if (!out_object.is_none()) {
      result = device_out(out_object, shape, frames.device_id(), stream, producers).data();
    } else {
      IMGPIPE_CUDA_CHECK(cudaMalloc(&result, static_cast<std::size_t>(in.frames) * out_size.rgb_bytes()));
      owner = device_owner(result);
    }
    const std::uint8_t* data = frames.data();
    {
      nb::gil_scoped_release released;
      std::lock_guard lock(mutex_);
      if (!device_chain_) {
        device_chain_.emplace(kind_ == BackendKind::naive ? GpuPath::naive : GpuPath::optimized, chain_, arithmetic_);
      }
      if (in.batch) {
        device_chain_->run_batch(data, in.size, in.frames, result, stream);
      } else {
        device_chain_->run(data, in.size, result, stream);
      }
    }
    producers.make_producers_wait();
    if (!out_object.is_none()) return out_object;
    const auto result_as = [&]<class Library>(Library) {
      return nb::cast(nb::ndarray<Library, std::uint8_t>(result, shape.size(), shape.data(), owner, nullptr,
                                                         nb::dtype<std::uint8_t>(), nb::device::cuda::value,
                                                         frames.device_id()));
    };
    switch (library) {
      case DeviceLibrary::cupy: return result_as(nb::cupy{});
      case DeviceLibrary::pytorch: return result_as(nb::pytorch{});
      case DeviceLibrary::other: break;
    }
    return result_as(nb::array_api{});
  }

  Chain chain_;
  BackendKind kind_ = BackendKind::cpu;
  int slots_;
  Arithmetic arithmetic_;
  std::optional<int> device_;  // host frames' device, for the GPU backends; nullopt: the current device
  std::string fallback_notice_;
  std::mutex mutex_;  // one call at a time per Pipeline: backends, engines and device chains are not re-entrant
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Engine> engine_;
  std::optional<DeviceChain> device_chain_;
};

io::ExistingOutputs existing_outputs(bool overwrite, bool skip_existing) {
  if (overwrite && skip_existing) throw nb::value_error("overwrite and skip_existing contradict each other");
  return overwrite ? io::ExistingOutputs::overwrite
                   : (skip_existing ? io::ExistingOutputs::skip : io::ExistingOutputs::refuse);
}

// Where a folder job decodes and encodes JPEG: decoder=, encoder=, full_chroma= and gpu_decode_threads= of
// run_folder and run_files, as the command's --decoder, --encoder, --full-chroma and --gpu-decode-threads.
struct JpegCodecs {
  std::string decoder = "auto";
  std::string encoder = "auto";
  bool full_chroma = false;
  int gpu_decode_threads = io::GpuJpegDecoder::Options{}.decode_threads;
};

void check_codec_choice(const char* option, const std::string& choice) {
  if (choice != "auto" && choice != "gpu" && choice != "cpu") {
    throw nb::value_error((std::string(option) + " '" + choice + "': auto, gpu or cpu").c_str());
  }
}

// Whether GPU JPEG can run for this pipeline before its engine exists (the engine then has the last word).
bool gpu_jpeg_possible(const Pipeline& pipeline, const std::string& choice) {
  return choice != "cpu" && pipeline.kind() == BackendKind::optimized && io::gpu_jpeg_unavailable().empty();
}

void check_format(const std::string& format) {
  if (!io::is_output_format(format)) {
    throw nb::value_error(("format '" + format + "': same, or an image extension without its dot (" +
                           io::image_extensions_text() + ")")
                              .c_str());
  }
}

void check_output_options(const Pipeline& pipeline, const std::string& format, int quality, const JpegCodecs& codecs) {
  check_codec_choice("decoder", codecs.decoder);
  check_codec_choice("encoder", codecs.encoder);
  if (codecs.gpu_decode_threads < 1 || codecs.gpu_decode_threads > 64) {
    throw nb::value_error(
        ("gpu_decode_threads " + std::to_string(codecs.gpu_decode_threads) + ": from 1 to 64").c_str());
  }
  check_format(format);
  const bool writes_format = format == "same" || format == "ppm" || io::has_opencv_codecs() ||
                             (format == "jpg" && gpu_jpeg_possible(pipeline, codecs.encoder));
  if (!writes_format) {
    throw nb::value_error(("format '" + format + "' needs a build with OpenCV" +
                           (format == "jpg" ? " or the GPU JPEG encoder (the optimized backend)" : "") +
                           "; this build writes PPM only")
                              .c_str());
  }
  if (quality < 1 || quality > 100) throw nb::value_error("quality: from 1 to 100");
}

// GPU for `choice` auto or gpu where the engine keeps frames on the device and nvJPEG runs here; gpu insists.
bool uses_gpu_jpeg(const char* option, const std::string& choice, const Engine& engine) {
  try {
    return io::gpu_jpeg_chosen(choice, engine);
  } catch (const std::invalid_argument& e) {
    throw nb::value_error((std::string(option) + "='gpu': " + e.what()).c_str());
  }
}

// A file name, or a message holding one, as Python's str the way os.fsdecode makes it: bytes that are not UTF-8
// become surrogates, so the name leads back to the same file (os.fsencode, or a path argument here).
nb::str file_system_str(const std::string& text) {
  PyObject* decoded = PyUnicode_DecodeFSDefaultAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  if (decoded == nullptr) throw nb::python_error();
  return nb::steal<nb::str>(decoded);
}

// The planned files through the chain, as `imgpipe batch` runs them; per-file failures come back in the result,
// not raised.
nb::dict run_plan(Pipeline& pipeline, const io::FolderPlan& folder, const std::filesystem::path& output_dir,
                  int quality, int jobs, bool overwrite, std::uint64_t max_pixels, const JpegCodecs& codecs) {
  if (jobs < 0 || jobs > kMaxJobs) {
    throw nb::value_error(("jobs: " + std::to_string(jobs) + " is not from 0 (one per hardware thread) to " +
                           std::to_string(kMaxJobs) + ", as `imgpipe batch --jobs`")
                              .c_str());
  }
  const Chain& chain = pipeline.parsed_chain();
  int workers = job_workers(jobs);
  JobSummary summary;
  std::array<std::uint64_t, 3> decoded_by{};
  std::uint64_t gpu_encoded = 0;
  bool gpu_decoding = false, gpu_encoding = false;
  std::vector<std::pair<std::string, std::string>> failures;
  {
    nb::gil_scoped_release released;
    // More frames in flight where JPEG may be decoded on the GPU, so that files always wait for its decoder.
    const int slots = gpu_jpeg_possible(pipeline, codecs.decoder) ? std::max(io::kGpuJpegSlots, job_slots(workers))
                                                                   : job_slots(workers);
    const std::vector<int> devices = pipeline.engine_devices();
    const std::unique_ptr<Engine> engine = make_engine(
        pipeline.kind(), chain, EngineOptions{slots, MemoryMode::pinned, true, pipeline.arithmetic(), devices});
    std::optional<io::GpuJpegDecoders> decoder;
    std::optional<io::GpuJpegEncoders> encoder;
    if (uses_gpu_jpeg("decoder", codecs.decoder, *engine)) {
      decoder.emplace(devices, io::GpuJpegDecoder::Options{.decode_threads = codecs.gpu_decode_threads});
      // Threads that wait for the GPU decoder hold no core; every slot gets one, so files always wait for it.
      workers = std::max(workers, engine->slots());
    }
    if (uses_gpu_jpeg("encoder", codecs.encoder, *engine)) {
      encoder.emplace(devices, io::GpuJpegEncoder::Options{quality, codecs.full_chroma});
    }
    std::filesystem::create_directories(output_dir);
    io::ImageFolderSource source(folder, chain, max_pixels, decoder ? &*decoder : nullptr);
    io::ImageFolderSink sink(folder, quality, overwrite ? io::Existing::replace : io::Existing::keep,
                             encoder ? &*encoder : nullptr);
    summary =
        run_job_until_interrupted(source, *engine, sink, JobOptions{workers, false, {}}, [&](const ItemResult& result) {
          if (result.status != ItemResult::Status::done && result.status != ItemResult::Status::skipped) {
            failures.emplace_back(result.item.name, io::failure_message(result, kLimitHint));
          }
        });
    gpu_decoding = decoder.has_value();
    gpu_encoding = encoder.has_value();
    decoded_by = source.jpeg_decoders();
    gpu_encoded = sink.gpu_encoded();
  }
  nb::list errors;
  for (const auto& [path, message] : failures)
    errors.append(nb::make_tuple(file_system_str(path), file_system_str(message)));
  nb::dict result;
  result["done"] = summary.done;
  result["failed"] = summary.failed;
  result["skipped"] = summary.skipped;
  result["files"] = folder.files.size();
  result["unsupported"] = folder.unsupported;
  result["seconds"] = summary.seconds;
  // As `imgpipe batch --timings`: seconds summed over the files, per stage of the job, and the part of them the
  // files' threads ran on a core.
  const auto stage_dict = [](const StageSeconds& seconds) {
    nb::dict stages;
    stages["read"] = seconds.read;
    stages["submit"] = seconds.submit;
    stages["complete"] = seconds.complete;
    stages["write"] = seconds.write;
    return stages;
  };
  result["stage_seconds"] = stage_dict(summary.stages);
  result["stage_cpu_seconds"] = stage_dict(summary.stages_on_cpu);
  result["decoder"] = gpu_decoding ? "gpu" : "cpu";
  result["encoder"] = gpu_encoding ? "gpu" : "cpu";
  // As the command's summary: with the GPU decoder, the JPEG files each decoder took (the hardware engines,
  // nvJPEG's hybrid backend, the CPU for what both refused); with the GPU encoder, the files it encoded.
  if (gpu_decoding) {
    nb::dict decoders;
    decoders["hardware"] = decoded_by[static_cast<std::size_t>(io::JpegDecoder::hardware)];
    decoders["gpu_hybrid"] = decoded_by[static_cast<std::size_t>(io::JpegDecoder::gpu_hybrid)];
    decoders["cpu"] = decoded_by[static_cast<std::size_t>(io::JpegDecoder::cpu)];
    result["jpeg_decoded_by"] = decoders;
  } else {
    result["jpeg_decoded_by"] = nb::none();
  }
  result["gpu_encoded"] = gpu_encoded;
  result["errors"] = errors;
  result["device_failure"] = summary.device_failure.empty() ? nb::none() : nb::cast(summary.device_failure);
  return result;
}

// The batch job on a folder, as `imgpipe batch` runs it.
nb::dict run_folder(Pipeline& pipeline, const std::filesystem::path& input_dir, const std::filesystem::path& output_dir,
                    const std::string& format, int quality, int jobs, bool overwrite, bool skip_existing,
                    std::uint64_t max_pixels, const std::optional<std::pair<int, int>>& shard,
                    const std::string& decoder, const std::string& encoder, bool full_chroma, int gpu_decode_threads) {
  const io::ExistingOutputs existing = existing_outputs(overwrite, skip_existing);
  const JpegCodecs codecs{decoder, encoder, full_chroma, gpu_decode_threads};
  check_output_options(pipeline, format, quality, codecs);
  io::check_folders(input_dir, output_dir);
  io::FolderPlan folder = io::plan_outputs(input_dir, output_dir, format, existing, false, kExistingOutputHint);
  if (shard) io::keep_shard(folder, input_dir, shard->first, shard->second);
  return run_plan(pipeline, folder, output_dir, quality, jobs, overwrite, max_pixels, codecs);
}

// The batch job on chosen files of a folder (paths relative to it, as list_images gives them).
nb::dict run_files(Pipeline& pipeline, const std::filesystem::path& input_dir,
                   const std::vector<std::filesystem::path>& files, const std::filesystem::path& output_dir,
                   const std::string& format, int quality, int jobs, bool overwrite, bool skip_existing,
                   std::uint64_t max_pixels, const std::string& decoder, const std::string& encoder, bool full_chroma,
                   int gpu_decode_threads) {
  const io::ExistingOutputs existing = existing_outputs(overwrite, skip_existing);
  const JpegCodecs codecs{decoder, encoder, full_chroma, gpu_decode_threads};
  check_output_options(pipeline, format, quality, codecs);
  io::check_folders(input_dir, output_dir);
  return run_plan(pipeline, io::plan_files(input_dir, files, output_dir, format, existing, kExistingOutputHint),
                  output_dir, quality, jobs, overwrite, max_pixels, codecs);
}

// The images under a folder, relative to it, sorted, as the batch job walks it (entries named like images that
// cannot be read are listed too, so the job reports them).
nb::list list_images(const std::filesystem::path& input_dir) {
  nb::list names;
  for (const io::FolderEntry& entry : io::list_image_entries(input_dir)) names.append(file_system_str(entry.relative));
  return names;
}

// list_images with each entry's problem: "" for a file to read, else why it cannot be read as an image file
// (a folder, a broken link, a FIFO...), in the batch job's words.
nb::list list_image_entries(const std::filesystem::path& input_dir) {
  nb::list entries;
  for (const io::FolderEntry& entry : io::list_image_entries(input_dir)) {
    entries.append(nb::make_tuple(file_system_str(entry.relative), file_system_str(entry.problem)));
  }
  return entries;
}

// The batch job's plan for the images under input_dir (as it lists them), or for chosen files of it, against
// output_dir: one (name, output, skip, error) per file, name relative to input_dir, error the command's message
// for a file that will not be written. remote_input: input_dir is a prefix elsewhere (an object-store URL), so
// only the outputs' rules apply.
nb::list plan_outputs(const std::filesystem::path& input_dir, const std::filesystem::path& output_dir,
                      const std::optional<std::vector<std::filesystem::path>>& files, const std::string& format,
                      bool overwrite, bool skip_existing, bool remote_input) {
  const io::ExistingOutputs existing = existing_outputs(overwrite, skip_existing);
  check_format(format);
  io::FolderPlan folder;
  if (remote_input) {
    if (!files) throw nb::value_error("remote_input=True plans the files given, as there is no folder here to list");
    folder = io::plan_remote_files(input_dir, *files, output_dir, format, existing, kExistingOutputHint);
  } else {
    io::check_folders(input_dir, output_dir);
    folder = files ? io::plan_files(input_dir, *files, output_dir, format, existing, kExistingOutputHint)
                   : io::plan_outputs(input_dir, output_dir, format, existing, false, kExistingOutputHint);
  }
  nb::list plans;
  for (std::size_t i = 0; i < folder.files.size(); ++i) {
    const io::FilePlan& file = folder.files[i];
    const std::filesystem::path name =
        files ? (*files)[i] : std::filesystem::path(file.input).lexically_relative(input_dir);
    const std::string error = file.refusal.empty() ? std::string() : file.input + ": not processed: " + file.refusal;
    plans.append(nb::make_tuple(file_system_str(name.native()), file_system_str(file.output), file.skip,
                                file_system_str(error)));
  }
  return plans;
}

// An argument with the buffer protocol: bytes, bytearray, memoryview, a NumPy array, pyarrow's buffers.
class BytesLike : public nb::object {
  NB_OBJECT_DEFAULT(BytesLike, nb::object, "typing_extensions.Buffer", PyObject_CheckBuffer)
};

// A bytes-like object's bytes, held for the call: its exporter keeps them in place meanwhile (a bytearray
// cannot be resized), so they may be read with the GIL released.
class HeldBytes {
 public:
  explicit HeldBytes(const BytesLike& object) {
    // PyBUF_SIMPLE: the exporter gives its bytes as one contiguous block, or refuses.
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_SIMPLE) != 0) throw nb::python_error();
  }
  ~HeldBytes() { PyBuffer_Release(&view_); }
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;

  std::span<const std::uint8_t> bytes() const {
    return {static_cast<const std::uint8_t*>(view_.buf), static_cast<std::size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
};

// Encoded bytes to one planned output, as the batch job writes its outputs (io::write_output_file).
void write_output(const std::filesystem::path& output, const BytesLike& data,
                  const std::optional<std::filesystem::path>& input_dir, bool overwrite) {
  const HeldBytes held(data);
  nb::gil_scoped_release released;
  io::write_output_file(output, held.bytes(), input_dir.value_or(std::filesystem::path()),
                        overwrite ? io::Existing::replace : io::Existing::keep);
}

// An image file's bytes as an (H, W, 3) uint8 array, decoded as the batch job decodes files.
nb::object decode(const BytesLike& data, std::uint64_t max_pixels) {
  std::unique_ptr<std::uint8_t[]> pixels;
  Size size;
  {
    const HeldBytes held(data);
    nb::gil_scoped_release released;
    io::decode_image(
        held.bytes(), "",
        [&](Size s) {
          size = s;
          pixels.reset(new std::uint8_t[s.rgb_bytes()]);
          return FrameView{pixels.get(), s};
        },
        max_pixels);
  }
  std::uint8_t* raw = pixels.release();
  nb::capsule owner(raw, [](void* p) noexcept { delete[] static_cast<std::uint8_t*>(p); });
  const std::size_t shape[3] = {static_cast<std::size_t>(size.height), static_cast<std::size_t>(size.width), 3};
  return nb::cast(nb::ndarray<nb::numpy, std::uint8_t>(raw, 3, shape, owner));
}

// A video file's frames as (H, W, 3) uint8 arrays, each with its time, decoded on the CPU as `imgpipe stream`
// decodes them there (FFmpeg's libraries where the build has them, else OpenCV).
class VideoReader {
 public:
  VideoReader(const std::filesystem::path& path, std::uint64_t max_pixels) : path_(path), max_pixels_(max_pixels) {
    if (max_pixels < 1) throw nb::value_error("max_pixels must be at least 1");
    nb::gil_scoped_release released;
    reader_ = io::open_video_reader(path, max_pixels);
  }

  using HostFrame = nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<3>>;

  // (frame, seconds): the next frame and when it is shown (None where the file says nothing).
  std::pair<HostFrame, std::optional<double>> next() {
    std::unique_ptr<std::uint8_t[]> pixels;
    std::optional<Size> size;
    std::optional<double> time;
    {
      nb::gil_scoped_release released;
      const std::lock_guard one_at_a_time(mutex_);  // threads sharing a reader take its frames in turn
      size = reader_->next_size();
      // The file's declared size was checked at open; a stream whose frames grow later is checked here, before
      // the frame's memory is asked for, as the command checks every frame.
      if (size && size->pixels() > max_pixels_) {
        throw io::PixelLimitError(path_, "frame " + std::to_string(frames_) + ": the frame has " +
                                             std::to_string(size->pixels()) + " pixels, more than the limit of " +
                                             std::to_string(max_pixels_));
      }
      if (size) {
        time = reader_->frame_time();
        pixels.reset(new std::uint8_t[size->rgb_bytes()]);
        reader_->read({pixels.get(), *size});
        ++frames_;
      }
    }
    if (!size) throw nb::stop_iteration();
    std::uint8_t* raw = pixels.release();
    nb::capsule owner(raw, [](void* p) noexcept { delete[] static_cast<std::uint8_t*>(p); });
    const std::size_t shape[3] = {static_cast<std::size_t>(size->height), static_cast<std::size_t>(size->width), 3};
    return {HostFrame(raw, 3, shape, owner), time};
  }

 private:
  template <class Question>
  auto locked(Question question) {
    nb::gil_scoped_release released;
    const std::lock_guard one_at_a_time(mutex_);
    return question();
  }

 public:
  // The reader is asked under the lock next() holds, so that a thread polling it (a progress display) never
  // reads it while another thread decodes. The GIL goes first, as in next(), so the two never wait on each other.
  std::optional<double> frame_rate() {
    return locked([&] { return reader_->frame_rate(); });
  }
  std::optional<std::uint64_t> frames_expected() {
    return locked([&] { return reader_->frames_expected(); });
  }
  std::string decoder() {
    return locked([&] { return reader_->decoder(); });
  }
  std::vector<std::uint64_t> damaged_frames() {
    return locked([&] { return reader_->corrupt_frames(); });
  }
  std::optional<std::pair<std::int64_t, std::int64_t>> display_aspect() {
    const std::optional<DisplayAspect> shape = locked([&] { return reader_->display_aspect(); });
    if (!shape) return std::nullopt;
    return std::pair(shape->width, shape->height);
  }
  std::optional<std::pair<int, int>> color_space() {
    const std::optional<io::RgbColorSpace> space = locked([&] { return reader_->rgb_color_space(); });
    if (!space) return std::nullopt;
    return std::pair(space->primaries, space->transfer);
  }
  std::optional<std::string> container_damage() {
    std::string damage = locked([&] { return reader_->container_damage(); });
    return damage.empty() ? std::nullopt : std::optional(std::move(damage));
  }
  std::uint64_t frames_read() const { return frames_; }
  nb::str path() const { return file_system_str(path_.native()); }

 private:
  std::filesystem::path path_;
  std::uint64_t max_pixels_;
  std::unique_ptr<io::FrameReader> reader_;
  std::atomic<std::uint64_t> frames_ = 0;  // read without the lock
  std::mutex mutex_;
};

// audio_from must name a file to copy the sound from: a missing one, or a folder, is an error here rather than a
// note after the first frame. A FIFO keeps the writer's note: the sound cannot be read beside the frames.
void check_audio_source(const std::filesystem::path& source) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(source, error);
  if (error) throw io::IoError(source, "audio_from cannot be read: " + error.message(), error);
  if (!std::filesystem::is_regular_file(status) && !std::filesystem::is_fifo(status)) {
    throw io::IoError(source, "audio_from is not a file (a folder, socket or device)");
  }
}

// Frames into a video file, as `imgpipe stream` writes one: written under a temporary name and renamed into place
// by close(); a writer dropped or left by an exception leaves nothing under the name.
class VideoWriter {
 public:
  VideoWriter(const std::filesystem::path& path, double fps, bool overwrite,
              const std::optional<std::filesystem::path>& audio_from,
              const std::optional<std::pair<std::int64_t, std::int64_t>>& display_aspect,
              const std::optional<std::pair<int, int>>& color_space)
      : path_(path) {
    if (!(fps >= io::kMinFps && fps <= io::kMaxFps)) {  // NaN too
      char text[112];
      std::snprintf(text, sizeof text, "fps %g: the frame rate must be at least %g and at most %g", fps, io::kMinFps,
                    io::kMaxFps);
      throw nb::value_error(text);
    }
    // As the command refuses them before reading a frame: other names would fail only once written to or closed.
    if (const std::string extension = io::lowercase_extension(path); !io::is_video_output_extension(extension)) {
      throw nb::value_error(("'" + path.string() + "': imgpipe writes videos as .mp4, .mkv, .mov or .avi").c_str());
    }
    std::error_code error;
    if (!overwrite && std::filesystem::exists(std::filesystem::symlink_status(path, error))) {
      throw io::IoError(path, "exists; overwrite=True replaces it (once the new video is complete)");
    }
    std::optional<DisplayAspect> shown_as;
    if (display_aspect) {
      constexpr std::int64_t kLargestTerm = std::int64_t{1} << 31;
      const auto [width, height] = *display_aspect;
      shown_as =
          width <= kLargestTerm && height <= kLargestTerm ? imgpipe::display_aspect(width, height) : std::nullopt;
      if (!shown_as) throw nb::value_error("display_aspect: (width, height), both above 0 and at most 2**31");
    }
    std::optional<io::RgbColorSpace> rgb_color_space;
    if (color_space) {
      const auto [primaries, transfer] = *color_space;
      if (!io::h273_defines_primaries(primaries) || !io::h273_defines_transfer(transfer)) {
        throw nb::value_error(("color_space (" + std::to_string(primaries) + ", " + std::to_string(transfer) +
                               "): (primaries, transfer) as ITU-T H.273 defines them, e.g. (1, 1) for BT.709, "
                               "(9, 16) for BT.2020 with PQ")
                                  .c_str());
      }
      rgb_color_space = io::RgbColorSpace{primaries, transfer};
    }
    if (audio_from) check_audio_source(*audio_from);
    writer_ =
        io::open_video_writer_at_first_frame(path, fps, overwrite ? io::Existing::replace : io::Existing::keep,
                                             audio_from.value_or(std::filesystem::path()), {shown_as, rgb_color_space});
  }

  static constexpr double kLatestFrameSeconds = 1e9;  // about 32 years either way

  // `frame` at `seconds` (None: 1 / fps after the frame before).
  void write(const nb::handle& frame_object, std::optional<double> seconds) {
    const Frames frame = cast_frames(frame_object);
    const Shape shape = shape_of(frame);
    if (shape.batch || frame.device_type() != nb::device::cpu::value) {
      throw nb::value_error("write takes one host frame of shape (H, W, 3)");
    }
    // A time the file's 1/90000 s clock can hold; a NaN or a time past that would leave the muxer a frame it
    // refuses, and only close() would say so, losing every frame.
    if (seconds && !(std::abs(*seconds) <= kLatestFrameSeconds)) {  // NaN too
      throw nb::value_error(("seconds: " + std::to_string(*seconds) + " is not a time within 1e9 s of 0").c_str());
    }
    nb::gil_scoped_release released;
    const std::lock_guard one_at_a_time(mutex_);  // threads sharing a writer write in turn
    if (!writer_) throw nb::value_error((path_.string() + ": the writer is closed").c_str());
    writer_->write({frame.data(), shape.size}, seconds);
    ++frames_;
  }

  // Completes the file and renames it into place; OSError naming the file where it could not be completed.
  void close() {
    nb::gil_scoped_release released;
    const std::lock_guard one_at_a_time(mutex_);
    if (!writer_) return;
    audio_ = writer_->audio();
    tags_not_declared_ = writer_->tags_not_declared();
    const std::unique_ptr<io::FrameWriter> writer = std::move(writer_);
    writer->close();
  }

  // Without close(): nothing is left under the name.
  void discard() {
    nb::gil_scoped_release released;
    const std::lock_guard one_at_a_time(mutex_);
    writer_.reset();
  }

  std::uint64_t frames_written() const { return frames_; }
  std::string audio() {
    nb::gil_scoped_release released;
    const std::lock_guard one_at_a_time(mutex_);
    return writer_ ? writer_->audio() : audio_;
  }
  std::string tags_not_declared() {
    nb::gil_scoped_release released;
    const std::lock_guard one_at_a_time(mutex_);
    return writer_ ? writer_->tags_not_declared() : tags_not_declared_;
  }

 private:
  std::filesystem::path path_;
  std::unique_ptr<io::FrameWriter> writer_;
  std::string audio_;  // what the writer said of the sound, kept once it is closed
  std::string tags_not_declared_;  // and of the display tags
  std::mutex mutex_;
  std::atomic<std::uint64_t> frames_ = 0;  // read without the lock
};

// The bytes of the file the batch job would write for `extension` (".png", ".jpg", ".ppm", ...).
nb::bytes encode(const nb::object& frame_object, const std::string& extension, int quality) {
  if (quality < 1 || quality > 100) throw nb::value_error("quality: from 1 to 100");
  const Frames frame = cast_frames(frame_object);
  const Shape shape = shape_of(frame);
  if (shape.batch || frame.device_type() != nb::device::cpu::value) {
    throw nb::value_error("encode takes one host frame of shape (H, W, 3)");
  }
  std::vector<std::uint8_t> bytes;
  {
    nb::gil_scoped_release released;
    bytes = io::encode_image({frame.data(), shape.size}, extension, quality);
  }
  return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

nb::list backends() {
  nb::list list;
  for (const BackendInfo& b : available_backends()) {
    nb::dict d;
    d["name"] = std::string(to_string(b.kind));
    d["compiled_in"] = b.compiled_in;
    d["usable"] = b.usable;
    d["detail"] = b.detail;
    list.append(d);
  }
  return list;
}

// Whether JPEG can be decoded and encoded on the GPU here, and what nvJPEG offers, as `imgpipe backends` says.
nb::dict gpu_jpeg() {
  nb::dict d;
  d["usable"] = io::gpu_jpeg_unavailable().empty();
  d["detail"] = io::describe_gpu_jpeg();
  return d;
}

// OSError with the command's message; where a system call's errno is behind it, with that errno and the file,
// so that Python raises the matching subclass (FileNotFoundError, PermissionError, ...). Python's own text for
// such an error ends with the file's name, so its message is `reason`, the message without the name in front.
void set_os_error(const std::string& message, const std::string& reason, const std::error_code& code,
                  const std::filesystem::path& path) {
  if (!code || (code.category() != std::generic_category() && code.category() != std::system_category())) {
    PyErr_SetObject(PyExc_OSError, file_system_str(message).ptr());
    return;
  }
  const nb::object arguments =
      path.empty() ? nb::make_tuple(code.value(), file_system_str(message))
                   : nb::make_tuple(code.value(), file_system_str(reason), file_system_str(path.native()));
  PyErr_SetObject(PyExc_OSError, arguments.ptr());
}

}  // namespace
}  // namespace imgpipe::python

NB_MODULE(_imgpipe, m) {
  using namespace imgpipe;
  using imgpipe::python::Pipeline;
  m.doc() = "imgpipe: op chains over RGB frames on the CPU (OpenCV) or a CUDA GPU";
  m.attr("__version__") = IMGPIPE_VERSION;
  // As the command without --verbose: the codec libraries print nothing; every failure comes back as an exception
  // in imgpipe's words.
  io::set_library_logging(false);

  // The command's errors as Python's: bad chains and arguments are ValueError (nanobind's default for
  // std::invalid_argument), files that cannot be read or written OSError with the command's message.
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const io::IoError& e) {
      imgpipe::python::set_os_error(e.what(), e.reason(), e.code(), e.path());
    } catch (const std::filesystem::filesystem_error& e) {
      imgpipe::python::set_os_error(e.what(), e.code().message(), e.code(), e.path1());
    } catch (const DeviceOutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

  nb::class_<Pipeline>(m, "Pipeline", "An op chain planned once for a backend, run on frame after frame")
      .def(nb::init<const std::string&, const std::string&, int, bool, std::optional<int>>(), nb::arg("ops"),
           nb::arg("backend") = "auto", nb::arg("slots") = 3, nb::kw_only(), nb::arg("exact") = true,
           nb::arg("device") = nb::none(),
           "ops: the chain, as the command takes it, e.g. \"resize=1280x720,gaussian=5:1.0\". backend: auto "
           "(optimized with a CUDA device, else cpu), cpu, naive or optimized. slots: frames in flight when a "
           "host batch runs through the engine. exact (the default): the GPU backends give the cpu backend's "
           "(OpenCV's) bytes for every op, as the command does; False (the command's --fast): linear resize runs "
           "the fastest kernels, within one level of them. device: the CUDA device the GPU backends run host "
           "frames and run_folder on (as CUDA_VISIBLE_DEVICES numbers them; ValueError for one that is not "
           "there); None: the current device. "
           "Device arrays always run on their own device; the cpu backend ignores it.")
      .def_prop_ro("device", &Pipeline::device, "The CUDA device asked for, or None")
      .def_prop_ro("exact", &Pipeline::exact, "Whether the GPU backends resize exactly as OpenCV does")
      .def_prop_ro("chain", &Pipeline::chain, "The chain as parsed")
      .def_prop_ro("backend", &Pipeline::backend, "The backend it runs on (auto resolved)")
      .def_prop_ro("fallback_notice", &Pipeline::fallback_notice,
                   "Why auto chose cpu (no usable CUDA device), or an empty string")
      .def("output_size", &Pipeline::output_size, nb::arg("size"), "(width, height) out for (width, height) in")
      .def("__call__", &Pipeline::call, nb::arg("frames"), nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("out") = nb::none(),
           "Runs the chain on uint8 RGB frames of shape (H, W, 3), or (N, H, W, 3) for a batch. A NumPy array "
           "gives a new NumPy array. A device array (anything with __dlpack__: CuPy, PyTorch, JAX; or, without "
           "__dlpack__, with __cuda_array_interface__: Numba) is read in place and the result is `out` or a new "
           "device array: a CuPy array for CuPy input, a PyTorch tensor for PyTorch input, else an array that "
           "speaks DLPack (jax.numpy.from_dlpack, cupy.from_dlpack). The work is enqueued on `stream` (an int, or "
           "an object with cuda_stream or ptr; None: the default stream) and not waited for: read the result on "
           "that stream, or synchronize it first; the producer's pending writes are ordered before that stream "
           "(DLPack's handshake, or the stream __cuda_array_interface__ names). Frames must be C-contiguous uint8: "
           "nothing is converted or copied on the way in. Ctrl-C during a host batch raises KeyboardInterrupt once the "
           "frames in flight are done, and the batch's result is dropped.")
      .def("run_folder", &imgpipe::python::run_folder, nb::arg("input_dir"), nb::arg("output_dir"), nb::kw_only(),
           nb::arg("format") = "same", nb::arg("quality") = 95, nb::arg("jobs") = 0, nb::arg("overwrite") = false,
           nb::arg("skip_existing") = false, nb::arg("max_pixels") = io::kDefaultMaxPixels,
           nb::arg("shard") = nb::none(), nb::arg("decoder") = "auto", nb::arg("encoder") = "auto",
           nb::arg("full_chroma") = false, nb::arg("gpu_decode_threads") = io::GpuJpegDecoder::Options{}.decode_threads,
           "Every image under input_dir through the chain into output_dir, as `imgpipe batch` does. Returns "
           "{'done', 'failed', 'skipped', 'files', 'unsupported', 'seconds', 'stage_seconds', 'decoder', "
           "'encoder', 'jpeg_decoded_by', 'gpu_encoded', 'errors': [(path, message)], 'device_failure'}; a bad "
           "file is reported there, not raised. 'stage_seconds' holds the seconds the files spent in each stage "
           "('read', 'submit', 'complete', 'write'), summed over the files. shard=(k, n) keeps shard k of n. "
           "decoder= and encoder= (auto, gpu, cpu) say where JPEG files are decoded and encoded, as the command's "
           "--decoder and --encoder: auto takes nvJPEG on the optimized backend where it runs, gpu insists (ValueError "
           "saying why it cannot); 'decoder' and 'encoder' in the result say which ran, 'jpeg_decoded_by' how "
           "many JPEG files each GPU-side decoder took ({'hardware', 'gpu_hybrid', 'cpu'}; None when decoding on "
           "the CPU). full_chroma: GPU-encoded JPEG in 4:4:4 instead of 4:2:0. gpu_decode_threads (1 to 64): the "
           "threads that hand files to the GPU's hardware JPEG decoder, as --gpu-decode-threads. Ctrl-C (on the main "
           "thread) stops the job as it stops the command: the files in flight are finished, no other is started, "
           "and KeyboardInterrupt is raised. Each file is written under a temporary name and renamed into place "
           "once complete, so the files finished before stay in output_dir, none half written; skip_existing=True "
           "goes on from there.")
      .def("run_files", &imgpipe::python::run_files, nb::arg("input_dir"), nb::arg("files"), nb::arg("output_dir"),
           nb::kw_only(), nb::arg("format") = "same", nb::arg("quality") = 95, nb::arg("jobs") = 0,
           nb::arg("overwrite") = false, nb::arg("skip_existing") = false,
           nb::arg("max_pixels") = io::kDefaultMaxPixels, nb::arg("decoder") = "auto", nb::arg("encoder") = "auto",
           nb::arg("full_chroma") = false, nb::arg("gpu_decode_threads") = io::GpuJpegDecoder::Options{}.decode_threads,
           "run_folder on chosen files of input_dir, given relative to it (as imgpipe.list_images lists them): "
           "one batch of a distributed job whose driver listed the folder once. Same result dict, and Ctrl-C stops "
           "it as it stops run_folder.");
  nb::class_<imgpipe::python::VideoReader>(
      m, "VideoReader",
      "A video file's frames, decoded on the CPU as `imgpipe stream` decodes them there: iterate for (frame, seconds) "
      "pairs, each frame an (H, W, 3) uint8 NumPy array, seconds when the container shows it (None for an "
      "elementary stream, or where the build decodes through OpenCV)")
      .def(nb::init<const std::filesystem::path&, std::uint64_t>(), nb::arg("path"), nb::kw_only(),
           nb::arg("max_pixels") = io::kDefaultMaxPixels,
           "Opens path at its video stream; OSError naming the file when it cannot be opened, or when the frame "
           "size it declares is above max_pixels")
      .def(
          "__iter__", [](imgpipe::python::VideoReader& self) -> imgpipe::python::VideoReader& { return self; },
          nb::rv_policy::reference)
      .def("__next__", &imgpipe::python::VideoReader::next,
           "The next (frame, seconds); OSError naming the file where the stream cannot be read on")
      .def_prop_ro("frame_rate", &imgpipe::python::VideoReader::frame_rate,
                   "Frames per second the file declares, or None")
      .def_prop_ro("frames_expected", &imgpipe::python::VideoReader::frames_expected,
                   "About how many frames the file holds (an MP4's count, else its length times its rate), for a "
                   "progress bar; None where it does not say")
      .def_prop_ro("decoder", &imgpipe::python::VideoReader::decoder,
                   "What decodes the frames, as `imgpipe stream`'s summary names it")
      .def_prop_ro("damaged_frames", &imgpipe::python::VideoReader::damaged_frames,
                   "Numbers (from 0) of the frames read so far that the decoder reported damaged and concealed")
      .def_prop_ro("display_aspect", &imgpipe::python::VideoReader::display_aspect,
                   "(width, height) of the shape an anamorphic video's frames are shown in (their sample aspect "
                   "ratio applied), as VideoWriter's display_aspect takes it; None for square pixels")
      .def_prop_ro("color_space", &imgpipe::python::VideoReader::color_space,
                   "(primaries, transfer) the video declares, as ITU-T H.273 code points (2: unspecified), as "
                   "VideoWriter's color_space takes them: the frames' RGB values are in that colour space, PQ or HLG "
                   "values for an HDR video; None where it declares neither")
      .def_prop_ro("container_damage", &imgpipe::python::VideoReader::container_damage,
                   "The first error the container's demuxer reported so far (a file cut short ends its frames early "
                   "without one), or None")
      .def_prop_ro("frames_read", &imgpipe::python::VideoReader::frames_read, "How many frames were read")
      .def_prop_ro("path", &imgpipe::python::VideoReader::path,
                   "The file, as str (a name that is not UTF-8 as os.fsdecode gives it)");
  nb::class_<imgpipe::python::VideoWriter>(
      m, "VideoWriter",
      "Frames into a video file, as `imgpipe stream` writes one: .mp4, .mkv and .mov through FFmpeg's libraries "
      "(H.264 by libx264 at CRF 18), each frame at its time after the first frame's (the file starts at 0); .avi, "
      "and builds without those libraries, through OpenCV at fps. The file appears under its name only when "
      "close() completes it; as a context manager it is closed at the end of the block, or, when the block "
      "raises, discarded")
      .def(nb::init<const std::filesystem::path&, double, bool, const std::optional<std::filesystem::path>&,
                    const std::optional<std::pair<std::int64_t, std::int64_t>>&,
                    const std::optional<std::pair<int, int>>&>(),
           nb::arg("path"), nb::arg("fps") = 30.0, nb::kw_only(), nb::arg("overwrite") = false,
           nb::arg("audio_from") = nb::none(), nb::arg("display_aspect") = nb::none(),
           nb::arg("color_space") = nb::none(),
           "fps: the rate of frames written without a time (at least 0.001, at most 1000). audio_from: the video file "
           "the "
           "frames come from, whose sound is copied beside them at its times less the first frame's (as `imgpipe "
           "stream` copies it; .mp4, .mkv, .mov). display_aspect: (width, height) of the shape the frames are shown "
           "in, for an anamorphic video (a VideoReader's display_aspect; FFmpeg's writer declares the pixels' "
           "shape, OpenCV's writes square pixels); None: square pixels. color_space: (primaries, transfer) of the "
           "frames' RGB values as ITU-T H.273 code points (a VideoReader's color_space), declared by FFmpeg's "
           "writer; None: unspecified. OSError naming the file when it exists (unless overwrite), or when "
           "audio_from is missing or not a file")
      .def("write", &imgpipe::python::VideoWriter::write, nb::arg("frame"), nb::arg("seconds") = nb::none(),
           "One (H, W, 3) uint8 NumPy frame, shown at `seconds` (None, or a time not after the frame before's: "
           "1 / fps after it; ValueError beyond 1e9 s either way, or NaN); every frame must have the first's size")
      .def("close", &imgpipe::python::VideoWriter::close,
           "Completes the file and renames it into place (no file where no frame was written); OSError naming "
           "the file where it could not be completed, and then nothing is left under its name")
      .def(
          "__enter__", [](imgpipe::python::VideoWriter& self) -> imgpipe::python::VideoWriter& { return self; },
          nb::rv_policy::reference)
      .def(
          "__exit__",
          [](imgpipe::python::VideoWriter& self, const nb::handle& type, const nb::handle&, const nb::handle&) {
            if (type.is_none()) {
              self.close();
            } else {
              self.discard();
            }
          },
          nb::arg("type").none(), nb::arg("value").none(), nb::arg("traceback").none())
      .def_prop_ro("frames_written", &imgpipe::python::VideoWriter::frames_written, "How many frames were written")
      .def_prop_ro("audio", &imgpipe::python::VideoWriter::audio,
                   "What became of audio_from's sound once the first frame is written: 'audio copied (aac)', "
                   "'audio not carried: ...', or '' where there is none")
      .def_prop_ro("tags_not_declared", &imgpipe::python::VideoWriter::tags_not_declared,
                   "Once the first frame is written, what of display_aspect and color_space the file does not declare "
                   "(OpenCV's writer, for .avi or in builds without FFmpeg's libraries, declares neither), or ''");
  m.def("decode", &imgpipe::python::decode, nb::arg("data"), nb::kw_only(),
        nb::arg("max_pixels") = io::kDefaultMaxPixels,
        "An image file's bytes (bytes or any contiguous bytes-like object; PPM, or PNG, JPEG, ... where the build has "
        "OpenCV) as an (H, W, 3) uint8 NumPy array, decoded as the batch job decodes files (grayscale to RGB, EXIF "
        "orientation applied)");
  m.def("encode", &imgpipe::python::encode, nb::arg("frame"), nb::arg("extension") = ".png", nb::kw_only(),
        nb::arg("quality") = 95, "The bytes of the image file the batch job would write for `extension`");
  m.def("list_images", &imgpipe::python::list_images, nb::arg("input_dir"),
        "The images under input_dir, relative to it and sorted, as the batch job walks it; a name that is not "
        "UTF-8 comes back as os.fsdecode gives it, and leads back to its file as a path argument here");
  m.def("list_image_entries", &imgpipe::python::list_image_entries, nb::arg("input_dir"),
        "list_images as [(name, problem)]: problem is '' for a file to read, else why the entry, named like an "
        "image, cannot be read as one (a folder, a broken link, a FIFO), as the batch job reports it");
  m.def("plan_outputs", &imgpipe::python::plan_outputs, nb::arg("input_dir"), nb::arg("output_dir"),
        nb::arg("files") = nb::none(), nb::kw_only(), nb::arg("format") = "same", nb::arg("overwrite") = false,
        nb::arg("skip_existing") = false, nb::arg("remote_input") = false,
        "The plan `imgpipe batch` (and run_folder, or run_files for `files`) makes before writing anything: "
        "[(name, output, skip, error)], one per image under input_dir as the batch job lists it (or per name of "
        "`files`, relative to input_dir), in that order. output: its output path under output_dir. skip: True "
        "where the output exists and skip_existing=True skips it. error: '' for a file to write, else the batch "
        "job's message for a file that will not be: an entry that cannot be read as an image file, a path leaving "
        "input_dir, an output another input already makes, an output that is a folder or that another output "
        "needs as its folder, an existing output (unless overwrite=True or skip_existing=True). ValueError, as "
        "run_folder raises it, where output_dir is input_dir or inside it or holds it, compared by identity so "
        "that a link or a bind mount counts. remote_input=True: input_dir is a prefix elsewhere (an object-store "
        "URL), so only the outputs' rules apply, to the names in `files` (required)");
  m.def("write_output", &imgpipe::python::write_output, nb::arg("output"), nb::arg("data"), nb::kw_only(),
        nb::arg("input_dir").none(), nb::arg("overwrite") = false,
        "Writes `data` (an encoded image file's bytes, as encode gives them, or any contiguous bytes-like object) to "
        "`output` as the batch job writes each output: refused (OSError naming the output), before anything is "
        "made, where it is or names a folder, or where the folder it goes in leads into input_dir through a link or "
        "a mount (input_dir=None: inputs from no folder here, nothing to check); that folder created; the bytes "
        "written to a temporary name beside it (0666 less the umask) and renamed into place once complete. "
        "overwrite=False never replaces an existing file, even one that appears meanwhile (where the "
        "file system has no hard links, FAT or SMB, a check before the rename); a device, FIFO or socket is "
        "written into, never renamed over");
  m.def("gpu_jpeg", &imgpipe::python::gpu_jpeg,
        "Whether run_folder can decode and encode JPEG on the GPU here (nvJPEG and a CUDA device), and what "
        "nvJPEG offers, one line each: {'usable', 'detail': [...]}");
  m.def("backends", &imgpipe::python::backends,
        "What is compiled in and usable here: [{'name', 'compiled_in', 'usable', 'detail'}]");
}
