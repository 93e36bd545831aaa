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

// 48 bytes, given as 12 little-endian words, to `d` at any alignment (step 5 on frames whose rows are not
// 16-byte aligned): as 16-, 8- or 4-byte stores where `d` allows, else the aligned words inside the span,
// shifted into place, and the bytes at its two ends one by one (the words around them belong to other threads).
__device__ __forceinline__ void store_48_bytes(std::uint8_t* d, const unsigned (&w)[12]) {
  const auto at = reinterpret_cast<std::uintptr_t>(d);
  if (at % 16 == 0) {
    auto* const d16 = reinterpret_cast<uint4*>(d);
#pragma unroll
    for (int i = 0; i < 3; ++i) d16[i] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
  } else if (at % 8 == 0) {
    auto* const d8 = reinterpret_cast<uint2*>(d);
#pragma unroll
    for (int i = 0; i < 6; ++i) d8[i] = make_uint2(w[2 * i], w[2 * i + 1]);
  } else if (at % 4 == 0) {
    auto* const d4 = reinterpret_cast<unsigned*>(d);
#pragma unroll
    for (int i = 0; i < 12; ++i) d4[i] = w[i];
  } else {
    const int lead = 4 - static_cast<int>(at % 4);  // bytes before the first aligned word
    for (int b = 0; b < lead; ++b) d[b] = static_cast<std::uint8_t>(w[0] >> (8 * b));
    auto* const d4 = reinterpret_cast<unsigned*>(d + lead);
    const unsigned shift = 8 * static_cast<unsigned>(lead);
#pragma unroll
    for (int i = 0; i < 11; ++i) d4[i] = __funnelshift_r(w[i], w[i + 1], shift);
    for (int b = lead; b < 4; ++b) d[44 + b] = static_cast<std::uint8_t>(w[11] >> (8 * b));
  }
}

}  // namespace imgpipe::cuda::resize_filter
