// The ablation twins of the separable filter (kernels/convolve.cuh, separable_planes_variant) compute exactly
// what separable_planes computes: the benchmark's speedups compare equal work. Skips without a CUDA device.
#include "chain.hpp"
#include "convolve.cuh"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "layout.cuh"
#include "skip_without_device.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace imgpipe {
namespace {

using cuda::BorderMode;
using cuda::BorderPolicy;
using cuda::TapSource;

// The three planes of `image`'s frame after running `filter` on it, read back as one interleaved image.
template <class Filter>
Image run_planes(const Image& image, Filter&& filter) {
  const cuda::Stream stream = cuda::Stream::create();
  const cuda::Extent extent{image.width(), image.height()};
  const std::size_t row = 3 * static_cast<std::size_t>(image.width());
  cuda::DeviceBuffer aos(image.bytes());
  IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(aos.data(), image.data(), image.bytes(), cudaMemcpyHostToDevice, stream.get()));
  cuda::PlaneBuffer in(extent), out(extent);
  const cuda::ConstPlanesView whole = out.whole();
  for (const std::uint8_t* p : whole.plane) {  // poisoned, so an unwritten pixel fails
    IMGPIPE_CUDA_CHECK(cudaMemsetAsync(const_cast<std::uint8_t*>(p), 0xA5, whole.pitch * whole.extent.height,
                                       stream.get()));
  }
  cuda::deinterleave({aos.data(), extent, row}, in.view(extent), stream.get());
  filter(cuda::as_const(in.view(extent)), out.view(extent), stream.get());
  cuda::interleave(cuda::as_const(out.view(extent)), {aos.data(), extent, row}, stream.get());
  Image result(image.size());
  IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(result.data(), aos.data(), image.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  return result;
}

TEST(SeparableVariants, EqualTheOptimizedFilter) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<Size> sizes = {{1, 1}, {3, 70}, {113, 12}, {64, 32}, {257, 129}};
  for (const int ksize : {3, 5, 31}) {
    std::vector<float> taps;
    for (double w : gaussian_weights(ksize, 0.0)) taps.push_back(static_cast<float>(w));
    const cuda::ConstantTaps constant(taps);
    cuda::DeviceBuffer global(taps.size() * sizeof(float));
    IMGPIPE_CUDA_CHECK(cudaMemcpy(global.data(), taps.data(), taps.size() * sizeof(float), cudaMemcpyHostToDevice));
    const auto* global_taps = reinterpret_cast<const float*>(global.data());
    for (const Size size : sizes) {
      const Image image = testing::random_image(size, 7u + static_cast<std::uint32_t>(ksize));
      for (const BorderMode border : {BorderMode::reflect101, BorderMode::replicate}) {
        const Image expected = run_planes(image, [&](cuda::ConstPlanesView in, cuda::PlanesView out, cudaStream_t s) {
          cuda::separable_planes(in, out, constant, border, s);
        });
        for (const TapSource source : {TapSource::constant, TapSource::global}) {
          for (const BorderPolicy policy : {BorderPolicy::block_uniform, BorderPolicy::per_element}) {
            const Image got = run_planes(image, [&](cuda::ConstPlanesView in, cuda::PlanesView out, cudaStream_t s) {
              cuda::separable_planes_variant(in, out, constant, global_taps, source, policy, border, s);
            });
            EXPECT_EQ(testing::max_abs_diff(got, expected), 0)
                << "K=" << ksize << " " << to_string(size) << (source == TapSource::global ? " global" : " constant")
                << (policy == BorderPolicy::per_element ? " per-element" : " block-uniform")
                << (border == BorderMode::replicate ? " replicate" : " reflect101");
          }
        }
      }
    }
  }
}

TEST(SeparableVariants, GlobalTapsNeedAPointer) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> taps = {0.25f, 0.5f, 0.25f};
  const cuda::ConstantTaps constant(taps);
  cuda::PlaneBuffer in({8, 8}), out({8, 8});
  EXPECT_THROW(cuda::separable_planes_variant(cuda::as_const(in.view({8, 8})), out.view({8, 8}), constant, nullptr,
                                              TapSource::global, BorderPolicy::block_uniform, BorderMode::reflect101,
                                              nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace imgpipe
