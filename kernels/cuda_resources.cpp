#include "cuda_resources.hpp"

#include "cuda_check.hpp"

namespace imgpipe::cuda {

void destroy_stream(cudaStream_t s) noexcept { check_noexcept(cudaStreamDestroy(s), "cudaStreamDestroy"); }
void destroy_event(cudaEvent_t e) noexcept { check_noexcept(cudaEventDestroy(e), "cudaEventDestroy"); }
void destroy_texture(cudaTextureObject_t t) noexcept {
  check_noexcept(cudaDestroyTextureObject(t), "cudaDestroyTextureObject");
}

Stream Stream::create() {
  cudaStream_t s{};
  IMGPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream{s};
}

CurrentDevice::CurrentDevice(int device) {
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&previous_));
  if (device == previous_) return;
  IMGPIPE_CUDA_CHECK(cudaSetDevice(device));
  switched_ = true;
}

CurrentDevice::~CurrentDevice() {
  if (switched_) check_noexcept(cudaSetDevice(previous_), "cudaSetDevice");
}

void Stream::synchronize() const { IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(get())); }

Event Event::create(bool timing) {
  cudaEvent_t e{};
  IMGPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event{e};
}

void Event::record(cudaStream_t stream) const { IMGPIPE_CUDA_CHECK(cudaEventRecord(get(), stream)); }
void Event::synchronize() const { IMGPIPE_CUDA_CHECK(cudaEventSynchronize(get())); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.f;
  IMGPIPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

void* DeviceMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}
void DeviceMemory::release(void* p) noexcept { check_noexcept(cudaFree(p), "cudaFree"); }

void* PinnedMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}
void PinnedMemory::release(void* p) noexcept { check_noexcept(cudaFreeHost(p), "cudaFreeHost"); }

void* ManagedMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
  return p;
}
void ManagedMemory::release(void* p) noexcept { check_noexcept(cudaFree(p), "cudaFree"); }

}  // namespace imgpipe::cuda
