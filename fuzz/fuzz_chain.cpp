// fuzz_chain: imgpipe::parse_chain on arbitrary text.
// Expected failure: ChainError, naming a token taken from the input. Anything else thrown, a sanitizer report or a violated property is a bug.
// Properties on success:
//   - at least one op, and every parsed value is inside the documented ranges;
//   - to_string(chain) parses again, to a chain that prints the same and holds the same values
//     (so the printed form is a faithful, reusable description of the chain);
//   - output_size stays within 1..kMaxDimension for input sizes 1..kMaxDimension (no overflow, no zero).
#include "chain.hpp"
#include "fuzz_check.hpp"

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace {

using namespace imgpipe;
using imgpipe::fuzz::fail;

constexpr const char* kTarget = "fuzz_chain";

bool same_double(double a, double b) { return a == b && std::signbit(a) == std::signbit(b); }

bool same_op(const Op& a, const Op& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Resize>) return x.size == y.size && x.interp == y.interp;
        if constexpr (std::is_same_v<T, Gaussian>)
          return x.ksize == y.ksize && same_double(x.sigma, y.sigma) && x.border == y.border;
        if constexpr (std::is_same_v<T, Box>) return x.ksize == y.ksize && x.border == y.border;
        if constexpr (std::is_same_v<T, Sharpen> || std::is_same_v<T, Sobel>) return x.border == y.border;
        if constexpr (std::is_same_v<T, Rotate>) return x.degrees == y.degrees;
        if constexpr (std::is_same_v<T, Flip>) return x.axis == y.axis;
        return true;  // Transpose, Gray, Normalize carry nothing
      },
      a);
}

bool in_range(Size s) { return s.width >= 1 && s.height >= 1 && s.width <= kMaxDimension && s.height <= kMaxDimension; }

void check_values(const Op& op, const std::string& text) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        auto bad_k = [](int k) { return k < 3 || k > kMaxFilterSize || k % 2 == 0; };
        if constexpr (std::is_same_v<T, Resize>) {
          if (!in_range(x.size)) fail(kTarget, "resize size out of range from '" + text + "'");
        } else if constexpr (std::is_same_v<T, Gaussian>) {
          if (bad_k(x.ksize) || !std::isfinite(x.sigma) || x.sigma < 0)
            fail(kTarget, "gaussian values out of range from '" + text + "'");
        } else if constexpr (std::is_same_v<T, Box>) {
          if (bad_k(x.ksize)) fail(kTarget, "box size out of range from '" + text + "'");
        } else if constexpr (std::is_same_v<T, Rotate>) {
          if (x.degrees != 90 && x.degrees != 180 && x.degrees != 270)
            fail(kTarget, "rotate angle out of range from '" + text + "'");
        }
      },
      op);
}

void check_output_size(const Chain& chain, Size in, const std::string& text) {
  const Size out = output_size(chain, in);
  if (!in_range(out)) {
    fail(kTarget, "output_size(" + text + ", " + to_string(in) + ") = " + to_string(out));
  }
  // The byte count a backend allocates from it must not wrap either.
  if (out.rgb_bytes() / 3 / static_cast<std::size_t>(out.width) != static_cast<std::size_t>(out.height)) {
    fail(kTarget, "rgb_bytes overflows for " + to_string(out));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Chain chain;
  try {
    chain = parse_chain(text);
  } catch (const ChainError& e) {
    // The error names the bad token as written: a piece of the input.
    if (text.find(e.token()) == std::string::npos) fail(kTarget, "ChainError names '" + e.token() + "', not in the input");
    return 0;
  }  // anything else propagates: libFuzzer reports an uncaught exception as a crash

  if (chain.ops.empty()) fail(kTarget, "parse_chain accepted '" + text + "' with no ops");
  for (const Op& op : chain.ops) check_values(op, text);

  const std::string printed = to_string(chain);
  Chain again;
  try {
    again = parse_chain(printed);
  } catch (const ChainError& e) {
    fail(kTarget, "'" + text + "' prints as '" + printed + "', which does not parse: " + e.what());
  }
  const std::string reprinted = to_string(again);
  if (reprinted != printed) fail(kTarget, "'" + printed + "' reprints as '" + reprinted + "'");
  if (again.ops.size() != chain.ops.size()) fail(kTarget, "'" + printed + "' reparses to a different op count");
  for (std::size_t i = 0; i < chain.ops.size(); ++i) {
    if (!same_op(chain.ops[i], again.ops[i])) {
      fail(kTarget, "'" + text + "' prints as '" + printed + "', which parses to different values (op " +
                        std::to_string(i) + ")");
    }
  }

  // Extremes and a size derived from the input, all within the documented 1..kMaxDimension.
  check_output_size(chain, {1, 1}, text);
  check_output_size(chain, {kMaxDimension, kMaxDimension}, text);
  check_output_size(chain, {1, kMaxDimension}, text);
  const int w = 1 + static_cast<int>((size * 2654435761u) % kMaxDimension);
  const int h = 1 + static_cast<int>((size * 40503u + (size ? data[0] : 0)) % kMaxDimension);
  check_output_size(chain, {w, h}, text);
  return 0;
}
