// What every backend does: told the chain once (plan), then run frame after frame.
#pragma once

#include "chain.hpp"
#include "image.hpp"

#include <string>

namespace imgpipe {

// How the GPU paths round a linear resize. exact: every op gives the bytes of the OpenCV function the cpu backend
// calls (OpenCV's own 8-bit fixed-point arithmetic, docs/ops.md); fast: a linear resize, alone or in the optimized
// path's fused resize + filter head, runs the fastest kernels (texture filtering, float weights), within one level
// of those bytes. Every other op gives OpenCV's bytes either way, at no cost; the cpu backend is OpenCV itself.
enum class Arithmetic { fast, exact };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Plans for `chain` (coefficients, kernels, buffers); frames of any size may follow.
  virtual void set_chain(const Chain& chain) = 0;
  // Runs the planned chain on one frame. `out.size` must equal output_size(chain, in.size).
  // Synchronous: `out` is complete when this returns. Not thread-safe: one caller at a time.
  virtual void process(ConstFrameView in, FrameView out) = 0;
};

}  // namespace imgpipe
