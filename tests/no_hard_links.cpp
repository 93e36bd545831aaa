// Loaded into imgpipe with LD_PRELOAD, makes every file system look like a FAT or exFAT drive or an SMB share:
// no renameat2 flags (EINVAL) and no hard links (EPERM).
#include <cerrno>

extern "C" int renameat2(int, const char*, int, const char*, unsigned int) {
  errno = EINVAL;
  return -1;
}

extern "C" int link(const char*, const char*) {
  errno = EPERM;
  return -1;
}
