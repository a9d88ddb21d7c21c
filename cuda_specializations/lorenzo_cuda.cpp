// CUDA specializations of the Lorenzo compressor's front end: value range and
// fused pre-quantization + prediction + quantization + histogram. See
// cuda_specializations.hpp for the contract (same results as portable/).
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/cub.cuh>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/warp.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {

constexpr int kThreads = 256;

// ---------------------------------------------------------------- value range

template <class T>
__global__ void __launch_bounds__(kThreads) minmax_kernel(const T* __restrict__ in, std::uint64_t n,
                                                          double* __restrict__ block_out) {
  // Min/max of a type's values equal those of the values widened to double,
  // so compare in T and widen once.
  T mn = std::numeric_limits<T>::max(), mx = std::numeric_limits<T>::lowest();
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  // Four independent loads in flight per thread.
  for (; i + 3 * stride < n; i += 4 * stride) {
    T v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = in[i + k * stride];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (v[k] - v[k] == T(0)) {  // finite
        mn = v[k] < mn ? v[k] : mn;
        mx = v[k] > mx ? v[k] : mx;
      }
  }
  for (; i < n; i += stride) {
    const T v = in[i];
    if (v - v == T(0)) {
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
    }
  }
  mn = warp::reduce_min(mn);
  mx = warp::reduce_max(mx);
  __shared__ T smn[kThreads / 32], smx[kThreads / 32];
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  if (lane == 0) {
    smn[w] = mn;
    smx[w] = mx;
  }
  __syncthreads();
  if (w == 0) {
    mn = lane < kThreads / 32 ? smn[lane] : std::numeric_limits<T>::max();
    mx = lane < kThreads / 32 ? smx[lane] : std::numeric_limits<T>::lowest();
    mn = warp::reduce_min(mn);
    mx = warp::reduce_max(mx);
    if (lane == 0) {
      block_out[2 * blockIdx.x] = static_cast<double>(mn);
      block_out[2 * blockIdx.x + 1] = static_cast<double>(mx);
    }
  }
}

int sm_count() {
  static const int count = [] {
    int dev = 0, c = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev);
    return c > 0 ? c : 1;
  }();
  return count;
}

void check(cudaError_t e, const char* what) {
  KSZ_EXPECTS(e == cudaSuccess, "CUDA error in ", what, ": ", cudaGetErrorString(e));
}

}  // namespace

template <class T>
bool finite_minmax(const Kokkos::Cuda& space, const T* in, std::uint64_t n, double& mn, double& mx) {
  if (!enabled() || n == 0) return false;
  const std::uint64_t want = (n + kThreads * 16 - 1) / (kThreads * 16);
  const int blocks = static_cast<int>(want < std::uint64_t(sm_count()) * 8 ? want : std::uint64_t(sm_count()) * 8);
  Kokkos::View<double*, Kokkos::CudaSpace> part(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::minmax")),
                                                2 * blocks);
  minmax_kernel<T><<<blocks, kThreads, 0, space.cuda_stream()>>>(in, n, part.data());
  check(cudaGetLastError(), "minmax_kernel");
  std::vector<double> h(2 * blocks);
  check(cudaMemcpyAsync(h.data(), part.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost,
                        space.cuda_stream()),
        "minmax copy");
  check(cudaStreamSynchronize(space.cuda_stream()), "minmax sync");
  // The portable reduction's identity: max() / lowest() of double.
  mn = std::numeric_limits<double>::max();
  mx = std::numeric_limits<double>::lowest();
  for (int b = 0; b < blocks; ++b) {
    // A block that saw no finite value reports T's extremes, which are finite
    // values of double: recognise them and skip.
    const double bmn = h[2 * b], bmx = h[2 * b + 1];
    if (bmn > bmx) continue;
    mn = bmn < mn ? bmn : mn;
    mx = bmx > mx ? bmx : mx;
  }
  return true;
}

// ------------------------------------------- fused prequant/predict/histogram

namespace {

constexpr int kMaxChunk = 4096;         // q of a chunk staged in shared memory (16 KiB)
constexpr std::uint32_t kMaxBins = 8192;  // shared histogram (32 KiB)
constexpr std::uint32_t kHot = 32;        // bins around the center counted in registers

struct FusedGeo {
  std::uint64_t n0, n1, n2;
  std::uint32_t l0, l1, l2;     // log2 of the chunk extents
  std::uint64_t k0, k1, k2;     // chunks along each dimension
};

template <class T>
__global__ void __launch_bounds__(kThreads)
    fused_kernel(const T* __restrict__ in, FusedGeo g, quantize::QuantParams qp, std::uint32_t radius,
                 std::uint16_t* __restrict__ codes, unsigned long long* __restrict__ hist,
                 unsigned long long* __restrict__ verbatim) {
  extern __shared__ std::int32_t smem[];
  std::int32_t* q = smem;
  std::uint32_t* lh = reinterpret_cast<std::uint32_t*>(smem + kMaxChunk);
  const std::uint32_t nbins = 2 * radius;
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x) lh[b] = 0;
  const std::uint32_t lo = radius >= kHot / 2 ? radius - kHot / 2 : 0;
  std::uint32_t hot[kHot];
#pragma unroll
  for (std::uint32_t k = 0; k < kHot; ++k) hot[k] = 0;
  std::uint32_t verb = 0;

  const std::uint32_t c0 = 1u << g.l0, c1 = 1u << g.l1;
  const std::uint32_t m0 = c0 - 1, m1 = c1 - 1;
  const std::uint32_t elems = 1u << (g.l0 + g.l1 + g.l2);
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  const std::uint64_t s1 = g.n0, s2 = g.n0 * g.n1;
  const std::int64_t r = radius;
  for (std::uint64_t ch = blockIdx.x; ch < nchunks; ch += gridDim.x) {
    const std::uint64_t cx = ch % g.k0, t = ch / g.k0, cy = t % g.k1, cz = t / g.k1;
    const std::uint64_t x0 = cx << g.l0, y0 = cy << g.l1, z0 = cz << g.l2;
    __syncthreads();  // the previous chunk's q is consumed
    for (std::uint32_t e = threadIdx.x; e < elems; e += blockDim.x) {
      const std::uint64_t x = x0 + (e & m0), y = y0 + ((e >> g.l0) & m1), z = z0 + (e >> (g.l0 + g.l1));
      std::int32_t v = 0;
      if (x < g.n0 && y < g.n1 && z < g.n2) verb += quantize::prequantize<T>(in[x + y * s1 + z * s2], qp, v) ? 0 : 1;
      q[e] = v;
    }
    __syncthreads();
    for (std::uint32_t e = threadIdx.x; e < elems; e += blockDim.x) {
      const std::uint32_t lx = e & m0, ly = (e >> g.l0) & m1, lz = e >> (g.l0 + g.l1);
      const std::uint64_t x = x0 + lx, y = y0 + ly, z = z0 + lz;
      if (!(x < g.n0 && y < g.n1 && z < g.n2)) continue;
      // lorenzo::residual on the staged chunk: wrapping uint32 arithmetic.
      const bool hx = lx != 0, hy = ly != 0, hz = lz != 0;
      const std::uint32_t sx = 1, sy = c0, sz = c0 * c1;
      auto at = [&](bool ok, std::uint32_t off) -> std::uint32_t {
        return ok ? static_cast<std::uint32_t>(q[e - off]) : 0u;
      };
      std::uint32_t d = static_cast<std::uint32_t>(q[e]);
      d -= at(hx, sx) + at(hy, sy) + at(hz, sz);
      d += at(hx && hy, sx + sy) + at(hx && hz, sx + sz) + at(hy && hz, sy + sz);
      d -= at(hx && hy && hz, sx + sy + sz);
      const std::int32_t ds = static_cast<std::int32_t>(d);
      const std::uint32_t c = (ds > -r && ds < r) ? static_cast<std::uint32_t>(ds + r) : 0u;
      codes[x + y * s1 + z * s2] = static_cast<std::uint16_t>(c);
      const std::uint32_t dh = c - lo;  // wraps for c < lo
      if (dh < kHot) {
#pragma unroll
        for (std::uint32_t k = 0; k < kHot; ++k) hot[k] += dh == k ? 1u : 0u;
      } else {
        atomicAdd(&lh[c], 1u);
      }
    }
  }
  // Registers -> shared (one atomic per warp and hot bin) -> global.
#pragma unroll
  for (std::uint32_t k = 0; k < kHot; ++k) {
    const std::uint32_t s = warp::reduce_add(hot[k]);
    if ((threadIdx.x & 31) == 0 && s && lo + k < nbins) atomicAdd(&lh[lo + k], s);
  }
  const std::uint32_t vs = warp::reduce_add(verb);
  if ((threadIdx.x & 31) == 0 && vs) atomicAdd(verbatim, static_cast<unsigned long long>(vs));
  __syncthreads();
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x)
    if (lh[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(lh[b]));
}

int log2_exact(std::uint32_t c) {  // -1 unless c is a power of two
  if (c == 0 || (c & (c - 1))) return -1;
  int l = 0;
  while ((1u << l) < c) ++l;
  return l;
}

}  // namespace

template <class T>
bool lorenzo_fused_compress(const Kokkos::Cuda& space, const T* in, const LorenzoShape& s,
                            const quantize::QuantParams& qp, std::uint32_t radius, std::uint16_t* codes,
                            std::uint64_t* hist, std::uint64_t& n_verbatim) {
  if (!enabled()) return false;
  const int l0 = log2_exact(s.c0), l1 = log2_exact(s.c1), l2 = log2_exact(s.c2);
  if (l0 < 0 || l1 < 0 || l2 < 0 || (1u << (l0 + l1 + l2)) > unsigned(kMaxChunk)) return false;
  if (radius < 1 || 2 * std::uint64_t(radius) > kMaxBins) return false;
  const std::uint64_t n = s.n0 * s.n1 * s.n2;
  if (n == 0) return false;
  FusedGeo g{s.n0, s.n1, s.n2, std::uint32_t(l0), std::uint32_t(l1), std::uint32_t(l2),
             (s.n0 + s.c0 - 1) / s.c0, (s.n1 + s.c1 - 1) / s.c1, (s.n2 + s.c2 - 1) / s.c2};
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  const std::size_t shmem = kMaxChunk * sizeof(std::int32_t) + 2 * std::size_t(radius) * sizeof(std::uint32_t);
  // Enough resident blocks to fill the GPU; each walks several chunks and
  // flushes its histogram once.
  const std::uint64_t cap = std::uint64_t(sm_count()) * 8;
  const int blocks = static_cast<int>(nchunks < cap ? nchunks : cap);
  Kokkos::View<unsigned long long*, Kokkos::CudaSpace> verb(std::string("ksz::fused_verbatim"), 1);
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(hist, 0, 2 * std::size_t(radius) * sizeof(std::uint64_t), st), "histogram reset");
  fused_kernel<T><<<blocks, kThreads, shmem, st>>>(in, g, qp, radius, codes,
                                                   reinterpret_cast<unsigned long long*>(hist), verb.data());
  check(cudaGetLastError(), "fused_kernel");
  unsigned long long hv = 0;
  check(cudaMemcpyAsync(&hv, verb.data(), sizeof(hv), cudaMemcpyDeviceToHost, st), "verbatim count copy");
  check(cudaStreamSynchronize(st), "fused sync");
  n_verbatim = hv;
  return true;
}

// ------------------------------------------------ 3D fast path (16^3 chunks)
//
// 256 threads a 16^3 chunk. Global memory is touched in quads: four
// consecutive elements of an x-row per lane, four lanes a row, so one warp
// instruction covers eight whole 64-byte rows (measured on an H200 for
// 512 MiB of stores: 0.18 ms this way, 1.07 ms with a thread per row and
// 2.06 ms with scalar stores down a row: perf/probe/store_patterns.cu).
// The x-direction of the predictor (and of its inverse) is done in the quad
// and across the four lanes by shuffles; y and z go through a shared tile
// padded to 17 words a row. Prediction identity: with r = q - q(x-1) the
// x-differences, the 3D Lorenzo residual is r - r(y-1) - r(z-1) +
// r(y-1,z-1), all mod 2^32, equal to lorenzo::residual term by term.

namespace {

constexpr int kRowLen = 16;
constexpr int kRowPad = 17;
constexpr int kRows = 256;                 // threads a chunk, and rows of a chunk
constexpr std::uint32_t kMaxBins3 = 4096;  // shared histogram of the 3D path (16 KiB)

struct Geo3 {
  std::uint64_t n0, n1, n2;
  std::uint64_t k0, k1, k2;  // chunks along each dimension
};

struct Quad {
  std::uint64_t base;  // global index of the quad's first element
  int row, q;          // row of the chunk (y + 16 z) and quad within it
  int valid;           // elements of the quad inside the field, 0..4
};

// A chunk's origin, decomposed once per chunk (64-bit div/mod is dozens of
// instructions: per quad it was about two per element).
struct ChunkAt {
  std::uint64_t x0, y0, z0;
};

__device__ __forceinline__ ChunkAt chunk_at(const Geo3& g, std::uint64_t ch) {
  const std::uint64_t t = ch / g.k0, cz = t / g.k1;
  return ChunkAt{(ch - t * g.k0) * kRowLen, (t - cz * g.k1) * kRowLen, cz * kRowLen};
}

__device__ __forceinline__ Quad quad_of(const Geo3& g, const ChunkAt& c, int j) {
  Quad Q;
  Q.row = j >> 2;
  Q.q = j & 3;
  const std::uint64_t x = c.x0 + 4 * Q.q, y = c.y0 + (Q.row & 15), z = c.z0 + (Q.row >> 4);
  Q.base = x + g.n0 * (y + g.n1 * z);
  Q.valid = (y < g.n1 && z < g.n2 && x < g.n0) ? static_cast<int>(g.n0 - x < 4 ? g.n0 - x : 4) : 0;
  return Q;
}

template <class T>
__device__ __forceinline__ void load_quad(const T* __restrict__ in, const Quad& Q, bool aligned, T v[4]) {
  if (aligned && Q.valid == 4 && (Q.base * sizeof(T)) % 16 == 0) {
    if constexpr (sizeof(T) == 4) {
      const float4 f = __ldg(reinterpret_cast<const float4*>(in + Q.base));
      v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    } else {
      const double2 a = __ldg(reinterpret_cast<const double2*>(in + Q.base));
      const double2 b = __ldg(reinterpret_cast<const double2*>(in + Q.base) + 1);
      v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = i < Q.valid ? in[Q.base + i] : T(0);
  }
}

template <class T>
__device__ __forceinline__ void store_quad(T* __restrict__ out, const Quad& Q, bool aligned, const T v[4]) {
  if (aligned && Q.valid == 4 && (Q.base * sizeof(T)) % 16 == 0) {
    if constexpr (sizeof(T) == 4) {
      *reinterpret_cast<float4*>(out + Q.base) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      reinterpret_cast<double2*>(out + Q.base)[0] = make_double2(v[0], v[1]);
      reinterpret_cast<double2*>(out + Q.base)[1] = make_double2(v[2], v[3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (i < Q.valid) out[Q.base + i] = v[i];
  }
}

// Appends the flagged elements (bits of mask, at base + bit) to list with one
// atomic a warp; past cap only the count grows (the caller then falls back).
// A warp-collective: every lane calls it.
__device__ __forceinline__ void append_flagged(std::uint32_t mask, std::uint64_t base,
                                               unsigned long long* counter, std::uint64_t* list, std::uint64_t cap) {
  if (!__any_sync(warp::kFull, mask != 0)) return;  // the common case: one vote instead of a scan
  const std::uint32_t cnt = __popc(mask);
  const std::uint32_t incl = warp::scan_inclusive(cnt);
  const std::uint32_t total = __shfl_sync(warp::kFull, incl, 31);
  if (total == 0) return;
  unsigned long long start = 0;
  if ((threadIdx.x & 31) == 31) start = atomicAdd(counter, static_cast<unsigned long long>(total));
  start = __shfl_sync(warp::kFull, start, 31);
  std::uint64_t at = start + incl - cnt;
  while (mask) {
    const int k = __ffs(mask) - 1;
    mask &= mask - 1;
    if (at < cap) list[at] = base + k;
    ++at;
  }
}

// The 3D kernel's histogram: the 8 codes from hot0 (radius - 4: 81% of the
// codes at REL 1e-4 on a turbulent field, 97% at 1e-3) count in 8-bit fields
// of one register per thread, added into the block's shared histogram every
// kHotFlush chunks (16 elements a thread a chunk: at most 240 a field); the
// rest by shared atomics. __match_any_sync per element, which aggregated equal
// codes before, made the kernel MIO-bound, as it did the checker's PDF pass.
constexpr int kHotBins = 8, kHotFlush = 15;

// Adds the warp's hot counts to lh and clears them. A warp-collective.
__device__ __forceinline__ void flush_hot(unsigned long long& acc, std::uint32_t* lh, std::uint32_t hot0,
                                          std::uint32_t nbins) {
  // Fields of 16 bits for the sum over 32 lanes (at most 7,680): even and odd bins apart.
  unsigned long long even = acc & 0x00FF00FF00FF00FFull, odd = (acc >> 8) & 0x00FF00FF00FF00FFull;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    even += __shfl_xor_sync(warp::kFull, even, o);
    odd += __shfl_xor_sync(warp::kFull, odd, o);
  }
  const int b = threadIdx.x & 31;
  if (b < kHotBins) {
    const std::uint32_t cnt = static_cast<std::uint32_t>(((b & 1) ? odd : even) >> (16 * (b >> 1))) & 0xFFFFu;
    if (cnt && hot0 + b < nbins) atomicAdd(&lh[hot0 + b], cnt);
  }
  acc = 0;
}

template <class T>
__global__ void __launch_bounds__(kRows)
    fused3d_kernel(const T* __restrict__ in, Geo3 g, bool aligned, quantize::QuantParams qp, std::uint32_t radius,
                   std::uint16_t* __restrict__ codes, unsigned long long* __restrict__ hist,
                   unsigned long long* __restrict__ counters, std::uint64_t* __restrict__ out_list,
                   std::uint64_t* __restrict__ verb_list, std::uint64_t cap) {
  __shared__ std::uint32_t rs[kRows * kRowPad];
  extern __shared__ std::uint32_t lh[];
  const std::uint32_t nbins = 2 * radius;
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x) lh[b] = 0;
  const int t = threadIdx.x;
  const std::int32_t R = static_cast<std::int32_t>(radius);
  const std::uint32_t hot0 = radius > kHotBins / 2 ? radius - kHotBins / 2 : 0u;
  unsigned long long hot = 0;
  int since_flush = 0;
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  for (std::uint64_t ch = blockIdx.x; ch < nchunks; ch += gridDim.x) {
    if (since_flush++ == kHotFlush) {  // block-uniform
      flush_hot(hot, lh, hot0, nbins);
      since_flush = 1;
    }
    const ChunkAt cpos = chunk_at(g, ch);
    std::uint32_t r[4][4];
    std::uint32_t vmask[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const Quad Q = quad_of(g, cpos, t + kRows * m);
      T v[4];
      load_quad<T>(in, Q, aligned, v);
      std::uint32_t qv[4];
      vmask[m] = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        std::int32_t qi = 0;
        if (i < Q.valid && !quantize::prequantize<T>(v[i], qp, qi)) vmask[m] |= 1u << i;
        qv[i] = static_cast<std::uint32_t>(qi);
      }
      // The element before the quad's first: the last of the lane before, 0 at the row start.
      std::uint32_t prev = __shfl_up_sync(warp::kFull, qv[3], 1, 4);
      if (Q.q == 0) prev = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        r[m][i] = qv[i] - prev;
        prev = qv[i];
      }
    }
    __syncthreads();  // the previous chunk's tile is consumed
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int j = t + kRows * m, row = j >> 2, q = j & 3;
#pragma unroll
      for (int i = 0; i < 4; ++i) rs[row * kRowPad + 4 * q + i] = r[m][i];
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const Quad Q = quad_of(g, cpos, t + kRows * m);
      const bool hy = (Q.row & 15) != 0, hz = (Q.row >> 4) != 0;
      std::uint32_t c[4];
      std::uint32_t omask = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int at = Q.row * kRowPad + 4 * Q.q + i;
        std::uint32_t d = r[m][i];
        if (hy) d -= rs[at - kRowPad];
        if (hz) d -= rs[at - 16 * kRowPad];
        if (hy && hz) d += rs[at - 17 * kRowPad];
        const std::int32_t ds = static_cast<std::int32_t>(d);
        c[i] = (ds > -R && ds < R) ? static_cast<std::uint32_t>(ds + R) : 0u;
        if (c[i] == 0 && i < Q.valid) omask |= 1u << i;
      }
      if (aligned && Q.valid == 4 && Q.base % 4 == 0) {
        *reinterpret_cast<uint2*>(codes + Q.base) = make_uint2(c[0] | c[1] << 16, c[2] | c[3] << 16);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (i < Q.valid) codes[Q.base + i] = static_cast<std::uint16_t>(c[i]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (i >= Q.valid) continue;
        const std::uint32_t h = c[i] - hot0;
        if (h < kHotBins)
          hot += 1ull << (8 * h);
        else
          atomicAdd(&lh[c[i]], 1u);
      }
      append_flagged(omask, Q.base, &counters[1], out_list, cap);
      append_flagged(vmask[m], Q.base, &counters[0], verb_list, cap);
    }
  }
  flush_hot(hot, lh, hot0, nbins);
  __syncthreads();
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x)
    if (lh[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(lh[b]));
}

// The residual of outlier element i: a binary search of the increasing index
// list (outliers are rare; this replaces a dense n-element scatter array).
// 0 when i is not listed: the caller's count checks then reject the stream.
__device__ __forceinline__ std::int32_t outlier_at(const std::uint64_t* __restrict__ idx,
                                                   const std::int32_t* __restrict__ val, std::uint64_t count,
                                                   std::uint64_t i) {
  std::uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (idx[mid] < i)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < count && idx[lo] == i ? val[lo] : 0;
}

template <class T>
__global__ void __launch_bounds__(kRows)
    inverse3d_kernel(const std::uint16_t* __restrict__ codes, const std::uint64_t* __restrict__ oidx,
                     const std::int32_t* __restrict__ oval, std::uint64_t n_out, Geo3 g,
                     bool aligned_codes, bool aligned_out, std::uint32_t radius, double step, T* __restrict__ out,
                     unsigned long long* __restrict__ zeros) {
  __shared__ std::uint32_t s[kRows * kRowPad];
  const int t = threadIdx.x;
  const int cx = t & 15, cw = t >> 4;  // column walks: x and the other in-chunk index
  std::uint32_t zc = 0;
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  for (std::uint64_t ch = blockIdx.x; ch < nchunks; ch += gridDim.x) {
    const ChunkAt cpos = chunk_at(g, ch);
    __syncthreads();  // the previous chunk's tile is consumed
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const Quad Q = quad_of(g, cpos, t + kRows * m);
      std::uint32_t c[4];
      if (aligned_codes && Q.valid == 4 && Q.base % 4 == 0) {
        const uint2 u = __ldg(reinterpret_cast<const uint2*>(codes + Q.base));
        c[0] = u.x & 0xFFFFu, c[1] = u.x >> 16, c[2] = u.y & 0xFFFFu, c[3] = u.y >> 16;
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) c[i] = i < Q.valid ? codes[Q.base + i] : radius;  // radius: residual 0
      }
      std::uint32_t v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (c[i] == 0) {
          ++zc;
          v[i] = static_cast<std::uint32_t>(outlier_at(oidx, oval, n_out, Q.base + i));
        } else {
          v[i] = c[i] - radius;
        }
      }
      // Prefix sum along x: inside the quad, then across the row's four lanes.
      v[1] += v[0], v[2] += v[1], v[3] += v[2];
      std::uint32_t incl = v[3];
#pragma unroll
      for (int d = 1; d < 4; d <<= 1) {
        const std::uint32_t u = __shfl_up_sync(warp::kFull, incl, d, 4);
        if (Q.q >= d) incl += u;
      }
      const std::uint32_t before = incl - v[3];
#pragma unroll
      for (int i = 0; i < 4; ++i) s[Q.row * kRowPad + 4 * Q.q + i] = v[i] + before;
    }
    __syncthreads();
    std::uint32_t acc = 0;  // along y: rows cw*16 + y
#pragma unroll
    for (int y = 0; y < 16; ++y) {
      const int i = (cw * 16 + y) * kRowPad + cx;
      acc += s[i];
      s[i] = acc;
    }
    __syncthreads();
    acc = 0;  // along z: rows z*16 + cw
#pragma unroll
    for (int z = 0; z < 16; ++z) {
      const int i = (z * 16 + cw) * kRowPad + cx;
      acc += s[i];
      s[i] = acc;
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const Quad Q = quad_of(g, cpos, t + kRows * m);
      T v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        v[i] = quantize::reconstruct<T>(static_cast<std::int32_t>(s[Q.row * kRowPad + 4 * Q.q + i]), step);
      store_quad<T>(out, Q, aligned_out, v);
    }
  }
  zc = warp::reduce_add(zc);
  if ((t & 31) == 0 && zc) atomicAdd(zeros, static_cast<unsigned long long>(zc));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

using WS = pipeline::Workspace<Kokkos::CudaSpace>;

// Sorts count keys of idx increasingly through alt (CUB's double buffer);
// returns the buffer that holds the result.
std::uint64_t* sort_indices(const Kokkos::Cuda& space, std::uint64_t* idx, std::uint64_t* alt, std::uint64_t count,
                            std::uint64_t n, WS::Lease& ws) {
  if (count < 2) return idx;
  int end_bit = 1;
  while (end_bit < 64 && (std::uint64_t(1) << end_bit) < n) ++end_bit;
  cub::DoubleBuffer<std::uint64_t> keys(idx, alt);
  std::size_t temp_bytes = 0;
  check(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys, static_cast<int>(count), 0, end_bit,
                                       space.cuda_stream()),
        "radix sort size");
  auto temp = ws.get<unsigned char>(WS::kSortTemp, temp_bytes, "ksz::sort_temp");
  check(cub::DeviceRadixSort::SortKeys(temp.data(), temp_bytes, keys, static_cast<int>(count), 0, end_bit,
                                       space.cuda_stream()),
        "radix sort");
  return keys.Current();
}

}  // namespace

template <class T>
bool lorenzo_fused_compress3d(const Kokkos::Cuda& space, const T* in, const LorenzoShape& s,
                              const quantize::QuantParams& qp, std::uint32_t radius, std::uint16_t* codes,
                              std::uint64_t* hist, FusedLists& lists, WS::Lease& ws) {
  if (!enabled()) return false;
  if (s.c0 != kRowLen || s.c1 != kRowLen || s.c2 != kRowLen) return false;
  if (radius < 1 || 2 * std::uint64_t(radius) > kMaxBins3) return false;
  const std::uint64_t n = s.n0 * s.n1 * s.n2;
  if (n == 0 || n > (std::uint64_t(1) << 31) * 64) return false;
  const Geo3 g{s.n0, s.n1, s.n2, (s.n0 + 15) / 16, (s.n1 + 15) / 16, (s.n2 + 15) / 16};
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  // Lists sized for the usual case; a field with more outliers than this
  // takes the compaction path (the count is still exact). The radix sort
  // takes int counts.
  const std::uint64_t cap = std::min<std::uint64_t>({std::max<std::uint64_t>(65536, n / 64), n, 0x7FFFFFFFull});
  auto ol = ws.get<std::uint64_t>(WS::kOutliers, cap, "ksz::outlier_index");
  auto vl = ws.get<std::uint64_t>(WS::kVerbatim, cap, "ksz::verbatim_index");
  auto counters = ws.get<unsigned long long>(WS::kCounters, 2, "ksz::fused_counters");
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(counters.data(), 0, 2 * sizeof(unsigned long long), st), "counters reset");
  check(cudaMemsetAsync(hist, 0, 2 * std::size_t(radius) * sizeof(std::uint64_t), st), "histogram reset");
  const std::uint64_t blocks_cap = std::uint64_t(sm_count()) * 8;
  const int blocks = static_cast<int>(nchunks < blocks_cap ? nchunks : blocks_cap);
  fused3d_kernel<T><<<blocks, kRows, 2 * std::size_t(radius) * sizeof(std::uint32_t), st>>>(
      in, g, aligned16(in) && aligned16(codes), qp, radius, codes, reinterpret_cast<unsigned long long*>(hist),
      counters.data(), ol.data(), vl.data(), cap);
  check(cudaGetLastError(), "fused3d_kernel");
  unsigned long long hc[2] = {0, 0};
  check(cudaMemcpyAsync(hc, counters.data(), sizeof(hc), cudaMemcpyDeviceToHost, st), "fused counters copy");
  check(cudaStreamSynchronize(st), "fused3d sync");
  lists.n_verbatim = hc[0];
  lists.n_outliers = hc[1];
  lists.valid = hc[0] <= cap && hc[1] <= cap;
  if (lists.valid) {
    std::uint64_t* o = ol.data();
    std::uint64_t* v = vl.data();
    auto oa = ws.get<std::uint64_t>(WS::kOutliersAlt, hc[1], "ksz::outlier_alt");
    auto va = ws.get<std::uint64_t>(WS::kVerbatimAlt, hc[0], "ksz::verbatim_alt");
    o = sort_indices(space, o, oa.data(), hc[1], n, ws);
    v = sort_indices(space, v, va.data(), hc[0], n, ws);
    lists.keep[0] = ol, lists.keep[1] = vl, lists.keep[2] = oa, lists.keep[3] = va;
    lists.outlier_idx = Kokkos::View<std::uint64_t*, Kokkos::CudaSpace>(o, hc[1]);
    lists.verbatim_idx = Kokkos::View<std::uint64_t*, Kokkos::CudaSpace>(v, hc[0]);
  }
  return true;
}

template <class T>
bool lorenzo_inverse3d(const Kokkos::Cuda& space, const std::uint16_t* codes, const std::uint64_t* oidx,
                       const std::int32_t* oval, std::uint64_t n_out, const LorenzoShape& s, std::uint32_t radius,
                       double step, T* out, std::uint64_t& zeros) {
  if (!enabled()) return false;
  if (s.c0 != kRowLen || s.c1 != kRowLen || s.c2 != kRowLen) return false;
  const std::uint64_t n = s.n0 * s.n1 * s.n2;
  if (n == 0) return false;
  const Geo3 g{s.n0, s.n1, s.n2, (s.n0 + 15) / 16, (s.n1 + 15) / 16, (s.n2 + 15) / 16};
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  Kokkos::View<unsigned long long*, Kokkos::CudaSpace> z(std::string("ksz::inverse_zeros"), 1);
  cudaStream_t st = space.cuda_stream();
  const std::uint64_t blocks_cap = std::uint64_t(sm_count()) * 8;
  const int blocks = static_cast<int>(nchunks < blocks_cap ? nchunks : blocks_cap);
  inverse3d_kernel<T><<<blocks, kRows, 0, st>>>(codes, oidx, oval, n_out, g, aligned16(codes), aligned16(out), radius,
                                                step, out,
                                                z.data());
  check(cudaGetLastError(), "inverse3d_kernel");
  unsigned long long hz = 0;
  check(cudaMemcpyAsync(&hz, z.data(), sizeof(hz), cudaMemcpyDeviceToHost, st), "inverse zeros copy");
  check(cudaStreamSynchronize(st), "inverse3d sync");
  zeros = hz;
  return true;
}

template bool lorenzo_fused_compress3d<float>(const Kokkos::Cuda&, const float*, const LorenzoShape&,
                                              const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                              std::uint64_t*, FusedLists&, WS::Lease&);
template bool lorenzo_fused_compress3d<double>(const Kokkos::Cuda&, const double*, const LorenzoShape&,
                                               const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                               std::uint64_t*, FusedLists&, WS::Lease&);
template bool lorenzo_inverse3d<float>(const Kokkos::Cuda&, const std::uint16_t*, const std::uint64_t*,
                                       const std::int32_t*, std::uint64_t, const LorenzoShape&, std::uint32_t, double,
                                       float*, std::uint64_t&);
template bool lorenzo_inverse3d<double>(const Kokkos::Cuda&, const std::uint16_t*, const std::uint64_t*,
                                       const std::int32_t*, std::uint64_t, const LorenzoShape&, std::uint32_t, double,
                                       double*, std::uint64_t&);

template bool finite_minmax<float>(const Kokkos::Cuda&, const float*, std::uint64_t, double&, double&);
template bool finite_minmax<double>(const Kokkos::Cuda&, const double*, std::uint64_t, double&, double&);
template bool lorenzo_fused_compress<float>(const Kokkos::Cuda&, const float*, const LorenzoShape&,
                                            const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                            std::uint64_t*, std::uint64_t&);
template bool lorenzo_fused_compress<double>(const Kokkos::Cuda&, const double*, const LorenzoShape&,
                                             const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                             std::uint64_t*, std::uint64_t&);

}  // namespace ksz::cuda_spec
