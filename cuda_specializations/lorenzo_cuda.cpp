// CUDA specializations of the Lorenzo compressor's front end: value range and
// fused pre-quantization + prediction + quantization + histogram. See
// cuda_specializations.hpp for the contract (same results as portable/).
#include <cuda_runtime.h>

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

template bool finite_minmax<float>(const Kokkos::Cuda&, const float*, std::uint64_t, double&, double&);
template bool finite_minmax<double>(const Kokkos::Cuda&, const double*, std::uint64_t, double&, double&);
template bool lorenzo_fused_compress<float>(const Kokkos::Cuda&, const float*, const LorenzoShape&,
                                            const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                            std::uint64_t*, std::uint64_t&);
template bool lorenzo_fused_compress<double>(const Kokkos::Cuda&, const double*, const LorenzoShape&,
                                             const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                             std::uint64_t*, std::uint64_t&);

}  // namespace ksz::cuda_spec
