// Histogram of quantization codes (cusz-2020 section IV-A). Each team counts
// its slice into a private scratch-memory histogram (cuSZ's replicated
// per-block copies), then adds it to the global one: far fewer global atomics
// than one per element, and integer counts make the result deterministic.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace ksz::histogram {

// Elements per team: keeps each team's counts well inside uint32.
constexpr std::uint64_t kTeamSlice = std::uint64_t(1) << 16;
// Scratch histograms above this many bins go straight to global atomics.
constexpr std::uint32_t kMaxScratchBins = 8192;

template <class ExecSpace>
void histogram(const ExecSpace& space,
               Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
               Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> hist) {
  using Mem = typename ExecSpace::memory_space;
  const std::uint64_t n = codes.extent(0);
  const std::uint32_t nbins = static_cast<std::uint32_t>(hist.extent(0));
  Kokkos::deep_copy(space, hist, 0);
  if (n == 0) return;
  if (nbins > kMaxScratchBins) {
    Kokkos::parallel_for(
        "ksz::histogram::global", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
        KOKKOS_LAMBDA(const std::uint64_t i) {
          const std::uint16_t c = codes(i);
          if (c < nbins) Kokkos::atomic_add(&hist(c), std::uint64_t(1));
        });
    return;
  }
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  using Scratch = Kokkos::View<std::uint32_t*, typename ExecSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const std::uint64_t league = (n + kTeamSlice - 1) / kTeamSlice;
  Policy policy(space, static_cast<int>(league), Kokkos::AUTO);
  policy.set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(nbins)));
  Kokkos::parallel_for(
      "ksz::histogram::team", policy, KOKKOS_LAMBDA(const Member& team) {
        Scratch local(team.team_scratch(0), nbins);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nbins),
                             [&](const std::uint32_t b) { local(b) = 0; });
        team.team_barrier();
        const std::uint64_t begin = static_cast<std::uint64_t>(team.league_rank()) * kTeamSlice;
        const std::uint64_t end = begin + kTeamSlice < n ? begin + kTeamSlice : n;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, begin, end), [&](const std::uint64_t i) {
          const std::uint16_t c = codes(i);
          if (c < nbins) Kokkos::atomic_add(&local(c), std::uint32_t(1));
        });
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nbins), [&](const std::uint32_t b) {
          if (local(b)) Kokkos::atomic_add(&hist(b), static_cast<std::uint64_t>(local(b)));
        });
      });
  (void)sizeof(Mem);
}

}  // namespace ksz::histogram
