#include "backend_choice.hpp"

#include <iostream>
#include <mutex>
#include <string>

namespace imgpipe::app {

BackendKind choose_backend_kind(std::string_view choice) {
  if (choice != "auto") return parse_backend_kind(choice);
  std::string notice;
  const BackendKind kind = resolve_auto_backend(&notice);
  // Once a process: a folder of videos chooses for each video, on several threads at once.
  static std::once_flag said;
  if (!notice.empty()) std::call_once(said, [&] { std::cerr << "imgpipe: " + notice + "\n" << std::flush; });
  return kind;
}

}  // namespace imgpipe::app
