#include "file_bytes.hpp"

#include "io_error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
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

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) throw IoError(path, system_reason("cannot open"));
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) throw IoError(path, system_reason("cannot stat"));
  if (S_ISDIR(info.st_mode)) throw IoError(path, "is a directory, not an image file");
  if (!S_ISREG(info.st_mode)) throw IoError(path, "is not a regular file");

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

void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  const std::filesystem::path temporary = temporary_name_for(path);
  auto fail = [&](const std::string& reason) {
    ::unlink(temporary.c_str());
    throw IoError(path, reason);
  };

  FileDescriptor file(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (file.get() < 0) throw IoError(path, system_reason("cannot create"));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(file.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(system_reason("cannot write"));
    done += static_cast<std::size_t>(n);
  }
  if (file.close() != 0) fail(system_reason("cannot write"));

  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) fail("cannot rename the finished temporary file into place: " + error.message());
}

}  // namespace imgpipe::io
