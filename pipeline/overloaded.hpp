// Overloaded{lambdas...}: one callable with every lambda's operator(), so std::visit over an Op (or any
// variant) takes one lambda per alternative.
#pragma once

namespace imgpipe {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace imgpipe
