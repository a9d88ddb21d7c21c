// Histogram of quantization codes (cusz-2020 section IV-A). Quantization codes
// crowd around the center (a zero residual), so the center bins would make
// every atomic contend. Each GPU thread therefore counts the kHotPacked bins around the
// center in registers (cusz-i section VI-A's top-k idea), sends the rest to a
// per-team scratch histogram (cuSZ's replicated per-block copies), and the
// team adds its counts to the global histogram once. Integer counts: the
// result is the same on every backend.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/simd/bits.hpp"
#include "src/core/error.hpp"

namespace ksz::histogram {

// Elements per team.
constexpr std::uint64_t kTeamSlice = std::uint64_t(1) << 16;
// Scratch histograms above this many bins go straight to global atomics.
constexpr std::uint32_t kMaxScratchBins = 8192;
// Bins around the center counted in registers on GPUs: [center - 4, center + 4).
constexpr std::uint32_t kHotPacked = 8, kHotRounds = 31;

template <class ExecSpace>
void histogram(const ExecSpace& space,
               Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
               Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> hist, std::uint32_t center);

// The histograms of `items` runs of codes one after the other (codes holds
// items runs of equal length), side by side in hist (items runs of bins):
// on CUDA one launch for all.
template <class ExecSpace>
void histograms(const ExecSpace& space, Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
                Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> hist, std::uint32_t center,
                std::uint32_t items) {
  KSZ_EXPECTS(items >= 1 && codes.extent(0) % items == 0 && hist.extent(0) % items == 0,
              "histograms: ", items, " runs do not divide ", codes.extent(0), " codes and ", hist.extent(0), " bins");
  const std::uint64_t n = codes.extent(0) / items, nbins = hist.extent(0) / items;
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    if (hist.span_is_contiguous() &&
        cuda_spec::code_histogram(space, codes.data(), n, static_cast<std::uint32_t>(nbins), center, hist.data(),
                                  items))
      return;
#endif
  for (std::uint64_t c = 0; c < items; ++c)
    histogram<ExecSpace>(space, Kokkos::subview(codes, std::make_pair(c * n, (c + 1) * n)),
                         Kokkos::subview(hist, std::make_pair(c * nbins, (c + 1) * nbins)), center);
}

template <class ExecSpace>
void histogram(const ExecSpace& space,
               Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
               Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> hist, std::uint32_t center) {
  const std::uint64_t n = codes.extent(0);
  const std::uint32_t nbins = static_cast<std::uint32_t>(hist.extent(0));
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    if (hist.span_is_contiguous() && cuda_spec::code_histogram(space, codes.data(), n, nbins, center, hist.data()))
      return;
#endif
  Kokkos::deep_copy(space, hist, 0);
  if (n == 0) return;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  if (host && nbins > kMaxScratchBins) {
    // Wide alphabets on CPUs (PW_REL's classic radius 32768): one private
    // histogram per thread over a contiguous slice, then a sum per bin.
    // Global atomics there would bounce the center bins' cache lines
    // between cores (slower with every thread added).
    const std::uint64_t nt = static_cast<std::uint64_t>(space.concurrency());
    Kokkos::View<std::uint64_t**, Kokkos::LayoutRight, typename ExecSpace::memory_space> local("ksz::histogram::local",
                                                                                               nt, nbins);
    Kokkos::parallel_for(
        "ksz::histogram::private", Kokkos::RangePolicy<ExecSpace>(space, 0, nt), KOKKOS_LAMBDA(const std::uint64_t t) {
          const std::uint64_t end = n / nt * (t + 1) + (t + 1 == nt ? n % nt : 0);
          for (std::uint64_t i = n / nt * t; i < end; ++i) {
            const std::uint16_t c = codes(i);
            if (c < nbins) ++local(t, c);
          }
        });
    Kokkos::parallel_for(
        "ksz::histogram::sum", Kokkos::RangePolicy<ExecSpace>(space, 0, nbins), KOKKOS_LAMBDA(const std::uint32_t b) {
          std::uint64_t s = 0;
          for (std::uint64_t t = 0; t < nt; ++t) s += local(t, b);
          hist(b) = s;
        });
    return;
  }
  if (nbins > kMaxScratchBins) {
    Kokkos::parallel_for(
        "ksz::histogram::global", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
        KOKKOS_LAMBDA(const std::uint64_t i) {
          const std::uint16_t c = codes(i);
          if (c < nbins) atomic_add_u64(&hist(c), 1);
        });
    return;
  }
  // Host backends run one thread per team over a private scratch histogram:
  // no atomics needed there, and no register counting either.
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  using Scratch = Kokkos::View<std::uint32_t*, typename ExecSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const std::uint64_t league = (n + kTeamSlice - 1) / kTeamSlice;
  // The hot window, clipped into [0, nbins).
  const std::uint32_t hot0 = center >= kHotPacked / 2 ? center - kHotPacked / 2 : 0;
  Policy policy(space, static_cast<int>(league), host ? 1 : 256);
  policy.set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(nbins)));
  Kokkos::parallel_for(
      "ksz::histogram::team", policy, KOKKOS_LAMBDA(const Member& team) {
        Scratch local(team.team_scratch(0), nbins);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nbins), [&](const std::uint32_t b) { local(b) = 0; });
        team.team_barrier();
        const std::uint64_t begin = static_cast<std::uint64_t>(team.league_rank()) * kTeamSlice;
        const std::uint64_t end = begin + kTeamSlice < n ? begin + kTeamSlice : n;
        if (host) {
          for (std::uint64_t i = begin; i < end; ++i) {
            const std::uint16_t c = codes(i);
            if (c < nbins) ++local(c);
          }
        } else {
          // The kHotPacked bins from hot0 in the 8-bit fields of one register,
          // added to the team's histogram every kHotRounds loads of 8 codes
          // (at most 248 a field); the rest by scratch atomics.
          std::uint64_t hot = 0;
          const auto flush = [&]() {
            for (std::uint32_t k = 0; k < kHotPacked; ++k) {
              const std::uint32_t cnt = static_cast<std::uint32_t>(hot >> (8 * k)) & 0xFFu;
              if (cnt && hot0 + k < nbins) Kokkos::atomic_add(&local(hot0 + k), cnt);
            }
            hot = 0;
          };
          const auto count = [&](const std::uint32_t c) {
            const std::uint32_t h = c - hot0;  // wraps for c < hot0
            if (h < kHotPacked)
              hot += std::uint64_t(1) << (8 * h);
            else if (c < nbins)
              Kokkos::atomic_add(&local(c), std::uint32_t(1));
          };
          const std::uint64_t stride = static_cast<std::uint64_t>(team.team_size());
          std::uint64_t i = begin + team.team_rank();
          // Eight codes per 16-byte load where the slice is aligned (2-byte
          // loads keep too few bytes in flight); the order of counting is free.
          const std::uint16_t* p = codes.data();
          if (kTeamSlice % 8 == 0 && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0) {
            const Words4* w = reinterpret_cast<const Words4*>(p);
            std::uint32_t rounds = 0;
            for (std::uint64_t v = begin / 8 + team.team_rank(); v < end / 8; v += stride) {
              const Words4 x = w[v];
              for (int k = 0; k < 4; ++k) {
                count(x.w[k] & 0xFFFFu);
                count(x.w[k] >> 16);
              }
              if (++rounds == kHotRounds) {
                flush();
                rounds = 0;
              }
            }
            flush();
            i = end / 8 * 8 + team.team_rank();
          }
          for (; i < end; i += stride) count(codes(i));  // fewer than 8 a thread
          flush();
        }
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nbins), [&](const std::uint32_t b) {
          if (local(b)) atomic_add_u64(&hist(b), local(b));
        });
      });
}

// Magnitude classes: for each block of kClassBlock codes of radius 4096,
// kCodeClasses counts: k < 8 of the codes with 2^(k+4) <= |c - 4096| <
// 2^(k+5), and the last of code 0. The interp pipeline codes at radius 4096
// before choosing a radius among powers of two from 16 (spline::choose_radius);
// the code-0 positions a block will have at radius 2^j are its code 0 and
// classes j - 4 and up (spline::count_outliers_from_classes), with no
// further read of the codes.
constexpr std::uint64_t kClassBlock = 4096;
constexpr int kCodeClasses = 9;

// A block's code-0 positions at a radius whose first counted class is
// `first`, from its kCodeClasses counts k: code 0 (the last class) and the
// magnitude classes from `first` up.
KOKKOS_INLINE_FUNCTION std::uint32_t zeros_of_classes(const std::uint32_t* k, int first) {
  std::uint32_t s = k[kCodeClasses - 1];
  for (int q = first; q < kCodeClasses - 1; ++q) s += k[q];
  return s;
}

// histogram() of codes at radius center, and where the backend counts them in
// the same pass (CUDA with the specializations on, center 4096) each
// block's magnitude classes into classes (kCodeClasses a block): true then.
// False: hist alone, the classes untouched.
template <class ExecSpace>
bool histogram_classes(const ExecSpace& space, Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
                       Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> hist, std::uint32_t center,
                       Kokkos::View<std::uint32_t*, typename ExecSpace::memory_space> classes) {
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    if (hist.extent(0) == 2 * std::uint64_t(center) && hist.span_is_contiguous() &&
        classes.extent(0) >= (codes.extent(0) + kClassBlock - 1) / kClassBlock * kCodeClasses &&
        cuda_spec::code_histogram_classes(space, codes.data(), codes.extent(0), center, hist.data(), classes.data()))
      return true;
#endif
  (void)classes;
  histogram<ExecSpace>(space, codes, hist, center);
  return false;
}

}  // namespace ksz::histogram
