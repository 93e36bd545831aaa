// Slots of a __constant__ bank of filter taps, shared by every planned op in the process.
// Each .cu that reads taps from constant memory owns its bank (`__constant__ float bank[kTapSlots][kMaxTaps]`:
// constant memory belongs to its translation unit) and one TapSlots for it; a planned op holds a TapSlot for its
// lifetime, so ops never overwrite each other's taps and nothing is uploaded per frame.
#pragma once

#include "cuda_check.hpp"

#include <cuda_runtime.h>

#include <bitset>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace imgpipe::cuda {

// Slots per bank: the filters planned at once in the process.
inline constexpr int kTapSlots = 128;

// Which slots of one bank are taken.
class TapSlots {
 public:
  // The lowest free slot; throws std::runtime_error when every slot is taken.
  int acquire() {
    std::lock_guard lock(mutex_);
    for (int i = 0; i < kTapSlots; ++i) {
      if (!used_[i]) {
        used_[i] = true;
        return i;
      }
    }
    throw std::runtime_error("all " + std::to_string(kTapSlots) + " constant-memory tap slots are in use");
  }
  void release(int slot) noexcept {
    std::lock_guard lock(mutex_);
    used_[slot] = false;
  }

 private:
  std::mutex mutex_;
  std::bitset<kTapSlots> used_;
};

// One slot of a bank, taken at construction and given back at destruction. Move-only; a moved-from (or
// default-constructed) TapSlot holds none. Giving a slot back waits for the device first: kernels already
// queued may still read the slot's taps, and the next owner's upload must not overtake them.
class TapSlot {
 public:
  TapSlot() = default;
  explicit TapSlot(TapSlots& bank) : bank_(&bank), index_(bank.acquire()) {}
  ~TapSlot() { release(); }
  TapSlot(TapSlot&& other) noexcept : bank_(other.bank_), index_(std::exchange(other.index_, -1)) {}
  TapSlot& operator=(TapSlot&& other) noexcept {
    if (this != &other) {
      release();
      bank_ = other.bank_;
      index_ = std::exchange(other.index_, -1);
    }
    return *this;
  }
  TapSlot(const TapSlot&) = delete;
  TapSlot& operator=(const TapSlot&) = delete;

  int index() const noexcept { return index_; }  // -1 when it holds none
  bool held() const noexcept { return index_ >= 0; }

 private:
  void release() noexcept {
    if (index_ < 0) return;
    check_noexcept(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    bank_->release(std::exchange(index_, -1));
  }

  TapSlots* bank_ = nullptr;
  int index_ = -1;
};

}  // namespace imgpipe::cuda
