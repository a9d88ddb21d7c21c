// Pre-quantization of cuSZ's dual-quantization (cusz-2020, section III-B):
// q = round(x / step) with step = 2 * bound, so x' = q * step is within the
// bound. Floating-point rounding can break that promise for a few values, and
// NaN, Inf or huge magnitudes have no q at all: those are "verbatim" elements,
// stored exactly by the pipeline, and enter the prediction as q = 0.
#pragma once
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>

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

}  // namespace ksz::quantize
