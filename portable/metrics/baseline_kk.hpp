// Metric-oriented baseline (cuZ-Checker's moZC, section on the baseline): one
// library call per metric, each re-reading its arrays, built on Kokkos
// Kernels BLAS-1 (dot, nrm1, nrm2, nrminf, iamax, sum, update, abs,
// reciprocal, mult) with a plain Kokkos Min/Max reduction where BLAS has no
// such routine. Exists so that the benefit of the fused engine is measured,
// not claimed (perf/metrics/bench_metrics.cpp). Inputs are widened to double
// first, as every metric is accumulated in double in the fused engine too.
// No fill handling: every value must be finite (and originals nonzero for the
// point-wise relative error).
#pragma once
#ifdef KSZ_HAVE_KOKKOSKERNELS
#include <KokkosBlas1_abs.hpp>
#include <KokkosBlas1_axpby.hpp>
#include <KokkosBlas1_dot.hpp>
#include <KokkosBlas1_iamax.hpp>
#include <KokkosBlas1_mult.hpp>
#include <KokkosBlas1_nrm1.hpp>
#include <KokkosBlas1_nrm2.hpp>
#include <KokkosBlas1_nrminf.hpp>
#include <KokkosBlas1_reciprocal.hpp>
#include <KokkosBlas1_sum.hpp>
#include <KokkosBlas1_update.hpp>
#include <Kokkos_Core.hpp>
#include <chrono>
#include <cmath>

#include "src/api/quality.hpp"

namespace ksz::metrics {

// Functors, not lambdas: see the note on parallel_reduce in portable/predict/lorenzo/lorenzo.hpp.
template <class Mem, bool Max>
struct BaselineExtreme {
  Kokkos::View<const double*, Mem> x;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t i, double& m) const {
    if (Max ? x(i) > m : x(i) < m) m = x(i);
  }
};

template <class Space>
double baseline_min(const Space& space, Kokkos::View<const double*, typename Space::memory_space> x) {
  double r;
  Kokkos::parallel_reduce("ksz::metrics::baseline_min", Kokkos::RangePolicy<Space>(space, 0, x.extent(0)),
                          BaselineExtreme<typename Space::memory_space, false>{x}, Kokkos::Min<double>(r));
  return r;
}

template <class Space>
double baseline_max(const Space& space, Kokkos::View<const double*, typename Space::memory_space> x) {
  double r;
  Kokkos::parallel_reduce("ksz::metrics::baseline_max", Kokkos::RangePolicy<Space>(space, 0, x.extent(0)),
                          BaselineExtreme<typename Space::memory_space, true>{x}, Kokkos::Max<double>(r));
  return r;
}

template <class Space, class T>
void baseline_widen(const Space& space, Kokkos::View<const T*, typename Space::memory_space> in,
                    Kokkos::View<double*, typename Space::memory_space> out) {
  Kokkos::parallel_for(
      "ksz::metrics::baseline_widen", Kokkos::RangePolicy<Space>(space, 0, in.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i) { out(i) = double(in(i)); });
}

// Pattern-1 metrics, one call each. KokkosBlas runs on the View's default
// execution space instance, hence the fences around it.
template <class Space, class T>
QualityResult assess_baseline(const Space& space, Kokkos::View<const T*, typename Space::memory_space> orig,
                              Kokkos::View<const T*, typename Space::memory_space> dec) {
  using Mem = typename Space::memory_space;
  using V = Kokkos::View<double*, Mem>;
  const std::uint64_t n = orig.extent(0);
  KSZ_EXPECTS(dec.extent(0) == n && n > 0, "quality baseline: arrays must be non-empty and of equal size");
  const auto t0 = std::chrono::steady_clock::now();
  V a("ksz::metrics::baseline_a", n), b("ksz::metrics::baseline_b", n), e("ksz::metrics::baseline_e", n),
      w("ksz::metrics::baseline_w", n);
  baseline_widen<Space, T>(space, orig, a);
  baseline_widen<Space, T>(space, dec, b);
  space.fence();
  QualityResult q;
  q.elements = q.compared = q.pwr_compared = n;
  const double cn = double(n);
  KokkosBlas::update(1.0, b, -1.0, a, 0.0, e);  // e = b - a
  q.min_err = baseline_min<Space>(space, e);
  q.max_err = baseline_max<Space>(space, e);
  q.avg_err = KokkosBlas::sum(e) / cn;
  q.avg_abs_err = KokkosBlas::nrm1(e) / cn;
  q.max_abs_err = KokkosBlas::nrminf(e);
  q.max_abs_err_index = std::uint64_t(KokkosBlas::iamax(e)) - 1;  // BLAS indices are 1-based
  const double l2 = KokkosBlas::nrm2(e);
  q.mse = l2 * l2 / cn;
  q.rmse = std::sqrt(q.mse);
  q.orig_min = baseline_min<Space>(space, a);
  q.orig_max = baseline_max<Space>(space, a);
  q.dec_min = baseline_min<Space>(space, b);
  q.dec_max = baseline_max<Space>(space, b);
  q.orig_range = q.orig_max - q.orig_min;
  q.dec_range = q.dec_max - q.dec_min;
  q.nrmse = q.orig_range > 0 ? q.rmse / q.orig_range : 0;
  const double ma = KokkosBlas::sum(a) / cn, mb = KokkosBlas::sum(b) / cn;
  const double va = KokkosBlas::dot(a, a) / cn - ma * ma, vb = KokkosBlas::dot(b, b) / cn - mb * mb;
  const double cov = KokkosBlas::dot(a, b) / cn - ma * mb;
  q.pearson = (va > 0 && vb > 0) ? cov / std::sqrt(va * vb) : 1.0;
  q.psnr = q.mse > 0 ? 20 * std::log10(q.orig_range) - 10 * std::log10(q.mse) : HUGE_VAL;
  q.snr = q.mse > 0 ? 10 * std::log10(va / q.mse) : HUGE_VAL;
  // Point-wise relative error |e| / |a|.
  KokkosBlas::abs(w, a);
  KokkosBlas::reciprocal(w, w);
  KokkosBlas::mult(0.0, w, 1.0, w, e);  // w = e ./ |a|
  KokkosBlas::abs(w, w);
  q.min_pwr_err = baseline_min<Space>(space, w);
  q.max_pwr_err = KokkosBlas::nrminf(w);
  q.avg_pwr_err = KokkosBlas::nrm1(w) / cn;
  Kokkos::fence();
  q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return q;
}

}  // namespace ksz::metrics
#endif
