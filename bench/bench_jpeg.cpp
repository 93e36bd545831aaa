// imgpipe_bench_jpeg: GPU JPEG rates on a folder of JPEG files, each row against nvJPEG's hardware backend on
// its own (the ceiling). Every file is read into memory first, so the disk is out of it:
//   hardware ceiling   nvjpegDecodeBatched on one hardware handle, batches of --max-batch files (the decoder's
//                      largest) from pinned memory
//   nvJPEG backends    the same at --batch files, from pinned, pageable and device memory (what staging the
//                      files buys), and the GPU-hybrid backend; each row says how much of its time went to the
//                      nvjpegDecodeBatched calls rather than to the wait after them. Then the hybrid backend
//                      (Huffman decoding on the CPU) from 1, 4, 8 and 16 threads, one file per call, after a
//                      check that its YCbCr planes are the hardware backend's
//   decoupled ceiling  nvJPEG's decoupled hardware decoder on its own: --decode-threads threads, each cycling
//                      through --states-per-thread decoder states, one file per decode
//   imgpipe decoder    io::GpuJpegDecoder called from --threads threads at once (its queue, fallbacks), through
//                      the decoupled decoder and through batches
//   imgpipe encoder    io::GpuJpegEncoder on the decoded frames resized to --encode-size, --threads threads
// The whole folder job (files on disk -> JPEG files) is `imgpipe batch`; docs/gpu-jpeg.md has the commands.
#include "chain.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "folder.hpp"
#include "file_bytes.hpp"
#include "gpu_backend.hpp"
#include "gpu_jpeg.hpp"
#include "ppm.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace imgpipe;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  fs::path folder;
  int batch = 128;
  int threads = 64;
  int decode_threads = 4;
  int states_per_thread = 2;
  int lanes = 1;
  int max_batch = 64;
  int encoder_states = 4;
  int quality = 90;
  std::string encode_size = "1280x720";
  int repeats = 3;
  std::string json;
};

struct Row {
  std::string name;
  std::string detail;
  double images_per_s = 0;
  double megabytes_per_s = 0;  // JPEG bytes in (decode) or out (encode)
};

void check(nvjpegStatus_t status, const char* call) {
  if (status != NVJPEG_STATUS_SUCCESS) throw std::runtime_error(std::string(call) + " failed: status " + std::to_string(status));
}

struct Files {
  std::vector<std::vector<std::uint8_t>> bytes;
  std::size_t total = 0;
};

Files read_folder(const fs::path& folder) {
  Files files;
  for (const io::FolderEntry& entry : io::list_folder(folder, {}).entries) {
    const std::string extension = io::lowercase_extension(entry.relative);
    if (!entry.problem.empty() || (extension != ".jpg" && extension != ".jpeg")) continue;
    files.bytes.push_back(io::read_file(folder / entry.relative));
    files.total += files.bytes.back().size();
  }
  if (files.bytes.empty()) throw std::runtime_error("no .jpg files under " + folder.string());
  return files;
}

// The best of `repeats` runs of `run`, which processes every file once: images/s and MB/s of `bytes`.
Row best_of(const std::string& name, const std::string& detail, int repeats, std::size_t images, std::size_t bytes,
            const std::function<void()>& run) {
  run();  // warm-up: handles, states and buffers reach their size
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return {name, detail, images / best, bytes / best / 1e6};
}

// Where a batched-decode row reads the files from.
enum class Input { pinned, pageable, device };

// One of nvJPEG's backends alone: one handle, one state, batches of `batch` files into device buffers, one
// thread. The hardware backend reads device memory through NVJPEG_BACKEND_HARDWARE_DEVICE.
Row batched_decode(const Files& files, const Options& o, nvjpegBackend_t backend, Input input, int batch_size) {
  if (backend == NVJPEG_BACKEND_HARDWARE && input == Input::device) backend = NVJPEG_BACKEND_HARDWARE_DEVICE;
  nvjpegHandle_t handle = nullptr;
  check(nvjpegCreateEx(backend, nullptr, nullptr, 0, &handle), "nvjpegCreateEx");
  const bool pinned_input = input == Input::pinned;
  nvjpegJpegState_t state = nullptr;
  check(nvjpegJpegStateCreate(handle, &state), "nvjpegJpegStateCreate");
  const cuda::Stream stream = cuda::Stream::create();
  std::vector<cuda::PinnedBuffer> pinned;
  std::vector<cuda::DeviceBuffer> on_device, outputs;
  std::vector<nvjpegImage_t> images;
  for (const auto& file : files.bytes) {
    if (pinned_input) {
      pinned.emplace_back(file.size());
      std::copy(file.begin(), file.end(), pinned.back().data());
    }
    if (input == Input::device) {
      on_device.emplace_back(file.size());
      IMGPIPE_CUDA_CHECK(cudaMemcpy(on_device.back().data(), file.data(), file.size(), cudaMemcpyHostToDevice));
    }
    int components = 0;
    nvjpegChromaSubsampling_t subsampling{};
    int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
    check(nvjpegGetImageInfo(handle, file.data(), file.size(), &components, &subsampling, widths, heights),
          "nvjpegGetImageInfo");
    outputs.emplace_back(static_cast<std::size_t>(widths[0]) * heights[0] * 3);
    nvjpegImage_t image{};
    image.channel[0] = outputs.back().data();
    image.pitch[0] = static_cast<std::size_t>(widths[0]) * 3;
    images.push_back(image);
  }
  const int batch = std::min<int>(batch_size, static_cast<int>(files.bytes.size()));
  check(nvjpegDecodeBatchedInitialize(handle, state, batch, 1, NVJPEG_OUTPUT_RGBI), "nvjpegDecodeBatchedInitialize");
  const std::size_t whole_batches = files.bytes.size() / batch * batch;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < whole_batches; ++i) bytes += files.bytes[i].size();
  const char* input_name = input == Input::pinned ? ", pinned input" : input == Input::pageable ? ", pageable input"
                                                                                              : ", device input";
  Clock::duration in_calls{}, in_all{};
  const bool hybrid = backend == NVJPEG_BACKEND_GPU_HYBRID;
  Row row = best_of(hybrid ? "nvJPEG GPU-hybrid batched decode" : "nvJPEG hardware batched decode",
                    "batch " + std::to_string(batch) + input_name, o.repeats, whole_batches, bytes, [&] {
                      std::vector<const unsigned char*> data(batch);
                      std::vector<std::size_t> lengths(batch);
                      const auto start = Clock::now();
                      for (std::size_t first = 0; first < whole_batches; first += batch) {
                        for (int i = 0; i < batch; ++i) {
                          data[i] = input == Input::pinned     ? pinned[first + i].data()
                                    : input == Input::pageable ? files.bytes[first + i].data()
                                                               : on_device[first + i].data();
                          lengths[i] = files.bytes[first + i].size();
                        }
                        const auto call = Clock::now();
                        check(nvjpegDecodeBatched(handle, state, data.data(), lengths.data(), &images[first],
                                                  stream.get()),
                              "nvjpegDecodeBatched");
                        in_calls += Clock::now() - call;
                      }
                      stream.synchronize();
                      in_all += Clock::now() - start;
                    });
  row.detail +=
      ", " + std::to_string(static_cast<int>(100.0 * in_calls / in_all)) + "% of the time in nvjpegDecodeBatched";
  nvjpegJpegStateDestroy(state);
  nvjpegDestroy(handle);
  return row;
}

// Room for a file's YCbCr planes as nvJPEG writes them (NVJPEG_OUTPUT_YUV), and the image pointing into it.
struct Planes {
  cuda::DeviceBuffer memory;
  nvjpegImage_t image{};
  std::size_t bytes[3] = {};
};

void point_planes(nvjpegHandle_t handle, const std::vector<std::uint8_t>& file, Planes& planes) {
  int components = 0;
  nvjpegChromaSubsampling_t subsampling{};
  int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
  check(nvjpegGetImageInfo(handle, file.data(), file.size(), &components, &subsampling, widths, heights),
        "nvjpegGetImageInfo");
  std::size_t total = 0;
  for (int p = 0; p < 3; ++p) {
    const int c = std::min(p, components - 1);
    planes.bytes[p] = static_cast<std::size_t>(widths[c]) * heights[c];
    total += planes.bytes[p];
  }
  planes.memory.grow(total);
  std::size_t offset = 0;
  for (int p = 0; p < 3; ++p) {
    const int c = std::min(p, components - 1);
    planes.image.channel[p] = planes.memory.data() + offset;
    planes.image.pitch[p] = static_cast<std::size_t>(widths[c]);
    offset += planes.bytes[p];
  }
}

// nvJPEG's hybrid backend (Huffman decoding on the CPU, the rest on the SMs) from `threads` threads at once, one
// file per nvjpegDecode call, each thread with its own state and stream, YCbCr planes out.
Row threaded_decode(const Files& files, const Options& o, int threads) {
  nvjpegHandle_t handle = nullptr;
  check(nvjpegCreateEx(NVJPEG_BACKEND_HYBRID, nullptr, nullptr, 0, &handle), "nvjpegCreateEx");
  struct Worker {
    nvjpegJpegState_t state = nullptr;
    cuda::Stream stream = cuda::Stream::create();
    Planes planes;
  };
  std::vector<Worker> workers(threads);
  for (Worker& w : workers) check(nvjpegJpegStateCreate(handle, &w.state), "nvjpegJpegStateCreate");
  Row row = best_of("nvJPEG hybrid decode, CPU Huffman", std::to_string(threads) + " threads, one state each",
                    o.repeats, files.bytes.size(), files.total, [&] {
                      std::atomic<std::size_t> next = 0;
                      std::vector<std::jthread> pool;
                      for (Worker& w : workers) {
                        pool.emplace_back([&] {
                          IMGPIPE_CUDA_CHECK(cudaSetDevice(0));
                          for (std::size_t i = next++; i < files.bytes.size(); i = next++) {
                            point_planes(handle, files.bytes[i], w.planes);
                            check(nvjpegDecode(handle, w.state, files.bytes[i].data(), files.bytes[i].size(),
                                               NVJPEG_OUTPUT_YUV, &w.planes.image, w.stream.get()),
                                  "nvjpegDecode");
                            w.stream.synchronize();
                          }
                        });
                      }
                    });
  for (Worker& w : workers) nvjpegJpegStateDestroy(w.state);
  nvjpegDestroy(handle);
  return row;
}

// Whether the hybrid backend's YCbCr planes are the hardware backend's, byte for byte, on the first 48 files,
// all three planes of each (the bench's folders are colour photos).
void compare_planes(const Files& files) {
  const int count = static_cast<int>(std::min<std::size_t>(files.bytes.size(), 48));
  nvjpegHandle_t hardware = nullptr, hybrid = nullptr;
  check(nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hardware), "nvjpegCreateEx");
  check(nvjpegCreateEx(NVJPEG_BACKEND_HYBRID, nullptr, nullptr, 0, &hybrid), "nvjpegCreateEx");
  nvjpegJpegState_t batched = nullptr, single = nullptr;
  check(nvjpegJpegStateCreate(hardware, &batched), "nvjpegJpegStateCreate");
  check(nvjpegJpegStateCreate(hybrid, &single), "nvjpegJpegStateCreate");
  const cuda::Stream stream = cuda::Stream::create();
  std::vector<Planes> by_hardware(count), by_hybrid(count);
  std::vector<const unsigned char*> data;
  std::vector<std::size_t> lengths;
  std::vector<nvjpegImage_t> images;
  for (int i = 0; i < count; ++i) {
    point_planes(hardware, files.bytes[i], by_hardware[i]);
    point_planes(hybrid, files.bytes[i], by_hybrid[i]);
    data.push_back(files.bytes[i].data());
    lengths.push_back(files.bytes[i].size());
    images.push_back(by_hardware[i].image);
    check(nvjpegDecode(hybrid, single, files.bytes[i].data(), files.bytes[i].size(), NVJPEG_OUTPUT_YUV,
                       &by_hybrid[i].image, stream.get()),
          "nvjpegDecode");
  }
  check(nvjpegDecodeBatchedInitialize(hardware, batched, count, 1, NVJPEG_OUTPUT_YUV), "nvjpegDecodeBatchedInitialize");
  check(nvjpegDecodeBatched(hardware, batched, data.data(), lengths.data(), images.data(), stream.get()),
        "nvjpegDecodeBatched");
  stream.synchronize();
  int identical = 0, max_difference = 0;
  std::size_t differing = 0, total = 0;
  for (int i = 0; i < count; ++i) {
    bool same = true;
    for (int p = 0; p < 3; ++p) {
      std::vector<std::uint8_t> a(by_hardware[i].bytes[p]), b(a.size());
      IMGPIPE_CUDA_CHECK(cudaMemcpy(a.data(), by_hardware[i].image.channel[p], a.size(), cudaMemcpyDeviceToHost));
      IMGPIPE_CUDA_CHECK(cudaMemcpy(b.data(), by_hybrid[i].image.channel[p], b.size(), cudaMemcpyDeviceToHost));
      for (std::size_t k = 0; k < a.size(); ++k) {
        const int d = std::abs(int(a[k]) - int(b[k]));
        max_difference = std::max(max_difference, d);
        differing += d != 0;
      }
      total += a.size();
      same = same && a == b;
    }
    identical += same;
  }
  std::printf("hybrid YCbCr planes against the hardware's: %d of %d files identical, %zu of %zu samples differ, "
              "by at most %d\n", identical, count, differing, total, max_difference);
  nvjpegJpegStateDestroy(batched);
  nvjpegJpegStateDestroy(single);
  nvjpegDestroy(hardware);
  nvjpegDestroy(hybrid);
}

// Runs `work(file index, thread's device buffer)` over every file from `threads` threads.
void over_files(std::size_t count, int threads, const std::function<void(std::size_t, cuda::DeviceBuffer&)>& work) {
  std::atomic<std::size_t> next = 0;
  std::vector<std::jthread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      IMGPIPE_CUDA_CHECK(cudaSetDevice(0));
      cuda::DeviceBuffer buffer;
      for (std::size_t i = next++; i < count; i = next++) work(i, buffer);
    });
  }
}

// The hardware engines through nvJPEG's decoupled API, one file per decode and no batches: `threads` threads,
// each cycling through `slots` decoder states of its own (a state with its stream, pinned and device buffers and
// parsed stream; a slot's previous file is waited for only when the slot comes round again), YCbCr planes out.
Row decoupled_hardware_decode(const Files& files, const Options& o, int threads, int slots) {
  nvjpegHandle_t handle = nullptr;
  check(nvjpegCreateSimple(&handle), "nvjpegCreateSimple");
  nvjpegJpegDecoder_t decoder = nullptr;
  check(nvjpegDecoderCreate(handle, NVJPEG_BACKEND_HARDWARE, &decoder), "nvjpegDecoderCreate(HARDWARE)");
  struct Slot {
    nvjpegJpegState_t state = nullptr;
    nvjpegBufferPinned_t pinned = nullptr;
    nvjpegBufferDevice_t device = nullptr;
    nvjpegJpegStream_t parsed = nullptr;
    cuda::Stream stream = cuda::Stream::create();
    Planes planes;
    bool busy = false;
  };
  struct Worker {
    nvjpegDecodeParams_t params = nullptr;
    std::vector<Slot> slots;
  };
  std::vector<Worker> workers(threads);
  for (Worker& w : workers) {
    check(nvjpegDecodeParamsCreate(handle, &w.params), "nvjpegDecodeParamsCreate");
    check(nvjpegDecodeParamsSetOutputFormat(w.params, NVJPEG_OUTPUT_YUV), "nvjpegDecodeParamsSetOutputFormat");
    w.slots = std::vector<Slot>(slots);
    for (Slot& slot : w.slots) {
      check(nvjpegDecoderStateCreate(handle, decoder, &slot.state), "nvjpegDecoderStateCreate");
      check(nvjpegBufferPinnedCreate(handle, nullptr, &slot.pinned), "nvjpegBufferPinnedCreate");
      check(nvjpegBufferDeviceCreate(handle, nullptr, &slot.device), "nvjpegBufferDeviceCreate");
      check(nvjpegStateAttachPinnedBuffer(slot.state, slot.pinned), "nvjpegStateAttachPinnedBuffer");
      check(nvjpegStateAttachDeviceBuffer(slot.state, slot.device), "nvjpegStateAttachDeviceBuffer");
      check(nvjpegJpegStreamCreate(handle, &slot.parsed), "nvjpegJpegStreamCreate");
    }
  }
  std::atomic<std::size_t> next = 0, unsupported = 0;
  std::mutex host_calls_mutex;
  Clock::duration host_calls{};
  // One thread's share of a run: the next file into its next slot, until none is left; each thread's time in
  // nvJPEG's calls is added to host_calls.
  const auto decode_files = [&](Worker& w) {
    IMGPIPE_CUDA_CHECK(cudaSetDevice(0));
    Clock::duration in_calls{};
    std::size_t turn = 0;
    for (std::size_t i = next++; i < files.bytes.size(); i = next++) {
      Slot& slot = w.slots[turn++ % w.slots.size()];
      if (slot.busy) slot.stream.synchronize();
      const auto& file = files.bytes[i];
      const auto call = Clock::now();
      check(nvjpegJpegStreamParse(handle, file.data(), file.size(), 0, 0, slot.parsed), "nvjpegJpegStreamParse");
      int supported = 1;
      check(nvjpegDecoderJpegSupported(decoder, slot.parsed, w.params, &supported), "nvjpegDecoderJpegSupported");
      if (supported != 0) ++unsupported;
      point_planes(handle, file, slot.planes);
      check(nvjpegDecodeJpegHost(handle, decoder, slot.state, w.params, slot.parsed), "nvjpegDecodeJpegHost");
      check(nvjpegDecodeJpegTransferToDevice(handle, decoder, slot.state, slot.parsed, slot.stream.get()),
            "nvjpegDecodeJpegTransferToDevice");
      check(nvjpegDecodeJpegDevice(handle, decoder, slot.state, &slot.planes.image, slot.stream.get()),
            "nvjpegDecodeJpegDevice");
      in_calls += Clock::now() - call;
      slot.busy = true;
    }
    for (Slot& slot : w.slots) {
      if (slot.busy) slot.stream.synchronize();
      slot.busy = false;
    }
    std::lock_guard lock(host_calls_mutex);
    host_calls += in_calls;
  };
  Row row = best_of("nvJPEG hardware decode, decoupled API",
                    std::to_string(threads) + " threads, " + std::to_string(slots) + " states each, one file a decode",
                    o.repeats, files.bytes.size(), files.total, [&] {
                      next = 0;
                      std::exception_ptr failure;
                      std::mutex failure_mutex;
                      std::vector<std::jthread> pool;
                      for (Worker& w : workers) {
                        pool.emplace_back([&] {
                          try {
                            decode_files(w);
                          } catch (...) {
                            std::lock_guard lock(failure_mutex);
                            if (!failure) failure = std::current_exception();
                            next = files.bytes.size();  // the other threads stop at their next file
                          }
                        });
                      }
                      pool.clear();  // joins
                      if (failure) std::rethrow_exception(failure);
                    });
  const double runs = o.repeats + 1.0;
  char text[160];
  std::snprintf(text, sizeof text, ", %.0f us of nvJPEG calls per file (all threads), %zu files the decoder refused",
                std::chrono::duration<double, std::micro>(host_calls).count() / runs / files.bytes.size(),
                unsupported.load() / static_cast<std::size_t>(runs));
  row.detail += text;
  for (Worker& w : workers) {
    for (Slot& slot : w.slots) {
      nvjpegJpegStreamDestroy(slot.parsed);
      nvjpegJpegStateDestroy(slot.state);
      nvjpegBufferPinnedDestroy(slot.pinned);
      nvjpegBufferDeviceDestroy(slot.device);
    }
    nvjpegDecodeParamsDestroy(w.params);
  }
  nvjpegDecoderDestroy(decoder);
  nvjpegDestroy(handle);
  return row;
}

Row imgpipe_decoder(const Files& files, const Options& o, io::GpuJpegDecoder::HardwareApi api,
                    std::array<std::atomic<std::size_t>, 3>& used) {
  io::GpuJpegDecoder decoder({.hardware_api = api,
                              .decode_threads = o.decode_threads,
                              .states_per_thread = o.states_per_thread,
                              .lanes = o.lanes,
                              .max_batch = o.max_batch});
  const cuda::Stream stream = cuda::Stream::create();
  const bool decoupled = api == io::GpuJpegDecoder::HardwareApi::decoupled;
  Row row = best_of(decoupled ? "imgpipe GPU JPEG decoder, decoupled" : "imgpipe GPU JPEG decoder, batched",
                    std::to_string(o.threads) + " calling threads" +
                        (decoupled
                             ? ""
                             : ", " + std::to_string(o.lanes) + " lanes, batches up to " + std::to_string(o.max_batch)),
                    o.repeats, files.bytes.size(), files.total, [&] {
                      for (auto& count : used) count = 0;
                      over_files(files.bytes.size(), o.threads, [&](std::size_t i, cuda::DeviceBuffer& buffer) {
                        const io::JpegDecoder by = decoder.decode(
                            files.bytes[i],
                            [&](Size size) {
                              buffer.grow(size.rgb_bytes());
                              return DeviceFrame{buffer.data(), size, stream.get()};
                            },
                            io::kDefaultMaxPixels);
                        ++used[static_cast<std::size_t>(by)];
                      });
                    });
  // Over every run, the warm-up included.
  const io::GpuJpegDecoder::HardwareActivity activity = decoder.hardware_activity();
  char text[200];
  if (activity.api == io::GpuJpegDecoder::HardwareApi::decoupled) {
    std::snprintf(text, sizeof text,
                  ", decoupled decoder, %d threads x %d states, threads' time %.0f%% in nvJPEG's calls and %.0f%% "
                  "waiting for the engines",
                  activity.threads, o.states_per_thread,
                  100 * activity.host_seconds / std::max(activity.busy_seconds(), 1e-9),
                  100 * activity.waiting_seconds / std::max(activity.busy_seconds(), 1e-9));
  } else {
    std::snprintf(text, sizeof text,
                  ", batched, %.1f files per batch, lanes' time %.0f%% in nvjpegDecodeBatched and %.0f%% waiting "
                  "after it",
                  activity.batches ? double(activity.files) / activity.batches : 0.0,
                  100 * activity.host_seconds / std::max(activity.busy_seconds(), 1e-9),
                  100 * activity.waiting_seconds / std::max(activity.busy_seconds(), 1e-9));
  }
  row.detail += text;
  return row;
}

Row imgpipe_encoder(const Files& files, const Options& o, Size size) {
  // The frames to encode: the first files decoded and resized on the GPU, cycled.
  io::GpuJpegDecoder decoder({});
  const cuda::Stream stream = cuda::Stream::create();
  DeviceChain resize(GpuPath::optimized, parse_chain("resize=" + to_string(size)));
  std::vector<cuda::DeviceBuffer> frames;
  for (std::size_t i = 0; i < std::min<std::size_t>(files.bytes.size(), 16); ++i) {
    cuda::DeviceBuffer decoded;
    Size decoded_size;
    decoder.decode(
        files.bytes[i],
        [&](Size s) {
          decoded_size = s;
          decoded.grow(s.rgb_bytes());
          return DeviceFrame{decoded.data(), s, stream.get()};
        },
        io::kDefaultMaxPixels);
    frames.emplace_back(size.rgb_bytes());
    resize.run(decoded.data(), decoded_size, frames.back().data(), stream.get());
    stream.synchronize();
  }
  io::GpuJpegEncoder encoder({o.quality, false, o.encoder_states});
  std::atomic<std::size_t> bytes = 0;
  const std::size_t count = files.bytes.size();
  Row row = best_of("imgpipe GPU JPEG encoder", to_string(size) + ", quality " + std::to_string(o.quality) + ", " +
                                                    std::to_string(o.encoder_states) + " encoder states",
                    o.repeats, count, 0, [&] {
                      bytes = 0;
                      over_files(count, o.threads, [&](std::size_t i, cuda::DeviceBuffer&) {
                        bytes += encoder.encode({frames[i % frames.size()].data(), size, nullptr}).size();
                      });
                    });
  row.megabytes_per_s = row.images_per_s * (double(bytes) / count) / 1e6;
  return row;
}

int run(const Options& o) {
  const auto size = parse_size(o.encode_size);
  if (!size) throw std::invalid_argument("--encode-size '" + o.encode_size + "': expected WxH");
  std::fprintf(stderr, "reading %s\n", o.folder.c_str());
  const Files files = read_folder(o.folder);
  std::fprintf(stderr, "%zu files, %.1f MB, %.0f KB each on average\n", files.bytes.size(), files.total / 1e6,
               files.total / 1e3 / files.bytes.size());
  std::vector<Row> rows;
  std::array<std::atomic<std::size_t>, 3> used{};
  // The ceiling: the hardware backend alone at the decoder's largest batch.
  rows.push_back(batched_decode(files, o, NVJPEG_BACKEND_HARDWARE, Input::pinned, o.max_batch));
  rows.back().name += " (ceiling)";
  for (Input input : {Input::pinned, Input::pageable, Input::device}) {
    rows.push_back(batched_decode(files, o, NVJPEG_BACKEND_HARDWARE, input, o.batch));
  }
  rows.push_back(batched_decode(files, o, NVJPEG_BACKEND_GPU_HYBRID, Input::pageable, o.batch));
  compare_planes(files);
  for (int threads : {1, 4, 8, 16}) rows.push_back(threaded_decode(files, o, threads));
  const std::size_t decoupled_ceiling_row = rows.size();
  rows.push_back(decoupled_hardware_decode(files, o, o.decode_threads, o.states_per_thread));
  rows.back().name += " (ceiling)";
  // imgpipe's decoder through one hardware API; returns the row's index.
  const auto decoder_row = [&](io::GpuJpegDecoder::HardwareApi api) {
    for (auto& count : used) count = 0;
    rows.push_back(imgpipe_decoder(files, o, api, used));
    rows.back().detail += ", decoded by hardware " + std::to_string(used[0]) + ", hybrid " + std::to_string(used[1]) +
                          ", CPU " + std::to_string(used[2]);
    return rows.size() - 1;
  };
  const std::size_t decoupled_row = decoder_row(io::GpuJpegDecoder::HardwareApi::decoupled);
  const std::size_t batched_row = decoder_row(io::GpuJpegDecoder::HardwareApi::batched);
  rows.push_back(imgpipe_encoder(files, o, *size));

  std::printf("%-42s %10s %9s  %s\n", "row", "images/s", "MB/s", "detail");
  nlohmann::json report = {{"folder", o.folder.string()}, {"files", files.bytes.size()}, {"bytes", files.total}};
  for (const Row& r : rows) {
    std::printf("%-42s %10.0f %9.0f  %s\n", r.name.c_str(), r.images_per_s, r.megabytes_per_s, r.detail.c_str());
    report["rows"].push_back(
        {{"name", r.name}, {"detail", r.detail}, {"images_per_s", r.images_per_s}, {"megabytes_per_s", r.megabytes_per_s}});
  }
  const Row& decoupled = rows[decoupled_row];
  const Row& batched = rows[batched_row];
  std::printf("imgpipe decoder, decoupled / nvJPEG's decoupled decoder with the same threads and states: %.1f%%\n",
              100 * decoupled.images_per_s / rows[decoupled_ceiling_row].images_per_s);
  std::printf("imgpipe decoder, decoupled / batched hardware ceiling: %.1f%%\n",
              100 * decoupled.images_per_s / rows[0].images_per_s);
  std::printf("imgpipe decoder, batched / batched hardware ceiling at the same batch size: %.1f%%\n",
              100 * batched.images_per_s / rows[0].images_per_s);
  if (!o.json.empty()) std::ofstream(o.json) << report.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GPU JPEG decode and encode rates on a folder of JPEG files, against nvJPEG's hardware backend alone",
               "imgpipe_bench_jpeg"};
  Options o;
  app.add_option("FOLDER", o.folder, "Folder of .jpg files (read into memory first)")->required()->check(CLI::ExistingDirectory);
  app.add_option("--batch", o.batch, "Files per batch in the rows of nvJPEG's backends beside the ceiling")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "Threads calling imgpipe's decoder and encoder at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--decode-threads", o.decode_threads, "Decoupled decoding (imgpipe's and nvJPEG's own row): threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--states-per-thread", o.states_per_thread, "Decoupled decoding: decoder states per thread")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--lanes", o.lanes, "imgpipe decoder, batched: hardware batches in flight at once")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--max-batch", o.max_batch, "imgpipe decoder, batched: files per hardware batch at most")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--encoder-states", o.encoder_states, "Encodes in flight at once")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--quality", o.quality, "JPEG quality of the encode row")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--encode-size", o.encode_size, "Size of the frames the encode row encodes")->capture_default_str();
  app.add_option("--repeats", o.repeats, "Runs per row; the best is reported")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--json", o.json, "Also write the rows as JSON");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imgpipe_bench_jpeg: %s\n", e.what());
    return 3;
  }
}
