// Lorenzo prediction on pre-quantized integers (cuSZ dual-quantization,
// cusz-2020 section III). The field is cut into chunks (cusz-2020 section
// III-C); prediction never reaches across a chunk border, so decompression is
// a prefix sum along each dimension inside each chunk, parallel over chunks.
//
// All integer arithmetic wraps in uint32: the forward difference and its
// inverse are exact mod 2^32, so any q that fits int32 comes back bit-exact,
// and corrupt input cannot cause signed overflow.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

#include "portable/quantize/prequant.hpp"

namespace ksz::lorenzo {

// Extents and chunk extents, fastest first. Unused dimensions are 1.
struct Geometry {
  std::uint64_t n0 = 1, n1 = 1, n2 = 1;
  std::uint32_t c0 = 1, c1 = 1, c2 = 1;
  std::uint64_t count() const { return n0 * n1 * n2; }
};

// Default chunk extents by rank: larger chunks mean fewer chunk-corner
// outliers, and any size keeps decompression parallel.
inline void default_chunk(int rank, std::uint32_t c[3]) {
  c[0] = c[1] = c[2] = 1;
  if (rank == 1) c[0] = 4096;
  if (rank == 2) c[0] = c[1] = 64;
  if (rank == 3) c[0] = c[1] = c[2] = 16;
}

// Elements per range-policy iteration. Kokkos 3.4 launches 64-thread blocks
// for plain range kernels, which caps one element per thread at about a third
// of an H100's bandwidth; four per thread reach most of it (measured: 845 vs
// 2521 GB/s for a copy).
constexpr std::uint64_t kPerIter = 4;

// Elements per iteration of the host backends' element-wise passes.
constexpr std::uint64_t kHostSegment = 4096;

namespace impl {
template <class ExecSpace, class T>
struct PrequantizeKernel {
  Kokkos::View<const T*, typename ExecSpace::memory_space> in;
  quantize::QuantParams qp;
  Kokkos::View<std::int32_t*, typename ExecSpace::memory_space> q;
  std::uint64_t n;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t j, std::uint64_t& acc) const {
    for (std::uint64_t i = j * kPerIter; i < (j + 1) * kPerIter && i < n; ++i) {
      std::int32_t v;
      acc += quantize::prequantize<T>(in(i), qp, v) ? 0 : 1;
      q(i) = v;
    }
  }
};
// Host backends: a segment of kHostSegment elements an iteration, through
// quantize::prequantize_span (SSE2 where there).
template <class ExecSpace, class T>
struct PrequantizeSegments : PrequantizeKernel<ExecSpace, T> {  // its fields; a segment an iteration
  void operator()(const std::uint64_t j, std::uint64_t& acc) const;
};
}  // namespace impl

// Pass 1: q[i] = prequantized value, 0 for verbatim elements. Returns the
// number of verbatim elements.
//
// Every parallel_reduce in ksz takes a named functor, never a KOKKOS_LAMBDA:
// nvcc's host-device lambda wrapper calls a null pointer when a template
// holding such a reduction is instantiated in two translation units (seen
// with CUDA 13 on an H100: a test and the library both instantiating this).
template <class ExecSpace, class T>
std::uint64_t prequantize(const ExecSpace& space,
                          Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                          const quantize::QuantParams& qp,
                          Kokkos::View<std::int32_t*, typename ExecSpace::memory_space> q) {
  const std::uint64_t n = in.extent(0);
  std::uint64_t verbatim = 0;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible)
    Kokkos::parallel_reduce("ksz::lorenzo::prequantize_segments",
                            Kokkos::RangePolicy<ExecSpace>(space, 0, (n + kHostSegment - 1) / kHostSegment),
                            impl::PrequantizeSegments<ExecSpace, T>{{in, qp, q, n}}, verbatim);
  else
    Kokkos::parallel_reduce("ksz::lorenzo::prequantize",
                            Kokkos::RangePolicy<ExecSpace>(space, 0, (n + kPerIter - 1) / kPerIter),
                            impl::PrequantizeKernel<ExecSpace, T>{in, qp, q, n}, verbatim);
  return verbatim;
}

template <class ExecSpace, class T>
void impl::PrequantizeSegments<ExecSpace, T>::operator()(const std::uint64_t j, std::uint64_t& acc) const {
  const std::uint64_t n = this->n, b = j * kHostSegment, e = b + kHostSegment < n ? b + kHostSegment : n;
  acc += quantize::prequantize_span(this->in.data() + b, this->q.data() + b, e - b, this->qp);
}

// The residual at i (also used to recover outlier values).
// The residual at i given which neighbours lie inside its chunk (hx: x - 1,
// hy: y - 1, hz: z - 1) and the y/z strides: the one formula every caller uses.
template <class QView>
KOKKOS_INLINE_FUNCTION std::int32_t residual_at(const QView& q, std::uint64_t i, bool hx, bool hy, bool hz,
                                                std::uint64_t sy, std::uint64_t sz) {
  const std::uint64_t sx = 1;
  auto at = [&](bool ok, std::uint64_t off) -> std::uint32_t {
    return ok ? static_cast<std::uint32_t>(q(i - off)) : 0u;
  };
  std::uint32_t d = static_cast<std::uint32_t>(q(i));
  d -= at(hx, sx) + at(hy, sy) + at(hz, sz);
  d += at(hx && hy, sx + sy) + at(hx && hz, sx + sz) + at(hy && hz, sy + sz);
  d -= at(hx && hy && hz, sx + sy + sz);
  return static_cast<std::int32_t>(d);
}

template <class QView>
KOKKOS_INLINE_FUNCTION std::int32_t residual(const Geometry& g, const QView& q, std::uint64_t i) {
  const std::uint64_t x = i % g.n0, yz = i / g.n0, y = yz % g.n1, z = yz / g.n1;
  return residual_at(q, i, x % g.c0 != 0, y % g.c1 != 0, z % g.c2 != 0, g.n0, g.n0 * g.n1);
}

// Elements of an x-row one host work item takes (1D fields are one long row).
constexpr std::uint64_t kRowSegment = 4096;

// q computed on the fly from the input: lets residual() recover a sparse set
// of residuals (outliers) without a stored q array.
template <class InView>
struct PrequantOf {
  InView in;
  quantize::QuantParams qp;
  KOKKOS_INLINE_FUNCTION std::int32_t operator()(std::uint64_t j) const {
    std::int32_t v;
    quantize::prequantize(in(j), qp, v);
    return v;
  }
};

// Pass 2: residual of the chunk-local Lorenzo predictor, quantized to a code
// in [1, 2*radius) when |residual| < radius, else code 0 (an outlier).
template <class ExecSpace>
void predict_quantize(const ExecSpace& space, const Geometry& g,
                      Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space> q,
                      std::uint32_t radius,
                      Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes) {
  const Geometry geo = g;
  const std::uint64_t n = g.count();
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  if constexpr (host) {
    // CPUs: walk x-row segments. With a power-of-two chunk extent along x and
    // rows shorter than 2^32, a branch-free loop the compiler vectorizes: the
    // residual is t(x) - t(x - 1), t = q - q_y - q_z + q_yz along the row
    // (planes outside the chunk masked to 0, x - 1 masked at chunk starts),
    // in the same wrapping uint32 arithmetic as residual_at(); otherwise the
    // chunk position along x kept incrementally (residual()'s seven 64-bit
    // divisions per element dominated here).
    const std::uint64_t segs = (g.n0 + kRowSegment - 1) / kRowSegment;
    const std::int64_t r = radius;
    const bool vec = (g.c0 & (g.c0 - 1)) == 0 && g.n0 < (std::uint64_t(1) << 32);
    Kokkos::parallel_for(
        "ksz::lorenzo::predict_quantize_rows", Kokkos::RangePolicy<ExecSpace>(space, 0, g.n1 * g.n2 * segs),
        KOKKOS_LAMBDA(const std::uint64_t j) {
          const std::uint64_t row = j / segs, x0 = j % segs * kRowSegment;
          const std::uint64_t x1 = x0 + kRowSegment < geo.n0 ? x0 + kRowSegment : geo.n0;
          const std::uint64_t y = row % geo.n1, z = row / geo.n1;
          const bool hy = y % geo.c1 != 0, hz = z % geo.c2 != 0;
          const std::uint64_t sy = geo.n0, sz = geo.n0 * geo.n1, base = row * geo.n0;
          if (vec) {
            // x - 1 is read (and masked at chunk starts) for every x of the
            // loop: each row's first element apart, so no read leaves the array.
            std::uint64_t xs = x0;
            if (x0 == 0) {
              const std::int32_t d = residual_at(q, base, false, hy, hz, sy, sz);
              codes(base) = (d > -r && d < r) ? static_cast<std::uint16_t>(d + r) : std::uint16_t(0);
              xs = 1;
            }
            const std::int32_t* p0 = q.data() + base;
            const std::int32_t* py = hy ? p0 - sy : p0;
            const std::int32_t* pz = hz ? p0 - sz : p0;
            const std::int32_t* pyz = hy && hz ? p0 - sy - sz : p0;
            const std::uint32_t my = hy ? ~0u : 0u, mz = hz ? ~0u : 0u, myz = my & mz;
            const std::uint32_t cmask = static_cast<std::uint32_t>(geo.c0 - 1);
            const std::int32_t r32 = static_cast<std::int32_t>(r);
            std::uint16_t* out = codes.data() + base;
            for (std::uint32_t x = static_cast<std::uint32_t>(xs); x < static_cast<std::uint32_t>(x1); ++x) {
              const std::uint32_t t = static_cast<std::uint32_t>(p0[x]) - (static_cast<std::uint32_t>(py[x]) & my) -
                                      (static_cast<std::uint32_t>(pz[x]) & mz) +
                                      (static_cast<std::uint32_t>(pyz[x]) & myz);
              const std::uint32_t tp = static_cast<std::uint32_t>(p0[x - 1]) -
                                       (static_cast<std::uint32_t>(py[x - 1]) & my) -
                                       (static_cast<std::uint32_t>(pz[x - 1]) & mz) +
                                       (static_cast<std::uint32_t>(pyz[x - 1]) & myz);
              const std::uint32_t mx = (x & cmask) != 0 ? ~0u : 0u;
              const std::int32_t d = static_cast<std::int32_t>(t - (tp & mx));
              out[x] = (d > -r32 && d < r32) ? static_cast<std::uint16_t>(d + r32) : std::uint16_t(0);
            }
            return;
          }
          std::uint64_t cx = x0 % geo.c0;
          for (std::uint64_t x = x0; x < x1; ++x) {
            const std::int32_t d = residual_at(q, base + x, cx != 0, hy, hz, sy, sz);
            codes(base + x) = (d > -r && d < r) ? static_cast<std::uint16_t>(d + r) : std::uint16_t(0);
            if (++cx == geo.c0) cx = 0;
          }
        });
    return;
  }
  Kokkos::parallel_for(
      "ksz::lorenzo::predict_quantize", Kokkos::RangePolicy<ExecSpace>(space, 0, (n + kPerIter - 1) / kPerIter),
      KOKKOS_LAMBDA(const std::uint64_t j) {
        for (std::uint64_t i = j * kPerIter; i < (j + 1) * kPerIter && i < n; ++i) {
          const std::int32_t d = residual(geo, q, i);
          const std::int64_t r = radius;
          codes(i) = (d > -r && d < r) ? static_cast<std::uint16_t>(d + r) : std::uint16_t(0);
        }
      });
}

// Inverse: in place, turn residuals into q by a wrapping prefix sum along
// each dimension inside each chunk.
template <class ExecSpace>
void reconstruct(const ExecSpace& space, const Geometry& g,
                 Kokkos::View<std::int32_t*, typename ExecSpace::memory_space> v) {
  const Geometry geo = g;
  const std::uint64_t n[3] = {g.n0, g.n1, g.n2};
  const std::uint64_t c[3] = {g.c0, g.c1, g.c2};
  const std::uint64_t stride[3] = {1, g.n0, g.n0 * g.n1};
  for (int d = 0; d < 3; ++d) {
    if (n[d] == 1) continue;
    const std::uint64_t nd = n[d], cd = c[d], sd = stride[d];
    const std::uint64_t nchunks = (nd + cd - 1) / cd;
    const std::uint64_t inner = sd;                 // extent of the faster dims
    const std::uint64_t lines = geo.count() / nd;   // lines along d
    // Segment s: the faster-dims position varies fastest so that neighbouring
    // segments touch neighbouring addresses (coalesced on GPUs) for d > 0.
    Kokkos::parallel_for(
        "ksz::lorenzo::reconstruct", Kokkos::RangePolicy<ExecSpace>(space, 0, lines * nchunks),
        KOKKOS_LAMBDA(const std::uint64_t s) {
          const std::uint64_t lo = s % inner, t = s / inner;
          const std::uint64_t k = t % nchunks, hi = t / nchunks;
          const std::uint64_t base = lo + sd * nd * hi;
          const std::uint64_t begin = k * cd, end = begin + cd < nd ? begin + cd : nd;
          std::uint32_t acc = 0;
          for (std::uint64_t j = begin; j < end; ++j) {
            const std::uint64_t idx = base + j * sd;
            acc += static_cast<std::uint32_t>(v(idx));
            v(idx) = static_cast<std::int32_t>(acc);
          }
        });
  }
}

// Codes back to residuals (outliers, code 0, are filled in afterwards).
template <class ExecSpace>
void dequantize_codes(const ExecSpace& space,
                      Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
                      std::uint32_t radius,
                      Kokkos::View<std::int32_t*, typename ExecSpace::memory_space> v) {
  Kokkos::parallel_for(
      "ksz::lorenzo::dequantize_codes", Kokkos::RangePolicy<ExecSpace>(space, 0, codes.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i) {
        const std::uint16_t c = codes(i);
        v(i) = c == 0 ? 0 : static_cast<std::int32_t>(c) - static_cast<std::int32_t>(radius);
      });
}

// q back to values.
template <class ExecSpace, class T>
void dequantize(const ExecSpace& space,
                Kokkos::View<const std::int32_t*, typename ExecSpace::memory_space> q, double step,
                Kokkos::View<T*, typename ExecSpace::memory_space> out) {
  Kokkos::parallel_for(
      "ksz::lorenzo::dequantize", Kokkos::RangePolicy<ExecSpace>(space, 0, q.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i) { out(i) = quantize::reconstruct<T>(q(i), step); });
}

}  // namespace ksz::lorenzo
