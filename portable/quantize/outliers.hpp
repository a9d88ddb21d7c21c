// Stream compaction of sparse elements (outliers, verbatim values) by a
// prefix scan, so indices come out in increasing order on every backend
// (cusz-2020 section III-D stores outliers the same way), and their scatter
// back with validation of hostile index lists.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

#include "src/core/error.hpp"

namespace ksz::outliers {

// Indices i in [0, n) with pred(i), increasing. pred must be a device-callable
// functor taking std::uint64_t.
// `known_count`, when the caller has it, saves the counting pass.
template <class ExecSpace, class Pred>
Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> compact_indices(
    const ExecSpace& space, std::uint64_t n, Pred pred, const char* label,
    std::uint64_t known_count = ~std::uint64_t(0)) {
  using Mem = typename ExecSpace::memory_space;
  std::uint64_t count = known_count;
  if (count == ~std::uint64_t(0))
    Kokkos::parallel_reduce(
        "ksz::outliers::count", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
        KOKKOS_LAMBDA(const std::uint64_t i, std::uint64_t& acc) { acc += pred(i) ? 1 : 0; }, count);
  Kokkos::View<std::uint64_t*, Mem> idx(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), count);
  if (count == 0) return idx;
  Kokkos::parallel_scan(
      "ksz::outliers::compact", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(const std::uint64_t i, std::uint64_t& pos, const bool final) {
        const bool hit = pred(i);
        if (final && hit && pos < count) idx(pos) = i;
        pos += hit ? 1 : 0;
      });
  return idx;
}

// Checks that idx is strictly increasing and below n; throws CorruptStream.
template <class ExecSpace>
void validate_indices(const ExecSpace& space,
                      Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> idx,
                      std::uint64_t n, const char* what) {
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce(
      "ksz::outliers::validate", Kokkos::RangePolicy<ExecSpace>(space, 0, idx.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t j, std::uint64_t& acc) {
        const bool ok = idx(j) < n && (j == 0 || idx(j - 1) < idx(j));
        acc += ok ? 0 : 1;
      },
      bad);
  KSZ_STREAM_CHECK(bad == 0, what, " index list is not increasing or is out of range");
}

// out(idx(j)) = val(j).
template <class ExecSpace, class V>
void scatter(const ExecSpace& space,
             Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> idx,
             Kokkos::View<const V*, typename ExecSpace::memory_space> val,
             Kokkos::View<V*, typename ExecSpace::memory_space> out) {
  Kokkos::parallel_for(
      "ksz::outliers::scatter", Kokkos::RangePolicy<ExecSpace>(space, 0, idx.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t j) { out(idx(j)) = val(j); });
}

}  // namespace ksz::outliers
