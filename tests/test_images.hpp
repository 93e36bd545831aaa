// Test inputs: the real photographs in data/ppm (readable without OpenCV) and seeded random images.
#pragma once

#include "image.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace imgpipe::testing {

struct NamedImage {
  std::string name;
  Image image;
};

// Every data/ppm/*.ppm, sorted by name. Fails the calling test if there are none.
std::vector<NamedImage> photos();

// Uniform random bytes from a fixed seed, so a failure can be replayed.
Image random_image(Size size, std::uint32_t seed);

// Smooth gradients with sharp edges and noise: structure like a photo at any size, for odd sizes.
Image synthetic_image(Size size, std::uint32_t seed);

// Largest |a - b| over all bytes; the sizes must match (checked with gtest).
int max_abs_diff(const Image& a, const Image& b);

// Odd sizes no tile divides: 1xN, Nx1, 113x12, 4097x3 and friends.
std::vector<Size> odd_sizes();

}  // namespace imgpipe::testing
