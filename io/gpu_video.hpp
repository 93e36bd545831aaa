// Video decoding on the GPU's NVDEC engines. The driver's libnvcuvid (loaded at run time through
// nv-codec-headers' loader) parses and decodes H.264 and HEVC elementary streams (Annex B: .h264, .264, .avc,
// .hevc, .h265, .265), each stream on one engine, or cut at its IDR pictures over several (GpuVideoSplit);
// each decoded NV12 or P016 surface becomes the engine slot's interleaved RGB8 input in one kernel
// (cuda::nv12_to_rgb), so only the bitstream crosses PCIe.
//
// Why libnvcuvid's own parser and not libavcodec's CUDA hwaccel: the parser needs nothing but the driver (the
// GPU server has no FFmpeg libraries), and it hands over the decoder's surface itself, which the conversion
// kernel reads once into the slot; the hwaccel path would add a copy into an AVFrame of its own.
//
// Built with nv-codec-headers only (IMGPIPE_HAVE_NVDEC); elsewhere gpu_video_unavailable() says why.
#pragma once

#include "annexb.hpp"
#include "folder.hpp"
#include "frame_stream.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace imgpipe::io {

// Why NVDEC cannot run here (no nv-codec-headers in the build, no libnvcuvid, no CUDA device); empty when it can.
std::string gpu_video_unavailable();

// NVDEC engines on this GPU (those that decode 8-bit 4:2:0 H.264), or 0 where NVDEC cannot run.
int gpu_video_engines();

// Why this machine cannot encode video on NVENC (no nv-codec-headers in the build, no libnvidia-encode, no CUDA
// device, or no NVENC engine on the GPU: the H200 has none); empty where an encode session opens. imgpipe
// writes video files on the CPU either way (OpenCV's VideoWriter): this is what `imgpipe backends` and
// `imgpipe stream`'s summary say about it.
std::string nvenc_unavailable();

// What NVDEC offers on this machine, one line per codec, and whether NVENC is there, for `imgpipe backends`.
std::vector<std::string> describe_gpu_video();

// NVDEC cannot decode this stream (a codec, chroma format, bit depth or size its engines do not take); the
// message says which, and the CPU decoder can try.
class GpuVideoRefusal : public IoError {
 public:
  using IoError::IoError;
};

// How one stream is spread over NVDEC engines: with more than one decoder, the stream is cut at its IDR
// pictures into chunks of at least `min_chunk_pictures` pictures (AnnexBSplitter), decoded side by side and
// handed out in the stream's order. A stream whose first 32 MiB hold no such cut (open GOPs, or a short
// stream) is decoded on one decoder, and its reader's decoder() says why.
// Decoded frames wait for their turn in device memory: `buffer_bytes` of it over all decoders (0: a quarter of
// what is free, at most 8 GiB), and never less than 8 frames per decoder.
struct GpuVideoSplit {
  int decoders = 1;
  std::uint64_t min_chunk_pictures = 48;
  std::size_t buffer_bytes = 0;
};

// Opens `path` and decodes up to its first sequence header: throws GpuVideoRefusal when NVDEC cannot take the
// stream (not an elementary stream or a container it demuxes, a FIFO, a pipe or a URL, or no NVDEC here), IoError when
// the file cannot be read or holds no sequence header. The reader's frames come through read_to_device() (or read(),
// which copies the frame to the host). Frames the decoder reports as damaged are still delivered (concealed by NVDEC)
// and counted in corrupt_frames().
std::unique_ptr<FrameReader> open_gpu_video_reader(const std::filesystem::path& path, const GpuVideoSplit& split = {});

}  // namespace imgpipe::io
