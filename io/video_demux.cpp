#include "video_demux.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace imgpipe::io {
namespace {

class ElementaryStream final : public Bitstream {
 public:
  ElementaryStream(const std::filesystem::path& path, VideoCodec codec, std::size_t read_bytes)
      : path_(path), codec_(codec), buffer_(read_bytes) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw IoError(path, std::strerror(errno));
  }
  ElementaryStream(const ElementaryStream&) = delete;
  ElementaryStream& operator=(const ElementaryStream&) = delete;
  ~ElementaryStream() override { std::fclose(file_); }

  VideoCodec codec() const override { return codec_; }

  std::optional<BitstreamPiece> next() override {
    const std::size_t got = std::fread(buffer_.data(), 1, buffer_.size(), file_);
    if (got == 0) {
      if (std::ferror(file_)) throw IoError(path_, std::string("reading failed: ") + std::strerror(errno));
      return std::nullopt;
    }
    return BitstreamPiece{{buffer_.data(), got}, std::nullopt, false};
  }

 private:
  std::filesystem::path path_;
  VideoCodec codec_;
  std::vector<std::uint8_t> buffer_;
  std::FILE* file_ = nullptr;
};

}  // namespace

std::vector<PacketTiming> BitstreamBuffer::take_timings(std::size_t pictures) {
  const std::size_t n = std::min(pictures, timings_.size());
  std::vector<PacketTiming> taken(timings_.begin(), timings_.begin() + static_cast<std::ptrdiff_t>(n));
  timings_.erase(timings_.begin(), timings_.begin() + static_cast<std::ptrdiff_t>(n));
  return taken;
}

BitstreamBuffer::int_type BitstreamBuffer::underflow() {
  std::optional<BitstreamPiece> piece;
  do {
    piece = bitstream_.next();
    if (!piece) return traits_type::eof();
  } while (piece->bytes.empty());
  if (bitstream_.pieces_are_pictures()) timings_.push_back({piece->pts, piece->discard});
  // The piece stays valid until the bitstream's next piece, which only the next underflow asks for.
  char* bytes = reinterpret_cast<char*>(const_cast<std::uint8_t*>(piece->bytes.data()));
  setg(bytes, bytes, bytes + piece->bytes.size());
  return traits_type::to_int_type(*gptr());
}

std::unique_ptr<Bitstream> open_elementary_stream(const std::filesystem::path& path, VideoCodec codec,
                                                  std::size_t read_bytes) {
  return std::make_unique<ElementaryStream>(path, codec, read_bytes);
}

}  // namespace imgpipe::io
