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
  std::string refusal;           // why this file will not be written (a failure), or empty
  bool skip = false;             // its output exists and --skip-existing was given (not a failure)
};

// What to do with an output that already exists.
enum class ExistingOutputs {
  refuse,     // the default: report the file as failed, keep the output
  overwrite,  // --overwrite
  skip,       // --skip-existing: count the file as skipped, keep the output (resumes an interrupted batch)
};

// Throws UsageError when the output folder is the input folder, lies inside it, or holds it (outputs would
// become inputs, or land among them). Links are resolved first.
void check_folders(const std::filesystem::path& input_dir, const std::filesystem::path& output_dir);

// One plan per image under input_dir, in sorted order. `format` is "same" or an extension without its dot.
// A file is refused (not failed silently) when its output exists and `existing` is refuse, or when another
// input already maps to the same output. Entries named like images that cannot be read as files (folders,
// broken links, FIFOs...) and folders that cannot be listed get a plan too, refused with the reason, so the
// batch reports them.
// With `follow_links`, folders reached through links are walked too (see io::FolderWalk; never into the output
// folder). Also counts what the walk passed over: files that are not images, links to folders not followed.
struct BatchPlan {
  std::vector<FilePlan> files;
  std::size_t unsupported = 0;
  std::size_t links_not_followed = 0;
};
BatchPlan plan_outputs(const std::filesystem::path& input_dir, const std::filesystem::path& output_dir,
                       std::string_view format, ExistingOutputs existing, bool follow_links = false);

}  // namespace imgpipe::app
