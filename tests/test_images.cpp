#include "test_images.hpp"

#include "ppm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

namespace imgpipe::testing {

std::vector<NamedImage> photos() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(IMGPIPE_DATA_DIR) / "ppm";
  std::vector<fs::path> paths;
  if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".ppm") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<NamedImage> images;
  for (const auto& p : paths) images.push_back({p.stem().string(), io::read_ppm(p)});
  EXPECT_FALSE(images.empty()) << "no photographs in " << dir;
  return images;
}

Image random_image(Size size, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  Image image(size);
  for (std::size_t i = 0; i < image.bytes(); ++i) image.data()[i] = static_cast<std::uint8_t>(byte(rng));
  return image;
}

Image synthetic_image(Size size, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 6.0);
  Image image(size);
  const double w = std::max(1, size.width - 1), h = std::max(1, size.height - 1);
  for (int y = 0; y < size.height; ++y)
    for (int x = 0; x < size.width; ++x) {
      const double u = x / w, v = y / h;
      const bool disc = (u - 0.6) * (u - 0.6) + (v - 0.4) * (v - 0.4) < 0.05;  // a hard edge
      const double base[3] = {255 * u, 255 * v, 128 + 100 * std::sin(12 * u + 7 * v)};
      for (int c = 0; c < 3; ++c) {
        const double value = disc ? 255 - base[c] : base[c];
        image.at(x, y, c) = static_cast<std::uint8_t>(std::clamp(value + noise(rng), 0.0, 255.0));
      }
    }
  return image;
}

int max_abs_diff(const Image& a, const Image& b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return 256;
  int worst = 0;
  for (std::size_t i = 0; i < a.bytes(); ++i) worst = std::max(worst, std::abs(a.data()[i] - b.data()[i]));
  return worst;
}

std::vector<Size> odd_sizes() {
  return {{1, 1}, {1, 97}, {97, 1}, {2, 3}, {113, 12}, {4097, 3}, {3, 515}, {33, 31}, {259, 131}};
}

}  // namespace imgpipe::testing
