// H.264 and HEVC elementary streams (Annex B byte streams): which codec a file holds, and a splitter that cuts
// a stream at its IDR pictures into chunks each decoder can take on its own, so that one long stream can be
// decoded on several NVDEC engines at once.
//
// An IDR picture is a safe cut: no picture after it in decoding order refers to one before it, and every
// picture before it is also shown before it (H.264 7.4.1.2.4 and 8.2.1; HEVC 8.3.1 and the IRAP constraints of
// 7.4.3.1), so the chunks' frames, shown one chunk after another, are the stream's frames in order. Other
// random-access pictures (H.264 recovery points, HEVC CRA and BLA) open GOPs whose leading pictures refer across
// the cut, so the splitter never cuts there: a stream of open GOPs stays one chunk.
#pragma once

#include "folder.hpp"
#include "io_error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
#include <vector>

namespace imgpipe::io {

enum class VideoCodec { h264, hevc };

// The codec of an elementary stream file, from its extension; nullopt for anything else (containers such as
// .mp4 are decoded on the CPU).
inline std::optional<VideoCodec> elementary_stream_codec(const std::filesystem::path& path) {
  const std::string ext = lowercase_extension(path);
  if (ext == ".h264" || ext == ".264" || ext == ".avc") return VideoCodec::h264;
  if (ext == ".hevc" || ext == ".h265" || ext == ".265") return VideoCodec::hevc;
  return std::nullopt;
}

// A run of the stream from one cut to the next, made decodable on its own.
struct StreamChunk {
  // The parameter sets (H.264 SPS/PPS, HEVC VPS/SPS/PPS) seen before the cut, then the stream's own bytes from
  // the cut on. The first chunk has no such header: it is the stream's start.
  std::vector<std::uint8_t> bytes;
  std::size_t header_bytes = 0;  // of `bytes`, the parameter sets put before the stream's bytes
  std::uint64_t stream_offset = 0;  // where the stream's bytes start in the file
  std::uint64_t pictures = 0;       // pictures (frames, or fields) that start in the chunk
};

// Reads an Annex B stream and hands it out in chunks, each from an IDR access unit (its access unit delimiter,
// SEI and parameter sets included) to the next cut. A chunk ends at the first IDR picture that comes after at
// least `min_pictures` pictures, so chunks are long enough to be worth a decoder. The stream's bytes are handed
// out exactly once and in order: the chunks' bytes after their headers, put together, are the file.
class AnnexBSplitter {
 public:
  // `name` is the file's, for errors.
  AnnexBSplitter(std::istream& in, std::filesystem::path name, VideoCodec codec, std::uint64_t min_pictures);

  // The next chunk, or nullopt once the stream is handed out; throws IoError when reading fails.
  std::optional<StreamChunk> next();

  // Whether the stream's first picture, once next() has found it, is an IDR picture. One that is not (a CRA
  // picture, say) may have leading pictures the decoder does not show.
  bool starts_at_idr() const { return starts_at_idr_.value_or(false); }

 private:
  struct Nal {
    int type = -1;
    bool first_slice = false;  // a slice that starts a picture
  };
  Nal classify(std::size_t start_code) const;
  bool is_vcl(int type) const;
  bool is_idr(int type) const;
  bool is_parameter_set(int type) const;
  bool starts_access_unit(int type) const;  // comes before the first slice of its access unit
  // Appends up to a read's worth of the stream to buffer_; false at its end.
  bool read_more();
  // Deals with the NAL unit buffer_[start, end); true when it ends the chunk being built (at cut_).
  bool take(const Nal& nal, std::size_t start, std::size_t end);
  void remember_parameter_set(std::vector<std::uint8_t> nal);
  // Hands out buffer_[0, end) as a chunk of `pictures`; the chunk after it gets `next_header`.
  StreamChunk emit(std::size_t end, std::uint64_t pictures, std::vector<std::uint8_t> next_header);

  std::istream& in_;
  std::filesystem::path name_;
  VideoCodec codec_;
  std::uint64_t min_pictures_;
  bool at_end_ = false;

  std::vector<std::uint8_t> buffer_;  // the stream from chunk_offset_ on, not yet handed out
  std::uint64_t chunk_offset_ = 0;    // file offset of buffer_[0]
  std::size_t scanned_ = 0;           // buffer_ up to here holds no start code not yet found
  std::optional<std::size_t> nal_start_;  // the start code of the NAL unit being read
  std::optional<std::size_t> access_unit_start_;  // the first NAL unit since the last slice that opens an AU
  std::uint64_t chunk_pictures_ = 0;  // pictures of the chunk being built so far
  // Set by take() when it finds a cut: where, the pictures before it, the header of the chunk after it.
  std::size_t cut_ = 0;
  std::uint64_t cut_pictures_ = 0;
  std::vector<std::uint8_t> next_header_;

  std::vector<std::vector<std::uint8_t>> parameter_sets_;  // distinct ones, by last appearance
  std::vector<std::vector<std::uint8_t>> pending_parameter_sets_;  // since the last slice
  std::vector<std::uint8_t> chunk_header_;  // the parameter sets known at the current chunk's cut
  bool ended_ = false;  // every chunk handed out
  std::optional<bool> starts_at_idr_;  // set at the stream's first picture
};

// What the first `max_bytes` of `in` say about cutting it with AnnexBSplitter(min_pictures).
struct SplitProbe {
  // They hold a cut. A stream with none so early (open GOPs, or a short stream) is better decoded on one decoder
  // than split: its one chunk would be held whole in memory before its decoding could start.
  bool early_cut = false;
  bool starts_at_idr = false;  // AnnexBSplitter::starts_at_idr
};
SplitProbe probe_split(std::istream& in, VideoCodec codec, std::uint64_t min_pictures, std::size_t max_bytes);

}  // namespace imgpipe::io
