// RAII owners for every CUDA handle imgpipe uses. Move-only; destructors never throw.
// Raw cudaMalloc/cudaFree/cudaMallocHost appear in cuda_resources.cpp only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace imgpipe::cuda {

template <typename Handle, void (*Destroy)(Handle) noexcept>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle h) : handle_(h) {}
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  Handle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != Handle{}; }
  void reset() noexcept {
    if (handle_ != Handle{}) Destroy(std::exchange(handle_, Handle{}));
  }

 private:
  Handle handle_{};
};

void destroy_stream(cudaStream_t s) noexcept;
void destroy_event(cudaEvent_t e) noexcept;
void destroy_texture(cudaTextureObject_t t) noexcept;

// A non-blocking stream: it never synchronises with the legacy default stream.
class Stream : public UniqueHandle<cudaStream_t, destroy_stream> {
 public:
  using UniqueHandle::UniqueHandle;
  static Stream create();
  void synchronize() const;
};

class Event : public UniqueHandle<cudaEvent_t, destroy_event> {
 public:
  using UniqueHandle::UniqueHandle;
  static Event create(bool timing = false);
  void record(cudaStream_t stream) const;
  void synchronize() const;
  // Milliseconds between two recorded, completed timing events.
  static float elapsed_ms(const Event& start, const Event& stop);
};

using TextureObject = UniqueHandle<cudaTextureObject_t, destroy_texture>;

// Makes `device` the calling thread's current device for the guard's scope, then restores the one before: every
// CUDA call on a stream, buffer or plan of a device must run with that device current.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device);
  ~CurrentDevice();
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// The memory kinds a GrowableBuffer holds, each with its allocation (throws CudaError) and its release.
//   DeviceMemory:  linear device memory.
//   PinnedMemory:  page-locked host memory, so copies can run asynchronously at full PCIe rate; on a host of
//                  several NUMA nodes, on the node nearest the current device where the driver says which
//                  (allocate_pinned_on_node), else cudaMallocHost's.
//   ManagedMemory: unified memory, visible to host and device; the engine prefetches it to where it is used next.
struct DeviceMemory {
  static void* allocate(std::size_t bytes);
  static void release(void* p) noexcept;
};
struct PinnedMemory {
  static void* allocate(std::size_t bytes);
  static void release(void* p) noexcept;
};
struct ManagedMemory {
  static void* allocate(std::size_t bytes);
  static void release(void* p) noexcept;
};

// The host NUMA node nearest the current device, where the driver says which and can allocate pinned memory on
// a chosen node (cudaDevAttrHostNumaId, cudaDevAttrHostNumaMemoryPoolsSupported); -1 otherwise.
int nearest_host_numa_node();
// Page-locked host memory on host NUMA node `node`, from a pinned memory pool on that node that every device may
// read and write; PinnedMemory::release gives it back. Throws CudaError where the driver cannot.
void* allocate_pinned_on_node(std::size_t bytes, int node);

// `capacity()` bytes of Memory; grow() reallocates only when asked for more than it holds, and then keeps none of
// the old contents (the old block is freed first, so the peak stays one buffer).
template <class Memory>
class GrowableBuffer {
 public:
  GrowableBuffer() = default;
  explicit GrowableBuffer(std::size_t bytes) { grow(bytes); }
  void grow(std::size_t bytes) {
    if (bytes <= capacity_) return;
    ptr_.reset();
    capacity_ = 0;
    ptr_ = UniqueHandle<void*, &Memory::release>(Memory::allocate(bytes));
    capacity_ = bytes;
  }
  std::uint8_t* data() const noexcept { return static_cast<std::uint8_t*>(ptr_.get()); }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  UniqueHandle<void*, &Memory::release> ptr_;
  std::size_t capacity_ = 0;
};

using DeviceBuffer = GrowableBuffer<DeviceMemory>;
using PinnedBuffer = GrowableBuffer<PinnedMemory>;
using ManagedBuffer = GrowableBuffer<ManagedMemory>;

constexpr int div_up(int a, int b) { return (a + b - 1) / b; }

}  // namespace imgpipe::cuda
