// Slots of a __constant__ bank of filter taps, shared by every planned op in the process.
// Each .cu that reads taps from constant memory owns its bank (`__constant__ float bank[kTapSlots][kMaxTaps]`:
// constant memory belongs to its translation unit) and one TapSlots for it; a planned op holds a TapSlot for its
// lifetime, so ops never overwrite each other's taps and nothing is uploaded per frame. What a slot holds is a
// function of the taps alone, so ops with equal taps share one.
#pragma once

#include "cuda_check.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace imgpipe::cuda {

// Slots per bank: the distinct filters planned at once in the process.
inline constexpr int kTapSlots = 128;

// Which slots of one bank are taken, and by which taps. Planned ops with the same taps on the same device share
// a slot (an engine plans the chain once per frame slot, all with the same filters), so the bank bounds the
// distinct filters, not the frames in flight.
class TapSlots {
 public:
  // A slot holding `taps` on the current device: one that already holds them, or else the lowest free slot,
  // into which `upload(slot)` puts them (called under the bank's lock, so no sharer can run before the upload).
  // Throws std::runtime_error when every slot is taken.
  template <class Upload>
  int acquire(std::span<const float> taps, Upload&& upload) {
    int device = 0;
    IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard lock(mutex_);
    for (int i = 0; i < kTapSlots; ++i) {
      Held& h = held_[i];
      if (h.holders > 0 && h.device == device && std::ranges::equal(h.taps, taps)) {
        ++h.holders;
        return i;
      }
    }
    for (int i = 0; i < kTapSlots; ++i) {
      Held& h = held_[i];
      if (h.holders == 0) {
        upload(i);
        h = {device, std::vector<float>(taps.begin(), taps.end()), 1};
        return i;
      }
    }
    throw std::runtime_error("all " + std::to_string(kTapSlots) + " constant-memory tap slots are in use (by " +
                             std::to_string(kTapSlots) + " different filters)");
  }
  // Frees the slot once its last holder gives it back.
  void release(int slot) noexcept {
    std::lock_guard lock(mutex_);
    --held_[slot].holders;
  }

 private:
  struct Held {
    int device = 0;
    std::vector<float> taps;
    int holders = 0;
  };
  std::mutex mutex_;
  std::array<Held, kTapSlots> held_;
};

// One holder of a bank's slot, taken at construction and given back at destruction. Move-only; a moved-from (or
// default-constructed) TapSlot holds none. Giving a slot back waits for the device first: kernels already
// queued may still read the slot's taps, and the next owner's upload must not overtake them.
class TapSlot {
 public:
  TapSlot() = default;
  template <class Upload>
  TapSlot(TapSlots& bank, std::span<const float> taps, Upload&& upload)
      : bank_(&bank), index_(bank.acquire(taps, std::forward<Upload>(upload))) {}
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
