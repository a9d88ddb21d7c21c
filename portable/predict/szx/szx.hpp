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
#include <string>
#include <type_traits>

#include "portable/quantize/prequant.hpp"

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

#ifndef __CUDA_ARCH__
// Host fast path: the m (0..8) low bytes of c as one unaligned big-endian
// 8-byte store / load, so the per-value byte count costs no branch. Only
// used where 8 bytes from p stay inside memory the caller owns.
inline void store_be(std::uint8_t* p, std::uint64_t c, int m) {
  std::uint64_t w = m > 0 ? c << (64 - 8 * m) : 0;
  w = __builtin_bswap64(w);
  std::memcpy(p, &w, 8);
}
inline std::uint64_t load_be(const std::uint8_t* p, int m) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  w = __builtin_bswap64(w);
  return m > 0 ? w >> (64 - 8 * m) : 0;
}
#endif

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
                                         std::uint64_t mid_off, std::uint64_t mid_end) {
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
#ifndef __CUDA_ARCH__
    if (mid_off + 8 <= mid_end) {  // the 8-byte store stays inside this block
      store_be(&mid(mid_off), static_cast<std::uint64_t>(c), nbytes - l);
      mid_off += static_cast<std::uint64_t>(nbytes - l);
      prev = c;
      continue;
    }
#endif
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
#ifndef __CUDA_ARCH__
  // Host: four codes per byte at once (the loop vectorizes); the unused
  // fields of a last partial byte are masked off, as the loop below never reads them.
  const std::uint32_t full = len / 4, rest = len % 4;
  std::uint32_t sum = 0, over = 0;
  const std::uint32_t nb = static_cast<std::uint32_t>(nbytes);
  for (std::uint32_t j = 0; j <= full; ++j) {
    std::uint32_t b = j < full ? lead(lead_off + j) : 0;
    if (j == full && rest) b = lead(lead_off + j) & (0xFFu << (8 - 2 * rest)) & 0xFFu;
    const std::uint32_t f0 = b >> 6, f1 = (b >> 4) & 3, f2 = (b >> 2) & 3, f3 = b & 3;
    sum += f0 + f1 + f2 + f3;
    over |= (f0 > nb) | (f1 > nb) | (f2 > nb) | (f3 > nb);
  }
  if (over == 0) {
    mid = static_cast<std::uint64_t>(nb) * len - sum;
    return true;
  }
  // An impossible code: fall through to the exact per-value count.
#endif
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
    U c;
#ifndef __CUDA_ARCH__
    if (mid_off + 8 <= mid.extent(0)) {
      const int m = nbytes - l;
      const U keep = 8 * m >= Bits<T>::kTotal ? U(0) : ~((U(1) << (8 * m)) - 1);
      c = (prev & keep) | static_cast<U>(load_be(&mid(mid_off), m));
      mid_off += static_cast<std::uint64_t>(m);
    } else
#endif
    {
      c = l > 0 ? prev >> (8 * (nbytes - l)) : U(0);
      for (int k = l; k < nbytes; ++k) c = (c << 8) | static_cast<U>(mid(mid_off++));
    }
    out(begin + i) = value_of<T>(c, med, shift);
    prev = c;
  }
}

#ifndef __CUDA_ARCH__
// ---- Host fast paths of plan_block and encode_block: the same decisions and
// bytes (tests compare them with the team layout and the golden streams),
// written as loops without early exits or loop-carried state so that they
// vectorize: min/max as SIMD reductions, each value's predecessor code
// recomputed instead of carried, the bound check and leading-byte count
// branch-free. (1 thread, 256^3 f32 REL 1e-3: perf/NOTES.md.)
#if defined(_OPENMP)
#define KSZ_SIMD_PRAGMA(x) _Pragma(x)
#else
#define KSZ_SIMD_PRAGMA(x)
#endif

// within() without branches: the same answer for every input.
inline bool within_nb(double a, double b, double e) {
  const double s = a - b, m = ::fabs(s);
  const double bb = s - a;
  const double err = (a - (s - bb)) + (-b - bb);
  return (m < e) | ((m == e) & (err == 0));
}

// leading_bytes(a, b, nbytes) of x = a ^ b from per-block masks: the top 1, 2
// and 3 bytes of the nbytes-byte code, each counted only if the code has them.
template <class U>
struct LeadMasks {
  U m1, m2, m3;
  U en2, en3;
};
template <class U>
inline LeadMasks<U> lead_masks(int nbytes) {
  LeadMasks<U> m;
  m.m1 = static_cast<U>(U(0xff) << (8 * (nbytes - 1)));
  m.m2 = nbytes >= 2 ? static_cast<U>(U(0xffff) << (8 * (nbytes - 2))) : U(0);
  m.m3 = nbytes >= 3 ? static_cast<U>(U(0xffffff) << (8 * (nbytes - 3))) : U(0);
  m.en2 = nbytes >= 2 ? U(1) : U(0);
  m.en3 = nbytes >= 3 ? U(1) : U(0);
  return m;
}
template <class U>
inline U lead_count(U x, const LeadMasks<U>& m) {
  return U((x & m.m1) == 0) + (U((x & m.m2) == 0) & m.en2) + (U((x & m.m3) == 0) & m.en3);
}

#if defined(__GNUC__)
#define KSZ_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define KSZ_ALWAYS_INLINE inline
#endif

template <class T>
KSZ_ALWAYS_INLINE BlockPlan<T> plan_block_body(const T* x, std::uint32_t len, double e) {
  using U = typename Bits<T>::U;
  BlockPlan<T> p{kVerbatim, T(0), 0};
  T mn = x[0], mx = x[0];
  int nonfinite = 0;
  KSZ_SIMD_PRAGMA("omp simd reduction(min:mn) reduction(max:mx) reduction(|:nonfinite)")
  for (std::uint32_t i = 0; i < len; ++i) {
    const T v = x[i];
    nonfinite |= !(v - v == T(0));
    mn = v < mn ? v : mn;  // exact, so any order gives the same ends (zero's sign: block_head)
    mx = v > mx ? v : mx;
  }
  if (nonfinite) return p;
  const BlockHead<T> hd = block_head<T>(mn, mx, e);
  if (hd.constant) {
    p.kind = kConstant;
    p.median = hd.median;
    return p;
  }
  const T med = hd.median;
  const int nbytes = bytes_of(hd.len_bits), shift = Bits<T>::kTotal - hd.len_bits;
  const LeadMasks<U> lm = lead_masks<U>(nbytes);
  const U c0 = code_of<T>(x[0], med, shift);
  int bad = !within_nb(static_cast<double>(x[0]), static_cast<double>(value_of<T>(c0, med, shift)), e);
  std::uint64_t lead = lead_count<U>(c0, lm);
  KSZ_SIMD_PRAGMA("omp simd reduction(|:bad) reduction(+:lead)")
  for (std::uint32_t i = 1; i < len; ++i) {
    const T v = x[i];
    const U c = code_of<T>(v, med, shift), pc = code_of<T>(x[i - 1], med, shift);
    bad |= !within_nb(static_cast<double>(v), static_cast<double>(value_of<T>(c, med, shift)), e);
    lead += lead_count<U>(c ^ pc, lm);
  }
  if (bad) return p;
  p.kind = static_cast<std::uint8_t>(hd.len_bits);
  p.median = med;
  p.mid_bytes = static_cast<std::uint64_t>(nbytes) * len - lead;
  return p;
}

template <class T>
KSZ_ALWAYS_INLINE void encode_block_body(const T* x, std::uint32_t len, int len_bits, T med, std::uint8_t* lead,
                                         std::uint8_t* mid, const std::uint8_t* mid_end) {
  using U = typename Bits<T>::U;
  const int nbytes = bytes_of(len_bits), shift = Bits<T>::kTotal - len_bits;
  const LeadMasks<U> lm = lead_masks<U>(nbytes);
  U c[kMaxBlock];
  std::uint8_t l[kMaxBlock + 3];
  KSZ_SIMD_PRAGMA("omp simd")
  for (std::uint32_t i = 0; i < len; ++i) c[i] = code_of<T>(x[i], med, shift);
  l[0] = static_cast<std::uint8_t>(lead_count<U>(c[0], lm));
  KSZ_SIMD_PRAGMA("omp simd")
  for (std::uint32_t i = 1; i < len; ++i) l[i] = static_cast<std::uint8_t>(lead_count<U>(c[i] ^ c[i - 1], lm));
  l[len] = l[len + 1] = l[len + 2] = 0;
  for (std::uint32_t j = 0; 4 * j < len; ++j)
    lead[j] = static_cast<std::uint8_t>((l[4 * j] << 6) | (l[4 * j + 1] << 4) | (l[4 * j + 2] << 2) | l[4 * j + 3]);
  for (std::uint32_t i = 0; i < len; ++i) {
    const int m = nbytes - l[i];
    if (mid + 8 <= mid_end) {  // the 8-byte store stays inside this block
      store_be(mid, static_cast<std::uint64_t>(c[i]), m);
    } else {
      for (int k = 0; k < m; ++k) mid[k] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(c[i]) >> (8 * (m - 1 - k)));
    }
    mid += m;
  }
}

// Baseline builds target the oldest x86-64 (SSE2), where these loops gain
// little; on CPUs with AVX2 (checked once at run time) the same bodies are
// compiled for it. No FMA is enabled and the build is ISO C++ (no
// contraction), so both versions compute the same values and write the same
// bytes.
template <class T>
BlockPlan<T> plan_block_base(const T* x, std::uint32_t len, double e) {
  return plan_block_body<T>(x, len, e);
}
template <class T>
void encode_block_base(const T* x, std::uint32_t len, int len_bits, T med, std::uint8_t* lead, std::uint8_t* mid,
                       const std::uint8_t* mid_end) {
  encode_block_body<T>(x, len, len_bits, med, lead, mid, mid_end);
}
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__CUDACC__) && !defined(__AVX2__)
#define KSZ_SZX_AVX2 1
template <class T>
__attribute__((target("avx2"))) BlockPlan<T> plan_block_avx2(const T* x, std::uint32_t len, double e) {
  return plan_block_body<T>(x, len, e);
}
template <class T>
__attribute__((target("avx2"))) void encode_block_avx2(const T* x, std::uint32_t len, int len_bits, T med,
                                                       std::uint8_t* lead, std::uint8_t* mid,
                                                       const std::uint8_t* mid_end) {
  encode_block_body<T>(x, len, len_bits, med, lead, mid, mid_end);
}
inline bool host_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

template <class T>
using PlanFn = BlockPlan<T> (*)(const T*, std::uint32_t, double);
template <class T>
using EncodeFn = void (*)(const T*, std::uint32_t, int, T, std::uint8_t*, std::uint8_t*, const std::uint8_t*);
template <class T>
PlanFn<T> plan_block_host() {
#ifdef KSZ_SZX_AVX2
  if (host_has_avx2()) return &plan_block_avx2<T>;
#endif
  return &plan_block_base<T>;
}
template <class T>
EncodeFn<T> encode_block_host() {
#ifdef KSZ_SZX_AVX2
  if (host_has_avx2()) return &encode_block_avx2<T>;
#endif
  return &encode_block_base<T>;
}
#undef KSZ_SIMD_PRAGMA
#undef KSZ_ALWAYS_INLINE
#endif

// ---- Parallel patterns over blocks: one thread per block (the CPU layout of
// section V-A); every block's output position comes from prefix scans, so the
// bytes do not depend on the schedule.

KOKKOS_INLINE_FUNCTION std::uint32_t block_len(std::uint64_t b, std::uint64_t n, std::uint32_t block) {
  const std::uint64_t begin = b * block, left = n - begin;
  return static_cast<std::uint32_t>(left < block ? left : block);
}
KOKKOS_INLINE_FUNCTION bool is_coded(std::uint8_t kind) { return kind != kConstant && kind != kVerbatim; }

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

// Compression pass 1: kind, median and mid-byte count per block.
template <class ExecSpace, class T>
void plan(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
          std::uint32_t block, double bound, Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> kinds,
          Kokkos::View<T*, typename ExecSpace::memory_space> medians,
          Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> mid_count) {
  const std::uint64_t n = in.extent(0), nb = kinds.extent(0);
#ifndef __CUDA_ARCH__  // (the host fast paths exist in nvcc's host pass only)
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible) {
    const T* x = in.data();
    const PlanFn<T> plan_block_fn = plan_block_host<T>();
    Kokkos::parallel_for(
        "ksz::szx::plan_host", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), [=](const std::uint64_t b) {
          const BlockPlan<T> p = plan_block_fn(x + b * block, block_len(b, n, block), bound);
          kinds(b) = p.kind;
          medians(b) = p.median;
          mid_count(b) = p.mid_bytes;
        });
    return;
  }
#endif
  Kokkos::parallel_for(
      "ksz::szx::plan", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), KOKKOS_LAMBDA(const std::uint64_t b) {
        const BlockPlan<T> p = plan_block<T>(in, b * block, block_len(b, n, block), bound);
        kinds(b) = p.kind;
        medians(b) = p.median;
        mid_count(b) = p.mid_bytes;
      });
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
#ifndef __CUDA_ARCH__
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible) {
    const T* x = in.data();
    std::uint8_t* const lead_p = lead.data();
    std::uint8_t* const mid_p = mid.data();
    const EncodeFn<T> encode_block_fn = encode_block_host<T>();
    Kokkos::parallel_for(
        "ksz::szx::encode_host", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), [=](const std::uint64_t b) {
          const std::uint8_t k = kinds(b);
          const std::uint32_t len = block_len(b, n, block);
          if (k == kVerbatim) {
            for (std::uint32_t i = 0; i < len; ++i) verb(verb_off(b) + i) = x[b * block + i];
          } else if (k != kConstant) {
            encode_block_fn(x + b * block, len, k, medians(b), lead_p + lead_off(b), mid_p + mid_off(b),
                            mid_p + mid_off(b + 1));
          }
        });
    return;
  }
#endif
  Kokkos::parallel_for(
      "ksz::szx::encode", Kokkos::RangePolicy<ExecSpace>(space, 0, nb), KOKKOS_LAMBDA(const std::uint64_t b) {
        const std::uint8_t k = kinds(b);
        const std::uint32_t len = block_len(b, n, block);
        if (k == kVerbatim) {
          for (std::uint32_t i = 0; i < len; ++i) verb(verb_off(b) + i) = in(b * block + i);
        } else if (k != kConstant) {
          encode_block<T>(in, b * block, len, k, medians(b), lead, lead_off(b), mid, mid_off(b), mid_off(b + 1));
        }
      });
}

// Decompression check: every kind byte is one the compressor writes.
// (Named functors for reductions: see cmake/lint.sh.)
template <class Mem>
struct CountBadKinds {
  Kokkos::View<const std::uint8_t*, Mem> kinds;
  int sign_exp, total;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t b, std::uint64_t& acc) const {
    const int k = kinds(b);
    acc += (k == kConstant || k == kVerbatim || (k >= sign_exp && k <= total)) ? 0 : 1;
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

template <class ExecSpace>
std::uint64_t count_mid_bytes(const ExecSpace& space, std::uint64_t n, std::uint32_t block,
                              Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
                              Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> lead_off,
                              Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> lead,
                              Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> mid_count) {
  std::uint64_t bad = 0;
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
