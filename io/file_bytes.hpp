// Whole-file reads and crash-safe writes, shared by every codec.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace imgpipe::io {

// Throws IoError naming the path and the system's reason (missing, a directory, no permission...).
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

// Writes `bytes` to a temporary name beside `path`, then renames it over `path`, so a crash or a full
// disk never leaves a truncated file under the real name. The folder must exist. Throws IoError.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

}  // namespace imgpipe::io
