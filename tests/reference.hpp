// The reference: every op written the plain way, in double precision, sharing no code with what it checks
// (not the chain's gaussian_weights, no OpenCV, no CUDA). Slow on purpose; obviously correct is the point.
#pragma once

#include "chain.hpp"
#include "image.hpp"

namespace imgpipe::reference {

Image apply(const Op& op, const Image& in);
Image apply(const Chain& chain, const Image& in);

}  // namespace imgpipe::reference
