// Where each input's output goes, and the checks that keep inputs safe from the outputs.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe::app {

struct FilePlan {
  std::filesystem::path input;   // input folder / relative path
  std::filesystem::path output;  // output folder / relative path, extension per --format
  std::string refusal;           // why this file will not be written, or empty
};

// Throws UsageError when the output folder is the input folder or lies inside it (outputs would become inputs).
void check_folders(const std::filesystem::path& input_dir, const std::filesystem::path& output_dir);

// One plan per image under input_dir, in sorted order. `format` is "same" or an extension without its dot.
// A file is refused (not failed silently) when its output exists and `overwrite` is off, when another
// input already maps to the same output, or when the output path would land on an input.
std::vector<FilePlan> plan_outputs(const std::filesystem::path& input_dir, const std::filesystem::path& output_dir,
                                   std::string_view format, bool overwrite);

}  // namespace imgpipe::app
