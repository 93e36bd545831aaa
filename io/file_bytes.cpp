#include "file_bytes.hpp"

#include "io_error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <string>
#include <string_view>

namespace imgpipe::io {
namespace {

// Whether `path` leads (through links) to something that is written into rather than replaced: a device such as
// /dev/null or a terminal, a FIFO, a socket.
bool is_written_into(const std::filesystem::path& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode);
}

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

// The names of uncommitted temporaries, readable from a signal handler: a slot is claimed (kWriting) with a
// compare-and-swap, its name copied, then published (kLive); the handler unlinks live slots only.
constexpr int kRegistrySlots = 256;  // batch writes at most kMaxSlots files at once
constexpr int kFree = 0, kWriting = 1, kLive = 2;
struct RegistrySlot {
  std::atomic<int> state{kFree};
  char name[PATH_MAX];
};
RegistrySlot g_registry[kRegistrySlots];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

// -1 when every slot is taken (more than kRegistrySlots files being written at once): that file is then only
// removed by its owner, not by an abort.
int register_temporary(const std::filesystem::path& name) {
  const std::string& text = name.native();
  if (text.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kRegistrySlots; ++i) {
    int expected = kFree;
    if (!g_registry[i].state.compare_exchange_strong(expected, kWriting)) continue;
    std::memcpy(g_registry[i].name, text.c_str(), text.size() + 1);
    g_registry[i].state.store(kLive);
    return i;
  }
  return -1;
}

void unregister_temporary(int slot) {
  if (slot >= 0) g_registry[slot].state.store(kFree);
}

// Temporaries are created fenced against an abort: the abort first sets g_aborting, then waits for the creations
// in progress (g_creating) before it unlinks, and a creation that starts later sees g_aborting and never
// happens. Without the fence a writer thread could create its temporary just after the abort had unlinked the
// live ones, and leave it behind.
std::atomic<bool> g_aborting{false};
std::atomic<int> g_creating{0};

int create_temporary(const std::filesystem::path& name) {
  g_creating.fetch_add(1);
  if (g_aborting.load()) {
    g_creating.fetch_sub(1);
    for (;;) ::pause();  // the aborting thread is about to _exit
  }
  const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  g_creating.fetch_sub(1);
  return fd;
}

}  // namespace

std::filesystem::path temporary_name_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  // The extension stays last (the writers pick the format by it), and the file's name is cut short where the
  // whole would pass the file system's limit on a name, at a UTF-8 character's start.
  const std::string suffix = ".imgpipe-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) +
                             path.extension().string();
  std::string kept = path.filename().string();
  const std::size_t room = NAME_MAX - 1 - suffix.size();
  if (kept.size() > room) {
    std::size_t cut = room;
    while (cut > 0 && (static_cast<unsigned char>(kept[cut]) & 0xC0u) == 0x80u) --cut;
    kept.resize(cut);
  }
  return path.parent_path() / ("." + kept + suffix);
}

namespace {

// Moves `at` past a run of one or more decimal digits; false when there is none.
bool skip_digits(std::string_view text, std::size_t& at) {
  const std::size_t start = at;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
  return at > start;
}

}  // namespace

// The shape temporary_name_for makes: "." NAME ".imgpipe-tmp-" PID "-" COUNT [EXTENSION without a dot]. Matched by
// hand: std::regex crashed compiling its pattern in the Python module once NumPy had been imported first (H200
// machine, GCC 13, NumPy 2.5.2), and a folder walk needs nothing more than this.
bool is_temporary_name(const std::filesystem::path& filename) {
  static constexpr std::string_view marker = ".imgpipe-tmp-";
  const std::string name = filename.string();
  if (name.empty() || name[0] != '.') return false;
  for (std::size_t found = name.find(marker, 1); found != std::string::npos; found = name.find(marker, found + 1)) {
    std::size_t at = found + marker.size();
    if (!skip_digits(name, at) || at == name.size() || name[at] != '-') continue;
    ++at;
    if (!skip_digits(name, at)) continue;
    if (at == name.size() || (name[at] == '.' && name.find('.', at + 1) == std::string::npos)) return true;
  }
  return false;
}

TemporaryFile::TemporaryFile(std::filesystem::path path)
    : path_(std::move(path)), temporary_(temporary_name_for(path_)), registry_slot_(register_temporary(temporary_)) {}

TemporaryFile::~TemporaryFile() {
  if (!committed_) ::unlink(temporary_.c_str());
  unregister_temporary(registry_slot_);
}

void TemporaryFile::commit(Existing existing) {
  auto fail = [&](const std::string& reason) {
    ::unlink(temporary_.c_str());
    throw IoError(path_, reason);
  };
  if (is_written_into(path_)) fail("is a device, a FIFO or a socket, which a finished file is never renamed over");
  if (existing == Existing::replace) {
    if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
      fail(system_reason("cannot rename the finished temporary file into place"));
    }
    committed_ = true;
    return;
  }
  // Never replace: renameat2(RENAME_NOREPLACE), or link + unlink where the file system lacks it; both refuse
  // atomically when the destination exists. File systems with neither (FAT and exFAT drives, SMB shares, many
  // FUSE mounts) get a check before a plain rename, which only a writer racing imgpipe for the name can beat.
  if (::renameat2(AT_FDCWD, temporary_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE) == 0) {
    committed_ = true;
    return;
  }
  if (errno == EINVAL || errno == ENOSYS) {
    if (::link(temporary_.c_str(), path_.c_str()) == 0) {
      ::unlink(temporary_.c_str());
      committed_ = true;
      return;
    }
    if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS) {
      struct stat existing_file {};
      if (::lstat(path_.c_str(), &existing_file) == 0) {
        errno = EEXIST;
      } else if (errno == ENOENT && ::rename(temporary_.c_str(), path_.c_str()) == 0) {
        committed_ = true;
        return;
      }
    }
  }
  if (errno == EEXIST) fail("exists (it appeared while imgpipe was writing); not replaced");
  fail(system_reason("cannot rename the finished temporary file into place"));
}

void remove_unfinished_temporaries() noexcept {
  g_aborting.store(true);
  // At most 100 ms: the signal may have interrupted a creation on this very thread, which then never ends (its
  // temporary, if already created, is registered and unlinked below).
  for (int i = 0; i < 1000 && g_creating.load() != 0; ++i) {
    timespec tick{0, 100000};
    ::nanosleep(&tick, nullptr);
  }
  for (RegistrySlot& slot : g_registry) {
    if (slot.state.load() == kLive) ::unlink(slot.name);
  }
}

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

namespace {

void write_all(int fd, const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(path, system_reason("cannot write"));  // ENOSPC, EDQUOT, EFBIG (ulimit -f), EIO...
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes, Existing existing) {
  if (is_written_into(path)) {
    FileDescriptor target(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (target.get() < 0) throw IoError(path, system_reason("cannot open"));
    write_all(target.get(), path, bytes);
    if (target.close() != 0) throw IoError(path, system_reason("cannot write"));
    return;
  }
  TemporaryFile temporary(path);
  FileDescriptor file(create_temporary(temporary.name()));
  if (file.get() < 0) throw IoError(path, system_reason("cannot create a temporary file in its folder"));
  write_all(file.get(), path, bytes);
  if (file.close() != 0) throw IoError(path, system_reason("cannot write"));
  temporary.commit(existing);
}

std::string append_failure_reason(const std::filesystem::path& path) {
  FileDescriptor file(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (file.get() < 0) return system_reason("cannot open");
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) return system_reason("cannot stat");
  static const char kZeros[64 * 1024] = {};
  std::string reason;
  for (int i = 0; i < 16 && reason.empty(); ++i) {  // 1 MiB: more than a file system's reserve of a few blocks
    if (::write(file.get(), kZeros, sizeof kZeros) < 0) reason = std::strerror(errno);
  }
  if (::ftruncate(file.get(), info.st_size) != 0 && reason.empty()) reason = system_reason("cannot truncate");
  if (file.close() != 0 && reason.empty()) reason = std::strerror(errno);
  return reason;
}

}  // namespace imgpipe::io
