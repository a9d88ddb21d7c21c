// Fused Lorenzo decompression: one team per prediction chunk (cusz-2020
// section III-C), the chunk staged in scratch memory; residual gather, the
// three prefix sums and the dequantization in one pass over device memory.
// Output equals the unfused reference stages in lorenzo.hpp bit for bit.
// (A fused compression kernel in the same shape measured 2x slower than
// the range kernels on an H100, its scratch-histogram atomics 20x: see
// perf/NOTES.md.)
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

#include "portable/predict/lorenzo/lorenzo.hpp"
#include "portable/quantize/prequant.hpp"

namespace ksz::lorenzo {

namespace impl {

// Team size: one thread per team on host backends (a team is a chunk walked
// in cache order); 256 on GPUs.
template <class ExecSpace>
int team_size() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible ? 1 : 256;
}

struct ChunkGrid {
  Geometry g;
  std::uint64_t nc0, nc1, nc2;
  explicit ChunkGrid(const Geometry& geo)
      : g(geo),
        nc0((geo.n0 + geo.c0 - 1) / geo.c0),
        nc1((geo.n1 + geo.c1 - 1) / geo.c1),
        nc2((geo.n2 + geo.c2 - 1) / geo.c2) {}
  KOKKOS_INLINE_FUNCTION std::uint64_t chunks() const { return nc0 * nc1 * nc2; }
  KOKKOS_INLINE_FUNCTION std::uint64_t chunk_elems() const { return std::uint64_t(g.c0) * g.c1 * g.c2; }
};

// Chunk k's origin and clipped extents.
struct ChunkBox {
  std::uint64_t x0, y0, z0;
  std::uint32_t e0, e1, e2;
  KOKKOS_INLINE_FUNCTION ChunkBox(const ChunkGrid& cg, std::uint64_t k) {
    const std::uint64_t kx = k % cg.nc0, kyz = k / cg.nc0, ky = kyz % cg.nc1, kz = kyz / cg.nc1;
    x0 = kx * cg.g.c0;
    y0 = ky * cg.g.c1;
    z0 = kz * cg.g.c2;
    e0 = static_cast<std::uint32_t>(x0 + cg.g.c0 <= cg.g.n0 ? cg.g.c0 : cg.g.n0 - x0);
    e1 = static_cast<std::uint32_t>(y0 + cg.g.c1 <= cg.g.n1 ? cg.g.c1 : cg.g.n1 - y0);
    e2 = static_cast<std::uint32_t>(z0 + cg.g.c2 <= cg.g.n2 ? cg.g.c2 : cg.g.n2 - z0);
  }
  KOKKOS_INLINE_FUNCTION std::uint32_t count() const { return e0 * e1 * e2; }
  // Global index of local element l (x fastest).
  KOKKOS_INLINE_FUNCTION std::uint64_t global(const Geometry& g, std::uint32_t l) const {
    const std::uint32_t lx = l % e0, lyz = l / e0, ly = lyz % e1, lz = lyz / e1;
    return (x0 + lx) + g.n0 * ((y0 + ly) + g.n1 * (z0 + lz));
  }
};

}  // namespace impl

namespace impl {

// A named functor, not a lambda: see the note on parallel_reduce in lorenzo.hpp.
template <class ExecSpace, class T>
struct ReconstructDequantize {
  using Mem = typename ExecSpace::memory_space;
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchU = Kokkos::View<std::uint32_t*, typename ExecSpace::scratch_memory_space,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  ChunkGrid cg;
  Geometry geo;
  Kokkos::View<const std::uint16_t*, Mem> codes;
  Kokkos::View<const std::int32_t*, Mem> dense;
  std::uint32_t radius;
  double step;
  Kokkos::View<T*, Mem> out;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, std::uint64_t& z) const {
    const ChunkBox box(cg, static_cast<std::uint64_t>(team.league_rank()));
    const std::uint32_t m = box.count();
    ScratchU v(team.team_scratch(0), cg.chunk_elems());
    std::uint64_t tz = 0;
    constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
    if constexpr (host) {  // one thread a team: walk the chunk's rows, no index division per element
      std::uint32_t l = 0;
      for (std::uint32_t lz = 0; lz < box.e2; ++lz)
        for (std::uint32_t ly = 0; ly < box.e1; ++ly) {
          const std::uint64_t row = box.x0 + geo.n0 * ((box.y0 + ly) + geo.n1 * (box.z0 + lz));
          for (std::uint32_t lx = 0; lx < box.e0; ++lx, ++l) {
            const std::uint16_t c = codes(row + lx);
            tz += c == 0 ? 1 : 0;
            v(l) = c == 0 ? static_cast<std::uint32_t>(dense(row + lx)) : static_cast<std::uint32_t>(c) - radius;
          }
        }
    } else {
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, m),
          [&](const std::uint32_t l, std::uint64_t& acc) {
            const std::uint64_t i = box.global(geo, l);
            const std::uint16_t c = codes(i);
            if (c == 0) ++acc;
            v(l) = c == 0 ? static_cast<std::uint32_t>(dense(i)) : static_cast<std::uint32_t>(c) - radius;
          },
          tz);
    }
    team.team_barrier();
    // Prefix sums along x, y, z inside the chunk (wrapping uint32 adds: any
    // order gives the same values).
    const std::uint32_t e0 = box.e0, e1 = box.e1, e2 = box.e2;
    if constexpr (host) {
      // One thread a team: x along each row, then y and z as whole-row and
      // whole-plane adds over contiguous x, which the compiler vectorizes
      // (the line-per-thread form strides by e0 and e0 * e1 here).
      std::uint32_t* w = v.data();
      for (std::uint32_t line = 0; line < e1 * e2; ++line) {
        std::uint32_t* rowp = w + line * e0;
        std::uint32_t acc = 0;
        for (std::uint32_t x = 0; x < e0; ++x) rowp[x] = acc += rowp[x];
      }
      for (std::uint32_t zz = 0; zz < e2; ++zz)
        for (std::uint32_t y = 1; y < e1; ++y) {
          std::uint32_t* cur = w + (zz * e1 + y) * e0;
          const std::uint32_t* prev = cur - e0;
          for (std::uint32_t x = 0; x < e0; ++x) cur[x] += prev[x];
        }
      const std::uint32_t plane = e0 * e1;
      for (std::uint32_t zz = 1; zz < e2; ++zz) {
        std::uint32_t* cur = w + zz * plane;
        const std::uint32_t* prev = cur - plane;
        for (std::uint32_t k = 0; k < plane; ++k) cur[k] += prev[k];
      }
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, e1 * e2), [&](const std::uint32_t line) {
        std::uint32_t acc = 0;
        for (std::uint32_t x = 0; x < e0; ++x) v(line * e0 + x) = acc += v(line * e0 + x);
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, e0 * e2), [&](const std::uint32_t line) {
        const std::uint32_t x = line % e0, zz = line / e0, base = x + zz * e0 * e1;
        std::uint32_t acc = 0;
        for (std::uint32_t y = 0; y < e1; ++y) v(base + y * e0) = acc += v(base + y * e0);
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, e0 * e1), [&](const std::uint32_t line) {
        std::uint32_t acc = 0;
        for (std::uint32_t zz = 0; zz < e2; ++zz) v(line + zz * e0 * e1) = acc += v(line + zz * e0 * e1);
      });
    }
    team.team_barrier();
    if constexpr (host) {
      std::uint32_t l = 0;
      for (std::uint32_t lz = 0; lz < box.e2; ++lz)
        for (std::uint32_t ly = 0; ly < box.e1; ++ly) {
          const std::uint64_t row = box.x0 + geo.n0 * ((box.y0 + ly) + geo.n1 * (box.z0 + lz));
          for (std::uint32_t lx = 0; lx < box.e0; ++lx, ++l)
            out(row + lx) = quantize::reconstruct<T>(static_cast<std::int32_t>(v(l)), step);
        }
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::uint32_t l) {
        out(box.global(geo, l)) = quantize::reconstruct<T>(static_cast<std::int32_t>(v(l)), step);
      });
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { z += tz; });
  }
};

}  // namespace impl

// Decompression: out(i) = value, from codes, outlier residuals placed at their
// positions in `dense` (read only where the code is 0), and the step. Returns
// the number of zero codes (the caller checks it against the outlier count).
template <class ExecSpace, class T>
std::uint64_t reconstruct_dequantize(const ExecSpace& space, const Geometry& geo,
                                     Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
                                     Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space> dense,
                                     std::uint32_t radius, double step,
                                     Kokkos::View<T*, typename ExecSpace::memory_space> out) {
  using F = impl::ReconstructDequantize<ExecSpace, T>;
  const impl::ChunkGrid cg(geo);
  Kokkos::TeamPolicy<ExecSpace> policy(space, static_cast<int>(cg.chunks()), impl::team_size<ExecSpace>());
  policy.set_scratch_size(0, Kokkos::PerTeam(F::ScratchU::shmem_size(cg.chunk_elems())));
  std::uint64_t zeros = 0;
  Kokkos::parallel_reduce("ksz::lorenzo::reconstruct_dequantize", policy,
                          F{cg, geo, codes, dense, radius, step, out}, zeros);
  return zeros;
}

}  // namespace ksz::lorenzo
