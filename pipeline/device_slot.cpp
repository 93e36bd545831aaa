#include "device_slot.hpp"

#include "cuda_check.hpp"

namespace imgpipe {

void HostBuffer::grow(std::size_t bytes) {
  switch (mode_) {
    case MemoryMode::pageable:
      if (pageable_.size() < bytes) pageable_.resize(bytes);
      break;
    case MemoryMode::pinned: pinned_.grow(bytes); break;
    case MemoryMode::managed: managed_.grow(bytes); break;
  }
}

std::uint8_t* HostBuffer::data() {
  switch (mode_) {
    case MemoryMode::pageable: return pageable_.data();
    case MemoryMode::pinned: return pinned_.data();
    case MemoryMode::managed: return managed_.data();
  }
  return nullptr;
}

DeviceSlot::DeviceSlot(MemoryMode host_memory)
    : host_in(host_memory), host_out(host_memory), stream(cuda::Stream::create()), done(cuda::Event::create()) {}

void DeviceSlot::grow_host(Size in, Size out) {
  host_in.grow(in.rgb_bytes());
  host_out.grow(out.rgb_bytes());
}

void DeviceSlot::grow_device(Size in, Size out) {
  if (host_in.mode() == MemoryMode::managed) return;
  device_in.grow(in.rgb_bytes());
  device_out.grow(out.rgb_bytes());
}

void DeviceSlot::free_device_buffers() {
  cuda::check_noexcept(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  device_in = cuda::DeviceBuffer();
  device_out = cuda::DeviceBuffer();
}

}  // namespace imgpipe
