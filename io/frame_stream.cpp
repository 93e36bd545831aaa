#include "frame_stream.hpp"

#include "cpu_video.hpp"
#include "file_bytes.hpp"
#include "folder.hpp"
#include "image_file.hpp"
#include "video_encode.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#ifdef IMGPIPE_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>
#endif

namespace imgpipe::io {

void FrameReader::read_to_device(const DeviceFrame&) {
  throw std::logic_error("this frame reader decodes on the CPU: read() is its way in");
}

std::filesystem::path local_file_named(const std::string& input) {
  return input.starts_with("file:") ? std::filesystem::path(input.substr(5)) : std::filesystem::path(input);
}

bool names_a_url(const std::string& input) {
  const std::size_t colon = input.find(':');
  if (colon == std::string::npos || colon == 0 || std::isalpha(static_cast<unsigned char>(input[0])) == 0) {
    return false;
  }
  const bool scheme = std::all_of(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
  });
  std::error_code error;
  return scheme && !std::filesystem::exists(input, error);
}

RawFrameReader::RawFrameReader(int fd, Size frame_size, std::string name, int cancel_fd)
    : fd_(fd), size_(frame_size), name_(std::move(name)), cancel_fd_(cancel_fd) {
  if (size_.width < 1 || size_.height < 1) throw IoError(name_ + ": raw frame size must be at least 1x1");
}

std::size_t RawFrameReader::read_some(std::uint8_t* dst, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    if (cancel_fd_ >= 0) {
      pollfd fds[2] = {{fd_, POLLIN, 0}, {cancel_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        throw IoError(name_ + ": poll failed at frame " + std::to_string(frames_) + ": " + std::strerror(errno));
      }
      if (fds[1].revents != 0) {
        throw StreamCancelled(name_ + ": reading stopped at frame " + std::to_string(frames_) +
                              (done > 0 || lookahead_ ? " (a partly read frame was discarded)" : ""));
      }
    }
    const ssize_t n = ::read(fd_, dst + done, bytes - done);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(name_ + ": read failed at frame " + std::to_string(frames_) + ": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  return done;
}

std::optional<Size> RawFrameReader::next_size() {
  if (!lookahead_) {
    std::uint8_t byte = 0;
    if (read_some(&byte, 1) == 0) return std::nullopt;
    lookahead_ = byte;
  }
  return size_;
}

void RawFrameReader::read(FrameView frame) {
  if (!lookahead_ || frame.size != size_) throw std::logic_error("RawFrameReader::read without next_size()");
  frame.data[0] = *lookahead_;
  lookahead_.reset();
  const std::size_t want = size_.rgb_bytes();
  const std::size_t got = 1 + read_some(frame.data + 1, want - 1);
  if (got != want) {
    throw IoError(name_ + ": frame " + std::to_string(frames_) + " is short: " + std::to_string(got) + " of " +
                  std::to_string(want) + " bytes (" + to_string(size_) +
                  " rgb24); the input is not a whole number of frames");
  }
  ++frames_;
}

RawFrameWriter::RawFrameWriter(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}

void RawFrameWriter::write(ConstFrameView frame, std::optional<double>) {  // raw rgb24 carries no times
  const std::uint8_t* p = frame.data;
  std::size_t left = frame.size.rgb_bytes();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(name_ + ": write failed: " + std::strerror(errno) +
                    (errno == EPIPE ? " (the program reading it closed the pipe)" : ""));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

#ifdef IMGPIPE_HAVE_OPENCV
namespace {

// OpenCV's FFmpeg backend where it has one. With CAP_ANY, a file that FFmpeg cannot open or write is offered to
// every other backend as well, GStreamer among them, which loads its plugins, prints warnings of its own and
// leaks memory on the way (AddressSanitizer's leak report).
int video_api() { return cv::videoio_registry::hasBackend(cv::CAP_FFMPEG) ? cv::CAP_FFMPEG : cv::CAP_ANY; }

class VideoReader final : public FrameReader {
 public:
  VideoReader(const std::filesystem::path& path, std::uint64_t max_pixels)
      : path_(path), capture_(path.string(), video_api()) {
    if (!capture_.isOpened()) throw IoError(path, "cannot open as a video (missing, unreadable or no decoder)");
    const double width = capture_.get(cv::CAP_PROP_FRAME_WIDTH), height = capture_.get(cv::CAP_PROP_FRAME_HEIGHT);
    if (width >= 1 && height >= 1 && width * height > static_cast<double>(max_pixels)) {
      throw PixelLimitError(path, pixel_limit_reason(static_cast<std::uint64_t>(width),
                                                     static_cast<std::uint64_t>(height), max_pixels) +
                                      " (the frame size the video declares; no frame was decoded)");
    }
  }
  std::optional<Size> next_size() override {
    if (!capture_.read(bgr_) || bgr_.empty()) return std::nullopt;
    const Size size{bgr_.cols, bgr_.rows};
    if (frames_ == 0) first_ = size;
    if (size != first_) {
      throw IoError(path_, "frame " + std::to_string(frames_) + " is " + to_string(size) + " but the stream began at " +
                               to_string(first_));
    }
    if (bgr_.type() != CV_8UC3) throw IoError(path_, "frame " + std::to_string(frames_) + " is not 8-bit BGR");
    return size;
  }
  std::optional<double> frame_rate() const override {
    const double fps = capture_.get(cv::CAP_PROP_FPS);
    return fps > 0 ? std::optional(fps) : std::nullopt;
  }
  std::string decoder() const override { return "CPU (OpenCV)"; }
  void read(FrameView frame) override {
    cv::Mat rgb(frame.size.height, frame.size.width, CV_8UC3, frame.data);
    cv::cvtColor(bgr_, rgb, cv::COLOR_BGR2RGB);  // the one pass that must happen anyway lands in the engine's buffer
    ++frames_;
  }

 private:
  std::filesystem::path path_;
  cv::VideoCapture capture_;
  cv::Mat bgr_;
  Size first_;
  std::uint64_t frames_ = 0;
};

// OpenCV's VideoWriter reports no failed write, so the finished temporary is opened again and must hold every
// frame before it is renamed into place; when it does not, a probe write asks the OS why.
class VideoWriter final : public FrameWriter {
 public:
  VideoWriter(const std::filesystem::path& path, Size size, double fps, Existing existing, std::string audio,
              std::string tags_not_declared)
      : temporary_(path),
        size_(size),
        existing_(existing),
        audio_(std::move(audio)),
        tags_not_declared_(std::move(tags_not_declared)) {
    const std::string ext = lowercase_extension(path);
    // OpenCV's FFmpeg writer encodes 4:2:0 and rounds an odd width or height down, dropping a column or a row.
    if (size.width % 2 != 0 || size.height % 2 != 0) {
      throw IoError(path, "a video of " + to_string(size) + ": OpenCV's writer (" +
                              (ext.empty() ? std::string("this name") : ext) +
                              ") takes even widths and heights only and would drop the last column or row; " +
                              (timed_video_encoder().empty() ? "" : "write .mkv, .mp4 or .mov, or ") +
                              "resize to an even size");
    }
    const int fourcc = ext == ".avi"   ? cv::VideoWriter::fourcc('M', 'J', 'P', 'G')
                       : ext == ".mkv" ? cv::VideoWriter::fourcc('X', 'V', 'I', 'D')
                                       : cv::VideoWriter::fourcc('m', 'p', '4', 'v');
    const cv::Size frame_size(size.width, size.height);
    if (!writer_.open(temporary_.name().string(), video_api(), fourcc, fps, frame_size, true)) {
      throw IoError(path, "cannot open for writing as video (folder missing, no permission, disk full, or no encoder "
                          "for " + (ext.empty() ? std::string("this name") : ext) + ")");
    }
  }
  void write(ConstFrameView frame, std::optional<double>) override {  // at `fps`: OpenCV takes no times
    if (frame.size != size_) {
      throw IoError(temporary_.destination(),
                    "frame of " + to_string(frame.size) + " in a video of " + to_string(size_));
    }
    const cv::Mat rgb(frame.size.height, frame.size.width, CV_8UC3, const_cast<std::uint8_t*>(frame.data));
    cv::cvtColor(rgb, bgr_, cv::COLOR_RGB2BGR);
    writer_.write(bgr_);
    ++frames_;
  }
  void close() override {
    writer_.release();
    const std::uint64_t found = frames_in(temporary_.name());
    if (found != frames_) {
      const std::string reason = append_failure_reason(temporary_.name());
      throw IoError(temporary_.destination(),
                    "writing the video failed" + (reason.empty() ? std::string() : ": " + reason) + " (the file holds " +
                        std::to_string(found) + " of " + std::to_string(frames_) +
                        " frames); nothing was written under this name");
    }
    temporary_.commit(existing_);
  }
  std::string audio() const override { return audio_; }
  std::string tags_not_declared() const override { return tags_not_declared_; }

 private:
  // Frames a video file declares, or 0 when it cannot be opened (a container cut short has no index).
  static std::uint64_t frames_in(const std::filesystem::path& path) {
    cv::VideoCapture capture(path.string(), video_api());
    if (!capture.isOpened()) return 0;
    const double count = capture.get(cv::CAP_PROP_FRAME_COUNT);
    return count > 0 ? static_cast<std::uint64_t>(count) : 0;
  }

  TemporaryFile temporary_;
  Size size_;
  Existing existing_;
  std::string audio_;
  std::string tags_not_declared_;
  cv::VideoWriter writer_;
  cv::Mat bgr_;
  std::uint64_t frames_ = 0;
};

}  // namespace

std::unique_ptr<FrameReader> open_video_reader(const std::filesystem::path& path, std::uint64_t max_pixels,
                                               int cancel_fd) {
  if (ffmpeg_video_decoding_unavailable().empty()) return open_ffmpeg_video_reader(path, max_pixels, cancel_fd);
  return std::make_unique<VideoReader>(path, max_pixels);
}

std::optional<double> video_fps(const std::filesystem::path& path) {
  cv::VideoCapture capture(path.string(), video_api());
  const double fps = capture.isOpened() ? capture.get(cv::CAP_PROP_FPS) : 0.0;
  return fps > 0 ? std::optional(fps) : std::nullopt;
}

std::unique_ptr<FrameWriter> open_video_writer(const std::filesystem::path& path, Size size, double fps,
                                               Existing existing, const std::filesystem::path& audio_from,
                                               const VideoDisplayTags& tags) {
  if (writes_timed_video(path)) return open_timed_video_writer(path, size, fps, existing, audio_from, tags);
  const std::string audio = audio_from.empty() ? "" : audio_codec_of(audio_from);
  const bool anamorphic = tags.shown_as && pixel_aspect(*tags.shown_as, size) != DisplayAspect{};
  const bool colour_space = tags.color_space && *tags.color_space != RgbColorSpace{};
  const std::string lost = anamorphic && colour_space ? "pixel shape and colour space"
                           : anamorphic               ? "pixel shape"
                           : colour_space             ? "colour space"
                                                      : "";
  return std::make_unique<VideoWriter>(
      path, size, fps, existing, audio.empty() ? "" : "audio not carried: OpenCV's writer takes none",
      lost.empty()
          ? ""
          : lost + " not declared: OpenCV's writer declares square pixels and no colour space");
}

#else

namespace {
[[noreturn]] void no_video(const std::filesystem::path& path) {
  throw IoError(path, "this video file needs a build with OpenCV or FFmpeg's libraries (this one takes raw rgb24, "
                      "--input - / --output -, and NVDEC's streams where built in)");
}
}  // namespace

std::unique_ptr<FrameReader> open_video_reader(const std::filesystem::path& path, std::uint64_t max_pixels,
                                               int cancel_fd) {
  if (ffmpeg_video_decoding_unavailable().empty()) return open_ffmpeg_video_reader(path, max_pixels, cancel_fd);
  no_video(path);
}
std::optional<double> video_fps(const std::filesystem::path& path) { no_video(path); }
std::unique_ptr<FrameWriter> open_video_writer(const std::filesystem::path& path, Size size, double fps,
                                               Existing existing, const std::filesystem::path& audio_from,
                                               const VideoDisplayTags& tags) {
  if (writes_timed_video(path)) return open_timed_video_writer(path, size, fps, existing, audio_from, tags);
  no_video(path);
}

#endif

std::string video_writer_description(const std::filesystem::path& path) {
  if (writes_timed_video(path)) return timed_video_encoder() + ", each frame at its time";
  return has_opencv_codecs() ? "OpenCV" : "none in this build";
}

std::string video_writers_description() {
  const std::string opencv = has_opencv_codecs() ? "OpenCV, at one frame rate" : "none in this build";
  if (!writes_timed_video("video.mp4")) return opencv;
  return ".mp4, .mkv and .mov: " + timed_video_encoder() + ", each frame at its time; other names: " + opencv;
}

std::string video_readers_description() {
  if (ffmpeg_video_decoding_unavailable().empty()) {
    return ffmpeg_video_decoder_version() + ", every codec it has, each frame at its time";
  }
  return has_opencv_codecs() ? "OpenCV's VideoCapture, frames 1 / fps apart" : "none in this build (raw rgb24 only)";
}

namespace {

class VideoWriterAtFirstFrame final : public FrameWriter {
 public:
  VideoWriterAtFirstFrame(std::filesystem::path path, double fps, Existing existing, std::filesystem::path audio_from,
                          const VideoDisplayTags& tags)
      : path_(std::move(path)), fps_(fps), existing_(existing), audio_from_(std::move(audio_from)), tags_(tags) {}
  void write(ConstFrameView frame, std::optional<double> time) override {
    if (!writer_) writer_ = open_video_writer(path_, frame.size, fps_, existing_, audio_from_, tags_);
    writer_->write(frame, time);
  }
  void close() override {
    if (writer_) writer_->close();
  }
  std::string audio() const override { return writer_ ? writer_->audio() : std::string(); }
  std::string tags_not_declared() const override { return writer_ ? writer_->tags_not_declared() : std::string(); }

 private:
  std::filesystem::path path_;
  double fps_;
  Existing existing_;
  std::filesystem::path audio_from_;
  VideoDisplayTags tags_;
  std::unique_ptr<FrameWriter> writer_;
};

}  // namespace

std::unique_ptr<FrameWriter> open_video_writer_at_first_frame(const std::filesystem::path& path, double fps,
                                                              Existing existing,
                                                              const std::filesystem::path& audio_from,
                                                              const VideoDisplayTags& tags) {
  return std::make_unique<VideoWriterAtFirstFrame>(path, fps, existing, audio_from, tags);
}

FrameStreamSource::FrameStreamSource(FrameReader& reader, std::string name, const Chain& chain,
                                     std::uint64_t max_pixels, bool keep_frame_times)
    : reader_(reader), name_(std::move(name)), chain_(chain), max_pixels_(max_pixels),
      keep_frame_times_(keep_frame_times) {}

std::optional<Item> FrameStreamSource::next() {
  try {
    next_size_ = reader_.next_size();
  } catch (const StreamCancelled&) {
    return std::nullopt;  // between frames: nothing was lost
  }
  if (!next_size_) return std::nullopt;
  const Size size = *next_size_;
  const std::string frame = name_ + ": frame " + std::to_string(frames_read_);
  if (!first_) first_ = size;
  if (size != *first_) {
    throw IoError(frame + " is " + to_string(size) + " but the stream began at " + to_string(*first_) +
                  "; a stream keeps one frame size");
  }
  const Size largest = largest_frame(chain_, size);
  if (largest.pixels() > max_pixels_) {
    throw PixelLimitError(frame + ": " +
                          (largest == size ? "the frame" : "the chain makes a " + to_string(largest) + " frame that") +
                          " has " + std::to_string(largest.pixels()) + " pixels, more than the limit of " +
                          std::to_string(max_pixels_));
  }
  const std::optional<double> time = reader_.frame_time();
  if (keep_frame_times_) frame_times_.push_back(time);
  return Item{frames_read_, frame, {}, false, time};
}

std::string timestamps_v2(const std::vector<std::optional<double>>& times, std::uint64_t frames, double fps) {
  std::string text = "# timestamp format v2\n";
  double previous = 0;
  for (std::uint64_t n = 0; n < frames; ++n) {
    const std::optional<double> own = n < times.size() ? times[n] : std::nullopt;
    const double seconds = own ? *own : n == 0 ? 0.0 : previous + 1 / fps;
    char line[48];
    std::snprintf(line, sizeof line, "%.3f\n", seconds * 1000);
    text += line;
    previous = seconds;
  }
  return text;
}

std::vector<std::string> FrameStreamSource::read(const Item&, const FrameAllocator& allocate) {
  reader_.read(allocate(*next_size_));
  ++frames_read_;
  return {};
}

ImageSequenceSink::ImageSequenceSink(std::filesystem::path folder, std::string extension, int quality,
                                     Existing existing, const GpuJpegEncoders* gpu_encoders)
    : folder_(std::move(folder)),
      extension_(std::move(extension)),
      quality_(quality),
      existing_(existing),
      gpu_encoders_(extension_ == ".jpg" ? gpu_encoders : nullptr) {}

// With the first frame, not before: a stream that writes none leaves no folder behind. A failure leaves it
// unmade, so each later frame tries again.
void ImageSequenceSink::make_folder() {
  std::lock_guard lock(folder_mutex_);
  if (folder_made_) return;
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  if (error) throw IoError(folder_, "cannot create the folder: " + error.message());
  folder_made_ = true;
}

std::filesystem::path ImageSequenceSink::frame_path(const std::filesystem::path& folder, std::uint64_t index,
                                                    const std::string& extension) {
  char name[32];
  std::snprintf(name, sizeof name, "%06llu", static_cast<unsigned long long>(index));
  return folder / (name + extension);
}

bool ImageSequenceSink::is_frame_name(const std::string& name, const std::string& extension) {
  const std::size_t digits = name.size() - std::min(name.size(), extension.size());
  return name.ends_with(extension) && digits >= 6 &&
         std::all_of(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(digits),
                     [](unsigned char c) { return std::isdigit(c) != 0; });
}

void ImageSequenceSink::write(const Item& item, ConstFrameView frame) {
  make_folder();
  write_image(frame_path(folder_, item.index, extension_), frame, quality_, existing_);
}

void ImageSequenceSink::write_from_device(const Item& item, DeviceFrame frame) {
  make_folder();
  write_file_atomically(frame_path(folder_, item.index, extension_), gpu_encoders_->on(frame.device).encode(frame),
                        existing_);
}

std::vector<std::string> FrameStreamSource::read_on_device(const Item& item, const FrameAllocator& allocate,
                                                           const DeviceFrameAllocator& allocate_on_device,
                                                           int /*device*/) {
  if (!reader_.decodes_on_device()) return read(item, allocate);
  reader_.read_to_device(allocate_on_device(*next_size_));
  ++frames_read_;
  return {};
}

}  // namespace imgpipe::io
