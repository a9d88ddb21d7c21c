// CUDA specialization of the quality engine's pattern 1 (cuZ-Checker section
// IV): every scalar metric in one read of both arrays. See metrics_cuda.hpp
// for the contract (same results as portable/metrics/metrics.hpp's Pattern1).
#include <cuda_runtime.h>

#include <cmath>
#include <limits>

#include "cuda_specializations/metrics_cuda.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {

using metrics::impl::P1Acc;

constexpr int kThreads = 256;
// 16-byte loads of each array in flight per thread and iteration: with 2
// blocks of 256 threads per SM (the register budget) 2 left HBM at 28% (ncu).
constexpr int kUnroll = 4;

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = float4;
  static constexpr int width = 4;
  __device__ static void unpack(const float4& v, float* o) {
    o[0] = v.x;
    o[1] = v.y;
    o[2] = v.z;
    o[3] = v.w;
  }
};
template <>
struct Vec<double> {
  using type = double2;
  static constexpr int width = 2;
  __device__ static void unpack(const double2& v, double* o) {
    o[0] = v.x;
    o[1] = v.y;
  }
};

template <class T>
struct Args {
  const T* a;
  const T* b;
  const std::uint8_t* mask;  // nullptr: none
  std::uint64_t n;
  std::uint64_t head;  // scalar elements before the first 16-byte vector of a (== n: no vectors)
  std::uint64_t nvec;  // 16-byte vectors of both arrays from head on
  T fill_le;           // |x| <= fill_le  <=>  |double(x)| < fill (the portable test, compared in T)
  double shift;
};

// Per-thread state. The value ranges of a and b are kept in T: min/max of
// values widened to double equal the widened min/max, and float compares are
// cheaper than double ones (double throughput bounds this kernel).
template <class T>
struct Local {
  P1Acc v;
  T min_a, max_a, min_b, max_b;

  __device__ void init() {
    const double big = Kokkos::reduction_identity<double>::min();  // the portable identity
    v.cnt = v.excl = v.decbad = v.npwr = 0;
    v.imax = ~std::uint64_t(0);
    v.min_e = v.min_p = big;
    v.max_e = v.max_p = -big;
    v.max_abs = -1;
    v.sum_e = v.sum_abs = v.sum_e2 = v.sum_p = v.sa = v.sb = v.saa = v.sbb = v.sab = 0;
    min_a = min_b = std::numeric_limits<T>::max();
    max_a = max_b = std::numeric_limits<T>::lowest();
  }

  // Pattern1::operator() with the validity tests done in T (exact: finiteness
  // and |x| <= fill_le are the same predicates on the same values).
  __device__ __forceinline__ void add(const Args<T>& g, std::uint64_t i, T x, T y, bool keep) {
    const bool ok = keep && x - x == T(0) && (x < T(0) ? -x : x) <= g.fill_le;
    if (!(ok && y - y == T(0))) {
      ++v.excl;
      if (ok) ++v.decbad;
      return;
    }
    const double xd = double(x), yd = double(y), e = yd - xd, ae = ::fabs(e);
    ++v.cnt;
    // A thread visits its indices in increasing order, so on a tie the held
    // index is the smaller one: Pattern1's tie-break without its second compare.
    if (ae > v.max_abs) {
      v.max_abs = ae;
      v.imax = i;
    }
    if (e < v.min_e) v.min_e = e;
    if (e > v.max_e) v.max_e = e;
    v.sum_e += e;
    v.sum_abs += ae;
    v.sum_e2 += e * e;
    if (x != T(0)) {
      const double p = ae / ::fabs(xd);
      ++v.npwr;
      if (p < v.min_p) v.min_p = p;
      if (p > v.max_p) v.max_p = p;
      v.sum_p += p;
    }
    if (x < min_a) min_a = x;
    if (x > max_a) max_a = x;
    if (y < min_b) min_b = y;
    if (y > max_b) max_b = y;
    const double xs = xd - g.shift, ys = yd - g.shift;
    v.sa += xs;
    v.sb += ys;
    v.saa += xs * xs;
    v.sbb += ys * ys;
    v.sab += xs * ys;
  }

  // The P1Acc this thread contributes: ranges widened, the double identity
  // where the thread saw no compared element.
  __device__ P1Acc finish() const {
    P1Acc r = v;
    const double big = Kokkos::reduction_identity<double>::min();
    r.min_a = v.cnt ? double(min_a) : big;
    r.max_a = v.cnt ? double(max_a) : -big;
    r.min_b = v.cnt ? double(min_b) : big;
    r.max_b = v.cnt ? double(max_b) : -big;
    return r;
  }
};

__device__ __forceinline__ P1Acc identity() {
  const double big = Kokkos::reduction_identity<double>::min();
  P1Acc v;
  v.cnt = v.excl = v.decbad = v.npwr = 0;
  v.imax = ~std::uint64_t(0);
  v.min_e = v.min_p = v.min_a = v.min_b = big;
  v.max_e = v.max_p = v.max_a = v.max_b = -big;
  v.max_abs = -1;
  v.sum_e = v.sum_abs = v.sum_e2 = v.sum_p = v.sa = v.sb = v.saa = v.sbb = v.sab = 0;
  return v;
}

// Pattern1::merge, field for field (the same tie-break on the max-error index).
__device__ __forceinline__ void merge(P1Acc& d, const P1Acc& s) {
  d.cnt += s.cnt;
  d.excl += s.excl;
  d.decbad += s.decbad;
  d.npwr += s.npwr;
  if (s.max_abs > d.max_abs || (s.max_abs == d.max_abs && s.imax < d.imax)) {
    d.max_abs = s.max_abs;
    d.imax = s.imax;
  }
  d.min_e = s.min_e < d.min_e ? s.min_e : d.min_e;
  d.max_e = s.max_e > d.max_e ? s.max_e : d.max_e;
  d.min_p = s.min_p < d.min_p ? s.min_p : d.min_p;
  d.max_p = s.max_p > d.max_p ? s.max_p : d.max_p;
  d.min_a = s.min_a < d.min_a ? s.min_a : d.min_a;
  d.max_a = s.max_a > d.max_a ? s.max_a : d.max_a;
  d.min_b = s.min_b < d.min_b ? s.min_b : d.min_b;
  d.max_b = s.max_b > d.max_b ? s.max_b : d.max_b;
  d.sum_e += s.sum_e;
  d.sum_abs += s.sum_abs;
  d.sum_e2 += s.sum_e2;
  d.sum_p += s.sum_p;
  d.sa += s.sa;
  d.sb += s.sb;
  d.saa += s.saa;
  d.sbb += s.sbb;
  d.sab += s.sab;
}

// The accumulator is a sequence of 8-byte words (static_assert below); one
// shuffle pair per word.
constexpr int kWords = sizeof(P1Acc) / 8;
static_assert(sizeof(P1Acc) % 8 == 0, "P1Acc must be whole 8-byte words");

__device__ __forceinline__ P1Acc shfl_down(const P1Acc& v, int o) {
  P1Acc r;
  const auto* src = reinterpret_cast<const unsigned long long*>(&v);
  auto* dst = reinterpret_cast<unsigned long long*>(&r);
#pragma unroll
  for (int k = 0; k < kWords; ++k) dst[k] = __shfl_down_sync(0xFFFFFFFFu, src[k], o);
  return r;
}

// The block's reduction, valid in thread 0. Fixed shape: deterministic.
__device__ __forceinline__ P1Acc block_reduce(P1Acc v) {
  __shared__ P1Acc warps[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) merge(v, shfl_down(v, o));
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  if (lane == 0) warps[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < kThreads / 32 ? warps[lane] : identity();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) merge(v, shfl_down(v, o));
  }
  return v;
}

template <class T>
__global__ void __launch_bounds__(kThreads, 2) pattern1_kernel(Args<T> g, P1Acc* __restrict__ parts) {
  using V = Vec<T>;
  constexpr int W = V::width;
  Local<T> acc;
  acc.init();
  const std::uint64_t stride = std::uint64_t(gridDim.x) * kThreads;
  const std::uint64_t tid = std::uint64_t(blockIdx.x) * kThreads + threadIdx.x;
  const T* __restrict__ a = g.a;
  const T* __restrict__ b = g.b;
  const std::uint8_t* __restrict__ m = g.mask;

  for (std::uint64_t i = tid; i < g.head; i += stride) acc.add(g, i, a[i], b[i], !m || m[i] != 0);

  const auto* va = reinterpret_cast<const typename V::type*>(a + g.head);
  const auto* vb = reinterpret_cast<const typename V::type*>(b + g.head);
  std::uint64_t k = tid;
  for (; k + (kUnroll - 1) * stride < g.nvec; k += kUnroll * stride) {
    typename V::type ra[kUnroll], rb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      ra[u] = __ldg(va + k + u * stride);
      rb[u] = __ldg(vb + k + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      T x[W], y[W];
      V::unpack(ra[u], x);
      V::unpack(rb[u], y);
      const std::uint64_t i0 = g.head + (k + u * stride) * W;
#pragma unroll
      for (int j = 0; j < W; ++j) acc.add(g, i0 + j, x[j], y[j], !m || m[i0 + j] != 0);
    }
  }
  for (; k < g.nvec; k += stride) {
    T x[W], y[W];
    V::unpack(__ldg(va + k), x);
    V::unpack(__ldg(vb + k), y);
    const std::uint64_t i0 = g.head + k * W;
#pragma unroll
    for (int j = 0; j < W; ++j) acc.add(g, i0 + j, x[j], y[j], !m || m[i0 + j] != 0);
  }

  for (std::uint64_t i = g.head + g.nvec * W + tid; i < g.n; i += stride)
    acc.add(g, i, a[i], b[i], !m || m[i] != 0);

  const P1Acc r = block_reduce(acc.finish());
  if (threadIdx.x == 0) parts[blockIdx.x] = r;
}

// One block folds the partials: thread t takes t, t + kThreads, ... in order.
__global__ void __launch_bounds__(kThreads) combine_kernel(const P1Acc* __restrict__ parts, int nparts,
                                                           P1Acc* __restrict__ out) {
  P1Acc v = identity();
  for (int p = threadIdx.x; p < nparts; p += kThreads) merge(v, parts[p]);
  v = block_reduce(v);
  if (threadIdx.x == 0) *out = v;
}

void check(cudaError_t e, const char* what) {
  KSZ_EXPECTS(e == cudaSuccess, "CUDA error in ", what, ": ", cudaGetErrorString(e));
}

// Resident blocks of pattern1_kernel<T> on the device (once per type).
template <class T>
int resident_blocks() {
  static const int blocks = [] {
    int dev = 0, sms = 0, per_sm = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pattern1_kernel<T>, kThreads, 0), "occupancy");
    return (sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
  }();
  return blocks;
}

// The largest T whose magnitude passes |double(x)| < fill (NaN when fill is:
// then nothing passes, as in the portable test).
template <class T>
T fill_le_of(double fill) {
  if (std::isnan(fill)) return std::numeric_limits<T>::quiet_NaN();
  T f = static_cast<T>(fill);  // nearest: at most one step above
  if (double(f) >= fill) f = std::nextafter(f, T(0));
  return f;
}

}  // namespace

template <class T>
bool metrics_pattern1(const Kokkos::Cuda& space, const MetricsFields<T>& f, double shift, P1Acc& out) {
  if (!enabled() || f.n == 0) return false;
  constexpr int W = Vec<T>::width;
  Args<T> g{f.orig, f.dec, f.mask, f.n, f.n, 0, fill_le_of<T>(f.fill), shift};
  const auto ua = reinterpret_cast<std::uintptr_t>(f.orig), ub = reinterpret_cast<std::uintptr_t>(f.dec);
  // Vector loads need both arrays at the same offset from a 16-byte boundary
  // and T-aligned; otherwise every element goes the scalar way.
  if (ua % sizeof(T) == 0 && (ub - ua) % 16 == 0) {
    const std::uint64_t head = ((16 - ua % 16) % 16) / sizeof(T);
    if (head < f.n) {
      g.head = head;
      g.nvec = (f.n - head) / W;
    }
  }
  const std::uint64_t work = g.nvec + (g.nvec ? 0 : f.n);  // scalar-only: an element per vector
  const std::uint64_t want = (work + std::uint64_t(kThreads) * kUnroll - 1) / (std::uint64_t(kThreads) * kUnroll);
  const int blocks = static_cast<int>(want < std::uint64_t(resident_blocks<T>()) ? want : resident_blocks<T>());

  pipeline::Workspace<Kokkos::CudaSpace>::Lease ws;
  auto parts = ws.get<P1Acc>(pipeline::Workspace<Kokkos::CudaSpace>::kMetrics, blocks + 1, "ksz::metrics::parts");
  P1Acc* d_out = parts.data() + blocks;
  pattern1_kernel<T><<<blocks, kThreads, 0, space.cuda_stream()>>>(g, parts.data());
  check(cudaGetLastError(), "pattern1_kernel");
  combine_kernel<<<1, kThreads, 0, space.cuda_stream()>>>(parts.data(), blocks, d_out);
  check(cudaGetLastError(), "combine_kernel");
  check(cudaMemcpyAsync(&out, d_out, sizeof(P1Acc), cudaMemcpyDeviceToHost, space.cuda_stream()), "pattern1 copy");
  check(cudaStreamSynchronize(space.cuda_stream()), "pattern1 sync");
  return true;
}

template bool metrics_pattern1<float>(const Kokkos::Cuda&, const MetricsFields<float>&, double, P1Acc&);
template bool metrics_pattern1<double>(const Kokkos::Cuda&, const MetricsFields<double>&, double, P1Acc&);

}  // namespace ksz::cuda_spec
