// Warp-shuffle primitives (full warps only): reductions and an inclusive
// scan, the building blocks of the CUDA specializations.
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

}  // namespace ksz::cuda_spec::warp
