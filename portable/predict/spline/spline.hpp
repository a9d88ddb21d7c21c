// G-Interp spline prediction (cusz-i-interpolation, section IV): anchors on a
// grid of stride S (8 in 3D, 16 in 2D, 512 in 1D, section IV-A) seed the
// field; then levels of stride S/2, ..., 2, 1 fill it in, each level as one
// pass per dimension (in the tuned dimension order), each point predicted by
// the spline its reconstructed neighbours allow (section IV-B.1: cubic, else
// quadratic, else linear).
//
// Deviation from section V-D: points of one pass depend only on earlier
// passes, so each pass is one flat parallel_for over its points on the whole
// field instead of per-block tiles in scratch memory. Prediction is global
// (not clipped at chunk borders), which gives cubic splines almost everywhere
// and so a higher ratio; tiling is a later speed optimization.
//
// Predictions are made from *reconstructed* values, exactly those the
// decompressor will have, with every float operation rounded once
// (mul_rn/add_rn), so compressor and decompressor agree bit for bit on every
// backend. Each element gets an integer residual q (in steps of its level)
// and a code: q + radius when |q| < radius, else 0 with q kept as an outlier
// (as cuSZ stores Lorenzo outliers). Elements whose q would not reconstruct
// within the bound (NaN, Inf, huge values, rounding) are stored verbatim:
// q = kVerbatim, code 0. The bound holds for every element by construction.
#pragma once
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "portable/encode/huffman/narrow.hpp"
#include "portable/histogram/histogram.hpp"
#include "portable/quantize/outliers.hpp"
#include "portable/quantize/prequant.hpp"
#include "portable/simd/bits.hpp"

namespace ksz::spline {

using quantize::add_rn;
using quantize::mul_rn;

// Spline kinds (recorded per dimension in the container).
constexpr std::uint32_t kNotAKnot = 0;  // cubic, not-a-knot
constexpr std::uint32_t kNatural = 1;   // cubic, natural
constexpr std::uint32_t kLinear = 2;    // linear only (rough or edged fields, chosen by trial)

// q of an element stored verbatim; valid residuals satisfy |q| < 2^30.
constexpr std::int32_t kVerbatim = -2147483647 - 1;

// Tuned choices, all recorded in the container.
struct Config {
  std::uint32_t anchor_stride = 8;     // S, a power of two
  std::uint32_t order[3] = {0, 1, 2};  // pass order of the dimensions within a level
  std::uint32_t kind[3] = {0, 0, 0};   // spline per dimension: kNotAKnot, kNatural or kLinear
  double alpha = 1.0;                  // level-wise bound reduction (Eq. 1)
};

// Anchor stride by rank, section IV-A: 8^3 chunks, 16^2, 512.
inline std::uint32_t default_anchor_stride(int rank) { return rank == 1 ? 512 : rank == 2 ? 16 : 8; }

// Eq. 1 of section V-C: alpha from the relative bound.
inline double alpha_of(double eps) {
  if (!(eps > 1e-5)) return 1.0;
  if (eps >= 1e-1) return 2.0;
  if (eps >= 1e-2) return 1.75 + 0.25 * (eps - 1e-2) / (1e-1 - 1e-2);
  if (eps >= 1e-3) return 1.5 + 0.25 * (eps - 1e-3) / (1e-2 - 1e-3);
  if (eps >= 1e-4) return 1.25 + 0.25 * (eps - 1e-4) / (1e-3 - 1e-4);
  return 1.0 + 0.25 * (eps - 1e-5) / (1e-4 - 1e-5);
}

// Number of levels below the anchors: stride S/2 is level log2(S), stride 1 is level 1.
inline int level_count(std::uint32_t S) {
  int l = 0;
  while ((1u << l) < S) ++l;
  return l;
}

// Quantization steps: index 0 .. L-1 for level 1 .. L (stride 1 .. S/2), index
// L for the anchors. e_l = e / alpha^(l-1) (section IV-B.2), by repeated
// division (exact IEEE ops on the host, the same on every backend). The
// reduction stops at alpha^2, the paper's deepest level in 3D: 2D and 1D
// have 4 and 9 levels, and alpha^8 would spend most bits on a few coarse
// points (SZ3 caps the same reduction).
constexpr int kMaxReducedLevels = 2;
inline void level_steps(double base_step, double alpha, int levels, double* steps) {
  double s = base_step;
  for (int l = 0; l <= levels; ++l) {
    steps[l] = s;
    if (l < kMaxReducedLevels) s = s / alpha;
  }
}

struct Shape {
  std::uint64_t n[3] = {1, 1, 1};
  std::uint64_t stride[3] = {1, 1, 1};  // memory strides
  KOKKOS_INLINE_FUNCTION std::uint64_t count() const { return n[0] * n[1] * n[2]; }
};

inline Shape make_shape(std::uint64_t n0, std::uint64_t n1, std::uint64_t n2) {
  Shape s;
  s.n[0] = n0;
  s.n[1] = n1;
  s.n[2] = n2;
  s.stride[0] = 1;
  s.stride[1] = n0;
  s.stride[2] = n0 * n1;
  return s;
}

// The points of one pass: along dimension `dim` odd multiples of s; along
// dimensions earlier in the order multiples of s; later ones multiples of 2s.
// Their neighbours along `dim` (even multiples of s) were reconstructed by
// earlier passes or levels.
struct Pass {
  Shape shape;
  std::uint32_t dim = 0;
  std::uint64_t s = 1;
  std::uint64_t step[3] = {1, 1, 1};   // coordinate step per dimension
  std::uint64_t first[3] = {0, 0, 0};  // first coordinate per dimension
  std::uint64_t cnt[3] = {0, 0, 0};    // points per dimension
  FastDiv div0, div1;                  // by cnt[0] and cnt[1]
  bool div32 = false;                  // count() < 2^32: index by div0, div1
  bool last = false;                   // the traversal's last pass: nothing reads its reconstruction
  std::uint32_t kind = 0;
  // s * stride[dim] and n[dim], kept apart: indexing shape by a runtime dim
  // costs a load a point on GPUs.
  std::uint64_t ustride = 1;  // the neighbour step along dim
  std::uint64_t ndim = 0;     // extent along dim
  double qstep = 1, inv_qstep = 1;
  KOKKOS_INLINE_FUNCTION std::uint64_t count() const { return cnt[0] * cnt[1] * cnt[2]; }
};

inline Pass make_pass(const Shape& sh, const Config& cfg, std::uint64_t s, int p, double qstep) {
  Pass ps;
  ps.shape = sh;
  ps.dim = cfg.order[p];
  ps.s = s;
  for (int q = 0; q < 3; ++q) {
    const std::uint32_t d = cfg.order[q];
    const std::uint64_t n = sh.n[d];
    if (q == p) {
      ps.step[d] = 2 * s;
      ps.first[d] = s;
      ps.cnt[d] = n > s ? (n - 1 - s) / (2 * s) + 1 : 0;
    } else {
      const std::uint64_t st = q < p ? s : 2 * s;
      ps.step[d] = st;
      ps.first[d] = 0;
      ps.cnt[d] = (n - 1) / st + 1;
    }
  }
  if (ps.count() > 0 && ps.count() < (std::uint64_t(1) << 32)) {
    ps.div0 = FastDiv(static_cast<std::uint32_t>(ps.cnt[0]));
    ps.div1 = FastDiv(static_cast<std::uint32_t>(ps.cnt[1]));
    ps.div32 = true;
  }
  ps.kind = cfg.kind[ps.dim];
  ps.ustride = s * sh.stride[ps.dim];
  ps.ndim = sh.n[ps.dim];
  ps.qstep = qstep;
  ps.inv_qstep = 1.0 / qstep;
  return ps;
}

// Pass point k < 2^32 split into its counts along each dimension by FastDiv.
KOKKOS_INLINE_FUNCTION void split32(const Pass& p, std::uint32_t k, std::uint32_t& k0, std::uint32_t& k1,
                                    std::uint32_t& k2) {
  const std::uint32_t k12 = p.div0.div(k);
  k2 = p.div1.div(k12);
  k0 = k - k12 * p.div0.d;
  k1 = k12 - k2 * p.div1.d;
}

// Flat element index and coordinate along the pass dimension of pass point k.
// Passes of fewer than 2^32 points (every field below 2^33 elements) divide
// in 32 bits by FastDiv; the rest in 64.
KOKKOS_INLINE_FUNCTION void pass_point(const Pass& p, std::uint64_t k, std::uint64_t& idx, std::uint64_t& c) {
  std::uint64_t k0, k1, k2;
  if (p.div32) {
    std::uint32_t a, b, d;
    split32(p, static_cast<std::uint32_t>(k), a, b, d);
    k0 = a, k1 = b, k2 = d;
  } else {
    const std::uint64_t k12 = k / p.cnt[0];
    k0 = k - k12 * p.cnt[0];
    k1 = k12 % p.cnt[1];
    k2 = k12 / p.cnt[1];
  }
  const std::uint64_t x = p.first[0] + k0 * p.step[0];
  const std::uint64_t y = p.first[1] + k1 * p.step[1];
  const std::uint64_t z = p.first[2] + k2 * p.step[2];
  idx = x + y * p.shape.stride[1] + z * p.shape.stride[2];
  c = p.dim == 0 ? x : p.dim == 1 ? y : z;
}

// Fields of up to kIndex32Max elements index in 32 bits on GPUs (walk_rows):
// every coordinate, index and neighbour test then fits (c + 3s < 4 * 2^30),
// and a point's index math is a third of its 64-bit cost.
constexpr std::uint64_t kIndex32Max = std::uint64_t(1) << 30;

// A point's reconstructed neighbours along the pass dimension, at c-3s, c-s,
// c+s, c+3s (c the coordinate along the dimension, n its extent), as stored
// (T, or double in tile scratch), each loaded only where it exists and the
// spline uses it. Loading is apart from the arithmetic (predict_from) so that
// a GPU thread issues the loads of all its points before it waits for any:
// the passes are bound by load latency otherwise (ncu on the H200: two thirds
// of the stall samples at the conversions after the loads).
// Which neighbours exist, from the coordinate c along the pass dimension.
struct Where {
  bool has_a = false, has_c = false, has_d = false;
};
template <class R>
struct Stencil {
  R a{}, b{}, c{}, d{};
  Where w;
};
template <class I>
KOKKOS_INLINE_FUNCTION Where where(I s, I n, I c) {
  Where w;
  w.has_a = c >= 3 * s;
  w.has_c = c + s < n;
  w.has_d = c + 3 * s < n;  // implies has_c
  return w;
}

// The neighbours sit in r at ib - u, ib, ib + u and ib + 2u (I the index type).
template <class V, class I>
KOKKOS_INLINE_FUNCTION auto gather(std::uint32_t kind, const Where& w, const V& r, I ib, I u) {
  using R = std::remove_cv_t<std::remove_reference_t<decltype(r(ib))>>;
  Stencil<R> st;
  st.w = w;
  st.b = r(ib);
  if (w.has_c) st.c = r(ib + u);
  if (w.has_a && (kind != kLinear || !w.has_c)) st.a = r(ib - u);
  if (w.has_d && kind != kLinear) st.d = r(ib + 2 * u);
  return st;
}

// Spline prediction from the neighbours (section IV-B.1). Every product and
// sum rounds once so that nvcc's FMA contraction cannot change the result.
// Between two neighbours (linear) and between four (cubic):
KOKKOS_INLINE_FUNCTION double predict_linear(double b, double c) { return mul_rn(add_rn(b, c), 0.5); }
KOKKOS_INLINE_FUNCTION double predict_cubic(std::uint32_t kind, double a, double b, double c, double d) {
  // not-a-knot: (-a + 9b + 9c - d) / 16; natural: (-3a + 23b + 23c - 3d) / 40
  if (kind == kNatural) return mul_rn(add_rn(mul_rn(23.0, add_rn(b, c)), mul_rn(-3.0, add_rn(a, d))), 1.0 / 40.0);
  return mul_rn(add_rn(mul_rn(9.0, add_rn(b, c)), -add_rn(a, d)), 1.0 / 16.0);
}
template <class R>
KOKKOS_INLINE_FUNCTION double predict_from(std::uint32_t kind, const Stencil<R>& st) {
  const double b = static_cast<double>(st.b);
  if (st.w.has_c) {
    const double cc = static_cast<double>(st.c);
    if (kind == kLinear) return predict_linear(b, cc);
    if (st.w.has_a && st.w.has_d) return predict_cubic(kind, static_cast<double>(st.a), b, cc, static_cast<double>(st.d));
    if (st.w.has_a) {  // quadratic through c-3s, c-s, c+s: (-a + 6b + 3c) / 8
      const double a = static_cast<double>(st.a);
      return mul_rn(add_rn(add_rn(mul_rn(6.0, b), mul_rn(3.0, cc)), -a), 0.125);
    }
    if (st.w.has_d) {  // quadratic through c-s, c+s, c+3s: (3b + 6c - d) / 8
      const double d = static_cast<double>(st.d);
      return mul_rn(add_rn(add_rn(mul_rn(3.0, b), mul_rn(6.0, cc)), -d), 0.125);
    }
    return predict_linear(b, cc);
  }
  if (st.w.has_a) {  // past the last neighbour: linear extrapolation 1.5b - 0.5a
    const double a = static_cast<double>(st.a);
    return add_rn(mul_rn(1.5, b), mul_rn(-0.5, a));
  }
  return b;
}

template <class V, class I>
KOKKOS_INLINE_FUNCTION double predict_at(std::uint32_t kind, I s, I n, I c, const V& r, I ib, I u) {
  return predict_from(kind, gather(kind, where(s, n, c), r, ib, u));
}

// The same on the whole field: point idx, neighbours at idx -+ s, -+ 3s strides.
template <class I>
KOKKOS_INLINE_FUNCTION Where where_pass(const Pass& p, I c) {
  return where(static_cast<I>(p.s), static_cast<I>(p.ndim), c);
}
template <class V, class I>
KOKKOS_INLINE_FUNCTION auto gather_pass(const Pass& p, const V& r, I idx, const Where& w) {
  const I ms = static_cast<I>(p.ustride);
  return gather(p.kind, w, r, static_cast<I>(idx - ms), static_cast<I>(2 * ms));
}

// Quantization of one value against its prediction: the residual q in steps
// of qstep (kVerbatim where no q reconstructs within the bound: NaN, Inf,
// huge values, rounding) and the reconstruction the decompressor will make.
template <class T>
KOKKOS_INLINE_FUNCTION std::int32_t quantize_value(double pred, T x, double qstep, double inv_qstep, double bound,
                                                   T& rec) {
  const double v = mul_rn(add_rn(static_cast<double>(x), -pred), inv_qstep);
  rec = x;
  if (::fabs(v) < quantize::kMaxPrequant) {  // false for NaN/Inf too
    const std::int32_t cq = quantize::floor_i32(add_rn(v, 0.5));
    const T cand = static_cast<T>(add_rn(pred, mul_rn(static_cast<double>(cq), qstep)));
    const double err = ::fabs(static_cast<double>(x) - static_cast<double>(cand));
    if (err <= bound) {
      rec = cand;
      return cq;
    }
  }
  return kVerbatim;
}

// Compressor side of one point from its value x and its prediction: code,
// residual and reconstruction. The residual array is sparse: qv(i) is
// written only where the code is 0 (an outlier's q or kVerbatim), the only
// places anyone reads it; `nverb` counts the verbatim elements (rare: an
// atomic each).
// code_value writes the code (and residual) and returns the reconstruction;
// code_point stores it too.
template <class T, class VC, class VQ, class VN, class I>
KOKKOS_INLINE_FUNCTION T code_value(const Pass& p, double bound, std::int32_t rad, T x, double pred, const VC& codes,
                                    const VQ& qv, const VN& nverb, I i) {
  T rec;
  const std::int32_t q = quantize_value<T>(pred, x, p.qstep, p.inv_qstep, bound, rec);
  const bool coded = q != kVerbatim && q > -rad && q < rad;
  codes(i) = coded ? static_cast<std::uint16_t>(q + rad) : std::uint16_t(0);
  if (!coded) {
    qv(i) = q;
    if (q == kVerbatim) Kokkos::atomic_add(&nverb(), std::uint64_t(1));
  }
  return rec;
}
template <class T, class VR, class VC, class VQ, class VN, class I>
KOKKOS_INLINE_FUNCTION void code_point(const Pass& p, double bound, std::int32_t rad, T x, double pred, const VR& r,
                                       const VC& codes, const VQ& qv, const VN& nverb, I i) {
  const T rec = code_value<T>(p, bound, rad, x, pred, codes, qv, nverb, i);
  if (!p.last) r(i) = rec;  // the last pass's values are never predicted from
}

template <class T, class VIn, class VR, class VC, class VQ, class VN, class I>
KOKKOS_INLINE_FUNCTION void compress_point(const Pass& p, double bound, std::int32_t rad, const VIn& in, const VR& r,
                                           const VC& codes, const VQ& qv, const VN& nverb, I i, I c) {
  code_point<T>(p, bound, rad, static_cast<T>(in(i)), predict_from(p.kind, gather_pass(p, r, i, where_pass(p, c))), r,
                codes, qv, nverb, i);
}

// Points an iteration of a pass on GPUs (walk_rows' J where rows are long enough).
constexpr std::uint32_t kPassPerIter = 4;

// A pass's points on GPUs, for fields of up to kIndex32Max elements: a warp
// takes a segment of 32 J points of one row (along x) and a lane the points
// lane, lane + 32, ... of it (each load of the warp coalesced), so the row's
// coordinates and base index are worked out once for J points, in 32 bits.
// (On the H200 each point splitting its own index cost 175 instructions a
// point against 145 this way; the passes were instruction-bound, 85% of
// issue slots.)
// The walk's geometry travels in 32-bit fields; consecutive iterations are
// consecutive lanes (Kokkos's CUDA RangePolicy blocks are multiples of 32).
struct PassWalk {
  static constexpr std::uint32_t kLanes = 32;
  FastDiv segs, rows;  // by the segments of a row, by the rows of the next dimension walked
  std::uint32_t n0 = 0, dim = 0;
  std::uint32_t first[3] = {0, 0, 0}, step[3] = {1, 1, 1};
  std::uint32_t stride1 = 0, stride2 = 0;
  // Iteration it: its lane, segment of a row, row (< rows) and the index
  // walked after the rows.
  KOKKOS_INLINE_FUNCTION void split(std::uint64_t it, std::uint32_t& lane, std::uint32_t& seg, std::uint32_t& row,
                                    std::uint32_t& outer) const {
    lane = static_cast<std::uint32_t>(it) & (kLanes - 1);
    const std::uint32_t cw = static_cast<std::uint32_t>(it / kLanes);
    const std::uint32_t rest = segs.div(cw);
    seg = cw - rest * segs.d;
    outer = rows.div(rest);
    row = rest - outer * rows.d;
  }
};
// A walk's iterations (a lane each) on GPUs.
template <class ExecSpace>
auto walk_policy(const ExecSpace& space, std::uint64_t iters) {
  return Kokkos::Experimental::require(Kokkos::RangePolicy<ExecSpace>(space, 0, iters),
                                       Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}
// segs segments a row along x; `rows` the count walked next.
inline PassWalk make_walk(const Pass& p, std::uint32_t segs, std::uint64_t rows) {
  PassWalk w;
  w.n0 = static_cast<std::uint32_t>(p.cnt[0]);
  w.dim = p.dim;
  w.segs = FastDiv(segs);
  w.rows = FastDiv(static_cast<std::uint32_t>(rows));
  for (int d = 0; d < 3; ++d) {
    w.first[d] = static_cast<std::uint32_t>(p.first[d]);
    w.step[d] = static_cast<std::uint32_t>(p.step[d]);
  }
  w.stride1 = static_cast<std::uint32_t>(p.shape.stride[1]);
  w.stride2 = static_cast<std::uint32_t>(p.shape.stride[2]);
  return w;
}

template <std::uint32_t J, class ExecSpace, class F>
void walk_rows(const ExecSpace& space, const Pass& p, const char* label, const F& f) {
  constexpr std::uint32_t kLanes = PassWalk::kLanes, kSeg = kLanes * J;
  const std::uint32_t segs = static_cast<std::uint32_t>((p.cnt[0] + kSeg - 1) / kSeg);
  const PassWalk w = make_walk(p, segs, p.cnt[1]);
  Kokkos::parallel_for(
      label, walk_policy(space, p.cnt[1] * p.cnt[2] * segs * kLanes), KOKKOS_LAMBDA(const std::uint64_t it) {
        std::uint32_t lane, seg, k1, k2;
        w.split(it, lane, seg, k1, k2);
        const std::uint32_t y = w.first[1] + k1 * w.step[1], z = w.first[2] + k2 * w.step[2];
        const std::uint32_t base = y * w.stride1 + z * w.stride2;
        const std::uint32_t k0 = seg * kSeg + lane;
        std::uint32_t i[J], c[J];
        std::uint32_t valid = 0;
        for (std::uint32_t j = 0; j < J; ++j) {
          const std::uint32_t x = w.first[0] + (k0 + kLanes * j) * w.step[0];
          i[j] = base + x;
          c[j] = w.dim == 0 ? x : w.dim == 1 ? y : z;
          valid += k0 + kLanes * j < w.n0 ? 1u : 0u;
        }
        // Along y or z every point of the iteration has the same c (one
        // Where for all); along x each its own.
        if (w.dim == 0)
          f.template batch<false>(i, c, valid);
        else
          f.template batch<true>(i, c, valid);
      });
}

// A pass along y or z on GPUs: a warp takes 32 consecutive points of a row
// along x (a lane each, every load of the warp coalesced) and, for each, J
// consecutive points along the pass's dimension (the lane's column), whose
// neighbours along it overlap: an interior column loads J + 3 of them instead
// of 4 J (Interior::load_column). On the H200 the largest pass (along z, 2^26
// points at 512^3) was bound by L2 traffic, mostly these neighbours. Warps
// take the segments of a row, then the rows of the other dimension, then the
// next J points along the pass's: the neighbours two columns share are read
// while still in L2.
template <std::uint32_t J, class ExecSpace, class F>
void walk_columns(const ExecSpace& space, const Pass& p, const char* label, const F& f) {
  constexpr std::uint32_t kLanes = PassWalk::kLanes;
  const std::uint32_t d = p.dim, o = 3 - d;  // the pass's dimension (1 or 2) and the other one
  const std::uint32_t segs = static_cast<std::uint32_t>((p.cnt[0] + kLanes - 1) / kLanes);
  const PassWalk w = make_walk(p, segs, p.cnt[o]);
  const std::uint32_t nd = static_cast<std::uint32_t>(p.cnt[d]);
  const std::uint64_t groups = (p.cnt[d] + J - 1) / J;
  // The pass's dimension and the other one: first coordinate, step, stride.
  const std::uint32_t fd = w.first[d], sd_step = w.step[d], sd = d == 2 ? w.stride2 : w.stride1;
  const std::uint32_t fo = w.first[o], so_step = w.step[o], so = o == 2 ? w.stride2 : w.stride1;
  Kokkos::parallel_for(
      label, walk_policy(space, p.cnt[o] * groups * segs * kLanes), KOKKOS_LAMBDA(const std::uint64_t it) {
        std::uint32_t lane, seg, ko, g;
        w.split(it, lane, seg, ko, g);
        const std::uint32_t k0 = seg * kLanes + lane;
        const std::uint32_t base = w.first[0] + k0 * w.step[0] + (fo + ko * so_step) * so;
        std::uint32_t i[J], c[J];
        std::uint32_t valid = 0;
        for (std::uint32_t j = 0; j < J; ++j) {
          const std::uint32_t kd = g * J + j;
          c[j] = fd + kd * sd_step;
          i[j] = base + c[j] * sd;
          valid += kd < nd ? 1u : 0u;
        }
        if (k0 >= w.n0) valid = 0;
        f.template batch<false, true>(i, c, valid);
      });
}

// Four consecutive values loaded or stored whole (16 bytes for float).
template <class T>
struct alignas(4 * sizeof(T)) Quad {
  T v[4];
};
template <class T>
KOKKOS_INLINE_FUNCTION Quad<T> load_quad(const T* at) {
  return *reinterpret_cast<const Quad<T>*>(at);
}
template <class T>
KOKKOS_INLINE_FUNCTION void store_quad(T* at, const Quad<T>& q) {
  *reinterpret_cast<Quad<T>*>(at) = q;
}

// Whether walk_row_pairs takes a pass of a functor that has pairs
// (kRowPairs: the decompressor's): a pass along x at stride 1 (points at odd
// x, neighbours at x -+ 1, 3; the finest level's, or the even-x grid's
// stride-2 level) on rows of a multiple of 4 values, with 4-value-aligned
// arrays (`aligned`: the functor's quads_aligned()).
inline bool row_pairs(const Pass& p, bool aligned) {
  return aligned && p.dim == 0 && p.s == 1 && p.shape.n[0] % 4 == 0 && p.shape.n[0] >= 8 &&
         p.shape.stride[1] == p.shape.n[0];
}
template <class T, class... Views>
bool quads_aligned(const Views&... v) {
  return ((reinterpret_cast<std::uintptr_t>(v.data()) % sizeof(Quad<T>) == 0) && ...);
}

// A pass along x at stride 1 on GPUs (row_pairs): a thread takes
// the aligned quad [x, x + 4) of a row (x a multiple of 4), whose odd values
// are the pass's points x + 1 and x + 3: their neighbours are the quad's
// even values, the next quad's two and the value at x - 2, so the thread
// loads two quads and one value (each warp load coalesced) instead of four
// neighbours a point, and stores its quad whole (f.pair). The quads at the
// row's ends, whose points lack a neighbour, take the per-point path.
// (walk_rows took 4 loads a point in 2-line requests: on the H200 the pass
// ran 6.8 warp instructions a point against 3 for the passes along y and z.)
template <class ExecSpace, class F>
void walk_row_pairs(const ExecSpace& space, const Pass& p, const char* label, const F& f) {
  const std::uint32_t nx = static_cast<std::uint32_t>(p.shape.n[0]), quads = nx / 4;
  const PassWalk w = make_walk(p, quads, p.cnt[1]);  // a row's quads as its segments
  Kokkos::parallel_for(
      label, walk_policy(space, std::uint64_t(quads) * p.cnt[1] * p.cnt[2]), KOKKOS_LAMBDA(const std::uint64_t it) {
        const std::uint32_t t = static_cast<std::uint32_t>(it);
        const std::uint32_t row = w.segs.div(t), k2 = w.rows.div(row);
        const std::uint32_t x = 4 * (t - row * quads), k1 = row - k2 * w.rows.d;
        const std::uint32_t e = (w.first[1] + k1 * w.step[1]) * w.stride1 + (w.first[2] + k2 * w.step[2]) * w.stride2 + x;
        if (x >= 4 && x + 8 <= nx) {
          f.pair(e);
        } else {
          const std::uint32_t i[2] = {e + 1, e + 3}, c[2] = {x + 1, x + 3};
          f.template batch<false>(i, c, 2u);
        }
      });
}

// Host backends walk a pass row by row along x: no index divisions per
// point (pass_point's four), the same points and the same arithmetic.
template <class ExecSpace, class F>
void for_each_point(const ExecSpace& space, const Pass& pass, const char* label, F&& f) {
  const Pass p = pass;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible) {
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace>(space, 0, p.cnt[1] * p.cnt[2]), [=](const std::uint64_t row) {
          const std::uint64_t y = p.first[1] + (row % p.cnt[1]) * p.step[1];
          const std::uint64_t z = p.first[2] + (row / p.cnt[1]) * p.step[2];
          const std::uint64_t base = y * p.shape.stride[1] + z * p.shape.stride[2];
          for (std::uint64_t k0 = 0; k0 < p.cnt[0]; ++k0) {
            const std::uint64_t x = p.first[0] + k0 * p.step[0];
            f(base + x, p.dim == 0 ? x : p.dim == 1 ? y : z);
          }
        });
  } else {
    if (p.shape.count() <= kIndex32Max) {
      const std::uint64_t n0 = p.cnt[0];
      if constexpr (std::decay_t<F>::kRowPairs) {
        if (row_pairs(p, f.quads_aligned())) {
          walk_row_pairs(space, p, label, f);
          return;
        }
      }
      if (p.dim != 0 && n0 >= 32 && p.cnt[p.dim] >= kPassPerIter)
        walk_columns<kPassPerIter>(space, p, label, f);
      else if (n0 >= 32 * kPassPerIter)
        walk_rows<kPassPerIter>(space, p, label, f);
      else if (n0 >= 32 * 2)
        walk_rows<2>(space, p, label, f);
      else
        walk_rows<1>(space, p, label, f);
      return;
    }
    // Larger fields: kPassPerIter points an iteration, k = c + j iters
    // (coalesced across a warp), indices in 64 bits.
    const std::uint64_t total = p.count(), iters = (total + kPassPerIter - 1) / kPassPerIter;
    const auto policy = walk_policy(space, iters);
    Kokkos::parallel_for(
        label, policy, KOKKOS_LAMBDA(const std::uint64_t it) {
          std::uint64_t i[kPassPerIter], c[kPassPerIter];
          std::uint32_t valid = 0;
          for (std::uint32_t j = 0; j < kPassPerIter; ++j) {
            const std::uint64_t k = it + j * iters;
            i[j] = c[j] = 0;
            if (k < total) pass_point(p, k, i[j], c[j]), ++valid;
          }
          f.template batch<false>(i, c, valid);
        });
  }
}

// Whether all N points of a batch exist and have all four neighbours (c
// increases with j, so the first and the last decide): then the batch takes
// a straight path, the spline chosen once for all (predict_linear or
// predict_cubic, as predict_from would), no per-point tests.
template <bool Uniform, class I, std::uint32_t N>
KOKKOS_INLINE_FUNCTION bool interior(const Pass& p, const Where& w0, const I (&c)[N], std::uint32_t valid) {
  return valid == N && w0.has_a && (Uniform ? w0.has_d : where_pass(p, c[N - 1]).has_d);
}

// A point with all four neighbours: predict_from's spline, chosen by kind alone.
template <class T>
KOKKOS_INLINE_FUNCTION double predict_interior(std::uint32_t kind, T a, T b, T c, T d) {
  const double bd = static_cast<double>(b), cd = static_cast<double>(c);
  if (kind == kLinear) return predict_linear(bd, cd);
  return predict_cubic(kind, static_cast<double>(a), bd, cd, static_cast<double>(d));
}

// walk_row_pairs' points e + 1 and e + 3 of the quad at e in r (reconstructed
// values): the quad as it was and their two predictions, from its even
// values, the next quad's and the value at e - 2.
template <class T>
struct PairStencil {
  Quad<T> quad;
  double pred[2];
};
template <class T, class V, class I>
KOKKOS_INLINE_FUNCTION PairStencil<T> pair_stencil(const Pass& p, const V& r, I e) {
  PairStencil<T> ps;
  ps.quad = load_quad(&r(e));
  const Quad<T> h = load_quad(&r(e + 4));
  const T lo = r(e - 2);
  const Quad<T>& m = ps.quad;
  ps.pred[0] = predict_interior(p.kind, lo, m.v[0], m.v[2], h.v[0]);
  ps.pred[1] = predict_interior(p.kind, m.v[0], m.v[2], h.v[0], h.v[2]);
  return ps;
}

template <class T, std::uint32_t N>
struct Interior {
  T a[N], b[N], c[N], d[N];
  template <class V, class I>
  KOKKOS_INLINE_FUNCTION void load(const Pass& p, const V& r, const I (&i)[N]) {
    const I u = static_cast<I>(p.ustride);
    for (std::uint32_t j = 0; j < N; ++j) {
      b[j] = r(i[j] - u);
      c[j] = r(i[j] + u);
      if (p.kind != kLinear)
        a[j] = r(i[j] - 3 * u), d[j] = r(i[j] + 3 * u);
      else
        a[j] = d[j] = T(0);  // unused
    }
  }
  // Points i0 + 2 j u along the pass's dimension (a column): point j's
  // neighbours a, b, c, d are the window's w[j .. j + 3] of the values at
  // i0 + (2 m - 3) u, each loaded once (N + 3 loads, N + 1 for linear
  // splines, instead of 4 N).
  template <class V, class I>
  KOKKOS_INLINE_FUNCTION void load_column(const Pass& p, const V& r, I i0) {
    const I u = static_cast<I>(p.ustride);
    if (p.kind == kLinear) {
      T w[N + 1];
      for (std::uint32_t m = 0; m < N + 1; ++m) w[m] = r(i0 - u + 2 * m * u);
      for (std::uint32_t j = 0; j < N; ++j) b[j] = w[j], c[j] = w[j + 1], a[j] = d[j] = T(0);  // a, d unused
    } else {
      T w[N + 3];
      for (std::uint32_t m = 0; m < N + 3; ++m) w[m] = r(i0 - 3 * u + 2 * m * u);
      for (std::uint32_t j = 0; j < N; ++j) a[j] = w[j], b[j] = w[j + 1], c[j] = w[j + 2], d[j] = w[j + 3];
    }
  }
  KOKKOS_INLINE_FUNCTION double predict(const Pass& p, std::uint32_t j) const {
    return predict_interior(p.kind, a[j], b[j], c[j], d[j]);
  }
};

// The predictions of a batch's points (the first `valid` of N), every
// neighbour loaded before any is computed; use(j, prediction) for each.
// Column: the points are consecutive along the pass's dimension (walk_columns).
template <bool Uniform, class T, bool Column = false, class V, class I, std::uint32_t N, class F>
KOKKOS_INLINE_FUNCTION void predict_batch(const Pass& p, const V& r, const I (&i)[N], const I (&c)[N],
                                          std::uint32_t valid, const F& use) {
  const Where w0 = where_pass(p, c[0]);
  if (interior<Uniform>(p, w0, c, valid)) {
    Interior<T, N> nb;
    if (Column)
      nb.load_column(p, r, i[0]);
    else
      nb.load(p, r, i);
    for (std::uint32_t j = 0; j < N; ++j) use(j, nb.predict(p, j));
    return;
  }
  Stencil<T> st[N];
  for (std::uint32_t j = 0; j < N; ++j)
    if (j < valid) st[j] = gather_pass(p, r, i[j], Uniform ? w0 : where_pass(p, c[j]));
  for (std::uint32_t j = 0; j < N; ++j)
    if (j < valid) use(j, predict_from(p.kind, st[j]));
}

// A pass's point bodies for for_each_point, whose index type (32 or 64 bits)
// they take as it comes: functors, not lambdas (a generic extended lambda is
// not allowed, and nvcc's host-device lambda captured in another one called
// a null function pointer on host backends). `batch` takes N points of which the
// first `valid` exist and loads all their values before it computes any
// (predict_batch); `operator()` is one point.
template <class T, class Mem, class In = Kokkos::View<const T*, Mem>, class Q = Kokkos::View<std::int32_t*, Mem>>
struct CompressPoint {
  Pass p;
  double bound;
  std::int32_t rad;
  In in;  // views, or on the even-x grid Doubled ones
  Kokkos::View<T*, Mem> r;
  Kokkos::View<std::uint16_t*, Mem> codes;
  Q qv;
  Kokkos::View<std::uint64_t, Mem> nverb;
  template <bool Uniform, bool Column = false, class I, std::uint32_t N>
  KOKKOS_INLINE_FUNCTION void batch(const I (&i)[N], const I (&c)[N], std::uint32_t valid) const {
    T x[N];
    for (std::uint32_t j = 0; j < N; ++j)
      if (j < valid) x[j] = in(i[j]);
    predict_batch<Uniform, T, Column>(p, r, i, c, valid, [&](std::uint32_t j, double pred) {
      code_point<T>(p, bound, rad, x[j], pred, r, codes, qv, nverb, i[j]);
    });
  }
  template <class I>
  KOKKOS_INLINE_FUNCTION void operator()(I i, I c) const {
    const I ii[1] = {i}, cc[1] = {c};
    batch<true>(ii, cc, 1);
  }
  // The compressor's finest pass along x by quads is compress_from_even
  // (the even-x grid), not walk_row_pairs.
  static constexpr bool kRowPairs = false;
};

// Decompressor side: the residual is code - rad, or for code 0 qv(i) (an
// outlier's q, or kVerbatim where out already holds the verbatim value).
// Code-0 positions are counted in `zeros` (rare: an atomic each), so the
// caller can check the outlier and verbatim lists covered them all.
template <class T, class Mem, class C = Kokkos::View<const std::uint16_t*, Mem>,
          class Q = Kokkos::View<const std::int32_t*, Mem>>
struct DecompressPoint {
  Pass p;
  std::int32_t rad;
  C codes;  // views, or on the even-x grid Doubled ones (the field's)
  Q qv;
  Kokkos::View<T*, Mem> out;
  Kokkos::View<std::uint64_t, Mem> zeros;
  // The residual of i (false where i is verbatim: out already holds it).
  template <class I>
  KOKKOS_INLINE_FUNCTION bool residual(I i, std::int32_t code, std::int32_t& q) const {
    q = code - rad;
    if (code == 0) {
      Kokkos::atomic_add(&zeros(), std::uint64_t(1));
      q = qv(i);
      if (q == kVerbatim) return false;
    }
    return true;
  }
  KOKKOS_INLINE_FUNCTION T decoded(double pred, std::int32_t q) const {
    return static_cast<T>(add_rn(pred, mul_rn(static_cast<double>(q), p.qstep)));
  }
  template <class I>
  KOKKOS_INLINE_FUNCTION void put(I i, std::int32_t code, double pred) const {
    std::int32_t q;
    if (residual(i, code, q)) out(i) = decoded(pred, q);
  }
  // The value at i, or v (what out holds there) where i is verbatim.
  template <class I>
  KOKKOS_INLINE_FUNCTION T value(I i, std::int32_t code, double pred, T v) const {
    std::int32_t q;
    return residual(i, code, q) ? decoded(pred, q) : v;
  }
  template <bool Uniform, bool Column = false, class I, std::uint32_t N>
  KOKKOS_INLINE_FUNCTION void batch(const I (&i)[N], const I (&c)[N], std::uint32_t valid) const {
    std::int32_t code[N];
    for (std::uint32_t j = 0; j < N; ++j)
      if (j < valid) code[j] = codes(i[j]);
    predict_batch<Uniform, T, Column>(p, out, i, c, valid,
                                      [&](std::uint32_t j, double pred) { put(i[j], code[j], pred); });
  }
  // walk_row_pairs: the points e + 1 and e + 3 of the quad at e.
  static constexpr bool kRowPairs = true;
  bool quads_aligned() const { return spline::quads_aligned<T>(out); }
  template <class I>
  KOKKOS_INLINE_FUNCTION void pair(I e) const {
    const std::int32_t code[2] = {codes(e + 1), codes(e + 3)};
    PairStencil<T> ps = pair_stencil<T>(p, out, e);
    for (int j = 0; j < 2; ++j) {
      T& v = ps.quad.v[2 * j + 1];
      v = value(e + 2 * j + 1, code[j], ps.pred[j], v);
    }
    store_quad(&out(e), ps.quad);
  }
  template <class I>
  KOKKOS_INLINE_FUNCTION void operator()(I i, I c) const {
    const I ii[1] = {i}, cc[1] = {c};
    batch<true>(ii, cc, 1);
  }
};

// Compressor side of one pass: code, residual and reconstruction of each point.
// `in` and `qv`: views, or on the even-x grid Doubled ones (the field's).
template <class ExecSpace, class T, class In, class Q>
void compress_pass(const ExecSpace& space, const Pass& pass, double bound, std::uint32_t radius, const In& in,
                   Kokkos::View<T*, typename ExecSpace::memory_space> r,
                   Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes, const Q& qv,
                   Kokkos::View<std::uint64_t, typename ExecSpace::memory_space> nverb) {
  for_each_point(space, pass, "ksz::spline::compress_pass",
                 CompressPoint<T, typename ExecSpace::memory_space, In, Q>{
                     pass, bound, static_cast<std::int32_t>(radius), in, r, codes, qv, nverb});
}

// Decompressor side: codes with the sparse residuals of code-0 positions
// (DecompressPoint).
template <class ExecSpace, class T, class C, class Q>
void decompress_pass(const ExecSpace& space, const Pass& pass, const C& codes, const Q& qv, std::uint32_t radius,
                     Kokkos::View<T*, typename ExecSpace::memory_space> out,
                     Kokkos::View<std::uint64_t, typename ExecSpace::memory_space> zeros) {
  for_each_point(space, pass, "ksz::spline::decompress_pass",
                 DecompressPoint<T, typename ExecSpace::memory_space, C, Q>{pass, static_cast<std::int32_t>(radius),
                                                                           codes, qv, out, zeros});
}

// The finest level (stride 1: seven eighths of a 3D field's points) in tiles
// (section V-D): a team per tile of 16^3 points (64^2 in 2D, 2048 in 1D)
// loads the coarser levels' reconstructions of the tile and a halo of 2 into
// scratch memory and runs the level's three passes there, a team barrier
// between them; only codes (and residuals of code-0 positions) go back to
// global memory, and no reconstruction does (nothing reads stride-1 values).
// Prediction stays global, as in the passes above: the halo's points of the
// first two passes (which later passes of the tile predict from) are
// recomputed by every tile that needs them, from the same values with the
// same arithmetic, so each gets what its owner gets. Same codes, residuals
// and verbatim count as `traverse`'s passes of level 1, bit for bit.
//
// Where it is used: the spline-kind trial on GPUs, whose boxes it codes all
// at once (ft.items), a team per tile, where the trial's own kernel has a
// team per box (8 teams on a GPU of 132 SMs). Not the field's own passes:
// measured on the H200 (512^3), the passes are instruction-bound, not
// memory-bound (about 160 instructions a point, 81% of issue slots), so the
// tiles' halo recomputation (1.23x the points) cost more than the global
// traffic it saved (tiles 1.13 ms, passes about 1.0 ms for the level).
//
// Points of pass p (along order[p]) in a tile: odd coordinates of the tile
// along order[p], all of the tile along the dimensions before it, even ones
// of the tile and its halo along those after it. Along order[2] only even
// coordinates are ever read back, so scratch keeps only those.
constexpr std::uint32_t kTileHalo = 2;  // even neighbours at +-1, +-3 of a tile's odd edge points

struct TilePhase {  // a point set relative to a tile's origin
  std::int32_t first[3] = {0, 0, 0};
  std::uint32_t step[3] = {1, 1, 1};
  std::uint32_t cnt[3] = {0, 0, 0};
  FastDiv div0, div1;  // by cnt[0] and cnt[1]
  std::uint32_t count = 0;
  // A pass's phase: its dimension, spline and field extent along it, and in
  // scratch the offset from a point to its neighbour at -1 (0 along cax,
  // where odd coordinates share their lower neighbour's slot) and the
  // distance between neighbours two apart.
  std::uint32_t dim = 0, kind = 0;
  std::uint64_t n = 1;
  std::uint32_t boff = 0, u = 0;
};

struct FineTiles {
  Shape shape;
  std::uint32_t T[3] = {1, 1, 1};        // tile extents (1 along dimensions of extent 1)
  std::uint32_t h[3] = {0, 0, 0};        // halo: kTileHalo along dimensions of extent > 1
  std::uint64_t tiles[3] = {1, 1, 1};    // tiles per dimension
  std::uint32_t X[3] = {1, 1, 1};        // scratch extents (along cax: even coordinates only)
  std::uint32_t sh[3] = {0, 0, 0};       // 1 along cax (scratch index = (l + h) >> sh)
  std::uint32_t cax = 2;                 // the level's last pass dimension, order[2]
  TilePhase load;                        // the coarser levels' points of a tile and its halo
  TilePhase pass[3];                     // the level's passes in order (count 0: no pass)
  double qstep = 1, inv_qstep = 1;
  std::uint64_t items = 1;   // fields of this shape, item_n elements apart (the trial's boxes)
  std::uint64_t item_n = 0;
  // The trial's second configuration in the same launch: items from
  // `variant_from` on read the input of item - variant_from and predict with
  // variant_kind[p] in pass p (their outputs follow the first's).
  std::uint64_t variant_from = ~std::uint64_t(0);
  std::uint32_t variant_kind[3] = {0, 0, 0};
  KOKKOS_INLINE_FUNCTION std::uint64_t count() const { return tiles[0] * tiles[1] * tiles[2]; }
  KOKKOS_INLINE_FUNCTION std::uint32_t scratch_elems() const { return X[0] * X[1] * X[2]; }
};

enum class TileSet { EvenHalo, OddTile, AllTile };

inline TilePhase make_phase(const FineTiles& ft, const TileSet set[3]) {
  TilePhase ph;
  ph.count = 1;
  for (int d = 0; d < 3; ++d) {
    const std::uint32_t T = ft.T[d], h = ft.h[d];
    switch (set[d]) {
      case TileSet::EvenHalo: ph.first[d] = -static_cast<std::int32_t>(h), ph.step[d] = 2, ph.cnt[d] = (T + 2 * h) / 2 + 1; break;
      case TileSet::OddTile: ph.first[d] = 1, ph.step[d] = 2, ph.cnt[d] = T / 2; break;
      case TileSet::AllTile: ph.first[d] = 0, ph.step[d] = 1, ph.cnt[d] = T; break;
    }
    ph.count *= ph.cnt[d];
  }
  ph.div0 = FastDiv(ph.cnt[0] ? ph.cnt[0] : 1);
  ph.div1 = FastDiv(ph.cnt[1] ? ph.cnt[1] : 1);
  return ph;
}

// `side`: the tile extent along each dimension of extent > 1 (even); 0 picks
// the default by rank.
inline FineTiles make_fine_tiles(const Shape& shape, const Config& cfg, double qstep, std::uint32_t side = 0) {
  FineTiles ft;
  ft.shape = shape;
  int rank = 0;
  for (int d = 0; d < 3; ++d) rank += shape.n[d] > 1 ? 1 : 0;
  if (side == 0) side = rank == 3 ? 16 : rank == 2 ? 64 : 2048;
  for (int d = 0; d < 3; ++d) {
    if (shape.n[d] > 1) {
      const std::uint64_t even_n = (shape.n[d] + 1) & ~std::uint64_t(1);
      ft.T[d] = static_cast<std::uint32_t>(even_n < side ? even_n : side);
      ft.h[d] = kTileHalo;
      ft.X[d] = ft.T[d] + 2 * kTileHalo + 1;
    }
    ft.tiles[d] = (shape.n[d] + ft.T[d] - 1) / ft.T[d];
  }
  ft.cax = cfg.order[2];
  ft.X[ft.cax] = (ft.X[ft.cax] + 1) / 2;
  ft.sh[ft.cax] = 1;
  const std::uint32_t stride[3] = {1, ft.X[0], ft.X[0] * ft.X[1]};
  const TileSet even[3] = {TileSet::EvenHalo, TileSet::EvenHalo, TileSet::EvenHalo};
  ft.load = make_phase(ft, even);
  for (int p = 0; p < 3; ++p) {
    TileSet set[3];
    for (int q = 0; q < 3; ++q)
      set[cfg.order[q]] = q < p ? TileSet::AllTile : q == p ? TileSet::OddTile : TileSet::EvenHalo;
    TilePhase& ph = ft.pass[p];
    ph = make_phase(ft, set);
    ph.dim = cfg.order[p];
    ph.kind = cfg.kind[ph.dim];
    ph.n = shape.n[ph.dim];
    const bool halved = ph.dim == ft.cax;
    ph.boff = halved ? 0 : stride[ph.dim];
    ph.u = halved ? stride[ph.dim] : 2 * stride[ph.dim];
  }
  ft.qstep = qstep;
  ft.inv_qstep = 1.0 / qstep;
  return ft;
}

// A point of a tile: coordinates relative to the tile, in the field, its
// field index and its scratch index (along cax: even coordinates only).
// Scalars, not arrays: a pass's dimension is known only at run time, and
// indexing an array by it puts the array in local memory.
struct TilePoint {
  std::int32_t l0, l1, l2;
  std::uint64_t g0, g1, g2, gi;
  std::uint32_t sidx;
};

// f(point, owned) for every point of phase ph of the tile at (t0, t1, t2)
// inside the field (owned: inside the tile, not its halo), a point a thread.
// (Walking (k0, k1) columns along k2 with incremental indices instead left
// half the threads idle and ran 1.7x slower on the H200.)
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void tile_for_each(const Member& team, const FineTiles& ft, const TilePhase& ph,
                                          std::int64_t t0, std::int64_t t1, std::int64_t t2, const F& f) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ph.count), [&](const std::uint32_t k) {
    const std::uint32_t k12 = ph.div0.div(k), k2 = ph.div1.div(k12);
    TilePoint pt;
    pt.l0 = ph.first[0] + static_cast<std::int32_t>((k - k12 * ph.div0.d) * ph.step[0]);
    pt.l1 = ph.first[1] + static_cast<std::int32_t>((k12 - k2 * ph.div1.d) * ph.step[1]);
    pt.l2 = ph.first[2] + static_cast<std::int32_t>(k2 * ph.step[2]);
    const std::int64_t a = t0 + pt.l0, b = t1 + pt.l1, c = t2 + pt.l2;
    pt.g0 = static_cast<std::uint64_t>(a);
    pt.g1 = static_cast<std::uint64_t>(b);
    pt.g2 = static_cast<std::uint64_t>(c);
    if (a < 0 || b < 0 || c < 0 || pt.g0 >= ft.shape.n[0] || pt.g1 >= ft.shape.n[1] || pt.g2 >= ft.shape.n[2]) return;
    pt.gi = pt.g0 + pt.g1 * ft.shape.stride[1] + pt.g2 * ft.shape.stride[2];
    const std::uint32_t u0 = static_cast<std::uint32_t>(pt.l0 + static_cast<std::int32_t>(ft.h[0])) >> ft.sh[0];
    const std::uint32_t u1 = static_cast<std::uint32_t>(pt.l1 + static_cast<std::int32_t>(ft.h[1])) >> ft.sh[1];
    const std::uint32_t u2 = static_cast<std::uint32_t>(pt.l2 + static_cast<std::int32_t>(ft.h[2])) >> ft.sh[2];
    pt.sidx = u0 + ft.X[0] * (u1 + ft.X[1] * u2);
    f(pt, static_cast<std::uint32_t>(pt.l0) < ft.T[0] && static_cast<std::uint32_t>(pt.l1) < ft.T[1] &&
              static_cast<std::uint32_t>(pt.l2) < ft.T[2]);
  });
}

// Prediction of a point of a pass from scratch: its neighbours along the
// pass dimension at l - 3, l - 1, l + 1, l + 3 (even coordinates).
template <class V>
KOKKOS_INLINE_FUNCTION double tile_predict(const TilePhase& ph, std::uint32_t kind, const V& sc, const TilePoint& pt) {
  const std::uint64_t c = ph.dim == 0 ? pt.g0 : ph.dim == 1 ? pt.g1 : pt.g2;
  return predict_at<V, std::uint64_t>(kind, 1, ph.n, c, sc, pt.sidx - ph.boff, ph.u);
}

// Tile t's origin.
KOKKOS_INLINE_FUNCTION void tile_origin(const FineTiles& ft, std::uint64_t t, std::int64_t& t0, std::int64_t& t1,
                                        std::int64_t& t2) {
  t0 = static_cast<std::int64_t>((t % ft.tiles[0]) * ft.T[0]);
  t1 = static_cast<std::int64_t>((t / ft.tiles[0] % ft.tiles[1]) * ft.T[1]);
  t2 = static_cast<std::int64_t>((t / (ft.tiles[0] * ft.tiles[1])) * ft.T[2]);
}

// Compressor side of the tiles: codes and sparse residuals of the level's
// points, verbatim elements counted in nverb; `rec` holds the coarser levels.
// Item i of ft.items reads in from i * item_n (i - variant_from for the
// variant's items) and rec, codes and qv from out_base + i * item_n.
// Functors, not lambdas (see CompressPoint).
template <class ExecSpace, class T>
struct FineCompress {
  using Mem = typename ExecSpace::memory_space;
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Scratch = Kokkos::View<T*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  FineTiles ft;
  double bound;
  std::int32_t rad;
  Kokkos::View<const T*, Mem> in, rec;
  Kokkos::View<std::uint16_t*, Mem> codes;
  Kokkos::View<std::int32_t*, Mem> qv;
  Kokkos::View<std::uint64_t, Mem> nverb;
  std::uint64_t out_base = 0;

  // Pass P (compile-time, so its phase is a fixed offset into the functor).
  template <int P>
  KOKKOS_INLINE_FUNCTION void pass(const Member& team, std::int64_t t0, std::int64_t t1, std::int64_t t2,
                                   std::uint64_t ioff, std::uint64_t ooff, bool variant, const Scratch& sc) const {
    const TilePhase& ph = ft.pass[P];
    if (ph.count == 0) return;
    const std::uint32_t kind = variant ? ft.variant_kind[P] : ph.kind;
    team.team_barrier();
    tile_for_each(team, ft, ph, t0, t1, t2, [&](const TilePoint& pt, const bool owned) {
      const double pred = tile_predict(ph, kind, sc, pt);
      T r;
      const std::int32_t q = quantize_value<T>(pred, in(ioff + pt.gi), ft.qstep, ft.inv_qstep, bound, r);
      if (P < 2) sc(pt.sidx) = r;  // the last pass's values (odd along cax) are never read
      if (!owned) return;          // a halo point: its own tile codes it
      const bool coded = q != kVerbatim && q > -rad && q < rad;
      codes(ooff + pt.gi) = coded ? static_cast<std::uint16_t>(q + rad) : std::uint16_t(0);
      if (!coded) {
        qv(ooff + pt.gi) = q;
        if (q == kVerbatim) Kokkos::atomic_add(&nverb(), std::uint64_t(1));
      }
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::uint64_t t = static_cast<std::uint64_t>(team.league_rank()), tiles = ft.count();
    const std::uint64_t item = t / tiles, ooff = out_base + item * ft.item_n;
    const bool variant = item >= ft.variant_from;
    const std::uint64_t ioff = (variant ? item - ft.variant_from : item) * ft.item_n;
    std::int64_t t0, t1, t2;
    tile_origin(ft, t - item * tiles, t0, t1, t2);
    const Scratch sc(team.team_scratch(0), ft.scratch_elems());
    tile_for_each(team, ft, ft.load, t0, t1, t2, [&](const TilePoint& pt, bool) { sc(pt.sidx) = rec(ooff + pt.gi); });
    pass<0>(team, t0, t1, t2, ioff, ooff, variant, sc);
    pass<1>(team, t0, t1, t2, ioff, ooff, variant, sc);
    pass<2>(team, t0, t1, t2, ioff, ooff, variant, sc);
  }
};

// A team per tile; the functor (over 512 bytes) goes as a kernel argument
// (the light-weight hint), not through constant memory.
template <class ExecSpace, class T>
void compress_fine(const ExecSpace& space, const FineTiles& ft, double bound, std::uint32_t radius,
                   Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                   Kokkos::View<const T*, typename ExecSpace::memory_space> rec,
                   Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes,
                   Kokkos::View<std::int32_t*, typename ExecSpace::memory_space> qv,
                   Kokkos::View<std::uint64_t, typename ExecSpace::memory_space> nverb, std::uint64_t out_base = 0) {
  using F = FineCompress<ExecSpace, T>;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  if (ft.count() == 0 || (ft.pass[0].count + ft.pass[1].count + ft.pass[2].count) == 0) return;
  const std::size_t bytes = F::Scratch::shmem_size(ft.scratch_elems());
  auto policy = Kokkos::Experimental::require(
      Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(ft.count() * ft.items), host ? 1 : 256),
      Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  Kokkos::parallel_for("ksz::spline::compress_fine", policy.set_scratch_size(0, Kokkos::PerTeam(bytes)),
                       F{ft, bound, static_cast<std::int32_t>(radius), in, rec, codes, qv, nverb, out_base});
}

// Radius choice (--radius 0, the interp default). A fixed radius of 512 is a
// poor fit for both ends: at loose bounds nearly every residual is tiny and
// the codebook (2R bytes) is a large share of a small stream; at tight bounds
// the coarse levels' residuals overflow it and every overflow costs an
// outlier (index + value, 64 bits). Residual magnitudes are counted in
// power-of-two buckets in one pass, and the radius minimizing
//   codebook 16R bits + Huffman bits of the rare symbols it admits
//   + outliers * (index + value + escape bits)
// is chosen among 16 .. 4096 (8192 symbols: the GPU histogram's scratch copy).
// A symbol of a bucket holding c of N residuals over w symbols is costed at
// its ideal length log2(N w / c), clamped to [1, 24] (kMaxCodeLength). The
// counts are integers and the choice is host arithmetic on them, so every
// backend picks the same radius.
constexpr int kSpreadMinLog = 4;   // smallest candidate radius 2^4
constexpr int kSpreadMaxLog = 12;  // largest 2^12
constexpr std::uint32_t kAutoRadiusMax = 1u << kSpreadMaxLog;

// bucket[k - kSpreadMinLog]: residuals with 2^k <= |q| < 2^(k+1); the last
// bucket also takes every larger one. `core`: |q| < 2^kSpreadMinLog.
struct Spread {
  std::uint64_t core;
  std::uint64_t bucket[kSpreadMaxLog - kSpreadMinLog + 1];
};

// The spread from the code histogram at radius kAutoRadiusMax (the codes the
// passes write when the radius is automatic): code c != 0 is q = c - 4096,
// so every bucket below 2^12 is a sum of bins; the last takes code 0 less
// the verbatim elements (counted by the passes). No pass over the residuals.
inline Spread spread_from_histogram(const std::uint64_t* hist, std::uint64_t nverb) {
  constexpr std::uint32_t R = kAutoRadiusMax;
  // Bins by ranges (each bucket two runs of codes), no test a bin.
  const auto sum = [hist](std::uint32_t a, std::uint32_t b) {  // bins [a, b)
    std::uint64_t t = 0;
    for (std::uint32_t c = a; c < b; ++c) t += hist[c];
    return t;
  };
  constexpr std::uint32_t lo = 1u << kSpreadMinLog;
  Spread s{};
  s.core = sum(R - lo + 1, R + lo);
  for (int k = kSpreadMinLog; k < kSpreadMaxLog; ++k) {
    const std::uint32_t a = 1u << k, b = 2u << k;  // 2^k <= |q| < 2^(k+1)
    s.bucket[k - kSpreadMinLog] = sum(R + a, R + b) + sum(R - b + 1, R - a + 1);
  }
  // |q| = 2^12 has no code; code 0 less the verbatim elements.
  s.bucket[kSpreadMaxLog - kSpreadMinLog] = hist[0] - nverb;
  return s;
}

// The histogram the codes of radius r (<= kAutoRadiusMax) will have, from the
// histogram at kAutoRadiusMax: the same counts for |q| < r, the rest in bin 0.
inline std::vector<std::uint64_t> narrow_histogram(const std::uint64_t* hist, std::uint32_t r) {
  constexpr std::uint32_t R = kAutoRadiusMax;
  std::vector<std::uint64_t> h(2 * std::size_t(r), 0);
  // |q| < r keeps its bin (q + r from code q + R); bin 0 takes the rest.
  std::copy(hist + R - r + 1, hist + R + r, h.begin() + 1);
  std::uint64_t rest = hist[0];
  for (std::uint32_t c = 1; c <= R - r; ++c) rest += hist[c];
  for (std::uint32_t c = R + r; c < 2 * R; ++c) rest += hist[c];
  h[0] = rest;
  return h;
}

// The radius of least estimated size; ties go to the smaller radius.
inline std::uint32_t choose_radius(const Spread& s, std::size_t index_bytes) {
  constexpr int nb = kSpreadMaxLog - kSpreadMinLog + 1;
  double total = double(s.core);
  for (int b = 0; b < nb; ++b) total += double(s.bucket[b]);
  if (total == 0) return 1u << kSpreadMinLog;
  auto ideal = [&](double c, double width) { return std::fmin(24.0, std::fmax(1.0, std::log2(total * width / c))); };
  std::uint32_t best_r = 1u << kSpreadMinLog;
  double best = -1;
  for (int j = kSpreadMinLog; j <= kSpreadMaxLog; ++j) {
    double bits = 16.0 * double(1u << j), out = 0;
    for (int k = kSpreadMinLog; k <= kSpreadMaxLog; ++k) {
      const double c = double(s.bucket[k - kSpreadMinLog]);
      if (c == 0) continue;
      if (k < j) bits += c * ideal(c, double(2u << k));  // 2^k magnitudes on each side
      else out += c;
    }
    if (out > 0) bits += out * (8.0 * double(index_bytes + 4) + ideal(out, 1.0));
    if (best < 0 || bits < best) {
      best = bits;
      best_r = 1u << j;
    }
  }
  return best_r;
}

// The code-0 positions of the codes read through narrow (huffman::Narrow:
// the codes of radius r from those the passes wrote at radius from; identity
// when the radius stays): counts(b) receives those of block b of
// outliers::kCompactBlock codes, for outliers::compact_counted. The codes
// stay as they are (the encoder reads them through the same Narrow): a read,
// not a rewrite. A team per 8 blocks, a block a team thread, its codes over
// the thread's vector lanes (a warp on GPUs: the block's count is a warp
// reduction; team reductions took twice the time); on GPUs four codes per
// 8-byte word (2-byte accesses keep too few bytes in flight).
template <class ExecSpace>
void count_outliers(const ExecSpace& space, Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> codes,
                    const huffman::Narrow narrow,
                    Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> counts) {
  using Mem = typename ExecSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  constexpr std::uint64_t B = outliers::kCompactBlock;
  static_assert(B % 4 == 0, "blocks of whole words");
  const std::uint64_t n = codes.extent(0), nblocks = (n + B - 1) / B;
  if (n == 0) return;
  const std::uint64_t* const words = reinterpret_cast<const std::uint64_t*>(codes.data());
  const bool by_word = !host && (reinterpret_cast<std::uintptr_t>(codes.data()) & 7) == 0;
  const int per_team = host ? 1 : 8, lanes = host ? 1 : 32;
  const std::uint64_t league = (nblocks + per_team - 1) / per_team;
  Kokkos::parallel_for(
      "ksz::spline::count_outliers", Policy(space, static_cast<int>(league), per_team, lanes),
      KOKKOS_LAMBDA(const Member& team) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, per_team), [&](const int j) {
          const std::uint64_t b = static_cast<std::uint64_t>(team.league_rank()) * per_team + j;
          if (b >= nblocks) return;
          const std::uint64_t begin = b * B, end = begin + B < n ? begin + B : n;
          std::uint64_t zeros = 0, tail = 0;
          // Whole words on GPUs, then element by element (the tail, or all of it).
          const std::uint64_t wend = by_word ? end / 4 : begin / 4;
          if (by_word)
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, begin / 4, wend),
                [&](const std::uint64_t w, std::uint64_t& acc) {
                  const std::uint64_t x = words[w];
                  for (int k = 0; k < 4; ++k)
                    acc += narrow(static_cast<std::uint32_t>((x >> (16 * k)) & 0xFFFFu)) == 0 ? 1 : 0;
                },
                zeros);
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, wend * 4 > begin ? wend * 4 : begin, end),
              [&](const std::uint64_t i, std::uint64_t& acc) { acc += narrow(codes(i)) == 0 ? 1 : 0; }, tail);
          Kokkos::single(Kokkos::PerThread(team), [&]() { counts(b) = zeros + tail; });
        });
      });
}

// The residual of a position listed as an outlier at the chosen radius: qv's
// where its code is 0 (the passes wrote it there), else the one its code
// stands for at the coded radius `from` (a code huffman::Narrow reads as 0).
// A functor, not a lambda (see CompressPoint).
template <class Mem>
struct ListedResidual {
  Kokkos::View<const std::uint16_t*, Mem> codes;
  Kokkos::View<const std::int32_t*, Mem> qv;
  std::int32_t from;
  KOKKOS_INLINE_FUNCTION std::int32_t operator()(const std::uint64_t i) const {
    const std::int32_t c = codes(i);
    return c == 0 ? qv(i) : c - from;
  }
};

// count_outliers's counts for codes written at kAutoRadiusMax read at radius
// r (a power of two, 2^kSpreadMinLog .. kAutoRadiusMax), from their blocks'
// magnitude classes (histogram::histogram_classes): a block's code 0 and
// classes log2(r) - kSpreadMinLog and up, |q| >= r.
static_assert(histogram::kClassBlock == outliers::kCompactBlock, "a class block is a compaction block");
static_assert(histogram::kCodeClasses == kSpreadMaxLog - kSpreadMinLog + 1, "a class per spread bucket below 2^12");
// The first class radius r counts (log2(r) - kSpreadMinLog).
inline std::uint32_t first_class(std::uint32_t r) {
  std::uint32_t first = 0;
  while ((std::uint32_t(1) << (first + kSpreadMinLog)) < r) ++first;
  KSZ_EXPECTS(r == std::uint32_t(1) << (first + kSpreadMinLog) && r <= kAutoRadiusMax, "internal: radius ", r,
              " has no magnitude class");
  return first;
}
template <class ExecSpace>
void count_outliers_from_classes(const ExecSpace& space,
                                 Kokkos::View<const std::uint32_t*, typename ExecSpace::memory_space> classes,
                                 std::uint64_t nblocks, std::uint32_t r,
                                 Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> counts) {
  const int first = static_cast<int>(first_class(r));
  constexpr int C = histogram::kCodeClasses;
  Kokkos::parallel_for(
      "ksz::spline::count_outliers_from_classes", Kokkos::RangePolicy<ExecSpace>(space, 0, nblocks),
      KOKKOS_LAMBDA(const std::uint64_t b) {
        counts(b) = histogram::zeros_of_classes(&classes(b * C), first);
      });
}

// count_outliers_from_classes's counts, scanned (offsets[b]: the code-0
// positions of the blocks before b, b <= nblocks): on CUDA in one kernel
// (cuda_spec::zero_offsets_from_classes, its look-back states in `state`,
// cuda_spec::zero_offsets_state_words of them), elsewhere a count and
// outliers::scan_offsets (`state` unused).
template <class ExecSpace>
void zero_offsets_from_classes(const ExecSpace& space,
                               Kokkos::View<const std::uint32_t*, typename ExecSpace::memory_space> classes,
                               std::uint64_t nblocks, std::uint32_t r,
                               Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> offsets,
                               Kokkos::View<unsigned long long*, typename ExecSpace::memory_space> state) {
  KSZ_EXPECTS(offsets.extent(0) >= nblocks + 1, "internal: code-0 offsets too short");
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    KSZ_EXPECTS(state.extent(0) >= cuda_spec::zero_offsets_state_words(nblocks), "internal: look-back states too few");
    if (cuda_spec::zero_offsets_from_classes(space, classes.data(), nblocks, first_class(r), offsets.data(),
                                             state.data()))
      return;
  }
#endif
  (void)state;
  count_outliers_from_classes<ExecSpace>(space, classes, nblocks, r, offsets);
  outliers::scan_offsets(space, nblocks * outliers::kCompactBlock, offsets);
}

// Anchors (all coordinates multiples of S): pre-quantized with the anchor
// step and coded as the difference to the previous anchor of their row along
// x (wrapping 32-bit, as Lorenzo). Rows are independent, so parallel.
// Code 0 = verbatim; the row chain then continues from prequantize(value),
// which the decompressor recomputes from the verbatim value.
struct Anchors {
  Shape shape;
  std::uint64_t S = 8;
  std::uint64_t Sx = 8;  // their step along x in the array (S, or S/2 on the even-x grid)
  std::uint64_t cnt[3] = {1, 1, 1};
  KOKKOS_INLINE_FUNCTION std::uint64_t rows() const { return cnt[1] * cnt[2]; }
};

inline Anchors make_anchors(const Shape& sh, std::uint64_t S) {
  Anchors a;
  a.shape = sh;
  a.S = S;
  a.Sx = S;
  for (int d = 0; d < 3; ++d) a.cnt[d] = (sh.n[d] - 1) / S + 1;
  return a;
}

KOKKOS_INLINE_FUNCTION std::uint64_t anchor_row_base(const Anchors& a, std::uint64_t row) {
  const std::uint64_t y = (row % a.cnt[1]) * a.S, z = (row / a.cnt[1]) * a.S;
  return y * a.shape.stride[1] + z * a.shape.stride[2];
}

// One anchor at i given the previous anchor's pre-quantized value along its
// row (0 for the first; a verbatim anchor's is 0 too, as prequantize leaves
// it); returns its own.
template <class T, class VIn, class VR, class VC, class VQ, class VN>
KOKKOS_INLINE_FUNCTION std::uint32_t compress_anchor(const quantize::QuantParams& q_p, std::uint32_t radius,
                                                     const VIn& in, const VR& r, const VC& codes, const VQ& qv,
                                                     const VN& nverb, std::uint64_t i, std::uint32_t prev) {
  const T x = in(i);
  std::int32_t q;
  const bool ok = quantize::prequantize<T>(x, q_p, q);
  const std::int32_t d = static_cast<std::int32_t>(static_cast<std::uint32_t>(q) - prev);
  const std::int64_t rad = radius;
  // |q| < 2^30 makes d != kVerbatim, so the marker stays unambiguous.
  const bool coded = ok && d > -rad && d < rad;
  codes(i) = coded ? static_cast<std::uint16_t>(d + rad) : std::uint16_t(0);
  if (!coded) qv(i) = ok ? d : kVerbatim;  // sparse, as compress_point's
  if (!ok) Kokkos::atomic_add(&nverb(), std::uint64_t(1));
  r(i) = ok ? quantize::reconstruct<T>(q, q_p.step) : x;
  return static_cast<std::uint32_t>(q);
}

// One row of anchors along x (the trial's teams).
template <class T, class VIn, class VR, class VC, class VQ, class VN>
KOKKOS_INLINE_FUNCTION void compress_anchor_row(const Anchors& a, const quantize::QuantParams& q_p,
                                                std::uint32_t radius, const VIn& in, const VR& r, const VC& codes,
                                                const VQ& qv, const VN& nverb, std::uint64_t row) {
  const std::uint64_t base = anchor_row_base(a, row);
  std::uint32_t prev = 0;
  for (std::uint64_t j = 0; j < a.cnt[0]; ++j)
    prev = compress_anchor<T>(q_p, radius, in, r, codes, qv, nverb, base + j * a.Sx, prev);
}

// Every anchor a thread: the previous anchor's pre-quantized value is
// recomputed from the input (the row chain holds pre-quantized values, not
// reconstructions, so no anchor waits for another). A thread per row walked
// 64 strided anchors one after the other (51 us at 512^3 on the H200).
template <class ExecSpace, class T, class In, class Q>
void compress_anchors(const ExecSpace& space, const Anchors& anchors, const quantize::QuantParams& qp,
                      std::uint32_t radius, const In& in,
                      Kokkos::View<T*, typename ExecSpace::memory_space> r,
                      Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes, const Q& qv,
                      Kokkos::View<std::uint64_t, typename ExecSpace::memory_space> nverb) {
  const Anchors a = anchors;
  const quantize::QuantParams q_p = qp;
  Kokkos::parallel_for(
      "ksz::spline::compress_anchors", Kokkos::RangePolicy<ExecSpace>(space, 0, a.rows() * a.cnt[0]),
      KOKKOS_LAMBDA(const std::uint64_t k) {
        const std::uint64_t row = k / a.cnt[0], j = k - row * a.cnt[0];
        const std::uint64_t i = anchor_row_base(a, row) + j * a.Sx;
        std::uint32_t prev = 0;
        if (j > 0) {
          std::int32_t qp_prev;
          quantize::prequantize<T>(in(i - a.Sx), q_p, qp_prev);
          prev = static_cast<std::uint32_t>(qp_prev);
        }
        compress_anchor<T>(q_p, radius, in, r, codes, qv, nverb, i, prev);
      });
}

// The longest anchor rows decoded an anchor a thread (decompress_anchors).
constexpr std::uint64_t kAnchorWalk = 128;

// The decompressor's step along an anchor row at i (kVerbatim: the chain
// restarts there).
template <class C, class Q, class I>
KOKKOS_INLINE_FUNCTION std::int32_t anchor_step(const C& codes, const Q& qv, std::int32_t rad, I i) {
  const std::int32_t code = codes(i);
  return code == 0 ? static_cast<std::int32_t>(qv(i)) : code - rad;
}
// Where the chain restarts (a verbatim anchor): that value's own
// pre-quantized q (0 if none).
template <class T>
KOKKOS_INLINE_FUNCTION std::uint32_t verbatim_q(T v, const quantize::QuantParams& q_p) {
  std::int32_t q;
  quantize::prequantize<T>(v, q_p, q);
  return static_cast<std::uint32_t>(q);
}

template <class ExecSpace, class T, class C, class Q>
void decompress_anchors(const ExecSpace& space, const Anchors& anchors, const quantize::QuantParams& qp,
                        const C& codes, const Q& qv, std::uint32_t radius,
                        Kokkos::View<T*, typename ExecSpace::memory_space> out,
                        Kokkos::View<std::uint64_t, typename ExecSpace::memory_space> zeros) {
  const Anchors a = anchors;
  const quantize::QuantParams q_p = qp;
  const std::int32_t rad = static_cast<std::int32_t>(radius);
  // Rows of up to kAnchorWalk anchors (every 3D and most 2D fields): every
  // anchor a thread, its q the sum (mod 2^32) of the row's steps since the
  // last verbatim anchor before it (that one's own pre-quantized value) or
  // the row's start: the serial chain's value without its wait from anchor to
  // anchor (a thread per row waited 64 dependent loads at 512^3: 222 -> 124
  // us on the H200). Longer rows (1D) keep the chain, a thread per row.
  if (a.cnt[0] > kAnchorWalk) {
    Kokkos::parallel_for(
        "ksz::spline::decompress_anchor_rows", Kokkos::RangePolicy<ExecSpace>(space, 0, a.rows()),
        KOKKOS_LAMBDA(const std::uint64_t row) {
          const std::uint64_t base = anchor_row_base(a, row);
          std::uint32_t prev = 0;
          for (std::uint64_t j = 0; j < a.cnt[0]; ++j) {
            const std::uint64_t i = base + j * a.Sx;
            if (codes(i) == 0) Kokkos::atomic_add(&zeros(), std::uint64_t(1));
            const std::int32_t d = anchor_step(codes, qv, rad, i);
            if (d == kVerbatim) {
              prev = verbatim_q(out(i), q_p);
            } else {
              prev += static_cast<std::uint32_t>(d);
              out(i) = quantize::reconstruct<T>(static_cast<std::int32_t>(prev), q_p.step);
            }
          }
        });
    return;
  }
  Kokkos::parallel_for(
      "ksz::spline::decompress_anchors", Kokkos::RangePolicy<ExecSpace>(space, 0, a.rows() * a.cnt[0]),
      KOKKOS_LAMBDA(const std::uint64_t k) {
        const std::uint64_t row = k / a.cnt[0], j = k - row * a.cnt[0];
        const std::uint64_t base = anchor_row_base(a, row), i = base + j * a.Sx;
        if (codes(i) == 0) Kokkos::atomic_add(&zeros(), std::uint64_t(1));
        std::int32_t d = anchor_step(codes, qv, rad, i);
        if (d == kVerbatim) return;  // out holds its value
        std::uint32_t prev = static_cast<std::uint32_t>(d);
        for (std::uint64_t m = j; m-- > 0;) {
          const std::uint64_t im = base + m * a.Sx;
          d = anchor_step(codes, qv, rad, im);
          if (d == kVerbatim) {
            prev += verbatim_q(out(im), q_p);
            break;
          }
          prev += static_cast<std::uint32_t>(d);
        }
        out(i) = quantize::reconstruct<T>(static_cast<std::int32_t>(prev), q_p.step);
      });
}

// The anchors, then the nonempty passes of levels L .. lowest from coarse to
// fine (traverse and traverse_tiled share it, so every caller agrees).
template <class FA, class FP>
void traverse_levels(const Shape& sh, const Config& cfg, const double* steps, double bound, int lowest,
                     FA&& body_anchor, FP&& body_pass) {
  const int L = level_count(cfg.anchor_stride);
  const quantize::QuantParams aqp{steps[L], 1.0 / steps[L], bound};
  body_anchor(make_anchors(sh, cfg.anchor_stride), aqp);
  for (int l = L; l >= lowest; --l) {
    const std::uint64_t s = std::uint64_t(1) << (l - 1);
    for (int p = 0; p < 3; ++p) {
      const Pass pass = make_pass(sh, cfg, s, p, steps[l - 1]);
      if (pass.count() > 0) body_pass(pass);
    }
  }
}

// Runs anchors, then every level from coarse to fine, one kernel per pass.
// `body_anchor(anchors, qp)` and `body_pass(pass)` do the compressor's or
// the decompressor's work; the traversal is shared so both agree. The last
// pass goes out marked (nothing reads its reconstruction).
template <class FA, class FP>
void traverse(const Shape& sh, const Config& cfg, const double* steps, double bound,
              FA&& body_anchor, FP&& body_pass) {
  Pass pending;  // run one behind, so the last can be marked
  bool have = false;
  traverse_levels(sh, cfg, steps, bound, 1, body_anchor, [&](const Pass& pass) {
    if (have) body_pass(pending);
    pending = pass;
    have = true;
  });
  if (have) {
    pending.last = true;
    body_pass(pending);
  }
}

// As traverse, with the finest level in tiles: anchors, the passes of levels
// L .. 2 (all of them keep their reconstructions), then
// `body_fine(FineTiles)`.
template <class FA, class FP, class FF>
void traverse_tiled(const Shape& sh, const Config& cfg, const double* steps, double bound, FA&& body_anchor,
                    FP&& body_pass, FF&& body_fine) {
  traverse_levels(sh, cfg, steps, bound, 2, body_anchor, body_pass);
  body_fine(make_fine_tiles(sh, cfg, steps[0]));
}

// ---- The passes ahead of the finest level's along x on the even-x grid ----
// Every pass ahead of the finest level's pass along x has its points and
// neighbours at even x (the levels above the finest at multiples of their
// stride, the finest level's passes ahead of x at even x). On the field their
// rows are read and written one value in two, half of each sector moved (on
// the H200 the stride-2 level took 164 us for 11% of the points, the finest
// 567 us for 88%). They run instead on the even-x grid: the field's values at
// even x, x halved (extents n0/2, n1, n2), its rows dense; point i there is
// the field's 2i. Same points, neighbours, splines, steps and arithmetic,
// thus the same codes. The finest level's pass along x then takes the grid's
// values and codes into the field's arrays with its own (compress_from_even,
// quads stored whole); the code-0 residuals go to the field's array at once
// (Doubled). It applies to rows of quads (x a multiple of 4).
inline Shape even_x_shape(const Shape& sh) { return make_shape(sh.n[0] / 2, sh.n[1], sh.n[2]); }
inline bool even_x_applies(const Shape& sh, const Config& cfg) {
  return sh.n[0] % 4 == 0 && sh.n[0] >= 8 && cfg.anchor_stride >= 2 && sh.count() <= kIndex32Max;
}

// The field's array at the even-x grid's point i: its element 2i.
template <class V>
struct Doubled {
  V v;
  template <class I>
  KOKKOS_INLINE_FUNCTION decltype(auto) operator()(I i) const {
    return v(2 * i);
  }
};

// A pass (or anchors) of the field, all of whose points are at even x, on the even-x grid.
inline Pass even_x_pass(const Pass& p, const Shape& e) {
  Pass q = p;
  q.shape = e;
  q.first[0] = p.first[0] / 2;
  q.step[0] = p.step[0] / 2;
  if (p.dim == 0) {
    q.s = p.s / 2;
    q.ustride = q.s;
  } else {
    q.ustride = p.s * e.stride[p.dim];
  }
  q.ndim = e.n[p.dim];
  return q;
}
inline Anchors even_x_anchors(const Anchors& a, const Shape& e) {
  Anchors b = a;
  b.shape = e;
  b.Sx = a.S / 2;
  return b;
}

// The even-x grid's reconstructions and codes (its count each).
template <class T, class Mem>
struct EvenGrid {
  Kokkos::View<T*, Mem> r;
  Kokkos::View<std::uint16_t*, Mem> codes;
};

// The arrays traverse_on's bodies work on, the field's and the even-x
// grid's; the field's input, code-0 residuals (and codes) as that grid
// reaches them.
template <class T, class Mem>
struct CompressArrays {
  Kokkos::View<const T*, Mem> in;
  EvenGrid<T, Mem> even;
  Kokkos::View<T*, Mem> r;
  Kokkos::View<std::uint16_t*, Mem> codes;
  Kokkos::View<std::int32_t*, Mem> qv;
  Kokkos::View<std::uint64_t, Mem> nverb;
  Doubled<Kokkos::View<const T*, Mem>> even_in() const { return {in}; }
  Doubled<Kokkos::View<std::int32_t*, Mem>> even_qv() const { return {qv}; }
};
template <class T, class Mem>
struct DecompressArrays {
  Kokkos::View<const std::uint16_t*, Mem> codes;
  Kokkos::View<const std::int32_t*, Mem> qv;
  Kokkos::View<T*, Mem> even;  // the even-x grid's values, its verbatim ones in place
  Kokkos::View<T*, Mem> out;
  Kokkos::View<std::uint64_t, Mem> zeros;
  Doubled<Kokkos::View<const std::uint16_t*, Mem>> even_codes() const { return {codes}; }
  Doubled<Kokkos::View<const std::int32_t*, Mem>> even_qv() const { return {qv}; }
};

// Where a pass of traverse_even runs: on the even-x grid, the finest
// level's along x (taking the grid into the field), on the field.
enum class PassGrid { Even, FromEven, Whole };
// A pass's level as its stride on the field (on the even-x grid a pass along
// x has half of it).
inline std::uint64_t level_stride(const Pass& p, PassGrid grid) {
  return grid == PassGrid::Even && p.dim == 0 ? 2 * p.s : p.s;
}

// As traverse, the passes ahead of the finest level's along x on the even-x
// grid: body_anchor(anchors there), body_pass(pass, grid) for each pass.
template <class FA, class FP>
void traverse_even(const Shape& sh, const Config& cfg, const double* steps, double bound, FA&& body_anchor,
                   FP&& body_pass) {
  const Shape e = even_x_shape(sh);
  bool taken = false;  // the finest level's pass along x has run
  traverse(
      sh, cfg, steps, bound,
      [&](const Anchors& a, const quantize::QuantParams& qp) { body_anchor(even_x_anchors(a, e), qp); },
      [&](const Pass& p) {
        if (taken) {
          body_pass(p, PassGrid::Whole);
        } else if (p.dim == 0 && p.s == 1) {
          taken = true;
          body_pass(p, PassGrid::FromEven);
        } else {
          body_pass(even_x_pass(p, e), PassGrid::Even);
        }
      });
}

// traverse_even where `even`, else traverse with every pass on the field:
// body_anchor(anchors, qp, grid) and body_pass(pass, grid) either way.
template <class FA, class FP>
void traverse_on(bool even, const Shape& sh, const Config& cfg, const double* steps, double bound, FA&& body_anchor,
                 FP&& body_pass) {
  if (even)
    traverse_even(
        sh, cfg, steps, bound,
        [&](const Anchors& a, const quantize::QuantParams& qp) { body_anchor(a, qp, PassGrid::Even); }, body_pass);
  else
    traverse(
        sh, cfg, steps, bound,
        [&](const Anchors& a, const quantize::QuantParams& qp) { body_anchor(a, qp, PassGrid::Whole); },
        [&](const Pass& p) { body_pass(p, PassGrid::Whole); });
}

// A code written into a thread's own array by code_value.
struct CodeSlot {
  std::uint16_t* at;
  template <class I>
  KOKKOS_INLINE_FUNCTION std::uint16_t& operator()(I) const {
    return *at;
  }
};
struct alignas(8) CodeQuad {
  std::uint16_t v[4];
};

// The finest level's pass along x by quads of its rows (x a multiple of 4,
// first[1] = first[2] = 0): iteration t's quad at e in the field, g = e / 2
// on the even-x grid, and the stencils of its points x + 1 and x + 3 from
// the grid's even values v(g - 1) .. v(g + 3).
struct EvenQuads {
  std::uint32_t nx = 0, quads = 0, s1 = 0, s2 = 0;
  FastDiv by_quads, by_rows;
  std::uint64_t count = 0;  // iterations
  KOKKOS_INLINE_FUNCTION void at(std::uint32_t t, std::uint32_t& x, std::uint32_t& e, bool& more) const {
    const std::uint32_t row = by_quads.div(t), q = t - row * quads, k2 = by_rows.div(row);
    x = 4 * q;
    e = (row - k2 * by_rows.d) * s1 + k2 * s2 + x;
    more = q + 1 < quads;
  }
  template <class T, class V>
  KOKKOS_INLINE_FUNCTION void stencils(const V& v, std::uint32_t x, std::uint32_t g, bool more, Stencil<T>& lo,
                                       Stencil<T>& hi) const {
    if (x > 0) lo.a = v(g - 1);
    lo.b = hi.a = v(g);
    lo.c = hi.b = v(g + 1);
    if (more) lo.d = hi.c = v(g + 2), hi.d = v(g + 3);
    lo.w = where(1u, nx, x + 1);
    hi.w = where(1u, nx, x + 3);
  }
  // Both: iteration t's quad index e, its points' stencils from the grid v,
  // and the quad's even values (the grid's at e / 2, e / 2 + 1) in q.
  template <class T, class V>
  KOKKOS_INLINE_FUNCTION std::uint32_t quad(std::uint32_t t, const V& v, Stencil<T>& lo, Stencil<T>& hi,
                                            Quad<T>& q) const {
    std::uint32_t x, e;
    bool more;
    at(t, x, e, more);
    stencils<T>(v, x, e / 2, more, lo, hi);
    q.v[0] = lo.b;
    q.v[2] = lo.c;
    return e;
  }
};
inline EvenQuads even_quads(const Pass& p) {
  EvenQuads w;
  w.nx = static_cast<std::uint32_t>(p.shape.n[0]);
  w.quads = w.nx / 4;
  w.by_quads = FastDiv(w.quads);
  w.by_rows = FastDiv(static_cast<std::uint32_t>(p.cnt[1]));
  w.s1 = static_cast<std::uint32_t>(p.step[1] * p.shape.stride[1]);
  w.s2 = static_cast<std::uint32_t>(p.step[2] * p.shape.stride[2]);
  w.count = std::uint64_t(w.quads) * p.cnt[1] * p.cnt[2];
  return w;
}

// The finest level's pass along x (odd x) after the passes ahead of it on
// the even-x grid: a thread takes the quad [x, x + 4) of a row (x a multiple
// of 4); its odd values are the pass's points, predicted as predict_from
// would from the even ones at x - 2 .. x + 6, the grid's points e / 2 - 1 ..
// e / 2 + 3 (e the quad's index). It stores the quad's reconstructions (the
// grid's two and its own) and codes whole.
template <class ExecSpace, class T>
void compress_from_even(const ExecSpace& space, const Pass& pass, double bound, std::uint32_t radius,
                        const CompressArrays<T, typename ExecSpace::memory_space>& arrays) {
  const Pass p = pass;
  const CompressArrays<T, typename ExecSpace::memory_space> a = arrays;
  const std::int32_t rad = static_cast<std::int32_t>(radius);
  const EvenQuads w = even_quads(p);
  Kokkos::parallel_for(
      "ksz::spline::compress_from_even", walk_policy(space, w.count), KOKKOS_LAMBDA(const std::uint64_t it) {
        Stencil<T> lo, hi;  // the points x + 1 and x + 3
        Quad<T> rq;
        const std::uint32_t e = w.quad<T>(static_cast<std::uint32_t>(it), a.even.r, lo, hi, rq);
        CodeQuad cq;
        cq.v[0] = a.even.codes(e / 2);
        cq.v[2] = a.even.codes(e / 2 + 1);
        rq.v[1] = code_value<T>(p, bound, rad, a.in(e + 1), predict_from(p.kind, lo), CodeSlot{&cq.v[1]}, a.qv,
                                a.nverb, e + 1);
        rq.v[3] = code_value<T>(p, bound, rad, a.in(e + 3), predict_from(p.kind, hi), CodeSlot{&cq.v[3]}, a.qv,
                                a.nverb, e + 3);
        *reinterpret_cast<CodeQuad*>(&a.codes(e)) = cq;
        if (!p.last) store_quad(&a.r(e), rq);
      });
}
// Whether compress_from_even can store whole quads into these arrays.
template <class T, class Mem>
bool from_even_aligned(Kokkos::View<T*, Mem> r, Kokkos::View<std::uint16_t*, Mem> codes) {
  return quads_aligned<T>(r) && reinterpret_cast<std::uintptr_t>(codes.data()) % sizeof(CodeQuad) == 0;
}

// The anchors (on the even-x grid or the field) and a pass of traverse_on
// on the compressor's side.
template <class ExecSpace, class T>
void compress_anchors_on(const ExecSpace& space, const Anchors& anchors, const quantize::QuantParams& qp,
                         PassGrid grid, std::uint32_t radius,
                         const CompressArrays<T, typename ExecSpace::memory_space>& a) {
  if (grid == PassGrid::Even)
    compress_anchors<ExecSpace, T>(space, anchors, qp, radius, a.even_in(), a.even.r, a.even.codes, a.even_qv(),
                                   a.nverb);
  else
    compress_anchors<ExecSpace, T>(space, anchors, qp, radius, a.in, a.r, a.codes, a.qv, a.nverb);
}
template <class ExecSpace, class T>
void compress_pass_on(const ExecSpace& space, const Pass& pass, PassGrid grid, double bound, std::uint32_t radius,
                      const CompressArrays<T, typename ExecSpace::memory_space>& a) {
  if (grid == PassGrid::Even)
    compress_pass<ExecSpace, T>(space, pass, bound, radius, a.even_in(), a.even.r, a.even.codes, a.even_qv(),
                                a.nverb);
  else if (grid == PassGrid::FromEven)
    compress_from_even<ExecSpace, T>(space, pass, bound, radius, a);
  else
    compress_pass<ExecSpace, T>(space, pass, bound, radius, a.in, a.r, a.codes, a.qv, a.nverb);
}

// The decompressor's side: the finest level's pass along x decodes the
// quad's odd values from the even ones on the even-x grid (as predict_from
// would from the field's) and stores the quad whole into out.
template <class ExecSpace, class T>
void decompress_from_even(const ExecSpace& space, const Pass& pass, std::uint32_t radius,
                          const DecompressArrays<T, typename ExecSpace::memory_space>& a) {
  const DecompressPoint<T, typename ExecSpace::memory_space> dp{pass, static_cast<std::int32_t>(radius), a.codes, a.qv,
                                                               a.out, a.zeros};
  const Kokkos::View<const T*, typename ExecSpace::memory_space> ev = a.even;
  const EvenQuads w = even_quads(pass);
  Kokkos::parallel_for(
      "ksz::spline::decompress_from_even", walk_policy(space, w.count), KOKKOS_LAMBDA(const std::uint64_t it) {
        Stencil<T> lo, hi;  // the points x + 1 and x + 3
        Quad<T> rq;
        const std::uint32_t e = w.quad<T>(static_cast<std::uint32_t>(it), ev, lo, hi, rq);
        const std::int32_t code[2] = {dp.codes(e + 1), dp.codes(e + 3)};
        std::int32_t r;
        rq.v[1] = dp.residual(e + 1, code[0], r) ? dp.decoded(predict_from(dp.p.kind, lo), r) : dp.out(e + 1);
        rq.v[3] = dp.residual(e + 3, code[1], r) ? dp.decoded(predict_from(dp.p.kind, hi), r) : dp.out(e + 3);
        store_quad(&dp.out(e), rq);
      });
}

// The anchors and a pass of traverse_on on the decompressor's side.
template <class ExecSpace, class T>
void decompress_anchors_on(const ExecSpace& space, const Anchors& anchors, const quantize::QuantParams& qp,
                           PassGrid grid, std::uint32_t radius,
                           const DecompressArrays<T, typename ExecSpace::memory_space>& a) {
  if (grid == PassGrid::Even)
    decompress_anchors<ExecSpace, T>(space, anchors, qp, a.even_codes(), a.even_qv(), radius, a.even, a.zeros);
  else
    decompress_anchors<ExecSpace, T>(space, anchors, qp, a.codes, a.qv, radius, a.out, a.zeros);
}
template <class ExecSpace, class T>
void decompress_pass_on(const ExecSpace& space, const Pass& pass, PassGrid grid, std::uint32_t radius,
                        const DecompressArrays<T, typename ExecSpace::memory_space>& a) {
  if (grid == PassGrid::Even)
    decompress_pass<ExecSpace, T>(space, pass, a.even_codes(), a.even_qv(), radius, a.even, a.zeros);
  else if (grid == PassGrid::FromEven)
    decompress_from_even<ExecSpace, T>(space, pass, radius, a);
  else
    decompress_pass<ExecSpace, T>(space, pass, a.codes, a.qv, radius, a.out, a.zeros);
}

// Auto-tune by profiling (section V-B): on sampled interior points, the error
// of each cubic spline along each dimension on the original data. Errors are
// summed as integers (in units of the bound, capped) so the sums, and thus
// the choices, are identical on every backend whatever the reduction order.
struct Profile {
  std::uint64_t err[3][2] = {{0, 0}, {0, 0}, {0, 0}};  // [dim][not-a-knot, natural]
  std::uint64_t samples[3] = {0, 0, 0};
};

// The unit the profile counts errors in: the pipeline's absolute bound (the
// user's, or under REL the user's times the value range), else its
// quantization step. From the value range's extremes as finite_minmax leaves
// them (mn > mx: no finite value), so that the device can work it out from
// where that reduction put them: the same IEEE operations as on the host.
KOKKOS_INLINE_FUNCTION double profile_unit(double mn, double mx, bool rel, double bound) {
  const bool any = mn <= mx;
  if (!any) mn = mx = 0;
  const double abs_bound = rel ? bound * (mx - mn) : bound;
  return abs_bound > 0 ? abs_bound : quantize::quant_step(abs_bound, any, mx);
}

// The profile's six sums (per dimension, both cubic splines) in one
// reduction over the three dimensions' samples laid end to end: one kernel
// and one copy back instead of three. Integer sums: the same on every
// backend whatever the order. An array reduction (value_count 6); both join
// forms for Kokkos 3.4 (volatile) and 4.x.
template <class Mem, class T>
struct ProfileSums {
  using value_type = std::uint64_t[];
  static constexpr unsigned kValues = 6;
  static constexpr std::uint64_t kSample = 5;         // every 5th point per dimension,
  static constexpr std::uint64_t kMaxSamples = 1u << 18;  // every 10th, 20th, ... past 2^18 a dimension
  unsigned value_count = kValues;
  std::uint64_t step = kSample;
  Kokkos::View<const T*, Mem> in;
  Shape sh;
  double inv_unit = 1;
  // Or, on GPUs, the unit from the value range where the device left it
  // (range[0], range[1]: finite_minmax's extremes), so the profile runs
  // behind the range's kernel without a round trip to the host.
  const double* range = nullptr;
  bool rel = false;
  double bound = 0;
  std::uint64_t cnt[3][3] = {};  // [dimension profiled][sample count per dimension]
  std::uint64_t start[4] = {};   // where each dimension's samples begin

  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t k, value_type acc) const {
    const int d = k < start[1] ? 0 : k < start[2] ? 1 : 2;
    const std::uint64_t* c3 = cnt[d];
    const std::uint64_t j = k - start[d];
    const std::uint64_t k0 = j % c3[0], k12 = j / c3[0], k1 = k12 % c3[1], k2 = k12 / c3[1];
    std::uint64_t c[3] = {k0 * step, k1 * step, k2 * step};
    c[d] += 3;
    const std::uint64_t ms = sh.stride[d];
    const std::uint64_t i = c[0] + c[1] * sh.stride[1] + c[2] * sh.stride[2];
    const double a = in(i - 3 * ms), b = in(i - ms), cc = in(i + ms), e = in(i + 3 * ms), x = in(i);
    const double p1 = mul_rn(add_rn(mul_rn(9.0, add_rn(b, cc)), -add_rn(a, e)), 1.0 / 16.0);
    const double p2 = mul_rn(add_rn(mul_rn(23.0, add_rn(b, cc)), mul_rn(-3.0, add_rn(a, e))), 1.0 / 40.0);
    const double iu = range ? 1.0 / profile_unit(range[0], range[1], rel, bound) : inv_unit;
    const double f1 = ::fabs(mul_rn(add_rn(x, -p1), iu));
    const double f2 = ::fabs(mul_rn(add_rn(x, -p2), iu));
    // NaN and huge errors count as the cap: fill values must not decide.
    acc[2 * d] += f1 < 1024.0 ? static_cast<std::uint64_t>(f1) : 1024u;
    acc[2 * d + 1] += f2 < 1024.0 ? static_cast<std::uint64_t>(f2) : 1024u;
  }
  KOKKOS_INLINE_FUNCTION void init(value_type v) const {
    for (unsigned j = 0; j < kValues; ++j) v[j] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type dst, const value_type src) const {
    for (unsigned j = 0; j < kValues; ++j) dst[j] += src[j];
  }
  KOKKOS_INLINE_FUNCTION void join(volatile std::uint64_t* dst, const volatile std::uint64_t* src) const {
    for (unsigned j = 0; j < kValues; ++j) dst[j] += src[j];
  }
};

// The profile's samples planned (prof.samples, the functor's counts), then
// its six sums reduced into `sums` (a view of 6 words; a device view keeps
// the reduction asynchronous) by profile_sums; profile_errors puts them in.
template <class Mem, class T>
ProfileSums<Mem, T> plan_profile(const Shape& shape, Kokkos::View<const T*, Mem> in, Profile& prof) {
  using Sums = ProfileSums<Mem, T>;
  Sums f;
  f.in = in;
  f.sh = shape;
  // The samples are sector-bound gathers (five rows a sample along y and z):
  // 0.11 ms at 512^3 with every 5th point, 1.07M samples a dimension, where
  // a quarter of a million decide as well. Fields up to about 2^24 elements
  // (every shared field) keep every 5th point.
  const auto plan = [&](std::uint64_t step) {
    std::uint64_t most = 0;
    for (int d = 0; d < 3; ++d) {
      std::uint64_t total = 0;
      if (shape.n[d] >= 7) {
        for (int e = 0; e < 3; ++e)
          f.cnt[d][e] = e == d ? (shape.n[d] - 7) / step + 1 : (shape.n[e] - 1) / step + 1;
        total = f.cnt[d][0] * f.cnt[d][1] * f.cnt[d][2];
      }
      f.start[d + 1] = f.start[d] + total;
      prof.samples[d] = total;
      most = total > most ? total : most;
    }
    return most;
  };
  while (plan(f.step) > Sums::kMaxSamples) f.step *= 2;
  return f;
}

template <class ExecSpace, class T, class SumsView>
void profile_sums(const ExecSpace& space, const ProfileSums<typename ExecSpace::memory_space, T>& f,
                  const SumsView& sums) {
  if (f.start[3] > 0)
    Kokkos::parallel_reduce("ksz::spline::profile", Kokkos::RangePolicy<ExecSpace>(space, 0, f.start[3]), f, sums);
  else  // no samples (every dimension shorter than 7)
    Kokkos::deep_copy(space, sums, std::uint64_t(0));
}

inline void profile_errors(const std::uint64_t* sums, Profile& prof) {
  for (int d = 0; d < 3; ++d) {
    prof.err[d][0] = sums[2 * d];
    prof.err[d][1] = sums[2 * d + 1];
  }
}

// The profile with errors in units of `unit`, on the host when it returns.
template <class ExecSpace, class T>
Profile profile(const ExecSpace& space, const Shape& shape, double unit,
                Kokkos::View<const T*, typename ExecSpace::memory_space> in) {
  Profile prof;
  auto f = plan_profile(shape, in, prof);
  f.inv_unit = 1.0 / unit;
  std::uint64_t sums[ProfileSums<typename ExecSpace::memory_space, T>::kValues] = {};
  if (f.start[3] > 0)
    profile_sums<ExecSpace, T>(
        space, f,
        Kokkos::View<std::uint64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(sums, f.kValues));
  space.fence();
  profile_errors(sums, prof);
  return prof;
}

// Choices from a profile: per dimension the better cubic; dimension order from
// least to most smooth, so the last (and largest) pass of each level runs
// along the smoothest dimension. Ties keep the natural order (deterministic).
inline void tune(const Profile& prof, Config& cfg) {
  std::uint64_t best[3], cnt[3];
  for (int d = 0; d < 3; ++d) {
    cfg.kind[d] = prof.err[d][1] < prof.err[d][0] ? kNatural : kNotAKnot;
    best[d] = prof.err[d][cfg.kind[d]];
    cnt[d] = prof.samples[d] > 0 ? prof.samples[d] : 1;  // unprofiled (short) dimensions: mean 0
  }
  // Stable insertion sort by decreasing mean error, means compared exactly by
  // cross-multiplication (errors <= 1024 per sample: no overflow).
  std::uint32_t o[3] = {0, 1, 2};
  for (int i = 1; i < 3; ++i)
    for (int j = i; j > 0; --j) {
      const std::uint32_t a = o[j - 1], b = o[j];
      if (best[b] * cnt[a] > best[a] * cnt[b]) {
        o[j - 1] = b;
        o[j] = a;
      } else {
        break;
      }
    }
  for (int i = 0; i < 3; ++i) cfg.order[i] = o[i];
}

// Spline-kind trial. The profile measures stride-1 errors on the original
// data; on rough or edged fields it misjudges what cubic splines do at coarse
// strides from reconstructed values (overshoot at edges), where linear ones
// code much smaller (carotid scalars at REL 1e-4: 3.77 cubic vs 4.42 linear;
// cth void fraction at 1e-3: 49 vs 76). So the pipeline runs the tuned cubic
// configuration and an all-linear one on a sample and keeps the cheaper.
// The sample is the whole field up to kTrialWhole elements, else up to
// kTrialBoxes boxes (40^3 in 3D, 256^2 in 2D, 65536 in 1D: whole anchor
// chunks; no more than a quarter of the field) spread evenly over the field, stored one after the other along the
// slowest dimension and predicted box by box (a box's splines never reach
// into the next: a seam would penalize cubic ones). Costs come from integer
// histograms, so every backend agrees.
constexpr std::uint64_t kTrialWhole = std::uint64_t(1) << 18;
constexpr std::uint64_t kTrialBoxes = 4;

struct Sample {
  Shape shape;               // the stacked boxes
  std::uint64_t box[3];      // box extents
  std::uint64_t grid[3];     // boxes per dimension in the field
  std::uint64_t boxes = 0;   // boxes taken
  std::uint32_t stack = 0;   // dimension the boxes are stacked along
};

inline Sample plan_sample(const Shape& sh, int rank) {
  Sample sm;
  const std::uint64_t side = rank == 1 ? 65536 : rank == 2 ? 256 : 40;
  std::uint64_t g = 1;
  for (int d = 0; d < 3; ++d) {
    sm.box[d] = sh.n[d] < side ? sh.n[d] : side;
    sm.grid[d] = sh.n[d] / sm.box[d];
    g *= sm.grid[d];
    if (sh.n[d] > 1) sm.stack = static_cast<std::uint32_t>(d);
  }
  // At most kTrialBoxes, and at most a quarter of the field (at least one box):
  // the two trial runs then cost at most half a prediction pass.
  const std::uint64_t per_box = sm.box[0] * sm.box[1] * sm.box[2];
  std::uint64_t cap = sh.count() / 4 / per_box;
  cap = cap < 1 ? 1 : cap;
  sm.boxes = g < kTrialBoxes ? g : kTrialBoxes;
  sm.boxes = sm.boxes < cap ? sm.boxes : cap;
  std::uint64_t e[3] = {sm.box[0], sm.box[1], sm.box[2]};
  e[sm.stack] *= sm.boxes;
  sm.shape = make_shape(e[0], e[1], e[2]);
  return sm;
}

template <class ExecSpace, class T>
void gather_sample(const ExecSpace& space, const Shape& field, const Sample& sample,
                   Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                   Kokkos::View<T*, typename ExecSpace::memory_space> out) {
  const Shape f = field;
  const Sample sm = sample;
  Kokkos::parallel_for(
      "ksz::spline::gather_sample", Kokkos::RangePolicy<ExecSpace>(space, 0, sm.shape.count()),
      KOKKOS_LAMBDA(const std::uint64_t i) {
        std::uint64_t c[3] = {i % sm.shape.n[0], i / sm.shape.n[0] % sm.shape.n[1], i / (sm.shape.n[0] * sm.shape.n[1])};
        const std::uint64_t k = c[sm.stack] / sm.box[sm.stack];  // which box
        c[sm.stack] -= k * sm.box[sm.stack];
        // box k of the sample is box j = k * G / boxes of the field's box grid
        const std::uint64_t G = sm.grid[0] * sm.grid[1] * sm.grid[2];
        const std::uint64_t j = k * G / sm.boxes;
        const std::uint64_t b[3] = {j % sm.grid[0], j / sm.grid[0] % sm.grid[1], j / (sm.grid[0] * sm.grid[1])};
        std::uint64_t src = 0;
        for (int d = 0; d < 3; ++d) src += (b[d] * sm.box[d] + c[d]) * f.stride[d];
        out(i) = in(src);
      });
}

// A view seen from an offset (a box of the trial's sample).
template <class V>
struct Shifted {
  V v;
  std::uint64_t base;
  KOKKOS_INLINE_FUNCTION typename V::reference_type operator()(std::uint64_t i) const { return v(base + i); }
};

// The trial's predictions in one kernel: a team per (configuration, box)
// runs the box's anchors and every pass, a team barrier between passes (the
// points of a pass depend only on earlier ones, as in `traverse`). Codes of
// configuration c land in codes[c ns, (c + 1) ns) for ns = boxes * box
// elements. `passes` holds each configuration's passes in traversal order;
// `nverb` counts verbatim elements (the trial does not read it).
// One launch instead of one per box, pass and configuration (80 on a 3D
// field, each a few microseconds of work).
template <class ExecSpace, class T>
void trial_predict(const ExecSpace& space, const Anchors& anchors, const quantize::QuantParams& aqp,
                   std::uint32_t radius, double bound, std::uint64_t boxes, std::uint32_t configs,
                   Kokkos::View<const Pass*, typename ExecSpace::memory_space> passes,
                   Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                   Kokkos::View<T*, typename ExecSpace::memory_space> rec,
                   Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes,
                   Kokkos::View<std::int32_t*, typename ExecSpace::memory_space> qv,
                   Kokkos::View<std::uint64_t, typename ExecSpace::memory_space> nverb) {
  using Mem = typename ExecSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  const Anchors a = anchors;
  const quantize::QuantParams q_p = aqp;
  const std::uint64_t box_n = a.shape.count(), ns = boxes * box_n;
  const std::uint32_t npass = static_cast<std::uint32_t>(passes.extent(0) / configs);
  const std::int32_t rad = static_cast<std::int32_t>(radius);
  const auto body = KOKKOS_LAMBDA(const Member& team) {
    const std::uint64_t c = static_cast<std::uint64_t>(team.league_rank()) / boxes;
    const std::uint64_t k = static_cast<std::uint64_t>(team.league_rank()) % boxes;
    using VIn = Kokkos::View<const T*, Mem>;
    using VR = Kokkos::View<T*, Mem>;
    using VC = Kokkos::View<std::uint16_t*, Mem>;
    using VQ = Kokkos::View<std::int32_t*, Mem>;
    const Shifted<VIn> bin{in, k * box_n};
    const Shifted<VR> brec{rec, c * ns + k * box_n};
    const Shifted<VC> bcodes{codes, c * ns + k * box_n};
    const Shifted<VQ> bqv{qv, c * ns + k * box_n};
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, a.rows()), [&](const std::uint64_t row) {
      compress_anchor_row<T>(a, q_p, radius, bin, brec, bcodes, bqv, nverb, row);
    });
    for (std::uint32_t j = 0; j < npass; ++j) {
      team.team_barrier();
      const Pass p = passes(c * npass + j);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, p.count()), [&](const std::uint64_t t) {
        std::uint64_t i, x;
        pass_point(p, t, i, x);
        compress_point<T>(p, bound, rad, bin, brec, bcodes, bqv, nverb, i, x);
      });
    }
  };
  const int league = static_cast<int>(boxes * configs);
  // The league is small (8 teams on a 512^3 field) and each pass a team
  // barrier's worth of dependent loads: teams as wide as the kernel's
  // registers allow (team_size_max) run each pass in fewer rounds (256
  // threads a team: 36.5 us on the H200 at 512^3).
  int ts = 1;
  if (!host) ts = Policy(space, league, Kokkos::AUTO).team_size_max(body, Kokkos::ParallelForTag());
  Kokkos::parallel_for("ksz::spline::trial_predict", Policy(space, league, ts), body);
}

// Estimated bits of a code histogram (code 0 = outlier or verbatim, 64 bits
// of payload each): the ideal entropy, T log2 T - sum of c log2 c over the
// counts c summing to T, computed on the host from integers. log2 of counts
// below 2^12 (most of the trial's bins) from a table made once: a log2 call
// a nonzero bin took 40-50 us for the trial's two histograms on the H200
// hosts.
inline double trial_bits(const std::uint64_t* hist, std::size_t nbins) {
  static const std::vector<double> table = [] {
    std::vector<double> t(std::size_t(1) << 12, 0.0);
    for (std::size_t c = 1; c < t.size(); ++c) t[c] = std::log2(double(c));
    return t;
  }();
  const auto c_log2_c = [&](std::uint64_t c) {
    return double(c) * (c < table.size() ? table[c] : std::log2(double(c)));
  };
  std::uint64_t total = 0;
  double sum = 0;
  for (std::size_t b = 0; b < nbins; ++b) {
    total += hist[b];
    if (hist[b]) sum += c_log2_c(hist[b]);
  }
  if (total == 0) return 0;
  return 64.0 * double(hist[0]) + c_log2_c(total) - sum;
}

}  // namespace ksz::spline
