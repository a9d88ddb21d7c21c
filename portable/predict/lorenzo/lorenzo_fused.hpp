// Fused Lorenzo decompression: one team per prediction chunk (cusz-2020
// section III-C), the chunk staged in scratch memory; residual gather, the
// three prefix sums and the dequantization in one pass over device memory.
// Output equals the unfused reference stages in lorenzo.hpp bit for bit.
// (A fused compression kernel in the same shape measured 2x slower than
// the range kernels on an H100, its scratch-histogram atomics 20x: see
// perf/NOTES.md.)
#pragma once
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "portable/predict/lorenzo/lorenzo.hpp"
#include "portable/quantize/outliers.hpp"
#include "portable/quantize/prequant.hpp"
#include "portable/simd/bits.hpp"
#include "portable/simd/fill.hpp"
#include "src/pipeline/workspace.hpp"

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
  std::uint32_t pad;  // 1: scratch rows padded to an odd length (while a chunk stays within 8192 words), else 0
  explicit ChunkGrid(const Geometry& geo)
      : g(geo),
        nc0((geo.n0 + geo.c0 - 1) / geo.c0),
        nc1((geo.n1 + geo.c1 - 1) / geo.c1),
        nc2((geo.n2 + geo.c2 - 1) / geo.c2),
        pad(std::uint64_t(geo.c0 | 1u) * geo.c1 * geo.c2 <= 8192 ? 1u : 0u) {}
  KOKKOS_INLINE_FUNCTION std::uint64_t chunks() const { return nc0 * nc1 * nc2; }
  KOKKOS_INLINE_FUNCTION std::uint64_t chunk_elems() const { return std::uint64_t(g.c0) * g.c1 * g.c2; }
  // A chunk in scratch memory with rows padded to an odd length where it
  // fits (GPU teams: a thread per row then hits a different bank each).
  KOKKOS_INLINE_FUNCTION std::uint64_t padded_elems() const { return std::uint64_t(g.c0 | pad) * g.c1 * g.c2; }
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
  FastDiv div0, div1;  // by the chunk extents c0 and c1
  Geometry geo;
  Kokkos::View<const std::uint16_t*, Mem> codes;  // element i's code at codes(i - code_origin)
  std::uint64_t chunk_begin, code_origin;           // team r inverts chunk chunk_begin + r
  Kokkos::View<const std::int32_t*, Mem> dense;   // empty: look residuals up in the sparse lists
  Kokkos::View<const std::uint64_t*, Mem> oidx;   // increasing
  Kokkos::View<const std::int32_t*, Mem> oval;
  std::uint32_t radius;
  double step;
  Kokkos::View<T*, Mem> out;

  // The residual of outlier element i: dense(i), or a binary search of the
  // increasing outlier list (0 where i is not listed: the caller's counts
  // then reject the stream).
  KOKKOS_INLINE_FUNCTION std::int32_t outlier(std::uint64_t i) const {
    if (dense.extent(0) != 0) return dense(i);
    std::uint64_t lo = 0, hi = oidx.extent(0);
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (oidx(mid) < i)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < oidx.extent(0) && oidx(lo) == i ? oval(lo) : 0;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, std::uint64_t& z) const {
    const ChunkBox box(cg, chunk_begin + static_cast<std::uint64_t>(team.league_rank()));
    ScratchU v(team.team_scratch(0), cg.padded_elems());
    const std::uint32_t c0 = cg.g.c0, c1 = cg.g.c1, c2 = cg.g.c2, csize = c0 * c1 * c2;
    const std::uint32_t p0 = c0 | cg.pad, pplane = p0 * c1;  // GPUs: padded rows
    const std::uint64_t plane_n = geo.n0 * geo.n1;
    const std::uint64_t origin = box.x0 + geo.n0 * box.y0 + plane_n * box.z0;
    std::uint64_t tz = 0;
    constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
    if constexpr (host) {  // one thread a team: walk the chunk's rows, no index division per element
      std::uint32_t l = 0;
      for (std::uint32_t lz = 0; lz < box.e2; ++lz)
        for (std::uint32_t ly = 0; ly < box.e1; ++ly) {
          const std::uint64_t row = box.x0 + geo.n0 * ((box.y0 + ly) + geo.n1 * (box.z0 + lz));
          for (std::uint32_t lx = 0; lx < box.e0; ++lx, ++l) {
            const std::uint16_t c = codes(row + lx - code_origin);
            tz += c == 0 ? 1 : 0;
            v(l) = c == 0 ? static_cast<std::uint32_t>(outlier(row + lx)) : static_cast<std::uint32_t>(c) - radius;
          }
        }
    } else {
      // GPUs: the chunk's full extents (rows padded to c0 | pad) whatever
      // its clipped ones, by multiplicative division; elements outside the
      // field are skipped here and never reach inside ones below (the sums
      // only run towards higher coordinates).
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, csize),
          [&](const std::uint32_t l, std::uint64_t& acc) {
            const std::uint32_t lyz = div0.div(l), lx = l - lyz * c0, lz = div1.div(lyz), ly = lyz - lz * c1;
            if (lx >= box.e0 || ly >= box.e1 || lz >= box.e2) return;
            const std::uint64_t i = origin + lx + geo.n0 * ly + plane_n * lz;
            const std::uint16_t c = codes(i - code_origin);
            if (c == 0) ++acc;
            v(lx + p0 * lyz) = c == 0 ? static_cast<std::uint32_t>(outlier(i)) : static_cast<std::uint32_t>(c) - radius;
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
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c1 * c2), [&](const std::uint32_t line) {
        std::uint32_t acc = 0;
        for (std::uint32_t x = 0; x < c0; ++x) v(line * p0 + x) = acc += v(line * p0 + x);
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c0 * c2), [&](const std::uint32_t line) {
        const std::uint32_t zz = div0.div(line), x = line - zz * c0, base = x + zz * pplane;
        std::uint32_t acc = 0;
        for (std::uint32_t y = 0; y < c1; ++y) v(base + y * p0) = acc += v(base + y * p0);
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c0 * c1), [&](const std::uint32_t line) {
        const std::uint32_t y = div0.div(line), base = line - y * c0 + y * p0;
        std::uint32_t acc = 0;
        for (std::uint32_t zz = 0; zz < c2; ++zz) v(base + zz * pplane) = acc += v(base + zz * pplane);
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
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, csize), [&](const std::uint32_t l) {
        const std::uint32_t lyz = div0.div(l), lx = l - lyz * c0, lz = div1.div(lyz), ly = lyz - lz * c1;
        if (lx >= box.e0 || ly >= box.e1 || lz >= box.e2) return;
        out(origin + lx + geo.n0 * ly + plane_n * lz) =
            quantize::reconstruct<T>(static_cast<std::int32_t>(v(lx + p0 * lyz)), step);
      });
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { z += tz; });
  }
};

}  // namespace impl

namespace impl {

struct alignas(16) Quad {  // four 32-bit lanes: one 16-byte scratch access
  std::uint32_t v[4];
};
template <class T>
struct alignas(4 * sizeof(T)) Quad4 {  // four input values, one aligned load
  T v[4];
};

// Elements of the quad at x offset lx of a row inside the box (0 to 4).
KOKKOS_INLINE_FUNCTION std::uint32_t quad_valid(const ChunkBox& box, std::uint32_t lx) {
  return lx < box.e0 ? (box.e0 - lx < 4 ? box.e0 - lx : 4) : 0;
}

// Quad qi of a chunk whose rows hold qrow quads (divq divides by qrow, div1 by
// c1), in box at field index origin: its place in the chunk (row = y + c1 z),
// its first element's field index, and how many of its elements lie in the
// field (0: none).
struct QuadAt {
  std::uint32_t lx, ly, lz, row, valid;
  std::uint64_t i;
  KOKKOS_INLINE_FUNCTION QuadAt(std::uint32_t qi, std::uint32_t qrow, const FastDiv& divq, const FastDiv& div1,
                                const ChunkBox& box, std::uint64_t origin, std::uint64_t n0, std::uint64_t plane_n) {
    row = divq.div(qi);
    lx = 4 * (qi - row * qrow);
    lz = div1.div(row);
    ly = row - lz * div1.d;
    valid = ly < box.e1 && lz < box.e2 ? quad_valid(box, lx) : 0;
    i = origin + lx + n0 * ly + plane_n * lz;
  }
};

// Pre-quantization, prediction, quantization and the code histogram in one
// pass (the CUDA specialization's fusion, in Kokkos teams): a team takes
// chunks in turn, pre-quantizes one into scratch memory, then codes it from
// there. A thread takes quads of four x-neighbours (c0 % 4 == 0): 16-byte
// loads and stores, and a quad's prediction reads four quads of scratch and
// the element before it. The kHot bins around the center are counted in the
// 8-bit fields of one register per thread, the rest by scratch atomics; the
// team adds its histogram to hist once. Outliers (code 0) and verbatim
// elements (failed pre-quantization) are rare: their bits are set in two
// bitmaps (atomic or), listed afterwards in index order.
template <class ExecSpace, class T>
struct FusedCompress {
  using Mem = typename ExecSpace::memory_space;
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchU = Kokkos::View<std::uint32_t*, typename ExecSpace::scratch_memory_space,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr std::uint32_t kHot = 8;
  ChunkGrid cg;
  FastDiv divq, div1;  // by the quads of a chunk row (c0 / 4) and by c1
  bool vec_in, vec_codes;  // aligned quads of input / codes where a quad is whole (n0 % 4 == 0)
  Kokkos::View<const T*, Mem> in;
  quantize::QuantParams qp;
  std::uint32_t radius;
  Kokkos::View<std::uint16_t*, Mem> codes;
  Kokkos::View<std::uint64_t*, Mem> hist;            // zeroed by the caller
  Kokkos::View<std::uint32_t*, Mem> outlier_bits;    // zeroed by the caller
  Kokkos::View<std::uint32_t*, Mem> verbatim_bits;   // zeroed by the caller
  // Set bits per outliers::kBitsGroupElems elements, zeroed by the caller.
  Kokkos::View<std::uint64_t*, Mem> outlier_groups, verbatim_groups;
  Kokkos::View<std::uint64_t*, Mem> verbatim_count;  // [0], zeroed by the caller
  // [0], zeroed by the caller; 32 bits: Kokkos 3.4 makes std::uint64_t atomics CAS loops.
  Kokkos::View<std::uint32_t*, Mem> ticket;

  static std::size_t scratch_bytes(const ChunkGrid& cg, std::uint32_t nbins) {
    return cg.chunk_elems() * sizeof(std::uint32_t) + 16 + ScratchU::shmem_size(nbins) + ScratchU::shmem_size(1);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const Geometry& g = cg.g;
    const std::uint32_t nbins = 2 * radius;
    const std::uint32_t c0 = g.c0, c1 = g.c1, csize = c0 * g.c1 * g.c2, nq = csize / 4;
    const std::uint32_t qrow = c0 / 4, qplane = qrow * c1;  // quads of a row, of a plane
    Quad* const qs = static_cast<Quad*>(team.team_scratch(0).get_shmem_aligned(csize * sizeof(std::uint32_t), 16));
    ScratchU lh(team.team_scratch(0), nbins);
    ScratchU next(team.team_scratch(0), 1);  // the team's next chunk
    for (std::uint32_t b = team.team_rank(); b < nbins; b += team.team_size()) lh(b) = 0;
    const std::uint32_t hot0 = radius >= kHot / 2 ? radius - kHot / 2 : 0;
    const std::int32_t r = static_cast<std::int32_t>(radius);
    std::uint64_t hot = 0;  // kHot 8-bit counters
    std::uint32_t since = 0, verbatim = 0;
    const auto flush = [&]() {
      for (std::uint32_t k = 0; k < kHot; ++k) {
        const std::uint32_t cnt = static_cast<std::uint32_t>(hot >> (8 * k)) & 0xFFu;
        if (cnt && hot0 + k < nbins) Kokkos::atomic_add(&lh(hot0 + k), cnt);
      }
      hot = 0;
      since = 0;
    };
    const std::uint64_t plane_n = g.n0 * g.n1;
    // Chunks by ticket, the first too: teams that are not resident from the
    // start find the work done instead of running a second wave.
    if (team.team_rank() == 0) next(0) = Kokkos::atomic_fetch_add(&ticket(0), std::uint32_t(1));
    team.team_barrier();  // the first ticket is drawn (and lh zeroed)
    for (std::uint64_t k = next(0); k < cg.chunks();) {
      const ChunkBox box(cg, k);
      const std::uint64_t origin = box.x0 + g.n0 * box.y0 + plane_n * box.z0;
      team.team_barrier();  // the previous chunk's scratch and ticket are consumed
      if (team.team_rank() == 0) next(0) = Kokkos::atomic_fetch_add(&ticket(0), std::uint32_t(1));
      for (std::uint32_t qi = team.team_rank(); qi < nq; qi += team.team_size()) {
        const QuadAt at(qi, qrow, divq, div1, box, origin, g.n0, plane_n);
        const std::uint32_t valid = at.valid;
        const std::uint64_t i = at.i;
        T v[4] = {T(0), T(0), T(0), T(0)};
        if (valid == 4 && vec_in) {
          const Quad4<T> x = *reinterpret_cast<const Quad4<T>*>(in.data() + i);
          for (int e = 0; e < 4; ++e) v[e] = x.v[e];
        } else {
          for (std::uint32_t e = 0; e < valid; ++e) v[e] = in(i + e);
        }
        Quad q;
        for (std::uint32_t e = 0; e < 4; ++e) {
          std::int32_t qe;
          if (!quantize::prequantize_magic<T>(v[e], qp, qe) && e < valid) {
            ++verbatim;
            Kokkos::atomic_fetch_or(&verbatim_bits((i + e) >> 5), std::uint32_t(1) << ((i + e) & 31));
            atomic_add_u64(&verbatim_groups((i + e) / outliers::kBitsGroupElems), 1);
          }
          q.v[e] = e < valid ? static_cast<std::uint32_t>(qe) : 0u;
        }
        qs[qi] = q;
      }
      team.team_barrier();
      for (std::uint32_t qi = team.team_rank(); qi < nq; qi += team.team_size()) {
        const QuadAt at(qi, qrow, divq, div1, box, origin, g.n0, plane_n);
        if (at.valid == 0) continue;
        const std::uint32_t valid = at.valid;
        // t = q - q(y-1) - q(z-1) + q(y-1, z-1) along the quad and for the
        // element before it; the residual is t(x) - t(x - 1) (wrapping
        // uint32, outside the chunk 0), the same as residual_at().
        const bool hy = at.ly != 0, hz = at.lz != 0, hx = at.lx != 0;
        const Quad a = qs[qi];
        const Quad y = hy ? qs[qi - qrow] : Quad{{0, 0, 0, 0}};
        const Quad z = hz ? qs[qi - qplane] : Quad{{0, 0, 0, 0}};
        const Quad yz = hy && hz ? qs[qi - qrow - qplane] : Quad{{0, 0, 0, 0}};
        std::uint32_t tp = 0;
        if (hx) {
          tp = qs[qi - 1].v[3];
          if (hy) tp -= qs[qi - 1 - qrow].v[3];
          if (hz) tp -= qs[qi - 1 - qplane].v[3];
          if (hy && hz) tp += qs[qi - 1 - qrow - qplane].v[3];
        }
        std::uint32_t c[4];
        for (int e = 0; e < 4; ++e) {
          const std::uint32_t t = a.v[e] - y.v[e] - z.v[e] + yz.v[e];
          const std::int32_t d = static_cast<std::int32_t>(t - tp);
          tp = t;
          c[e] = (d > -r && d < r) ? static_cast<std::uint32_t>(d + r) : 0u;
        }
        const std::uint64_t i = at.i;
        if (valid == 4 && vec_codes) {
          const std::uint64_t w = static_cast<std::uint64_t>(c[0]) | static_cast<std::uint64_t>(c[1]) << 16 |
                                  static_cast<std::uint64_t>(c[2]) << 32 | static_cast<std::uint64_t>(c[3]) << 48;
          *reinterpret_cast<std::uint64_t*>(codes.data() + i) = w;  // little-endian: the first code lowest
        } else {
          for (std::uint32_t e = 0; e < valid; ++e) codes(i + e) = static_cast<std::uint16_t>(c[e]);
        }
        for (std::uint32_t e = 0; e < valid; ++e) {
          const std::uint32_t h = c[e] - hot0;  // wraps for c < hot0
          if (h < kHot) {
            hot += std::uint64_t(1) << (8 * h);
            if (++since == 255) flush();
          } else {
            Kokkos::atomic_add(&lh(c[e]), std::uint32_t(1));
          }
          if (c[e] == 0) {
            Kokkos::atomic_fetch_or(&outlier_bits((i + e) >> 5), std::uint32_t(1) << ((i + e) & 31));
            atomic_add_u64(&outlier_groups((i + e) / outliers::kBitsGroupElems), 1);
          }
        }
      }
      k = next(0);
    }
    flush();
    if (verbatim) atomic_add_u64(&verbatim_count(0), verbatim);
    team.team_barrier();
    for (std::uint32_t b = team.team_rank(); b < nbins; b += team.team_size())
      if (lh(b)) atomic_add_u64(&hist(b), lh(b));
  }
};

}  // namespace impl

// What fused_compress() found: host histogram, increasing outlier (code 0)
// and verbatim index lists (from the workspace slots kOutliers, kVerbatim).
template <class Mem>
struct FusedResult {
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> hist;
  Kokkos::View<std::uint64_t*, Mem> outliers, verbatim;
};

// Codes of the field and everything compress needs besides, in one pass over
// it (impl::FusedCompress). The same codes, histogram and lists as
// prequantize(), predict_quantize(), histogram::histogram() and the
// compactions. Returns false, having done nothing, where the chunk and the
// histogram do not fit a team's scratch memory (48 KiB), nbins > 8192 or the
// chunk's x extent is no multiple of 4.
template <class ExecSpace, class T>
bool fused_compress(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                    const Geometry& geo, const quantize::QuantParams& qp, std::uint32_t radius,
                    Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes,
                    Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> hist,
                    typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease& ws,
                    FusedResult<typename ExecSpace::memory_space>& res) {
  using Mem = typename ExecSpace::memory_space;
  using WS = pipeline::Workspace<Mem>;
  using F = impl::FusedCompress<ExecSpace, T>;
  const impl::ChunkGrid cg(geo);
  const std::uint32_t nbins = 2 * radius;
  if (geo.c0 % 4 != 0 || nbins > 8192 || F::scratch_bytes(cg, nbins) > 48 * 1024) return false;
  const std::uint64_t n = geo.count(), nwords = (n + 31) / 32;
  const auto obits = ws.template get<std::uint32_t>(WS::kOutliersAlt, nwords, "ksz::outlier_bits");
  const auto vbits = ws.template get<std::uint32_t>(WS::kVerbatimAlt, nwords, "ksz::verbatim_bits");
  const auto vcount = ws.template get<std::uint64_t>(WS::kCounters, 1, "ksz::verbatim_count");
  const auto ticket = ws.template get<std::uint32_t>(WS::kTicket, 1, "ksz::ticket");
  const std::uint64_t ng = (nwords + outliers::kBitsGroup - 1) / outliers::kBitsGroup;
  const auto groups = ws.template get<std::uint64_t>(WS::kBitGroups, 2 * (ng + 1), "ksz::bit_groups");
  const Kokkos::View<std::uint64_t*, Mem> ogroups = Kokkos::subview(groups, std::make_pair(std::uint64_t(0), ng + 1));
  const Kokkos::View<std::uint64_t*, Mem> vgroups = Kokkos::subview(groups, std::make_pair(ng + 1, 2 * (ng + 1)));
  fill_zero(space, obits);
  fill_zero(space, vbits);
  fill_zero(space, groups);
  Kokkos::deep_copy(space, vcount, std::uint64_t(0));
  Kokkos::deep_copy(space, ticket, std::uint32_t(0));
  Kokkos::deep_copy(space, hist, std::uint64_t(0));
  const int ts = impl::team_size<ExecSpace>();
  const std::uint64_t teams = static_cast<std::uint64_t>(space.concurrency()) / static_cast<std::uint64_t>(ts);
  const std::uint64_t league = std::max<std::uint64_t>(1, std::min<std::uint64_t>(cg.chunks(), teams));
  // At least six 256-thread teams an SM on GPUs (at most 42 registers; 56
  // without a bound, 51 at five: 0.64, 0.60, 0.58 ms on an H200).
  Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<256, 6>> policy(space, static_cast<int>(league), ts);
  policy.set_scratch_size(0, Kokkos::PerTeam(F::scratch_bytes(cg, nbins)));
  Kokkos::parallel_for("ksz::lorenzo::fused_compress", policy,
                       F{cg, FastDiv(geo.c0 / 4), FastDiv(geo.c1),
                         geo.n0 % 4 == 0 && reinterpret_cast<std::uintptr_t>(in.data()) % (4 * sizeof(T)) == 0,
                         geo.n0 % 4 == 0 && reinterpret_cast<std::uintptr_t>(codes.data()) % 8 == 0, in, qp, radius, codes,
                         hist, obits, vbits, ogroups, vgroups, vcount, ticket});
  res.hist = Kokkos::View<std::uint64_t*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::hist_host")), nbins);
  Kokkos::deep_copy(space, res.hist, hist);
  std::uint64_t nv = 0;
  Kokkos::deep_copy(space, nv, Kokkos::subview(vcount, 0));
  space.fence();
  res.outliers =
      outliers::list_bits<ExecSpace>(space, obits, ogroups, res.hist(0), "ksz::outlier_index", &ws, WS::kOutliers);
  res.verbatim = outliers::list_bits<ExecSpace>(space, vbits, vgroups, nv, "ksz::verbatim_index", &ws, WS::kVerbatim);
  return true;
}

namespace impl {

// ReconstructDequantize's GPU form for chunks whose x extent is a multiple of
// 4, in the CUDA specialization's shape: a thread per quad of four
// x-neighbours wherever the field is read or written (consecutive threads,
// consecutive quads of a row: 8-byte code loads and 16-byte value stores,
// coalesced), rows padded by 4 words in scratch (16-byte aligned, and the
// column walks' rows fall on different banks). Prefix sums: along x inside
// each quad, then each quad adds the totals of the quads before it in its
// row (kept apart, so no quad reads one being changed); along y and z a
// thread per column. Zero codes are counted per thread and added to zeros(0)
// once (no team reduction a chunk).
template <class ExecSpace, class T>
struct ReconstructQuads : ReconstructDequantize<ExecSpace, T> {
  using Base = ReconstructDequantize<ExecSpace, T>;
  using Member = typename Base::Member;
  FastDiv divq;  // by the quads of a chunk row (c0 / 4)
  bool vec_codes;  // aligned quads of codes where a quad is whole (n0 % 4 == 0)
  bool vec_out;    // aligned quads of output values likewise
  Kokkos::View<std::uint64_t*, typename Base::Mem> zeros;

  KOKKOS_INLINE_FUNCTION static std::uint32_t row_words(const ChunkGrid& cg) {
    return std::uint64_t(cg.g.c0 + 4) * cg.g.c1 * cg.g.c2 <= 8192 ? cg.g.c0 + 4 : cg.g.c0;
  }
  static std::size_t scratch_bytes(const ChunkGrid& cg) {
    const std::size_t rows = std::size_t(cg.g.c1) * cg.g.c2;
    return (std::size_t(row_words(cg)) + cg.g.c0 / 4) * rows * sizeof(std::uint32_t) + 16;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const ChunkGrid& cg = this->cg;
    const Geometry& geo = this->geo;
    const ChunkBox box(cg, this->chunk_begin + static_cast<std::uint64_t>(team.league_rank()));
    const std::uint32_t c0 = cg.g.c0, c1 = cg.g.c1, c2 = cg.g.c2, qrow = c0 / 4, nq = qrow * c1 * c2;
    const std::uint32_t p0 = row_words(cg), qp0 = p0 / 4, plane = p0 * c1;
    Quad* const qs = static_cast<Quad*>(team.team_scratch(0).get_shmem_aligned(std::size_t(plane) * c2 * 4, 16));
    std::uint32_t* const w = reinterpret_cast<std::uint32_t*>(qs);
    std::uint32_t* const tot = w + std::size_t(plane) * c2;  // each quad's sum
    const std::uint64_t plane_n = geo.n0 * geo.n1;
    const std::uint64_t origin = box.x0 + geo.n0 * box.y0 + plane_n * box.z0;
    const std::uint32_t radius = this->radius;
    const std::uint32_t rank = static_cast<std::uint32_t>(team.team_rank()),
                        size = static_cast<std::uint32_t>(team.team_size());
    std::uint32_t tz = 0;  // this thread's zero codes
    // Quads outside the field stay unwritten: the sums only run towards
    // higher coordinates, so they never reach inside elements.
    for (std::uint32_t qi = rank; qi < nq; qi += size) {
      const QuadAt at(qi, qrow, divq, this->div1, box, origin, geo.n0, plane_n);
      if (at.valid == 0) continue;
      std::uint32_t c[4] = {radius, radius, radius, radius};  // radius: residual 0
      if (at.valid == 4 && vec_codes) {
        const std::uint16_t* const cp = this->codes.data() + (at.i - this->code_origin);
        const std::uint64_t u = *reinterpret_cast<const std::uint64_t*>(cp);
        for (int e = 0; e < 4; ++e) c[e] = static_cast<std::uint32_t>(u >> (16 * e)) & 0xFFFFu;
      } else {
        for (std::uint32_t e = 0; e < at.valid; ++e) c[e] = this->codes(at.i + e - this->code_origin);
      }
      Quad v;
      std::uint32_t run = 0;
      for (int e = 0; e < 4; ++e) {
        if (c[e] == 0) ++tz;
        run += c[e] == 0 ? static_cast<std::uint32_t>(this->outlier(at.i + e)) : c[e] - radius;
        v.v[e] = run;
      }
      qs[at.row * qp0 + at.lx / 4] = v;
      tot[qi] = run;
    }
    team.team_barrier();
    for (std::uint32_t qi = rank; qi < nq; qi += size) {  // along x: the sums of the quads before
      const QuadAt at(qi, qrow, divq, this->div1, box, origin, geo.n0, plane_n);
      if (at.valid == 0 || at.lx == 0) continue;
      std::uint32_t carry = 0;
      for (std::uint32_t k = qi - at.lx / 4; k < qi; ++k) carry += tot[k];
      Quad& v = qs[at.row * qp0 + at.lx / 4];
      for (int e = 0; e < 4; ++e) v.v[e] += carry;
    }
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c0 * c2), [&](const std::uint32_t line) {
      const std::uint32_t zz = this->div0.div(line), base = line - zz * c0 + zz * plane;
      std::uint32_t acc = 0;
      for (std::uint32_t y = 0; y < c1; ++y) w[base + y * p0] = acc += w[base + y * p0];
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c0 * c1), [&](const std::uint32_t line) {
      const std::uint32_t y = this->div0.div(line), x = line - y * c0, base = x + y * p0;
      if (x >= box.e0 || y >= box.e1) return;
      std::uint32_t acc = 0;
      for (std::uint32_t zz = 0; zz < box.e2; ++zz) w[base + zz * plane] = acc += w[base + zz * plane];
    });
    team.team_barrier();
    const double step = this->step;
    for (std::uint32_t qi = rank; qi < nq; qi += size) {
      const QuadAt at(qi, qrow, divq, this->div1, box, origin, geo.n0, plane_n);
      if (at.valid == 0) continue;
      const Quad s = qs[at.row * qp0 + at.lx / 4];
      Quad4<T> o;
      for (int e = 0; e < 4; ++e) o.v[e] = quantize::reconstruct<T>(static_cast<std::int32_t>(s.v[e]), step);
      if (at.valid == 4 && vec_out) {
        *reinterpret_cast<Quad4<T>*>(this->out.data() + at.i) = o;
      } else {
        for (std::uint32_t e = 0; e < at.valid; ++e) this->out(at.i + e) = o.v[e];
      }
    }
    if (tz) atomic_add_u64(&zeros(0), tz);
  }
};

}  // namespace impl

// Chunks [chunk_begin, chunk_end) of the inverse, whose codes a view holds
// from element code_origin on (the default: the whole field, codes(i) for
// element i).
struct Slab {
  std::uint64_t chunk_begin = 0, chunk_end = ~std::uint64_t(0), code_origin = 0;
};

// Decompression in the output's memory: the codes (2 bytes an element) sit
// in the last bytes of the output buffer, from its 16-bit word code_offset
// on (16-byte aligned), and the inverse runs over whole chunk layers (along
// the slowest dimension longer than 1, whose layers are contiguous ranges of
// elements and of chunks), first to last. A slab of elements [a, b) writes
// bytes [S a, S b) (S = sizeof(T)), which hold codes of elements below
// (S b - 2 code_offset) / 2; slabs with S b <= 2 code_offset + 2 a therefore
// overwrite only codes of elements already inverted. The layers from where
// that stops holding, or from where the next slab would be short
// (kInPlaceMinSlab), form the tail, inverted from a copy of their codes.
struct InPlacePlan {
  std::uint64_t code_offset = 0;  // in 16-bit words from the output's start
  std::vector<Slab> slabs;         // in place, in this order
  Slab tail;                       // chunk_begin == chunk_end: none; else from a copy of codes [code_origin, n)
  bool has_tail() const { return tail.chunk_begin < tail.chunk_end; }
  std::uint64_t tail_codes(std::uint64_t n) const { return has_tail() ? n - tail.code_origin : 0; }
};

// A slab of fewer than n / kInPlaceMinSlab elements ends the in-place part:
// each launch ends with a partly idle wave. Measured on an H200 at 512^3
// f32: the inverse takes 0.54 ms in one launch (peak 1.45x input+output), 0.60
// in six slabs (1.01x), 0.58 in three slabs and an n/8 tail (1.06x).
constexpr std::uint64_t kInPlaceMinSlab = 8;

inline InPlacePlan in_place_plan(const Geometry& g, std::size_t value_bytes) {
  const impl::ChunkGrid cg(g);
  const std::uint64_t n = g.count(), S = value_bytes;
  // The layers: along z in 3D, y in 2D, x (each chunk) in 1D.
  std::uint64_t layer_elems = g.c0, per_layer = 1, layers = cg.nc0;
  if (g.n2 > 1) {
    layer_elems = std::uint64_t(g.c2) * g.n0 * g.n1, per_layer = cg.nc0 * cg.nc1, layers = cg.nc2;
  } else if (g.n1 > 1) {
    layer_elems = std::uint64_t(g.c1) * g.n0, per_layer = cg.nc0, layers = cg.nc1;
  }
  InPlacePlan p;
  p.code_offset = S >= 2 ? ((S - 2) * n / 2) / 8 * 8 : 0;
  std::uint64_t l = 0;
  while (l < layers) {
    const std::uint64_t a = l * layer_elems;
    const std::uint64_t b_max = (2 * p.code_offset + 2 * a) / S;  // elements
    const std::uint64_t lb = b_max >= n ? layers : b_max / layer_elems;
    if (lb <= l) break;
    if (lb < layers && (lb - l) * layer_elems * kInPlaceMinSlab < n) break;
    p.slabs.push_back(Slab{l * per_layer, lb * per_layer, 0});
    l = lb;
  }
  p.tail = l < layers ? Slab{l * per_layer, layers * per_layer, l * layer_elems} : Slab{0, 0, 0};
  return p;
}

// A codes view and the chunks it serves.
template <class Mem>
struct SlabCodes {
  Slab slab;
  Kokkos::View<const std::uint16_t*, Mem> codes;
};

// The parts of plan's inverse: its slabs from codes (n codes in the output's
// memory), its tail from tail (plan.tail_codes(n) elements), into which this
// copies the tail's codes first.
template <class ExecSpace>
std::vector<SlabCodes<typename ExecSpace::memory_space>> in_place_parts(
    const ExecSpace& space, const InPlacePlan& plan,
    Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
    Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> tail) {
  std::vector<SlabCodes<typename ExecSpace::memory_space>> parts;
  for (const Slab& slab : plan.slabs) parts.push_back({slab, codes});
  if (plan.has_tail()) {
    Kokkos::deep_copy(space, tail, Kokkos::subview(codes, std::make_pair(plan.tail.code_origin, codes.extent(0))));
    parts.push_back({plan.tail, tail});
  }
  return parts;
}

// Decompression: out(i) = value, from codes, outlier residuals (read only
// where the code is 0) and the step, part by part in the order given (each
// part's chunks from its codes view). The residuals sit at their positions in
// `dense`, or, where dense is empty, in the sparse increasing list (oidx,
// oval). Returns the number of zero codes (the caller checks it against the
// outlier count). With ws, its counter is the workspace's (no allocation).
template <class ExecSpace, class T>
std::uint64_t reconstruct_dequantize(const ExecSpace& space, const Geometry& geo,
                                     const std::vector<SlabCodes<typename ExecSpace::memory_space>>& parts,
                                     Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space> dense,
                                     Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> oidx,
                                     Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space> oval,
                                     std::uint32_t radius, double step,
                                     Kokkos::View<T*, typename ExecSpace::memory_space> out,
                                     typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  using F = impl::ReconstructDequantize<ExecSpace, T>;
  using Q = impl::ReconstructQuads<ExecSpace, T>;
  using WS = pipeline::Workspace<typename ExecSpace::memory_space>;
  const impl::ChunkGrid cg(geo);
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  const bool quads = !host && geo.c0 % 4 == 0 && Q::scratch_bytes(cg) <= 48 * 1024;
  // The quad kernel counts into one device word for all parts, read once.
  Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> z;
  if (quads) z = WS::template zeroed<std::uint64_t>(space, ws, WS::kScalar, 1, "ksz::inverse_zeros");
  std::uint64_t zeros = 0;
  for (const auto& part : parts) {
    const Slab& slab = part.slab;
    const std::uint64_t end = std::min(slab.chunk_end, cg.chunks());
    if (slab.chunk_begin >= end) continue;
    const int league = static_cast<int>(end - slab.chunk_begin);
    const F f{cg,    FastDiv(geo.c0), FastDiv(geo.c1), geo,  part.codes, slab.chunk_begin, slab.code_origin,
              dense, oidx,            oval,            radius, step,     out};
    if (quads) {
      // At least six 256-thread teams an SM on GPUs (71 registers without a
      // bound left three: 1.29 ms; four 1.14, six 0.99 on an H200).
      Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<256, 6>> policy(space, league, impl::team_size<ExecSpace>());
      policy.set_scratch_size(0, Kokkos::PerTeam(Q::scratch_bytes(cg)));
      const bool vec_codes = geo.n0 % 4 == 0 && slab.code_origin % 4 == 0 &&
                             reinterpret_cast<std::uintptr_t>(part.codes.data()) % 8 == 0;
      const bool vec_out = geo.n0 % 4 == 0 && reinterpret_cast<std::uintptr_t>(out.data()) % (4 * sizeof(T)) == 0;
      Kokkos::parallel_for("ksz::lorenzo::reconstruct_quads", policy, Q{f, FastDiv(geo.c0 / 4), vec_codes, vec_out, z});
    } else {
      Kokkos::TeamPolicy<ExecSpace> policy(space, league, impl::team_size<ExecSpace>());
      policy.set_scratch_size(0, Kokkos::PerTeam(F::ScratchU::shmem_size(cg.padded_elems())));
      std::uint64_t part_zeros = 0;
      Kokkos::parallel_reduce("ksz::lorenzo::reconstruct_dequantize", policy, f, part_zeros);
      zeros += part_zeros;
    }
  }
  if (quads) {
    Kokkos::deep_copy(space, zeros, Kokkos::subview(z, 0));
    space.fence();
  }
  return zeros;
}

}  // namespace ksz::lorenzo
