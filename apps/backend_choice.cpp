#include "backend_choice.hpp"

#include <iostream>
#include <string>

namespace imgpipe::app {

BackendKind choose_backend_kind(std::string_view choice) {
  if (choice != "auto") return parse_backend_kind(choice);
  std::string notice;
  const BackendKind kind = resolve_auto_backend(&notice);
  if (!notice.empty()) std::cerr << "imgpipe: " << notice << "\n";
  return kind;
}

}  // namespace imgpipe::app
