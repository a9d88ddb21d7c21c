// Warp-shuffle primitives (full warps only): reductions, an inclusive scan
// and a block scan built on it, the building blocks of the CUDA
// specializations.
#pragma once
#include <cstdint>

namespace ksz::cuda_spec::warp {

constexpr unsigned kFull = 0xFFFFFFFFu;

template <class T>
__device__ __forceinline__ T reduce_add(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

template <class T>
__device__ __forceinline__ T reduce_min(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const T u = __shfl_xor_sync(kFull, v, o);
    v = u < v ? u : v;
  }
  return v;
}

template <class T>
__device__ __forceinline__ T reduce_max(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const T u = __shfl_xor_sync(kFull, v, o);
    v = u > v ? u : v;
  }
  return v;
}

// Inclusive prefix sum over the lanes.
template <class T>
__device__ __forceinline__ T scan_inclusive(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const T u = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v += u;
  }
  return v;
}

// Block-collective (kThreads threads, a multiple of 32): the exclusive
// prefix sum of v over the block's threads; total gets the block's sum.
template <int kThreads>
__device__ __forceinline__ std::uint32_t block_scan(std::uint32_t v, std::uint32_t& total) {
  __shared__ std::uint32_t sums[kThreads / 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const std::uint32_t incl = scan_inclusive(v);
  __syncthreads();  // sums reuse across calls
  if (lane == 31) sums[w] = incl;
  __syncthreads();
  std::uint32_t before = 0;
  total = 0;
#pragma unroll
  for (int k = 0; k < kThreads / 32; ++k) {
    before += k < w ? sums[k] : 0u;
    total += sums[k];
  }
  return before + incl - v;
}

}  // namespace ksz::cuda_spec::warp
