// CUDA specializations of the lossless pass (portable/lossless/lossless.hpp,
// the reference): its skip test (coded_lower_bound) and its encoder (encode).
#include <cuda_runtime.h>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/host_result.hpp"
#include "cuda_specializations/launch.hpp"
#include "cuda_specializations/lookback.hpp"
#include "cuda_specializations/warp.hpp"
#include "portable/lossless/lossless.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {

constexpr int kThreads = 256;

using launch::check;

// Nonzero units of w: bytes (4 - its zero bytes) or the word itself.
__device__ __forceinline__ std::uint32_t nonzero_units(std::uint32_t w, bool bytes) {
  if (!bytes) return w != 0;
  const std::uint32_t z = ~(((w & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | w | 0x7F7F7F7Fu);  // high bit of each zero byte
  return 4u - __popc(z);
}

// A block per lossless block of wpb words (16-byte loads when whole and
// aligned); one integer atomic a block, so the sum is exact and the same on
// every run.
__global__ void __launch_bounds__(kThreads)
    coded_bound_kernel(const std::uint32_t* __restrict__ words, std::uint64_t n_words, std::uint64_t wpb, bool bytes,
                       bool vec, unsigned long long* __restrict__ total) {
  const std::uint64_t b = blockIdx.x, begin = b * wpb, end = begin + wpb < n_words ? begin + wpb : n_words;
  std::uint32_t c = 0;
  if (vec && end - begin == wpb) {
    const auto* v = reinterpret_cast<const uint4*>(words + begin);
    for (std::uint64_t k = threadIdx.x; k < wpb / 4; k += kThreads) {
      const uint4 u = __ldg(v + k);
      c += nonzero_units(u.x, bytes) + nonzero_units(u.y, bytes) + nonzero_units(u.z, bytes) +
           nonzero_units(u.w, bytes);
    }
  } else {
    for (std::uint64_t i = begin + threadIdx.x; i < end; i += kThreads) c += nonzero_units(__ldg(words + i), bytes);
  }
  c = warp::reduce_add(c);
  __shared__ std::uint32_t part[kThreads / 32];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint64_t nz = 0;
    for (int k = 0; k < kThreads / 32; ++k) nz += part[k];
    const std::uint64_t len = (end - begin) * 4, coded = nz * (bytes ? 1 : 4) + (nz + 7) / 8;
    atomicAdd(total, static_cast<unsigned long long>(coded < len ? coded : len));
  }
}

// The encoder in one kernel: a CUDA block codes an 8 KiB lossless block at a
// time (taken in order from a ticket), 32 bytes a thread. Level 0's bitmap
// bits and nonzero units come from the thread's registers; each bitmap level
// above it (at most 1,024 bytes) is a thread per 4 of its bytes in shared
// memory. Places in V0, V1, ... come from block scans, the block's stored
// bytes are staged in shared memory, its size published for the look-back
// as soon as the counts are in (lookback.hpp), and the staged bytes written
// straight to the payload at the offset the look-back gives: no staging copy
// in global memory, no scan kernel, no gather, one synchronization. The same
// bytes as EncodeBlocks, the offsets scan and GatherBlocks.
namespace enc {
constexpr int kThreads = 256;
constexpr int kLog2Block = 13;
constexpr std::uint32_t kBlock = 1u << kLog2Block;  // 32 bytes a thread
static_assert(kBlock == 32u * kThreads, "a thread per 32 bytes");
// Bitmap levels 1..top of a block: 1,024 + 128 + 16 bytes for byte units;
// the third bitmap level is the top (the kernel handles top <= 3).
constexpr std::uint32_t kBitmapBytes = kBlock / 8 + kBlock / 64 + kBlock / 512;
static_assert(kBlock / 512 <= lossless::kTopBytes, "a block's bitmaps end by the third level");

// Bits 0-3: which of p's four bytes (the first `valid` of them) are nonzero.
__device__ __forceinline__ std::uint32_t nonzero_nibble(const std::uint8_t* p, std::uint32_t valid) {
  std::uint32_t m = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (static_cast<std::uint32_t>(j) < valid && p[j] != 0) m |= 1u << j;
  return m;
}

// This thread's nonzero bytes among bytes [4t, 4t + 4) of a bitmap level of
// len bytes at lvl, in order, to stage[p...].
__device__ __forceinline__ void level_values(const std::uint8_t* lvl, std::uint32_t len, std::uint8_t* stage,
                                             std::uint32_t p) {
  const std::uint32_t first = 4 * threadIdx.x;
#pragma unroll
  for (std::uint32_t j = 0; j < 4; ++j) {
    const std::uint8_t v = first + j < len ? lvl[first + j] : 0;
    if (v) stage[p++] = v;
  }
}

// U: unit bytes, 1 (ZeroBytes) or 4 (ZeroWords). The input is n_given
// bytes, or 4 * *n_words of them when n_words is given (a count a kernel
// before this one left on the device). ticket: a zeroed word past the
// states of every block the input can have.
template <int U>
__global__ void __launch_bounds__(kThreads)
    encode_kernel(const std::uint8_t* __restrict__ in, std::uint64_t n_given, const std::uint64_t* n_words, bool vec,
                  std::uint8_t* __restrict__ payload, unsigned long long* __restrict__ state,
                  unsigned long long* __restrict__ ticket, unsigned long long* __restrict__ total_out) {
  __shared__ __align__(16) std::uint8_t stage[kBlock + 16];  // the block's stored bytes (+16: funnel-shift reads)
  __shared__ __align__(16) std::uint8_t bitmaps[kBitmapBytes];
  __shared__ unsigned long long s_tile, s_prefix;
  const std::uint64_t n = n_words ? 4 * *n_words : n_given;
  const std::uint64_t nb = (n + kBlock - 1) >> kLog2Block;
  const std::uint64_t data_start = lossless::kHeaderBytes + 4 * nb;
  const std::uint32_t t = threadIdx.x, at = 32u * t;
  for (;;) {
    if (t == 0) s_tile = atomicAdd(ticket, 1ull);
    __syncthreads();
    const std::uint64_t b = s_tile;
    if (b >= nb) return;  // block-uniform
    const std::uint64_t begin = b << kLog2Block;
    const std::uint32_t len = static_cast<std::uint32_t>(n - begin < kBlock ? n - begin : kBlock);
    // len <= 8 KiB: at most three levels above level 0 (top <= 3).
    const lossless::impl::Levels lv = lossless::impl::levels_of(len, U);
    // The thread's 32 bytes, zero past len.
    std::uint64_t w[4];
    if (vec && len == kBlock) {
      const auto* p = reinterpret_cast<const ulonglong2*>(in + begin + at);
      const ulonglong2 x = __ldg(p), y = __ldg(p + 1);
      w[0] = x.x;
      w[1] = x.y;
      w[2] = y.x;
      w[3] = y.y;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        w[k] = 0;
        for (std::uint32_t j = 0; j < 8; ++j)
          if (at + 8 * k + j < len) w[k] |= std::uint64_t(in[begin + at + 8 * k + j]) << (8 * j);
      }
    }
    // Level 0's bitmap: D1 bytes 4t..4t+3 (byte units) or byte t (words).
    std::uint32_t m = 0;
    if (U == 1) {
#pragma unroll
      for (int k = 0; k < 4; ++k) m |= lossless::impl::nonzero_bytes(w[k]) << (8 * k);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) m |= static_cast<std::uint32_t>(w[j >> 1] >> (32 * (j & 1))) != 0 ? 1u << j : 0u;
    }
#pragma unroll
    for (std::uint32_t k = 0; k < 4 / U; ++k) {
      const std::uint32_t i = (4 / U) * t + k;
      if (i < lv.len[1]) bitmaps[lv.off[1] + i] = static_cast<std::uint8_t>(m >> (8 * k));
    }
    // Places: V0 from 0, V1 from s1, V2 from s2, the top bitmap from s3.
    std::uint32_t s1, c;
    const std::uint32_t p0 = warp::block_scan<kThreads>(__popc(m) * U, s1);  // its barriers publish D1
    std::uint32_t s2 = s1, s3 = s1, p1 = 0, p2 = 0;
    // Level k's bitmap (the next level) from 4 of its bytes a thread: bytes
    // 8j..8j+7 make bit j, two threads' nibbles a byte.
    const auto next_bitmap = [&](int k) {
      const std::uint32_t lk = lv.len[k];
      const std::uint32_t nib = 4 * t < lk ? nonzero_nibble(bitmaps + lv.off[k] + 4 * t, lk - 4 * t) : 0u;
      const std::uint32_t up = __shfl_down_sync(warp::kFull, nib, 1);
      if ((t & 1) == 0 && t / 2 < lv.len[k + 1]) bitmaps[lv.off[k + 1] + t / 2] = static_cast<std::uint8_t>(nib | up << 4);
      return warp::block_scan<kThreads>(__popc(nib), c);  // its barriers publish the next bitmap
    };
    if (lv.top > 1) {  // block-uniform
      p1 = next_bitmap(1);
      s2 = s3 = s1 + c;
    }
    if (lv.top > 2) {
      p2 = next_bitmap(2);
      s3 = s2 + c;
    }
    const std::uint32_t top_len = lv.top == 1 ? lv.len[1] : lv.top == 2 ? lv.len[2] : lv.len[3];
    const std::uint32_t top_off = lv.top == 1 ? lv.off[1] : lv.top == 2 ? lv.off[2] : lv.off[3];
    const bool raw = s3 + top_len >= len;
    const std::uint32_t size = raw ? len : s3 + top_len;
    if (t < 32) lookback::publish_aggregate(state, b, size);
    if (raw) {
      auto* q = reinterpret_cast<std::uint64_t*>(stage + at);
#pragma unroll
      for (int k = 0; k < 4; ++k) q[k] = w[k];
    } else {
      std::uint32_t p = p0;
      if (U == 1) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
          for (std::uint32_t r = (m >> (8 * k)) & 0xFFu; r; r &= r - 1)
            stage[p++] = static_cast<std::uint8_t>(w[k] >> (8 * (__ffs(r) - 1)));
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if ((m >> j) & 1u) {
            *reinterpret_cast<std::uint32_t*>(stage + p) = static_cast<std::uint32_t>(w[j >> 1] >> (32 * (j & 1)));
            p += 4;
          }
      }
      if (lv.top > 1) level_values(bitmaps + lv.off[1], lv.len[1], stage, s1 + p1);
      if (lv.top > 2) level_values(bitmaps + lv.off[2], lv.len[2], stage, s2 + p2);
      if (t < top_len) stage[s3 + t] = bitmaps[top_off + t];
    }
    __syncthreads();  // staged
    if (t < 32) {
      const std::uint64_t prefix = lookback::resolve(state, b, size);
      if (t == 0) {
        s_prefix = prefix;
        if (b + 1 == nb) *total_out = prefix + size;
      }
    }
    __syncthreads();
    std::uint8_t* dst = payload + data_start + s_prefix;
    if (t == 0) {
      *reinterpret_cast<std::uint32_t*>(payload + lossless::kHeaderBytes + 4 * b) = size;
      if (b == 0)
        lossless::impl::write_header(reinterpret_cast<std::uint64_t*>(payload), n, kLog2Block,
                                     U == 1 ? lossless::Method::ZeroBytes : lossless::Method::ZeroWords, nb);
    }
    // By the destination's aligned words (from two staged words where the
    // two are not aligned alike); the partial words at the ends, shared with
    // the neighbouring blocks, by bytes.
    const std::uint32_t head = (4u - static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(dst) & 3u)) & 3u;
    const std::uint32_t h = head < size ? head : size;
    const std::uint32_t whole = (size - h) / 4, tail_from = h + 4 * whole;
    const auto* s32 = reinterpret_cast<const std::uint32_t*>(stage);
    const std::uint32_t shift = 8 * (h & 3u);
    for (std::uint32_t i = t; i < whole; i += kThreads) {
      const std::uint32_t a = (h >> 2) + i;  // the staged word holding the first byte
      *reinterpret_cast<std::uint32_t*>(dst + h + 4 * i) = shift ? __funnelshift_r(s32[a], s32[a + 1], shift) : s32[a];
    }
    if (t < h) dst[t] = stage[t];
    if (t < size - tail_from) dst[tail_from + t] = stage[tail_from + t];
    __syncthreads();  // stage, bitmaps and s_tile are reused
  }
}
}  // namespace enc

}  // namespace

bool lossless_coded_bytes(const Kokkos::Cuda& space, const std::uint32_t* words, std::uint64_t n_words, bool bytes,
                          int log2_block, std::uint64_t& coded) {
  if (!enabled() || n_words == 0 || log2_block < 2 || log2_block > 40) return false;
  const std::uint64_t wpb = (std::uint64_t(1) << log2_block) / 4;
  const std::uint64_t nb = (n_words + wpb - 1) / wpb;
  if (nb > 0x7FFFFFFFull) return false;
  const bool vec = wpb % 4 == 0 && reinterpret_cast<std::uintptr_t>(words) % 16 == 0;
  const HostResult slot;
  cudaStream_t st = space.cuda_stream();
  coded_bound_kernel<<<static_cast<unsigned>(nb), kThreads, 0, st>>>(words, n_words, wpb, bytes, vec,
                                                                      slot.zeroed_counter(st));
  check(cudaGetLastError(), "coded_bound_kernel");
  coded = slot.read_counter(st);
  return true;
}

namespace {
// The encoder queued on n bytes at `in`, or on 4 * *n_words of them when
// n_words is given (n then bounds them), its buffers from ws. The payload's
// data bytes go to `total`; when null, to a word of the states' buffer, which
// total then points to. False (nothing queued) where the kernel does not apply.
bool queue_encode(const Kokkos::Cuda& space, const std::uint8_t* in, std::uint64_t n, const std::uint64_t* n_words,
                  bool bytes, int log2_block, pipeline::Workspace<Kokkos::CudaSpace>::Lease* ws,
                  Kokkos::View<std::uint8_t*, Kokkos::CudaSpace>& payload, unsigned long long*& total) {
  if (!enabled() || n == 0 || log2_block != enc::kLog2Block) return false;
  const std::uint64_t nb = (n + enc::kBlock - 1) / enc::kBlock;
  if (nb >= (std::uint64_t(1) << 31)) return false;
  using WS = pipeline::Workspace<Kokkos::CudaSpace>;
  // The blocks' look-back states, the ticket, a word for the total.
  const auto states = WS::buffer<std::uint64_t>(ws, WS::kLosslessSizes, nb + 2, "ksz::lossless::states");
  // Every block stores at most its raw length.
  payload = WS::buffer<std::uint8_t>(ws, WS::kLosslessPayload, lossless::kHeaderBytes + 4 * nb + n,
                                     "ksz::lossless::payload");
  auto* const state = reinterpret_cast<unsigned long long*>(states.data());
  if (!total) total = state + nb + 1;  // zeroed below: 0 where there is no block
  const bool vec = reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(state, 0, (nb + 2) * sizeof(unsigned long long), st), "lossless encode states");
  // Resident blocks only (they take lossless blocks from the ticket until none is left).
  const auto run = [&](auto kernel) {
    const std::uint64_t resident = std::uint64_t(launch::resident_blocks(kernel, enc::kThreads, 0));
    const unsigned blocks = static_cast<unsigned>(nb < resident ? nb : resident);
    kernel<<<blocks, enc::kThreads, 0, st>>>(in, n, n_words, vec, payload.data(), state, state + nb, total);
  };
  bytes ? run(enc::encode_kernel<1>) : run(enc::encode_kernel<4>);
  check(cudaGetLastError(), "lossless encode_kernel");
  return true;
}
}  // namespace

bool lossless_encode(const Kokkos::Cuda& space, const std::uint8_t* in, std::uint64_t n, bool bytes, int log2_block,
                     pipeline::Workspace<Kokkos::CudaSpace>::Lease* ws,
                     Kokkos::View<std::uint8_t*, Kokkos::CudaSpace>& payload, std::uint64_t& size) {
  const HostResult slot;
  unsigned long long* total = slot.device<unsigned long long>();
  if (!queue_encode(space, in, n, nullptr, bytes, log2_block, ws, payload, total)) return false;
  check(cudaStreamSynchronize(space.cuda_stream()), "lossless encode");
  size = lossless::payload_bytes(n, enc::kLog2Block, slot.host<unsigned long long>()[0]);
  return true;
}

bool lossless_encode_words_queued(const Kokkos::Cuda& space, const std::uint32_t* words, const std::uint64_t* n_words,
                                  std::uint64_t max_words, bool bytes,
                                  pipeline::Workspace<Kokkos::CudaSpace>::Lease* ws,
                                  Kokkos::View<std::uint8_t*, Kokkos::CudaSpace>& payload,
                                  const unsigned long long*& total) {
  unsigned long long* t = nullptr;
  if (!ws || !queue_encode(space, reinterpret_cast<const std::uint8_t*>(words), 4 * max_words, n_words, bytes,
                           enc::kLog2Block, ws, payload, t))
    return false;
  total = t;
  return true;
}

}  // namespace ksz::cuda_spec
