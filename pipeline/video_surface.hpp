// Decoded video surfaces (NV12 / P016) to the engine's frames, for io's GPU video decoder: the conversion kernel
// of kernels/yuv.cuh under the pipeline's names, so that io never reaches into kernels/.
#pragma once

#include "engine.hpp"
#include "yuv.cuh"

namespace imgpipe {

using VideoMatrix = cuda::YuvMatrix;
using VideoColor = cuda::YuvColor;
using VideoSurface = cuda::Nv12View;

// `surface` into `frame` (packed interleaved RGB8 of the surface's extent), asynchronously on frame.stream.
inline void convert_video_surface(const VideoSurface& surface, VideoColor color, const DeviceFrame& frame) {
  cuda::nv12_to_rgb(surface, color, {frame.data, surface.extent, 3 * static_cast<std::size_t>(frame.size.width)},
                    frame.stream);
}

}  // namespace imgpipe
