#include "image.hpp"

#include <stdexcept>

namespace imgpipe {

std::string to_string(Size size) { return std::to_string(size.width) + "x" + std::to_string(size.height); }

Image::Image(Size size, std::vector<std::uint8_t> pixels) : size_(size), pixels_(std::move(pixels)) {
  if (pixels_.size() != size.rgb_bytes()) {
    throw std::invalid_argument("Image: " + std::to_string(pixels_.size()) + " bytes do not make a " +
                                to_string(size) + " RGB image");
  }
}

}  // namespace imgpipe
