// fuzz_size: the "WxH" size grammar.
// parse_size reads "WxH" for both resize= and the raw stream's --size; this target reaches it through
// parse_chain, feeding "resize=" + input, and checks the result against an independent reference of the
// documented grammar:
//   resize=WxH[:linear|nearest], W and H decimal integers from 1 to kMaxDimension, blanks/tabs allowed
//   around each ':'-separated argument.
// Inputs holding ',' are skipped: that is the chain's op separator, covered by fuzz_chain.
// Properties: parse_chain accepts exactly what the reference accepts, with the same size and interpolation;
// it throws nothing but ChainError; the accepted size round-trips through to_string.
#include "chain.hpp"
#include "fuzz_check.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace {

using namespace imgpipe;
using imgpipe::fuzz::fail;

constexpr const char* kTarget = "fuzz_size";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One decimal integer 1..kMaxDimension: digits only (leading zeros allowed), no sign.
std::optional<int> reference_dimension(std::string_view s) {
  if (s.empty()) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
    if (v > kMaxDimension) return std::nullopt;
  }
  if (v < 1) return std::nullopt;
  return static_cast<int>(v);
}

std::optional<Resize> reference_resize(std::string_view args) {
  std::string_view dims = args, interp;
  const auto colon = args.find(':');
  if (colon != std::string_view::npos) {
    dims = args.substr(0, colon);
    interp = trim(args.substr(colon + 1));
    if (interp != "linear" && interp != "nearest") return std::nullopt;  // also rejects a second ':'
  }
  dims = trim(dims);
  const auto x = dims.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  const auto w = reference_dimension(dims.substr(0, x));
  const auto h = reference_dimension(dims.substr(x + 1));
  if (!w || !h) return std::nullopt;
  Resize r;
  r.size = {*w, *h};
  r.interp = interp == "nearest" ? Interp::nearest : Interp::linear;
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  if (input.find(',') != std::string::npos) return 0;
  const std::string text = "resize=" + input;
  const std::optional<Resize> expected = reference_resize(trim(input));

  std::optional<Resize> got;
  try {
    const Chain chain = parse_chain(text);
    if (chain.ops.size() != 1 || !std::holds_alternative<Resize>(chain.ops[0])) {
      fail(kTarget, "'" + text + "' did not parse to exactly one resize");
    }
    got = std::get<Resize>(chain.ops[0]);
  } catch (const ChainError&) {
  }

  if (expected.has_value() != got.has_value()) {
    fail(kTarget, "'" + text + "': parse_chain " + (got ? "accepts" : "rejects") + " it, the grammar " +
                      (expected ? "accepts" : "rejects") + " it");
  }
  if (!got) return 0;
  if (got->size != expected->size || got->interp != expected->interp) {
    fail(kTarget, "'" + text + "' parsed to " + to_string(got->size) + ", the grammar says " + to_string(expected->size));
  }
  const std::string printed = to_string(Op{*got});
  const Chain again = parse_chain(printed);  // a ChainError here escapes: a crash with the input
  if (std::get<Resize>(again.ops.at(0)).size != got->size) fail(kTarget, "'" + printed + "' does not round-trip");
  return 0;
}
