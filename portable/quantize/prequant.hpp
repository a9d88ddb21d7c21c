// Pre-quantization of cuSZ's dual-quantization (cusz-2020, section III-B):
// q = round(x / step) with step = 2 * bound, so x' = q * step is within the
// bound. Floating-point rounding can break that promise for a few values, and
// NaN, Inf or huge magnitudes have no q at all: those are "verbatim" elements,
// stored exactly by the pipeline, and enter the prediction as q = 0.
#pragma once
#include <Kokkos_Core.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "portable/simd/sse2.hpp"

namespace ksz::quantize {

// |q| stays below 2^30 so every q fits int32 with headroom; the Lorenzo
// stage's residuals may wrap, which its exact inverse undoes (mod 2^32).
constexpr double kMaxPrequant = 1073741824.0;

// a * b rounded once. nvcc would otherwise contract a*b+c into an FMA, and the
// CUDA codes would differ from the CPU ones: every backend must agree bit for bit.
KOKKOS_INLINE_FUNCTION double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
KOKKOS_INLINE_FUNCTION double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

struct QuantParams {
  double step;      // quantization step
  double inv_step;  // 1 / step
  double bound;     // absolute bound every reconstructed value must meet
};

// The quantization step of an absolute bound: twice it, or where the bound is
// not positive (a constant field under REL, or bound 0) the magnitude of the
// field's largest finite value (1 without one), and never past the largest
// double. Host and device alike (the interp profile's unit on GPUs).
KOKKOS_INLINE_FUNCTION double quant_step(double abs_bound, bool any_finite, double max) {
  double step = 2 * abs_bound;
  if (!(step > 0)) step = (any_finite && max != 0) ? ::fabs(max) : 1.0;
  if (!(step <= DBL_MAX)) step = DBL_MAX;  // +Inf (NaN took the branch above)
  return step;
}

// The one reconstruction formula, shared by compressor check and decompressor.
template <class T>
KOKKOS_INLINE_FUNCTION T reconstruct(std::int32_t q, double step) {
  return static_cast<T>(mul_rn(static_cast<double>(q), step));
}

// floor(h) for |h| < 2^31, exactly. On the host without a libm call (x86-64's
// baseline has no SSE4.1 round instruction): truncate, then step down where
// truncation went up (negative non-integers).
KOKKOS_INLINE_FUNCTION std::int32_t floor_i32(double h) {
#ifdef __CUDA_ARCH__
  return static_cast<std::int32_t>(::floor(h));
#else
  std::int64_t t = static_cast<std::int64_t>(h);
  if (static_cast<double>(t) > h) --t;
  return static_cast<std::int32_t>(t);
#endif
}

// Returns true and sets q when x is representable within the bound; false
// (q = 0) when x must be stored verbatim.
template <class T>
KOKKOS_INLINE_FUNCTION bool prequantize(T x, const QuantParams& p, std::int32_t& q) {
  const double v = mul_rn(static_cast<double>(x), p.inv_step);
  q = 0;
  if (!(::fabs(v) < kMaxPrequant)) return false;  // NaN, Inf, out of range
  const std::int32_t r = floor_i32(add_rn(v, 0.5));  // |v| < kMaxPrequant (checked above)
  const double err = ::fabs(static_cast<double>(x) - static_cast<double>(reconstruct<T>(r, p.step)));
  if (!(err <= p.bound)) return false;
  q = r;
  return true;
}

// prequantize() with three conversions instead of six (GPUs run conversions
// at a quarter of their FP64 rate): floor(h) from the nearest integer that
// adding 1.5 * 2^52 leaves in the low word of the sum (|h| < 2^30 + 1, so the
// sum lies in [2^52, 2^53), an integer), stepped down where it went up; the
// reconstruction from that floor as a double (equal to the int's conversion).
// The same q and the same verdict for every x.
template <class T>
KOKKOS_INLINE_FUNCTION bool prequantize_magic(T x, const QuantParams& p, std::int32_t& q) {
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  const double xd = static_cast<double>(x);
  const double v = mul_rn(xd, p.inv_step);
  const bool in = ::fabs(v) < kMaxPrequant;  // NaN: false
  const double h = add_rn(in ? v : 0.0, 0.5);
  const double s = add_rn(h, kMagic);
  double f = add_rn(s, -kMagic);  // the nearest integer of h
  const bool up = f > h;
  f = up ? add_rn(f, -1.0) : f;  // floor(h), exact
  std::uint64_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  const std::int32_t r = static_cast<std::int32_t>(static_cast<std::uint32_t>(bits)) - static_cast<std::int32_t>(up);
  const T rec = static_cast<T>(mul_rn(f, p.step));  // reconstruct<T>(r, step)
  const bool ok = in && ::fabs(xd - static_cast<double>(rec)) <= p.bound;
  q = ok ? r : 0;
  return ok;
}

// prequantize() over x[0, n) into q, on the host; returns the verbatim count.
// With SSE2 (the x86-64 baseline) two elements a step: the same operations in
// the same order as prequantize(), so the same q and the same verdicts (the
// floor is a truncation to int32 stepped down where it went up: |v + 0.5| <
// 2^30 + 1 after the range test, and out-of-range v enter as 0 and are refused
// by the mask). Compilers leave prequantize()'s branches scalar: 1.7 GB/s on
// 2 cores, 40% of the compressor's time.
template <class T>
inline std::uint32_t prequantize_span(const T* __restrict__ x, std::int32_t* __restrict__ q, std::uint64_t n,
                                      const QuantParams& p) {
  std::uint32_t bad = 0;
  std::uint64_t i = 0;
#if defined(KSZ_HAVE_SSE2)
  const __m128d inv = _mm_set1_pd(p.inv_step), step = _mm_set1_pd(p.step), bound = _mm_set1_pd(p.bound);
  const __m128d half = _mm_set1_pd(0.5), kmax = _mm_set1_pd(kMaxPrequant), sign = _mm_set1_pd(-0.0);
  for (; i + 2 <= n; i += 2) {
    __m128d xd;
    if constexpr (sizeof(T) == 4)
      xd = _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i))));
    else
      xd = _mm_loadu_pd(reinterpret_cast<const double*>(x + i));
    const __m128d v = _mm_mul_pd(xd, inv);
    const __m128d in = _mm_cmplt_pd(_mm_andnot_pd(sign, v), kmax);  // NaN: false
    const __m128d h = _mm_add_pd(_mm_and_pd(v, in), half);
    __m128i r = _mm_cvttpd_epi32(h);
    const __m128d up = _mm_cmpgt_pd(_mm_cvtepi32_pd(r), h);
    r = _mm_add_epi32(r, _mm_shuffle_epi32(_mm_castpd_si128(up), 0x08));  // -1 where truncation went up
    __m128d rec = _mm_mul_pd(_mm_cvtepi32_pd(r), step);
    if constexpr (sizeof(T) == 4) rec = _mm_cvtps_pd(_mm_cvtpd_ps(rec));  // through T
    const __m128d err = _mm_andnot_pd(sign, _mm_sub_pd(xd, rec));
    const __m128d ok = _mm_and_pd(in, _mm_cmple_pd(err, bound));  // NaN err: false
    r = _mm_and_si128(r, _mm_shuffle_epi32(_mm_castpd_si128(ok), 0x08));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), r);
    const int m = _mm_movemask_pd(ok);
    bad += 2 - ((m & 1) + (m >> 1));
  }
#endif
  for (; i < n; ++i) bad += prequantize(x[i], p, q[i]) ? 0 : 1;
  return bad;
}

}  // namespace ksz::quantize
