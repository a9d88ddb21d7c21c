// CUDA specialization of the lossless pass's skip test
// (portable/lossless/lossless.hpp, coded_lower_bound: the reference).
#include <cuda_runtime.h>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/host_result.hpp"
#include "cuda_specializations/launch.hpp"
#include "cuda_specializations/warp.hpp"
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

}  // namespace ksz::cuda_spec
