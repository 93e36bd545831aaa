#include "gpu_jpeg.hpp"

#include "chain.hpp"
#include "device_resources.hpp"
#include "gpu_backend.hpp"
#include "image_file.hpp"
#include "image_header.hpp"
#include "io_error.hpp"
#include "jpeg_planes.hpp"
#include "ppm.hpp"

#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>
#include <utility>

namespace imgpipe::io {
namespace {

const char* status_name(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "not supported on this GPU";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
  }
  return "unknown status";
}

std::string failed(const char* call, nvjpegStatus_t status) {
  return std::string(call) + " failed: " + status_name(status) + " (nvJPEG status " +
         std::to_string(static_cast<int>(status)) + ")";
}

void check_nvjpeg(nvjpegStatus_t status, const char* call) {
  if (status != NVJPEG_STATUS_SUCCESS) throw std::runtime_error("nvJPEG: " + failed(call, status));
}

// RAII for nvJPEG's handles; destructors never throw.
void destroy_handle(nvjpegHandle_t h) noexcept { nvjpegDestroy(h); }
void destroy_state(nvjpegJpegState_t s) noexcept { nvjpegJpegStateDestroy(s); }
void destroy_jpeg_stream(nvjpegJpegStream_t s) noexcept { nvjpegJpegStreamDestroy(s); }
void destroy_encoder_state(nvjpegEncoderState_t s) noexcept { nvjpegEncoderStateDestroy(s); }
void destroy_encoder_params(nvjpegEncoderParams_t p) noexcept { nvjpegEncoderParamsDestroy(p); }
void destroy_decoder(nvjpegJpegDecoder_t d) noexcept { nvjpegDecoderDestroy(d); }
void destroy_pinned_buffer(nvjpegBufferPinned_t b) noexcept { nvjpegBufferPinnedDestroy(b); }
void destroy_device_buffer(nvjpegBufferDevice_t b) noexcept { nvjpegBufferDeviceDestroy(b); }
void destroy_decode_params(nvjpegDecodeParams_t p) noexcept { nvjpegDecodeParamsDestroy(p); }
using Handle = UniqueHandle<nvjpegHandle_t, destroy_handle>;
using State = UniqueHandle<nvjpegJpegState_t, destroy_state>;
using JpegStream = UniqueHandle<nvjpegJpegStream_t, destroy_jpeg_stream>;
using EncoderState = UniqueHandle<nvjpegEncoderState_t, destroy_encoder_state>;
using EncoderParams = UniqueHandle<nvjpegEncoderParams_t, destroy_encoder_params>;
using Decoder = UniqueHandle<nvjpegJpegDecoder_t, destroy_decoder>;
using PinnedBuffer = UniqueHandle<nvjpegBufferPinned_t, destroy_pinned_buffer>;
using NvjpegDeviceBuffer = UniqueHandle<nvjpegBufferDevice_t, destroy_device_buffer>;
using DecodeParams = UniqueHandle<nvjpegDecodeParams_t, destroy_decode_params>;

Handle create_handle(nvjpegBackend_t backend) {
  nvjpegHandle_t handle = nullptr;
  check_nvjpeg(nvjpegCreateEx(backend, nullptr, nullptr, 0, &handle), "nvjpegCreateEx");
  return Handle(handle);
}

State create_state(const Handle& handle) {
  nvjpegJpegState_t state = nullptr;
  check_nvjpeg(nvjpegJpegStateCreate(handle.get(), &state), "nvjpegJpegStateCreate");
  return State(state);
}

int current_device() {
  int device = 0;
  check_device(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

// The chain ops that turn a stored image upright for its EXIF orientation, as OpenCV's imread does; nullptr
// when it is stored upright.
const char* upright_ops(nvjpegExifOrientation_t orientation) {
  switch (orientation) {
    case NVJPEG_ORIENTATION_FLIP_HORIZONTAL: return "flip=h";
    case NVJPEG_ORIENTATION_ROTATE_180: return "rotate=180";
    case NVJPEG_ORIENTATION_FLIP_VERTICAL: return "flip=v";
    case NVJPEG_ORIENTATION_TRANSPOSE: return "transpose";
    case NVJPEG_ORIENTATION_ROTATE_90: return "rotate=90";
    case NVJPEG_ORIENTATION_TRANSVERSE: return "rotate=270,flip=h";
    case NVJPEG_ORIENTATION_ROTATE_270: return "rotate=270";
    default: return nullptr;
  }
}

bool swaps_axes(nvjpegExifOrientation_t orientation) {
  return orientation == NVJPEG_ORIENTATION_TRANSPOSE || orientation == NVJPEG_ORIENTATION_ROTATE_90 ||
         orientation == NVJPEG_ORIENTATION_TRANSVERSE || orientation == NVJPEG_ORIENTATION_ROTATE_270;
}

nvjpegImage_t interleaved(std::uint8_t* data, Size size) {
  nvjpegImage_t image{};
  image.channel[0] = data;
  image.pitch[0] = static_cast<std::size_t>(size.width) * 3;
  return image;
}

// The chroma layouts whose planes the hardware engines hand over as libjpeg makes them (measured on the H200:
// converted by libjpeg's rules, every sample photo, odd sizes included, came out as imread's bytes). The engines
// decode the others (4:2:2, 4:4:0, 4:1:1...) to RGB themselves: a 4:2:2 file in a planar batch measured 8x
// slower per batch than as RGB.
std::optional<JpegChroma> planar_chroma(nvjpegChromaSubsampling_t subsampling) {
  switch (subsampling) {
    case NVJPEG_CSS_444: return JpegChroma::full;
    case NVJPEG_CSS_420: return JpegChroma::half;
    case NVJPEG_CSS_GRAY: return JpegChroma::none;
    default: return std::nullopt;
  }
}

std::int64_t nanoseconds_between(std::chrono::steady_clock::time_point start,
                                 std::chrono::steady_clock::time_point end) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
}

std::int64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return nanoseconds_between(start, std::chrono::steady_clock::now());
}

// Waits for `stream`; false when the GPU work on it failed.
bool finished_cleanly(cudaStream_t stream) { return cudaStreamSynchronize(stream) == cudaSuccess; }

}  // namespace

std::string gpu_jpeg_unavailable() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return "no usable CUDA device";
  return {};
}

std::vector<std::string> describe_gpu_jpeg() {
  if (const std::string why = gpu_jpeg_unavailable(); !why.empty()) return {"GPU JPEG: unavailable (" + why + ")"};
  int major = 0, minor = 0, patch = 0;
  nvjpegGetProperty(MAJOR_VERSION, &major);
  nvjpegGetProperty(MINOR_VERSION, &minor);
  nvjpegGetProperty(PATCH_LEVEL, &patch);
  const std::string version = "nvJPEG " + std::to_string(major) + "." + std::to_string(minor) + "." +
                              std::to_string(patch);
  nvjpegHandle_t probe = nullptr;
  const nvjpegStatus_t hardware = nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &probe);
  std::string hardware_api = "batched";
  if (hardware == NVJPEG_STATUS_SUCCESS) {
    nvjpegJpegDecoder_t decoupled = nullptr;
    if (nvjpegDecoderCreate(probe, NVJPEG_BACKEND_HARDWARE, &decoupled) == NVJPEG_STATUS_SUCCESS) {
      hardware_api = "decoupled decoder";
      nvjpegDecoderDestroy(decoupled);
    }
    nvjpegDestroy(probe);
  }
  return {
      "JPEG decode: " +
          (hardware == NVJPEG_STATUS_SUCCESS
               ? "GPU hardware engines (" + hardware_api + "), then GPU hybrid, then CPU"
               : "GPU hybrid (no hardware JPEG decoder: " + std::string(status_name(hardware)) + "), then CPU") +
          " (" + version + ")",
      "JPEG encode: GPU, on the SMs (" + version + ")",
  };
}

// ---------------------------------------------------------------------------------------------------------
// Decoder

struct GpuJpegDecoder::Impl {
  // One file waiting for the hardware engines; a lane or a decode thread fills in the outcome.
  struct Request {
    enum class Outcome { decoded, refused, failed };  // refused: the hardware backend does not take the file
    const unsigned char* data = nullptr;
    std::size_t length = 0;
    nvjpegJpegStream_t parsed = nullptr;  // the caller's parse: the support check and the decoupled decode read it
    nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGBI;  // NVJPEG_OUTPUT_YUV: the caller converts the planes
    nvjpegImage_t image{};                             // where the decoded image goes, as `format` lays it out
    Outcome outcome = Outcome::failed;
    std::binary_semaphore finished{0};  // released once `outcome` is set
  };

  // One decoder state of a decode thread, with its own buffers, parameters and stream, and the file it is
  // decoding. A thread's states take files in turn, so that its next file's host stage runs while the engines
  // decode the last; a state's file is waited for when its turn comes round again, or when no file waits.
  struct DecoupledSlot {
    PinnedBuffer pinned;
    NvjpegDeviceBuffer buffer;
    DecodeParams params;
    State state;  // made again after a failed decode, which can leave it unusable
    DeviceStream stream = DeviceStream::create();
    Request* request = nullptr;
  };
  struct DecodeThread {
    std::vector<std::unique_ptr<DecoupledSlot>> slots;
    std::jthread thread;
  };

  // A hardware decode lane: its own handle (lanes never share a hardware handle across threads), one state
  // initialised again for each batch's size, a stream and a thread.
  struct Lane {
    Handle handle;
    State state;
    DeviceStream stream = DeviceStream::create();
    std::jthread thread;
  };

  // What one decode() call works with: a parsed stream, a GPU-hybrid state (made when first needed: nvJPEG's
  // states are slow to make), a stream, room for the hardware's YCbCr planes and for an image that is turned
  // upright after decoding. Pooled, one per thread decoding at once, so a job makes each once.
  struct Scratch {
    JpegStream parsed;
    State hybrid_state;
    DeviceStream stream = DeviceStream::create();
    DeviceBuffer planes;
    DeviceBuffer stored;
  };

  Options options;
  int device = current_device();
  Handle hybrid = create_handle(NVJPEG_BACKEND_GPU_HYBRID);
  std::vector<std::unique_ptr<Lane>> lanes;
  Decoder hardware_decoder;  // the decoupled API's, with HardwareApi::decoupled where nvJPEG has it
  std::vector<std::unique_ptr<DecodeThread>> decode_threads;

  std::mutex scratch_mutex;
  std::vector<std::unique_ptr<Scratch>> idle_scratch;

  std::mutex queue_mutex;
  std::condition_variable queued;
  std::deque<Request*> queue;
  std::size_t arriving = 0;  // callers parsing a file they will queue
  bool stopping = false;

  std::atomic<std::uint64_t> batches = 0, hardware_files = 0;
  std::atomic<std::int64_t> host_ns = 0, waiting_ns = 0;

  explicit Impl(const Options& o) : options(o) {
    if (options.hardware_api == HardwareApi::decoupled) start_decode_threads();
    if (decode_threads.empty()) start_lanes();
  }

  ~Impl() {
    {
      std::lock_guard lock(queue_mutex);
      stopping = true;
    }
    queued.notify_all();
    for (auto& lane : lanes) lane->thread = {};  // joins
    for (auto& thread : decode_threads) thread->thread = {};
  }

  bool has_hardware() const { return !lanes.empty() || !decode_threads.empty(); }

  void start_lanes() {
    for (int i = 0; i < std::max(1, options.lanes); ++i) {
      nvjpegHandle_t handle = nullptr;
      if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &handle) != NVJPEG_STATUS_SUCCESS) break;
      auto lane = std::make_unique<Lane>();
      lane->handle = Handle(handle);
      lane->state = create_batched_state(lane->handle);
      lanes.push_back(std::move(lane));
    }
    for (auto& lane : lanes) lane->thread = std::jthread([this, l = lane.get()] { run_lane(*l); });
  }

  // The decoupled hardware decoder and its threads, every state made now (states made while decoding would hold
  // up the files behind them); none where nvJPEG cannot make them, and the batched lanes decode instead.
  void start_decode_threads() {
    nvjpegJpegDecoder_t decoder = nullptr;
    if (nvjpegDecoderCreate(hybrid.get(), NVJPEG_BACKEND_HARDWARE, &decoder) != NVJPEG_STATUS_SUCCESS) return;
    hardware_decoder = Decoder(decoder);
    for (int t = 0; t < std::max(1, options.decode_threads); ++t) {
      auto thread = std::make_unique<DecodeThread>();
      for (int i = 0; i < std::max(1, options.states_per_thread); ++i) {
        auto slot = std::make_unique<DecoupledSlot>();
        nvjpegBufferPinned_t pinned = nullptr;
        nvjpegBufferDevice_t buffer = nullptr;
        nvjpegDecodeParams_t params = nullptr;
        if (nvjpegBufferPinnedCreate(hybrid.get(), nullptr, &pinned) != NVJPEG_STATUS_SUCCESS) break;
        slot->pinned = PinnedBuffer(pinned);
        if (nvjpegBufferDeviceCreate(hybrid.get(), nullptr, &buffer) != NVJPEG_STATUS_SUCCESS) break;
        slot->buffer = NvjpegDeviceBuffer(buffer);
        if (nvjpegDecodeParamsCreate(hybrid.get(), &params) != NVJPEG_STATUS_SUCCESS) break;
        slot->params = DecodeParams(params);
        if (!make_decoder_state(*slot)) break;
        thread->slots.push_back(std::move(slot));
      }
      if (thread->slots.size() != static_cast<std::size_t>(std::max(1, options.states_per_thread))) {
        decode_threads.clear();
        hardware_decoder.reset();
        return;
      }
      decode_threads.push_back(std::move(thread));
    }
    for (auto& thread : decode_threads) {
      thread->thread = std::jthread([this, t = thread.get()] { run_decode_thread(*t); });
    }
  }

  bool make_decoder_state(DecoupledSlot& slot) const {
    nvjpegJpegState_t state = nullptr;
    if (nvjpegDecoderStateCreate(hybrid.get(), hardware_decoder.get(), &state) != NVJPEG_STATUS_SUCCESS) {
      return false;
    }
    slot.state = State(state);
    return nvjpegStateAttachPinnedBuffer(state, slot.pinned.get()) == NVJPEG_STATUS_SUCCESS &&
           nvjpegStateAttachDeviceBuffer(state, slot.buffer.get()) == NVJPEG_STATUS_SUCCESS;
  }

  std::unique_ptr<Scratch> take_scratch() {
    {
      std::lock_guard lock(scratch_mutex);
      if (!idle_scratch.empty()) {
        auto s = std::move(idle_scratch.back());
        idle_scratch.pop_back();
        return s;
      }
    }
    auto s = std::make_unique<Scratch>();
    nvjpegJpegStream_t parsed = nullptr;
    check_nvjpeg(nvjpegJpegStreamCreate(hybrid.get(), &parsed), "nvjpegJpegStreamCreate");
    s->parsed = JpegStream(parsed);
    return s;
  }

  void give_back(std::unique_ptr<Scratch> s) {
    std::lock_guard lock(scratch_mutex);
    idle_scratch.push_back(std::move(s));
  }

  // Counts a caller from its arrival in decode() until it queues its file for the hardware or leaves without
  // one, so that the lanes know more files are on their way.
  class Arrival {
   public:
    explicit Arrival(Impl& impl) : impl_(impl) {
      std::lock_guard lock(impl_.queue_mutex);
      ++impl_.arriving;
    }
    Arrival(const Arrival&) = delete;
    Arrival& operator=(const Arrival&) = delete;
    ~Arrival() {
      if (!queued_) leave(nullptr);
    }
    void queue(Request& request) {
      leave(&request);
      queued_ = true;
    }

   private:
    void leave(Request* request) {
      {
        std::lock_guard lock(impl_.queue_mutex);
        --impl_.arriving;
        if (request) impl_.queue.push_back(request);
      }
      impl_.queued.notify_all();
    }
    Impl& impl_;
    bool queued_ = false;
  };

  // The hardware engines decode larger batches faster per file, so a lane that finds files waiting while other
  // callers are still parsing theirs waits for them, for up to this long.
  static constexpr std::chrono::microseconds kFillWait{1000};

  // A state for batched hardware decoding, its memory pool allocated now for a batch of 4:2:0 1080p photos rather
  // than during the first batches (it grows if larger images come); empty when nvJPEG cannot make one. One state
  // initialised again for each batch's size: a state per size would cost a slow initialisation for each.
  State create_batched_state(const Handle& handle) const {
    nvjpegJpegState_t state = nullptr;
    if (nvjpegJpegStateCreate(handle.get(), &state) != NVJPEG_STATUS_SUCCESS) return State();
    nvjpegDecodeBatchedPreAllocate(handle.get(), state, std::max(1, options.max_batch), 1920, 1080, NVJPEG_CSS_420,
                                   NVJPEG_OUTPUT_YUV);
    return State(state);
  }

  // Waits for a file, then moves the waiting files (up to max_batch) into `requests`; false once the decoder is
  // stopping and none wait. Where callers are still parsing files they will queue, first waits briefly for them,
  // so that the batch fills.
  bool take(std::vector<Request*>& requests) {
    const auto max_batch = static_cast<std::size_t>(std::max(1, options.max_batch));
    std::unique_lock lock(queue_mutex);
    queued.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty()) return false;
    queued.wait_for(lock, kFillWait, [&] { return stopping || queue.size() >= max_batch || arriving == 0; });
    const auto count = static_cast<std::ptrdiff_t>(std::min(queue.size(), max_batch));
    requests.assign(queue.begin(), queue.begin() + count);
    queue.erase(queue.begin(), queue.begin() + count);
    return true;
  }

  // The next waiting file, or nullptr: with `wait`, once the decoder is stopping and none wait; without, at
  // once when none waits.
  Request* take_one(bool wait) {
    std::unique_lock lock(queue_mutex);
    if (wait) queued.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty()) return nullptr;
    Request* request = queue.front();
    queue.pop_front();
    return request;
  }

  // Takes files one at a time into its states in turn and decodes each through the decoupled API. When no file
  // waits, it finishes the files in flight rather than leave their callers waiting for more files to come.
  void run_decode_thread(DecodeThread& thread) {
    const bool usable = cudaSetDevice(device) == cudaSuccess;  // the hardware backend needs the device current
    const std::size_t states = thread.slots.size();
    std::size_t turn = 0;
    for (;;) {
      const bool in_flight = std::ranges::any_of(thread.slots, [](const auto& slot) { return slot->request; });
      Request* request = take_one(!in_flight);
      if (!request) {
        if (!in_flight) return;
        for (std::size_t i = 0; i < states; ++i) complete(*thread.slots[(turn + i) % states]);
        continue;
      }
      DecoupledSlot& slot = *thread.slots[turn++ % states];
      complete(slot);
      if (usable) {
        submit(slot, *request);
      } else {
        finish(*request, Request::Outcome::refused);
      }
    }
  }

  // Hands one file to the engines in `slot`, or finishes it at once when the hardware does not take it or a call
  // fails.
  void submit(DecoupledSlot& slot, Request& request) {
    nvjpegDecodeParams_t params = slot.params.get();
    int unsupported = 1;  // nvJPEG answers 0 for a file it supports
    if (nvjpegDecodeParamsSetOutputFormat(params, request.format) != NVJPEG_STATUS_SUCCESS ||
        nvjpegDecoderJpegSupported(hardware_decoder.get(), request.parsed, params, &unsupported) !=
            NVJPEG_STATUS_SUCCESS ||
        unsupported != 0) {
      finish(request, Request::Outcome::refused);
      return;
    }
    if (!slot.state && !make_decoder_state(slot)) {
      finish(request, Request::Outcome::failed);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    nvjpegImage_t image = request.image;
    const bool submitted =
        nvjpegDecodeJpegHost(hybrid.get(), hardware_decoder.get(), slot.state.get(), params, request.parsed) ==
            NVJPEG_STATUS_SUCCESS &&
        nvjpegDecodeJpegTransferToDevice(hybrid.get(), hardware_decoder.get(), slot.state.get(), request.parsed,
                                         slot.stream.get()) == NVJPEG_STATUS_SUCCESS &&
        nvjpegDecodeJpegDevice(hybrid.get(), hardware_decoder.get(), slot.state.get(), &image, slot.stream.get()) ==
            NVJPEG_STATUS_SUCCESS;
    host_ns.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);
    slot.request = &request;
    if (!submitted) complete(slot, false);
  }

  // Waits for the file in flight in `slot`, if any, and finishes it: decoded when its GPU work finished cleanly
  // and `submitted`. A failure leaves the slot's state to be made again.
  void complete(DecoupledSlot& slot, bool submitted = true) {
    if (!slot.request) return;
    const auto start = std::chrono::steady_clock::now();
    const bool decoded = finished_cleanly(slot.stream.get()) && submitted;
    waiting_ns.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);
    hardware_files.fetch_add(1, std::memory_order_relaxed);
    if (!decoded) slot.state.reset();
    finish(*std::exchange(slot.request, nullptr), decoded ? Request::Outcome::decoded : Request::Outcome::failed);
  }

  // Takes batches from the queue and decodes them: the files the hardware backend does not take go back to
  // their threads at once, a batch's files once it is decoded. nvjpegDecodeBatched returns only once the engines
  // are nearly done (on the H200 the call took 99% of the time of a loop of batches), so a second batch launched
  // from this thread cannot overlap the first; nor did a second lane help (docs/gpu-jpeg.md).
  void run_lane(Lane& lane) {
    const bool usable = cudaSetDevice(device) == cudaSuccess;  // the hardware backend needs the device current
    std::vector<Request*> batch;
    while (take(batch)) {
      std::erase_if(batch, [&](Request* r) {
        if (usable && hardware_takes(lane, r->parsed)) return false;
        finish(*r, Request::Outcome::refused);
        return true;
      });
      if (batch.empty()) continue;
      const bool decoded = decode_batch(lane, batch);
      batches.fetch_add(1, std::memory_order_relaxed);
      hardware_files.fetch_add(batch.size(), std::memory_order_relaxed);
      for (Request* r : batch) finish(*r, decoded ? Request::Outcome::decoded : Request::Outcome::failed);
    }
  }

  // Decodes the batch's planar files, then its RGB ones, each group as one nvJPEG batch (a batch has one output
  // format). Times the two parts of each: the nvJPEG calls, and the wait for the GPU work they queued.
  bool decode_batch(Lane& lane, const std::vector<Request*>& batch) {
    if (!lane.state) lane.state = create_batched_state(lane.handle);
    bool decoded = static_cast<bool>(lane.state);
    std::vector<const unsigned char*> data;
    std::vector<std::size_t> lengths;
    std::vector<nvjpegImage_t> images;
    for (const nvjpegOutputFormat_t format : {NVJPEG_OUTPUT_YUV, NVJPEG_OUTPUT_RGBI}) {
      data.clear();
      lengths.clear();
      images.clear();
      for (const Request* r : batch) {
        if (r->format != format) continue;
        data.push_back(r->data);
        lengths.push_back(r->length);
        images.push_back(r->image);
      }
      if (!decoded || images.empty()) continue;
      const auto start = std::chrono::steady_clock::now();
      decoded = nvjpegDecodeBatchedInitialize(lane.handle.get(), lane.state.get(), static_cast<int>(images.size()),
                                              1, format) == NVJPEG_STATUS_SUCCESS &&
                nvjpegDecodeBatched(lane.handle.get(), lane.state.get(), data.data(), lengths.data(),
                                    images.data(), lane.stream.get()) == NVJPEG_STATUS_SUCCESS;
      const auto submitted_at = std::chrono::steady_clock::now();
      decoded = finished_cleanly(lane.stream.get()) && decoded;
      host_ns.fetch_add(nanoseconds_between(start, submitted_at), std::memory_order_relaxed);
      waiting_ns.fetch_add(nanoseconds_since(submitted_at), std::memory_order_relaxed);
    }
    if (!decoded) lane.state.reset();  // a failed batch leaves its state unusable: the next one makes another
    return decoded;
  }

  static void finish(Request& request, Request::Outcome outcome) {
    request.outcome = outcome;
    request.finished.release();
  }

  static bool hardware_takes(const Lane& lane, nvjpegJpegStream_t parsed) {
    int unsupported = 1;  // nvJPEG answers 0 for a file it supports
    return nvjpegDecodeBatchedSupported(lane.handle.get(), parsed, &unsupported) == NVJPEG_STATUS_SUCCESS &&
           unsupported == 0;
  }

  // Queues one file for the hardware engines and waits until it is decoded, refused or failed. The
  // image goes to `destination` as RGB, or, for a layout in `planar`, to s.planes and then by libjpeg's rules
  // into `destination`, queued on s.stream.
  Request::Outcome decode_on_hardware(Arrival& arrival, Scratch& s, std::span<const std::uint8_t> jpeg,
                                      std::optional<JpegChroma> planar, std::uint8_t* destination, Size size) {
    Request request{.data = jpeg.data(), .length = jpeg.size(), .parsed = s.parsed.get()};
    JpegPlanes planes{.extent = {size.width, size.height}, .chroma = planar.value_or(JpegChroma::full)};
    if (planar) {
      // nvJPEG writes three planes even for a grayscale file: its chroma planes get room the size of luma.
      const Size chroma = *planar == JpegChroma::none ? size : jpeg_chroma_size(size, *planar);
      s.planes.grow(size.pixels() + 2 * chroma.pixels());
      request.format = NVJPEG_OUTPUT_YUV;
      for (int p = 0; p < 3; ++p) {
        const Size plane = p == 0 ? size : chroma;
        std::uint8_t* start = s.planes.data() + (p == 0 ? 0 : size.pixels() + (p - 1) * chroma.pixels());
        request.image.channel[p] = start;
        request.image.pitch[p] = static_cast<std::size_t>(plane.width);
        planes.plane[p] = start;
        planes.pitch[p] = request.image.pitch[p];
      }
    } else {
      request.image = interleaved(destination, size);
    }
    arrival.queue(request);
    request.finished.acquire();
    if (request.outcome == Request::Outcome::decoded && planar) {
      convert_jpeg_planes(planes, destination, s.stream.get());
    }
    return request.outcome;
  }

  bool decode_hybrid(Scratch& s, std::span<const std::uint8_t> jpeg, std::uint8_t* destination, Size size) {
    if (!s.hybrid_state) s.hybrid_state = create_state(hybrid);  // few files need it; the state is not cheap
    nvjpegImage_t image = interleaved(destination, size);
    const nvjpegStatus_t status = nvjpegDecode(hybrid.get(), s.hybrid_state.get(), jpeg.data(), jpeg.size(),
                                               NVJPEG_OUTPUT_RGBI, &image, s.stream.get());
    const bool decoded = finished_cleanly(s.stream.get()) && status == NVJPEG_STATUS_SUCCESS;
    if (!decoded) s.hybrid_state.reset();  // a failed decode leaves the state unusable
    return decoded;
  }

  JpegDecoder decode(Scratch& s, std::span<const std::uint8_t> jpeg, const DeviceFrameAllocator& allocate,
                     std::uint64_t max_pixels, std::optional<ExifOrientation> known_orientation) {
    check_device(cudaSetDevice(device), "cudaSetDevice");
    Arrival arrival(*this);
    const nvjpegStatus_t parse = nvjpegJpegStreamParse(hybrid.get(), jpeg.data(), jpeg.size(), 0, 0, s.parsed.get());
    if (parse != NVJPEG_STATUS_SUCCESS) {
      throw GpuJpegRefusal("nvJPEG cannot parse it (" + failed("nvjpegJpegStreamParse", parse) + ")", false);
    }
    unsigned width = 0, height = 0;
    if (nvjpegJpegStreamGetFrameDimensions(s.parsed.get(), &width, &height) != NVJPEG_STATUS_SUCCESS ||
        width == 0 || height == 0) {
      throw GpuJpegRefusal("nvJPEG finds no frame header in it", false);
    }
    if (static_cast<std::uint64_t>(width) * height > max_pixels) {
      throw PixelLimitError(pixel_limit_reason(width, height, max_pixels) +
                            "; its JPEG header says so, and nothing was decoded");
    }
    nvjpegChromaSubsampling_t subsampling = NVJPEG_CSS_UNKNOWN;
    if (nvjpegJpegStreamGetChromaSubsampling(s.parsed.get(), &subsampling) != NVJPEG_STATUS_SUCCESS) {
      subsampling = NVJPEG_CSS_UNKNOWN;
    }
    // imread's orientation, as the CPU decoder applies it: nvJPEG's own reading differs on some files (an XMP
    // segment before the Exif one, two Orientation entries), and a file the GPU refuses after allocating must
    // decode on the CPU to the size it allocated.
    const ExifOrientation exif = known_orientation ? *known_orientation : read_image_header(jpeg).orientation;
    nvjpegExifOrientation_t orientation = NVJPEG_ORIENTATION_UNKNOWN;
    if (!exif.ambiguous) {
      if (exif.value >= 1 && exif.value <= 8) orientation = static_cast<nvjpegExifOrientation_t>(exif.value);
    } else if (has_opencv_codecs()) {
      throw GpuJpegRefusal("its EXIF orientation is one only OpenCV's decoder can read", false);
    } else if (nvjpegJpegStreamGetExifOrientation(s.parsed.get(), &orientation) != NVJPEG_STATUS_SUCCESS) {
      orientation = NVJPEG_ORIENTATION_UNKNOWN;
    }

    const Size stored{static_cast<int>(width), static_cast<int>(height)};
    const char* turn_upright = upright_ops(orientation);
    const Size upright = swaps_axes(orientation) ? Size{stored.height, stored.width} : stored;
    const DeviceFrame frame = allocate(upright);
    std::uint8_t* destination = frame.data;
    if (turn_upright) {
      s.stored.grow(stored.rgb_bytes());
      destination = s.stored.data();
    }

    // The hardware reads the bytes where they are: staging them in pinned or device memory measured no faster.
    JpegDecoder used = JpegDecoder::hardware;
    const Request::Outcome hardware =
        !has_hardware() ? Request::Outcome::refused
                        : decode_on_hardware(arrival, s, jpeg, planar_chroma(subsampling), destination, stored);
    if (hardware != Request::Outcome::decoded) {
      used = JpegDecoder::gpu_hybrid;
      if (!decode_hybrid(s, jpeg, destination, stored)) {
        throw GpuJpegRefusal(hardware == Request::Outcome::failed ? "the GPU decoders failed on it"
                                                                  : "the GPU hybrid decoder failed on it",
                             true);
      }
    }
    if (turn_upright) {
      DeviceChain upright_chain(GpuPath::optimized, parse_chain(turn_upright));
      upright_chain.run(destination, stored, frame.data, s.stream.get());
    }
    check_device(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize");
    return used;
  }
};

GpuJpegDecoder::GpuJpegDecoder(const Options& options) {
  if (const std::string why = gpu_jpeg_unavailable(); !why.empty()) throw std::runtime_error("GPU JPEG: " + why);
  impl_ = std::make_unique<Impl>(options);
}

GpuJpegDecoder::~GpuJpegDecoder() = default;

bool GpuJpegDecoder::has_hardware() const { return impl_->has_hardware(); }

GpuJpegDecoder::HardwareActivity GpuJpegDecoder::hardware_activity() const {
  const bool decoupled = !impl_->decode_threads.empty();
  return {.api = decoupled ? HardwareApi::decoupled : HardwareApi::batched,
          .threads = static_cast<int>(decoupled ? impl_->decode_threads.size() : impl_->lanes.size()),
          .files = impl_->hardware_files.load(),
          .batches = impl_->batches.load(),
          .host_seconds = impl_->host_ns.load() * 1e-9,
          .waiting_seconds = impl_->waiting_ns.load() * 1e-9};
}

int GpuJpegDecoder::device() const { return impl_->device; }

JpegDecoder GpuJpegDecoder::decode(std::span<const std::uint8_t> jpeg, const DeviceFrameAllocator& allocate,
                                   std::uint64_t max_pixels, std::optional<ExifOrientation> orientation) {
  std::unique_ptr<Impl::Scratch> scratch = impl_->take_scratch();
  try {
    const JpegDecoder used = impl_->decode(*scratch, jpeg, allocate, max_pixels, orientation);
    impl_->give_back(std::move(scratch));
    return used;
  } catch (...) {
    impl_->give_back(std::move(scratch));
    throw;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Encoder

struct GpuJpegEncoder::Impl {
  struct Lane {
    EncoderState state;
    DeviceStream stream = DeviceStream::create();
  };

  int device = current_device();
  Handle handle = create_handle(NVJPEG_BACKEND_DEFAULT);
  EncoderParams params;
  std::mutex mutex;
  std::condition_variable lane_freed;
  std::vector<std::unique_ptr<Lane>> idle;
  int states = 0;
  std::atomic<std::int64_t> busy_ns = 0;

  explicit Impl(const Options& options) {
    if (options.quality < 1 || options.quality > 100) {
      throw std::invalid_argument("JPEG quality " + std::to_string(options.quality) + " is not in 1..100");
    }
    const DeviceStream setup = DeviceStream::create();
    nvjpegEncoderParams_t p = nullptr;
    check_nvjpeg(nvjpegEncoderParamsCreate(handle.get(), &p, setup.get()), "nvjpegEncoderParamsCreate");
    params = EncoderParams(p);
    check_nvjpeg(nvjpegEncoderParamsSetQuality(p, options.quality, setup.get()), "nvjpegEncoderParamsSetQuality");
    check_nvjpeg(nvjpegEncoderParamsSetSamplingFactors(p, options.full_chroma ? NVJPEG_CSS_444 : NVJPEG_CSS_420,
                                                       setup.get()),
                 "nvjpegEncoderParamsSetSamplingFactors");
    setup.synchronize();
    for (int i = 0; i < std::max(1, options.states); ++i) {
      auto lane = std::make_unique<Lane>();
      nvjpegEncoderState_t state = nullptr;
      check_nvjpeg(nvjpegEncoderStateCreate(handle.get(), &state, lane->stream.get()), "nvjpegEncoderStateCreate");
      lane->state = EncoderState(state);
      idle.push_back(std::move(lane));
    }
    states = static_cast<int>(idle.size());
  }

  std::vector<std::uint8_t> encode(Lane& lane, const DeviceFrame& frame) {
    check_device(cudaSetDevice(device), "cudaSetDevice");
    const nvjpegImage_t source = interleaved(frame.data, frame.size);
    const cudaStream_t stream = lane.stream.get();
    check_nvjpeg(nvjpegEncodeImage(handle.get(), lane.state.get(), params.get(), &source, NVJPEG_INPUT_RGBI,
                                   frame.size.width, frame.size.height, stream),
                 "nvjpegEncodeImage");
    std::size_t length = 0;
    check_nvjpeg(nvjpegEncodeRetrieveBitstream(handle.get(), lane.state.get(), nullptr, &length, stream),
                 "nvjpegEncodeRetrieveBitstream");
    check_device(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<std::uint8_t> bytes(length);
    check_nvjpeg(nvjpegEncodeRetrieveBitstream(handle.get(), lane.state.get(), bytes.data(), &length, stream),
                 "nvjpegEncodeRetrieveBitstream");
    check_device(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    bytes.resize(length);
    return bytes;
  }
};

GpuJpegEncoder::GpuJpegEncoder(const Options& options) {
  if (const std::string why = gpu_jpeg_unavailable(); !why.empty()) throw std::runtime_error("GPU JPEG: " + why);
  impl_ = std::make_unique<Impl>(options);
}

GpuJpegEncoder::~GpuJpegEncoder() = default;

std::vector<std::uint8_t> GpuJpegEncoder::encode(const DeviceFrame& frame) {
  std::unique_ptr<Impl::Lane> lane;
  {
    std::unique_lock lock(impl_->mutex);
    impl_->lane_freed.wait(lock, [&] { return !impl_->idle.empty(); });
    lane = std::move(impl_->idle.back());
    impl_->idle.pop_back();
  }
  auto give_back = [&] {
    {
      std::lock_guard lock(impl_->mutex);
      impl_->idle.push_back(std::move(lane));
    }
    impl_->lane_freed.notify_one();
  };
  try {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::uint8_t> bytes = impl_->encode(*lane, frame);
    impl_->busy_ns.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);
    give_back();
    return bytes;
  } catch (...) {
    give_back();
    throw;
  }
}

double GpuJpegEncoder::busy_seconds() const { return impl_->busy_ns.load() * 1e-9; }

int GpuJpegEncoder::states() const { return impl_->states; }

int GpuJpegEncoder::device() const { return impl_->device; }

}  // namespace imgpipe::io
