// An exclusive prefix sum as a Kokkos parallel_scan functor, for the offset
// tables of compactions, Huffman chunks and lossless blocks.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace ksz {

// out(i) = in(0) + ... + in(i - 1) for i in [0, n]: run it over [0, n + 1)
// (a returned total equals out(n)). in(n) is never read, and in may be out:
// each entry is read before it is written. A functor, not a lambda: see the
// note on parallel_reduce in lorenzo.hpp.
template <class Mem>
struct ExclusiveScan {
  Kokkos::View<const std::uint64_t*, Mem> in;
  Kokkos::View<std::uint64_t*, Mem> out;
  std::uint64_t n;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t i, std::uint64_t& pos, const bool final) const {
    const std::uint64_t c = i < n ? in(i) : 0;
    if (final) out(i) = pos;
    pos += c;
  }
};

}  // namespace ksz
