// Logarithmic transform for point-wise relative error bounds (Liang et al.,
// used by SZ and the ParaSZ paper, parasz-pipeline section III step 1):
// y = log2|x| turns |x - x'| <= e|x| into an absolute bound on y. Sign and
// zero are kept apart: a sign bitmap, and zeros mapped to a level below every
// real log value that the inverse maps back to exactly 0.
//
// log2/exp2 here use only + - * / rounded once each (mul_rn/add_rn) and exact
// bit manipulation, never the math library: CUDA's exp2 and glibc's differ in
// the last bit, and the compressor's per-element check must see exactly what
// every decompressor (any backend) will compute.
#pragma once
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "portable/quantize/prequant.hpp"

namespace ksz::transform {

using quantize::add_rn;
using quantize::mul_rn;

KOKKOS_INLINE_FUNCTION double div_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

KOKKOS_INLINE_FUNCTION std::uint64_t bits_of(double a) {
  std::uint64_t b;
  memcpy(&b, &a, 8);
  return b;
}
KOKKOS_INLINE_FUNCTION double from_bits(std::uint64_t b) {
  double a;
  memcpy(&a, &b, 8);
  return a;
}
// 2^k for k in [-1022, 1023], exact.
KOKKOS_INLINE_FUNCTION double pow2i(int k) { return from_bits(std::uint64_t(k + 1023) << 52); }

// log2(a) for finite a > 0 (subnormals included). About 1e-15 absolute error;
// exactness does not matter (the compressor checks the inverse), determinism does.
KOKKOS_INLINE_FUNCTION double log2_det(double a) {
  int adj = 0;
  std::uint64_t b = bits_of(a);
  if (((b >> 52) & 0x7ff) == 0) {  // subnormal: scale into the normal range, exactly
    a = mul_rn(a, 18014398509481984.0);  // 2^54
    b = bits_of(a);
    adj = -54;
  }
  int e = int((b >> 52) & 0x7ff) - 1023 + adj;
  double m = from_bits((b & 0x000FFFFFFFFFFFFFull) | (std::uint64_t(1023) << 52));  // [1, 2)
  if (m > 1.4142135623730951) {  // keep m in [sqrt(1/2), sqrt(2)): |s| < 0.172
    m = mul_rn(m, 0.5);
    e += 1;
  }
  // ln m = 2 atanh(s), s = (m-1)/(m+1): 2 (s + s^3/3 + s^5/5 + ...).
  const double s = div_rn(add_rn(m, -1.0), add_rn(m, 1.0));
  const double s2 = mul_rn(s, s);
  double p = 1.0 / 23.0;
  p = add_rn(mul_rn(p, s2), 1.0 / 21.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 19.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 17.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 15.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 13.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 11.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 9.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 7.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 5.0);
  p = add_rn(mul_rn(p, s2), 1.0 / 3.0);
  p = add_rn(mul_rn(p, s2), 1.0);
  const double ln_m = mul_rn(mul_rn(2.0, s), p);
  return add_rn(double(e), mul_rn(ln_m, 1.4426950408889634));  // 1 / ln 2
}

// 2^y; +Inf above 1024, 0 below -1080, NaN for NaN.
KOKKOS_INLINE_FUNCTION double exp2_det(double y) {
  if (y != y) return y;
  if (y >= 1024.0) return from_bits(0x7FF0000000000000ull);
  if (y < -1080.0) return 0.0;
  const double k = ::floor(add_rn(y, 0.5));
  const double t = mul_rn(add_rn(y, -k), 0.6931471805599453);  // |t| <= 0.347, y - k exact
  // e^t by Taylor to t^14 (remainder < 1e-19).
  double p = 1.0 / 87178291200.0;  // 1/14!
  p = add_rn(mul_rn(p, t), 1.0 / 6227020800.0);
  p = add_rn(mul_rn(p, t), 1.0 / 479001600.0);
  p = add_rn(mul_rn(p, t), 1.0 / 39916800.0);
  p = add_rn(mul_rn(p, t), 1.0 / 3628800.0);
  p = add_rn(mul_rn(p, t), 1.0 / 362880.0);
  p = add_rn(mul_rn(p, t), 1.0 / 40320.0);
  p = add_rn(mul_rn(p, t), 1.0 / 5040.0);
  p = add_rn(mul_rn(p, t), 1.0 / 720.0);
  p = add_rn(mul_rn(p, t), 1.0 / 120.0);
  p = add_rn(mul_rn(p, t), 1.0 / 24.0);
  p = add_rn(mul_rn(p, t), 1.0 / 6.0);
  p = add_rn(mul_rn(p, t), 0.5);
  p = add_rn(mul_rn(p, t), 1.0);
  p = add_rn(mul_rn(p, t), 1.0);
  const int ki = int(k);
  if (ki > 1023) return mul_rn(mul_rn(p, pow2i(1023)), pow2i(ki - 1023));
  if (ki < -1022) return mul_rn(mul_rn(p, pow2i(ki + 600)), pow2i(-600));
  return mul_rn(p, pow2i(ki));
}

KOKKOS_INLINE_FUNCTION bool is_finite(double v) { return v - v == 0; }

// Parameters of one transform, stored in the stream.
struct LogParams {
  double zero_level;  // y given to zeros and non-finite values
  double threshold;   // the inverse maps y' < threshold to 0
};

// The one inverse formula, shared by the compressor check and the decompressor.
template <class T>
KOKKOS_INLINE_FUNCTION T inverse_one(double y, bool negative, double threshold) {
  const T mag = y < threshold ? T(0) : static_cast<T>(exp2_det(y));
  return negative ? -mag : mag;
}

// |x - x'| <= e|x| checked conservatively in double: x - x' is exact for the
// values that matter (Sterbenz, e < 1/2) and e|x| is shrunk by 2 ulps so that
// rounding never admits a value that the exact inequality rejects. Zeros must
// come back as zeros (of the same sign), non-finite values never pass.
template <class T>
KOKKOS_INLINE_FUNCTION bool pw_within(T x, T xr, double e) {
  double a = static_cast<double>(x), b = static_cast<double>(xr);
  if (!is_finite(a)) return false;
  if (::fabs(a) < 0x1p-900) {  // keep e|a| out of the subnormal range, where it rounds coarsely (exact scaling)
    a = mul_rn(a, 0x1p600);
    b = mul_rn(b, 0x1p600);
  }
  if (a == 0) return b == 0 && (bits_of(a) >> 63) == (bits_of(b) >> 63);
  const double err = ::fabs(add_rn(a, -b));
  const double lim = mul_rn(mul_rn(e, ::fabs(a)), 0.99999999999999956);  // 1 - 2^-51
  return err <= lim;
}

// Forward stage, pass 1: y = log2|x| for finite nonzero x, NaN for the rest
// (zeros and non-finite values get the zero level in pass 2, once it is known).
template <class ExecSpace, class T>
void forward(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
             Kokkos::View<double*, typename ExecSpace::memory_space> y) {
  Kokkos::parallel_for(
      "ksz::transform::forward", Kokkos::RangePolicy<ExecSpace>(space, 0, in.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i) {
        const double v = static_cast<double>(in(i));
        y(i) = (is_finite(v) && v != 0) ? log2_det(::fabs(v)) : from_bits(0x7FF8000000000000ull);
      });
}

// Statistics pass 2 needs: smallest log of a finite nonzero magnitude (from
// pass 1's y), whether any element has its sign bit set / clear.
struct LogStats {
  double min_log;
  bool any_nonzero;
  bool any_negative, any_positive;
};

// Functors, not lambdas: see the note on parallel_reduce in portable/predict/lorenzo/lorenzo.hpp.
template <class Mem>
struct LogMinMax {
  Kokkos::View<const double*, Mem> y;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t i, Kokkos::MinMaxScalar<double>& acc) const {
    const double l = y(i);
    if (l == l) {
      if (l < acc.min_val) acc.min_val = l;
      if (l > acc.max_val) acc.max_val = l;
    }
  }
};
template <class Mem, class T>
struct SignBitCount {
  Kokkos::View<const T*, Mem> in;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t i, std::uint64_t& acc) const {
    acc += (bits_of(static_cast<double>(in(i))) >> 63) ? 1 : 0;
  }
};

template <class ExecSpace, class T>
LogStats log_stats(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                   Kokkos::View<const double*, typename ExecSpace::memory_space> y) {
  using Mem = typename ExecSpace::memory_space;
  using MM = Kokkos::MinMax<double>;
  typename MM::value_type r;
  Kokkos::parallel_reduce("ksz::transform::log_min", Kokkos::RangePolicy<ExecSpace>(space, 0, y.extent(0)),
                          LogMinMax<Mem>{y}, MM(r));
  std::uint64_t neg = 0;
  Kokkos::parallel_reduce("ksz::transform::signs", Kokkos::RangePolicy<ExecSpace>(space, 0, in.extent(0)),
                          SignBitCount<Mem, T>{in}, neg);
  LogStats s;
  s.any_nonzero = r.min_val <= r.max_val;
  s.min_log = s.any_nonzero ? r.min_val : 0.0;
  s.any_negative = neg > 0;
  s.any_positive = neg < in.extent(0);
  return s;
}

// Zero level and threshold for a transformed bound b: every nonzero y is
// >= min_log, so its reconstruction is >= min_log - b > threshold, and a zero's
// reconstruction is <= zero_level + b < threshold.
inline LogParams log_params(const LogStats& s, double b) {
  LogParams p;
  p.threshold = std::floor(s.min_log) - 2 * b - 1;
  p.zero_level = p.threshold - 2 * b - 1;
  return p;
}

// Forward stage, pass 2: zeros and non-finite values (NaN in y) get the zero
// level (non-finite ones are then stored verbatim by the caller's check).
template <class ExecSpace>
void set_zero_level(const ExecSpace& space, const LogParams& p,
                    Kokkos::View<double*, typename ExecSpace::memory_space> y) {
  const double zl = p.zero_level;
  Kokkos::parallel_for(
      "ksz::transform::zero_level", Kokkos::RangePolicy<ExecSpace>(space, 0, y.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i) {
        if (y(i) != y(i)) y(i) = zl;
      });
}

// Sign bitmap, bit i%8 of byte i/8 (LSB first), 1 = sign bit set.
template <class ExecSpace, class T>
void sign_bits(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
               Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> bits) {
  const std::uint64_t n = in.extent(0);
  Kokkos::parallel_for(
      "ksz::transform::sign_bits", Kokkos::RangePolicy<ExecSpace>(space, 0, bits.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t j) {
        std::uint32_t byte = 0;
        for (std::uint64_t k = 0; k < 8 && 8 * j + k < n; ++k)
          byte |= std::uint32_t(bits_of(static_cast<double>(in(8 * j + k))) >> 63) << k;
        bits(j) = static_cast<std::uint8_t>(byte);
      });
}

// Sign of element i: mode 0 all non-negative, 1 all negative, 2 from the bitmap.
enum SignMode : std::uint32_t { kAllPositive = 0, kAllNegative = 1, kBitmap = 2 };

// Inverse stage: out(i) = +-2^y(i), 0 below the threshold.
template <class ExecSpace, class T>
void inverse(const ExecSpace& space, Kokkos::View<const double*, typename ExecSpace::memory_space> y,
             std::uint32_t sign_mode, Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> bits,
             double threshold, Kokkos::View<T*, typename ExecSpace::memory_space> out) {
  Kokkos::parallel_for(
      "ksz::transform::inverse", Kokkos::RangePolicy<ExecSpace>(space, 0, y.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i) {
        const bool neg = sign_mode == kAllNegative || (sign_mode == kBitmap && ((bits(i / 8) >> (i % 8)) & 1));
        out(i) = inverse_one<T>(y(i), neg, threshold);
      });
}

}  // namespace ksz::transform
