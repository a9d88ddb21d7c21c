// Decoupled look-back (single-pass prefix sums across the blocks of one
// kernel), shared by the one-pass Huffman encoder and the one-pass SZx coder.
// Each tile (a chunk, a group of blocks) owns one 64-bit state word: flag and
// value together, so a reader sees all of it or nothing. A tile publishes its
// own sum as an aggregate as soon as it knows it (tile 0 publishes it as
// inclusive), looks back, then publishes its inclusive prefix. Tiles must be
// taken in order from a ticket, so that every earlier tile belongs to a block
// that is running (no deadlock). States start zeroed. Include only from CUDA
// translation units.
#pragma once
#include <cstdint>

#include "cuda_specializations/warp.hpp"

namespace ksz::cuda_spec::lookback {

constexpr unsigned long long kAggregate = 1ull << 62, kInclusive = 2ull << 62, kValue = (1ull << 62) - 1;

__device__ __forceinline__ unsigned long long load_state(const unsigned long long* p) {
  return *reinterpret_cast<const volatile unsigned long long*>(p);
}
__device__ __forceinline__ void store_state(unsigned long long* p, unsigned long long v) {
  *reinterpret_cast<volatile unsigned long long*>(p) = v;
}

// Lane 0 publishes tile t's own sum (as early as possible: successors wait on it).
__device__ __forceinline__ void publish_aggregate(unsigned long long* state, std::uint64_t t, std::uint64_t sum) {
  if ((threadIdx.x & 31) == 0) store_state(state + t, (t == 0 ? kInclusive : kAggregate) | sum);
}

// Warp-collective: the sum of the tiles before t. Each round reads 32
// predecessors' states (waiting for any not yet published): aggregates are
// added and the look-back goes on; the nearest inclusive prefix ends it.
__device__ __forceinline__ std::uint64_t exclusive_prefix(const unsigned long long* state, std::uint64_t t) {
  const int lane = threadIdx.x & 31;
  std::uint64_t prefix = 0;
  for (std::int64_t p = static_cast<std::int64_t>(t) - 1;; p -= 32) {
    const std::int64_t at = p - lane;
    unsigned long long v = at >= 0 ? load_state(state + at) : kInclusive;  // before tile 0: nothing
    while (__any_sync(warp::kFull, v == 0))
      if (v == 0) v = load_state(state + at);
    const unsigned incl = __ballot_sync(warp::kFull, (v & ~kValue) == kInclusive);
    const int stop = incl ? __ffs(incl) - 1 : 31;
    prefix += warp::reduce_add(lane <= stop ? static_cast<std::uint64_t>(v & kValue) : std::uint64_t(0));
    if (incl) return prefix;
  }
}

// Warp-collective: the look-back for tile t whose own sum (published) is
// `sum`; publishes its inclusive prefix and returns the exclusive one.
__device__ __forceinline__ std::uint64_t resolve(unsigned long long* state, std::uint64_t t, std::uint64_t sum) {
  const std::uint64_t before = t == 0 ? 0 : exclusive_prefix(state, t);
  if ((threadIdx.x & 31) == 0 && t != 0) store_state(state + t, kInclusive | (before + sum));
  return before;
}

// Block-collective (kThreads threads), for a kernel whose CUDA block codes
// tile t: the sum of the v of every thread before this one, in the tiles
// before t and in this tile (warp::block_scan, then warp 0 publishes the
// tile's sum and looks back).
template <int kThreads, class T>
__device__ __forceinline__ std::uint64_t exclusive_across_tiles(unsigned long long* state, std::uint64_t t, T v) {
  __shared__ std::uint64_t tile_before;
  T total;
  const T run = warp::block_scan<kThreads>(v, total);
  if (threadIdx.x < 32) {
    publish_aggregate(state, t, total);
    const std::uint64_t before = resolve(state, t, total);
    if (threadIdx.x == 0) tile_before = before;
  }
  __syncthreads();
  const std::uint64_t r = tile_before + run;
  __syncthreads();  // tile_before is reused by the next call
  return r;
}

}  // namespace ksz::cuda_spec::lookback
