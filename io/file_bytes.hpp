// Whole-file reads and crash-safe writes, shared by every codec.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <vector>

namespace imgpipe::io {

// Throws IoError naming the path and the system's reason (missing, a directory, no permission, not a regular
// file...). Never blocks on a FIFO or a device: it is refused before anything is read. A file larger than
// `max_bytes` is refused (PixelLimitError) before it is read.
std::vector<std::uint8_t> read_file(const std::filesystem::path& path,
                                    std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// The largest file an image within `max_pixels` pixels can need: 8 bytes a pixel (16-bit RGBA, uncompressed)
// plus 64 MiB for headers and metadata. Larger files are refused unread.
std::uint64_t max_image_file_bytes(std::uint64_t max_pixels);

enum class Existing { replace, keep };

// Writes `bytes` to a temporary name beside `path` (".NAME.imgpipe-tmp-PID-N"), then renames it over `path`,
// so a crash or a full disk never leaves a truncated file under the real name. The temporary is removed on
// every failure. With Existing::keep a file that already exists at `path` is never replaced, even one that
// appeared while this was writing (the rename refuses atomically). The folder must exist. Throws IoError.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes,
                           Existing existing = Existing::replace);

}  // namespace imgpipe::io
