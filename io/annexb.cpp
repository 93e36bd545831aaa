#include "annexb.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>

namespace imgpipe::io {
namespace {

constexpr std::size_t kReadBytes = 1 << 20;
// Parameter sets remembered for the chunks' headers: far more than a stream uses (H.264 allows 32 SPS and 256
// PPS ids, but encoders write one or two).
constexpr std::size_t kMaxParameterSets = 64;

}  // namespace

AnnexBSplitter::AnnexBSplitter(std::istream& in, std::filesystem::path name, VideoCodec codec,
                               std::uint64_t min_pictures)
    : in_(in), name_(std::move(name)), codec_(codec), min_pictures_(min_pictures) {}

bool AnnexBSplitter::is_vcl(int type) const {
  return codec_ == VideoCodec::h264 ? type >= 1 && type <= 5 : type >= 0 && type <= 31;
}

bool AnnexBSplitter::is_idr(int type) const {
  return codec_ == VideoCodec::h264 ? type == 5 : type == 19 || type == 20;  // IDR_W_RADL, IDR_N_LP
}

bool AnnexBSplitter::is_parameter_set(int type) const {
  // H.264: SPS, PPS, SPS extension, subset SPS; HEVC: VPS, SPS, PPS.
  return codec_ == VideoCodec::h264 ? type == 7 || type == 8 || type == 13 || type == 15
                                    : type >= 32 && type <= 34;
}

bool AnnexBSplitter::starts_access_unit(int type) const {
  // H.264 7.4.1.2.3: SEI, parameter sets, access unit delimiter, prefix NAL; HEVC 7.4.2.4.4: parameter sets,
  // access unit delimiter, prefix SEI (a suffix SEI belongs to the picture before it).
  if (codec_ == VideoCodec::h264) return type == 6 || type == 9 || type == 14 || is_parameter_set(type);
  return type == 35 || type == 39 || is_parameter_set(type);
}

AnnexBSplitter::Nal AnnexBSplitter::classify(std::size_t start) const {
  std::size_t p = start;
  while (p < buffer_.size() && buffer_[p] == 0) ++p;
  const std::size_t header = p + 1;  // past the start code's 0x01
  const std::size_t header_bytes = codec_ == VideoCodec::h264 ? 1 : 2;
  Nal nal;
  if (header + header_bytes >= buffer_.size()) return nal;  // cut short: no slice data to tell a picture by
  nal.type = codec_ == VideoCodec::h264 ? buffer_[header] & 0x1f : (buffer_[header] >> 1) & 0x3f;
  // H.264: first_mb_in_slice is ue(v), 0 exactly when its first bit is 1; HEVC: first_slice_segment_in_pic_flag.
  nal.first_slice = is_vcl(nal.type) && (buffer_[header + header_bytes] & 0x80) != 0;
  return nal;
}

bool AnnexBSplitter::read_more() {
  if (at_end_) return false;
  const std::size_t had = buffer_.size();
  buffer_.resize(had + kReadBytes);
  in_.read(reinterpret_cast<char*>(buffer_.data() + had), static_cast<std::streamsize>(kReadBytes));
  const auto got = static_cast<std::size_t>(in_.gcount());
  buffer_.resize(had + got);
  if (in_.bad()) throw IoError(name_, "reading failed after " + std::to_string(chunk_offset_ + had) + " bytes");
  if (got == 0) at_end_ = true;
  return got > 0;
}

void AnnexBSplitter::remember_parameter_set(std::vector<std::uint8_t> nal) {
  std::erase(parameter_sets_, nal);
  if (parameter_sets_.size() == kMaxParameterSets) parameter_sets_.erase(parameter_sets_.begin());
  parameter_sets_.push_back(std::move(nal));
}

bool AnnexBSplitter::take(const Nal& nal, std::size_t start, std::size_t end) {
  if (starts_access_unit(nal.type)) {
    if (!access_unit_start_) access_unit_start_ = start;
    if (is_parameter_set(nal.type)) {
      pending_parameter_sets_.emplace_back(buffer_.begin() + static_cast<std::ptrdiff_t>(start),
                                           buffer_.begin() + static_cast<std::ptrdiff_t>(end));
    }
    return false;
  }
  if (!is_vcl(nal.type)) return false;
  bool cut = false;
  if (nal.first_slice) {
    if (!starts_at_idr_) starts_at_idr_ = is_idr(nal.type);
    if (is_idr(nal.type) && chunk_pictures_ > 0 && chunk_pictures_ >= min_pictures_) {
      cut = true;
      cut_ = access_unit_start_.value_or(start);
      cut_pictures_ = chunk_pictures_;
      chunk_pictures_ = 0;
      // The parameter sets of the new chunk's own access unit are still pending: they come with its bytes.
      next_header_.clear();
      for (const std::vector<std::uint8_t>& set : parameter_sets_) {
        next_header_.insert(next_header_.end(), set.begin(), set.end());
      }
    }
    ++chunk_pictures_;
  }
  for (std::vector<std::uint8_t>& set : pending_parameter_sets_) remember_parameter_set(std::move(set));
  pending_parameter_sets_.clear();
  access_unit_start_.reset();
  return cut;
}

StreamChunk AnnexBSplitter::emit(std::size_t end, std::uint64_t pictures, std::vector<std::uint8_t> next_header) {
  StreamChunk chunk;
  chunk.header_bytes = chunk_header_.size();
  chunk.bytes = std::move(chunk_header_);
  chunk.bytes.insert(chunk.bytes.end(), buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(end));
  chunk.stream_offset = chunk_offset_;
  chunk.pictures = pictures;
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(end));
  chunk_offset_ += end;
  scanned_ -= std::min(scanned_, end);
  if (nal_start_) *nal_start_ -= end;
  chunk_header_ = std::move(next_header);
  return chunk;
}

std::optional<StreamChunk> AnnexBSplitter::next() {
  const std::size_t header_bytes = codec_ == VideoCodec::h264 ? 1 : 2;
  while (!ended_) {
    // The next start code (00 00 01) at or after scanned_.
    std::size_t found = scanned_;
    while (found + 3 <= buffer_.size() &&
           !(buffer_[found] == 0 && buffer_[found + 1] == 0 && buffer_[found + 2] == 1)) {
      ++found;
    }
    if (found + 3 > buffer_.size()) {
      scanned_ = buffer_.size() >= 2 ? buffer_.size() - 2 : 0;  // a start code may straddle the next read
      if (read_more()) continue;
      // The stream's end: its last NAL unit runs to it.
      ended_ = true;
      if (const std::optional<std::size_t> last = std::exchange(nal_start_, std::nullopt);
          last && take(classify(*last), *last, buffer_.size())) {
        ended_ = false;  // the rest after the cut is still to come, as the last chunk
        return emit(cut_, cut_pictures_, std::move(next_header_));
      }
      if (buffer_.empty() && chunk_offset_ == 0) return std::nullopt;
      return emit(buffer_.size(), chunk_pictures_, {});
    }
    if (found + 3 + header_bytes + 1 > buffer_.size() && read_more()) {
      scanned_ = found;  // its header is not all here yet: find it again once it is
      continue;
    }
    // A zero before the start code (a four-byte start code) goes with the NAL unit it starts.
    const std::size_t start =
        found > 0 && buffer_[found - 1] == 0 && (!nal_start_ || found - 1 > *nal_start_) ? found - 1 : found;
    scanned_ = found + 3;
    if (const std::optional<std::size_t> previous = std::exchange(nal_start_, start);
        previous && take(classify(*previous), *previous, start)) {
      return emit(cut_, cut_pictures_, std::move(next_header_));
    }
  }
  return std::nullopt;
}

SplitProbe probe_split(std::istream& in, VideoCodec codec, std::uint64_t min_pictures, std::size_t max_bytes) {
  std::string start(max_bytes, '\0');
  in.read(start.data(), static_cast<std::streamsize>(max_bytes));
  start.resize(static_cast<std::size_t>(in.gcount()));
  std::istringstream prefix(start);
  AnnexBSplitter splitter(prefix, "the stream's start", codec, min_pictures);
  // Without a cut, the prefix is one chunk.
  const bool first = splitter.next().has_value();
  return SplitProbe{first && splitter.next().has_value(), splitter.starts_at_idr()};
}

}  // namespace imgpipe::io
