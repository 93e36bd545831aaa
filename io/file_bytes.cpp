#include "file_bytes.hpp"

#include "io_error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

namespace imgpipe::io {
namespace {

std::string system_reason(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Closes on every path out, so an exception never leaks a descriptor.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // close() can report a failed write (NFS, quotas), so writers check it.
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

// Hidden, unique per process and call, in the destination's own folder so the rename never crosses file systems.
std::filesystem::path temporary_name_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  std::string name(".");
  name += path.filename().string();
  name += ".imgpipe-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  return path.parent_path() / name;
}

}  // namespace

std::vector<std::uint8_t> read_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer must not hang the run; it is refused below as not a regular file.
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (file.get() < 0) throw IoError(path, system_reason("cannot open"));
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) throw IoError(path, system_reason("cannot stat"));
  if (S_ISDIR(info.st_mode)) throw IoError(path, "is a directory, not an image file");
  if (!S_ISREG(info.st_mode)) throw IoError(path, "is not a regular file (a FIFO, socket or device)");
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    throw PixelLimitError(path, "the file is " + std::to_string(info.st_size) +
                                    " bytes, more than any image within the pixel limit can need (" +
                                    std::to_string(max_bytes) + " bytes); refused without reading it");
  }

  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(file.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(path, system_reason("cannot read"));
    if (n == 0) throw IoError(path, "file shrank while it was being read");
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

std::uint64_t max_image_file_bytes(std::uint64_t max_pixels) {
  constexpr std::uint64_t kSlack = std::uint64_t{64} << 20;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (max_pixels > (kMax - kSlack) / 8) return kMax;
  return max_pixels * 8 + kSlack;
}

void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes,
                           Existing existing) {
  const std::filesystem::path temporary = temporary_name_for(path);
  auto fail = [&](const std::string& reason) {
    ::unlink(temporary.c_str());
    throw IoError(path, reason);
  };

  FileDescriptor file(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (file.get() < 0) throw IoError(path, system_reason("cannot create a temporary file in its folder"));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(file.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(system_reason("cannot write"));  // ENOSPC, EDQUOT, EFBIG (ulimit -f), EIO...
    done += static_cast<std::size_t>(n);
  }
  if (file.close() != 0) fail(system_reason("cannot write"));

  if (existing == Existing::replace) {
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      fail(system_reason("cannot rename the finished temporary file into place"));
    }
    return;
  }
  // Never replace: renameat2(RENAME_NOREPLACE), or link + unlink where the file system lacks it; both refuse
  // atomically when `path` exists.
  if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno == EINVAL || errno == ENOSYS) {
    if (::link(temporary.c_str(), path.c_str()) == 0) {
      ::unlink(temporary.c_str());
      return;
    }
  }
  if (errno == EEXIST) fail("exists (it appeared while imgpipe was writing); not replaced");
  fail(system_reason("cannot rename the finished temporary file into place"));
}

}  // namespace imgpipe::io
