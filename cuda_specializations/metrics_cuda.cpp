// CUDA specializations of the quality engine's three patterns (cuZ-Checker
// section IV): every scalar metric in one read of both arrays, the stencils
// and autocorrelation, and SSIM. See metrics_cuda.hpp
// for the contract (same results as portable/metrics/metrics.hpp's Pattern1).
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "cuda_specializations/host_result.hpp"
#include "cuda_specializations/launch.hpp"
#include "cuda_specializations/metrics_cuda.hpp"
#include "portable/quantize/prequant.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {

using metrics::impl::P1Acc;
using metrics::impl::P2Acc;
using metrics::impl::P3Acc;

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
  const T* shift_at;   // when set, shift = *shift_at if compared (|x| <= fill_le), else 0 (the
                       // portable rule), read on the device: no host round trip before the pass
};

// Per-thread state, exact: every element goes through add(). The value
// ranges of a and b are kept in T (min/max of values widened to double equal
// the widened min/max, and T compares are cheaper). The largest |error| is not
// tracked: it is max(|min_e|, |max_e|), and its index the first index of the
// extreme that gives it (of both on a tie), since a thread visits its indices
// in increasing order and keeps the first of equal extremes. Counts: only the
// rare ones per element; cnt = visits - excl and npwr = cnt - zeros.
template <class T>
struct Local {
  // The second moments of b come from those of a and the error (ys = xs + e):
  // sb = sa + sum_e, sab = saa + sxe, sbb = saa + 2 sxe + sum_e2, formed once
  // in finish(): three double operations an element fewer, the same sums to
  // rounding.
  double min_e, max_e, sum_e, sum_abs, sum_e2, min_p, max_p, sum_p, sa, saa, sxe;
  std::uint64_t visits, excl, decbad, zeros, imin, imaxe;
  T min_a, max_a, min_b, max_b;

  __device__ void init() {
    const double big = Kokkos::reduction_identity<double>::min();  // the portable identity
    min_e = min_p = big;
    max_e = max_p = -big;
    sum_e = sum_abs = sum_e2 = sum_p = sa = saa = sxe = 0;
    visits = excl = decbad = zeros = 0;
    imin = imaxe = ~std::uint64_t(0);
    min_a = min_b = std::numeric_limits<T>::max();
    max_a = max_b = std::numeric_limits<T>::lowest();
  }

  // The moments every compared element adds (both paths of the float kernel).
  __device__ __forceinline__ void moments(const Args<T>& g, double xd, double e, T x, T y) {
    sum_e += e;
    sum_abs += ::fabs(e);
    sum_e2 += e * e;
    min_a = ::fmin(min_a, x);  // both finite here: plain min/max
    max_a = ::fmax(max_a, x);
    min_b = ::fmin(min_b, y);
    max_b = ::fmax(max_b, y);
    const double xs = xd - g.shift;
    sa += xs;
    saa += xs * xs;
    sxe += xs * e;
  }

  // Pattern1::operator() for element i. The validity tests in T are the
  // portable ones: fill_le is finite (or NaN: nothing passes), so
  // |x| <= fill_le also says x is finite, and |y| <= max says y is.
  __device__ __forceinline__ void add(const Args<T>& g, std::uint64_t i, T x, T y, bool keep) {
    ++visits;
    const bool ok = keep && (x < T(0) ? -x : x) <= g.fill_le;
    if (!(ok && (y < T(0) ? -y : y) <= std::numeric_limits<T>::max())) {
      ++excl;
      if (ok) ++decbad;
      return;
    }
    const double xd = double(x), yd = double(y), e = yd - xd;
    const double p = extremes(i, x, xd, e);
    if (x != T(0))
      sum_p += p;
    else
      ++zeros;
    moments(g, xd, e, x, y);
  }

  // The extremes of the error element i (compared, error e) may set, in
  // index order; whether it set one.
  __device__ __forceinline__ bool extremes_e(std::uint64_t i, double e) {
    bool set = false;
    if (e < min_e) {
      min_e = e;
      imin = i;
      set = true;
    }
    if (e > max_e) {
      max_e = e;
      imaxe = i;
      set = true;
    }
    return set;
  }
  // The extremes of the relative error p it may set (x != 0); whether it set one.
  __device__ __forceinline__ bool extremes_p(double p) {
    bool set = false;
    if (p < min_p) {
      min_p = p;
      set = true;
    }
    if (p > max_p) {
      max_p = p;
      set = true;
    }
    return set;
  }
  __device__ __forceinline__ double extremes(std::uint64_t i, T x, double xd, double e) {
    extremes_e(i, e);
    if (x == T(0)) return 0;
    const double p = ::fabs(e) / ::fabs(xd);
    extremes_p(p);
    return p;
  }

  // The P1Acc this thread contributes: ranges widened, the double identity
  // where the thread compared nothing.
  __device__ P1Acc finish() const {
    const double big = Kokkos::reduction_identity<double>::min();
    P1Acc r;
    r.excl = excl;
    r.decbad = decbad;
    r.cnt = visits - excl;
    r.npwr = r.cnt - zeros;
    r.min_e = min_e;
    r.max_e = max_e;
    r.max_abs = -1;
    r.imax = ~std::uint64_t(0);
    if (r.cnt) {
      const double lo = ::fabs(min_e), hi = ::fabs(max_e);
      r.max_abs = lo > hi ? lo : hi;
      r.imax = lo > hi ? imin : hi > lo ? imaxe : (imin < imaxe ? imin : imaxe);
    }
    r.sum_e = sum_e;
    r.sum_abs = sum_abs;
    r.sum_e2 = sum_e2;
    r.min_p = min_p;
    r.max_p = max_p;
    r.sum_p = sum_p;
    r.min_a = r.cnt ? double(min_a) : big;
    r.max_a = r.cnt ? double(max_a) : -big;
    r.min_b = r.cnt ? double(min_b) : big;
    r.max_b = r.cnt ? double(max_b) : -big;
    r.sa = sa;
    r.sb = sa + sum_e;
    r.saa = saa;
    r.sbb = saa + 2 * sxe + sum_e2;
    r.sab = saa + sxe;
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

// Identities and merges of the other accumulators, as Pattern2/Pattern3 of
// portable/metrics/metrics.hpp define them.
template <class Acc>
__device__ __forceinline__ Acc identity_of();
template <>
__device__ __forceinline__ P1Acc identity_of<P1Acc>() {
  return identity();
}
template <>
__device__ __forceinline__ P2Acc identity_of<P2Acc>() {
  P2Acc v;
  v.pts = 0;
  v.d1max = v.d1sum = v.d2max = v.d2sum = v.dvmax = v.dvsum = v.lpmax = v.lpsum = 0;
  for (int k = 0; k < kQualityMaxLag; ++k) {
    v.acf[k] = 0;
    v.acn[k] = 0;
  }
  return v;
}
template <>
__device__ __forceinline__ P3Acc identity_of<P3Acc>() {
  P3Acc v;
  v.windows = 0;
  v.sum = 0;
  v.min = Kokkos::reduction_identity<double>::min();
  return v;
}

__device__ __forceinline__ void merge(P2Acc& d, const P2Acc& s) {
  d.pts += s.pts;
  d.d1max = s.d1max > d.d1max ? s.d1max : d.d1max;
  d.d2max = s.d2max > d.d2max ? s.d2max : d.d2max;
  d.dvmax = s.dvmax > d.dvmax ? s.dvmax : d.dvmax;
  d.lpmax = s.lpmax > d.lpmax ? s.lpmax : d.lpmax;
  d.d1sum += s.d1sum;
  d.d2sum += s.d2sum;
  d.dvsum += s.dvsum;
  d.lpsum += s.lpsum;
#pragma unroll
  for (int k = 0; k < kQualityMaxLag; ++k) {
    d.acf[k] += s.acf[k];
    d.acn[k] += s.acn[k];
  }
}

__device__ __forceinline__ void merge(P3Acc& d, const P3Acc& s) {
  d.windows += s.windows;
  d.sum += s.sum;
  d.min = s.min < d.min ? s.min : d.min;
}

// An accumulator is a sequence of 8-byte words (static_asserts below); one
// shuffle pair per word.
template <class Acc>
__device__ __forceinline__ Acc shfl_down(const Acc& v, int o) {
  static_assert(sizeof(Acc) % 8 == 0, "accumulators must be whole 8-byte words");
  constexpr int kWords = sizeof(Acc) / 8;
  Acc r;
  const auto* src = reinterpret_cast<const unsigned long long*>(&v);
  auto* dst = reinterpret_cast<unsigned long long*>(&r);
#pragma unroll
  for (int k = 0; k < kWords; ++k) dst[k] = __shfl_down_sync(0xFFFFFFFFu, src[k], o);
  return r;
}

// The block's reduction (kThreads threads), valid in thread 0. Fixed shape:
// deterministic.
template <class Acc>
__device__ __forceinline__ Acc block_reduce(Acc v) {
  __shared__ Acc warps[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) merge(v, shfl_down(v, o));
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  if (lane == 0) warps[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < kThreads / 32 ? warps[lane] : identity_of<Acc>();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) merge(v, shfl_down(v, o));
  }
  return v;
}

template <class T>
__device__ __forceinline__ Args<T> resolved(const Args<T>& g0) {
  Args<T> g = g0;
  if (g0.shift_at) {
    const T s = __ldg(g0.shift_at);
    g.shift = (s < T(0) ? -s : s) <= g0.fill_le ? double(s) : 0.0;
  }
  return g;
}

// Where a reduction pass leaves its result: each block's partial in
// parts[block]; the last block to finish (counted in *done, zero before the
// launch) folds them in index order, with the fixed shape of block_reduce, so
// the result does not depend on which block that is, and writes it to out
// (host-mapped memory: no copy and no second kernel after the pass). It
// leaves *done at zero.
template <class Acc>
struct Fold {
  Acc* parts;
  unsigned* done;
  Acc* out;
};

// A block-collective; r matters in thread 0 only.
template <class Acc>
__device__ __forceinline__ void fold_if_last(const Acc& r, const Fold<Acc>& fold) {
  if (threadIdx.x == 0) fold.parts[blockIdx.x] = r;
  if (!launch::last_block_done(fold.done)) return;
  Acc v = identity_of<Acc>();
  for (unsigned p = threadIdx.x; p < gridDim.x; p += kThreads) {
    Acc s;  // written by other blocks: read through L2, never a stale L1 line
    const auto* src = reinterpret_cast<const unsigned long long*>(fold.parts + p);
    auto* dst = reinterpret_cast<unsigned long long*>(&s);
#pragma unroll
    for (int k = 0; k < int(sizeof(Acc) / 8); ++k) dst[k] = __ldcg(src + k);
    merge(v, s);
  }
  v = block_reduce(v);
  if (threadIdx.x == 0) {
    *fold.out = v;
    *fold.done = 0;
  }
}

// Pattern 1 also reports the shift it used, in out[1].sa.
__device__ __forceinline__ void fold_pattern1(const P1Acc& r, const Fold<P1Acc>& fold, double shift) {
  if (blockIdx.x == 0 && threadIdx.x == 0) fold.out[1].sa = shift;
  fold_if_last(r, fold);
}

template <class T>
__global__ void __launch_bounds__(kThreads, 2) pattern1_kernel(Args<T> g0, Fold<P1Acc> fold) {
  const Args<T> g = resolved(g0);
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

  fold_pattern1(block_reduce(acc.finish()), fold, g.shift);
}

// The float32 kernel without a mask (the common case). Every element through
// Local::add costs ~86 instructions (ncu), most of them compares and selects
// of the extremes and a correctly rounded double division: HBM at 35%. Here
// only the sums are per element; the extremes are filtered.
//
// A warp walks chunks of 32 * kUnroll float4 of both arrays: group u is one
// float4 a lane, 128 consecutive elements a warp, and chunks (so groups) come
// in increasing index order. Each group is classified in float32:
//  - valid: |x| in [2^-126, min(fill_le, 2^126)] (so finite, not excluded,
//    with a normal reciprocal), |y| <= FLT_MAX;
//  - relative-error candidate: p_f = |y - x| * rcp.approx(|x|) is within
//    2^-22 of p = |e| / |x|, so a new extreme of p has p_f > rd(max_p (1 -
//    2^-20)) or p_f < ru(min_p (1 + 2^-20)), the warp's extremes;
// and while adding its moments, an error is a candidate when strictly beyond
// the warp's extremes of e (in double, exact). Valid groups add their
// moments only, sum_p as |e| * r with r the reciprocal after one Newton step
// in double (relative error below 2^-45: sum_p agrees with the portable
// division's to ~1e-14). Candidate groups then go through the exact extremes
// in index order. Groups with x == 0 take the same way with a zero-aware
// reciprocal (a second, rarer path: it costs ~10 instructions an element),
// invalid groups Local::add element by element. The warp's thresholds are
// refreshed after a chunk in which a lane's extreme moved, so they only
// tighten; a lane misses only elements equal to the warp's extreme whose
// holder came from an earlier chunk, i.e. has the smaller index: the
// tie-break on the index holds.
//
// H200, 512^3 turbulent field: ~41 instructions an element instead of 86;
// the kernel reads its 1.07 GB in 298-315 us (ncu: DRAM 71-75% of peak). The
// last block folds the partials and writes the result to host-mapped memory,
// so the whole pattern-1 assessment takes 0.31-0.32 ms (0.324 ms with a
// separate fold kernel and a pageable copy; 0.634 ms before this kernel).
struct Thresholds {
  double lo_e, hi_e;  // the warp's extremes of the error: strict compares
  float lo_p, hi_p;   // ru(min_p (1 + 2^-20)), rd(max_p (1 - 2^-20)) over the warp
};

__device__ __forceinline__ void refresh(const Local<float>& l, Thresholds& w) {
  double lo_e = l.min_e, hi_e = l.max_e;
  float lo_p = __double2float_ru(l.min_p * (1 + 0x1p-20)), hi_p = __double2float_rd(l.max_p * (1 - 0x1p-20));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    lo_e = ::fmin(lo_e, __shfl_xor_sync(0xFFFFFFFFu, lo_e, o));
    hi_e = ::fmax(hi_e, __shfl_xor_sync(0xFFFFFFFFu, hi_e, o));
    lo_p = fminf(lo_p, __shfl_xor_sync(0xFFFFFFFFu, lo_p, o));
    hi_p = fmaxf(hi_p, __shfl_xor_sync(0xFFFFFFFFu, hi_p, o));
  }
  w.lo_e = lo_e;
  w.hi_e = hi_e;
  w.lo_p = lo_p;
  w.hi_p = hi_p;
}

__device__ __forceinline__ float rcp_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// One Newton step in double on r ~ 1 / ax (ax = |x| widened): from
// rcp_approx's 2^-23 to below 2^-45.
__device__ __forceinline__ double newton_rcp(double r, double ax) { return fma(r, fma(-ax, r, 1.0), r); }

// Classifies group (x, y): returns whether its moments may take the fast way
// (every x finite, not excluded, with a normal reciprocal: |x| in
// [2^-126, 2^126], since rcp.approx flushes the rest, or, when kZeros, 0;
// every y finite), and sets cand_p when an element may move an extreme of the
// relative error. Tests combine with & and |, not && and ||: predicates, no
// branches. x_hi = min(fill_le, 2^126).
template <bool kZeros>
__device__ __forceinline__ bool classify(float x_hi, const Thresholds& w, const float4& va, const float4& vb,
                                         bool& cand_p) {
  const float x[4] = {va.x, va.y, va.z, va.w}, y[4] = {vb.x, vb.y, vb.z, vb.w};
  bool valid = true, cp = false;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float ax = fabsf(x[j]);
    const float pf = fabsf(y[j] - x[j]) * rcp_approx(ax);
    if (kZeros) {
      const bool nz = ax != 0.f;
      valid &= (((ax >= 0x1p-126f) & (ax <= x_hi)) | !nz) & (fabsf(y[j]) <= FLT_MAX);
      cp |= nz & ((pf < w.lo_p) | (pf > w.hi_p));
    } else {
      valid &= (ax >= 0x1p-126f) & (ax <= x_hi) & (fabsf(y[j]) <= FLT_MAX);
      cp |= (pf < w.lo_p) | (pf > w.hi_p);
    }
  }
  cand_p = cp;
  return valid;
}

// The moments of a valid group (see classify); sum_p from the reciprocal
// refined once in double; when kZeros, x == 0 counted in `zeros` (the caller
// adds it and the visits once a chunk, in 64 bits). Returns whether an error
// may move the warp's extremes of the error (strictly beyond them: a tie
// comes after the holder, which came from an earlier chunk).
template <bool kZeros>
__device__ __forceinline__ bool accumulate(Local<float>& l, const Args<float>& g, const Thresholds& w,
                                           const float4& va, const float4& vb, unsigned& zeros) {
  const float x[4] = {va.x, va.y, va.z, va.w}, y[4] = {vb.x, vb.y, vb.z, vb.w};
  bool ce = false;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const double xd = x[j], yd = y[j], e = yd - xd;
    double rd = rcp_approx(fabsf(x[j]));
    if (kZeros) {
      const bool nz = x[j] != 0.f;
      rd = nz ? rd : 0.0;  // adds nothing to sum_p
      zeros += !nz;
    }
    rd = newton_rcp(rd, ::fabs(xd));
    l.sum_p = fma(::fabs(e), rd, l.sum_p);
    ce |= (e < w.lo_e) | (e > w.hi_e);
    l.moments(g, xd, e, x[j], y[j]);
  }
  return ce;
}

// The exact extremes of a valid candidate group (elements i0..i0+3), reread:
// of the error (bit 0 of `which`), of the relative error (bit 1). Whether one
// moved.
__device__ __forceinline__ bool group_extremes(Local<float>& l, const float* __restrict__ a,
                                               const float* __restrict__ b, std::uint64_t i0, unsigned which) {
  bool set = false;
#pragma unroll 1
  for (int j = 0; j < 4; ++j) {
    const float x = a[i0 + j];
    const double xd = x, e = double(b[i0 + j]) - xd;
    if (which & 1) set |= l.extremes_e(i0 + j, e);
    if ((which & 2) && x != 0.f) set |= l.extremes_p(::fabs(e) / ::fabs(xd));
  }
  return set;
}

__global__ void __launch_bounds__(kThreads, 2) pattern1_f32_kernel(Args<float> g0, Fold<P1Acc> fold) {
  constexpr std::uint64_t kChunk = 32 * kUnroll;  // float4 a chunk
  const Args<float> g = resolved(g0);
  Local<float> acc;
  acc.init();
  const std::uint64_t stride = std::uint64_t(gridDim.x) * kThreads;
  const std::uint64_t tid = std::uint64_t(blockIdx.x) * kThreads + threadIdx.x;
  const std::uint64_t warp = tid / 32, warps = stride / 32, lane = threadIdx.x % 32;
  const float* __restrict__ a = g.a;
  const float* __restrict__ b = g.b;

  for (std::uint64_t i = tid; i < g.head; i += stride) acc.add(g, i, a[i], b[i], true);

  Thresholds w;
  refresh(acc, w);  // every lane of the warp is here: no lane has left
  const float x_hi = fminf(g.fill_le, 0x1p126f);
  const auto* va = reinterpret_cast<const float4*>(a + g.head);
  const auto* vb = reinterpret_cast<const float4*>(b + g.head);
  const std::uint64_t chunks = g.nvec / kChunk;
  for (std::uint64_t c = warp; c < chunks; c += warps) {  // the same trip count on every lane
    const std::uint64_t v0 = c * kChunk + lane;
    float4 ra[kUnroll], rb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      ra[u] = __ldg(va + v0 + 32 * u);
      rb[u] = __ldg(vb + v0 + 32 * u);
    }
    // Group u: bit u of `slow` (not valid without zeros), bits 2u, 2u+1 of
    // `cand` (error, relative error candidates).
    unsigned slow = 0, cand = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      bool cp;
      if (!classify<false>(x_hi, w, ra[u], rb[u], cp)) slow |= 1u << u;
      cand |= unsigned(cp) << (2 * u + 1);
    }
    bool moved = false;
    unsigned zeros = 0, fast = 0;  // x == 0 and elements of the valid groups
    if (slow == 0) {  // the common case: every group's moments at once
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) cand |= unsigned(accumulate<false>(acc, g, w, ra[u], rb[u], zeros)) << 2 * u;
      fast = 4 * kUnroll;
      if (cand) {
#pragma unroll 1
        for (int u = 0; u < kUnroll; ++u)
          if (cand >> 2 * u & 3) moved |= group_extremes(acc, a, b, g.head + (v0 + 32 * u) * 4, cand >> 2 * u & 3);
      }
    } else {
      // Group by group in index order, reread (L1) rather than indexed out
      // of registers: groups with zeros the fast way still, invalid groups
      // element by element, exactly.
#pragma unroll 1
      for (int u = 0; u < kUnroll; ++u) {
        const std::uint64_t v = v0 + 32 * u, i0 = g.head + v * 4;
        const float4 xa = __ldg(va + v), xb = __ldg(vb + v);
        bool cp = cand >> (2 * u + 1) & 1;
        if (!(slow >> u & 1) || classify<true>(x_hi, w, xa, xb, cp)) {
          const unsigned c = unsigned(cp) << 1 | unsigned(accumulate<true>(acc, g, w, xa, xb, zeros));
          fast += 4;
          if (c) moved |= group_extremes(acc, a, b, i0, c);
        } else {
#pragma unroll 1
          for (int j = 0; j < 4; ++j) acc.add(g, i0 + j, a[i0 + j], b[i0 + j], true);
          moved = true;
        }
      }
    }
    acc.zeros += zeros;
    acc.visits += fast;
    // Thresholds only tighten, and only when an extreme moved (a tie moves none).
    if (__any_sync(0xFFFFFFFFu, moved)) refresh(acc, w);
  }
  // The vectors after the last whole chunk, then the scalars after them: exact.
  for (std::uint64_t k = chunks * kChunk + tid; k < g.nvec; k += stride) {
    const std::uint64_t i0 = g.head + k * 4;
#pragma unroll 1
    for (int j = 0; j < 4; ++j) acc.add(g, i0 + j, a[i0 + j], b[i0 + j], true);
  }
  for (std::uint64_t i = g.head + g.nvec * 4 + tid; i < g.n; i += stride) acc.add(g, i, a[i], b[i], true);

  fold_pattern1(block_reduce(acc.finish()), fold, g.shift);
}

// One block folds the partials (patterns 2 and 3, whose kernels cannot
// afford the fold's registers: folding in their last block cost 5-15%):
// thread t takes t, t + kThreads, ... in order.
template <class Acc>
__global__ void __launch_bounds__(kThreads) combine_kernel(const Acc* __restrict__ parts, int nparts,
                                                           Acc* __restrict__ out) {
  Acc v = identity_of<Acc>();
  for (int p = threadIdx.x; p < nparts; p += kThreads) merge(v, parts[p]);
  v = block_reduce(v);
  if (threadIdx.x == 0) *out = v;
}

using launch::check;

// Resident blocks of a pattern-1 kernel on the device (once per kernel).
template <auto Kernel>
int resident_blocks() {
  static const int blocks = launch::resident_blocks(Kernel, kThreads, 0);
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

// Vector loads need both arrays at the same offset from a 16-byte boundary
// and T-aligned: then `head` scalars come before `nvec` 16-byte vectors of
// both (the rest is a scalar tail); otherwise every element goes the scalar
// way (head = n, nvec = 0).
template <class T>
void split_vectors(const MetricsFields<T>& f, std::uint64_t& head, std::uint64_t& nvec) {
  head = f.n;
  nvec = 0;
  const auto ua = reinterpret_cast<std::uintptr_t>(f.orig), ub = reinterpret_cast<std::uintptr_t>(f.dec);
  if (ua % sizeof(T) == 0 && (ub - ua) % 16 == 0) {
    const std::uint64_t h = ((16 - ua % 16) % 16) / sizeof(T);
    if (h < f.n) {
      head = h;
      nvec = (f.n - h) / Vec<T>::width;
    }
  }
}

// FieldPair::valid and err in one read of each array (the same predicate:
// mask, |orig| < fill and both finite, in double).
template <class T>
struct Elements {
  const T* __restrict__ a;
  const T* __restrict__ b;
  const std::uint8_t* __restrict__ mask;
  double fill;

  __device__ __forceinline__ bool load(std::uint64_t i, double& x, double& y) const {
    if (mask && __ldg(mask + i) == 0) return false;
    x = double(__ldg(a + i));
    if (!(x - x == 0.0 && ::fabs(x) < fill)) return false;
    y = double(__ldg(b + i));
    return y - y == 0.0;
  }
  // load() on values already read (x, y widened from T).
  __device__ __forceinline__ bool check(std::uint64_t i, double x, double y) const {
    return !(mask && __ldg(mask + i) == 0) && x - x == 0.0 && ::fabs(x) < fill && y - y == 0.0;
  }
  __device__ __forceinline__ bool err(std::uint64_t i, double& e) const {
    double x, y;
    if (!load(i, x, y)) return false;
    e = y - x;
    return true;
  }
};

// Tiles of pattern 2: bx * by == kThreads threads, each walking kP2Planes
// planes along z.
constexpr std::uint64_t kP2Planes = 8;

struct P2Args {
  std::uint64_t n[3];
  int rank, lags;
  double mean;
  std::uint64_t bx, by;          // tile extents in x and y (threads)
  std::uint64_t tx, ty, tiles;   // tiles along x, along y, in all
};

template <class T>
__global__ void __launch_bounds__(kThreads, 2) pattern2_kernel(Elements<T> f, P2Args g, P2Acc* __restrict__ parts) {
  // Autocorrelation sums per warp and lag in shared memory: per-thread arrays
  // of kQualityMaxLag sums cost ~100 registers and spilled.
  __shared__ double wacf[kThreads / 32][kQualityMaxLag];
  __shared__ std::uint64_t wacn[kThreads / 32][kQualityMaxLag];
  __shared__ double es[kP2Planes][kThreads];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int k = lane; k < kQualityMaxLag; k += 32) {
    wacf[warp][k] = 0;
    wacn[warp][k] = 0;
  }
  __syncwarp();  // lane 0 alone adds to its warp's sums from here on
  // The stencil's sums; the whole P2Acc (41 words) only for the final reduction.
  std::uint64_t pts = 0;
  double d1max = 0, d1sum = 0, d2max = 0, d2sum = 0, dvmax = 0, dvsum = 0, lpmax = 0, lpsum = 0;
  const std::uint64_t n0 = g.n[0], n1 = g.n[1], n2 = g.n[2];
  const std::uint64_t s[3] = {1, n0, n0 * n1};
  const std::uint64_t lx = threadIdx.x % g.bx, ly = threadIdx.x / g.bx;
  for (std::uint64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    const std::uint64_t x = (t % g.tx) * g.bx + lx, y = ((t / g.tx) % g.ty) * g.by + ly;
    const std::uint64_t zb = (t / (g.tx * g.ty)) * kP2Planes;
    const bool inside = x < n0 && y < n1;
    // The tile's errors at this (x, y), kept for every lag. In shared memory:
    // in registers the plane loops had to be unrolled, and the loads of every
    // plane hoisted together spilled.
    unsigned ok = 0;
    for (int p = 0; p < int(kP2Planes); ++p)
      if (inside && zb + p < n2 && f.err(x + n0 * (y + n1 * (zb + p)), es[p][threadIdx.x])) ok |= 1u << p;
    // Autocorrelation: pairs (i, i + k along axis d), both compared.
    for (int k = 1; k <= g.lags; ++k) {
      double sum = 0;
      unsigned cnt = 0;
#pragma unroll 1
      for (int p = 0; p < int(kP2Planes); ++p) {
        if (!(ok >> p & 1)) continue;
        const std::uint64_t c[3] = {x, y, zb + p};
        const std::uint64_t i = x + n0 * (y + n1 * (zb + p));
        const double e0 = es[p][threadIdx.x] - g.mean;
#pragma unroll
        for (int d = 0; d < 3; ++d) {  // unrolled: c, n and s stay in registers
          double ej;
          if (d < g.rank && c[d] + k < g.n[d] && f.err(i + std::uint64_t(k) * s[d], ej)) {
            sum += e0 * (ej - g.mean);
            ++cnt;
          }
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        sum += __shfl_down_sync(0xFFFFFFFFu, sum, o);
        cnt += __shfl_down_sync(0xFFFFFFFFu, cnt, o);
      }
      if (lane == 0) {
        wacf[warp][k - 1] += sum;
        wacn[warp][k - 1] += cnt;
      }
    }
    // 7-point stencil (in 3D): the point and its two neighbours along each axis.
#pragma unroll 1
    for (int p = 0; p < int(kP2Planes); ++p) {
      if (!(ok >> p & 1)) continue;
      const std::uint64_t c[3] = {x, y, zb + p};
      const std::uint64_t i = x + n0 * (y + n1 * (zb + p));
      const double ep = es[p][threadIdx.x];
      double g2 = 0, h2 = 0, div = 0, lap = 0;
      bool inner = true;
#pragma unroll
      for (int d = 0; d < 3; ++d) {
        if (d >= g.rank) break;
        double el, eh;
        if (c[d] == 0 || c[d] + 1 >= g.n[d] || !f.err(i - s[d], el) || !f.err(i + s[d], eh)) {
          inner = false;
          break;
        }
        const double gr = 0.5 * (eh - el), h = (eh - ep) - (ep - el);
        g2 += gr * gr;
        h2 += h * h;
        div += gr;
        lap += h;
      }
      if (!inner) continue;
      const double d1 = ::sqrt(g2), d2 = ::sqrt(h2), adiv = ::fabs(div), alap = ::fabs(lap);
      ++pts;
      d1sum += d1;
      d2sum += d2;
      dvsum += adiv;
      lpsum += alap;
      d1max = d1 > d1max ? d1 : d1max;
      d2max = d2 > d2max ? d2 : d2max;
      dvmax = adiv > dvmax ? adiv : dvmax;
      lpmax = alap > lpmax ? alap : lpmax;
    }
  }
  // Block reduction by hand: shuffling the whole P2Acc (41 words) took every
  // register of the kernel. The stencil scalars by warp shuffles, the
  // autocorrelation from the warps' shared sums; fixed order throughout.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    pts += __shfl_down_sync(0xFFFFFFFFu, pts, o);
    d1sum += __shfl_down_sync(0xFFFFFFFFu, d1sum, o);
    d2sum += __shfl_down_sync(0xFFFFFFFFu, d2sum, o);
    dvsum += __shfl_down_sync(0xFFFFFFFFu, dvsum, o);
    lpsum += __shfl_down_sync(0xFFFFFFFFu, lpsum, o);
    d1max = ::fmax(d1max, __shfl_down_sync(0xFFFFFFFFu, d1max, o));
    d2max = ::fmax(d2max, __shfl_down_sync(0xFFFFFFFFu, d2max, o));
    dvmax = ::fmax(dvmax, __shfl_down_sync(0xFFFFFFFFu, dvmax, o));
    lpmax = ::fmax(lpmax, __shfl_down_sync(0xFFFFFFFFu, lpmax, o));
  }
  __shared__ double wsum[kThreads / 32][8];
  __shared__ std::uint64_t wpts[kThreads / 32];
  if (lane == 0) {
    wpts[warp] = pts;
    wsum[warp][0] = d1sum;
    wsum[warp][1] = d2sum;
    wsum[warp][2] = dvsum;
    wsum[warp][3] = lpsum;
    wsum[warp][4] = d1max;
    wsum[warp][5] = d2max;
    wsum[warp][6] = dvmax;
    wsum[warp][7] = lpmax;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    P2Acc v = identity_of<P2Acc>();
    for (int w = 0; w < kThreads / 32; ++w) {
      v.pts += wpts[w];
      v.d1sum += wsum[w][0];
      v.d2sum += wsum[w][1];
      v.dvsum += wsum[w][2];
      v.lpsum += wsum[w][3];
      v.d1max = ::fmax(v.d1max, wsum[w][4]);
      v.d2max = ::fmax(v.d2max, wsum[w][5]);
      v.dvmax = ::fmax(v.dvmax, wsum[w][6]);
      v.lpmax = ::fmax(v.lpmax, wsum[w][7]);
      for (int k = 0; k < kQualityMaxLag; ++k) {
        v.acf[k] += wacf[w][k];
        v.acn[k] += wacn[w][k];
      }
    }
    parts[blockIdx.x] = v;
  }
}

// Tiles of pattern 3, in window origins: kThreads == kSx * kSy, each block
// walking kSz origins along z.
constexpr std::uint64_t kSx = 32, kSy = 8, kSz = 32;
static_assert(kSx * kSy == kThreads, "a thread per (x, y) origin of a tile");

struct P3Args {
  std::uint64_t n0, n1, n2;
  std::uint64_t w0, w1, w2;
  std::uint64_t nw0, nw1, nw2;   // origins per axis
  std::uint64_t tx, ty, tiles;   // tiles along x, along y, in all
  std::uint64_t px, py;          // shared patch: kSx + w0 - 1 by kSy + w1 - 1
  double shift, c1, c2;
};

// Shared bytes of one block: the patch's z-window sums and their x-window
// sums, five doubles and an excluded count each.
std::size_t p3_shared_bytes(std::uint64_t px, std::uint64_t py) {
  const std::size_t per = 5 * sizeof(double) + sizeof(int);
  return std::size_t(px * py) * per + std::size_t(kSx * py) * per;
}

template <class T>
__global__ void __launch_bounds__(kThreads) pattern3_kernel(Elements<T> f, P3Args g, P3Acc* __restrict__ parts) {
  extern __shared__ double smem[];
  const std::uint64_t np = g.px * g.py, nx = kSx * g.py;
  double* cz = smem;          // [5][np]: z-window sums per patch column
  double* cx = cz + 5 * np;   // [5][nx]: then x-window sums
  int* bz = reinterpret_cast<int*>(cx + 5 * nx);  // excluded counts
  int* bx = bz + np;
  P3Acc v = identity_of<P3Acc>();
  const double cnt = double(g.w0 * g.w1 * g.w2);
  const std::uint64_t lx = threadIdx.x % kSx, ly = threadIdx.x / kSx;
  const std::uint64_t plane = g.n0 * g.n1;

  for (std::uint64_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    const std::uint64_t ox0 = (t % g.tx) * kSx, oy0 = ((t / g.tx) % g.ty) * kSy;
    const std::uint64_t oz0 = (t / (g.tx * g.ty)) * kSz;
    const std::uint64_t oz1 = oz0 + kSz < g.nw2 ? oz0 + kSz : g.nw2;
    // Adds sign * the moments of element (x, y, z) to patch column p.
    auto add = [&](std::uint64_t p, std::uint64_t z, double sign, int isign) {
      const unsigned pp = unsigned(p), px = unsigned(g.px);  // patches are small: 32-bit division
      const std::uint64_t x = ox0 + pp % px, y = oy0 + pp / px;
      if (x >= g.n0 || y >= g.n1) return;  // read by no window of the field
      double xa, xb;
      if (!f.load(x + g.n0 * y + plane * z, xa, xb)) {
        bz[p] += isign;
        return;
      }
      xa -= g.shift;
      xb -= g.shift;
      cz[p] += sign * xa;
      cz[np + p] += sign * xb;
      cz[2 * np + p] += sign * (xa * xa);
      cz[3 * np + p] += sign * (xb * xb);
      cz[4 * np + p] += sign * (xa * xb);
    };
    __syncthreads();  // the previous tile is done with the patch
    for (std::uint64_t p = threadIdx.x; p < np; p += kThreads) {
      for (int k = 0; k < 5; ++k) cz[k * np + p] = 0;
      bz[p] = 0;
      for (std::uint64_t z = oz0; z < oz0 + g.w2; ++z) add(p, z, 1.0, 1);
    }
    for (std::uint64_t oz = oz0; oz < oz1; ++oz) {
      if (oz > oz0)  // slide along z: the plane entering, the one leaving
        for (std::uint64_t p = threadIdx.x; p < np; p += kThreads) {
          add(p, oz + g.w2 - 1, 1.0, 1);
          add(p, oz - 1, -1.0, -1);
        }
      __syncthreads();
      for (std::uint64_t j = threadIdx.x; j < nx; j += kThreads) {
        const std::uint64_t r = j / kSx, c = j % kSx;
        double m[5] = {0, 0, 0, 0, 0};
        int bad = 0;
        for (std::uint64_t d = 0; d < g.w0; ++d) {
          const std::uint64_t p = r * g.px + c + d;
#pragma unroll
          for (int k = 0; k < 5; ++k) m[k] += cz[k * np + p];
          bad += bz[p];
        }
#pragma unroll
        for (int k = 0; k < 5; ++k) cx[k * nx + j] = m[k];
        bx[j] = bad;
      }
      __syncthreads();
      if (ox0 + lx < g.nw0 && oy0 + ly < g.nw1) {
        double m[5] = {0, 0, 0, 0, 0};
        int bad = 0;
        for (std::uint64_t d = 0; d < g.w1; ++d) {
          const std::uint64_t j = (ly + d) * kSx + lx;
#pragma unroll
          for (int k = 0; k < 5; ++k) m[k] += cx[k * nx + j];
          bad += bx[j];
        }
        if (bad == 0) {
          // Pattern3's formula, operation for operation.
          using quantize::add_rn;
          using quantize::mul_rn;
          const double ma = m[0] / cnt, mb = m[1] / cnt;
          const double va = m[2] / cnt - mul_rn(ma, ma), vb = m[3] / cnt - mul_rn(mb, mb);
          const double cov = m[4] / cnt - mul_rn(ma, mb);
          const double ua = ma + g.shift, ub = mb + g.shift;
          const double pab = mul_rn(ua, ub);
          const double lum_num = add_rn(add_rn(pab, pab), g.c1);
          const double lum_den = add_rn(add_rn(mul_rn(ua, ua), mul_rn(ub, ub)), g.c1);
          const double con_num = add_rn(add_rn(cov, cov), g.c2), con_den = add_rn(add_rn(va, vb), g.c2);
          const double s = mul_rn(lum_num, con_num) / mul_rn(lum_den, con_den);
          ++v.windows;
          v.sum += s;
          v.min = s < v.min ? s : v.min;
        }
      }
      __syncthreads();  // cx and cz are rewritten next
    }
  }
  const P3Acc r = block_reduce(v);
  if (threadIdx.x == 0) parts[blockIdx.x] = r;
}

// A pass whose last block folds (pattern 1): the partials (blocks of them),
// then one more Acc whose first word counts finished blocks, from the
// workspace; the result slots (n_out <= 2) in host-mapped memory. Calls
// launch_kernel(fold), which launches the pass on space, and blocks until out
// holds the result.
template <class Acc, class Launch>
void run_folded(const Kokkos::Cuda& space, int blocks, Acc* out, std::size_t n_out, const Launch& launch_kernel,
                const char* what) {
  static_assert(2 * sizeof(Acc) <= HostResult::kBytes, "result slot");
  pipeline::Workspace<Kokkos::CudaSpace>::Lease ws;
  const auto parts =
      ws.get<Acc>(pipeline::Workspace<Kokkos::CudaSpace>::kMetrics, blocks + 1, "ksz::metrics::parts");
  const HostResult slot;
  const Fold<Acc> fold{parts.data(), reinterpret_cast<unsigned*>(parts.data() + blocks), slot.device<Acc>()};
  check(cudaMemsetAsync(fold.done, 0, sizeof(unsigned), space.cuda_stream()), what);
  launch_kernel(fold);
  check(cudaGetLastError(), what);
  check(cudaStreamSynchronize(space.cuda_stream()), what);
  for (std::size_t k = 0; k < n_out; ++k) out[k] = slot.host<Acc>()[k];
}

// Runs kernel over `tiles` tiles with at most the resident blocks, then one
// block folds the partials into the host-mapped result slot. Blocks until out
// holds the result.
template <class Acc, class Kernel, class F, class A>
void launch_reduce(const Kokkos::Cuda& space, Kernel kernel, std::size_t shared, std::uint64_t tiles, const F& f,
                   const A& g, Acc& out, const char* what) {
  static_assert(sizeof(Acc) <= HostResult::kBytes, "result slot");
  const std::uint64_t resident = std::uint64_t(launch::resident_blocks(kernel, kThreads, shared));
  const int blocks = static_cast<int>(tiles < resident ? tiles : resident);
  pipeline::Workspace<Kokkos::CudaSpace>::Lease ws;
  const auto parts = ws.get<Acc>(pipeline::Workspace<Kokkos::CudaSpace>::kMetrics, blocks, "ksz::metrics::parts");
  const HostResult slot;
  kernel<<<blocks, kThreads, shared, space.cuda_stream()>>>(f, g, parts.data());
  check(cudaGetLastError(), what);
  combine_kernel<Acc><<<1, kThreads, 0, space.cuda_stream()>>>(parts.data(), blocks, slot.device<Acc>());
  check(cudaGetLastError(), "combine_kernel");
  check(cudaStreamSynchronize(space.cuda_stream()), what);
  out = slot.host<Acc>()[0];
}

// PDF pass: the block's 2 * bins counts in shared memory. Each thread keeps
// a run of equal bins per PDF in registers and adds it with one atomic when
// the bin changes: relative errors crowd into few bins (one, often), where
// same-address atomics of a warp serialize; the earlier __match_any_sync per
// element made the pass MIO-bound (ncu: short-scoreboard stalls, 1.12 ms at
// 512^3 on an H200).
struct PdfArgs {
  std::uint64_t n;
  int bins;
  double lo_e, se, lo_p, sp;
  std::uint64_t head, nvec;  // scalars before the 16-byte vectors of both arrays, vectors (0: none)
  double lsp;                // |lo_p * sp|
};

struct BinRun {
  int bin = -1;
  unsigned count = 0;
  __device__ __forceinline__ void add(unsigned* hist, int b) {
    if (b == bin) {
      ++count;
      return;
    }
    if (count) atomicAdd(hist + bin, count);
    bin = b;
    count = 1;
  }
  __device__ __forceinline__ void flush(unsigned* hist) const {
    if (count) atomicAdd(hist + bin, count);
  }
};

// The portable bins of a compared element: be = int((e - lo_e) * se) and,
// for x != 0, bp = int((|e| / |x| - lo_p) * sp) (-1: none), each clamped to
// bins - 1; a subtract then a multiply, nothing to contract. For float32 the
// quotient comes from a reciprocal refined once in double (relative error
// below 2^-44), and only a t = (q - lo_p) sp within (|t| + |lo_p sp|) 2^-40
// of an integer (where the rounding could tell) takes the exact division.
template <class T>
__device__ __forceinline__ void pdf_bins(const PdfArgs& g, T x, T y, int& be, int& bp) {
  const int nb = g.bins;
  const double xd = double(x), e = double(y) - xd;
  be = int((e - g.lo_e) * g.se);
  be = be < nb ? be : nb - 1;
  bp = -1;
  if (x == T(0)) return;
  int k = -1;
  if constexpr (std::is_same<T, float>::value) {
    const float ax = fabsf(x);
    if (ax >= 0x1p-126f && ax <= 0x1p126f) {
      const double r = newton_rcp(rcp_approx(ax), double(ax));
      const double t = (::fabs(e) * r - g.lo_p) * g.sp, f = t - ::floor(t), tol = (::fabs(t) + g.lsp) * 0x1p-40;
      if (t >= 0 && f > tol && f < 1 - tol && t < 0x1p30) k = int(t);
    }
  }
  if (k < 0) k = int((::fabs(e) / ::fabs(xd) - g.lo_p) * g.sp);
  bp = nb + (k < nb ? k : nb - 1);
}

// The vectors: a lane a 16-byte vector of each array (W elements) an
// iteration (one element a lane left too few bytes in flight); then the head
// and tail scalars.
template <class T>
__global__ void __launch_bounds__(kThreads) pdf_kernel(Elements<T> f, PdfArgs g,
                                                       unsigned long long* __restrict__ hist) {
  using V = Vec<T>;
  constexpr int W = V::width;
  extern __shared__ unsigned counts[];
  const int nb = g.bins;
  for (int k = threadIdx.x; k < 2 * nb; k += kThreads) counts[k] = 0;
  __syncthreads();
  const std::uint64_t stride = std::uint64_t(gridDim.x) * kThreads;
  const std::uint64_t tid = std::uint64_t(blockIdx.x) * kThreads + threadIdx.x;
  const auto* va = reinterpret_cast<const typename V::type*>(f.a + g.head);
  const auto* vb = reinterpret_cast<const typename V::type*>(f.b + g.head);
  BinRun re, rp;
  for (std::uint64_t k = tid; k < g.nvec; k += stride) {
    T x[W], y[W];
    V::unpack(__ldg(va + k), x);
    V::unpack(__ldg(vb + k), y);
#pragma unroll
    for (int j = 0; j < W; ++j) {
      if (!f.check(g.head + k * W + j, double(x[j]), double(y[j]))) continue;
      int be, bp;
      pdf_bins(g, x[j], y[j], be, bp);
      re.add(counts, be);
      if (bp >= 0) rp.add(counts, bp);
    }
  }
  const std::uint64_t tail0 = g.head + g.nvec * W, scalars = g.head + (g.n - tail0);
  for (std::uint64_t s = tid; s < scalars; s += stride) {
    const std::uint64_t i = s < g.head ? s : tail0 + (s - g.head);
    double x, y;
    if (!f.load(i, x, y)) continue;
    int be, bp;
    pdf_bins(g, T(x), T(y), be, bp);
    re.add(counts, be);
    if (bp >= 0) rp.add(counts, bp);
  }
  re.flush(counts);
  rp.flush(counts);
  __syncthreads();
  for (int k = threadIdx.x; k < 2 * nb; k += kThreads)
    if (counts[k]) atomicAdd(hist + k, static_cast<unsigned long long>(counts[k]));
}

}  // namespace

namespace {

// Both entry points: the shift given (shift_at nullptr) or read on the device
// from shift_at and reported in `shift`.
template <class T>
bool pattern1(const Kokkos::Cuda& space, const MetricsFields<T>& f, const T* shift_at, double& shift, P1Acc& out) {
  if (!enabled() || f.n == 0) return false;
  Args<T> g{f.orig, f.dec, f.mask, f.n, f.n, 0, fill_le_of<T>(f.fill), shift, shift_at};
  split_vectors(f, g.head, g.nvec);
  int blocks = 0;
  bool f32 = false;
  if constexpr (std::is_same<T, float>::value) {
    if (!f.mask && g.nvec > 0 && !std::isnan(g.fill_le)) {  // a warp a chunk of 32 * kUnroll float4
      constexpr std::uint64_t per_block = kThreads / 32;
      const std::uint64_t want = (g.nvec / (32 * kUnroll) + per_block - 1) / per_block;
      const int most = resident_blocks<pattern1_f32_kernel>();
      blocks = static_cast<int>(want == 0 ? 1 : want < std::uint64_t(most) ? want : most);
      f32 = true;
    }
  }
  if (!f32) {
    const std::uint64_t work = g.nvec + (g.nvec ? 0 : f.n);  // scalar-only: an element per vector
    const std::uint64_t want = (work + std::uint64_t(kThreads) * kUnroll - 1) / (std::uint64_t(kThreads) * kUnroll);
    const int most = resident_blocks<pattern1_kernel<T>>();
    blocks = static_cast<int>(want < std::uint64_t(most) ? want : most);
  }
  P1Acc back[2];  // the result, then the shift the pass used in back[1].sa
  run_folded<P1Acc>(space, blocks, back, 2, [&](const Fold<P1Acc>& fold) {
    if (f32) {
      if constexpr (std::is_same<T, float>::value)
        pattern1_f32_kernel<<<blocks, kThreads, 0, space.cuda_stream()>>>(g, fold);
    } else {
      pattern1_kernel<T><<<blocks, kThreads, 0, space.cuda_stream()>>>(g, fold);
    }
  }, "pattern1_kernel");
  out = back[0];
  shift = back[1].sa;
  return true;
}

}  // namespace

template <class T>
bool metrics_pattern1(const Kokkos::Cuda& space, const MetricsFields<T>& f, double shift, P1Acc& out) {
  return pattern1<T>(space, f, nullptr, shift, out);
}

template <class T>
bool metrics_pattern1_shift_at(const Kokkos::Cuda& space, const MetricsFields<T>& f, std::uint64_t at, P1Acc& out,
                               double& shift) {
  return at < f.n && pattern1<T>(space, f, f.orig + at, shift, out);
}

template bool metrics_pattern1<float>(const Kokkos::Cuda&, const MetricsFields<float>&, double, P1Acc&);
template bool metrics_pattern1<double>(const Kokkos::Cuda&, const MetricsFields<double>&, double, P1Acc&);
template bool metrics_pattern1_shift_at<float>(const Kokkos::Cuda&, const MetricsFields<float>&, std::uint64_t, P1Acc&,
                                               double&);
template bool metrics_pattern1_shift_at<double>(const Kokkos::Cuda&, const MetricsFields<double>&, std::uint64_t,
                                                P1Acc&, double&);

template <class T>
bool metrics_pattern2(const Kokkos::Cuda& space, const MetricsFields<T>& f, const MetricsShape& s, int lags,
                      double mean, P2Acc& out) {
  if (!enabled() || f.n == 0 || lags < 0 || lags > kQualityMaxLag || s.rank < 1 || s.rank > 3) return false;
  P2Args g{{s.n0, s.n1, s.n2}, s.rank, lags, mean, 32, 8, 0, 0, 0};
  if (s.n1 == 1 && s.n2 == 1) {  // 1D: the whole block along x
    g.bx = kThreads;
    g.by = 1;
  }
  g.tx = (s.n0 + g.bx - 1) / g.bx;
  g.ty = (s.n1 + g.by - 1) / g.by;
  g.tiles = g.tx * g.ty * ((s.n2 + kP2Planes - 1) / kP2Planes);
  const Elements<T> e{f.orig, f.dec, f.mask, f.fill};
  launch_reduce<P2Acc>(space, pattern2_kernel<T>, 0, g.tiles, e, g, out, "pattern2_kernel");
  return true;
}

template <class T>
bool metrics_pattern3(const Kokkos::Cuda& space, const MetricsFields<T>& f, const MetricsShape& s,
                      const SsimParams& p, P3Acc& out) {
  if (!enabled() || f.n == 0 || p.step != 1 || p.w0 < 1 || p.w1 < 1 || p.w2 < 1 || p.w0 > s.n0 || p.w1 > s.n1 ||
      p.w2 > s.n2)
    return false;
  P3Args g{s.n0, s.n1, s.n2, p.w0, p.w1, p.w2, s.n0 - p.w0 + 1, s.n1 - p.w1 + 1, s.n2 - p.w2 + 1,
           0, 0, 0, kSx + p.w0 - 1, kSy + p.w1 - 1, p.shift, p.c1, p.c2};
  const std::size_t shared = p3_shared_bytes(g.px, g.py);
  int dev = 0, optin = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "shared memory limit");
  if (shared > std::size_t(optin)) return false;  // wide windows: the portable path
  g.tx = (g.nw0 + kSx - 1) / kSx;
  g.ty = (g.nw1 + kSy - 1) / kSy;
  g.tiles = g.tx * g.ty * ((g.nw2 + kSz - 1) / kSz);
  const Elements<T> e{f.orig, f.dec, f.mask, f.fill};
  launch_reduce<P3Acc>(space, pattern3_kernel<T>, shared, g.tiles, e, g, out, "pattern3_kernel");
  return true;
}

template bool metrics_pattern2<float>(const Kokkos::Cuda&, const MetricsFields<float>&, const MetricsShape&, int,
                                      double, P2Acc&);
template bool metrics_pattern2<double>(const Kokkos::Cuda&, const MetricsFields<double>&, const MetricsShape&, int,
                                       double, P2Acc&);
template bool metrics_pattern3<float>(const Kokkos::Cuda&, const MetricsFields<float>&, const MetricsShape&,
                                      const SsimParams&, P3Acc&);
template bool metrics_pattern3<double>(const Kokkos::Cuda&, const MetricsFields<double>&, const MetricsShape&,
                                       const SsimParams&, P3Acc&);

template <class T>
bool metrics_pdf(const Kokkos::Cuda& space, const MetricsFields<T>& f, const PdfParams& p, std::uint64_t* hist) {
  constexpr int kMaxBins = 4096;  // 32 KiB of shared counts
  if (!enabled() || f.n == 0 || p.bins < 1 || p.bins > kMaxBins) return false;
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t), "64-bit global counts");
  const std::size_t shared = 2 * std::size_t(p.bins) * sizeof(unsigned);
  int dev = 0, sms = 0, per_sm = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pdf_kernel<T>, kThreads, shared), "occupancy");
  const std::uint64_t resident = std::uint64_t(sms > 0 ? sms : 1) * std::uint64_t(per_sm > 0 ? per_sm : 1);
  PdfArgs g{f.n, p.bins, p.lo_e, p.se, p.lo_p, p.sp, f.n, 0, std::fabs(p.lo_p * p.sp)};
  constexpr int W = Vec<T>::width;
  split_vectors(f, g.head, g.nvec);
  const std::uint64_t work = g.nvec + (f.n - g.nvec * W);  // lane-iterations
  const std::uint64_t want = (work + kThreads - 1) / kThreads;
  const std::uint64_t blocks = want < resident ? want : resident;
  if (f.n / blocks >= (std::uint64_t(1) << 31)) return false;  // a block's counts must fit 32 bits
  const Elements<T> e{f.orig, f.dec, f.mask, f.fill};
  pdf_kernel<T><<<int(blocks), kThreads, shared, space.cuda_stream()>>>(
      e, g, reinterpret_cast<unsigned long long*>(hist));
  check(cudaGetLastError(), "pdf_kernel");
  return true;
}

template bool metrics_pdf<float>(const Kokkos::Cuda&, const MetricsFields<float>&, const PdfParams&, std::uint64_t*);
template bool metrics_pdf<double>(const Kokkos::Cuda&, const MetricsFields<double>&, const PdfParams&,
                                  std::uint64_t*);

}  // namespace ksz::cuda_spec
