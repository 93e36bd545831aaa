// The GPU backends: the same chain computed two ways.
//   naive:     kernels index the interleaved (AoS) frame directly; hand bilinear; untiled transpose;
//              2-D filters with taps in global memory and a border branch per pixel; pageable, synchronous copies.
//   optimized: one coalesced pass to SoA planes, texture-filtered resize, padded shared-memory transpose,
//              separable filters with taps in __constant__ memory and warp-uniform borders, stages fused where
//              intermediates can stay on chip, launch shapes from occupancy; nothing allocated per frame.
// Filters, gray, normalize and the geometric ops give the cpu backend's (OpenCV's) bytes on both paths. With
// Arithmetic::exact so does linear resize: OpenCV's fixed-point bilinear by hand (not through textures), and the
// optimized path's fused resize + filter head as its exact twin.
#pragma once

#include "backend.hpp"
#include "chain.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

namespace imgpipe {

enum class GpuPath { naive, optimized };

// A chain planned for the device: runs device-resident frames on a caller's stream.
// Scratch buffers grow to the largest frame seen, then stay; taps are uploaded once, at construction.
class DeviceChain {
 public:
  DeviceChain(GpuPath path, const Chain& chain, Arithmetic arithmetic = Arithmetic::fast);
  ~DeviceChain();
  DeviceChain(DeviceChain&&) noexcept;
  DeviceChain& operator=(DeviceChain&&) noexcept;

  GpuPath path() const;
  Arithmetic arithmetic() const;
  const Chain& chain() const;
  // `in` and `out` are device pointers to packed interleaved RGB8 (pitch 3 * width).
  // Asynchronous, enqueued on `stream`; `in` must stay valid and `out` untouched until the stream reaches here.
  void run(const std::uint8_t* in, Size in_size, std::uint8_t* out, cudaStream_t stream);
  // `frames` frames of one size, packed back to back in `in` (frame f at f * in_size.rgb_bytes()) and in
  // `out` (at f * the output's rgb_bytes()); the same results as run() frame by frame. The optimized path runs
  // a fused resize + filter head as one launch for many frames (the rest of the chain frame by frame); the
  // naive path is run() in a loop.
  void run_batch(const std::uint8_t* in, Size in_size, int frames, std::uint8_t* out, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Throws std::runtime_error when no CUDA device is usable.
std::unique_ptr<Backend> make_gpu_backend(GpuPath path, Arithmetic arithmetic = Arithmetic::fast);

}  // namespace imgpipe
