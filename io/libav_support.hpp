// What io/'s users of FFmpeg's libraries share (container_demux.cpp, cpu_video.cpp, video_encode.cpp; only files
// built with FFmpeg include it): an error code as text or as the system error it carries, FFmpeg's objects freed by
// their owners, the rows libswscale may overrun, a file opened for demuxing, and a stream's rotation, shape and
// colour space.
#pragma once

#include "chain.hpp"
#include "libav_log.hpp"
#include "rgb_color_space.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
}

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>

namespace imgpipe::io::libav {

// FFmpeg's description of an AVERROR code.
inline std::string error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

// The system error an AVERROR code carries (FFmpeg's AVERROR(errno) for a failed system call), or an empty code
// for FFmpeg's own errors, which are tags far outside errno's range.
inline std::error_code system_error_of(int code) {
  constexpr int kHighestErrno = 4095;
  return code < 0 && -code <= kHighestErrno ? std::error_code(-code, std::generic_category()) : std::error_code();
}

struct PacketFree {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
using Packet = std::unique_ptr<AVPacket, PacketFree>;

struct InputClose {
  void operator()(AVFormatContext* input) const { avformat_close_input(&input); }
};
using Input = std::unique_ptr<AVFormatContext, InputClose>;  // an opened file being demuxed

struct CodecFree {
  void operator()(AVCodecContext* codec) const { avcodec_free_context(&codec); }
};
using Codec = std::unique_ptr<AVCodecContext, CodecFree>;  // a decoder or an encoder

struct FrameFree {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
using Frame = std::unique_ptr<AVFrame, FrameFree>;

// libswscale's vector code reads and writes packed RGB rows in whole vectors, past a row's end (valgrind: a write
// 16 bytes past a frame 330 pixels wide, a read 4 bytes past one 320 wide), which on a frame's last row lands past
// its buffer. Frames go through rows of this stride, with room after each.
inline std::size_t padded_rgb_stride(int width) {
  constexpr std::size_t kRoomAfterARow = 256;
  return static_cast<std::size_t>(3 * width) + kRoomAfterARow;
}

// `path`, a local file, as libavformat must be given it: a relative name whose first part holds a colon
// ("cam:1.mkv") would be taken for a protocol's URL, and "./" in front makes it a file's.
inline std::string file_url(const std::filesystem::path& path) {
  const std::string name = path.string();
  const bool colon_in_first_part = !path.empty() && path.begin()->string().find(':') != std::string::npos;
  return path.is_relative() && colon_in_first_part ? "./" + name : name;
}

// libavformat's interrupt callback: whether the descriptor in `opaque` is readable (a stop was asked for).
inline int readable_descriptor(void* opaque) {
  pollfd stop{static_cast<int>(reinterpret_cast<std::intptr_t>(opaque)), POLLIN, 0};
  return ::poll(&stop, 1, 0) > 0 && (stop.revents & POLLIN) != 0 ? 1 : 0;
}

// Opens `path` into `input` and reads its streams' parameters: 0, or the AVERROR code of the step that failed.
// The demuxer's messages go to `log` where one is given, from the first; with `custom_io`, the bytes come through
// it (the caller's, freed after `input`) instead of libavformat's own reads of the file. With `cancel_fd` >= 0,
// a URL's network waits (connecting, reading a stalled stream) end with AVERROR_EXIT once `cancel_fd` is readable.
inline int open_input(const std::filesystem::path& path, Input& input, ReaderLog* log = nullptr,
                      AVIOContext* custom_io = nullptr, int cancel_fd = -1) {
  AVFormatContext* opened = avformat_alloc_context();
  if (opened == nullptr) return AVERROR(ENOMEM);
  if (log != nullptr) log->watch(*opened);
  if (custom_io != nullptr) {
    opened->pb = custom_io;
    opened->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  // A name that is no local file may be a URL (rtsp://, file:), which goes to libavformat as it is.
  std::error_code error_code;
  const bool local = std::filesystem::exists(path, error_code);
  if (!local && cancel_fd >= 0) {
    opened->interrupt_callback = {&readable_descriptor, reinterpret_cast<void*>(static_cast<std::intptr_t>(cancel_fd))};
  }
  const std::string url = local ? file_url(path) : path.string();
  if (const int error = avformat_open_input(&opened, url.c_str(), nullptr, nullptr); error < 0) {
    return error;
  }
  input.reset(opened);
  return std::min(avformat_find_stream_info(input.get(), nullptr), 0);
}

// An empty packet; throws std::bad_alloc when FFmpeg cannot allocate one.
inline Packet make_packet() {
  Packet packet(av_packet_alloc());
  if (!packet) throw std::bad_alloc();
  return packet;
}

// The shape `stream`'s frames are shown in where its pixels are not square, as the ffmpeg command reads its
// sample aspect ratio (the container's, else the codec's); nullopt for square pixels or none declared.
inline std::optional<DisplayAspect> anamorphic_display_aspect(AVFormatContext& input, AVStream& stream) {
  const AVRational sample = av_guess_sample_aspect_ratio(&input, &stream, nullptr);
  if (sample.num <= 0 || sample.den <= 0 || sample.num == sample.den) return std::nullopt;
  return display_aspect(std::int64_t{stream.codecpar->width} * sample.num,
                        std::int64_t{stream.codecpar->height} * sample.den);
}

// The RGB colour space `stream` declares, in its container or its codec's headers (as avformat_find_stream_info
// read them); a reserved code point counts as unspecified, and nullopt where neither part is specified.
inline std::optional<RgbColorSpace> declared_rgb_color_space(const AVStream& stream) {
  const int primaries = stream.codecpar->color_primaries, transfer = stream.codecpar->color_trc;
  const RgbColorSpace declared{h273_defines_primaries(primaries) ? primaries : RgbColorSpace::kUnspecified,
                               h273_defines_transfer(transfer) ? transfer : RgbColorSpace::kUnspecified};
  return declared == RgbColorSpace{} ? std::nullopt : std::optional(declared);
}

// Clockwise quarter turns (0 to 3) that show `stream` upright, as the ffmpeg command's autorotation reads its
// display matrix (a phone's portrait video says 90 or 270 degrees); an angle that is not a quarter turn counts
// as none. OpenCV 4.6 reads the same angle but turns 90 and 270 the other way.
inline int clockwise_quarter_turns(const AVStream& stream) {
  const std::uint8_t* matrix = av_stream_get_side_data(&stream, AV_PKT_DATA_DISPLAYMATRIX, nullptr);
  if (matrix == nullptr) return 0;
  int degrees = -static_cast<int>(std::lround(av_display_rotation_get(reinterpret_cast<const std::int32_t*>(matrix))));
  if (degrees < 0) degrees += 360;
  return degrees == 90 ? 1 : degrees == 180 ? 2 : degrees == 270 ? 3 : 0;
}

}  // namespace imgpipe::io::libav
