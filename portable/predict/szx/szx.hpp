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
#include <cstring>

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
  const double dmn = mn, dmx = mx;
  const T med = static_cast<T>(quantize::add_rn(quantize::mul_rn(dmn, 0.5), quantize::mul_rn(dmx, 0.5)));
  const double dmed = med;
  // Every value lies in [mn, mx], so the two ends decide a constant block.
  if (within(dmx, dmed, e) && within(dmn, dmed, e)) {
    p.kind = kConstant;
    p.median = med;
    return p;
  }
  const double r1 = quantize::add_rn(dmx, -dmed), r2 = quantize::add_rn(dmed, -dmn);
  const int len_bits = required_length<T>(r1 > r2 ? r1 : r2, e);
  const int nbytes = bytes_of(len_bits), shift = Bits<T>::kTotal - len_bits;
  U prev = 0;
  std::uint64_t mid = 0;
  for (std::uint32_t i = 0; i < len; ++i) {
    const T v = x(begin + i);
    const U c = to_bits(add_t(v, -med)) >> shift;
    const T rec = add_t(med, from_bits<T>(c << shift));
    if (!within(static_cast<double>(v), static_cast<double>(rec), e)) return p;  // verbatim
    mid += static_cast<std::uint64_t>(nbytes - leading_bytes<U>(c, prev, nbytes));
    prev = c;
  }
  p.kind = static_cast<std::uint8_t>(len_bits);
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
    const U c = to_bits(add_t(x(begin + i), -med)) >> shift;
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
    out(begin + i) = add_t(med, from_bits<T>(c << shift));
    prev = c;
  }
}

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
template <class ExecSpace>
std::uint64_t count_bad_kinds(const ExecSpace& space, Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
                              int sign_exp, int total) {
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce(
      "ksz::szx::check_kinds", Kokkos::RangePolicy<ExecSpace>(space, 0, kinds.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t b, std::uint64_t& acc) {
        const int k = kinds(b);
        acc += (k == kConstant || k == kVerbatim || (k >= sign_exp && k <= total)) ? 0 : 1;
      },
      bad);
  return bad;
}

// Decompression pass 1: mid-byte count per block from the leading codes;
// returns the number of blocks whose codes are impossible.
template <class ExecSpace>
std::uint64_t count_mid_bytes(const ExecSpace& space, std::uint64_t n, std::uint32_t block,
                              Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> kinds,
                              Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> lead_off,
                              Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> lead,
                              Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> mid_count) {
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce(
      "ksz::szx::count_mid", Kokkos::RangePolicy<ExecSpace>(space, 0, kinds.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t b, std::uint64_t& acc) {
        const std::uint8_t k = kinds(b);
        std::uint64_t m = 0;
        if (is_coded(k) && !count_mid(lead, lead_off(b), block_len(b, n, block), k, m)) acc += 1;
        mid_count(b) = m;
      },
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

}  // namespace ksz::szx
