// CUDA specialization of the SZx block coder (szx-ultrafast section V-B): a
// warp per block instead of a Kokkos team, so no team barriers, no shared
// reductions and no per-block host work. See cuda_specializations.hpp for the
// contract: same bytes as portable/predict/szx (its helpers are reused here,
// so every float decision is the same expression).
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cstdint>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/warp.hpp"
#include "portable/predict/szx/szx.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {

constexpr int kThreads = 256;  // 8 warps, 8 blocks of SZx per CUDA block
constexpr int kWarps = kThreads / 32;
constexpr std::uint32_t kChunk = 128;  // values a warp handles per step (4 per lane)

void check(cudaError_t e, const char* what) {
  KSZ_EXPECTS(e == cudaSuccess, "CUDA error in ", what, ": ", cudaGetErrorString(e));
}

unsigned grid_of(std::uint64_t nb) { return static_cast<unsigned>((nb + kWarps - 1) / kWarps); }

// The `valid` (0..4) values from p[0]: one or two 16-byte loads when all four
// are there and aligned.
template <class T>
__device__ __forceinline__ void load4(const T* __restrict__ p, int valid, T v[4]) {
  if (valid == 4 && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0) {
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
template <class T>
__device__ __forceinline__ void store4(T* __restrict__ p, int valid, const T v[4]) {
  if (valid == 4 && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0) {
    if constexpr (sizeof(T) == 4) {
      *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      reinterpret_cast<double2*>(p)[0] = make_double2(v[0], v[1]);
      reinterpret_cast<double2*>(p)[1] = make_double2(v[2], v[3]);
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
        // The bound by the fast test in T (szx::host::fast_bound: passing it
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
  const bool ok = k == szx::kConstant || k == szx::kVerbatim || (k >= szx::Bits<T>::kSignExp && k <= szx::Bits<T>::kTotal);
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
  plan_kernel<T><<<grid_of(nb), kThreads, 0, st>>>(in, n, block, nb, bound, szx::host::fast_bound(bound, T()), kinds,
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
                              const T*, T*);
KSZ_SZX_CUDA(float)
KSZ_SZX_CUDA(double)
#undef KSZ_SZX_CUDA

}  // namespace ksz::cuda_spec
