// Bookkeeping for a __constant__ bank of filter taps shared by every planned chain in the process.
// Each .cu that reads taps from constant memory owns its bank (`__constant__ float bank[kSlots][kMaxTaps]`)
// and one TapSlots; a planned op holds a slot for its lifetime, so chains never overwrite each other's taps
// and nothing is uploaded per frame.
#pragma once

#include <bitset>
#include <mutex>
#include <stdexcept>

namespace imgpipe::cuda {

template <int Slots>
class TapSlots {
 public:
  int acquire() {
    std::lock_guard lock(mutex_);
    for (int i = 0; i < Slots; ++i) {
      if (!used_[i]) {
        used_[i] = true;
        return i;
      }
    }
    throw std::runtime_error("all " + std::to_string(Slots) + " constant-memory tap slots are in use");
  }
  void release(int slot) noexcept {
    std::lock_guard lock(mutex_);
    used_[slot] = false;
  }

 private:
  std::mutex mutex_;
  std::bitset<Slots> used_;
};

}  // namespace imgpipe::cuda
