// Launch helpers shared by the CUDA specializations: the device's SM count,
// how many blocks of a kernel fit on the device at once (grid-stride kernels
// launch no more), and the "last block to finish" test that lets a kernel fold
// its own per-block partials instead of a second kernel doing it. Include only
// from CUDA translation units.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_specializations/warp.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec::launch {

inline void check(cudaError_t e, const char* what) {
  KSZ_EXPECTS(e == cudaSuccess, "CUDA error in ", what, ": ", cudaGetErrorString(e));
}

// Multiprocessors of the current device (read once).
inline int sm_count() {
  static const int count = [] {
    int dev = 0, c = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev), "SM count");
    return c > 0 ? c : 1;
  }();
  return count;
}

// f() worked out once per key and remembered (a table per call site): host
// queries about a kernel that would otherwise run between a synchronization
// and the launch they size.
template <class Key, class F>
int remembered(const Key& key, F&& f) {
  static std::mutex mutex;
  static std::vector<std::pair<Key, int>> known;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& e : known)
    if (e.first == key) return e.second;
  known.emplace_back(key, f());
  return known.back().second;
}

// The virtual architecture a kernel's code was compiled for
// (cudaFuncAttributes::ptxVersion: 90 for Hopper): only code for 90 or later
// can wait for a programmatic dependency (code JIT-compiled from older PTX
// cannot, whatever device runs it).
template <class Kernel>
int ptx_version(Kernel kernel) {
  return remembered(reinterpret_cast<const void*>(kernel), [&] {
    cudaFuncAttributes a{};
    check(cudaFuncGetAttributes(&a, kernel), "kernel attributes");
    return a.ptxVersion;
  });
}

// Blocks of `threads` threads and `shared` bytes of dynamic shared memory that
// are resident at once on the device (at least one); allows the kernel more
// than 48 KiB of dynamic shared memory when it asks for it. Worked out once a
// (kernel, threads, shared): the occupancy query ran on the host between a
// synchronization and the launch it sized (the Huffman encoder's, the
// lossless pass's, the histograms').
template <class Kernel>
int resident_blocks(Kernel kernel, int threads, std::size_t shared) {
  const std::tuple<const void*, int, std::size_t> key{reinterpret_cast<const void*>(kernel), threads, shared};
  return remembered(key, [&] {
    if (shared > 48 * 1024)
      check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)), "smem attr");
    int per_sm = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared), "occupancy");
    return sm_count() * (per_sm > 0 ? per_sm : 1);
  });
}

// Called by every thread of every block after thread 0 stored the block's
// partial: true in the block that finishes last (*done counts blocks and must
// be zero at launch), whose threads then see every block's partial through
// L2 (__ldcg). A block-collective.
__device__ __forceinline__ bool last_block_done(unsigned* done) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence();  // the partial is visible before the count says so
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// The end of a value-range pass (minmax_kernel, SZx's range_blocks_kernel):
// each block's extremes of its threads' mn, mx to parts; the block that
// finishes last folds them into out[0], out[1] as doubles (T's max and lowest
// where no value was finite) and leaves *done at zero for the next launch.
template <int kThreads, class T>
__device__ __forceinline__ void finish_range(T mn, T mx, T* __restrict__ parts, unsigned* __restrict__ done,
                                             double* __restrict__ out) {
  warp::block_minmax<kThreads>(mn, mx);
  if (threadIdx.x == 0) parts[2 * blockIdx.x] = mn, parts[2 * blockIdx.x + 1] = mx;
  if (!last_block_done(done)) return;
  mn = std::numeric_limits<T>::max();
  mx = std::numeric_limits<T>::lowest();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kThreads) {
    mn = ::min(mn, __ldcg(parts + 2 * b));  // blocks' extremes: finite, or the identities
    mx = ::max(mx, __ldcg(parts + 2 * b + 1));
  }
  warp::block_minmax<kThreads>(mn, mx);
  if (threadIdx.x == 0) {
    out[0] = static_cast<double>(mn);
    out[1] = static_cast<double>(mx);
    *done = 0;
  }
}

}  // namespace ksz::cuda_spec::launch
