// The colour space a video's RGB values are in.
#pragma once

namespace imgpipe::io {

// A video's primaries and transfer function as ITU-T H.273 code points, the numbers H.264, HEVC, Matroska, MP4
// and FFmpeg share (primaries 1: BT.709, 9: BT.2020; transfer 1: BT.709, 16: PQ, 18: HLG; 2: unspecified).
// imgpipe turns a video's YUV into RGB by its matrix and range and leaves primaries and transfer as they were, so
// frames decoded from a video are in its RGB colour space, and a video made from them declares the same one:
// an HDR video keeps its PQ or HLG values, which players show right only when the output says so.
struct RgbColorSpace {
  static constexpr int kUnspecified = 2;
  int primaries = kUnspecified;
  int transfer = kUnspecified;
  bool operator==(const RgbColorSpace&) const = default;
};

// Whether H.273 defines these code points (unspecified included); 0, 3 and the gaps are reserved.
constexpr bool h273_defines_primaries(int code) {
  return code == 1 || code == 2 || (code >= 4 && code <= 12) || code == 22;
}
constexpr bool h273_defines_transfer(int code) { return code == 1 || code == 2 || (code >= 4 && code <= 18); }

}  // namespace imgpipe::io
