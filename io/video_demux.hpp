// A video's compressed pictures as NVDEC's parser takes them: an H.264 or HEVC Annex B byte stream, in pieces,
// each with its presentation time where the file has one. Elementary streams (.h264, .hevc, ...) are read as
// they are; containers (MP4, Matroska, MPEG-TS, ...) are demuxed by libavformat, where the build has it, and their
// packets turned into Annex B by FFmpeg's mp4toannexb bitstream filters.
#pragma once

#include "annexb.hpp"
#include "chain.hpp"
#include "io_error.hpp"
#include "rgb_color_space.hpp"

#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <streambuf>
#include <string>
#include <vector>

namespace imgpipe::io {

struct BitstreamPiece {
  std::span<const std::uint8_t> bytes;
  // Presentation time in Bitstream::seconds_per_tick() units; an elementary stream's pieces have none.
  std::optional<std::int64_t> pts;
  // Decoded only because later pictures refer to it: the container's edit list starts the video after it.
  bool discard = false;
};

class Bitstream {
 public:
  virtual ~Bitstream() = default;
  virtual VideoCodec codec() const = 0;
  // The next piece, valid until the next call; nullopt at the end. Throws IoError naming the file.
  virtual std::optional<BitstreamPiece> next() = 0;
  // The unit of the pieces' pts (0 where there are none).
  virtual double seconds_per_tick() const { return 0; }
  // Frames per second the container declares; nullopt for elementary streams, whose rate is in their headers.
  virtual std::optional<double> frame_rate() const { return std::nullopt; }
  // Whether each piece is one picture, in decoding order (a container's packets), or just the next bytes.
  virtual bool pieces_are_pictures() const { return false; }
  // "QuickTime / MOV", "Matroska / WebM", ... for the summary; empty for an elementary stream.
  virtual std::string container() const { return {}; }
  // FrameReader::container_damage() of the container; empty for an elementary stream.
  virtual std::string container_damage() const { return {}; }
  // FrameReader::display_aspect() as the container declares it; nullopt for an elementary stream.
  virtual std::optional<DisplayAspect> display_aspect() const { return std::nullopt; }
  // FrameReader::rgb_color_space() as the container or the stream's headers declare it; nullopt for an
  // elementary stream.
  virtual std::optional<RgbColorSpace> rgb_color_space() const { return std::nullopt; }
};

// What a container says of one picture's packet.
struct PacketTiming {
  std::optional<std::int64_t> pts;  // in Bitstream::seconds_per_tick() units
  bool discard = false;             // BitstreamPiece::discard
};

// A bitstream as the buffer of a std::istream, for AnnexBSplitter. The pieces of a container are pictures: the
// buffer keeps each one's timing, in decoding order, until take_timings() hands it out. An IoError from the
// bitstream reaches the stream's reader where the stream has badbit in its exceptions().
class BitstreamBuffer final : public std::streambuf {
 public:
  explicit BitstreamBuffer(Bitstream& bitstream) : bitstream_(bitstream) {}
  // The timings of the next `pictures` pictures read through the buffer (fewer where fewer were read); none for
  // an elementary stream.
  std::vector<PacketTiming> take_timings(std::size_t pictures);

 protected:
  int_type underflow() override;

 private:
  Bitstream& bitstream_;
  std::deque<PacketTiming> timings_;
};

// The file's bytes in reads of `read_bytes`; throws IoError when it cannot be opened.
std::unique_ptr<Bitstream> open_elementary_stream(const std::filesystem::path& path, VideoCodec codec,
                                                  std::size_t read_bytes = std::size_t{1} << 20);

// Why this build cannot demux containers (no libavformat); empty where it can.
std::string container_demuxing_unavailable();

// A container whose video stream is not one NVDEC's path takes (not H.264 or HEVC, shown turned, or no video at
// all); the message names what the file holds, and the CPU decoder can try.
class UnsupportedVideoStream : public IoError {
 public:
  using IoError::IoError;
};

// The best video stream of a container file. Throws IoError when the file cannot be opened or read as a
// container, UnsupportedVideoStream when its video is not H.264 or HEVC or the container shows it turned (the
// CPU decoder turns it upright), and IoError with
// container_demuxing_unavailable()'s reason in a build without libavformat.
std::unique_ptr<Bitstream> open_container(const std::filesystem::path& path);

// Quiets libavformat's own messages (imgpipe reports every failure in its words) unless `verbose`.
void set_demuxer_logging(bool verbose);

}  // namespace imgpipe::io
