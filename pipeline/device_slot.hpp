// One slot of a GPU ring: a frame's host input and output, their device copies, the stream that uploads,
// computes and downloads it, and the event recorded after the download. The engine's GPU ring (engine.cpp) is
// a ring of these, and so is the ring imgpipe bench times the NPP peer and its trace on.
#pragma once

#include "cuda_resources.hpp"
#include "engine.hpp"
#include "image.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace imgpipe {

// Host memory of one of the three kinds, grown on demand.
class HostBuffer {
 public:
  explicit HostBuffer(MemoryMode mode) : mode_(mode) {}
  void grow(std::size_t bytes);
  std::uint8_t* data();
  MemoryMode mode() const { return mode_; }

 private:
  MemoryMode mode_;
  std::vector<std::uint8_t> pageable_;
  cuda::PinnedBuffer pinned_;
  cuda::ManagedBuffer managed_;
};

// Buffers start empty and grow to the largest frame asked for; the stream and the event exist from the start.
// The owner waits for the stream before the slot goes away: buffers must outlive the work queued on them.
struct DeviceSlot {
  explicit DeviceSlot(MemoryMode host_memory);

  // Host input and output large enough for frames of `in` and `out`.
  void grow_host(Size in, Size out);
  // Device input and output large enough for them; none with managed host memory, which the kernels read and
  // write in place.
  void grow_device(Size in, Size out);
  // Waits for the stream, then frees the device input and output (after an allocation failed for one
  // oversized frame, so later frames of ordinary size still find memory).
  void free_device_buffers();

  HostBuffer host_in, host_out;
  cuda::DeviceBuffer device_in, device_out;
  cuda::Stream stream;
  cuda::Event done;  // recorded after the frame's last work on `stream`
};

}  // namespace imgpipe
