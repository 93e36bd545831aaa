#include "cuda_resources.hpp"

#include "cuda_check.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>

namespace imgpipe::cuda {

void destroy_stream(cudaStream_t s) noexcept { check_noexcept(cudaStreamDestroy(s), "cudaStreamDestroy"); }
void destroy_event(cudaEvent_t e) noexcept { check_noexcept(cudaEventDestroy(e), "cudaEventDestroy"); }
void destroy_texture(cudaTextureObject_t t) noexcept {
  check_noexcept(cudaDestroyTextureObject(t), "cudaDestroyTextureObject");
}

Stream Stream::create() {
  cudaStream_t s{};
  IMGPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream{s};
}

CurrentDevice::CurrentDevice(int device) {
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&previous_));
  if (device == previous_) return;
  IMGPIPE_CUDA_CHECK(cudaSetDevice(device));
  switched_ = true;
}

CurrentDevice::~CurrentDevice() {
  if (switched_) check_noexcept(cudaSetDevice(previous_), "cudaSetDevice");
}

void Stream::synchronize() const { IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(get())); }

Event Event::create(bool timing) {
  cudaEvent_t e{};
  IMGPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event{e};
}

void Event::record(cudaStream_t stream) const { IMGPIPE_CUDA_CHECK(cudaEventRecord(get(), stream)); }
void Event::synchronize() const { IMGPIPE_CUDA_CHECK(cudaEventSynchronize(get())); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.f;
  IMGPIPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

void* DeviceMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}
void DeviceMemory::release(void* p) noexcept { check_noexcept(cudaFree(p), "cudaFree"); }

namespace {

// One pinned memory pool per host NUMA node, reachable from every device, made when first needed; and the
// blocks allocated from them, which are freed back to their pool rather than with cudaFreeHost.
struct NumaPools {
  std::mutex mutex;
  std::map<int, cudaMemPool_t> by_node;
  std::unordered_set<void*> blocks;
};

NumaPools& numa_pools() {
  static NumaPools* pools = new NumaPools;  // never destroyed: buffers in static objects are freed after it
  return *pools;
}

cudaMemPool_t pool_on_node(NumaPools& pools, int node) {
  if (const auto found = pools.by_node.find(node); found != pools.by_node.end()) return found->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location = {cudaMemLocationTypeHostNuma, node};
  cudaMemPool_t pool = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  int devices = 0, current = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDeviceCount(&devices));
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&current));
  for (int d = 0; d < devices; ++d) {
    const cudaMemAccessDesc access{{cudaMemLocationTypeDevice, d}, cudaMemAccessFlagsProtReadWrite};
    const cudaError_t granted = cudaMemPoolSetAccess(pool, &access, 1);
    if (d == current) IMGPIPE_CUDA_CHECK(granted);
    if (granted != cudaSuccess) (void)cudaGetLastError();  // another device that cannot reach it copies nothing from it
  }
  pools.by_node.emplace(node, pool);
  return pool;
}

// Host NUMA nodes the kernel reports (/sys/devices/system/node/nodeN); 1 where it reports none.
int host_numa_nodes() {
  static const int nodes = [] {
    int count = 0;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", error)) {
      const std::string name = entry.path().filename().string();
      if (name.size() > 4 && name.starts_with("node") &&
          std::all_of(name.begin() + 4, name.end(), [](unsigned char c) { return std::isdigit(c); })) {
        ++count;
      }
    }
    return std::max(count, 1);
  }();
  return nodes;
}

}  // namespace

int nearest_host_numa_node() {
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  int node = -1, pools = 0;
  if (cudaDeviceGetAttribute(&node, cudaDevAttrHostNumaId, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&pools, cudaDevAttrHostNumaMemoryPoolsSupported, device) != cudaSuccess) {
    (void)cudaGetLastError();  // an older driver that does not know the attributes
    return -1;
  }
  return pools != 0 ? node : -1;
}

void* allocate_pinned_on_node(std::size_t bytes, int node) {
  NumaPools& pools = numa_pools();
  std::lock_guard lock(pools.mutex);
  void* p = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, pool_on_node(pools, node), cudaStreamPerThread));
  IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));  // the host may write it as soon as it returns
  pools.blocks.insert(p);
  return p;
}

// Only where the host has several nodes: on one, every page is as near, and cudaMallocHost is the path measured.
void* PinnedMemory::allocate(std::size_t bytes) {
  if (host_numa_nodes() > 1) {
    if (const int node = nearest_host_numa_node(); node >= 0) return allocate_pinned_on_node(bytes, node);
  }
  void* p = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void PinnedMemory::release(void* p) noexcept {
  NumaPools& pools = numa_pools();
  bool from_pool = false;
  {
    std::lock_guard lock(pools.mutex);  // held for the lookup only: freeing synchronizes with the device
    from_pool = pools.blocks.erase(p) != 0;
  }
  if (!from_pool) {
    check_noexcept(cudaFreeHost(p), "cudaFreeHost");
    return;
  }
  check_noexcept(cudaFreeAsync(p, cudaStreamPerThread), "cudaFreeAsync");
  check_noexcept(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize");
}

void* ManagedMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  IMGPIPE_CUDA_CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
  return p;
}
void ManagedMemory::release(void* p) noexcept { check_noexcept(cudaFree(p), "cudaFree"); }

}  // namespace imgpipe::cuda
