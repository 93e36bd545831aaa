// Small helpers for tests that touch files.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace imgpipe::testing {

// A fresh folder under the system's temp folder, named after the running test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("imgpipe-") + test->test_suite_name() + "-" + test->name() + "-" +
                       std::to_string(::getpid());
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterised test names
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// `path` in single quotes, for a shell command line.
inline std::string quoted(const std::filesystem::path& path) {
  std::string text(1, '\'');  // built up, not "'" + ...: GCC 12 warns falsely (-Wrestrict) on that form
  text += path.string();
  text += '\'';
  return text;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `binary arguments` through the shell, grouped so that redirections inside `arguments` apply to the binary
// alone while its stderr still comes back; `environment` (VAR=value ...) is put in front.
inline CommandResult run_command(const std::string& binary, const std::string& arguments,
                                 const std::string& environment = "") {
  const std::string command = "{ " + environment + " '" + binary + "' " + arguments + "; } 2>&1";
  CommandResult run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) run.output.append(buffer, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

inline std::vector<std::uint8_t> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace imgpipe::testing
