// CUDA specialization of the SZx block coder (szx-ultrafast section V-B): a
// warp per block instead of a Kokkos team, so no team barriers, no shared
// reductions and no per-block host work. See cuda_specializations.hpp for the
// contract: same bytes as portable/predict/szx (its helpers are reused here,
// so every float decision is the same expression).
#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/host_result.hpp"
#include "cuda_specializations/launch.hpp"
#include "cuda_specializations/lookback.hpp"
#include "cuda_specializations/warp.hpp"
#include "portable/predict/szx/szx.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {

constexpr int kThreads = 256;  // 8 warps, 8 blocks of SZx per CUDA block
constexpr int kWarps = kThreads / 32;
constexpr std::uint32_t kChunk = 128;  // values a warp handles per step (4 per lane)

using launch::check;

unsigned grid_of(std::uint64_t nb) { return static_cast<unsigned>((nb + kWarps - 1) / kWarps); }

// The `valid` (0..4) values from p[0]: one or two 16-byte loads when all four
// are there and aligned (Aligned: the caller knows p is).
template <class T, bool Aligned = false>
__device__ __forceinline__ void load4(const T* __restrict__ p, int valid, T v[4]) {
  if (valid == 4 && (Aligned || (reinterpret_cast<std::uintptr_t>(p) & 15) == 0)) {
    if constexpr (sizeof(T) == 4) {
      const float4 q = *reinterpret_cast<const float4*>(p);
      v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
      const double2 a = reinterpret_cast<const double2*>(p)[0], b = reinterpret_cast<const double2*>(p)[1];
      v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
    }
    return;
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) v[q] = q < valid ? p[q] : T(0);
}
// The valid values to p: 16-byte stores when all four are there and aligned,
// by intrinsics (plain vector stores were split into four scalar stores by
// the compiler, which merged them with the other branch's); Stream: output
// no kernel reads again (evict first); Aligned: the caller knows p is.
template <class T, bool Stream = false, bool Aligned = false>
__device__ __forceinline__ void store4(T* __restrict__ p, int valid, const T v[4]) {
  if (valid == 4 && (Aligned || (reinterpret_cast<std::uintptr_t>(p) & 15) == 0)) {
    if constexpr (sizeof(T) == 4) {
      const float4 q = make_float4(v[0], v[1], v[2], v[3]);
      if constexpr (Stream) __stcs(reinterpret_cast<float4*>(p), q);
      else __stwb(reinterpret_cast<float4*>(p), q);
    } else {
      const double2 a = make_double2(v[0], v[1]), b = make_double2(v[2], v[3]);
      if constexpr (Stream) __stcs(reinterpret_cast<double2*>(p), a), __stcs(reinterpret_cast<double2*>(p) + 1, b);
      else __stwb(reinterpret_cast<double2*>(p), a), __stwb(reinterpret_cast<double2*>(p) + 1, b);
    }
    return;
  }
#pragma unroll
  for (int q = 0; q < 4; ++q)
    if (q < valid) p[q] = v[q];
}

__device__ __forceinline__ int valid_of(std::uint32_t i0, std::uint32_t len) {
  return i0 < len ? (len - i0 < 4 ? static_cast<int>(len - i0) : 4) : 0;
}

// Kind, median and counts per block (szx::plan_block), counts[nb] = 0.
template <class T>
__global__ void __launch_bounds__(kThreads)
    plan_kernel(const T* __restrict__ in, std::uint64_t n, std::uint32_t block, std::uint64_t nb, double e, T ef,
                std::uint8_t* __restrict__ kinds, T* __restrict__ medians, SzxOffsets* __restrict__ counts) {
  using U = typename szx::Bits<T>::U;
  const std::uint64_t b = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (b >= nb) return;  // whole warps
  const std::uint64_t begin = b * block;
  const std::uint32_t len = szx::block_len(b, n, block);
  T mn = in[begin], mx = mn;
  bool finite = true;
  for (std::uint32_t c = 0; c < len; c += kChunk) {
    const std::uint32_t i0 = c + 4 * lane;
    const int valid = valid_of(i0, len);
    T v[4];
    load4(in + begin + i0, valid, v);
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (q < valid) {
        finite = finite && (v[q] - v[q] == 0);
        mn = v[q] < mn ? v[q] : mn;
        mx = v[q] > mx ? v[q] : mx;
      }
  }
  SzxOffsets out{0, 0, 0};
  std::uint8_t kind = szx::kVerbatim;
  T med = T(0);
  if (__all_sync(warp::kFull, finite)) {
    // -0 and +0 may meet in any order here; block_head canonicalizes both.
    mn = warp::reduce_min(mn);
    mx = warp::reduce_max(mx);
    const szx::BlockHead<T> hd = szx::block_head<T>(mn, mx, e);
    if (hd.constant) {
      kind = szx::kConstant;
      med = hd.median;
    } else {
      const int nbytes = szx::bytes_of(hd.len_bits), shift = szx::Bits<T>::kTotal - hd.len_bits;
      const T m = hd.median;
      U carry = 0;  // last code of the previous chunk
      std::uint64_t mid = 0;
      bool ok = true;
      for (std::uint32_t c = 0; c < len; c += kChunk) {
        const std::uint32_t i0 = c + 4 * lane;
        const int valid = valid_of(i0, len);
        T v[4];
        U code[4];
        load4(in + begin + i0, valid, v);
#pragma unroll
        for (int q = 0; q < 4; ++q) code[q] = q < valid ? szx::code_of<T>(v[q], m, shift) : U(0);
        const U up = __shfl_up_sync(warp::kFull, code[3], 1);
        U prev = lane == 0 ? carry : up;
        // The bound by the fast test in T (szx::fast_bound: passing it
        // proves within()); the exact test only for blocks where it fails.
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (q < valid) {
            const T d = v[q] - szx::value_of<T>(code[q], m, shift);
            ok = ok && (d < 0 ? -d : d) <= ef;
            mid += static_cast<std::uint64_t>(nbytes - szx::leading_bytes<U>(code[q], prev, nbytes));
            prev = code[q];
          }
        carry = __shfl_sync(warp::kFull, code[3], 31);
      }
      mid = warp::reduce_add(mid);
      if (!__all_sync(warp::kFull, ok)) {
        ok = true;
        for (std::uint32_t c = 0; c < len; c += kChunk) {
          const std::uint32_t i0 = c + 4 * lane;
          const int valid = valid_of(i0, len);
          T v[4];
          load4(in + begin + i0, valid, v);
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (q < valid)
              ok = ok && szx::within(static_cast<double>(v[q]),
                                     static_cast<double>(szx::value_of<T>(szx::code_of<T>(v[q], m, shift), m, shift)),
                                     e);
        }
      }
      if (__all_sync(warp::kFull, ok)) {
        kind = static_cast<std::uint8_t>(hd.len_bits);
        med = m;
        out.lead = (len + 3) / 4;
        out.mid = mid;
      }
    }
  }
  if (kind == szx::kVerbatim) out.verb = len;
  if (lane == 0) {
    kinds[b] = kind;
    medians[b] = med;
    counts[b] = out;
    if (b + 1 == nb) counts[nb] = SzxOffsets{0, 0, 0};
  }
}

// Bytes staged per warp and chunk: the chunk's mid-bytes, shifted by the
// output offset mod 4 so that whole 4-byte words line up with global memory.
template <class T>
struct Stage {
  static constexpr int kWords = (kChunk * sizeof(T) + 8) / 4;
};

template <class T>
__global__ void __launch_bounds__(kThreads)
    encode_kernel(const T* __restrict__ in, std::uint64_t n, std::uint32_t block, std::uint64_t nb,
                  const std::uint8_t* __restrict__ kinds, const T* __restrict__ medians,
                  const SzxOffsets* __restrict__ offs, std::uint8_t* __restrict__ lead, std::uint8_t* __restrict__ mid,
                  T* __restrict__ verb) {
  using U = typename szx::Bits<T>::U;
  __shared__ std::uint32_t stage[kWarps][Stage<T>::kWords];
  const int w = threadIdx.x / 32, lane = threadIdx.x & 31;
  const std::uint64_t b = std::uint64_t(blockIdx.x) * kWarps + w;
  if (b >= nb) return;
  const std::uint64_t begin = b * block;
  const std::uint32_t len = szx::block_len(b, n, block);
  const std::uint8_t k = kinds[b];
  if (k == szx::kVerbatim) {
    const std::uint64_t vo = offs[b].verb;
    for (std::uint32_t i = lane; i < len; i += 32) verb[vo + i] = in[begin + i];
    return;
  }
  if (k == szx::kConstant) return;
  const int nbytes = szx::bytes_of(k), shift = szx::Bits<T>::kTotal - k;
  const T m = medians[b];
  const std::uint64_t lo = offs[b].lead;
  std::uint64_t mo = offs[b].mid;
  std::uint8_t* sb = reinterpret_cast<std::uint8_t*>(stage[w]);
  U carry = 0;
  for (std::uint32_t c = 0; c < len; c += kChunk) {
    const std::uint32_t i0 = c + 4 * lane;
    const int valid = valid_of(i0, len);
    T v[4];
    U code[4];
    int l[4];
    load4(in + begin + i0, valid, v);
#pragma unroll
    for (int q = 0; q < 4; ++q) code[q] = q < valid ? szx::code_of<T>(v[q], m, shift) : U(0);
    const U up = __shfl_up_sync(warp::kFull, code[3], 1);
    U prev = lane == 0 ? carry : up;
    int cnt = 0;
    std::uint32_t acc = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      l[q] = q < valid ? szx::leading_bytes<U>(code[q], prev, nbytes) : nbytes;
      acc |= static_cast<std::uint32_t>(q < valid ? l[q] : 0) << (6 - 2 * q);
      cnt += nbytes - l[q];
      prev = code[q];
    }
    if (valid > 0) lead[lo + c / 4 + lane] = static_cast<std::uint8_t>(acc);
    const int incl = warp::scan_inclusive(cnt);
    const int total = __shfl_sync(warp::kFull, incl, 31);
    const int sh = static_cast<int>(mo & 3);
    int p = sh + incl - cnt;
#pragma unroll
    for (int q = 0; q < 4; ++q)
      for (int j = l[q]; j < nbytes; ++j) sb[p++] = static_cast<std::uint8_t>(code[q] >> (8 * (nbytes - 1 - j)));
    __syncwarp();
    // Whole words inside this chunk's range as 4-byte stores, the (at most
    // two) words shared with neighbours byte by byte.
    std::uint8_t* const a = mid + (mo - sh);
    const int words = (sh + total + 3) / 4;
    for (int q = lane; q < words; q += 32) {
      if (4 * q >= sh && 4 * q + 4 <= sh + total) {
        reinterpret_cast<std::uint32_t*>(a)[q] = stage[w][q];
      } else {
        for (int j = 4 * q; j < 4 * q + 4; ++j)
          if (j >= sh && j < sh + total) a[j] = sb[j];
      }
    }
    __syncwarp();
    mo += static_cast<std::uint64_t>(total);
    carry = __shfl_sync(warp::kFull, code[3], 31);
  }
}

// Decompression offsets, step 1: lead and verbatim counts from the kinds
// alone (a thread per block); status[0] counts impossible kinds.
template <class T>
__global__ void kind_counts_kernel(std::uint64_t n, std::uint32_t block, std::uint64_t nb,
                                   const std::uint8_t* __restrict__ kinds, SzxOffsets* __restrict__ counts,
                                   unsigned long long* status) {
  const std::uint64_t b = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b > nb) return;
  if (b == nb) {
    counts[nb] = SzxOffsets{0, 0, 0};
    return;
  }
  const int k = kinds[b];
  const std::uint32_t len = szx::block_len(b, n, block);
  const bool ok = szx::valid_kind<T>(k);
  if (!ok) atomicAdd(status, 1ull);
  counts[b] = SzxOffsets{szx::is_coded(static_cast<std::uint8_t>(k)) ? (len + 3) / 4 : 0u, 0,
                         k == szx::kVerbatim ? len : 0u};
}

// Step 2: mid-byte count per block from its leading codes (a warp per
// block); status[1] counts blocks with a code longer than its value.
template <class T>
__global__ void __launch_bounds__(kThreads)
    mid_counts_kernel(std::uint64_t n, std::uint32_t block, std::uint64_t nb, const std::uint8_t* __restrict__ kinds,
                      const SzxOffsets* __restrict__ offs, const std::uint8_t* __restrict__ lead,
                      std::uint64_t* __restrict__ mid_count, unsigned long long* status) {
  const std::uint64_t b = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (b >= nb) return;
  const std::uint8_t k = kinds[b];
  std::uint64_t m = 0;
  bool ok = true;
  if (szx::is_coded(k)) {
    const int nbytes = szx::bytes_of(k);
    const std::uint32_t len = szx::block_len(b, n, block);
    const std::uint64_t lo = offs[b].lead;
    for (std::uint32_t c = 0; c < len; c += kChunk) {
      const int valid = valid_of(c + 4 * lane, len);
      const int lb = valid > 0 ? lead[lo + c / 4 + lane] : 0;
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (q < valid) {
          const int l = (lb >> (6 - 2 * q)) & 3;
          ok = ok && l <= nbytes;
          m += static_cast<std::uint64_t>(l <= nbytes ? nbytes - l : 0);
        }
    }
    m = warp::reduce_add(m);
  }
  const bool all_ok = __all_sync(warp::kFull, ok);
  if (lane == 0) {
    mid_count[b] = m;
    if (b + 1 == nb) mid_count[nb] = 0;
    if (!all_ok) atomicAdd(status + 1, 1ull);
  }
}

__global__ void put_mid_kernel(std::uint64_t count, const std::uint64_t* __restrict__ mid_off,
                               SzxOffsets* __restrict__ offs) {
  const std::uint64_t b = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < count) offs[b].mid = mid_off[b];
}

// Inverse of encode_kernel with the paper's index propagation (Figure 9)
// across lanes: leading byte p of a lane's first value comes from the
// nearest earlier lane that stores byte p of some value (a ballot), or
// from the previous chunk's last code; within a lane the chain is serial.
template <class T>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(std::uint64_t n, std::uint32_t block, std::uint64_t nb, const std::uint8_t* __restrict__ kinds,
                  const T* __restrict__ medians, const SzxOffsets* __restrict__ offs,
                  const std::uint8_t* __restrict__ lead, const std::uint8_t* __restrict__ mid, std::uint64_t mid_size,
                  const T* __restrict__ verb, T* __restrict__ out) {
  using U = typename szx::Bits<T>::U;
  __shared__ std::uint32_t stage[kWarps][Stage<T>::kWords];
  const int w = threadIdx.x / 32, lane = threadIdx.x & 31;
  const std::uint64_t b = std::uint64_t(blockIdx.x) * kWarps + w;
  if (b >= nb) return;
  const std::uint64_t begin = b * block;
  const std::uint32_t len = szx::block_len(b, n, block);
  const std::uint8_t k = kinds[b];
  if (k == szx::kVerbatim) {
    const std::uint64_t vo = offs[b].verb;
    for (std::uint32_t i = lane; i < len; i += 32) out[begin + i] = verb[vo + i];
    return;
  }
  const T m = medians[b];
  if (k == szx::kConstant) {
    for (std::uint32_t c = 0; c < len; c += kChunk) {
      const std::uint32_t i0 = c + 4 * lane;
      const T v[4] = {m, m, m, m};
      store4(out + begin + i0, valid_of(i0, len), v);
    }
    return;
  }
  const int nbytes = szx::bytes_of(k), shift = szx::Bits<T>::kTotal - k;
  const int nprop = nbytes < 3 ? nbytes : 3;
  const std::uint64_t lo = offs[b].lead;
  std::uint64_t mo = offs[b].mid;
  const std::uint8_t* sb = reinterpret_cast<const std::uint8_t*>(stage[w]);
  U carry = 0;
  for (std::uint32_t c = 0; c < len; c += kChunk) {
    const std::uint32_t i0 = c + 4 * lane;
    const int valid = valid_of(i0, len);
    const int lb = valid > 0 ? lead[lo + c / 4 + lane] : 0;
    int l[4], cnt = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      l[q] = q < valid ? (lb >> (6 - 2 * q)) & 3 : nbytes;
      cnt += nbytes - l[q];
    }
    const int incl = warp::scan_inclusive(cnt);
    const int total = __shfl_sync(warp::kFull, incl, 31);
    const int sh = static_cast<int>(mo & 3);
    const std::uint64_t a = mo - sh;
    const int words = (sh + total + 3) / 4;
    for (int q = lane; q < words; q += 32) {
      if (a + 4 * q + 4 <= mid_size) {
        stage[w][q] = reinterpret_cast<const std::uint32_t*>(mid + a)[q];
      } else {
        std::uint32_t x = 0;
        for (int j = 3; j >= 0; --j) x = (x << 8) | (a + 4 * q + j < mid_size ? mid[a + 4 * q + j] : 0u);
        stage[w][q] = x;
      }
    }
    __syncwarp();
    const int p0 = sh + incl - cnt;
    // The incoming code: only its leading nprop bytes can be inherited.
    U inc = 0;
#pragma unroll
    for (int p = 0; p < 3; ++p) {
      if (p >= nprop) break;
      int src = -1, pos = p0, at = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (q < valid && l[q] <= p) src = q, at = pos + (p - l[q]);
        pos += nbytes - l[q];
      }
      const unsigned own = src >= 0 ? sb[at] : 0u;
      const unsigned below = __ballot_sync(warp::kFull, src >= 0) & ((1u << lane) - 1);
      const unsigned got = __shfl_sync(warp::kFull, own, below ? 31 - __clz(below) : 0);
      const unsigned byte = below ? got : static_cast<unsigned>((carry >> (8 * (nbytes - 1 - p))) & 0xff);
      inc |= static_cast<U>(byte) << (8 * (nbytes - 1 - p));
    }
    U prev = inc;
    int pos = p0;
    T v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int mq = nbytes - l[q];
      U x = 0;
      for (int j = 0; j < mq; ++j) x = (x << 8) | static_cast<U>(sb[pos + j]);
      pos += mq;
      const U keep = 8 * mq >= szx::Bits<T>::kTotal ? U(0) : ~((U(1) << (8 * mq)) - 1);
      const U code = (prev & keep) | x;
      v[q] = szx::value_of<T>(code, m, shift);
      if (q < valid) prev = code;
    }
    store4(out + begin + i0, valid, v);
    __syncwarp();
    mo += static_cast<std::uint64_t>(total);
    carry = __shfl_sync(warp::kFull, prev, 31);
  }
}

// ---- Groups (szx_compress_onepass, one kernel; szx_decode_groups, offsets
// first): block sizes 128 * C. A CUDA block takes a group of SZx blocks, the
// look-back tile of its index (kWarps warps, NB consecutive blocks a warp, 4096
// values for float; the compressor's float groups of whole blocks a thread per
// 16 values of a block, compress_group_seg, and two such groups a tile,
// compress_tile_seg),
// with the codes kept in registers from the first read to the last write. The
// group's (the tile's) counts are published as soon as they are known and its
// place in the output comes from decoupled look-back over the tiles before it,
// so there is no scan kernel, no second read of the input and no host round
// trip between plan and encode. The mid-bytes are staged in shared memory
// before the look-back (their order within the tile does not depend on it),
// which gives the tiles before it time to finish theirs.
namespace onepass {

// Block counts in one state word: coded blocks << 31 | verbatim blocks.
constexpr int kCountShift = 31;
constexpr unsigned long long kCountMask = (1ull << kCountShift) - 1;
constexpr std::uint64_t kMaxBlocks = std::uint64_t(1) << 30;  // keeps the packed sums in their fields

// Device scratch after the two state arrays.
struct Result {
  unsigned long long lead, mid, verb;  // totals: bytes, bytes, values
  unsigned long long status;           // kBad* bits
  double mn, mx, bound;                // compression: the range's extremes (where given) and the bound used
};
// Compression that finds the range (FindRange): the finite values' extremes
// as maxima of order keys, ~range_key(min) and range_key(max), in kRangeSlots
// slots a cache line apart after Result (group g's in slot g % kRangeSlots,
// so that the groups' atomics do not queue on one address; where decoding
// keeps its GroupArrays), zeroed with Result; 0: no finite value.
constexpr int kRangeSlots = 16, kSlotWords = 16;
// compress_kernel's FindRange: 0 the bound is given or its range read; kFind
// the kernel finds the range (ABS); kSpeculate (REL) it also codes
// under a bound from a sample of the field's range (sample_range_kernel) and
// leaves what tells whether the field's bound would have coded the same bytes
// (note_radius; szx_compress_onepass checks it).
constexpr int kFind = 1, kSpeculate = 2;
constexpr unsigned kInfBits = 0x7f800000u;  // +inf's bits: no radius noted
constexpr std::size_t kRangeSlotBytes = kRangeSlots * kSlotWords * 8;
// The state buffer: two look-back state arrays (ngroups words each), Result,
// then the decoder's GroupArrays.
__host__ __device__ constexpr std::uint64_t result_word(std::uint64_t ngroups) { return 2 * ngroups; }
__host__ __device__ __forceinline__ Result* result_of(unsigned long long* state, std::uint64_t ngroups) {
  return reinterpret_cast<Result*>(state + result_word(ngroups));
}
__host__ __device__ __forceinline__ unsigned long long* range_slots(unsigned long long* state, std::uint64_t ngroups) {
  return reinterpret_cast<unsigned long long*>(result_of(state, ngroups) + 1);
}
constexpr unsigned long long kBadKind = 1, kBadCode = 2, kOverflow = 4, kBadRuns = 8;

// Warp 0, lane t holds block t of the group (lanes past the group 0): the
// group's sum is published at once (lookback.hpp) and each lane gets its
// block's exclusive prefix within the group.
struct GroupScan {
  std::uint64_t excl, sum;  // within the group
};
__device__ __forceinline__ GroupScan publish(unsigned long long* state, std::uint64_t g, std::uint64_t mine) {
  const std::uint64_t incl = warp::scan_inclusive(mine);
  const std::uint64_t sum = __shfl_sync(warp::kFull, incl, 31);
  lookback::publish_aggregate(state, g, sum);
  return GroupScan{incl - mine, sum};
}
using lookback::resolve;

__device__ __forceinline__ std::uint64_t counts_of(std::uint8_t kind) {
  return szx::is_coded(kind) ? (1ull << kCountShift) : kind == szx::kVerbatim ? 1ull : 0ull;
}

// Order keys of T's non-NaN values: key(a) < key(b) where a < b (-0 below
// +0), never 0, so that atomicMax of keys (and of their complements) finds
// maxima (minima) from a zeroed word.
template <class T>
__host__ __device__ __forceinline__ std::uint64_t range_key(T x) {
  using U = typename szx::Bits<T>::U;
  constexpr U kSign = U(1) << (8 * sizeof(U) - 1);
  const U b = szx::to_bits(x);
  return static_cast<std::uint64_t>(b & kSign ? U(~b) : U(b | kSign));
}
template <class T>
__host__ __device__ __forceinline__ T of_range_key(std::uint64_t k) {
  using U = typename szx::Bits<T>::U;
  constexpr U kSign = U(1) << (8 * sizeof(U) - 1);
  const U b = static_cast<U>(k);
  return szx::from_bits<T>(b & kSign ? U(b & ~kSign) : U(~b));
}

template <class U>
__device__ __forceinline__ U bswap(U x);
template <>
__device__ __forceinline__ std::uint32_t bswap(std::uint32_t x) {
  return __byte_perm(x, 0, 0x0123);
}
template <>
__device__ __forceinline__ std::uint64_t bswap(std::uint64_t x) {
  const std::uint32_t lo = static_cast<std::uint32_t>(x), hi = static_cast<std::uint32_t>(x >> 32);
  return (static_cast<std::uint64_t>(__byte_perm(lo, 0, 0x0123)) << 32) | __byte_perm(hi, 0, 0x0123);
}
__device__ __forceinline__ int clz(std::uint32_t x) { return __clz(static_cast<int>(x)); }
__device__ __forceinline__ int clz(std::uint64_t x) { return __clzll(static_cast<long long>(x)); }
__device__ __forceinline__ void or_to(std::uint64_t* p, std::uint64_t v) {
  atomicOr(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// Bit operations of the mid-bytes with no test of their shift's edges: the
// word of S bytes at byte o (0..S-1) of at[0], at[1]; the top m (0..S)
// bytes of x, right-aligned; the bits above the low m bytes (0 when m = S).
__device__ __forceinline__ std::uint32_t bytes_at(const std::uint32_t* at, int o) {
  return __funnelshift_r(at[0], at[1], 8 * o);
}
__device__ __forceinline__ std::uint64_t bytes_at(const std::uint64_t* at, int o) {
  return o ? (at[0] >> (8 * o)) | (at[1] << (64 - 8 * o)) : at[0];
}
__device__ __forceinline__ std::uint32_t top_bytes(std::uint32_t x, int m) {
  return __funnelshift_rc(x, 0u, 32 - 8 * m);
}
__device__ __forceinline__ std::uint64_t top_bytes(std::uint64_t x, int m) { return m > 0 ? x >> (64 - 8 * m) : 0; }
template <class U>
__device__ __forceinline__ U keep_above(int m);
template <>
__device__ __forceinline__ std::uint32_t keep_above(int m) {
  return __funnelshift_lc(0u, ~0u, 8 * m);
}
template <>
__device__ __forceinline__ std::uint64_t keep_above(int m) {
  return m >= 8 ? 0 : ~std::uint64_t(0) << (8 * m);
}

// Min and max of each of a warp's NB blocks, reduce-scattered: lane l ends
// with block home(l)'s (6 shuffles a quantity for NB = 4 instead of 20), so
// the lanes then work out the NB block heads at once.
template <int NB>
__device__ __forceinline__ int home_block(int lane) {
  return NB == 4 ? ((lane >> 4) & 1) * 2 + ((lane >> 3) & 1) : NB == 2 ? (lane >> 4) & 1 : 0;
}
template <int NB>
__device__ __forceinline__ int home_lane(int j) {
  return NB == 4 ? (j >> 1) * 16 + (j & 1) * 8 : NB == 2 ? j * 16 : 0;
}
template <int NB, class T, class Op>
__device__ __forceinline__ T reduce_scatter(const T (&x)[NB], Op op) {
  const int lane = threadIdx.x & 31;
  T k;
  int first;  // the first xor distance still to do
  if constexpr (NB == 4) {
    const bool hi = lane & 16, h8 = lane & 8;
    T k0 = hi ? x[2] : x[0], k1 = hi ? x[3] : x[1];
    const T s0 = hi ? x[0] : x[2], s1 = hi ? x[1] : x[3];
    k0 = op(k0, __shfl_xor_sync(warp::kFull, s0, 16));
    k1 = op(k1, __shfl_xor_sync(warp::kFull, s1, 16));
    k = h8 ? k1 : k0;
    k = op(k, __shfl_xor_sync(warp::kFull, h8 ? k0 : k1, 8));
    first = 4;
  } else if constexpr (NB == 2) {
    const bool hi = lane & 16;
    k = hi ? x[1] : x[0];
    k = op(k, __shfl_xor_sync(warp::kFull, hi ? x[0] : x[1], 16));
    first = 8;
  } else {
    k = x[0];
    first = 16;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o <= first) k = op(k, __shfl_xor_sync(warp::kFull, k, o));
  return k;
}
// Warp scans of a lane's R chunk counts (each chunk's sum below 2^16), two
// chunks a scan, kept packed (two 16-bit fields a word, fewer registers): the
// lane's exclusive prefix and the chunk's sum of chunk r are field r % 2 of
// word r / 2.
template <int R>
struct ChunkScan {
  std::uint32_t excl[(R + 1) / 2], sum[(R + 1) / 2];
  __device__ __forceinline__ int excl_of(int r) const { return static_cast<int>((excl[r / 2] >> (16 * (r % 2))) & 0xffffu); }
  __device__ __forceinline__ int sum_of(int r) const { return static_cast<int>((sum[r / 2] >> (16 * (r % 2))) & 0xffffu); }
};
template <int R>
__device__ __forceinline__ ChunkScan<R> scan_counts(const int (&cnt)[R]) {
  ChunkScan<R> cs;
#pragma unroll
  for (int r = 0; r < R; r += 2) {
    const std::uint32_t v =
        static_cast<std::uint32_t>(cnt[r]) | (r + 1 < R ? static_cast<std::uint32_t>(cnt[r + 1]) << 16 : 0u);
    const std::uint32_t incl = warp::scan_inclusive(v);
    cs.sum[r / 2] = __shfl_sync(warp::kFull, incl, 31);
    cs.excl[r / 2] = incl - v;  // field by field: no borrow
  }
  return cs;
}
// Lane 0 of each warp: its NB blocks' mid-bytes, their C chunks' sums.
template <int C, int NB, int R>
__device__ __forceinline__ void put_block_mids(const ChunkScan<R>& chunks, std::uint32_t* mid) {
  if ((threadIdx.x & 31) != 0) return;
  const int w = threadIdx.x >> 5;
#pragma unroll
  for (int j = 0; j < NB; ++j) {
    std::uint32_t block_mid = 0;
#pragma unroll
    for (int r = j * C; r < j * C + C; ++r) block_mid += static_cast<std::uint32_t>(chunks.sum_of(r));
    mid[w * NB + j] = block_mid;
  }
}
// fmin / fmax (one instruction): where they differ from the compares (a NaN,
// the sign of a zero) the block is verbatim or szx::block_head makes its ends
// canonical, so the bytes do not change.
struct MinOp {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
  __device__ double operator()(double a, double b) const { return fmin(a, b); }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

// f(K) with a float block's mid-byte count K (1..4) a compile-time constant
// (it is the same for every value of a block, so the warp takes one case).
template <class F>
__device__ __forceinline__ void with_nbytes(int nbytes, F&& f) {
  switch (nbytes) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    default: f(std::integral_constant<int, 4>{}); break;
  }
}

// The shape of a group: C chunks of 128 values a block, NB blocks a warp.
template <class T, int C, int NB>
struct Shape {
  using U = typename szx::Bits<T>::U;
  static constexpr int S = sizeof(U), kBits = 8 * S;
  static constexpr int R = C * NB;  // chunks a warp holds (4 values a lane each)
  static constexpr std::uint32_t kBlock = kChunk * C, kLeadPerBlock = kBlock / 4;
  static constexpr int kBlocks = kWarps * NB;  // a group's blocks, at most 32 (one lane of warp 0 each)
  static constexpr int kStage = kWarps * R * int(kChunk) + 32 / S;  // a group's mid-bytes (<= its input) in U words, + 32 B
  static_assert(kBlocks <= 32, "a lane per block");
  static_assert(szx::run_blocks<T>(kBlock) == std::uint32_t(kBlocks), "a group is a run of segment 21");
  // Whether every block of group g is whole and p (the kernel's values) 16-byte
  // aligned: the kernels' Full path.
  __device__ static bool full(std::uint64_t g, std::uint64_t n, const void* p) {
    return (g + 1) * kBlocks * kBlock <= n && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0;
  }
};

template <class T, int NBLK>
struct Shared {
  std::uint8_t kind[NBLK];
  T med[NBLK];
  std::uint32_t mid[NBLK];
  std::uint64_t coded[NBLK], verb[NBLK], mid_off[NBLK];  // within the group, then (decompression) absolute
  std::uint64_t coded_before, verb_before, mid_before, mid_total;
  std::uint64_t first_counts, first_mids;  // compress_tile_seg: its first group's sums
  // Compression's bound (szx::block_head), the proof's threshold and the
  // fast test's bound in T: read where used, not held in registers.
  double e, proof;
  T ef;
  T rmn[kWarps], rmx[kWarps];  // compression that finds the range: each warp's finite extremes
  unsigned rs_bits;            // kSpeculate: the least radius noted (note_radius), as bits (+inf: none)
};

// Totals, written by the last group: `counts` packs all blocks' counts
// (counts_of), lk is the last block's kind.
// llen: the last block's length.
template <class SH>
__device__ __forceinline__ std::uint64_t lead_total_of(std::uint8_t lk, std::uint32_t llen, std::uint64_t counts) {
  return (counts >> kCountShift) * SH::kLeadPerBlock - (szx::is_coded(lk) ? SH::kLeadPerBlock - (llen + 3) / 4 : 0);
}
template <class SH>
__device__ __forceinline__ void put_totals(Result* r, std::uint8_t lk, std::uint64_t n, std::uint64_t nb,
                                           std::uint64_t counts, std::uint64_t mid) {
  const std::uint32_t llen = szx::block_len(nb - 1, n, SH::kBlock);
  r->lead = lead_total_of<SH>(lk, llen, counts);
  r->verb = (counts & kCountMask) * SH::kBlock - (lk == szx::kVerbatim ? SH::kBlock - llen : 0);
  r->mid = mid;
}

// Compressor CTAs resident on an SM: double five (48 registers; they spill a
// little, 16-20 bytes, and beat four once the partial group is out of line:
// inlined, five spilled 136); float four (64 registers, no spill), where a
// CTA codes a look-back tile of two groups (compress_tile_seg), which spills
// 48-56 bytes at five and took 387 against 390 us (ncu, 512^3 REL 1e-3; one
// group a CTA had lost at four: 823-833 against 853-861 GB/s). Six (40
// registers) spill more and were slower.
template <class T>
constexpr int kOnePassBlocksPerSm = sizeof(T) == 4 ? 4 : 5;
// The decoder: five groups an SM, four where it decodes by pairs (float
// blocks of 128: 64 registers, no spill; at 48 decode_pair's eight values a
// lane spilled 36 bytes). Float blocks of 512 took 7% longer at four.
template <class T, int C>
constexpr int kOnePassDecodeBlocksPerSm = sizeof(T) == 4 && C == 1 ? 4 : 5;

// The staged mid-bytes to the payload's [mo, mo + total), 16 bytes a
// thread: a 16-byte store where all 16 are the group's and the payload is
// aligned, bytes at the two ends (shared with the neighbouring groups).
// Output bytes [16 c, 16 c + 16) from the 16-aligned base are staged bytes
// from 16 c - s: staged words from 4 c - s / 4, shifted by s % 4 bytes
// (the stage read as 32-bit words: the same bytes for either S; the words
// before it, down to st[-4], only make bytes before s, which are not
// written).
__device__ __forceinline__ void copy_out_stage(std::uint8_t* __restrict__ payload, std::uint64_t cap,
                                               const std::uint32_t* __restrict__ st, std::uint64_t mo,
                                               std::uint64_t total, Result* result) {
  if (total == 0) return;
  if (mo + total > cap) {
    if (threadIdx.x == 0) atomicOr(&result->status, kOverflow);
    return;
  }
  const int s = static_cast<int>(mo & 15), sw = s >> 2, sb = 8 * (s & 3);
  std::uint8_t* const base = payload + (mo - s);
  const bool vec = (reinterpret_cast<std::uintptr_t>(base) & 15) == 0;
  const int end = s + static_cast<int>(total);  // a group's mid-bytes: at most its input, 16 KiB
  const int pieces = (end + 15) / 16;
  for (int c = threadIdx.x; c < pieces; c += kThreads) {
    std::uint32_t x[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int q = 4 * c + i - sw;
      x[i] = __funnelshift_rc(st[q - 1], st[q], 32 - sb);
    }
    const int b0 = 16 * c;
    if (vec && b0 >= s && b0 + 16 <= end) {
      __stcs(reinterpret_cast<uint4*>(base + b0), make_uint4(x[0], x[1], x[2], x[3]));
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i)
        if (b0 + i >= s && b0 + i < end)
          base[b0 + i] = static_cast<std::uint8_t>(x[i / 4] >> (8 * (i % 4)));
    }
  }
}

// Steps the two compressor layouts share (compress_group, compress_group_seg).
// Thread 32: the group's finite extremes (each warp's, sh.rmn / sh.rmx) into
// its range slot (the atomics not awaited).
// kSpeculate: also the least radius the tile noted (sh.rs_bits) into the
// slot's third word, as the maximum of its bits' complement (0: none noted).
template <class T, int FindRange, class SHR>
__device__ __forceinline__ void put_group_range(const SHR& sh, unsigned long long* state, std::uint64_t ngroups,
                                                std::uint64_t g) {
  if (threadIdx.x != 32) return;
  T mn = sh.rmn[0], mx = sh.rmx[0];
#pragma unroll
  for (int k = 1; k < kWarps; ++k) mn = MinOp{}(mn, sh.rmn[k]), mx = MaxOp{}(mx, sh.rmx[k]);
  unsigned long long* const slot = range_slots(state, ngroups) + (g % kRangeSlots) * kSlotWords;
  if (mn <= mx) {  // a finite value
    atomicMax(slot, static_cast<unsigned long long>(~range_key(mn)));
    atomicMax(slot + 1, static_cast<unsigned long long>(range_key(mx)));
  }
  if constexpr (FindRange == kSpeculate) {
    const unsigned bits = sh.rs_bits;
    if (bits < kInfBits) atomicMax(slot + 2, ~static_cast<unsigned long long>(bits));
  }
}
// Warp 0: the group's block counts and mid-bytes published as look-back tile
// `tile`'s (lookback.hpp) and each of its KB blocks' places within the group
// into sh.
template <int KB, class SHR>
__device__ __forceinline__ void publish_group(SHR& sh, unsigned long long* state, std::uint64_t ngroups,
                                              std::uint64_t tile, GroupScan& cs, GroupScan& ms) {
  if ((threadIdx.x >> 5) != 0) return;
  const int lane = threadIdx.x & 31;
  const bool mine = lane < KB;
  cs = publish(state + ngroups, tile, counts_of(mine ? sh.kind[lane] : szx::kConstant));
  ms = publish(state, tile, mine ? sh.mid[lane] : 0);
  if (mine) {
    sh.coded[lane] = cs.excl >> kCountShift;
    sh.verb[lane] = cs.excl & kCountMask;
    sh.mid_off[lane] = ms.excl;
  }
  if (lane == 0) sh.mid_total = ms.sum;
}
// Warp 0, lane t for block base + t of a group of KB: the blocks' places
// after c0 (packed block counts, counts_of) and m0 (mid-bytes) into sh, and
// the lanes' inclusive sums (ci, mi; lane 31's: the group's).
template <int KB, class SHR>
__device__ __forceinline__ void place_blocks(SHR& sh, int base, std::uint64_t c0, std::uint64_t m0, std::uint64_t& ci,
                                             std::uint64_t& mi) {
  const int lane = threadIdx.x & 31;
  const bool mine = lane < KB;
  const std::uint64_t c = counts_of(mine ? sh.kind[base + lane] : szx::kConstant), m = mine ? sh.mid[base + lane] : 0;
  ci = warp::scan_inclusive(c), mi = warp::scan_inclusive(m);
  if (mine) {
    sh.coded[base + lane] = (c0 + ci - c) >> kCountShift;
    sh.verb[base + lane] = (c0 + ci - c) & kCountMask;
    sh.mid_off[base + lane] = m0 + mi - m;
  }
}
// The two look-backs side by side for look-back tile `tile`: block counts by
// warp 0 (returned there), mid-bytes by warp 1; the places before it into sh.
template <class SHR>
__device__ __forceinline__ std::uint64_t resolve_group(SHR& sh, unsigned long long* state, std::uint64_t ngroups,
                                                       std::uint64_t tile, std::uint64_t counts) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  std::uint64_t cb = 0;
  if (w == 0) {
    cb = resolve(state + ngroups, tile, counts);
    if (lane == 0) {
      sh.coded_before = cb >> kCountShift;
      sh.verb_before = cb & kCountMask;
    }
  } else if (w == 1) {
    const std::uint64_t mb = resolve(state, tile, sh.mid_total);
    if (lane == 0) sh.mid_before = mb;
  }
  return cb;
}
// Thread 0: segment 21's count (at most 16 KiB) and, in the last group, the
// totals (cb + counts: warp 0's); a thread a block: kinds and medians
// (Check: of blocks that exist).
template <class SH, bool Check, class T, class SHR>
__device__ __forceinline__ void put_group_heads(const SHR& sh, std::uint16_t* __restrict__ runs,
                                                std::uint8_t* __restrict__ kinds, T* __restrict__ medians,
                                                Result* result, std::uint64_t n, std::uint64_t nb,
                                                std::uint64_t ngroups, std::uint64_t g, std::uint64_t cb,
                                                std::uint64_t counts) {
  if (threadIdx.x == 0) {
    runs[g] = static_cast<std::uint16_t>(sh.mid_total);
    if (g + 1 == ngroups)
      put_totals<SH>(result, sh.kind[nb - 1 - g * SH::kBlocks], n, nb, cb + counts, sh.mid_before + sh.mid_total);
  }
  if (threadIdx.x < SH::kBlocks) {
    const std::uint64_t b = g * SH::kBlocks + threadIdx.x;
    if (!Check || b < nb) {
      kinds[b] = sh.kind[threadIdx.x];
      medians[b] = sh.med[threadIdx.x];
    }
  }
}

// Speculation (kSpeculate): a block coded under the sample's bound es codes
// the same under the field's bound e (es <= e, the same exponent E, so the
// same length and codes) unless e would make it constant or pass a value
// that missed es. A coded block of more than kSignExp + 1 bits has a radius r
// (szx::block_head's, rounded to nearest) with exponent above E, so r >= 2^(E+1)
// and its true radius is above every double below 2^(E+1), e among them:
// nothing to note. Others (rare) note their radius rounded down (at most the
// true one, as a float; 0 where a value missed) into sh.rs_bits, whose least
// the host compares with e (speculation_holds).
__device__ __forceinline__ float radius_down(float mn, float mx, float med) {
  return fmaxf(__fsub_rd(mx, med), __fsub_rd(med, mn));
}
__device__ __forceinline__ float radius_down(double mn, double mx, double med) {
  return __double2float_rd(fmax(__dsub_rd(mx, med), __dsub_rd(med, mn)));
}
template <class SHR, class T>
__device__ __forceinline__ void note_radius(SHR& sh, bool all_ok, T mn, T mx, T med) {
  const float r = all_ok ? radius_down(mn, mx, med) : 0.f;
  atomicMin(&sh.rs_bits, __float_as_uint(r) & 0x7fffffffu);
}
template <class T>
__device__ __forceinline__ bool radius_may_matter(bool all_ok, int len_bits) {
  return !all_ok || len_bits <= szx::Bits<T>::kSignExp + 1;
}

// One group (double; float's partial group: its whole groups take
// compress_group_seg). Full: every block of the group is whole and the input
// 16-byte aligned, so the `valid` counts are the constant 4 and fold away.
template <class T, int C, int NB, bool Full, int FindRange, class SHR>
__device__ __forceinline__ void compress_group(const T* __restrict__ in, std::uint64_t n, std::uint64_t nb,
                                               std::uint64_t ngroups,
                                               std::uint8_t* __restrict__ kinds, T* __restrict__ medians,
                                               std::uint16_t* __restrict__ runs,
                                               std::uint8_t* __restrict__ lead, std::uint8_t* __restrict__ payload,
                                               std::uint64_t cap, unsigned long long* __restrict__ state,
                                               typename Shape<T, C, NB>::U* __restrict__ stage,
                                               SHR& sh, std::uint64_t g, std::uint64_t tile) {
  using SH = Shape<T, C, NB>;
  using U = typename SH::U;
  constexpr int S = SH::S, kBits = SH::kBits, R = SH::R;
  constexpr std::uint32_t kBlock = SH::kBlock;
  Result* const result = result_of(state, ngroups);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const std::uint64_t b0 = g * SH::kBlocks + std::uint64_t(w) * NB;  // this warp's first block

  // Read once (every chunk's loads in flight together).
  T v[R][4];
  int valid[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const std::uint64_t b = b0 + r / C;
    const std::uint32_t i0 = (r % C) * kChunk + 4 * lane;
    if constexpr (Full) {
      valid[r] = 4;
    } else {
      const std::uint32_t len = b < nb ? szx::block_len(b, n, kBlock) : 0;
      valid[r] = valid_of(i0, len);
    }
    load4<T, Full>(in + b * kBlock + i0, valid[r], v[r]);
  }
  U code[R][4];
  std::uint32_t acc[R] = {};  // leading codes, 2 bits a value (the lead byte)
  int cnt[R] = {};            // mid-bytes of the lane's 4 values
  std::uint32_t kinds4 = 0;  // the warp's NB kinds, block j's in byte j (one register, not an array)
  static_assert(NB <= 4, "a warp's kinds in one word");
  // Min, max and the finite test (v * 0 + f stays 0 unless v is NaN or
  // infinite), then every block's head at once (a lane per block, see
  // reduce_scatter).
  T bmn[NB], bmx[NB];
  bool finite[NB];
#pragma unroll
  for (int j = 0; j < NB; ++j) {
    T mn = szx::from_bits<T>(szx::to_bits(std::numeric_limits<T>::infinity())), mx = -mn, fin = T(0);
#pragma unroll
    for (int r = j * C; r < j * C + C; ++r)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (q < valid[r]) {
          if constexpr (sizeof(T) == 4) fin = __fmaf_rn(v[r][q], 0.f, fin);
          else fin = __fma_rn(v[r][q], 0.0, fin);
          mn = MinOp{}(mn, v[r][q]);
          mx = MaxOp{}(mx, v[r][q]);
        }
    bmn[j] = mn, bmx[j] = mx;
    finite[j] = __all_sync(warp::kFull, fin == T(0));
  }
  const T hmn = reduce_scatter<NB>(bmn, MinOp{}), hmx = reduce_scatter<NB>(bmx, MaxOp{});
  if constexpr (FindRange) {
    // The finite values' extremes: a finite block's (lane l holds block
    // home(l)'s), else value by value (a block with a NaN or an infinity, rare).
    const T inf = szx::from_bits<T>(szx::to_bits(std::numeric_limits<T>::infinity()));
    bool fin_home = finite[0];
#pragma unroll
    for (int j = 1; j < NB; ++j) fin_home = home_block<NB>(lane) == j ? finite[j] : fin_home;
    T rmn = fin_home ? hmn : inf, rmx = fin_home ? hmx : -inf;
#pragma unroll
    for (int j = 0; j < NB; ++j)
      if (!finite[j]) {
#pragma unroll
        for (int r = j * C; r < j * C + C; ++r)
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (q < valid[r] && v[r][q] - v[r][q] == T(0)) {
              rmn = MinOp{}(rmn, v[r][q]);
              rmx = MaxOp{}(rmx, v[r][q]);
            }
      }
    rmn = warp::reduce_min(rmn);
    rmx = warp::reduce_max(rmx);
    if (lane == 0) sh.rmn[w] = rmn, sh.rmx[w] = rmx;
  }
  const szx::BlockHead<T> head = szx::block_head<T>(hmn, hmx, sh.e);
  // Bit 0: constant; bit 1: the bound is proven for every value (szx::bound_proven).
  const int flags = int(head.constant) | (szx::bound_proven<T>(hmn, hmx, sh.proof) ? 2 : 0);
#pragma unroll
  for (int j = 0; j < NB; ++j) {
    const std::uint64_t b = b0 + j;
    const int from = home_lane<NB>(j);
    szx::BlockHead<T> hd;
    hd.median = __shfl_sync(warp::kFull, head.median, from);
    const int fl = __shfl_sync(warp::kFull, flags, from);
    hd.constant = (fl & 1) != 0;
    hd.len_bits = __shfl_sync(warp::kFull, head.len_bits, from);
    std::uint8_t kind = szx::kVerbatim;
    T med = T(0);
    if (!Full && b >= nb) {
      kind = szx::kConstant;  // past the end: adds nothing
    } else if (finite[j]) {
      if (hd.constant) {
        kind = szx::kConstant;
        med = hd.median;
      } else {
        const int nbytes = szx::bytes_of(hd.len_bits), shift = szx::Bits<T>::kTotal - hd.len_bits;
        const T m = hd.median;
        bool ok = true;
#pragma unroll
        for (int r = j * C; r < j * C + C; ++r)
#pragma unroll
          for (int q = 0; q < 4; ++q) code[r][q] = szx::code_of<T>(v[r][q], m, shift);
        if (!(fl & 2)) {
#pragma unroll
          for (int r = j * C; r < j * C + C; ++r)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const T d = v[r][q] - szx::value_of<T>(code[r][q], m, shift);
              ok = ok && (q >= valid[r] || (d < 0 ? -d : d) <= sh.ef);
            }
        }
        if (!__all_sync(warp::kFull, ok)) {  // the exact test (szx::within) where the fast one fails
          ok = true;
#pragma unroll
          for (int r = j * C; r < j * C + C; ++r)
#pragma unroll
            for (int q = 0; q < 4; ++q)
              ok = ok && (q >= valid[r] ||
                          szx::within(static_cast<double>(v[r][q]),
                                      static_cast<double>(szx::value_of<T>(code[r][q], m, shift)), sh.e));
        }
        const bool all_ok = __all_sync(warp::kFull, ok);
        if constexpr (FindRange == kSpeculate) {  // block j's radius where it may matter, 0 where it missed
          if (radius_may_matter<T>(all_ok, hd.len_bits)) {  // the warp's vote
            const T bmn = __shfl_sync(warp::kFull, hmn, from), bmx = __shfl_sync(warp::kFull, hmx, from);
            if (lane == 0) note_radius(sh, all_ok, bmn, bmx, m);
          }
        }
        if (all_ok) {
          kind = static_cast<std::uint8_t>(hd.len_bits);
          med = m;
          // Leading bytes (szx::leading_bytes: clz of the xor, at most min(nbytes, 3)).
          // A code of at most 3 bytes has at most that many; a longer one
          // gets a bit set at the top of its fourth byte, which caps the
          // count at 3 without a clamp.
          const U cap3 = nbytes > 3 ? U(1) << (8 * (nbytes - 3) - 1) : U(0);
          U carry = 0;
#pragma unroll
          for (int r = j * C; r < j * C + C; ++r) {
            const U up = __shfl_up_sync(warp::kFull, code[r][3], 1);
            U prev = lane == 0 ? carry : up;
            const int base = kBits - 8 * nbytes;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int l = (clz(static_cast<U>((code[r][q] ^ prev) | cap3)) - base) >> 3;
              if (q < valid[r]) {
                acc[r] |= static_cast<std::uint32_t>(l) << (6 - 2 * q);
                cnt[r] += nbytes - l;
              }
              prev = code[r][q];
            }
            carry = __shfl_sync(warp::kFull, code[r][3], 31);
          }
        }
      }
    }
    kinds4 |= std::uint32_t(kind) << (8 * j);
    if (lane == 0) {
      sh.kind[w * NB + j] = kind;
      sh.med[w * NB + j] = med;
    }
  }
  // Each chunk's lane offsets and sum (a block's mid-bytes add its chunks').
  const ChunkScan<R> chunks = scan_counts<R>(cnt);
  put_block_mids<C, NB>(chunks, sh.mid);
  __syncthreads();
  if constexpr (FindRange) put_group_range<T, FindRange>(sh, state, ngroups, g);
  GroupScan cs{}, ms{};
  publish_group<SH::kBlocks>(sh, state, ngroups, tile, cs, ms);
  __syncthreads();
  // Stage the group's mid-bytes, each value's most significant first. Float:
  // byte stores (no atomics, no buffer), the block's byte count a constant;
  // double: each value's bytes ORed into the words they touch (the stage
  // starts zeroed).
#pragma unroll
  for (int j = 0; j < NB; ++j) {
    const std::uint8_t kind = static_cast<std::uint8_t>(kinds4 >> (8 * j));
    if (!szx::is_coded(kind)) continue;
    const int nbytes = szx::bytes_of(kind);
    unsigned p0 = static_cast<unsigned>(sh.mid_off[w * NB + j]);  // unsigned: p / S a shift
    if constexpr (S == 4) {
      with_nbytes(nbytes, [&](auto nbc) {
        constexpr int K = decltype(nbc)::value;
        std::uint8_t* const st = reinterpret_cast<std::uint8_t*>(stage);
#pragma unroll
        for (int r = j * C; r < j * C + C; ++r) {
          int p = static_cast<int>(p0) + chunks.excl_of(r);
          p0 += chunks.sum_of(r);
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            // Bytes l..K-1 of the code at p - l + k (a value past the block's end: none).
            const int l = Full || q < valid[r] ? static_cast<int>((acc[r] >> (6 - 2 * q)) & 3) : K;
#pragma unroll
            for (int k = 0; k < K; ++k)
              if (k >= l) st[p - l + k] = static_cast<std::uint8_t>(code[r][q] >> (8 * (K - 1 - k)));
            p += K - l;
          }
        }
      });
    } else {
#pragma unroll
      for (int r = j * C; r < j * C + C; ++r) {
        unsigned p = p0 + chunks.excl_of(r);
        p0 += chunks.sum_of(r);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int l = (acc[r] >> (6 - 2 * q)) & 3;
          const int m = q < valid[r] ? nbytes - l : 0;
          if (m > 0) {
            const U y = bswap<U>(static_cast<U>(code[r][q] << (kBits - 8 * m)));
            const int o = static_cast<int>(p & (S - 1));
            U* const at = stage + p / S;
            or_to(at, static_cast<U>(y << (8 * o)));
            if (o + m > S) or_to(at + 1, static_cast<U>(y >> (kBits - 8 * o)));
            p += m;
          }
        }
      }
    }
  }
  const std::uint64_t cb = resolve_group(sh, state, ngroups, tile, cs.sum);
  __syncthreads();
  put_group_heads<SH, true>(sh, runs, kinds, medians, result, n, nb, ngroups, g, cb, cs.sum);
  // Leading codes and verbatim blocks: the warp's own (its coded blocks'
  // codes follow one another from its first one's place).
  std::uint8_t* lp = lead + (sh.coded_before + sh.coded[w * NB]) * SH::kLeadPerBlock + lane;
#pragma unroll
  for (int j = 0; j < NB; ++j) {
    const std::uint8_t kind = static_cast<std::uint8_t>(kinds4 >> (8 * j));
    const int t = w * NB + j;
    if (szx::is_coded(kind)) {
#pragma unroll
      for (int r = j * C; r < j * C + C; ++r)
        if (valid[r] > 0) lp[(r % C) * 32] = static_cast<std::uint8_t>(acc[r]);
      lp += SH::kLeadPerBlock;
    } else if (kind == szx::kVerbatim) {
      // From the end of the payload backwards, block by block; the values
      // read again (verbatim blocks are rare).
      const std::uint64_t b = b0 + j;
      const std::uint32_t len = szx::block_len(b, n, kBlock);
      const std::uint64_t capv = cap / sizeof(T), end = (sh.verb_before + sh.verb[t]) * kBlock + len;
      if (end > capv) {
        if (lane == 0) atomicOr(&result->status, kOverflow);
        continue;
      }
      T* const dst = reinterpret_cast<T*>(payload) + (capv - end);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        T x[4];
        load4(in + b * kBlock + c * kChunk + 4 * lane, valid[j * C + c], x);
        store4(dst + c * kChunk + 4 * lane, valid[j * C + c], x);
      }
    }
  }
  copy_out_stage(payload, cap, reinterpret_cast<const std::uint32_t*>(stage), sh.mid_before, sh.mid_total, result);
}

// Float whole groups by segments (compress_group_seg): a thread codes 16
// consecutive values of one block (8 C threads a block), so that the block's
// work (its head, its kind, its tests, its votes) is done once for all the
// warp's blocks at once instead of once a block, and its mid-bytes are one run
// that it packs into whole words as it goes (compress_group takes four values
// a lane from each block in turn and stores every byte). The bytes are the
// same: compress_group's arithmetic in another order.
// The stage starts zeroed. A thread stores each word that its run fills
// alone, and ORs in the two it may share with the runs beside it (its first,
// where the run before ends in it, and its last, partial one), so the
// threads' stores may land in any order. (A host model of the packing, with
// the threads' stores in random order, matched the byte-by-byte stream.)
namespace seg {
constexpr int kValues = 16;  // a thread's
// Min and max of a block's segments, kSegs consecutive lanes.
template <int kSegs>
__device__ __forceinline__ void block_extremes(float& mn, float& mx) {
#pragma unroll
  for (int o = 1; o < kSegs; o <<= 1) {
    mn = MinOp{}(mn, __shfl_xor_sync(warp::kFull, mn, o));
    mx = MaxOp{}(mx, __shfl_xor_sync(warp::kFull, mx, o));
  }
}
template <int C>
struct Layout {
  using SH = Shape<float, C, 4 / C>;
  static constexpr int kSegs = int(SH::kBlock) / kValues;  // threads a block
  static_assert(kSegs * SH::kBlocks == kThreads && kSegs <= 32, "a block's threads in one warp");
  int w, lane, jb, s;  // warp, lane, block in the group, segment in the block
  unsigned segmask;    // the block's lanes
  __device__ Layout() {
    w = threadIdx.x >> 5, lane = threadIdx.x & 31, jb = threadIdx.x / kSegs, s = threadIdx.x % kSegs;
    segmask = kSegs == 32 ? warp::kFull : ((1u << kSegs) - 1) << (lane & ~(kSegs - 1));
  }
  __device__ bool all_of(bool p) const { return (__ballot_sync(warp::kFull, p) & segmask) == segmask; }
  __device__ static const float* values(const float* in, std::uint64_t g) {
    return in + g * (SH::kBlocks * SH::kBlock) + kValues * threadIdx.x;
  }
};
__device__ __forceinline__ void load(const float* __restrict__ src, float (&v)[kValues]) {
#pragma unroll
  for (int k = 0; k < kValues / 4; ++k) load4<float, true>(src + 4 * k, 4, v + 4 * k);
}
// What a thread keeps from coding to staging and writing.
struct Coded {
  std::uint32_t code[kValues];
  std::uint32_t leadw;  // its 16 leading codes, byte i for values 4i..4i+3 (the lead array's bytes)
  int excl;             // its mid-bytes before it in the block
  int nbytes;
  std::uint8_t kind;
};
// Kind, codes, leading codes and the block's mid-bytes, into sh (kind, med,
// mid, at the group's blocks: from Base) and, with FindRange, each warp's
// finite extremes (rmn, rmx; Base > 0, a tile's second group: folded into
// the first's).
// Ext: the block's extremes come in be (range_blocks_kernel's: NaN where the
// block holds a NaN or an infinity) instead of from the values.
template <int C, int FindRange, bool Ext, int Base = 0, class SHR>
__device__ __forceinline__ Coded code_segment(const Layout<C>& L, const float (&v)[kValues], float2 be, SHR& sh) {
  constexpr int kSegs = Layout<C>::kSegs;
  static_assert(!(FindRange && Ext), "the range pass gave the extremes");
  float mn, mx;
  bool finite;
  if constexpr (Ext) {
    mn = be.x, mx = be.y;
    finite = mn == mn;
  } else {
    mn = v[0], mx = v[0];
    float fin = 0.f;
#pragma unroll
    for (int i = 0; i < kValues; ++i) {
      fin = __fmaf_rn(v[i], 0.f, fin);
      mn = MinOp{}(mn, v[i]);
      mx = MaxOp{}(mx, v[i]);
    }
    const bool seg_finite = fin == 0.f;
    if constexpr (FindRange) {
      const float inf = std::numeric_limits<float>::infinity();
      float rmn = seg_finite ? mn : inf, rmx = seg_finite ? mx : -inf;
      if (!seg_finite) {
#pragma unroll
        for (int i = 0; i < kValues; ++i)
          if (v[i] - v[i] == 0.f) rmn = MinOp{}(rmn, v[i]), rmx = MaxOp{}(rmx, v[i]);
      }
      rmn = warp::reduce_min(rmn);
      rmx = warp::reduce_max(rmx);
      if (L.lane == 0) {
        if constexpr (Base > 0) rmn = MinOp{}(rmn, sh.rmn[L.w]), rmx = MaxOp{}(rmx, sh.rmx[L.w]);
        sh.rmn[L.w] = rmn, sh.rmx[L.w] = rmx;
      }
    }
    block_extremes<kSegs>(mn, mx);
    finite = L.all_of(seg_finite);
  }
  const szx::BlockHead<float> hd = szx::block_head<float>(mn, mx, sh.e);
  Coded out;
  out.nbytes = szx::bytes_of(hd.len_bits);
  const int shift = 32 - hd.len_bits;
  const bool coding = finite && !hd.constant;
#pragma unroll
  for (int i = 0; i < kValues; ++i) out.code[i] = coding ? szx::code_of<float>(v[i], hd.median, shift) : 0u;
  bool ok = true;
  if (coding && !szx::bound_proven<float>(mn, mx, sh.proof)) {
#pragma unroll
    for (int i = 0; i < kValues; ++i) {
      const float d = v[i] - szx::value_of<float>(out.code[i], hd.median, shift);
      ok = ok && (d < 0 ? -d : d) <= sh.ef;
    }
  }
  if (!L.all_of(ok)) {  // the exact test (szx::within) where the fast one fails
    ok = true;
#pragma unroll
    for (int i = 0; i < kValues; ++i)
      ok = ok && szx::within(static_cast<double>(v[i]),
                             static_cast<double>(szx::value_of<float>(out.code[i], hd.median, shift)), sh.e);
  }
  const bool all_ok = L.all_of(ok);  // every lane votes
  if constexpr (FindRange == kSpeculate)
    if (coding && L.s == 0 && radius_may_matter<float>(all_ok, hd.len_bits)) note_radius(sh, all_ok, mn, mx, hd.median);
  const bool coded = coding && all_ok;
  out.kind = !finite ? szx::kVerbatim
             : hd.constant ? szx::kConstant
             : coded       ? static_cast<std::uint8_t>(hd.len_bits)
                           : szx::kVerbatim;
  // Leading codes (szx::leading_bytes): h = (31 - clz) >> 3, one FLO and a
  // shift (-1 for a zero xor: an arithmetic shift), is the byte of the xor's
  // top set bit, so l = nbytes - 1 - h (the xor is below 2^(8 nbytes); a code
  // of more than 3 bytes gets a bit at the top of its fourth byte, which caps
  // l at 3 without a clamp): four values' codes are the byte
  // (nbytes - 1) * 0x55 - sum h 4^(3 - q) and their mid-bytes 4 + sum h.
  // ((39 - clz) >> 3, the mid-bytes themselves, cost an add a value more.)
  // The code before the thread's first is the lane before's (0 at the
  // block's start).
  const std::uint32_t cap3 = out.nbytes > 3 ? 1u << (8 * (out.nbytes - 3) - 1) : 0u;
  std::uint32_t prev = __shfl_up_sync(warp::kFull, out.code[kValues - 1], 1);
  if (L.s == 0) prev = 0;
  out.leadw = 0;
  int cnt = 0;  // the thread's mid-bytes
  if (coded) {
    int hs = 0;
#pragma unroll
    for (int i = 0; i < kValues / 4; ++i) {
      int packed = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int h = (31 - clz((out.code[4 * i + q] ^ prev) | cap3)) >> 3;
        packed = 4 * packed + h;
        hs += h;
        prev = out.code[4 * i + q];
      }
      out.leadw |= static_cast<std::uint32_t>(((out.nbytes - 1) * 0x55 - packed) & 0xff) << (8 * i);
    }
    cnt = kValues + hs;
  }
  const int incl = warp::scan_inclusive<kSegs>(cnt);
  out.excl = incl - cnt;
  if (L.s == kSegs - 1) sh.mid[Base + L.jb] = static_cast<std::uint32_t>(incl);
  if (L.s == 0) {
    sh.kind[Base + L.jb] = out.kind;
    sh.med[Base + L.jb] = szx::is_coded(out.kind) || out.kind == szx::kConstant ? hd.median : 0.f;
  }
  return out;
}
// The pending bytes of a thread's run after staging: c8 / 8 bytes at the top
// of hi, for word wp of the stage.
struct Tail {
  unsigned wp;
  int c8;
  std::uint32_t hi;
};
// Value i's mid-bytes appended to hi, whose top c8 bits are taken: c8 grows
// by their bits; returns what did not fit in hi (0 when c8 was 0), for the
// next word.
__device__ __forceinline__ std::uint32_t append_value(const Coded& cd, int i, int drop, std::uint32_t& hi, int& c8) {
  const int l = static_cast<int>((cd.leadw >> (8 * (i / 4) + 6 - 2 * (i % 4))) & 3);
  const int sft = drop + 8 * l;                                   // 32: no byte
  const std::uint32_t x = __funnelshift_lc(0u, cd.code[i], sft);  // the mid-bytes at the top
  hi |= x >> c8;
  const std::uint32_t lo = __funnelshift_r(0u, x, c8);
  c8 += 32 - sft;
  return lo;
}
// The run, most significant byte of each value first, from stage byte p:
// every word it fills stored, its first ORed in where the run before ends in
// it (the stage starts zeroed; that run's tail is ORed in too, in either
// order), so no thread waits for another's stores.
__device__ __forceinline__ Tail stage_run(const Coded& cd, unsigned p, std::uint32_t* __restrict__ stage) {
  Tail t{p >> 2, 8 * static_cast<int>(p & 3), 0u};
  bool shared_word = t.c8 > 0;
  const int drop = 32 - 8 * cd.nbytes;  // the code's bits above its nbytes
#pragma unroll
  for (int i = 0; i < kValues; ++i) {
    const std::uint32_t lo = append_value(cd, i, drop, t.hi, t.c8);
    if (t.c8 >= 32) {
      if (shared_word) atomicOr(stage + t.wp, bswap(t.hi));
      else stage[t.wp] = bswap(t.hi);
      shared_word = false;
      ++t.wp;
      t.hi = lo;
      t.c8 -= 32;
    }
  }
  return t;
}
// The run as stage_run packs it, with the first word kept apart instead of
// tested for at each store: every word the run fills is stored alike, the
// first to the thread's own slot where the run before ends in it, ORed in from
// there at the end (with the last, partial one). 13% fewer instructions (15%
// fewer on the ALU pipe), but longer waits between them: the ABS kernel, whose
// ALU pipe also finds the blocks' extremes, runs 2-5% faster by it, the REL
// one (extremes given) no faster (perf/NOTES.md round 29).
__device__ __forceinline__ void stage_run_slot(const Coded& cd, unsigned p, std::uint32_t* __restrict__ stage) {
  __shared__ std::uint32_t first_word[kThreads];
  std::uint32_t* const slot = first_word + threadIdx.x;
  const unsigned wp0 = p >> 2;
  unsigned wp = wp0;
  int c8 = 8 * static_cast<int>(p & 3);
  const bool shared0 = c8 > 0;
  std::uint32_t* dst = shared0 ? slot : stage + wp0;
  std::uint32_t hi = 0;
  const int drop = 32 - 8 * cd.nbytes;
#pragma unroll
  for (int i = 0; i < kValues; ++i) {
    const std::uint32_t lo = append_value(cd, i, drop, hi, c8);
    if (c8 >= 32) {
      *dst = bswap(hi);
      dst = stage + ++wp;
      hi = lo;
      c8 -= 32;
    }
  }
  if (shared0 && wp != wp0) atomicOr(stage + wp0, *slot);
  if (c8 > 0) atomicOr(stage + wp, bswap(hi));
}
// The whole run and its pending tail: by stage_run_slot (Slot), else by
// stage_run, the tail ORed in.
template <bool Slot>
__device__ __forceinline__ void stage_run_all(const Coded& cd, unsigned p, std::uint32_t* __restrict__ stage) {
  if constexpr (Slot) {
    stage_run_slot(cd, p, stage);
  } else {
    const Tail t = stage_run(cd, p, stage);
    if (t.c8 > 0) atomicOr(stage + t.wp, bswap(t.hi));
  }
}
}  // namespace seg

// A segment thread's output once the look-backs are done: its four lead
// bytes (a coded block) or its 16 values verbatim, from the end of the
// payload backwards (verbatim blocks are rare: the values read again from
// src). t: its block's index in sh.
template <int C, class SHR>
__device__ __forceinline__ void put_segment(std::uint8_t kind, std::uint32_t leadw, const seg::Layout<C>& lay,
                                            const SHR& sh, int t, const float* __restrict__ src,
                                            std::uint8_t* __restrict__ lead, std::uint8_t* __restrict__ payload,
                                            std::uint64_t cap, Result* result) {
  using SH = typename seg::Layout<C>::SH;
  if (szx::is_coded(kind)) {
    std::uint8_t* const lp = lead + (sh.coded_before + sh.coded[t]) * SH::kLeadPerBlock + 4 * lay.s;
    if ((reinterpret_cast<std::uintptr_t>(lp) & 3) == 0) {
      *reinterpret_cast<std::uint32_t*>(lp) = leadw;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) lp[k] = static_cast<std::uint8_t>(leadw >> (8 * k));
    }
  } else if (kind == szx::kVerbatim) {
    const std::uint64_t capv = cap / sizeof(float), end = (sh.verb_before + sh.verb[t] + 1) * SH::kBlock;
    if (end > capv) {
      if (lay.s == 0) atomicOr(&result->status, kOverflow);
    } else {
      float* const dst = reinterpret_cast<float*>(payload) + (capv - end) + seg::kValues * lay.s;
#pragma unroll
      for (int k = 0; k < seg::kValues / 4; ++k) {
        float x[4];
        load4<float, true>(src + 4 * k, 4, x);
        store4(dst + 4 * k, 4, x);
      }
    }
  }
}

// One float whole group by segments, from the thread's values v, as
// look-back tile `tile`.
template <int C, int FindRange, bool Ext, class SHR>
__device__ __forceinline__ void compress_group_seg(const float* __restrict__ in, std::uint64_t n, std::uint64_t nb,
                                                   std::uint64_t ngroups, std::uint8_t* __restrict__ kinds,
                                                   float* __restrict__ medians, std::uint16_t* __restrict__ runs,
                                                   std::uint8_t* __restrict__ lead, std::uint8_t* __restrict__ payload,
                                                   std::uint64_t cap, unsigned long long* __restrict__ state,
                                                   std::uint32_t* __restrict__ stage, SHR& sh, std::uint64_t g,
                                                   std::uint64_t tile, const float (&v)[seg::kValues],
                                                   const float2* __restrict__ ext) {
  using SH = Shape<float, C, 4 / C>;
  using L = seg::Layout<C>;
  Result* const result = result_of(state, ngroups);
  const L lay;
  const float2 be = Ext ? ext[g * SH::kBlocks + lay.jb] : float2{};
  const seg::Coded cd = seg::code_segment<C, FindRange, Ext>(lay, v, be, sh);
  __syncthreads();
  if constexpr (FindRange) put_group_range<float, FindRange>(sh, state, ngroups, g);
  GroupScan cs{}, ms{};
  publish_group<SH::kBlocks>(sh, state, ngroups, tile, cs, ms);
  __syncthreads();
  if (szx::is_coded(cd.kind))
    seg::stage_run_all<FindRange != 0>(cd, static_cast<unsigned>(sh.mid_off[lay.jb]) + static_cast<unsigned>(cd.excl),
                                  stage);
  const std::uint64_t cb = resolve_group(sh, state, ngroups, tile, cs.sum);
  __syncthreads();
  put_group_heads<SH, false>(sh, runs, kinds, medians, result, n, nb, ngroups, g, cb, cs.sum);
  put_segment<C>(cd.kind, cd.leadw, lay, sh, lay.jb, L::values(in, g), lead, payload, cap, result);
  copy_out_stage(payload, cap, stage, sh.mid_before, sh.mid_total, result);
}

namespace seg {
// The second group of a tile: a thread's 16 values copied to shared memory
// while it codes the first (cp.async; a plain copy before sm_80). Its four
// 16-byte pieces are rotated by lane / 2 so that each quarter warp's reads
// take distinct banks.
__device__ __forceinline__ int piece_slot(int k) { return (k + ((threadIdx.x & 31) >> 1)) & 3; }
__device__ __forceinline__ void copy_ahead(const float* __restrict__ src, float4* dst) {
#pragma unroll
  for (int k = 0; k < kValues / 4; ++k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst + piece_slot(k)));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src + 4 * k) : "memory");
#else
    dst[piece_slot(k)] = *reinterpret_cast<const float4*>(src + 4 * k);
#endif
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// The thread's own copy (no barrier: each thread reads only what it copied),
// and its 64 bytes zeroed again (the stage's second half, which the tile's
// mid-bytes may reach).
// A thread's place in the stage half that holds a group's values ahead.
__device__ __forceinline__ float4* ahead_of(std::uint32_t* half) {
  return reinterpret_cast<float4*>(half) + kValues / 4 * threadIdx.x;
}
__device__ __forceinline__ void take_ahead(float4* src, float (&v)[kValues]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
#pragma unroll
  for (int k = 0; k < kValues / 4; ++k) {
    const float4 x = src[piece_slot(k)];
    v[4 * k] = x.x, v[4 * k + 1] = x.y, v[4 * k + 2] = x.z, v[4 * k + 3] = x.w;
  }
#pragma unroll
  for (int k = 0; k < kValues / 4; ++k) src[k] = make_float4(0.f, 0.f, 0.f, 0.f);
}
}  // namespace seg

// The loads a tile of two float groups starts with, before the kernel's first
// barrier: the second group's values to the stage's second half (ahead), the
// first's into v, its blocks' extremes (Ext) into be0.
template <int C, bool Ext>
__device__ __forceinline__ void start_tile_seg(const float* __restrict__ in, std::uint64_t tile, std::uint32_t* ahead,
                                               const float2* __restrict__ ext, float (&v)[seg::kValues],
                                               float2& be0) {
  using L = seg::Layout<C>;
  seg::copy_ahead(L::values(in, 2 * tile + 1), seg::ahead_of(ahead));
  seg::load(L::values(in, 2 * tile), v);
  if constexpr (Ext) be0 = ext[2 * tile * L::SH::kBlocks + threadIdx.x / L::kSegs];
}

// The CTA's look-back tile, 64-bit (its groups' indices and their blocks' are
// products of it), read where needed rather than held in a register.
__device__ __forceinline__ std::uint64_t this_tile() { return blockIdx.x; }

// Look-back tile this_tile(): float whole groups g = 2 this_tile() and g + 1 (one publish,
// one look-back and one copy-out for both; the look-backs' barrier
// held a fifth of the one-group kernel's stall samples). The first group is
// coded and staged while the second's values are copied to the stage's second
// half; the second's mid-bytes follow the first's in the stage. sh holds both
// groups' blocks (the second's from KB); segment 21 keeps a count a group.
// The kernel started the loads before its first barrier (start_tile_seg): v
// and be0 are the first group's values and block extremes.
template <int C, int FindRange, bool Ext, class SHR>
__device__ __forceinline__ void compress_tile_seg(const float* __restrict__ in, std::uint64_t n, std::uint64_t nb,
                                                  std::uint64_t ngroups, std::uint8_t* __restrict__ kinds,
                                                  float* __restrict__ medians, std::uint16_t* __restrict__ runs,
                                                  std::uint8_t* __restrict__ lead, std::uint8_t* __restrict__ payload,
                                                  std::uint64_t cap, unsigned long long* __restrict__ state,
                                                  std::uint32_t* __restrict__ stage, SHR& sh,
                                                  const float2* __restrict__ ext, float (&v)[seg::kValues],
                                                  float2 be0) {
  using SH = Shape<float, C, 4 / C>;
  using L = seg::Layout<C>;
  constexpr int KB = SH::kBlocks;
  constexpr int kGroupWords = kWarps * SH::R * int(kChunk);  // a group's values: the stage's first half
  // Read again where needed rather than held: the tile (this_tile()), groups g and
  // g + 1, and each thread's leading codes of the first group (lead_keep).
  __shared__ std::uint32_t lead_keep[kThreads];
  const auto ahead = [&] { return seg::ahead_of(stage + kGroupWords); };
  Result* const result = result_of(state, ngroups);
  const L lay;
  const seg::Coded c0 = seg::code_segment<C, FindRange, Ext>(lay, v, be0, sh);
  const float2 be1 = Ext ? ext[(2 * this_tile() + 1) * KB + lay.jb] : float2{};
  __syncthreads();
  // The first group's places in the tile (warp 0, a lane a block; its sums
  // into sh.first_counts and sh.first_mids).
  if (lay.w == 0) {
    std::uint64_t ci, mi;
    place_blocks<KB>(sh, 0, 0, 0, ci, mi);
    if (lay.lane == 31) sh.first_counts = ci, sh.first_mids = mi;
  }
  __syncthreads();
  if (szx::is_coded(c0.kind))
    seg::stage_run_all<FindRange != 0>(c0, static_cast<unsigned>(sh.mid_off[lay.jb]) + static_cast<unsigned>(c0.excl),
                                  stage);
  lead_keep[threadIdx.x] = c0.leadw;
  seg::take_ahead(ahead(), v);
  const seg::Coded c1 = seg::code_segment<C, FindRange, Ext, KB>(lay, v, be1, sh);
  __syncthreads();  // the second group's blocks in sh; the second half zeroed
  if constexpr (FindRange) put_group_range<float, FindRange>(sh, state, ngroups, this_tile());
  std::uint64_t cs = 0;  // warp 0: the tile's packed block counts
  if (lay.w == 0) {
    const int lane = lay.lane;
    const std::uint64_t cs0 = sh.first_counts, ms0 = sh.first_mids;
    std::uint64_t ci, mi;
    place_blocks<KB>(sh, KB, cs0, ms0, ci, mi);
    const std::uint64_t cs1 = __shfl_sync(warp::kFull, ci, 31), ms1 = __shfl_sync(warp::kFull, mi, 31);
    cs = cs0 + cs1;
    lookback::publish_aggregate(state + ngroups, this_tile(), cs);
    lookback::publish_aggregate(state, this_tile(), ms0 + ms1);
    if (lane == 0) {
      sh.mid_total = ms0 + ms1;
      runs[2 * this_tile()] = static_cast<std::uint16_t>(ms0);  // segment 21 (at most 16 KiB a group)
      runs[2 * this_tile() + 1] = static_cast<std::uint16_t>(ms1);
    }
  }
  __syncthreads();
  if (szx::is_coded(c1.kind))
    seg::stage_run_all<FindRange != 0>(c1, static_cast<unsigned>(sh.mid_off[KB + lay.jb]) +
                                          static_cast<unsigned>(c1.excl),
                                  stage);
  const std::uint64_t cb = resolve_group(sh, state, ngroups, this_tile(), cs);
  __syncthreads();
  const std::uint64_t g = 2 * this_tile();
  if (threadIdx.x == 0 && g + 2 == ngroups)
    put_totals<SH>(result, sh.kind[2 * KB - 1], n, nb, cb + cs, sh.mid_before + sh.mid_total);
  if (threadIdx.x < 2 * KB) {
    const std::uint64_t b = g * KB + threadIdx.x;
    kinds[b] = sh.kind[threadIdx.x];
    medians[b] = sh.med[threadIdx.x];
  }
  put_segment<C>(sh.kind[lay.jb], lead_keep[threadIdx.x], lay, sh, lay.jb, L::values(in, g), lead, payload, cap,
                 result);
  put_segment<C>(c1.kind, c1.leadw, lay, sh, KB + lay.jb, L::values(in, g + 1), lead, payload, cap, result);
  copy_out_stage(payload, cap, stage, sh.mid_before, sh.mid_total, result);
}

// The group with partial blocks (the last), out of line: inlined, its
// register needs constrain the Full path's.
template <class T, int C, int NB, int FindRange, class SHR>
__device__ __noinline__ void compress_partial_group(const T* __restrict__ in, std::uint64_t n, std::uint64_t nb,
                                                    std::uint64_t ngroups, std::uint8_t* __restrict__ kinds,
                                                    T* __restrict__ medians, std::uint16_t* __restrict__ runs,
                                                    std::uint8_t* __restrict__ lead,
                                                    std::uint8_t* __restrict__ payload, std::uint64_t cap,
                                                    unsigned long long* __restrict__ state,
                                                    typename Shape<T, C, NB>::U* __restrict__ stage, SHR& sh,
                                                    std::uint64_t g, std::uint64_t tile) {
  compress_group<T, C, NB, false, FindRange>(in, n, nb, ngroups, kinds, medians, runs, lead, payload, cap, state,
                                             stage, sh, g, tile);
}

// Look-back tiles: float whole groups two a tile (compress_tile_seg), the
// first `pairs` tiles; every other group (double, a partial group, an odd one
// out, all of an input not 16-byte aligned) a tile of its own, tile t group
// t + pairs.
template <class T>
constexpr bool kPairs = sizeof(T) == 4;
template <class T, int C, int NB>
std::uint64_t tile_pairs(std::uint64_t n, const void* in) {
  using SH = Shape<T, C, NB>;
  return kPairs<T> && (reinterpret_cast<std::uintptr_t>(in) & 15) == 0
             ? n / (std::uint64_t(SH::kBlocks) * SH::kBlock) / 2
             : 0;
}

// FindRange: the finite values' extremes into the range slots (range_slots),
// for a bound that does not depend on them (ABS), so that no pass over the
// input comes before. Ext (float): the whole groups' block extremes come from
// ext (range_blocks_kernel's) instead of from their values. A CTA a look-back
// tile (tile_pairs).
template <class T, int C, int NB, int FindRange, bool Ext>
__global__ void __launch_bounds__(kThreads, kOnePassBlocksPerSm<T>)
    compress_kernel(const T* __restrict__ in, std::uint64_t n, std::uint64_t nb, std::uint64_t ngroups,
                    std::uint64_t pairs, double bound, const double* __restrict__ range, bool rel,
                    std::uint8_t* __restrict__ kinds, T* __restrict__ medians, std::uint16_t* __restrict__ runs,
                    std::uint8_t* __restrict__ lead, std::uint8_t* __restrict__ payload, std::uint64_t cap,
                    unsigned long long* __restrict__ state, const float2* __restrict__ ext) {
  static_assert(!Ext || sizeof(T) == 4, "block extremes of floats");
  using SH = Shape<T, C, NB>;
  using U = typename SH::U;
  constexpr int kTile = kPairs<T> ? 2 : 1;  // groups a tile's stage holds
  constexpr int kGroupWords = kWarps * SH::R * int(kChunk), kSlack = SH::kStage - kGroupWords;
  // The stage (a tile's mid-bytes), after 16 bytes that the copy-out may read
  // (for output bytes before the tile's, which it does not write) instead of
  // testing for them.
  constexpr int kHead = 16 / int(sizeof(U));
  __shared__ __align__(16) U stage_buf[kHead + kTile * kGroupWords + kSlack];
  U* const stage = stage_buf + kHead;
  __shared__ Shared<T, kTile * SH::kBlocks> sh;
  static_assert((kGroupWords * sizeof(U)) % 16 == 0 && (kSlack * sizeof(U)) % 16 == 0, "16-byte zeroing");
  // ORed into (double; float's words shared by two threads, compress_group_seg;
  // the partial group's float bytes are stored, and the copy-out writes only
  // those): the first group's half and the slack (a tile's second half is
  // zeroed by compress_tile_seg, after it held the second group's values).
  constexpr int kZero = int((kGroupWords + kSlack) * sizeof(U) / 16), kFirst = int(kGroupWords * sizeof(U) / 16);
  for (int i = threadIdx.x; i < kZero; i += kThreads)
    reinterpret_cast<uint4*>(stage)[i < kFirst ? i : i + (kTile - 1) * kFirst] = make_uint4(0, 0, 0, 0);

  // The look-back tile is the CTA's index: CTAs start in index order (as
  // CUB's single-pass scans assume, tile = blockIdx.x), so a tile's
  // predecessors have all started, and its loads are in flight before the
  // first barrier (a ticket's atomic came first before: 361 against 368 us,
  // perf/NOTES.md round 29). The bound by warp 1 meanwhile.
  const std::uint64_t tile = blockIdx.x;
  float v0[seg::kValues];
  float2 be0{};
  if constexpr (kPairs<T>) {
    if (tile < pairs) start_tile_seg<C, Ext>(in, tile, stage + kGroupWords, ext, v0, be0);
  }
  if (threadIdx.x == 32) {
    sh.e = range ? szx::resolved_bound(bound, rel, range[0], range[1]) : bound;  // SzxBound
    sh.ef = szx::fast_bound(sh.e, T());
    sh.proof = szx::proof_threshold<T>(sh.e);
    if constexpr (FindRange == kSpeculate) sh.rs_bits = kInfBits;
  }
  __syncthreads();
  if (tile + 1 + pairs == ngroups && threadIdx.x == 0) {  // the last tile (it holds the last group)
    Result* const r = result_of(state, ngroups);
    r->bound = sh.e;
    if (range) r->mn = range[0], r->mx = range[1];
  }
  if constexpr (kPairs<T>) {
    if (tile < pairs) {
      compress_tile_seg<C, FindRange, Ext>(in, n, nb, ngroups, kinds, medians, runs, lead, payload, cap, state,
                                           stage, sh, ext, v0, be0);
      return;
    }
  }
  const std::uint64_t g = tile + pairs;
  if (SH::full(g, n, in)) {
    if constexpr (sizeof(T) == 4) {
      float v[seg::kValues];
      seg::load(seg::Layout<C>::values(in, g), v);
      compress_group_seg<C, FindRange, Ext>(in, n, nb, ngroups, kinds, medians, runs, lead, payload, cap, state,
                                            stage, sh, g, tile, v, ext);
    } else {
      compress_group<T, C, NB, true, FindRange>(in, n, nb, ngroups, kinds, medians, runs, lead, payload, cap, state,
                                                stage, sh, g, tile);
    }
  } else
    compress_partial_group<T, C, NB, FindRange>(in, n, nb, ngroups, kinds, medians, runs, lead, payload, cap, state,
                                                stage, sh, g, tile);
}

// REL float, ahead of compress_kernel<..., Ext>: the value-range pass that
// also leaves what it reads on the way, so that the ALU-bound compressor does
// not work it out again. In one pass over in (16-byte aligned):
// - the finite values' extremes, as minmax_kernel leaves them (each CTA's
//   pair in parts, the last to finish folding them into out as doubles and
//   leaving *done at zero; T's extremes where no value is finite);
// - each whole block's min and max into ext, by fminf / fmaxf as
//   code_segment finds them (the same values up to the sign of a zero, which
//   szx::block_head makes canonical), NaN for a block holding a NaN or an
//   infinity;
// - the compressor's zero_words of state (look-back states, Result)
//   zeroed, instead of a memset before it.
// A warp reads a unit of 512 values at a time as four coalesced chunks of
// 128, a 16-byte load a lane each; a chunk's 128 values lie in one block
// (512 / 128 C blocks a unit), and a chunk past the whole blocks is skipped
// by the whole warp (nchunks: the whole blocks' chunks). It reads at about
// 3.6 TB/s where minmax_kernel reads at 4.1 (perf/NOTES.md, round 28).
constexpr int kRangeThreads = 256;  // a CTA of range_blocks_kernel
template <int C>
__global__ void __launch_bounds__(kRangeThreads, 2048 / kRangeThreads)
    range_blocks_kernel(const float* __restrict__ in, std::uint64_t n, std::uint64_t nchunks,
                        float2* __restrict__ ext, unsigned long long* __restrict__ zero, std::uint64_t zero_words,
                        float* __restrict__ parts, unsigned* __restrict__ done, double* __restrict__ out) {
  constexpr int NB = 4 / C;  // blocks a unit
  const int lane = threadIdx.x & 31;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * kRangeThreads;
  const std::uint64_t tid = std::uint64_t(blockIdx.x) * kRangeThreads + threadIdx.x;
  for (std::uint64_t i = tid; i < zero_words; i += stride) zero[i] = 0;
  float gmn = std::numeric_limits<float>::max(), gmx = std::numeric_limits<float>::lowest();
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const std::uint64_t units = (nchunks + 3) / 4, wstride = stride / 32;
  // Unit u's values x: the range's share, its blocks' extremes to ext.
  const auto take = [&](std::uint64_t u, const float4 (&x)[4]) {
    float mn[NB], mx[NB];
    unsigned finite = (1u << NB) - 1;  // bit k: the lane's values of block k of the unit are finite
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float v[4] = {x[j].x, x[j].y, x[j].z, x[j].w};
      float cmn = v[0], cmx = v[0], fin = 0.f;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        fin = __fmaf_rn(v[i], 0.f, fin);
        cmn = MinOp{}(cmn, v[i]);
        cmx = MaxOp{}(cmx, v[i]);
      }
      const bool ok = fin == 0.f;
      if (4 * u + j < nchunks) {
        if (ok) {
          gmn = cmn < gmn ? cmn : gmn;
          gmx = cmx > gmx ? cmx : gmx;
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i)
            if (v[i] - v[i] == 0.f) gmn = v[i] < gmn ? v[i] : gmn, gmx = v[i] > gmx ? v[i] : gmx;
        }
      }
      const int k = j / C;
      if (j % C == 0) mn[k] = cmn, mx[k] = cmx;
      else mn[k] = MinOp{}(mn[k], cmn), mx[k] = MaxOp{}(mx[k], cmx);
      if (!ok) finite &= ~(1u << k);
    }
    unsigned all_finite = 0;  // bit k: every lane's
#pragma unroll
    for (int b = 0; b < NB; ++b) all_finite |= unsigned(__all_sync(warp::kFull, (finite >> b) & 1)) << b;
    const float bmn = reduce_scatter<NB>(mn, MinOp{}), bmx = reduce_scatter<NB>(mx, MaxOp{});
    const int k = lane == home_lane<NB>(home_block<NB>(lane)) ? home_block<NB>(lane) : NB;  // its block's lane
    if (k < NB && 4 * u + C * k < nchunks)
      ext[u * NB + k] = (all_finite >> k) & 1 ? make_float2(bmn, bmx) : make_float2(qnan, qnan);
  };
  // A unit's loads, then its work, as minmax_kernel (at 32 registers, eight
  // CTAs an SM). Issuing the next unit's loads before this one's work (in
  // registers at four CTAs an SM, or by cp.async into shared memory), or the
  // blocks' extremes by REDUX, did not bring this pass nearer 131 us.
  for (std::uint64_t u = tid / 32; u < units; u += wstride) {
    float4 x[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      x[j] = 4 * u + j < nchunks ? reinterpret_cast<const float4*>(in)[(4 * u + j) * 32 + lane]
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
    take(u, x);
  }
  for (std::uint64_t i = nchunks * 128 + tid; i < n; i += stride) {  // past the whole blocks
    const float x = in[i];
    if (x - x == 0.f) gmn = x < gmn ? x : gmn, gmx = x > gmx ? x : gmx;
  }

  launch::finish_range<kRangeThreads>(gmn, gmx, parts, done, out);
}

// REL, ahead of compress_kernel<..., kSpeculate, false>: the finite
// extremes of a sample of the input, every `every`-th of its `pieces` whole
// pieces of kSamplePiece<T> values (2 KiB; in 16-byte aligned), as
// minmax_kernel leaves them in out (T's extremes where no value is finite or
// none is sampled); the sample's range gives the bound the compressor codes
// under. It also zeroes the compressor's zero_words of state (look-back
// states, Result, range slots). A warp reads two pieces at a time, a lane
// four 16-byte loads of each: small pieces spread the sample over the field
// (pieces of 4,096 floats, one a CTA, read at 2.3 TB/s and missed more).
constexpr int kSampleThreads = 256;
template <class T>
constexpr std::uint64_t kSamplePiece = 2048 / sizeof(T);
template <class T>
__global__ void __launch_bounds__(kSampleThreads)
    sample_range_kernel(const T* __restrict__ in, std::uint64_t pieces, std::uint64_t every,
                        unsigned long long* __restrict__ zero, std::uint64_t zero_words, T* __restrict__ parts,
                        unsigned* __restrict__ done, double* __restrict__ out) {
  using V = std::conditional_t<sizeof(T) == 4, float4, double2>;  // 16 bytes
  constexpr int kPer = 16 / sizeof(T);
  const std::uint64_t stride = std::uint64_t(gridDim.x) * kSampleThreads;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * kSampleThreads + threadIdx.x; i < zero_words; i += stride)
    zero[i] = 0;
  T mn = std::numeric_limits<T>::max(), mx = std::numeric_limits<T>::lowest();
  const int lane = threadIdx.x & 31;
  const std::uint64_t warps = stride / 32, sampled = (pieces + every - 1) / every;
  const auto take = [&](const V& x) {
    T v[kPer];
    if constexpr (sizeof(T) == 4) v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    else v[0] = x.x, v[1] = x.y;
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      if (v[i] - v[i] == T(0)) mn = v[i] < mn ? v[i] : mn, mx = v[i] > mx ? v[i] : mx;
  };
  for (std::uint64_t k = (std::uint64_t(blockIdx.x) * kSampleThreads + threadIdx.x) / 32; k < sampled;
       k += 2 * warps) {
    const bool second = k + warps < sampled;
    const V* const a = reinterpret_cast<const V*>(in + k * every * kSamplePiece<T>) + lane;
    const V* const b = reinterpret_cast<const V*>(in + (second ? k + warps : k) * every * kSamplePiece<T>) + lane;
    V x[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = __ldg(a + 32 * j), x[4 + j] = __ldg(b + 32 * j);
#pragma unroll
    for (int j = 0; j < 8; ++j) take(x[j]);
  }
  launch::finish_range<kSampleThreads>(mn, mx, parts, done, out);
}

// Decoding finds each group's offsets (its blocks before it by kind, its
// mid-bytes before it) from the kinds and segment 21's counts (or, without
// it, the leading codes) first (offsets_kernel), then decode_kernel decodes
// with them. One kernel did both with look-backs, and its warps spent a third
// of their time at barriers while one of them looked back.
// After Result in the state buffer: three arrays of kMaxOffsetCtas words
// (offsets_kernel's runs' block counts, mid-bytes and status), then three of
// ngroups words: each group's packed block counts (counts_of) scanned in
// place to their exclusive prefix sums, its mid-bytes (from the codes, where
// the stream has no segment 21 to give them), and their exclusive prefix
// sums. Nothing needs zeroing first.
constexpr int kMaxOffsetCtas = 1024;
struct GroupArrays {
  unsigned long long *run_counts, *run_mids, *run_status;  // a word a CTA of offsets_kernel
  unsigned long long *counts_before, *mids, *mids_before;
};
__host__ __device__ __forceinline__ GroupArrays group_arrays(unsigned long long* state, std::uint64_t ngroups) {
  auto* const s = reinterpret_cast<unsigned long long*>(result_of(state, ngroups) + 1);
  auto* const a = s + 3 * kMaxOffsetCtas;
  return GroupArrays{s, s + kMaxOffsetCtas, s + 2 * kMaxOffsetCtas, a, a + ngroups, a + 2 * ngroups};
}

// Leading codes packed 2 bits a value in x: their sum, and whether one claims
// more leading bytes than a value of nbytes has (a kind's nbytes is at least
// 2, its sign and exponent, so only a code 3 can, where nbytes is 2).
__device__ __forceinline__ std::uint32_t code_sum(std::uint32_t x) {
  return __popc(x & 0x55555555u) + 2 * __popc(x & 0xAAAAAAAAu);
}
__device__ __forceinline__ bool code_over(std::uint32_t x, int nbytes) {
  return nbytes < 3 && (x & (x >> 1) & 0x55555555u) != 0;
}

// The offsets in one cooperative launch: every CTA is resident, so the grid
// waits on itself (grid.sync) instead of a kernel boundary or a look-back,
// and no word needs zeroing first (the six calls before the decoder were one
// memset and four launches, most of the stage's host time). CTA c takes a
// run of consecutive groups:
//  1. each group's packed block counts and its coded blocks' bytes (len times
//     nbytes), eight kinds a thread;
//  2. the runs' count sums, through the grid, give each run its place, and a
//     block scan each group's;
//  3. a group's mid-bytes are its bytes less the sum of its leading codes,
//     which lie in one range that its place and the next group's bound: the
//     CTA sums its run's codes in 16-byte pieces, a piece a thread at a time,
//     near DRAM speed (11 us for the 33.5 MB of a 512^3 field's codes; a warp
//     a group, waiting on each group's place in turn, took 15-17);
//  4. the runs' mid-byte sums and a block scan as in 2.
// Stored: the stream stores each group's mid-bytes (segment 21, whose runs
// of blocks are the groups), so step 1 reads them beside the kinds, the two
// sums share one grid.sync and step 3 (reading every leading code) is not
// needed; decode_kernel checks each against its codes.
// A code over its value's nbytes (a hostile stream) is decode_kernel's to
// report: it reads each code with its block's nbytes.
constexpr int kRunWindow = 1024;  // groups of a run step 3 takes at once (its shared memory)
__device__ __forceinline__ std::uint64_t cta_sum(std::uint64_t v) {  // of every thread's v
  std::uint64_t total;
  warp::block_scan<kThreads>(v, total);
  return total;
}
// The sum of the runs before this CTA's, as the grid left them (L2).
__device__ __forceinline__ std::uint64_t runs_before(const unsigned long long* __restrict__ runs) {
  std::uint64_t v = 0;
  for (unsigned i = threadIdx.x; i < blockIdx.x; i += kThreads) v += __ldcg(runs + i);
  return cta_sum(v);
}
// out[g] = before + the run's values before g, for the run [g0, g1) of in
// (in place where out is in).
template <class In>
__device__ __forceinline__ void scan_run(const In* in, unsigned long long* out, std::uint64_t g0, std::uint64_t g1,
                                         std::uint64_t before) {
  for (std::uint64_t base = g0; base < g1; base += kThreads) {
    const std::uint64_t g = base + threadIdx.x;
    const std::uint64_t v = g < g1 ? in[g] : 0;
    std::uint64_t total;
    const std::uint64_t ex = warp::block_scan<kThreads>(v, total);
    if (g < g1) out[g] = before + ex;
    before += total;
  }
  __syncthreads();  // the run's places, for the CTA's warps
}

// Step 3 of offsets_kernel (a stream without segment 21): each group of the
// CTA's run [g0, g1) gets its coded bytes (ga.mids) less its leading codes'
// sum, a window of the run at a time: its groups' first coded blocks, then its
// codes from the first group's to where the next group's start (the run's last
// group: the run's end, or the lead total; the stream's last code byte holds
// only the last value's codes, the rest are not codes). Returns the thread's
// part of the run's sum.
template <class SH>
__device__ __forceinline__ std::uint64_t mids_from_codes(std::uint64_t n, std::uint64_t nb, std::uint64_t ngroups,
                                                         std::uint64_t g0, std::uint64_t g1, std::uint64_t run_end,
                                                         std::uint8_t last_kind, const std::uint8_t* __restrict__ lead,
                                                         std::uint64_t lead_size, const GroupArrays& ga) {
  constexpr std::uint32_t kPiecesPerBlock = SH::kLeadPerBlock / 16;
  static_assert(SH::kLeadPerBlock % 16 == 0, "whole pieces a block");
  __shared__ std::uint64_t first[kRunWindow + 1];  // the window's groups' first coded block
  __shared__ unsigned codes[kRunWindow];           // and their codes' sums
  const std::uint32_t llen = szx::block_len(nb - 1, n, SH::kBlock);
  const bool last_cut = szx::is_coded(last_kind) && llen % 4 != 0;
  const std::uint64_t lead_total = lead_total_of<SH>(last_kind, llen, run_end);
  std::uint64_t run = 0;
  for (std::uint64_t w0 = g0; w0 < g1; w0 += kRunWindow) {
    const std::uint64_t w1 = std::min<std::uint64_t>(g1, w0 + kRunWindow);
    const int count = static_cast<int>(w1 - w0);
    for (int i = threadIdx.x; i <= count; i += kThreads) {
      first[i] = (w0 + i < g1 ? ga.counts_before[w0 + i] : run_end) >> kCountShift;
      if (i < count) codes[i] = 0;
    }
    __syncthreads();
    const bool end = w1 == ngroups;
    const std::uint64_t from = first[0] * SH::kLeadPerBlock, to = end ? lead_total : first[count] * SH::kLeadPerBlock;
    const std::uint64_t pieces = (to - from + 15) / 16;
#pragma unroll 4
    for (std::uint64_t p = threadIdx.x; p < pieces; p += kThreads) {
      const std::uint64_t at = from + 16 * p;
      uint4 x;
      if (at + 16 <= to && at + 16 <= lead_size && !(last_cut && end && at + 16 == to) &&
          (reinterpret_cast<std::uintptr_t>(lead + at) & 15) == 0) {
        x = *reinterpret_cast<const uint4*>(lead + at);
      } else {  // the stream's end, or the segment's (reading zeros past it)
        std::uint32_t v[4] = {0, 0, 0, 0};
        for (int i = 0; i < 16; ++i) {
          const std::uint64_t a = at + i;
          std::uint32_t byte = a < to && a < lead_size ? lead[a] : 0u;
          if (last_cut && end && a + 1 == to) byte &= 0xffu << (8 - 2 * (llen % 4));
          v[i / 4] |= byte << (8 * (i % 4));
        }
        x = make_uint4(v[0], v[1], v[2], v[3]);
      }
      // The piece's group: the last whose first coded block is at or below
      // the piece's block.
      const std::uint64_t blk = first[0] + p / kPiecesPerBlock;
      int lo = 0, hi = count - 1;
      while (lo < hi) {
        const int m = (lo + hi + 1) / 2;
        if (first[m] <= blk) lo = m;
        else hi = m - 1;
      }
      atomicAdd(&codes[lo], code_sum(x.x) + code_sum(x.y) + code_sum(x.z) + code_sum(x.w));
    }
    __syncthreads();
    for (int i = threadIdx.x; i < count; i += kThreads) {
      const std::uint64_t bytes = ga.mids[w0 + i], sum = bytes > codes[i] ? bytes - codes[i] : 0;
      ga.mids[w0 + i] = sum;
      run += sum;
    }
    __syncthreads();  // first and codes, for the next window
  }
  return run;
}

template <class T, int C, int NB, bool Stored>
__global__ void __launch_bounds__(kThreads)
    offsets_kernel(std::uint64_t n, std::uint64_t nb, std::uint64_t ngroups, const std::uint8_t* __restrict__ kinds,
                   const std::uint8_t* __restrict__ lead, std::uint64_t lead_size,
                   const std::uint16_t* __restrict__ stored, unsigned long long* __restrict__ state) {
  using SH = Shape<T, C, NB>;
  constexpr int kWords = SH::kBlocks / 8;  // 8-kind words a group: 1, 2 or 4
  static_assert(SH::kBlocks % 8 == 0, "whole 8-kind words a group");
  const cooperative_groups::grid_group grid = cooperative_groups::this_grid();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();  // decode_kernel's CTAs may start (they wait for this grid's end)
#endif
  Result* const result = result_of(state, ngroups);
  const GroupArrays ga = group_arrays(state, ngroups);
  const std::uint64_t per = (ngroups + gridDim.x - 1) / gridDim.x;
  const std::uint64_t g0 = std::min<std::uint64_t>(ngroups, per * blockIdx.x), g1 = std::min(ngroups, g0 + per);
  const auto checked = [](std::uint8_t k, bool& bad) {  // an out-of-range kind reads as constant (reported)
    const bool ok = szx::valid_kind<T>(k);
    bad = bad || !ok;
    return ok ? k : std::uint8_t(szx::kConstant);
  };

  // 1. Word i of the run holds blocks g0 * kBlocks + 8i.. (past nb:
  // constant); a group's kWords words are adjacent threads. The counts wait
  // in ga.counts_before for step 2's scan, the bytes in ga.mids for step 3
  // (Stored: the run's sum of the stored counts, for step 4).
  bool bad = false;
  std::uint64_t run = 0, run_mid = 0;
  for (std::uint64_t base = 0; base < (g1 - g0) * kWords; base += kThreads) {
    const std::uint64_t i = base + threadIdx.x, b0 = g0 * SH::kBlocks + 8 * i;
    std::uint64_t c = 0, bytes = 0;
    const auto add = [&](std::uint8_t k, std::uint64_t b) {
      k = checked(k, bad);
      c += counts_of(k);
      if (!Stored && szx::is_coded(k)) bytes += std::uint64_t(szx::block_len(b, n, SH::kBlock)) * szx::bytes_of(k);
    };
    if (i < (g1 - g0) * kWords) {
      if (b0 + 8 <= nb && (reinterpret_cast<std::uintptr_t>(kinds + b0) & 7) == 0) {
        const std::uint64_t x = *reinterpret_cast<const std::uint64_t*>(kinds + b0);
#pragma unroll
        for (int j = 0; j < 8; ++j) add(static_cast<std::uint8_t>(x >> (8 * j)), b0 + j);
      } else {
        for (int j = 0; j < 8; ++j)
          if (b0 + j < nb) add(kinds[b0 + j], b0 + j);
      }
    }
#pragma unroll
    for (int o = 1; o < kWords; o <<= 1) {
      c += __shfl_xor_sync(warp::kFull, c, o);
      if constexpr (!Stored) bytes += __shfl_xor_sync(warp::kFull, bytes, o);
    }
    if (i < (g1 - g0) * kWords && i % kWords == 0) {
      const std::uint64_t g = g0 + i / kWords;
      ga.counts_before[g] = c;
      if constexpr (Stored) run_mid += stored[g];
      else ga.mids[g] = bytes;
      run += c;
    }
  }
  const bool bad_kind = __syncthreads_or(bad);
  run = cta_sum(run);
  if constexpr (Stored) run_mid = cta_sum(run_mid);
  if (threadIdx.x == 0) {
    ga.run_counts[blockIdx.x] = run, ga.run_status[blockIdx.x] = bad_kind ? kBadKind : 0;
    if constexpr (Stored) ga.run_mids[blockIdx.x] = run_mid;
  }
  grid.sync();

  // 2.
  const std::uint64_t counts_before = runs_before(ga.run_counts), run_end = counts_before + run;
  scan_run(ga.counts_before, ga.counts_before, g0, g1, counts_before);
  bool ignored = false;
  const std::uint8_t last_kind = checked(kinds[nb - 1], ignored);
  if (g0 < g1 && g1 == ngroups && threadIdx.x == 0)  // the decoder's last group writes the mid-bytes' total
    put_totals<SH>(result, last_kind, n, nb, run_end, 0);

  if constexpr (!Stored) {  // 3.
    run_mid = cta_sum(mids_from_codes<SH>(n, nb, ngroups, g0, g1, run_end, last_kind, lead, lead_size, ga));
    if (threadIdx.x == 0) ga.run_mids[blockIdx.x] = run_mid;
    grid.sync();
  }

  // 4.
  if constexpr (Stored) scan_run(stored, ga.mids_before, g0, g1, runs_before(ga.run_mids));
  else scan_run(ga.mids, ga.mids_before, g0, g1, runs_before(ga.run_mids));
  if (blockIdx.x == 0) {  // the status: every run's bits (decode_kernel may add kBadCode, kBadRuns)
    bool any = false;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += kThreads) any = any || __ldcg(ga.run_status + i) != 0;
    any = __syncthreads_or(any);
    if (threadIdx.x == 0) result->status = any ? kBadKind : 0;
  }
}

// Mid-bytes of a lane's four values from their leading codes (acc, the lead
// byte), nbytes each less the leading bytes; a code over nbytes (a hostile
// stream: decode_group reports it) counts 0. All four valid and none
// over: the codes' sum (code_sum).
__device__ __forceinline__ int mid_bytes4(std::uint32_t acc, int nbytes, int valid) {
  if (valid == 4 && !code_over(acc, nbytes)) return 4 * nbytes - static_cast<int>(code_sum(acc));
  int cnt = 0;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int l = (acc >> (6 - 2 * q)) & 3;
    if (q < valid) cnt += l <= nbytes ? nbytes - l : 0;
  }
  return cnt;
}

// Index propagation (Figure 9) for a lane's Q consecutive values. Each value
// is (prev & keep) | x: its mid-bytes x (from stage byte p on), its leading
// bytes from the previous code. Those maps compose (K, X) = (K1 & K2,
// (X1 & K2) | X2): lane_maps gives the lane's values' maps and their
// composition (codes: the Q leading codes, 2 bits each, the first at the top;
// values from `valid` on take no mid-bytes); scan_maps makes that the
// inclusive scan over W lanes (mask: the lanes that take part), so the code
// coming into a lane is its predecessor's X, for every byte at once (a map
// composed with itself is itself, so lanes below the shuffle's distance need
// no test); apply_maps gives the values from the code coming in.
template <int Q, class U>
__device__ __forceinline__ void lane_maps(const U* __restrict__ stage, unsigned p, std::uint32_t codes, int nbytes,
                                          int valid, U (&x)[Q], U (&keep)[Q], U& K, U& X) {
  constexpr int S = sizeof(U);
  K = ~U(0), X = 0;
#pragma unroll
  for (int q = 0; q < Q; ++q) {
    const int l = (codes >> (2 * Q - 2 - 2 * q)) & 3;
    const int mq = q < valid ? (l <= nbytes ? nbytes - l : 0) : 0;
    const int o = static_cast<int>(p & (S - 1));
    const U* const at = stage + p / S;
    x[q] = top_bytes(bswap<U>(bytes_at(at, o)), mq);
    keep[q] = keep_above<U>(mq);
    X = (X & keep[q]) | x[q];
    K &= keep[q];
    p += mq;
  }
}
template <int W, class U>
__device__ __forceinline__ void scan_maps(unsigned mask, U& K, U& X) {
#pragma unroll
  for (int d = 1; d < W; d <<= 1) {
    const U kp = __shfl_up_sync(mask, K, d, W), xp = __shfl_up_sync(mask, X, d, W);
    X = (xp & K) | X;
    K &= kp;
  }
}
template <int Q, class T, class U>
__device__ __forceinline__ U apply_maps(U prev, const U (&x)[Q], const U (&keep)[Q], T m, int shift, T (&y)[Q]) {
#pragma unroll
  for (int q = 0; q < Q; ++q) {
    prev = (prev & keep[q]) | x[q];
    y[q] = szx::value_of<T>(prev, m, shift);
  }
  return prev;
}

// mid_bytes4 for a lane's eight values of a whole block (acc: their two lead
// bytes, the first value's code at the top).
__device__ __forceinline__ int mid_bytes8(std::uint32_t acc, int nbytes) {
  if (!code_over(acc, nbytes)) return 8 * nbytes - static_cast<int>(code_sum(acc));
  int cnt = 0;
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const int l = (acc >> (14 - 2 * q)) & 3;
    cnt += l <= nbytes ? nbytes - l : 0;
  }
  return cnt;
}

// Block t of a whole group, half a warp: the lane's eight values (sub: its
// place in the half) to out[8 sub..]; codes: their leading codes (two lead
// bytes, the first value's at the top); p: its first mid-byte's place in the
// stage less the block's (sh.mid_off). Leading bytes as in decode_group (the
// maps' scan, 16 lanes wide); a block's first value follows 0. The two
// halves may take different kinds: each shuffles among its own lanes.
template <class T, class SH>
__device__ __forceinline__ void decode_pair(const Shared<T, SH::kBlocks>& sh, int t, int sub, T* __restrict__ out,
                                            std::uint32_t codes, const typename SH::U* __restrict__ stage,
                                            unsigned p, const T* __restrict__ verb, std::uint64_t verb_size) {
  using U = typename SH::U;
  constexpr std::uint32_t kBlock = SH::kBlock;
  const std::uint8_t kind = sh.kind[t];
  const bool coded = szx::is_coded(kind);
  const unsigned lanes = __ballot_sync(warp::kFull, coded);
  T* const dst = out + 8 * sub;
  T y[8];
  if (kind == szx::kVerbatim) {
    const std::uint64_t vb = sh.verb[t] * kBlock, vo = vb + 8 * sub;
    if (vb + kBlock <= verb_size) {
      load4(verb + vo, 4, y), load4(verb + vo + 4, 4, y + 4);
    } else {
#pragma unroll
      for (int q = 0; q < 8; ++q) y[q] = vo + q < verb_size ? verb[vo + q] : T(0);
    }
  } else if (!coded) {
#pragma unroll
    for (int q = 0; q < 8; ++q) y[q] = sh.med[t];
  } else {
    const int nbytes = szx::bytes_of(kind), shift = szx::Bits<T>::kTotal - kind;
    U x[8], keep[8], K, X;
    lane_maps<8>(stage, p + static_cast<unsigned>(sh.mid_off[t]), codes, nbytes, 8, x, keep, K, X);
    scan_maps<16>(lanes, K, X);
    const U xe = __shfl_up_sync(lanes, X, 1, 16);
    apply_maps<8>(sub == 0 ? U(0) : xe, x, keep, sh.med[t], shift, y);
  }
  store4<T, true, true>(dst, 4, y);
  store4<T, true, true>(dst + 4, 4, y + 4);
}

// One group. Full: every block of the group is whole and the output 16-byte
// aligned, so the `valid` counts are the constant 4 and fold away (and float
// blocks of 128 decode by pairs, decode_pair). stored:
// segment 21's counts (null for a stream without it), each checked here.
template <class T, int C, int NB, bool Full>
__device__ __forceinline__ void decode_group(std::uint64_t n, std::uint64_t nb, std::uint64_t ngroups,
                                             const std::uint8_t* __restrict__ kinds, const T* __restrict__ medians,
                                             const std::uint8_t* __restrict__ lead, std::uint64_t lead_size,
                                             const std::uint8_t* __restrict__ mid, std::uint64_t mid_size,
                                             const T* __restrict__ verb, std::uint64_t verb_size,
                                             T* __restrict__ out, const std::uint16_t* __restrict__ stored,
                                             unsigned long long* __restrict__ state,
                                             typename Shape<T, C, NB>::U* __restrict__ stage,
                                             Shared<T, Shape<T, C, NB>::kBlocks>& sh, std::uint64_t g) {
  using SH = Shape<T, C, NB>;
  using U = typename SH::U;
  constexpr int S = SH::S, R = SH::R;
  constexpr std::uint32_t kBlock = SH::kBlock;
  const GroupArrays ga = group_arrays(state, ngroups);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Kinds and medians (a lane of warp 0 per block), then block offsets; the
  // group's mid-bytes' place (offsets_kernel's sum and scan).
  if (w == 0) {
    const std::uint64_t b = g * SH::kBlocks + lane;
    const bool mine = lane < SH::kBlocks && b < nb;
    // Every load first, so that the seven warps at the barrier wait for one
    // round trip, not three (the compiler kept them behind the scan).
    // (Lanes 0 and 1 read the group's mid-byte place and total.)
    const std::uint64_t before = ga.counts_before[g];
    const std::uint64_t sums = lane == 0 ? ga.mids_before[g] : lane == 1 ? (stored ? stored[g] : ga.mids[g]) : 0;
    std::uint8_t k = mine ? kinds[b] : szx::kConstant;
    const T med = mine ? medians[b] : T(0);
    // offsets_kernel reported a bad kind; read it as constant here too.
    if (!szx::valid_kind<T>(k)) k = szx::kConstant;
    const std::uint64_t c = counts_of(k), incl = warp::scan_inclusive(c);
    const std::uint64_t cb = before + incl - c;
    if (lane < SH::kBlocks) {
      sh.kind[lane] = k;
      sh.med[lane] = med;
      sh.coded[lane] = cb >> kCountShift;
      sh.verb[lane] = cb & kCountMask;
    }
    if (lane == 0) sh.mid_before = sums;
    if (lane == 1) sh.mid_total = sums;
  }
  __syncthreads();
  // Leading codes (loads first), the group's mid-bytes, then each block's
  // mid-byte count.
  const std::uint64_t b0 = g * SH::kBlocks + std::uint64_t(w) * NB;
  // Pairs: a warp takes its blocks two at a time, half a warp a block and 8
  // values a lane (h, sub), so that the scan of the leading bytes is 4 steps
  // of 16 lanes for 8 values instead of 5 of 32 for 4; pair k's two lead
  // bytes a lane are bits 16k.. of acc2 (the first in the upper byte).
  constexpr bool Pairs = Full && C == 1 && NB % 2 == 0 && sizeof(T) == 4;  // (double: slower)
  constexpr int kPairs = Pairs ? NB / 2 : 1;
  const int h = lane >> 4, sub = lane & 15;
  std::uint32_t acc[R], acc2 = 0;
  int cnt[R], valid[R];
  if constexpr (Pairs) {
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const int t = w * NB + 2 * k + h;
      const bool coded = szx::is_coded(sh.kind[t]);
      const std::uint64_t at = sh.coded[t] * SH::kLeadPerBlock + 2 * sub;
      const std::uint32_t c0 = coded && at < lead_size ? lead[at] : 0u;
      const std::uint32_t c1 = coded && at + 1 < lead_size ? lead[at + 1] : 0u;
      acc2 |= ((c0 << 8) | c1) << (16 * k);
    }
  }
#pragma unroll
  for (int j = 0; j < (Pairs ? 0 : NB); ++j) {
    const int t = w * NB + j;
    const std::uint64_t b = b0 + j;
    const std::uint32_t len = b < nb ? szx::block_len(b, n, kBlock) : 0;
    const bool coded = szx::is_coded(sh.kind[t]);
#pragma unroll
    for (int r = j * C; r < j * C + C; ++r) {
      valid[r] = Full ? 4 : valid_of((r % C) * kChunk + 4 * lane, len);
      const std::uint64_t at = sh.coded[t] * SH::kLeadPerBlock + (r % C) * 32 + lane;
      acc[r] = coded && valid[r] > 0 && at < lead_size ? lead[at] : 0u;
    }
  }
  // The group's mid-bytes into shared memory as stored, from the 16-byte
  // boundary at or below them (words of S bytes where the buffer is not
  // 16-byte aligned), by asynchronous copies that hold no registers and do
  // not stall the thread, which counts the blocks' mid-bytes meanwhile
  // (loading them by registers before the counts spilled).
  const std::uint64_t mo = sh.mid_before;
  const bool v16 = (reinterpret_cast<std::uintptr_t>(mid) & 15) == 0;
  const int s0 = static_cast<int>(mo & (v16 ? 15u : unsigned(S - 1)));
  {
    // At most the stage: a hostile stream's sums can be anything (its bad
    // codes are reported).
    const std::uint64_t a = mo - s0, want = (s0 + sh.mid_total + S - 1) / S;
    const int words = static_cast<int>(want < std::uint64_t(SH::kStage) ? want : SH::kStage);
    constexpr int kPieceWords = 16 / S, kMaxPieces = SH::kStage / kPieceWords;
    const std::uint64_t want16 = (want + kPieceWords - 1) / kPieceWords;
    const int pieces = static_cast<int>(want16 < std::uint64_t(kMaxPieces) ? want16 : kMaxPieces);
    if (v16 && a + 16 * std::uint64_t(pieces) <= mid_size) {
      const uint4* const src = reinterpret_cast<const uint4*>(mid + a);
#pragma unroll 1
      for (int k = threadIdx.x; k < pieces; k += kThreads)
        __pipeline_memcpy_async(reinterpret_cast<uint4*>(stage) + k, src + k, 16);
      __pipeline_commit();
    } else if (a + std::uint64_t(S) * words <= mid_size) {
      const U* const src = reinterpret_cast<const U*>(mid + a);
#pragma unroll 1
      for (int k = threadIdx.x; k < words; k += kThreads) __pipeline_memcpy_async(stage + k, src + k, S);
      __pipeline_commit();
    } else {  // the segment's end: bytes, reading zeros past it
      for (int k = threadIdx.x; k < words; k += kThreads) {
        U x = 0;
        for (int i = S - 1; i >= 0; --i) {
          const std::uint64_t at = a + std::uint64_t(S) * k + i;
          x = (x << 8) | (at < mid_size ? mid[at] : 0u);
        }
        stage[k] = x;
      }
    }
  }
  // (A code over its value's nbytes, only a 3 where nbytes is 2, makes the
  // stream bad: reported here, where each code meets its block's nbytes.)
  bool over = false;
  // Pairs: the lane's mid-byte offset within its block (pair k in bits 16k..).
  std::uint32_t excl2 = 0;
  ChunkScan<R> chunks;
  if constexpr (Pairs) {
    std::uint32_t v = 0;
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::uint8_t kind = sh.kind[w * NB + 2 * k + h];
      const bool coded = szx::is_coded(kind);
      const int nbytes = coded ? szx::bytes_of(kind) : 0;
      const std::uint32_t a = (acc2 >> (16 * k)) & 0xffffu;
      if (coded) v |= static_cast<std::uint32_t>(mid_bytes8(a, nbytes)) << (16 * k);
      over = over || code_over(a, nbytes);
    }
    const std::uint32_t incl = warp::scan_inclusive<16>(v);  // a block's sum is at most 512: fields never carry
    excl2 = incl - v;
    if (sub == 15) {
#pragma unroll
      for (int k = 0; k < kPairs; ++k) sh.mid[w * NB + 2 * k + h] = (incl >> (16 * k)) & 0xffffu;
    }
  } else {
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      const std::uint8_t kind = sh.kind[w * NB + j];
      const bool coded = szx::is_coded(kind);
      const int nbytes = coded ? szx::bytes_of(kind) : 0;
#pragma unroll
      for (int r = j * C; r < j * C + C; ++r) {
        cnt[r] = coded ? mid_bytes4(acc[r], nbytes, valid[r]) : 0;
        over = over || code_over(acc[r] & (0xFF00u >> (2 * valid[r])), nbytes);  // its valid codes
      }
    }
  }
  if (__any_sync(warp::kFull, over) && lane == 0) atomicOr(&result_of(state, ngroups)->status, kBadCode);
  if constexpr (!Pairs) {
    // Each chunk's lane offsets and sum (a block's mid-bytes add its chunks').
    chunks = scan_counts<R>(cnt);
    put_block_mids<C, NB>(chunks, sh.mid);
  }
  __pipeline_wait_prior(0);
  __syncthreads();
  if (w == 0) {
    const std::uint64_t mine = lane < SH::kBlocks ? sh.mid[lane] : 0, incl = warp::scan_inclusive(mine);
    if (lane < SH::kBlocks) sh.mid_off[lane] = incl - mine;
    if (lane == 31) {
      // The group's count in the stream (segment 21) is its codes'.
      if (stored && incl != sh.mid_total) atomicOr(&result_of(state, ngroups)->status, kBadRuns);
      if (g + 1 == ngroups) result_of(state, ngroups)->mid = mo + incl;
    }
  }
  __syncthreads();
  if constexpr (Pairs) {
#pragma unroll
    for (int k = 0; k < kPairs; ++k) decode_pair<T, SH>(sh, w * NB + 2 * k + h, sub, out + (b0 + 2 * k + h) * kBlock,
                                                        (acc2 >> (16 * k)) & 0xffffu, stage,
                                                        s0 + ((excl2 >> (16 * k)) & 0xffffu), verb, verb_size);
  } else {
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      const int t = w * NB + j;
      const std::uint64_t b = b0 + j;
      if (!Full && b >= nb) break;  // (Full: every block of the group is whole)
      const std::uint8_t kind = sh.kind[t];
      T* const dst = out + b * kBlock;
      if (kind == szx::kVerbatim) {
        const std::uint32_t len = Full ? kBlock : szx::block_len(b, n, kBlock);
        const std::uint64_t vo = sh.verb[t] * kBlock;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const std::uint32_t i0 = c * kChunk + 4 * lane;
          const int vc = valid[j * C + c];
          T x[4];
          if (vo + len <= verb_size) {
            load4(verb + vo + i0, vc, x);
          } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) x[q] = vo + i0 + q < verb_size ? verb[vo + i0 + q] : T(0);
          }
          store4<T, true, Full>(dst + i0, vc, x);
        }
        continue;
      }
      const T m = sh.med[t];
      if (!szx::is_coded(kind)) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const T x[4] = {m, m, m, m};
          store4<T, true, Full>(dst + c * kChunk + 4 * lane, valid[j * C + c], x);
        }
        continue;
      }
      const int nbytes = szx::bytes_of(kind), shift = szx::Bits<T>::kTotal - kind;
      unsigned p0 = s0 + static_cast<unsigned>(sh.mid_off[t]);
      U carry = 0;
#pragma unroll
      for (int r = j * C; r < j * C + C; ++r) {
        const int vr = valid[r];
        unsigned p = p0 + chunks.excl_of(r);
        p0 += chunks.sum_of(r);
        // The chunk's maps (lane_maps) scanned over the warp; lane 0 takes
        // the carry, the others compose it with their predecessor's map.
        U x[4], keep[4], K, X;
        lane_maps<4>(stage, p, acc[r], nbytes, vr, x, keep, K, X);
        scan_maps<32>(warp::kFull, K, X);
        const U ke = __shfl_up_sync(warp::kFull, K, 1), xe = __shfl_up_sync(warp::kFull, X, 1);
        T y[4];
        const U prev = apply_maps<4>(lane == 0 ? carry : static_cast<U>((carry & ke) | xe), x, keep, m, shift, y);
        store4<T, true, Full>(dst + (r % C) * kChunk + 4 * lane, vr, y);
        carry = __shfl_sync(warp::kFull, prev, 31);
      }
    }
  }
}

// The group with partial blocks (the last), out of line: inlined, its
// register needs made the Full path spill.
template <class T, int C, int NB>
__device__ __noinline__ void decode_partial_group(std::uint64_t n, std::uint64_t nb, std::uint64_t ngroups,
                                                  const std::uint8_t* __restrict__ kinds,
                                                  const T* __restrict__ medians, const std::uint8_t* __restrict__ lead,
                                                  std::uint64_t lead_size, const std::uint8_t* __restrict__ mid,
                                                  std::uint64_t mid_size, const T* __restrict__ verb,
                                                  std::uint64_t verb_size, T* __restrict__ out,
                                                  const std::uint16_t* __restrict__ stored,
                                                  unsigned long long* __restrict__ state,
                                                  typename Shape<T, C, NB>::U* __restrict__ stage,
                                                  Shared<T, Shape<T, C, NB>::kBlocks>& sh, std::uint64_t g) {
  decode_group<T, C, NB, false>(n, nb, ngroups, kinds, medians, lead, lead_size, mid, mid_size, verb, verb_size, out,
                                stored, state, stage, sh, g);
}

template <class T, int C, int NB>
__global__ void __launch_bounds__(kThreads, kOnePassDecodeBlocksPerSm<T, C>)
    decode_kernel(std::uint64_t n, std::uint64_t nb, std::uint64_t ngroups, const std::uint8_t* __restrict__ kinds,
                  const T* __restrict__ medians, const std::uint8_t* __restrict__ lead, std::uint64_t lead_size,
                  const std::uint8_t* __restrict__ mid, std::uint64_t mid_size, const T* __restrict__ verb,
                  std::uint64_t verb_size, T* __restrict__ out, const std::uint16_t* __restrict__ stored,
                  unsigned long long* __restrict__ state) {
  using SH = Shape<T, C, NB>;
  using U = typename SH::U;
  __shared__ __align__(16) U stage[SH::kStage];
  __shared__ Shared<T, SH::kBlocks> sh;
  static_assert((SH::kStage * sizeof(U)) % 16 == 0, "16-byte copies");
  const std::uint64_t g = blockIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();  // offsets_kernel's results (launched as its programmatic dependent)
#endif
  if (SH::full(g, n, out))
    decode_group<T, C, NB, true>(n, nb, ngroups, kinds, medians, lead, lead_size, mid, mid_size, verb, verb_size,
                                 out, stored, state, stage, sh, g);
  else
    decode_partial_group<T, C, NB>(n, nb, ngroups, kinds, medians, lead, lead_size, mid, mid_size, verb, verb_size,
                                   out, stored, state, stage, sh, g);
}

// (C, NB) for a block size; C = 0 when the one-pass kernels do not take it.
// A lane holds R = C * NB chunks: 4 for float, 2 for double.
template <class T>
void shape_of(std::uint32_t block, int& c, int& nb) {
  const int r = sizeof(T) == 4 ? 4 : 2;
  c = 0, nb = 0;
  for (int k = 1; k <= r; k *= 2)
    if (block == kChunk * std::uint32_t(k)) c = k, nb = r / k;
}

}  // namespace onepass

struct AddOffsets {
  __host__ __device__ SzxOffsets operator()(const SzxOffsets& a, const SzxOffsets& b) const {
    return SzxOffsets{a.lead + b.lead, a.mid + b.mid, a.verb + b.verb};
  }
};

// Stream-ordered scratch: no device-wide synchronization per call.
struct Scratch {
  cudaStream_t st;
  void* p = nullptr;
  Scratch(cudaStream_t s, std::size_t bytes) : st(s) { check(cudaMallocAsync(&p, bytes ? bytes : 1, s), "szx scratch"); }
  ~Scratch() { cudaFreeAsync(p, st); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

void scan_offsets(cudaStream_t st, const SzxOffsets* in, SzxOffsets* out, std::uint64_t count) {
  std::size_t temp = 0;
  check(cub::DeviceScan::ExclusiveScan(nullptr, temp, in, out, AddOffsets{}, SzxOffsets{0, 0, 0},
                                       static_cast<std::int64_t>(count), st),
        "szx scan size");
  Scratch t(st, temp);
  check(cub::DeviceScan::ExclusiveScan(t.p, temp, in, out, AddOffsets{}, SzxOffsets{0, 0, 0},
                                       static_cast<std::int64_t>(count), st),
        "szx scan");
}

SzxOffsets read_total(cudaStream_t st, const SzxOffsets* offs, std::uint64_t nb) {
  SzxOffsets t;
  check(cudaMemcpyAsync(&t, offs + nb, sizeof(t), cudaMemcpyDeviceToHost, st), "szx totals");
  check(cudaStreamSynchronize(st), "szx totals sync");
  return t;
}

// Warp layout limits: chunk offsets in int, block count in a grid.
bool handles(std::uint64_t n, std::uint32_t block) {
  return enabled() && n > 0 && block <= szx::kMaxBlock && (n + block - 1) / block < (std::uint64_t(1) << 34);
}

}  // namespace

template <class T>
bool szx_plan(const Kokkos::Cuda& space, const T* in, std::uint64_t n, std::uint32_t block, double bound,
              std::uint8_t* kinds, T* medians, SzxOffsets* offs, SzxOffsets& totals) {
  if (!handles(n, block)) return false;
  const std::uint64_t nb = (n + block - 1) / block;
  const cudaStream_t st = space.cuda_stream();
  Scratch counts(st, (nb + 1) * sizeof(SzxOffsets));
  auto* cnt = static_cast<SzxOffsets*>(counts.p);
  plan_kernel<T><<<grid_of(nb), kThreads, 0, st>>>(in, n, block, nb, bound, szx::fast_bound(bound, T()), kinds,
                                                    medians, cnt);
  check(cudaGetLastError(), "szx plan_kernel");
  scan_offsets(st, cnt, offs, nb + 1);
  totals = read_total(st, offs, nb);
  return true;
}

template <class T>
bool szx_encode(const Kokkos::Cuda& space, const T* in, std::uint64_t n, std::uint32_t block,
                const std::uint8_t* kinds, const T* medians, const SzxOffsets* offs, std::uint8_t* lead,
                std::uint8_t* mid, T* verb) {
  if (!handles(n, block)) return false;
  KSZ_EXPECTS((reinterpret_cast<std::uintptr_t>(mid) & 3) == 0, "SZx mid-byte buffer not 4-byte aligned");
  const std::uint64_t nb = (n + block - 1) / block;
  encode_kernel<T><<<grid_of(nb), kThreads, 0, space.cuda_stream()>>>(in, n, block, nb, kinds, medians, offs, lead,
                                                                      mid, verb);
  check(cudaGetLastError(), "szx encode_kernel");
  return true;
}

template <class T>
bool szx_decode_offsets(const Kokkos::Cuda& space, std::uint64_t n, std::uint32_t block, const std::uint8_t* kinds,
                        const std::uint8_t* lead, std::uint64_t lead_size, SzxOffsets* offs, SzxOffsets& totals,
                        std::uint64_t& bad_kinds, std::uint64_t& bad_codes) {
  if (!handles(n, block)) return false;
  const std::uint64_t nb = (n + block - 1) / block;
  const cudaStream_t st = space.cuda_stream();
  Scratch counts(st, (nb + 1) * sizeof(SzxOffsets) + 2 * sizeof(unsigned long long));
  auto* cnt = static_cast<SzxOffsets*>(counts.p);
  auto* status = reinterpret_cast<unsigned long long*>(cnt + nb + 1);
  check(cudaMemsetAsync(status, 0, 2 * sizeof(unsigned long long), st), "szx status");
  kind_counts_kernel<T><<<static_cast<unsigned>((nb + 1 + kThreads - 1) / kThreads), kThreads, 0, st>>>(
      n, block, nb, kinds, cnt, status);
  check(cudaGetLastError(), "szx kind_counts_kernel");
  scan_offsets(st, cnt, offs, nb + 1);
  unsigned long long h[2];
  check(cudaMemcpyAsync(h, status, sizeof(h), cudaMemcpyDeviceToHost, st), "szx status copy");
  totals = read_total(st, offs, nb);
  bad_kinds = h[0];
  bad_codes = 0;
  totals.mid = 0;
  if (bad_kinds != 0 || totals.lead != lead_size) return true;  // the caller rejects the stream
  // The mid counts reuse the (now scanned) counts buffer as two u64 arrays.
  auto* mc = reinterpret_cast<std::uint64_t*>(cnt);
  auto* mo = mc + (nb + 1);
  mid_counts_kernel<T><<<grid_of(nb), kThreads, 0, st>>>(n, block, nb, kinds, offs, lead, mc, status + 1);
  check(cudaGetLastError(), "szx mid_counts_kernel");
  std::size_t temp = 0;
  check(cub::DeviceScan::ExclusiveSum(nullptr, temp, mc, mo, static_cast<std::int64_t>(nb + 1), st), "szx mid scan size");
  {
    Scratch t(st, temp);
    check(cub::DeviceScan::ExclusiveSum(t.p, temp, mc, mo, static_cast<std::int64_t>(nb + 1), st), "szx mid scan");
  }
  put_mid_kernel<<<static_cast<unsigned>((nb + 1 + kThreads - 1) / kThreads), kThreads, 0, st>>>(nb + 1, mo, offs);
  check(cudaGetLastError(), "szx put_mid_kernel");
  check(cudaMemcpyAsync(h, status, sizeof(h), cudaMemcpyDeviceToHost, st), "szx status copy");
  totals = read_total(st, offs, nb);
  bad_codes = h[1];
  return true;
}

template <class T>
bool szx_decode(const Kokkos::Cuda& space, std::uint64_t n, std::uint32_t block, const std::uint8_t* kinds,
                const T* medians, const SzxOffsets* offs, const std::uint8_t* lead, const std::uint8_t* mid,
                std::uint64_t mid_size, const T* verb, T* out) {
  if (!handles(n, block)) return false;
  KSZ_EXPECTS((reinterpret_cast<std::uintptr_t>(mid) & 3) == 0, "SZx mid-byte buffer not 4-byte aligned");
  const std::uint64_t nb = (n + block - 1) / block;
  decode_kernel<T><<<grid_of(nb), kThreads, 0, space.cuda_stream()>>>(n, block, nb, kinds, medians, offs, lead, mid,
                                                                      mid_size, verb, out);
  check(cudaGetLastError(), "szx decode_kernel");
  return true;
}

namespace {

// A case's one-pass grid: c == 0 when the one-pass kernels do not take it
// (block size, disabled specializations, too many blocks).
struct OnePassGrid {
  int c = 0, nbw = 0;  // chunks a block, blocks a warp
  std::uint64_t nb = 0, ngroups = 0;
  // Look-back states (two arrays), Result (onepass::result_of),
  // then the decoder's GroupArrays.
  std::size_t result_word() const { return onepass::result_word(ngroups); }
  std::size_t state_bytes() const {
    return c == 0 ? 0
                  : result_word() * 8 + sizeof(onepass::Result) + (3 * onepass::kMaxOffsetCtas + 3 * ngroups) * 8;
  }
  // Float compression's block extremes (range_blocks_kernel's), a float2 a
  // whole block, after the states: the caller's buffer holds both.
  std::size_t ext_offset() const { return (state_bytes() + 15) / 16 * 16; }
  std::size_t ext_bytes = 0;
  std::size_t buffer_bytes() const { return c == 0 ? 0 : ext_offset() + ext_bytes; }
};
static_assert(onepass::kRangeSlotBytes <= 3 * onepass::kMaxOffsetCtas * 8,
              "the range slots fit where decoding keeps its GroupArrays");
template <class T>
OnePassGrid onepass_grid(std::uint64_t n, std::uint32_t block) {
  OnePassGrid g;
  onepass::shape_of<T>(block, g.c, g.nbw);
  if (g.c == 0 || !handles(n, block)) return OnePassGrid{};
  g.nb = (n + block - 1) / block;
  if (g.nb >= onepass::kMaxBlocks) return OnePassGrid{};
  g.ngroups = (g.nb + kWarps * g.nbw - 1) / (kWarps * g.nbw);
  if constexpr (sizeof(T) == 4) g.ext_bytes = n / block * sizeof(float2);
  return g;
}

// f(C, NB) with the grid's shape as compile-time constants.
template <class T, class F>
void with_shape(const OnePassGrid& g, F&& f) {
  constexpr int R = sizeof(T) == 4 ? 4 : 2;
  switch (g.c) {
    case 1: f(std::integral_constant<int, 1>{}, std::integral_constant<int, R>{}); break;
    case 2: f(std::integral_constant<int, 2>{}, std::integral_constant<int, R / 2>{}); break;
    default: f(std::integral_constant<int, R>{}, std::integral_constant<int, 1>{}); break;
  }
}

// The caller's state buffer, checked.
unsigned long long* state_of(const OnePassGrid& g, void* state, std::size_t state_bytes) {
  KSZ_EXPECTS(state_bytes >= g.state_bytes() && reinterpret_cast<std::uintptr_t>(state) % 8 == 0,
              "SZx one-pass state buffer too small");
  return static_cast<unsigned long long*>(state);
}

// CTAs of a cooperative offsets_kernel: as many as are resident at once, at
// most one a group, kMaxOffsetCtas and the tests' limit; 0 where the device
// cannot launch cooperatively. With the counts stored (a few words of work a
// group) two an SM: fewer CTAs wait less at grid.sync (512^3 f32: 9 us against
// 15 for 1,024 CTAs and 10 for one an SM).
std::atomic<unsigned> offset_ctas_limit{0};

// REL speculation (16-byte aligned input): the compressor codes under the
// bound of a sample's range (sample_range_kernel: one piece in sample_every())
// while it finds the field's range, instead of after a value-range pass. The
// sample's range is within the field's, so its bound es is at most the
// field's e; the bytes are those e codes where speculation_holds, else the
// compressor runs again under e (the range known by then). After a miss the
// next calls take the value-range pass (a field whose extremes a sample
// misses is likely followed by more of its kind): kSpecRest of them, twice
// as many after each further miss in a row (at most kSpecRestMax), so that a
// run of such fields pays the second compressor ever more rarely, and
// kSpecRest again after a kept speculation. szx_speculation overrides
// (tests), as KSZ_SZX_SPECULATE=0/1 does.
constexpr std::uint64_t kSpecMinValues = std::uint64_t(1) << 22;  // smaller fields: the pass is short
constexpr int kSpecRest = 8, kSpecRestMax = 256;
std::atomic<int> spec_mode{-1};  // -1: not yet read; 0 off, 1 always, 2 resting after a miss
std::atomic<int> spec_rest{0}, spec_next_rest{kSpecRest};
std::atomic<unsigned long long> spec_tried{0}, spec_held{0};
int speculation_mode() {
  int m = spec_mode.load(std::memory_order_relaxed);
  if (m < 0) {
    const char* env = std::getenv("KSZ_SZX_SPECULATE");
    m = env && env[0] == '0' ? 0 : env && env[0] == '1' ? 1 : 2;
    int unset = -1;
    if (!spec_mode.compare_exchange_strong(unset, m)) m = unset;
  }
  return m;
}
bool speculate_now(std::uint64_t n) {
  const int m = speculation_mode();
  if (m == 1) return true;
  if (m == 0 || n < kSpecMinValues) return false;
  int rest = spec_rest.load(std::memory_order_relaxed);
  while (rest > 0)
    if (spec_rest.compare_exchange_weak(rest, rest - 1)) return false;
  return true;
}
// One piece of kSamplePiece<T> values (2 KiB) in this many
// (KSZ_SZX_SAMPLE_EVERY, perf): at 512^3 f32 8,192 pieces, 16 MiB.
std::uint64_t sample_every() {
  static const std::uint64_t every = [] {
    const char* env = std::getenv("KSZ_SZX_SAMPLE_EVERY");
    const long v = env ? std::strtol(env, nullptr, 10) : 0;
    return v > 0 ? static_cast<std::uint64_t>(v) : std::uint64_t(32);
  }();
  return every;
}
// Whether the bound es (the sample's) coded what e (the field's) codes: the
// same bound, or es <= e of one exponent (szx::required_length: the same
// lengths, so the same codes; a value within es is within e; a block constant
// under es is under e) and no coded block's noted radius (rounded down, 0
// where a value missed es) at or below e, where e might make it constant or
// keep a value es made the block verbatim for.
bool speculation_holds(double es, double e, float radius) {
  if (es == e) return true;
  return es > 0 && es < e && szx::exponent_of(es) == szx::exponent_of(e) && static_cast<double>(radius) > e;
}
void note_speculation(bool held) {
  spec_tried.fetch_add(1, std::memory_order_relaxed);
  if (held) {
    spec_held.fetch_add(1, std::memory_order_relaxed);
    spec_next_rest.store(kSpecRest, std::memory_order_relaxed);
  } else if (speculation_mode() == 2) {
    const int rest = spec_next_rest.load(std::memory_order_relaxed);
    spec_rest.store(rest, std::memory_order_relaxed);
    spec_next_rest.store(std::min(2 * rest, kSpecRestMax), std::memory_order_relaxed);
  }
}
template <class Kernel>
unsigned offset_ctas(Kernel kernel, std::uint64_t ngroups, bool stored) {
  static const bool cooperative = [] {
    int dev = 0, v = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&v, cudaDevAttrCooperativeLaunch, dev) == cudaSuccess && v != 0;
  }();
  if (!cooperative) return 0;
  auto most = std::min<std::uint64_t>(launch::resident_blocks(kernel, kThreads, 0), onepass::kMaxOffsetCtas);
  if (stored) most = std::min<std::uint64_t>(most, 2 * launch::sm_count());
  if (const unsigned limit = offset_ctas_limit.load(std::memory_order_relaxed)) most = std::min<std::uint64_t>(most, limit);
  return static_cast<unsigned>(std::min(most, ngroups));
}

// The kernel's totals and status, after it finished (one small copy into
// pinned host memory, one synchronization).
// With keys (where the kernel found the range), also the range slots' two
// maxima: the finite values' extremes, as keys (onepass::range_slots).
static_assert(sizeof(onepass::Result) + onepass::kRangeSlotBytes <= HostResult::kBytes, "one host result slot");
struct RangeKeys {
  unsigned long long min = 0, max = 0;  // ~range_key(min), range_key(max); 0: no finite value
  float radius = std::numeric_limits<float>::infinity();  // kSpeculate: the least coded radius (note_radius)
};
onepass::Result read_result(cudaStream_t st, const OnePassGrid& g, const unsigned long long* sp, const char* what,
                            RangeKeys* keys = nullptr) {
  check(cudaGetLastError(), what);
  const HostResult back;
  const std::size_t bytes = sizeof(onepass::Result) + (keys ? onepass::kRangeSlotBytes : 0);
  check(cudaMemcpyAsync(back.device<onepass::Result>(), sp + g.result_word(), bytes, cudaMemcpyDefault, st),
        "szx totals copy");
  check(cudaStreamSynchronize(st), "szx onepass sync");
  if (keys) {
    const auto* slots = reinterpret_cast<const unsigned long long*>(back.host<onepass::Result>() + 1);
    for (int i = 0; i < onepass::kRangeSlots; ++i) {
      keys->min = std::max(keys->min, slots[i * onepass::kSlotWords]);
      keys->max = std::max(keys->max, slots[i * onepass::kSlotWords + 1]);
      if (const unsigned long long w = slots[i * onepass::kSlotWords + 2])
        keys->radius = std::min(keys->radius, szx::from_bits<float>(static_cast<std::uint32_t>(~w)));
    }
  }
  return *back.host<onepass::Result>();
}

}  // namespace

template <class T>
std::size_t szx_onepass_state_bytes(std::uint64_t n, std::uint32_t block, bool compression) {
  const OnePassGrid g = onepass_grid<T>(n, block);
  return compression ? g.buffer_bytes() : g.state_bytes();
}

template <class T>
bool szx_compress_onepass(const Kokkos::Cuda& space, const T* in, std::uint64_t n, std::uint32_t block,
                          SzxBound& bound, std::uint8_t* kinds, T* medians, std::uint16_t* runs, std::uint8_t* lead,
                          std::uint8_t* payload, std::uint64_t payload_bytes, void* state, std::size_t state_bytes,
                          SzxOffsets& totals, bool& fits) {
  const OnePassGrid g = onepass_grid<T>(n, block);
  if (g.c == 0) return false;
  KSZ_EXPECTS(reinterpret_cast<std::uintptr_t>(payload) % 16 == 0 && payload_bytes % sizeof(T) == 0,
              "SZx payload buffer not aligned");
  const cudaStream_t st = space.cuda_stream();
  unsigned long long* const sp = state_of(g, state, state_bytes);
  const bool find = bound.find_range && !bound.range;
  // The value-range pass ours (bound.range_buf): float's with the block
  // extremes where the input is 16-byte aligned (range_blocks_kernel, which
  // zeroes the state too), else finite_minmax_to's.
  const bool pass = !find && !bound.range && bound.range_buf;
  const bool aligned = (reinterpret_cast<std::uintptr_t>(in) & 15) == 0;
  const bool blocks_pass = pass && sizeof(T) == 4 && aligned && g.ext_bytes > 0;
  // Or, under REL, a sample's range instead of the pass (speculate_now).
  const bool spec = bound.rel && (sizeof(T) == 4 ? blocks_pass : pass && aligned) && speculate_now(n);
  const bool ext = blocks_pass && !spec;
  // A kernel ahead of the compressor zeroes its state (range_blocks_kernel
  // or sample_range_kernel).
  const bool ahead = ext || spec;
  KSZ_EXPECTS(!ext || state_bytes >= g.buffer_bytes(), "SZx one-pass state buffer too small for the block extremes");
  const double* const range = pass ? bound.range_buf : bound.range;
  auto* const extp = ext ? reinterpret_cast<float2*>(static_cast<char*>(state) + g.ext_offset()) : nullptr;
  // The look-back states and Result (and the range slots) start zeroed.
  const std::size_t lookback_bytes = g.result_word() * 8 + sizeof(onepass::Result);
  const std::size_t zero_bytes = lookback_bytes + (find || spec ? onepass::kRangeSlotBytes : 0);
  if (pass && !ahead) {
    KSZ_EXPECTS(finite_minmax_to<T>(space, in, n, bound.range_buf, bound.range_counter_zeroed),
                "internal: the value-range kernel refused a case the SZx one-pass path took");
  }
  if (!ahead) check(cudaMemsetAsync(sp, 0, zero_bytes, st), "szx state");
  // The compressor: FindRange mode `mode`, its bound given (b, rel) or from
  // the extremes at rng.
  const auto compress = [&](int mode, double b, const double* rng, bool rel) {
    with_shape<T>(g, [&](auto c, auto nbw) {
      constexpr int C = decltype(c)::value, NB = decltype(nbw)::value;
      auto kernel = onepass::compress_kernel<T, C, NB, 0, false>;
      if (mode == onepass::kFind) kernel = onepass::compress_kernel<T, C, NB, onepass::kFind, false>;
      if (mode == onepass::kSpeculate) kernel = onepass::compress_kernel<T, C, NB, onepass::kSpeculate, false>;
      if constexpr (sizeof(T) == 4) {
        if (extp) kernel = onepass::compress_kernel<T, C, NB, 0, true>;
      }
      const std::uint64_t pairs = onepass::tile_pairs<T, C, NB>(n, in);
      kernel<<<static_cast<unsigned>(g.ngroups - pairs), kThreads, 0, st>>>(in, n, g.nb, g.ngroups, pairs, b, rng,
                                                                           rel, kinds, medians, runs, lead, payload,
                                                                           payload_bytes, sp, extp);
    });
  };
  if (ahead) {
    // minmax_kernel's layout of the value-range slot: the pair, the counter
    // at byte 16, the CTAs' pairs (T) from byte 32.
    auto* const done = reinterpret_cast<unsigned*>(bound.range_buf + 2);
    auto* const parts = reinterpret_cast<T*>(bound.range_buf + 4);
    if (!bound.range_counter_zeroed) check(cudaMemsetAsync(done, 0, sizeof(unsigned), st), "szx range count");
    constexpr unsigned kMaxCtas = 4000;
    static_assert(32 + 2 * sizeof(T) * kMaxCtas <= kMinmaxBufDoubles * sizeof(double),
                  "the CTAs' pairs fit the value-range slot");
    if (spec) {
      const std::uint64_t pieces = n / onepass::kSamplePiece<T>, every = sample_every();
      constexpr std::uint64_t kPiecesPerCta = 2 * onepass::kSampleThreads / 32;  // two a warp
      const std::uint64_t want = ((pieces + every - 1) / every + kPiecesPerCta - 1) / kPiecesPerCta;
      const std::uint64_t resident =
          launch::resident_blocks(onepass::sample_range_kernel<T>, onepass::kSampleThreads, 0);
      const unsigned ctas = static_cast<unsigned>(std::clamp<std::uint64_t>(want, 1, std::min<std::uint64_t>(resident, kMaxCtas)));
      onepass::sample_range_kernel<T><<<ctas, onepass::kSampleThreads, 0, st>>>(
          in, pieces, every, sp, zero_bytes / 8, parts, done, bound.range_buf);
      check(cudaGetLastError(), "szx sample_range_kernel");
    } else {
      with_shape<T>(g, [&](auto c, auto) {
        if constexpr (sizeof(T) == 4) {
          constexpr int C = decltype(c)::value;
          const std::uint64_t nchunks = n / block * C;
          constexpr int kUnitsPerCta = 4 * onepass::kRangeThreads / 32;  // four units a warp
          const std::uint64_t want = (nchunks / 4 + kUnitsPerCta - 1) / kUnitsPerCta;
          // As many CTAs as are resident at once (a grid-stride loop).
          const std::uint64_t resident =
              launch::resident_blocks(onepass::range_blocks_kernel<C>, onepass::kRangeThreads, 0);
          const unsigned ctas = static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(want, resident)));
          onepass::range_blocks_kernel<C><<<std::min(ctas, kMaxCtas), onepass::kRangeThreads, 0, st>>>(
              in, n, nchunks, extp, sp, zero_bytes / 8, parts, done, bound.range_buf);
          check(cudaGetLastError(), "szx range_blocks_kernel");
        }
      });
    }
  }
  compress(spec ? onepass::kSpeculate : find ? onepass::kFind : 0, bound.bound, range, bound.rel);
  RangeKeys keys;
  onepass::Result r = read_result(st, g, sp, "szx onepass compress_kernel", find || spec ? &keys : nullptr);
  bound.mn = r.mn, bound.mx = r.mx, bound.used = r.bound;
  if (find || spec) {
    if (keys.max == 0) {  // no finite value: T's extremes, as finite_minmax_to leaves them
      bound.mn = std::numeric_limits<T>::max(), bound.mx = std::numeric_limits<T>::lowest();
    } else {
      bound.mn = onepass::of_range_key<T>(~keys.min), bound.mx = onepass::of_range_key<T>(keys.max);
    }
  }
  if (spec) {
    // The field's bound, as the kernel would have resolved it from the
    // value-range pass; the bytes stand where it codes them alike
    // (speculation_holds), else the compressor again under it (given: the
    // range is known).
    const double e = szx::resolved_bound(bound.bound, true, bound.mn, bound.mx);
    const bool holds = speculation_holds(r.bound, e, keys.radius);
    note_speculation(holds);
    if (!holds) {
      check(cudaMemsetAsync(sp, 0, lookback_bytes, st), "szx state");  // the bound given: no range slots
      compress(0, e, nullptr, false);
      r = read_result(st, g, sp, "szx onepass compress_kernel");
    }
    bound.used = holds ? e : r.bound;
  }
  totals = SzxOffsets{r.lead, r.mid, r.verb};
  fits = !(r.status & onepass::kOverflow) && r.mid + r.verb * sizeof(T) <= payload_bytes;
  return true;
}

template <class T>
bool szx_decode_groups(const Kokkos::Cuda& space, std::uint64_t n, std::uint32_t block, const std::uint8_t* kinds,
                       const T* medians, const std::uint8_t* lead, std::uint64_t lead_size, const std::uint8_t* mid,
                       std::uint64_t mid_size, const T* verb, std::uint64_t verb_values, const std::uint16_t* runs,
                       T* out, void* state, std::size_t state_bytes, SzxOffsets& totals, bool& bad_kinds,
                       bool& bad_codes, bool& bad_runs) {
  const OnePassGrid g = onepass_grid<T>(n, block);
  if (g.c == 0) return false;
  if (reinterpret_cast<std::uintptr_t>(mid) % sizeof(T) != 0 || reinterpret_cast<std::uintptr_t>(runs) % 2 != 0)
    return false;  // read in words of sizeof(T) and u16
  const cudaStream_t st = space.cuda_stream();
  unsigned long long* const sp = state_of(g, state, state_bytes);
  bool launched = false;
  with_shape<T>(g, [&](auto c, auto nbw) {
    constexpr int C = decltype(c)::value, NB = decltype(nbw)::value;
    const auto offsets = runs ? onepass::offsets_kernel<T, C, NB, true>  // segment 21's counts
                              : onepass::offsets_kernel<T, C, NB, false>;
    const unsigned ctas = offset_ctas(offsets, g.ngroups, runs != nullptr);
    if (ctas == 0) return;
    std::uint64_t n_ = n, nb_ = g.nb, ngroups_ = g.ngroups, lead_size_ = lead_size;
    const std::uint8_t *kinds_ = kinds, *lead_ = lead;
    const std::uint16_t* runs_ = runs;
    unsigned long long* sp_ = sp;
    void* args[] = {&n_, &nb_, &ngroups_, &kinds_, &lead_, &lead_size_, &runs_, &sp_};
    const cudaError_t e =
        cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(offsets), ctas, kThreads, args, 0, st);
    if (e == cudaErrorCooperativeLaunchTooLarge) {  // fewer SMs than the occupancy query saw (MPS)
      (void)cudaGetLastError();
      return;
    }
    check(e, "szx offsets_kernel");
    // A programmatic dependent of offsets_kernel where the code can wait for
    // it (compiled for Hopper or later): its CTAs are resident by the time
    // the offsets are done.
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(g.ngroups));
    cfg.blockDim = dim3(kThreads);
    cfg.stream = st;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    const auto decode = onepass::decode_kernel<T, C, NB>;
    if (launch::ptx_version(decode) >= 90) cfg.attrs = &attr, cfg.numAttrs = 1;
    check(cudaLaunchKernelEx(&cfg, decode, n, g.nb, g.ngroups, kinds, medians, lead, lead_size, mid, mid_size, verb,
                             verb_values, out, runs, sp),
          "szx decode_kernel");
    launched = true;
  });
  if (!launched) return false;  // the caller's two-pass path
  const onepass::Result r = read_result(st, g, sp, "szx onepass decode_kernel");
  totals = SzxOffsets{r.lead, r.mid, r.verb};
  bad_kinds = (r.status & onepass::kBadKind) != 0;
  bad_codes = (r.status & onepass::kBadCode) != 0;
  bad_runs = (r.status & onepass::kBadRuns) != 0;
  return true;
}

void szx_limit_offset_ctas(unsigned ctas) { offset_ctas_limit.store(ctas, std::memory_order_relaxed); }

void szx_speculation(int mode) {
  spec_mode.store(mode, std::memory_order_relaxed);
  spec_rest.store(0, std::memory_order_relaxed);
  spec_next_rest.store(kSpecRest, std::memory_order_relaxed);
}
SzxSpeculation szx_speculation_counts() {
  return SzxSpeculation{spec_tried.load(std::memory_order_relaxed), spec_held.load(std::memory_order_relaxed)};
}

#define KSZ_SZX_CUDA(T)                                                                                          \
  template bool szx_plan<T>(const Kokkos::Cuda&, const T*, std::uint64_t, std::uint32_t, double, std::uint8_t*, \
                            T*, SzxOffsets*, SzxOffsets&);                                                      \
  template bool szx_encode<T>(const Kokkos::Cuda&, const T*, std::uint64_t, std::uint32_t, const std::uint8_t*, \
                              const T*, const SzxOffsets*, std::uint8_t*, std::uint8_t*, T*);                   \
  template bool szx_decode_offsets<T>(const Kokkos::Cuda&, std::uint64_t, std::uint32_t, const std::uint8_t*,   \
                                      const std::uint8_t*, std::uint64_t, SzxOffsets*, SzxOffsets&,             \
                                      std::uint64_t&, std::uint64_t&);                                          \
  template bool szx_decode<T>(const Kokkos::Cuda&, std::uint64_t, std::uint32_t, const std::uint8_t*, const T*, \
                              const SzxOffsets*, const std::uint8_t*, const std::uint8_t*, std::uint64_t,       \
                              const T*, T*);                                                            \
  template std::size_t szx_onepass_state_bytes<T>(std::uint64_t, std::uint32_t, bool);                              \
  template bool szx_compress_onepass<T>(const Kokkos::Cuda&, const T*, std::uint64_t, std::uint32_t, SzxBound&, \
                                        std::uint8_t*, T*, std::uint16_t*, std::uint8_t*, std::uint8_t*,       \
                                        std::uint64_t, void*, std::size_t, SzxOffsets&, bool&);                 \
  template bool szx_decode_groups<T>(const Kokkos::Cuda&, std::uint64_t, std::uint32_t, const std::uint8_t*,  \
                                     const T*, const std::uint8_t*, std::uint64_t, const std::uint8_t*,         \
                                     std::uint64_t, const T*, std::uint64_t, const std::uint16_t*, T*, void*,   \
                                     std::size_t, SzxOffsets&, bool&, bool&, bool&);
KSZ_SZX_CUDA(float)
KSZ_SZX_CUDA(double)
#undef KSZ_SZX_CUDA

}  // namespace ksz::cuda_spec
