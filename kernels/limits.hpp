// The limits every layer agrees on: what the kernels take, the planners check and the op chain accepts.
// Plain constants, so host C++ (the chain's parser, the fuzzers) and CUDA include the same definitions.
#pragma once

namespace imgpipe::cuda {

// Frame sides from 1 to 65535 pixels, as the op chain accepts them: the fused resize + filter keeps a source row's
// index in 16 bits.
inline constexpr int kMaxDimension = 65535;

// Frames per batched launch: frame f is the grid's z index f, and a grid's z dimension stops at 65535.
inline constexpr int kMaxFramesPerLaunch = 65535;

// Filters of an odd tap count up to 31 (radius 15): the tap loops are unrolled per radius, each radius a
// kernel of its own, and every __constant__ tap bank is sized for it.
inline constexpr int kMaxRadius = 15;
inline constexpr int kMaxTaps = 2 * kMaxRadius + 1;

// Threads per warp on every NVIDIA GPU: tile shapes are written in whole warps.
inline constexpr int kWarpSize = 32;

}  // namespace imgpipe::cuda
