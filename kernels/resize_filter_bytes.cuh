// Byte-level building blocks of the fused resize + filter, shared by its steps: packed-byte dot products
// (dp2a, dp4a), byte gathers (PRMT) and 64-bit row addresses. Device code only, per thread; every function
// inlines, and none has a precondition beyond its arguments or touches a stream.
//
// The arithmetic is integer wherever bytes are weighed: a downscale by 1.5 touches 2.25 input bytes per output
// byte, so the per-input-byte work sets the pace, and one dp2a weighs a byte of each of two rows with 16-bit
// weights without an int->float conversion (whose throughput is 1/8 of an FMA's).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace imgpipe::cuda::resize_filter {

// base + row * pitch as one 32 x 32 -> 64-bit multiply-add. Written out because nvcc otherwise moves the frame's
// base pointer into registers and adds it, and a zero high word, to every row address inside step 2's loop
// (6 more instructions per row pair in the SASS for K = 5).
__device__ __forceinline__ const std::uint8_t* row_address(const std::uint8_t* base, unsigned row, unsigned pitch) {
  std::uint64_t address;
  asm("mad.wide.u32 %0, %1, %2, %3;"
      : "=l"(address)
      : "r"(row), "r"(pitch), "l"(reinterpret_cast<std::uint64_t>(base)));
  return reinterpret_cast<const std::uint8_t*>(address);
}

// dp2a without the intrinsic's `volatile`, so the scheduler may interleave it with the loads.
__device__ __forceinline__ unsigned dp2a_lo(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("dp2a.lo.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned dp2a_hi(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("dp2a.hi.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ unsigned dp4a(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// Byte kByte of each of four words, packed in order (0: the low bytes, 3: the top bytes of sums).
template <int kByte>
__device__ __forceinline__ unsigned pack_bytes(unsigned w0, unsigned w1, unsigned w2, unsigned w3) {
  constexpr unsigned kPair = kByte | (4 + kByte) << 4;  // byte kByte of the first word, then of the second
  return __byte_perm(__byte_perm(w0, w1, kPair), __byte_perm(w2, w3, kPair), 0x5410);
}

// Four pixels given as one word of each plane -> the same pixels as 12 interleaved bytes (step 5).
__device__ __forceinline__ uint3 interleave_rgb(unsigned r, unsigned g, unsigned b) {
  const unsigned r0g0r1g1 = __byte_perm(r, g, 0x5140);
  const unsigned g1b1g2 = __byte_perm(g, b, 0x0251);
  const unsigned b2r3b3 = __byte_perm(b, r, 0x0372);
  return make_uint3(__byte_perm(r0g0r1g1, b, 0x2410),  // r0 g0 b0 r1
                    __byte_perm(g1b1g2, r, 0x2610),    // g1 b1 r2 g2
                    __byte_perm(b2r3b3, g, 0x2710));   // b2 r3 g3 b3
}

}  // namespace imgpipe::cuda::resize_filter
