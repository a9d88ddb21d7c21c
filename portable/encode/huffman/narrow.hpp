// Codes of a wide alphabet read as symbols of a narrower one. The interp
// pipeline codes its residuals at the largest candidate radius before it
// chooses one (spline::choose_radius); the encoder then reads each code
// through Narrow instead of the codes being rewritten (a pass that read and
// wrote every code: 0.2 ms of 2.3 at 512^3 on an H200). The symbols, and so
// the bitstream, are those of codes written at the narrow radius.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace ksz::huffman {

// Default: the codes are the symbols. Narrow(from, r), r <= from: code c != 0
// of radius `from` is residual q = c - from, read as symbol q + r where
// |q| < r, else as symbol 0 (an outlier's, as code 0 already is); a code past
// the wide alphabet reads as 2r, which has no code (the encoder reports it).
// One subtraction and compare a code on the common path.
struct Narrow {
  std::uint32_t from = 0, r = 0;
  std::uint32_t lo = 0, width = ~0u, off = 0, limit = ~0u;  // codes [lo, lo + width) read as c - off
  Narrow() = default;
  Narrow(std::uint32_t from_, std::uint32_t r_)
      : from(from_), r(r_), lo(from_ - r_ + 1), width(2 * r_ - 1), off(from_ - r_), limit(2 * from_) {}
  bool identity() const { return from == 0; }
  KOKKOS_INLINE_FUNCTION std::uint32_t operator()(const std::uint32_t c) const {
    if (c - lo < width) return c - off;
    return c < limit ? 0u : 2 * r;
  }
};

}  // namespace ksz::huffman
