// Warp-shuffle primitives (full warps only): reductions, an inclusive scan
// and a block scan built on it, the building blocks of the CUDA
// specializations.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

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

// Inclusive prefix sum over the lanes (over each W-lane segment).
template <int W = 32, class T>
__device__ __forceinline__ T scan_inclusive(T v) {
  const int lane = threadIdx.x & (W - 1);
#pragma unroll
  for (int o = 1; o < W; o <<= 1) {
    const T u = __shfl_up_sync(kFull, v, o, W);
    if (lane >= o) v += u;
  }
  return v;
}

// Block-collective (kThreads threads, a multiple of 32): the exclusive
// prefix sum of v over the block's threads; total gets the block's sum (in
// total's type: 32 or 64 bits).
template <int kThreads, class T>
__device__ __forceinline__ T block_scan(std::common_type_t<T> v, T& total) {  // T from total
  __shared__ T sums[kThreads / 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const T incl = scan_inclusive(v);
  __syncthreads();  // sums reuse across calls
  if (lane == 31) sums[w] = incl;
  __syncthreads();
  T before = 0;
  total = 0;
#pragma unroll
  for (int k = 0; k < kThreads / 32; ++k) {
    before += k < w ? sums[k] : T(0);
    total += sums[k];
  }
  return before + incl - v;
}

// Min and max over a block of kThreads (a multiple of 32) threads, in warp 0
// (T's max and lowest where every value was). Every thread calls it.
template <int kThreads, class T>
__device__ __forceinline__ void block_minmax(T& mn, T& mx) {
  __shared__ T smn[kThreads / 32], smx[kThreads / 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  mn = reduce_min(mn);
  mx = reduce_max(mx);
  __syncthreads();  // smn / smx reuse across calls
  if (lane == 0) smn[w] = mn, smx[w] = mx;
  __syncthreads();
  if (w == 0) {
    mn = reduce_min(lane < kThreads / 32 ? smn[lane] : std::numeric_limits<T>::max());
    mx = reduce_max(lane < kThreads / 32 ? smx[lane] : std::numeric_limits<T>::lowest());
  }
}

}  // namespace ksz::cuda_spec::warp
