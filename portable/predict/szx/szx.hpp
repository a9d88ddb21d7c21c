// SZx block coder (szx-ultrafast, sections IV and V-A): the field is cut into
// fixed-size 1D blocks; a block whose values all lie within the bound of the
// mean of its min and max ("median") is stored as that median (constant
// block); any other block is normalized by its median and each normalized
// value keeps only its leading reqLength bits (sign, exponent and the mantissa
// bits the radius and the bound require, Formula 4), right-aligned into whole
// bytes (Solution C). Leading bytes equal to the previous value's are coded in
// 2 bits (xor_leadingzero_array), the rest ("mid-bytes") are copied.
//
// Departures from the paper, both for the bound contract: the compressor
// rebuilds every value exactly as the decompressor will and turns a block
// into a verbatim block (raw values) if one value would miss the bound; a
// block holding NaN or Inf is verbatim too. Float expressions that decide or
// produce output use explicitly rounded operations (no FMA contraction), so
// every backend writes and reads the same bytes.
#pragma once
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "portable/quantize/prequant.hpp"
#include "portable/simd/sse2.hpp"

namespace ksz::szx {

// Largest block size a stream may declare: bounds the output a stream of a
// given size can ask for (one kind byte + one median per block).
constexpr std::uint32_t kMaxBlock = 4096;

// Block kind byte: 0 constant, 255 verbatim, otherwise the required length
// in bits (kSignExp..kTotal) of a non-constant block.
constexpr std::uint8_t kConstant = 0;
constexpr std::uint8_t kVerbatim = 255;

template <class T>
struct Bits;
template <>
struct Bits<float> {
  using U = std::uint32_t;
  static constexpr int kTotal = 32;
  static constexpr int kSignExp = 9;  // sign + exponent bits
};
template <>
struct Bits<double> {
  using U = std::uint64_t;
  static constexpr int kTotal = 64;
  static constexpr int kSignExp = 12;
};

KOKKOS_INLINE_FUNCTION std::uint32_t to_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}
KOKKOS_INLINE_FUNCTION std::uint64_t to_bits(double x) {
#ifdef __CUDA_ARCH__
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
#endif
}
template <class T>
KOKKOS_INLINE_FUNCTION T from_bits(typename Bits<T>::U u) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 4) return __uint_as_float(u);
  else return __longlong_as_double(static_cast<long long>(u));
#else
  T x;
  std::memcpy(&x, &u, sizeof(T));
  return x;
#endif
}

// a + b rounded once in T (no contraction, same on every backend).
KOKKOS_INLINE_FUNCTION float add_t(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
KOKKOS_INLINE_FUNCTION double add_t(double a, double b) { return quantize::add_rn(a, b); }

// Exactly |a - b| <= e, for finite or non-finite a, b. Rounding is monotone,
// so a rounded difference below e is a true one; at equality TwoSum tells
// whether the subtraction was exact.
KOKKOS_INLINE_FUNCTION bool within(double a, double b, double e) {
  const double s = quantize::add_rn(a, -b);
  const double m = ::fabs(s);
  if (!(m <= e)) return false;
  if (m < e) return true;
  const double bb = quantize::add_rn(s, -a);
  const double err = quantize::add_rn(quantize::add_rn(a, -quantize::add_rn(s, -bb)), quantize::add_rn(-b, -bb));
  return err == 0;
}

// floor(log2 |v|) read from the exponent field (subnormals and 0 give -1023).
KOKKOS_INLINE_FUNCTION int exponent_of(double v) {
  return static_cast<int>((to_bits(v) >> 52) & 0x7ff) - 1023;
}

// Formula 4: sign + exponent + the mantissa bits from the radius' exponent
// down to the bound's, plus one guard bit (as SZx does) so that truncation
// costs at most half the bound and the final addition has room to round.
template <class T>
KOKKOS_INLINE_FUNCTION int required_length(double radius, double bound) {
  const int req_expo = bound > 0 ? exponent_of(bound) : -1100;
  int len = Bits<T>::kSignExp + exponent_of(radius) - req_expo + 1;
  if (!(radius - radius == 0)) len = Bits<T>::kTotal;  // infinite radius (f64 overflow)
  if (len < Bits<T>::kSignExp) len = Bits<T>::kSignExp;
  if (len > Bits<T>::kTotal) len = Bits<T>::kTotal;
  return len;
}

KOKKOS_INLINE_FUNCTION int bytes_of(int req_length) { return (req_length + 7) / 8; }

KOKKOS_INLINE_FUNCTION int clz64(std::uint64_t x) {  // x != 0
#ifdef __CUDA_ARCH__
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}

// Identical leading bytes of two codes of `nbytes` bytes, at most 3 (2-bit code).
template <class U>
KOKKOS_INLINE_FUNCTION int leading_bytes(U a, U b, int nbytes) {
  const std::uint64_t x = static_cast<std::uint64_t>(a ^ b);
  const int cap = nbytes < 3 ? nbytes : 3;
  if (x == 0) return cap;
  const int k = (clz64(x) - (64 - 8 * nbytes)) >> 3;
  return k < cap ? k : cap;
}

template <class T>
struct BlockPlan {
  std::uint8_t kind;
  T median;
  std::uint64_t mid_bytes;  // bytes this block adds to the mid-byte array
};

// What min and max decide (Algorithm 1, lines 3-7): the median, whether the
// block is constant, else the required length in bits.
template <class T>
struct BlockHead {
  T median;
  bool constant;
  int len_bits;
};
template <class T>
KOKKOS_INLINE_FUNCTION BlockHead<T> block_head(T mn, T mx, double e) {
  // A reduction may meet -0 and +0 in any order: both ends canonical, so the
  // median does not depend on the schedule.
  if (mn == 0) mn = T(0);
  if (mx == 0) mx = T(0);
  const double dmn = mn, dmx = mx;
  const T med = static_cast<T>(quantize::add_rn(quantize::mul_rn(dmn, 0.5), quantize::mul_rn(dmx, 0.5)));
  const double dmed = med;
  // Every value lies in [mn, mx], so the two ends decide a constant block.
  if (within(dmx, dmed, e) && within(dmn, dmed, e)) return {med, true, 0};
  const double r1 = quantize::add_rn(dmx, -dmed), r2 = quantize::add_rn(dmed, -dmn);
  return {med, false, required_length<T>(r1 > r2 ? r1 : r2, e)};
}

// A compression's absolute bound: `bound`, or under REL bound times the span
// of the finite values whose extremes a value-range reduction left (mn > mx:
// none, a span of 0). Host and device (the CUDA one-pass kernel resolves it
// from the extremes left on the device, cuda_spec::SzxBound).
KOKKOS_INLINE_FUNCTION double resolved_bound(double bound, bool rel, double mn, double mx) {
  return rel ? bound * (mn <= mx ? mx - mn : 0.0) : bound;
}

// When every value of a finite, non-constant block decodes within e without
// testing each one: max(|mn|, |mx|) <= proof_threshold<T>(e). The per-value
// test then passes everywhere, so skipping it changes no byte. Why, with
// p = 24 (f32) or 53 (f64) bits of precision and m the median:
// - a = v - m rounded; R = kSignExp + exponent(r) - exponent(e) + 1 with r >= e
//   (the block is not constant), so R > kSignExp; the code keeps a's top R
//   bits, so the truncation |a - t| < 2^(exponent(a) - R + kSignExp) <= e / 2
//   when exponent(a) <= exponent(r) (r bounds |a| up to rounding; where a
//   rounds up to the next power of two it is that power, which truncation
//   keeps exactly). R clamped at kTotal truncates nothing. For a subnormal
//   a, |a - t| < the smallest normal, below e / 2 when e >= 2^-100 (f32) or
//   2^-1000 (f64).
// - the two roundings (v - m and m + t) add at most 2^-p (|v - m| + |m + t|)
//   <= 2^-p 5 M, M = max(|mn|, |mx|), below e / 2 when M <= e 2^(p - 4).
// - M <= 2^100 (2^1000) keeps m + t away from overflow.
// (Host and device: the CUDA one-pass kernel works it out from a bound it
// derives itself, resolved_bound.)
template <class T>
KOKKOS_INLINE_FUNCTION double proof_threshold(double e) {
  constexpr int p = std::numeric_limits<T>::digits, top = sizeof(T) == 4 ? 100 : 1000;
  if (!(e >= ::ldexp(1.0, -top)) || !(e <= std::numeric_limits<double>::max())) return -1.0;
  return ::fmin(::ldexp(e, p - 4), ::ldexp(1.0, top));
}

// A bound in T under which |x - value|, computed in T, proves within(x,
// value, e): f32 keeps a 2^-20 margin for its own rounding (and only exact
// hits below FLT_MIN, where converting e could round up); f64 is within()'s
// own first test. Host and device, as proof_threshold.
KOKKOS_INLINE_FUNCTION float fast_bound(double e, float) {
  if (!(e >= static_cast<double>(std::numeric_limits<float>::min()))) return 0.0f;
  const double s = e * (1.0 - 0x1p-20);
  const double top = static_cast<double>(std::numeric_limits<float>::max());
  return static_cast<float>(s < top ? s : top);
}
KOKKOS_INLINE_FUNCTION double fast_bound(double e, double) { return e > 0 ? ::nextafter(e, 0.0) : 0.0; }
template <class T>
KOKKOS_INLINE_FUNCTION bool bound_proven(T mn, T mx, double threshold) {
  const T m = -mn > mx ? -mn : mx;
  return static_cast<double>(m) <= threshold;
}

// The code of a value (normalize, keep the leading len_bits bits: Solution C)
// and the value a code decodes to: the one formula both sides use.
template <class T>
KOKKOS_INLINE_FUNCTION typename Bits<T>::U code_of(T v, T med, int shift) {
  return to_bits(add_t(v, -med)) >> shift;
}
template <class T>
KOKKOS_INLINE_FUNCTION T value_of(typename Bits<T>::U c, T med, int shift) {
  return add_t(med, from_bits<T>(c << shift));
}

// Decides a block's kind and median and counts its mid-bytes, verifying every
// reconstructed value against the bound (Algorithm 1, lines 3-12).
template <class T, class In>
KOKKOS_INLINE_FUNCTION BlockPlan<T> plan_block(const In& x, std::uint64_t begin, std::uint32_t len, double e) {
  using U = typename Bits<T>::U;
  BlockPlan<T> p{kVerbatim, T(0), 0};
  T mn = x(begin), mx = x(begin);
  bool finite = true;
  for (std::uint32_t i = 0; i < len; ++i) {
    const T v = x(begin + i);
    finite = finite && (v - v == 0);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  if (!finite) return p;
  const BlockHead<T> hd = block_head<T>(mn, mx, e);
  if (hd.constant) {
    p.kind = kConstant;
    p.median = hd.median;
    return p;
  }
  const T med = hd.median;
  const int nbytes = bytes_of(hd.len_bits), shift = Bits<T>::kTotal - hd.len_bits;
  U prev = 0;
  std::uint64_t mid = 0;
  for (std::uint32_t i = 0; i < len; ++i) {
    const T v = x(begin + i);
    const U c = code_of<T>(v, med, shift);
    if (!within(static_cast<double>(v), static_cast<double>(value_of<T>(c, med, shift)), e)) return p;  // verbatim
    mid += static_cast<std::uint64_t>(nbytes - leading_bytes<U>(c, prev, nbytes));
    prev = c;
  }
  p.kind = static_cast<std::uint8_t>(hd.len_bits);
  p.median = med;
  p.mid_bytes = mid;
  return p;
}

// Writes a non-constant block's 2-bit leading codes (4 per byte, first value
// in the most significant pair) and mid-bytes (most significant first).
template <class T, class In, class Bytes>
KOKKOS_INLINE_FUNCTION void encode_block(const In& x, std::uint64_t begin, std::uint32_t len, int len_bits, T med,
                                         const Bytes& lead, std::uint64_t lead_off, const Bytes& mid,
                                         std::uint64_t mid_off) {
  using U = typename Bits<T>::U;
  const int nbytes = bytes_of(len_bits), shift = Bits<T>::kTotal - len_bits;
  U prev = 0;
  std::uint8_t acc = 0;
  for (std::uint32_t i = 0; i < len; ++i) {
    const U c = code_of<T>(x(begin + i), med, shift);
    const int l = leading_bytes<U>(c, prev, nbytes);
    acc = static_cast<std::uint8_t>(acc | (l << (6 - 2 * (i & 3))));
    if ((i & 3) == 3 || i + 1 == len) {
      lead(lead_off + i / 4) = acc;
      acc = 0;
    }
    for (int k = l; k < nbytes; ++k) mid(mid_off++) = static_cast<std::uint8_t>(c >> (8 * (nbytes - 1 - k)));
    prev = c;
  }
}

// Mid-byte count of a non-constant block from its leading codes; returns
// false if a code claims more leading bytes than the block's values have.
template <class Bytes>
KOKKOS_INLINE_FUNCTION bool count_mid(const Bytes& lead, std::uint64_t lead_off, std::uint32_t len, int len_bits,
                                      std::uint64_t& mid) {
  const int nbytes = bytes_of(len_bits);
  mid = 0;
  bool ok = true;
  for (std::uint32_t i = 0; i < len; ++i) {
    const int l = (lead(lead_off + i / 4) >> (6 - 2 * (i & 3))) & 3;
    ok = ok && l <= nbytes;
    mid += static_cast<std::uint64_t>(l <= nbytes ? nbytes - l : 0);
  }
  return ok;
}

// Inverse of encode_block (serial index propagation: a leading byte is the
// previous value's byte at the same position).
template <class T, class Bytes, class Out>
KOKKOS_INLINE_FUNCTION void decode_block(const Bytes& lead, std::uint64_t lead_off, const Bytes& mid,
                                         std::uint64_t mid_off, std::uint32_t len, int len_bits, T med,
                                         const Out& out, std::uint64_t begin) {
  using U = typename Bits<T>::U;
  const int nbytes = bytes_of(len_bits), shift = Bits<T>::kTotal - len_bits;
  U prev = 0;
  for (std::uint32_t i = 0; i < len; ++i) {
    const int l = (lead(lead_off + i / 4) >> (6 - 2 * (i & 3))) & 3;
    // The l leading bytes come from the previous value, the rest from mid.
    U c = l > 0 ? prev >> (8 * (nbytes - l)) : U(0);
    for (int k = l; k < nbytes; ++k) c = (c << 8) | static_cast<U>(mid(mid_off++));
    out(begin + i) = value_of<T>(c, med, shift);
    prev = c;
  }
}

// ---- Host fast path of the thread-per-block layout (section V-A on CPUs):
// the same decisions and bytes as plan_block / encode_block / decode_block
// above, on raw pointers, in short loops over a block a compiler can
// vectorize (min/max, codes, leading-byte counts), with the serial mid-byte
// chain branch-free. Only host execution spaces take it; devices keep the code
// above. Tests pin the bytes: the team layout (which does not take this path)
// and the stream hashes of tests/szx (StreamBytesPinned).

template <class ExecSpace>
inline constexpr bool kHostPath = std::is_same<typename ExecSpace::memory_space, Kokkos::HostSpace>::value;

namespace host {

// Lanes of the min/max loop: enough independent accumulators for the
// compiler to fill vector registers.
constexpr std::uint32_t kLanes = 16;

inline std::uint32_t bswap(std::uint32_t x) { return __builtin_bswap32(x); }
inline std::uint64_t bswap(std::uint64_t x) { return __builtin_bswap64(x); }

// The m low bytes of c, most significant first, as one sizeof(U)-byte store
// (the bytes after the m are overwritten by the next values); the caller owns
// sizeof(U) bytes at p. Each shift is split in two halves so that it stays
// below the width for every m in 0..sizeof(U), without a branch or a mask.
template <class U>
inline void put_be(std::uint8_t* p, U c, int m) {
  const int h = 4 * (int(sizeof(U)) - m);
  U w = static_cast<U>(static_cast<U>(c << h) << h);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  w = bswap(w);
#endif
  std::memcpy(p, &w, sizeof(U));
}
// The inverse: m bytes at p, most significant first; sizeof(U) bytes readable.
template <class U>
inline U get_be(const std::uint8_t* p, int m) {
  const int h = 4 * (int(sizeof(U)) - m);
  U w;
  std::memcpy(&w, p, sizeof(U));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  w = bswap(w);
#endif
  return static_cast<U>((w >> h) >> h);
}

template <class T>
struct MinMax {
  T mn, mx;
  bool finite;
};
// Min, max and finiteness of a block. Finite values have one min and one max
// up to the sign of zero, which block_head makes canonical, so the lane order
// does not change the result (nor what a NaN does to min/max: it makes the
// block verbatim).
template <class T>
inline MinMax<T> min_max(const T* x, std::uint32_t len) {
  T mn[kLanes], mx[kLanes], z[kLanes];
  for (std::uint32_t j = 0; j < kLanes; ++j) {
    mn[j] = x[0];
    mx[j] = x[0];
    z[j] = 0;
  }
  std::uint32_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    for (std::uint32_t j = 0; j < kLanes; ++j) {
      const T v = x[i + j];
      mn[j] = v < mn[j] ? v : mn[j];
      mx[j] = v > mx[j] ? v : mx[j];
      z[j] += v - v;  // stays 0 while finite; NaN from the first NaN or Inf on
    }
  for (; i < len; ++i) {
    const T v = x[i];
    mn[0] = v < mn[0] ? v : mn[0];
    mx[0] = v > mx[0] ? v : mx[0];
    z[0] += v - v;
  }
  for (std::uint32_t j = 1; j < kLanes; ++j) {
    mn[0] = mn[j] < mn[0] ? mn[j] : mn[0];
    mx[0] = mx[j] > mx[0] ? mx[j] : mx[0];
    z[0] += z[j];
  }
  return {mn[0], mx[0], z[0] == 0};
}

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
// SSE2 (the x86-64 baseline) for the loop above: compilers do not vectorize a
// float min/max without -ffinite-math-only. Four vectors per step; NaNs are
// caught by an unordered compare, infinities by the final min and max.
using simd::Sse2;
template <class T>
inline MinMax<T> min_max_sse2(const T* x, std::uint32_t len) {
  using S = Sse2<T>;
  constexpr std::uint32_t kStep = 4 * S::kWidth;
  typename S::V mn[4], mx[4], nan = S::zero();
  for (int j = 0; j < 4; ++j) mn[j] = mx[j] = S::set1(x[0]);
  std::uint32_t i = 0;
  for (; i + kStep <= len; i += kStep)
    for (std::uint32_t j = 0; j < 4; ++j) {
      const typename S::V v = S::load(x + i + j * S::kWidth);
      mn[j] = S::min(mn[j], v);
      mx[j] = S::max(mx[j], v);
      nan = S::or_(nan, S::unordered(v, v));
    }
  T a[kStep], b[kStep];
  for (std::uint32_t j = 0; j < 4; ++j) {
    S::store(a + j * S::kWidth, mn[j]);
    S::store(b + j * S::kWidth, mx[j]);
  }
  T lo = a[0], hi = b[0];
  bool finite = !S::any(nan);
  for (std::uint32_t j = 1; j < kStep; ++j) {
    lo = a[j] < lo ? a[j] : lo;
    hi = b[j] > hi ? b[j] : hi;
  }
  for (; i < len; ++i) {
    const T v = x[i];
    finite = finite && (v == v);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  return {lo, hi, finite && (lo - lo == 0) && (hi - hi == 0)};
}
inline MinMax<float> min_max(const float* x, std::uint32_t len) { return min_max_sse2(x, len); }
inline MinMax<double> min_max(const double* x, std::uint32_t len) { return min_max_sse2(x, len); }
#endif

// codes[0] = 0 and codes[i + 1] = code_of(x[i]). With Check, returns whether
// every value passes the fast test, which proves the bound; a block that
// fails it gets the exact test.
template <class T, bool Check>
inline bool codes_of(const T* x, std::uint32_t len, T med, int shift, double e, typename Bits<T>::U* codes) {
  const T ef = Check ? fast_bound(e, T()) : T(0);
  int far = 0;
  codes[0] = 0;
  for (std::uint32_t i = 0; i < len; ++i) {
    const T v = x[i];
    const typename Bits<T>::U c = code_of<T>(v, med, shift);
    codes[i + 1] = c;
    if constexpr (Check) {
      const T d = v - value_of<T>(c, med, shift);
      far |= !((d < 0 ? -d : d) <= ef);
    }
  }
  return far == 0;
}

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
// f64 with the check in SSE2: without SSE4.2's 64-bit compares compilers
// leave the loop above scalar. Same operations, two values at a time.
template <>
inline bool codes_of<double, true>(const double* x, std::uint32_t len, double med, int shift, double e,
                                   std::uint64_t* codes) {
  const double efs = fast_bound(e, 0.0);
  const __m128d vm = _mm_set1_pd(med), ef = _mm_set1_pd(efs);
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffll));
  const __m128i sh = _mm_cvtsi32_si128(shift);
  __m128d far = _mm_setzero_pd();
  codes[0] = 0;
  std::uint32_t i = 0;
  for (; i + 2 <= len; i += 2) {
    const __m128d v = _mm_loadu_pd(x + i);
    const __m128i c = _mm_srl_epi64(_mm_castpd_si128(_mm_sub_pd(v, vm)), sh);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i + 1), c);
    const __m128d d = _mm_sub_pd(v, _mm_add_pd(vm, _mm_castsi128_pd(_mm_sll_epi64(c, sh))));
    far = _mm_or_pd(far, _mm_cmpnle_pd(_mm_and_pd(d, abs_mask), ef));  // NaN too
  }
  bool ok = _mm_movemask_pd(far) == 0;
  for (; i < len; ++i) {
    const std::uint64_t c = code_of<double>(x[i], med, shift);
    codes[i + 1] = c;
    const double d = x[i] - value_of<double>(c, med, shift);
    ok = ok && (d < 0 ? -d : d) <= efs;
  }
  return ok;
}
#endif

// leading_bytes(a, b, nbytes) as three compares on the top three bytes of
// the code field (all a 2-bit count can see), in 32 bits for both types:
// (a ^ b) >> shift < cut_k iff the codes share at least k leading bytes
// (k <= min(nbytes, 3); cut 0 is never met). nbytes >= 2 for every kind
// (kSignExp >= 9 bits).
template <class U>
struct Cuts {
  int shift;
  std::uint32_t t1, t2, t3;
  explicit Cuts(int nbytes) : shift(nbytes > 3 ? 8 * (nbytes - 3) : 0) {
    const int top = nbytes > 3 ? 3 : nbytes;
    t1 = std::uint32_t(1) << (8 * (top - 1));
    t2 = std::uint32_t(1) << (8 * (top - 2));
    t3 = top == 3 ? 1 : 0;
  }
  int lead(U x) const {
    const std::uint32_t y = static_cast<std::uint32_t>(x >> shift);
    return int(y < t1) + int(y < t2) + int(y < t3);
  }
};

// `proof`: proof_threshold<T>(e) (below 0: test every value).
template <class T>
inline BlockPlan<T> plan_block(const T* x, std::uint32_t len, double e, double proof) {
  using U = typename Bits<T>::U;
  BlockPlan<T> p{kVerbatim, T(0), 0};
  const MinMax<T> r = min_max(x, len);
  if (!r.finite) return p;
  const BlockHead<T> hd = block_head<T>(r.mn, r.mx, e);
  if (hd.constant) {
    p.kind = kConstant;
    p.median = hd.median;
    return p;
  }
  const T med = hd.median;
  const int nbytes = bytes_of(hd.len_bits), shift = Bits<T>::kTotal - hd.len_bits;
  U codes[kMaxBlock + 1];
  if (bound_proven<T>(r.mn, r.mx, proof))
    codes_of<T, false>(x, len, med, shift, e, codes);
  else if (!codes_of<T, true>(x, len, med, shift, e, codes))
    for (std::uint32_t i = 0; i < len; ++i)
      if (!within(static_cast<double>(x[i]), static_cast<double>(value_of<T>(codes[i + 1], med, shift)), e)) return p;
  const Cuts<U> cut(nbytes);
  std::uint32_t lead = 0;
  for (std::uint32_t i = 0; i < len; ++i) lead += static_cast<std::uint32_t>(cut.lead(codes[i + 1] ^ codes[i]));
  p.kind = static_cast<std::uint8_t>(hd.len_bits);
  p.median = med;
  p.mid_bytes = std::uint64_t(len) * static_cast<std::uint64_t>(nbytes) - lead;
  return p;
}

// encode_block: lead gets (len + 3) / 4 bytes, mid the block's mid-bytes (the
// bytes after them may be another thread's).
template <class T>
inline void encode_block(const T* x, std::uint32_t len, int len_bits, T med, std::uint8_t* lead, std::uint8_t* mid) {
  using U = typename Bits<T>::U;
  const int nbytes = bytes_of(len_bits), shift = Bits<T>::kTotal - len_bits;
  U codes[kMaxBlock + 1];
  std::uint8_t lb[kMaxBlock + 3];
  codes_of<T, false>(x, len, med, shift, 0.0, codes);
  const Cuts<U> cut(nbytes);
  for (std::uint32_t i = 0; i < len; ++i) lb[i] = static_cast<std::uint8_t>(cut.lead(codes[i + 1] ^ codes[i]));
  lb[len] = lb[len + 1] = lb[len + 2] = 0;
  for (std::uint32_t j = 0; 4 * j < len; ++j)
    lead[j] = static_cast<std::uint8_t>(lb[4 * j] << 6 | lb[4 * j + 1] << 4 | lb[4 * j + 2] << 2 | lb[4 * j + 3]);
  // Values before `safe` have sizeof(U) bytes of this block from their
  // position on: one full-width store each; the last few go byte by byte.
  std::uint32_t safe = len;
  for (std::uint32_t tail = 0; safe > 0 && tail < sizeof(U);) tail += static_cast<std::uint32_t>(nbytes - lb[--safe]);
  for (std::uint32_t i = 0; i < safe; ++i) {
    const int m = nbytes - lb[i];
    put_be<U>(mid, codes[i + 1], m);
    mid += m;
  }
  for (std::uint32_t i = safe; i < len; ++i) {
    const U c = codes[i + 1];
    const int m = nbytes - lb[i];
    for (int k = 0; k < m; ++k) mid[k] = static_cast<std::uint8_t>(c >> (8 * (m - 1 - k)));
    mid += m;
  }
}

// Sum of the len 2-bit leading codes at lead; false if one exceeds nbytes
// (count_mid's check). Eight bytes (32 codes) at a time.
inline bool lead_sum(const std::uint8_t* lead, std::uint32_t len, int nbytes, std::uint64_t& sum) {
  constexpr std::uint64_t k55 = 0x5555555555555555ull, k33 = 0x3333333333333333ull, k0f = 0x0f0f0f0f0f0f0f0full;
  std::uint64_t s = 0, over = 0;
  std::uint32_t i = 0;
  // Only nbytes == 2 can be exceeded by a code (3) for any kind a stream may hold.
  for (; i + 32 <= len && nbytes >= 2; i += 32, lead += 8) {
    std::uint64_t w;
    std::memcpy(&w, lead, 8);
    if (nbytes == 2) over |= w & (w >> 1) & k55;
    std::uint64_t t = (w & k33) + ((w >> 2) & k33);
    t = (t + (t >> 4)) & k0f;
    s += (t * 0x0101010101010101ull) >> 56;
  }
  bool ok = over == 0;
  for (std::uint32_t k = 0; i < len; ++i, ++k) {
    const int l = (lead[k / 4] >> (6 - 2 * (k & 3))) & 3;
    ok = ok && l <= nbytes;
    s += static_cast<std::uint64_t>(l);
  }
  sum = s;
  return ok;
}

// decode_block: the block's mid-bytes are [mid, mid_block_end), of an array
// ending at mid_end (full-width loads need sizeof(U) readable bytes).
template <class T>
inline void decode_block(const std::uint8_t* lead, const std::uint8_t* mid, const std::uint8_t* mid_block_end,
                         const std::uint8_t* mid_end, std::uint32_t len, int len_bits, T med, T* out) {
  using U = typename Bits<T>::U;
  const int nbytes = bytes_of(len_bits), shift = Bits<T>::kTotal - len_bits;
  std::uint8_t ms[kMaxBlock + 3];  // mid-bytes per value
  for (std::uint32_t j = 0; 4 * j < len; ++j) {
    const int b = lead[j];
    ms[4 * j] = static_cast<std::uint8_t>(nbytes - (b >> 6));
    ms[4 * j + 1] = static_cast<std::uint8_t>(nbytes - ((b >> 4) & 3));
    ms[4 * j + 2] = static_cast<std::uint8_t>(nbytes - ((b >> 2) & 3));
    ms[4 * j + 3] = static_cast<std::uint8_t>(nbytes - (b & 3));
  }
  U keep[sizeof(U) + 1];  // a value keeps its predecessor's bytes above its m mid-bytes
  for (int m = 0; m <= int(sizeof(U)); ++m) keep[m] = m == int(sizeof(U)) ? U(0) : static_cast<U>(~U(0) << (8 * m));
  U codes[kMaxBlock];
  U prev = 0;
  if (mid_block_end + sizeof(U) <= mid_end) {
    for (std::uint32_t i = 0; i < len; ++i) {
      const int m = ms[i];
      prev = (prev & keep[m]) | get_be<U>(mid, m);
      mid += m;
      codes[i] = prev;
    }
  } else {
    for (std::uint32_t i = 0; i < len; ++i) {
      const int m = ms[i];
      U c = prev & keep[m];
      for (int k = 0; k < m; ++k) c |= static_cast<U>(U(mid[k]) << (8 * (m - 1 - k)));
      mid += m;
      codes[i] = prev = c;
    }
  }
  for (std::uint32_t i = 0; i < len; ++i) out[i] = value_of<T>(codes[i], med, shift);
}

}  // namespace host

// ---- Parallel patterns over blocks: one thread per block (the CPU layout of
// section V-A); every block's output position comes from prefix scans, so the
// bytes do not depend on the schedule.

KOKKOS_INLINE_FUNCTION std::uint32_t block_len(std::uint64_t b, std::uint64_t n, std::uint32_t block) {
  const std::uint64_t begin = b * block, left = n - begin;
  return static_cast<std::uint32_t>(left < block ? left : block);
}
KOKKOS_INLINE_FUNCTION bool is_coded(std::uint8_t kind) { return kind != kConstant && kind != kVerbatim; }
// A kind a stream may hold: constant, verbatim, or a code length in [sign_exp, total].
KOKKOS_INLINE_FUNCTION bool valid_kind(int kind, int sign_exp, int total) {
  return kind == kConstant || kind == kVerbatim || (kind >= sign_exp && kind <= total);
}
template <class T>
KOKKOS_INLINE_FUNCTION bool valid_kind(std::uint8_t kind) {
  return valid_kind(kind, Bits<T>::kSignExp, Bits<T>::kTotal);
}

// off(b) = sum of count(j) for j < b, for b in [0, nb]; returns off(nb).
template <class ExecSpace, class Count>
std::uint64_t exclusive_offsets(const ExecSpace& space, std::uint64_t nb, Count count,
                                Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> off) {
  Kokkos::parallel_scan(
      "ksz::szx::offsets", Kokkos::RangePolicy<ExecSpace>(space, 0, nb + 1),
      KOKKOS_LAMBDA(const std::uint64_t b, std::uint64_t& run, const bool final) {
        if (final) off(b) = run;
        if (b < nb) run += count(b);
      });
  std::uint64_t total = 0;
  Kokkos::deep_copy(total, Kokkos::subview(off, nb));
  return total;
}

// Segment 21 (FORMAT.md "Mid-byte runs", format 1.3): the mid-bytes of each
// run of run_blocks consecutive blocks (16 KiB of input values, at least one
// block), u16 little-endian, so that a decoder finds every run's place from
// the kinds and these counts without reading the leading codes twice. A
// reader may ignore them; one that uses them checks each against the codes.
constexpr std::uint32_t kRunBytes = 16384;
template <class T>
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t run_blocks(std::uint32_t block) {
  return block <= kRunBytes / sizeof(T) ? static_cast<std::uint32_t>(kRunBytes / sizeof(T) / block) : 1u;
}
inline std::uint64_t run_count(std::uint64_t nb, std::uint32_t rb) { return (nb + rb - 1) / rb; }
// Run r's mid-bytes from the blocks' exclusive offsets off(b), b in [0, nb]
// (at most max(16 KiB, one block of 4096 f64 values): a u16).
template <class Off>
KOKKOS_INLINE_FUNCTION std::uint64_t run_mid(const Off& off, std::uint64_t r, std::uint64_t nb, std::uint32_t rb) {
  const std::uint64_t b0 = r * rb, b1 = b0 + rb < nb ? b0 + rb : nb;
  return off(b1) - off(b0);
}

// The runs' counts into runs (2 run_count bytes).
template <class ExecSpace, class Off>
void put_runs(const ExecSpace& space, std::uint64_t nb, std::uint32_t rb, Off off,
              Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> runs) {
  Kokkos::parallel_for(
      "ksz::szx::runs", Kokkos::RangePolicy<ExecSpace>(space, 0, run_count(nb, rb)),
      KOKKOS_LAMBDA(const std::uint64_t r) {
        const std::uint64_t v = run_mid(off, r, nb, rb);
        runs(2 * r) = static_cast<std::uint8_t>(v);
        runs(2 * r + 1) = static_cast<std::uint8_t>(v >> 8);
      });
}

// Decompression check: the runs whose stored count is not what the leading
// codes give.
template <class Mem, class Off>
struct CountBadRuns {
  Off off;
  std::uint64_t nb;
  std::uint32_t rb;
  Kokkos::View<const std::uint8_t*, Mem> runs;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t r, std::uint64_t& acc) const {
    const std::uint64_t stored = runs(2 * r) | std::uint64_t(runs(2 * r + 1)) << 8;
    acc += run_mid(off, r, nb, rb) != stored ? 1 : 0;
  }
};
template <class ExecSpace, class Off>
std::uint64_t count_bad_runs(const ExecSpace& space, std::uint64_t nb, std::uint32_t rb, Off off,
                             Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> runs) {
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce("ksz::szx::check_runs", Kokkos::RangePolicy<ExecSpace>(space, 0, run_count(nb, rb)),
                          CountBadRuns<typename ExecSpace::memory_space, Off>{off, nb, rb, runs}, bad);
  return bad;
}

// Compression pass 1: kind, median and mid-byte count per block.
template <class ExecSpace, class T>
void plan(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
          std::uint32_t block, double bound, Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> kinds,
          Kokkos::View<T*, typename ExecSpace::memory_space> medians,
          Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> mid_count) {
  const std::uint64_t n = in.extent(0), nb = kinds.extent(0);
  if constexpr (kHostPath<ExecSpace>) {
    const T* x = in.data();
    const double proof = proof_threshold<T>(bound);
    Kokkos::parallel_for("ksz::szx::plan", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), [=](const std::uint64_t b) {
      const BlockPlan<T> p = host::plan_block<T>(x + b * block, block_len(b, n, block), bound, proof);
      kinds(b) = p.kind;
      medians(b) = p.median;
      mid_count(b) = p.mid_bytes;
    });
  } else {
    Kokkos::parallel_for(
        "ksz::szx::plan", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), KOKKOS_LAMBDA(const std::uint64_t b) {
          const BlockPlan<T> p = plan_block<T>(in, b * block, block_len(b, n, block), bound);
          kinds(b) = p.kind;
          medians(b) = p.median;
          mid_count(b) = p.mid_bytes;
        });
  }
}

// Compression pass 2: leading codes, mid-bytes and verbatim values at their offsets.
template <class ExecSpace, class T>
void encode(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
            std::uint32_t block, Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
            Kokkos::View<const T*, typename ExecSpace::memory_space> medians,
            Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> lead_off,
            Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> mid_off,
            Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> verb_off,
            Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> lead,
            Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> mid,
            Kokkos::View<T*, typename ExecSpace::memory_space> verb) {
  const std::uint64_t n = in.extent(0), nb = kinds.extent(0);
  if constexpr (kHostPath<ExecSpace>) {
    const T* x = in.data();
    Kokkos::parallel_for("ksz::szx::encode", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), [=](const std::uint64_t b) {
      const std::uint8_t k = kinds(b);
      const std::uint32_t len = block_len(b, n, block);
      if (k == kVerbatim) {
        std::memcpy(verb.data() + verb_off(b), x + b * block, len * sizeof(T));
      } else if (k != kConstant) {
        host::encode_block<T>(x + b * block, len, k, medians(b), lead.data() + lead_off(b), mid.data() + mid_off(b));
      }
    });
  } else {
    Kokkos::parallel_for(
        "ksz::szx::encode", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), KOKKOS_LAMBDA(const std::uint64_t b) {
          const std::uint8_t k = kinds(b);
          const std::uint32_t len = block_len(b, n, block);
          if (k == kVerbatim) {
            for (std::uint32_t i = 0; i < len; ++i) verb(verb_off(b) + i) = in(b * block + i);
          } else if (k != kConstant) {
            encode_block<T>(in, b * block, len, k, medians(b), lead, lead_off(b), mid, mid_off(b));
          }
        });
  }
}

// Decompression check: every kind byte is one the compressor writes.
// (Named functors for reductions: see cmake/lint.sh.)
template <class Mem>
struct CountBadKinds {
  Kokkos::View<const std::uint8_t*, Mem> kinds;
  int sign_exp, total;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t b, std::uint64_t& acc) const {
    acc += valid_kind(kinds(b), sign_exp, total) ? 0 : 1;
  }
};

template <class ExecSpace>
std::uint64_t count_bad_kinds(const ExecSpace& space, Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
                              int sign_exp, int total) {
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce("ksz::szx::check_kinds", Kokkos::RangePolicy<ExecSpace>(space, 0, kinds.extent(0)),
                          CountBadKinds<typename ExecSpace::memory_space>{kinds, sign_exp, total}, bad);
  return bad;
}

// Decompression pass 1: mid-byte count per block from the leading codes;
// returns the number of blocks whose codes are impossible.
template <class Mem>
struct CountMidBytes {
  std::uint64_t n;
  std::uint32_t block;
  Kokkos::View<const std::uint8_t*, Mem> kinds;
  Kokkos::View<const std::uint64_t*, Mem> lead_off;
  Kokkos::View<const std::uint8_t*, Mem> lead;
  Kokkos::View<std::uint64_t*, Mem> mid_count;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t b, std::uint64_t& acc) const {
    const std::uint8_t k = kinds(b);
    std::uint64_t m = 0;
    if (is_coded(k) && !count_mid(lead, lead_off(b), block_len(b, n, block), k, m)) acc += 1;
    mid_count(b) = m;
  }
};

// The same on host execution spaces, eight code bytes at a time.
struct CountMidBytesHost {
  std::uint64_t n;
  std::uint32_t block;
  Kokkos::View<const std::uint8_t*, Kokkos::HostSpace> kinds;
  Kokkos::View<const std::uint64_t*, Kokkos::HostSpace> lead_off;
  Kokkos::View<const std::uint8_t*, Kokkos::HostSpace> lead;
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> mid_count;
  void operator()(const std::uint64_t b, std::uint64_t& acc) const {
    const std::uint8_t k = kinds(b);
    std::uint64_t m = 0;
    if (is_coded(k)) {
      const std::uint32_t len = block_len(b, n, block);
      const int nbytes = bytes_of(k);
      std::uint64_t sum = 0;
      if (host::lead_sum(lead.data() + lead_off(b), len, nbytes, sum)) m = std::uint64_t(len) * nbytes - sum;
      else acc += 1;
    }
    mid_count(b) = m;
  }
};

template <class ExecSpace>
std::uint64_t count_mid_bytes(const ExecSpace& space, std::uint64_t n, std::uint32_t block,
                              Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
                              Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> lead_off,
                              Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> lead,
                              Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> mid_count) {
  std::uint64_t bad = 0;
  if constexpr (kHostPath<ExecSpace>)
    Kokkos::parallel_reduce("ksz::szx::count_mid", Kokkos::RangePolicy<ExecSpace>(space, 0, kinds.extent(0)),
                            CountMidBytesHost{n, block, kinds, lead_off, lead, mid_count}, bad);
  else
    Kokkos::parallel_reduce("ksz::szx::count_mid", Kokkos::RangePolicy<ExecSpace>(space, 0, kinds.extent(0)),
                            CountMidBytes<typename ExecSpace::memory_space>{n, block, kinds, lead_off, lead, mid_count},
                            bad);
  return bad;
}

// Decompression pass 2: every block back to values.
template <class ExecSpace, class T>
void decode(const ExecSpace& space, std::uint32_t block,
            Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
            Kokkos::View<const T*, typename ExecSpace::memory_space> medians,
            Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> lead_off,
            Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> mid_off,
            Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> verb_off,
            Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> lead,
            Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> mid,
            Kokkos::View<const T*, typename ExecSpace::memory_space> verb,
            Kokkos::View<T*, typename ExecSpace::memory_space> out) {
  const std::uint64_t n = out.extent(0), nb = kinds.extent(0);
  if constexpr (kHostPath<ExecSpace>) {
    T* y = out.data();
    const std::uint8_t* mid_end = mid.data() + mid.extent(0);
    Kokkos::parallel_for("ksz::szx::decode", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), [=](const std::uint64_t b) {
      const std::uint8_t k = kinds(b);
      const std::uint32_t len = block_len(b, n, block);
      T* o = y + b * block;
      if (k == kVerbatim) {
        std::memcpy(o, verb.data() + verb_off(b), len * sizeof(T));
      } else if (k == kConstant) {
        const T m = medians(b);
        for (std::uint32_t i = 0; i < len; ++i) o[i] = m;
      } else {
        host::decode_block<T>(lead.data() + lead_off(b), mid.data() + mid_off(b), mid.data() + mid_off(b + 1), mid_end,
                              len, k, medians(b), o);
      }
    });
  } else {
    Kokkos::parallel_for(
        "ksz::szx::decode", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), KOKKOS_LAMBDA(const std::uint64_t b) {
          const std::uint8_t k = kinds(b);
          const std::uint32_t len = block_len(b, n, block);
          const std::uint64_t begin = b * block;
          if (k == kVerbatim) {
            for (std::uint32_t i = 0; i < len; ++i) out(begin + i) = verb(verb_off(b) + i);
          } else if (k == kConstant) {
            const T m = medians(b);
            for (std::uint32_t i = 0; i < len; ++i) out(begin + i) = m;
          } else {
            decode_block<T>(lead, lead_off(b), mid, mid_off(b), len, k, medians(b), out, begin);
          }
        });
  }
}

// ---- Team per block (the GPU layout of section V-B): a team reduces a block's
// min and max, codes its values in parallel (a value's leading bytes depend
// only on its own and its predecessor's code), and places mid-bytes by a team
// prefix scan. Decompression replaces the serial byte chain by index
// propagation (Figure 9): the source of leading byte k of value i is the last
// value j < i whose own byte k was stored (lead_j <= k), found by one packed
// prefix count per byte position and a compaction. Same bytes as above.
// Blocks up to kMaxTeamBlock: team scratch holds 15 bytes per value.
constexpr std::uint32_t kMaxTeamBlock = 1024;

enum class Layout { ThreadPerBlock, TeamPerBlock };

// Team per block on CUDA (coalesced), thread per block on CPUs (a block stays
// in one core's cache). KSZ_SZX_LAYOUT=thread|team overrides, for tests and
// benchmarks; both write the same bytes.
template <class ExecSpace>
Layout choose_layout(std::uint32_t block, std::uint64_t nb) {
  if (block > kMaxTeamBlock || nb >= (std::uint64_t(1) << 31)) return Layout::ThreadPerBlock;
  if (const char* e = std::getenv("KSZ_SZX_LAYOUT")) {
    if (std::string(e) == "team") return Layout::TeamPerBlock;
    if (std::string(e) == "thread") return Layout::ThreadPerBlock;
  }
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same<ExecSpace, Kokkos::Cuda>::value) return Layout::TeamPerBlock;
#endif
  return Layout::ThreadPerBlock;
}

template <class ExecSpace>
using TeamMember = typename Kokkos::TeamPolicy<ExecSpace>::member_type;

template <class ExecSpace>
Kokkos::TeamPolicy<ExecSpace> team_policy(const ExecSpace& space, std::uint64_t nb, std::uint32_t block,
                                          std::size_t scratch_per_value) {
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    const int ts = block >= 256 ? 256 : (block >= 128 ? 128 : (block >= 64 ? 64 : 32));
    return Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(nb), ts)
        .set_scratch_size(0, Kokkos::PerTeam(scratch_per_value * block + 64));
  }
#endif
  // On CPUs the team layout is for checking only, one thread per team (two
  // per team on OpenMP also pass, but spin at barriers on a loaded machine).
  return Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(nb), 1)
      .set_scratch_size(0, Kokkos::PerTeam(scratch_per_value * block + 64));
}

template <class ExecSpace, class T>
void plan_team(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
               std::uint32_t block, double bound, Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> kinds,
               Kokkos::View<T*, typename ExecSpace::memory_space> medians,
               Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> mid_count) {
  using U = typename Bits<T>::U;
  const std::uint64_t n = in.extent(0), nb = kinds.extent(0);
  Kokkos::parallel_for(
      "ksz::szx::plan_team", team_policy(space, nb, block, 0), KOKKOS_LAMBDA(const TeamMember<ExecSpace>& t) {
        const std::uint64_t b = t.league_rank(), begin = b * block;
        const std::uint32_t len = block_len(b, n, block);
        T mn, mx;
        int bad = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i, T& m) { m = in(begin + i) < m ? in(begin + i) : m; },
            Kokkos::Min<T>(mn));
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i, T& m) { m = in(begin + i) > m ? in(begin + i) : m; },
            Kokkos::Max<T>(mx));
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, len),
            [&](const std::uint32_t i, int& a) { a += (in(begin + i) - in(begin + i) == 0) ? 0 : 1; }, bad);
        std::uint8_t kind = kVerbatim;
        T med = T(0);
        std::uint64_t mid = 0;
        if (bad == 0) {
          const BlockHead<T> hd = block_head<T>(mn, mx, bound);
          if (hd.constant) {
            kind = kConstant;
            med = hd.median;
          } else {
            const int nbytes = bytes_of(hd.len_bits), shift = Bits<T>::kTotal - hd.len_bits;
            const T m = hd.median;
            std::uint64_t packed = 0;  // mid-bytes, plus 2^40 per value that misses the bound
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(t, len),
                [&](const std::uint32_t i, std::uint64_t& a) {
                  const T v = in(begin + i);
                  const U c = code_of<T>(v, m, shift);
                  const U p = i > 0 ? code_of<T>(in(begin + i - 1), m, shift) : U(0);
                  const bool ok = within(static_cast<double>(v), static_cast<double>(value_of<T>(c, m, shift)), bound);
                  a += static_cast<std::uint64_t>(nbytes - leading_bytes<U>(c, p, nbytes)) +
                       (ok ? 0 : (std::uint64_t(1) << 40));
                },
                packed);
            if (packed < (std::uint64_t(1) << 40)) {
              kind = static_cast<std::uint8_t>(hd.len_bits);
              med = m;
              mid = packed;
            }
          }
        }
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          kinds(b) = kind;
          medians(b) = med;
          mid_count(b) = mid;
        });
      });
}

template <class ExecSpace, class T>
void encode_team(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                 std::uint32_t block, Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
                 Kokkos::View<const T*, typename ExecSpace::memory_space> medians,
                 Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> lead_off,
                 Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> mid_off,
                 Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> verb_off,
                 Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> lead,
                 Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> mid,
                 Kokkos::View<T*, typename ExecSpace::memory_space> verb) {
  using U = typename Bits<T>::U;
  const std::uint64_t n = in.extent(0), nb = kinds.extent(0);
  Kokkos::parallel_for(
      "ksz::szx::encode_team", team_policy(space, nb, block, 0), KOKKOS_LAMBDA(const TeamMember<ExecSpace>& t) {
        const std::uint64_t b = t.league_rank(), begin = b * block;
        const std::uint32_t len = block_len(b, n, block);
        const std::uint8_t k = kinds(b);
        if (k == kVerbatim) {
          const std::uint64_t vo = verb_off(b);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i) { verb(vo + i) = in(begin + i); });
          return;
        }
        if (k == kConstant) return;
        const int nbytes = bytes_of(k), shift = Bits<T>::kTotal - k;
        const T m = medians(b);
        const std::uint64_t mo = mid_off(b), lo = lead_off(b);
        Kokkos::parallel_scan(Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i, std::uint64_t& run, const bool final) {
          const U c = code_of<T>(in(begin + i), m, shift);
          const U p = i > 0 ? code_of<T>(in(begin + i - 1), m, shift) : U(0);
          const int l = leading_bytes<U>(c, p, nbytes);
          if (final)
            for (int q = l; q < nbytes; ++q) mid(mo + run + (q - l)) = static_cast<std::uint8_t>(c >> (8 * (nbytes - 1 - q)));
          run += static_cast<std::uint64_t>(nbytes - l);
        });
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, (len + 3) / 4), [&](const std::uint32_t j) {
          std::uint8_t acc = 0;
          for (std::uint32_t i = 4 * j; i < 4 * j + 4 && i < len; ++i) {
            const U c = code_of<T>(in(begin + i), m, shift);
            const U p = i > 0 ? code_of<T>(in(begin + i - 1), m, shift) : U(0);
            acc = static_cast<std::uint8_t>(acc | (leading_bytes<U>(c, p, nbytes) << (6 - 2 * (i & 3))));
          }
          lead(lo + j) = acc;
        });
      });
}

template <class ExecSpace, class T>
void decode_team(const ExecSpace& space, std::uint32_t block,
                 Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
                 Kokkos::View<const T*, typename ExecSpace::memory_space> medians,
                 Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> lead_off,
                 Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> mid_off,
                 Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> verb_off,
                 Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> lead,
                 Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> mid,
                 Kokkos::View<const T*, typename ExecSpace::memory_space> verb,
                 Kokkos::View<T*, typename ExecSpace::memory_space> out) {
  using U = typename Bits<T>::U;
  using Scratch16 = Kokkos::View<std::uint16_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  using Scratch8 = Kokkos::View<std::uint8_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const std::uint64_t n = out.extent(0), nb = kinds.extent(0);
  // Per value: pos[3] and cnt[3] (u16), mid offset (u16), lead code (u8).
  Kokkos::parallel_for(
      "ksz::szx::decode_team", team_policy(space, nb, block, 15), KOKKOS_LAMBDA(const TeamMember<ExecSpace>& t) {
        const std::uint64_t b = t.league_rank(), begin = b * block;
        const std::uint32_t len = block_len(b, n, block);
        const std::uint8_t k = kinds(b);
        if (k == kVerbatim) {
          const std::uint64_t vo = verb_off(b);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i) { out(begin + i) = verb(vo + i); });
          return;
        }
        const T m = medians(b);
        if (k == kConstant) {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i) { out(begin + i) = m; });
          return;
        }
        const int nbytes = bytes_of(k), shift = Bits<T>::kTotal - k;
        const std::uint64_t mo = mid_off(b), lo = lead_off(b);
        Scratch16 pos(t.team_scratch(0), 3 * block), cnt(t.team_scratch(0), 3 * block), off(t.team_scratch(0), block);
        Scratch8 ld(t.team_scratch(0), block);
        // One scan, four packed 16-bit sums: mid-bytes and, for k = 0..2, the
        // values whose byte k is stored.
        Kokkos::parallel_scan(Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i, std::uint64_t& run, const bool final) {
          const int l = (lead(lo + i / 4) >> (6 - 2 * (i & 3))) & 3;
          if (final) {
            ld(i) = static_cast<std::uint8_t>(l);
            off(i) = static_cast<std::uint16_t>(run & 0xffff);
            for (int q = 0; q < 3; ++q) {
              const std::uint16_t c = static_cast<std::uint16_t>((run >> (16 * (q + 1))) & 0xffff);
              cnt(q * block + i) = c;
              if (l <= q) pos(q * block + c) = static_cast<std::uint16_t>(i);
            }
          }
          run += static_cast<std::uint64_t>(nbytes - l) + (l <= 0 ? (std::uint64_t(1) << 16) : 0) +
                 (l <= 1 ? (std::uint64_t(1) << 32) : 0) + (l <= 2 ? (std::uint64_t(1) << 48) : 0);
        });
        t.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len), [&](const std::uint32_t i) {
          const int l = ld(i);
          U c = 0;
          for (int q = 0; q < nbytes; ++q) {
            std::uint8_t byte = 0;
            if (q >= l) {
              byte = mid(mo + off(i) + (q - l));
            } else {
              const std::uint16_t r = cnt(q * block + i);
              if (r > 0) {
                const std::uint16_t j = pos(q * block + r - 1);
                byte = mid(mo + off(j) + (q - ld(j)));
              }
            }
            c = (c << 8) | U(byte);
          }
          out(begin + i) = value_of<T>(c, m, shift);
        });
      });
}

}  // namespace ksz::szx
