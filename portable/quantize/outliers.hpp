// Stream compaction of sparse elements (outliers, verbatim values) by a
// prefix scan, so indices come out in increasing order on every backend
// (cusz-2020 section III-D stores outliers the same way), and their scatter
// back with validation of hostile index lists.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

#include "portable/simd/bits.hpp"
#include "portable/simd/scan.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/workspace.hpp"

namespace ksz::outliers {

// Elements per compaction block (one team each).
constexpr std::uint64_t kCompactBlock = 4096;

namespace impl {
// The compaction proper: the hits of each block b that has any (offsets(b)
// scanned: its first slot; offsets(b + 1) the next block's) at their places
// in idx, below cap. A block a warp on GPUs, eight a team (a block without
// hits costs one load of two offsets: a team of 256 threads a block took 51 us
// at 512^3 where nearly every block has none); a block a team on hosts. A
// lane takes a run of the block: it counts the run's hits, the lanes' counts
// are scanned, then it lists them (a vector scan an element put a chain of
// dependent loads on each lane: 107 us).
template <class ExecSpace, class Pred>
void compact_blocks(const ExecSpace& space, std::uint64_t n, Pred pred,
                    Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> offsets,
                    Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> idx, std::uint64_t cap) {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  const std::uint64_t nblocks = (n + kCompactBlock - 1) / kCompactBlock;
  const int per_team = host ? 1 : 8, lanes = host ? 1 : 32;
  const std::uint64_t run = kCompactBlock / lanes;
  const std::uint64_t league = (nblocks + per_team - 1) / per_team;
  Kokkos::parallel_for(
      "ksz::outliers::compact", Policy(space, static_cast<int>(league), per_team, lanes),
      KOKKOS_LAMBDA(const Member& team) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, per_team), [&](const int j) {
          const std::uint64_t b = static_cast<std::uint64_t>(team.league_rank()) * per_team + j;
          if (b >= nblocks) return;
          const std::uint64_t base = offsets(b);
          if (offsets(b + 1) == base) return;  // no hits in this block
          const std::uint64_t begin = b * kCompactBlock, end = begin + kCompactBlock < n ? begin + kCompactBlock : n;
          // (From 0: Kokkos 3.4's vector scan on CUDA ignores a range's start.)
          Kokkos::parallel_scan(Kokkos::ThreadVectorRange(team, lanes),
                                [&](const int l, std::uint64_t& pos, const bool final) {
                                  const std::uint64_t s = begin + static_cast<std::uint64_t>(l) * run;
                                  const std::uint64_t e = s + run < end ? s + run : end;
                                  if (!final) {
                                    for (std::uint64_t i = s; i < e; ++i) pos += pred(i) ? 1 : 0;
                                    return;
                                  }
                                  for (std::uint64_t i = s; i < e; ++i)
                                    if (pred(i)) {
                                      if (base + pos < cap) idx(base + pos) = i;
                                      ++pos;
                                    }
                                });
        });
      });
}
}  // namespace impl

// The blocks' hit counts in offsets (nblocks + 1 entries for n elements, the
// last ignored) into their exclusive scan; with `total`, the hits' number
// comes back (the scan then waits for the device).
template <class ExecSpace>
void scan_offsets(const ExecSpace& space, std::uint64_t n,
                  Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> offsets,
                  std::uint64_t* total = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  const std::uint64_t nblocks = (n + kCompactBlock - 1) / kCompactBlock;
  KSZ_EXPECTS(offsets.extent(0) >= nblocks + 1, "internal: compaction counts too short");
  const Kokkos::RangePolicy<ExecSpace> policy(space, 0, nblocks + 1);
  if (total)
    Kokkos::parallel_scan("ksz::outliers::block_offsets", policy, ExclusiveScan<Mem>{offsets, offsets, nblocks}, *total);
  else
    Kokkos::parallel_scan("ksz::outliers::block_offsets", policy, ExclusiveScan<Mem>{offsets, offsets, nblocks});
}

// The list of count hits from offsets already scanned (offsets(b): the hits
// of the blocks before b, b <= nblocks): from the workspace when the caller
// holds a lease (an allocation a call costs a cudaMalloc, and its release a
// synchronizing cudaFree), filled by compact_blocks. compact_counted's and
// compact_known's last step, and theirs for a caller that scanned itself.
template <class ExecSpace, class Pred>
Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> compact_scanned(
    const ExecSpace& space, std::uint64_t n, Pred pred, const char* label,
    Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> offsets, std::uint64_t count,
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws,
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Slot slot) {
  using Mem = typename ExecSpace::memory_space;
  const Kokkos::View<std::uint64_t*, Mem> idx =
      pipeline::Workspace<Mem>::template buffer<std::uint64_t>(ws, slot, count, label);
  if (count > 0) impl::compact_blocks(space, n, pred, offsets, idx, count);
  return idx;
}

// The second and third steps of compact_indices, for a caller that counted
// the hits of each block itself: offsets(b) holds block b's count on entry
// (nblocks + 1 entries, the last ignored) and the exclusive scan on return.
template <class ExecSpace, class Pred>
Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> compact_counted(
    const ExecSpace& space, std::uint64_t n, Pred pred, const char* label,
    Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> offsets,
    std::uint64_t known_count = ~std::uint64_t(0),
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr,
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Slot slot =
        pipeline::Workspace<typename ExecSpace::memory_space>::kOutliers) {
  std::uint64_t count = 0;
  scan_offsets(space, n, offsets, &count);
  KSZ_EXPECTS(known_count == ~std::uint64_t(0) || known_count == count, "internal: compaction count mismatch");
  return compact_scanned<ExecSpace>(space, n, pred, label, offsets, count, ws, slot);
}

// compact_counted for a caller that knows the total (`count`) without asking
// the device: nothing waits for the device here. The caller compares
// offsets(nblocks) with count once it synchronizes anyway (a list that
// disagrees is cut at count, never written past).
template <class ExecSpace, class Pred>
Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> compact_known(
    const ExecSpace& space, std::uint64_t n, Pred pred, const char* label,
    Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> offsets, std::uint64_t count,
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws,
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Slot slot) {
  scan_offsets(space, n, offsets);
  return compact_scanned<ExecSpace>(space, n, pred, label, offsets, count, ws, slot);
}

// Indices i in [0, n) with pred(i), increasing. pred must be a device-callable
// functor taking std::uint64_t. Three steps: per-block counts (a team
// reduction each), an exclusive scan over the few block counts, and a team
// scan inside each block that has hits. Every step reads contiguously, and a
// block without hits is skipped: much cheaper than one scan over n when hits
// are sparse, the common case. `known_count`, when the caller has it, is only
// a cross-check.
template <class ExecSpace, class Pred>
Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> compact_indices(
    const ExecSpace& space, std::uint64_t n, Pred pred, const char* label,
    std::uint64_t known_count = ~std::uint64_t(0)) {
  using Mem = typename ExecSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  if (n == 0) {
    KSZ_EXPECTS(known_count == ~std::uint64_t(0) || known_count == 0, "internal: compaction count mismatch");
    return Kokkos::View<std::uint64_t*, Mem>(std::string(label), 0);
  }
  const std::uint64_t nblocks = (n + kCompactBlock - 1) / kCompactBlock;
  Kokkos::View<std::uint64_t*, Mem> offsets(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                                std::string(label) + "_offsets"),
                                            nblocks + 1);
  Policy policy(space, static_cast<int>(nblocks), host ? 1 : 256);
  Kokkos::parallel_for(
      "ksz::outliers::block_counts", policy, KOKKOS_LAMBDA(const Member& team) {
        const std::uint64_t b = static_cast<std::uint64_t>(team.league_rank());
        const std::uint64_t begin = b * kCompactBlock, end = begin + kCompactBlock < n ? begin + kCompactBlock : n;
        std::uint64_t c = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, begin, end),
            [&](const std::uint64_t i, std::uint64_t& acc) { acc += pred(i) ? 1 : 0; }, c);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { offsets(b) = c; });
      });
  return compact_counted(space, n, pred, label, offsets, known_count);
}


// Bitmap words a list_bits() thread reads, and the elements they cover.
constexpr std::uint64_t kBitsGroup = 32;
constexpr std::uint64_t kBitsGroupElems = 32 * kBitsGroup;

// The positions of the set bits of bits (bit i & 31 of word i >> 5),
// increasing. off(g) holds, on entry, the set bits of group g of kBitsGroup
// words (g < ng = ceil(words / kBitsGroup); ng + 1 entries, the last ignored;
// the caller counted them as it set the bits) and count their sum. Two
// steps: an exclusive scan of off, then each group with bits writes their
// positions. Asynchronous (no copy back): a list that disagrees with count
// is cut at count.
template <class ExecSpace>
Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> list_bits(
    const ExecSpace& space, Kokkos::View<const std::uint32_t*, typename ExecSpace::memory_space> bits,
    Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> off, std::uint64_t count, const char* label,
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws,
    typename pipeline::Workspace<typename ExecSpace::memory_space>::Slot slot) {
  using Mem = typename ExecSpace::memory_space;
  using WS = pipeline::Workspace<Mem>;
  using Policy = Kokkos::RangePolicy<ExecSpace>;
  const Kokkos::View<std::uint64_t*, Mem> idx = WS::template buffer<std::uint64_t>(ws, slot, count, label);
  if (count == 0) return idx;
  const std::uint64_t nw = bits.extent(0), ng = (nw + kBitsGroup - 1) / kBitsGroup;
  KSZ_EXPECTS(off.extent(0) >= ng + 1, "internal: bit group counts too short");
  Kokkos::parallel_scan("ksz::outliers::bit_group_offsets", Policy(space, 0, ng + 1),
                        ExclusiveScan<Mem>{off, off, ng});
  Kokkos::parallel_for(
      "ksz::outliers::list_bits", Policy(space, 0, ng), KOKKOS_LAMBDA(const std::uint64_t g) {
        std::uint64_t p = off(g);
        if (off(g + 1) == p) return;
        const std::uint64_t e = (g + 1) * kBitsGroup < nw ? (g + 1) * kBitsGroup : nw;
        for (std::uint64_t w = g * kBitsGroup; w < e; ++w)
          for (std::uint32_t x = bits(w); x; x &= x - 1, ++p)
            if (p < count) idx(p) = w * 32 + static_cast<std::uint64_t>(lowest_bit(x));
      });
  return idx;
}

namespace impl {
template <class Mem>
struct BadIndexCount {  // a functor: see the note on parallel_reduce in lorenzo.hpp
  Kokkos::View<const std::uint64_t*, Mem> idx;
  std::uint64_t n;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t j, std::uint64_t& acc) const {
    const bool ok = idx(j) < n && (j == 0 || idx(j - 1) < idx(j));
    acc += ok ? 0 : 1;
  }
};
}  // namespace impl

// Checks that idx is strictly increasing and below n; throws CorruptStream.
template <class ExecSpace>
void validate_indices(const ExecSpace& space,
                      Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> idx,
                      std::uint64_t n, const char* what) {
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce("ksz::outliers::validate", Kokkos::RangePolicy<ExecSpace>(space, 0, idx.extent(0)),
                          impl::BadIndexCount<typename ExecSpace::memory_space>{idx, n}, bad);
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
