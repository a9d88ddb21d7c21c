// Quantization codes kept in one byte each, with the few that do not fit
// listed beside them: the CUDA 3D fused compressor's code array, the largest
// buffer of a compression after the input (2 bytes an element as 16-bit
// codes; issue 3's peak-memory target is 1.25x input + output). Codes within
// 127 of the radius (nearly all of them where the bound is worth coding:
// the histogram's peak) are stored as byte = code - base, base = radius - 128,
// in [1, 255]. Byte 0 means: the code is in `escapes`, entries
// (i << 16) | code, increasing in i (outliers listed with code 0, or not
// listed: an index not listed has code 0). A radius below 128 leaves every
// code in [1, 255] and nothing to list. The stream never sees this
// form: the Huffman encoder reads symbols through symbol(), or a portable
// expansion to 16-bit codes.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace ksz::quantize {

// The least radius the CUDA 3D compressor keeps byte codes for: with it, an
// outlier's code 0 has byte 0 (it is listed with the others).
constexpr std::uint32_t kByteCodesMinRadius = 128;

// The byte of code c (0: listed, or an outlier) and back.
KOKKOS_INLINE_FUNCTION std::uint32_t code_byte(std::uint32_t c, std::uint32_t radius) {
  const std::uint32_t b = c + 128u - radius;  // wraps below base; then >= 256
  return b - 1u < 255u ? b : 0u;
}

// The first of the escapes whose element is i or later (a binary search).
KOKKOS_INLINE_FUNCTION std::uint64_t first_escape(const std::uint64_t* escapes, std::uint64_t count,
                                                  std::uint64_t i) {
  std::uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if ((escapes[mid] >> 16) < i)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The code of element i whose byte is 0.
KOKKOS_INLINE_FUNCTION std::uint32_t escaped_code(const std::uint64_t* escapes, std::uint64_t count,
                                                  std::uint64_t i) {
  const std::uint64_t k = first_escape(escapes, count, i);
  return k < count && (escapes[k] >> 16) == i ? static_cast<std::uint32_t>(escapes[k] & 0xFFFFu) : 0u;
}

KOKKOS_INLINE_FUNCTION std::uint32_t byte_symbol(std::uint32_t byte, std::uint32_t radius,
                                                 const std::uint64_t* escapes, std::uint64_t count,
                                                 std::uint64_t i) {
  return byte ? byte + radius - 128u : escaped_code(escapes, count, i);
}

// n codes in bytes and escapes (see above).
template <class Mem>
struct ByteCodes {
  Kokkos::View<const std::uint8_t*, Mem> bytes;
  Kokkos::View<const std::uint64_t*, Mem> escapes;
  std::uint32_t radius = 0;
  KOKKOS_INLINE_FUNCTION std::uint32_t symbol(std::uint64_t i) const {
    return byte_symbol(bytes(i), radius, escapes.data(), escapes.extent(0), i);
  }
};

// The 16-bit codes (the Huffman encoder's portable input).
template <class ExecSpace>
void expand(const ExecSpace& space, const ByteCodes<typename ExecSpace::memory_space>& src,
            Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes) {
  const ByteCodes<typename ExecSpace::memory_space> s = src;
  Kokkos::parallel_for(
      "ksz::quantize::expand_byte_codes", Kokkos::RangePolicy<ExecSpace>(space, 0, s.bytes.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i) { codes(i) = static_cast<std::uint16_t>(s.symbol(i)); });
}

}  // namespace ksz::quantize
