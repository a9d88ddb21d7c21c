// Quality assessment engine (cuZ-Checker, ../shared/papers/cuz-checker.txt),
// organised by the paper's three computational patterns, each one fused pass
// over both arrays, accumulating in double:
//   pattern 1 (global reductions): one custom reduction gives every scalar
//     metric; the two PDFs need its min/max as bin edges, so they take one
//     more read (team-private histograms, integer counts: deterministic).
//   pattern 2 (stencils): 7-point derivative, divergence and Laplacian errors
//     and the error autocorrelation for lags 1..L in one reduction.
//   pattern 3 (SSIM): sliding windows; each work item slides a window along x
//     and keeps its five moment sums, adding the entering and removing the
//     leaving (y,z) column: the paper's FIFO data reuse in running-sum form,
//     O(w^2) loads per window instead of O(w^3).
// Works on Views in any execution space's memory.
#pragma once
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_specializations/metrics_cuda.hpp"
#include "portable/metrics/accumulators.hpp"
#include "portable/quantize/prequant.hpp"
#include "src/api/quality.hpp"
#include "src/core/error.hpp"
#include "src/core/types.hpp"

namespace ksz::metrics {

namespace impl {

template <class T, class Mem>
struct FieldPair {
  Kokkos::View<const T*, Mem> a, b;
  Kokkos::View<const std::uint8_t*, Mem> mask;  // extent 0: no mask
  double fill;

  // x - x == 0 is false exactly for NaN and +-Inf, on host and device alike.
  KOKKOS_INLINE_FUNCTION static bool finite(double x) { return x - x == 0.0; }
  KOKKOS_INLINE_FUNCTION bool orig_ok(std::uint64_t i) const {
    if (mask.extent(0) != 0 && mask(i) == 0) return false;
    const double x = a(i);
    return finite(x) && ::fabs(x) < fill;
  }
  KOKKOS_INLINE_FUNCTION bool valid(std::uint64_t i) const { return orig_ok(i) && finite(double(b(i))); }
  KOKKOS_INLINE_FUNCTION double err(std::uint64_t i) const { return double(b(i)) - double(a(i)); }
};

// Pattern 1: every scalar metric in one read of both arrays.
template <class T, class Mem>
struct Pattern1 {
  using value_type = P1Acc;
  FieldPair<T, Mem> f;
  double shift;

  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    const double big = Kokkos::reduction_identity<double>::min();  // +inf-like
    v.cnt = v.excl = v.decbad = v.npwr = 0;
    v.imax = ~std::uint64_t(0);
    v.min_e = v.min_p = v.min_a = v.min_b = big;
    v.max_e = v.max_p = v.max_a = v.max_b = -big;
    v.max_abs = -1;
    v.sum_e = v.sum_abs = v.sum_e2 = v.sum_p = v.sa = v.sb = v.saa = v.sbb = v.sab = 0;
  }
  template <class D, class S>
  KOKKOS_INLINE_FUNCTION static void merge(D& d, S& s) {
    d.cnt += s.cnt;
    d.excl += s.excl;
    d.decbad += s.decbad;
    d.npwr += s.npwr;
    // Ties go to the smaller index so every backend reports the same element.
    if (s.max_abs > d.max_abs || (s.max_abs == d.max_abs && s.imax < d.imax)) {
      d.max_abs = s.max_abs;
      d.imax = s.imax;
    }
    if (s.min_e < d.min_e) d.min_e = s.min_e;
    if (s.max_e > d.max_e) d.max_e = s.max_e;
    if (s.min_p < d.min_p) d.min_p = s.min_p;
    if (s.max_p > d.max_p) d.max_p = s.max_p;
    if (s.min_a < d.min_a) d.min_a = s.min_a;
    if (s.max_a > d.max_a) d.max_a = s.max_a;
    if (s.min_b < d.min_b) d.min_b = s.min_b;
    if (s.max_b > d.max_b) d.max_b = s.max_b;
    d.sum_e += s.sum_e;
    d.sum_abs += s.sum_abs;
    d.sum_e2 += s.sum_e2;
    d.sum_p += s.sum_p;
    d.sa += s.sa;
    d.sb += s.sb;
    d.saa += s.saa;
    d.sbb += s.sbb;
    d.sab += s.sab;
  }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& d, const volatile value_type& s) const { merge(d, s); }
  KOKKOS_INLINE_FUNCTION void join(value_type& d, const value_type& s) const { merge(d, s); }

  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t i, value_type& v) const {
    if (!f.valid(i)) {
      ++v.excl;
      if (f.orig_ok(i)) ++v.decbad;
      return;
    }
    const double x = a_of(i), y = double(f.b(i)), e = y - x, ae = ::fabs(e);
    ++v.cnt;
    if (ae > v.max_abs || (ae == v.max_abs && i < v.imax)) {
      v.max_abs = ae;
      v.imax = i;
    }
    if (e < v.min_e) v.min_e = e;
    if (e > v.max_e) v.max_e = e;
    v.sum_e += e;
    v.sum_abs += ae;
    v.sum_e2 += e * e;
    if (x != 0) {
      const double p = ae / ::fabs(x);
      ++v.npwr;
      if (p < v.min_p) v.min_p = p;
      if (p > v.max_p) v.max_p = p;
      v.sum_p += p;
    }
    if (x < v.min_a) v.min_a = x;
    if (x > v.max_a) v.max_a = x;
    if (y < v.min_b) v.min_b = y;
    if (y > v.max_b) v.max_b = y;
    const double xs = x - shift, ys = y - shift;
    v.sa += xs;
    v.sb += ys;
    v.saa += xs * xs;
    v.sbb += ys * ys;
    v.sab += xs * ys;
  }
  KOKKOS_INLINE_FUNCTION double a_of(std::uint64_t i) const { return double(f.a(i)); }
};

// Pattern 2: stencils on the error field e = b - a (derivatives are linear, so
// d(b) - d(a) = d(e)), plus the error autocorrelation along every axis.
template <class T, class Mem>
struct Pattern2 {
  using value_type = P2Acc;
  FieldPair<T, Mem> f;
  std::uint64_t n0, n1, n2;
  int rank, lags;
  double mean;  // of the error

  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.pts = 0;
    v.d1max = v.d1sum = v.d2max = v.d2sum = v.dvmax = v.dvsum = v.lpmax = v.lpsum = 0;
    for (int k = 0; k < kQualityMaxLag; ++k) {
      v.acf[k] = 0;
      v.acn[k] = 0;
    }
  }
  template <class D, class S>
  KOKKOS_INLINE_FUNCTION static void merge(D& d, S& s) {
    d.pts += s.pts;
    if (s.d1max > d.d1max) d.d1max = s.d1max;
    if (s.d2max > d.d2max) d.d2max = s.d2max;
    if (s.dvmax > d.dvmax) d.dvmax = s.dvmax;
    if (s.lpmax > d.lpmax) d.lpmax = s.lpmax;
    d.d1sum += s.d1sum;
    d.d2sum += s.d2sum;
    d.dvsum += s.dvsum;
    d.lpsum += s.lpsum;
    for (int k = 0; k < kQualityMaxLag; ++k) {
      d.acf[k] += s.acf[k];
      d.acn[k] += s.acn[k];
    }
  }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& d, const volatile value_type& s) const { merge(d, s); }
  KOKKOS_INLINE_FUNCTION void join(value_type& d, const value_type& s) const { merge(d, s); }

  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t i, value_type& v) const {
    if (!f.valid(i)) return;
    const std::uint64_t c[3] = {i % n0, (i / n0) % n1, i / (n0 * n1)};
    const std::uint64_t n[3] = {n0, n1, n2};
    const std::uint64_t s[3] = {1, n0, n0 * n1};
    const double e0 = f.err(i);
    // Autocorrelation: pairs (i, i + k along axis d), both compared.
    for (int k = 1; k <= lags; ++k)
      for (int d = 0; d < rank; ++d)
        if (c[d] + k < n[d]) {
          const std::uint64_t j = i + std::uint64_t(k) * s[d];
          if (f.valid(j)) {
            v.acf[k - 1] += (e0 - mean) * (f.err(j) - mean);
            ++v.acn[k - 1];
          }
        }
    // 7-point stencil (in 3D): the point and its two neighbours along each axis.
    double g2 = 0, h2 = 0, div = 0, lap = 0;
    for (int d = 0; d < rank; ++d) {
      if (c[d] == 0 || c[d] + 1 >= n[d]) return;
      const std::uint64_t lo = i - s[d], hi = i + s[d];
      if (!f.valid(lo) || !f.valid(hi)) return;
      const double el = f.err(lo), eh = f.err(hi);
      const double g = 0.5 * (eh - el), h = (eh - e0) - (e0 - el);
      g2 += g * g;
      h2 += h * h;
      div += g;
      lap += h;
    }
    const double d1 = ::sqrt(g2), d2 = ::sqrt(h2), adiv = ::fabs(div), alap = ::fabs(lap);
    ++v.pts;
    v.d1sum += d1;
    v.d2sum += d2;
    v.dvsum += adiv;
    v.lpsum += alap;
    if (d1 > v.d1max) v.d1max = d1;
    if (d2 > v.d2max) v.d2max = d2;
    if (adiv > v.dvmax) v.dvmax = adiv;
    if (alap > v.lpmax) v.lpmax = alap;
  }
};

// Window positions one work item slides through along x before restarting:
// bounds the drift of the running sums and gives 1D fields parallelism.
constexpr std::uint64_t kSsimSegment = 32;

// Pattern 3: SSIM (Wang et al.) per window, averaged over windows.
template <class T, class Mem>
struct Pattern3 {
  using value_type = P3Acc;
  FieldPair<T, Mem> f;
  std::uint64_t n0, n1;
  std::uint64_t w0, w1, w2;    // window extents
  std::uint64_t nw0, nw1;      // window origins along x and y
  std::uint64_t nseg, step;
  double shift, c1, c2;

  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.windows = 0;
    v.sum = 0;
    v.min = Kokkos::reduction_identity<double>::min();
  }
  template <class D, class S>
  KOKKOS_INLINE_FUNCTION static void merge(D& d, S& s) {
    d.windows += s.windows;
    d.sum += s.sum;
    if (s.min < d.min) d.min = s.min;
  }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& d, const volatile value_type& s) const { merge(d, s); }
  KOKKOS_INLINE_FUNCTION void join(value_type& d, const value_type& s) const { merge(d, s); }

  // Adds sign * the moments of the (y,z) column at x to m[0..5]
  // (sum a, sum b, sum a^2, sum b^2, sum ab, excluded count).
  KOKKOS_INLINE_FUNCTION void column(std::uint64_t x, std::uint64_t y0, std::uint64_t z0, double sign,
                                     double* m) const {
    for (std::uint64_t z = z0; z < z0 + w2; ++z)
      for (std::uint64_t y = y0; y < y0 + w1; ++y) {
        const std::uint64_t i = x + n0 * (y + n1 * z);
        if (!f.valid(i)) {
          m[5] += sign;
          continue;
        }
        const double xa = double(f.a(i)) - shift, xb = double(f.b(i)) - shift;
        m[0] += sign * xa;
        m[1] += sign * xb;
        m[2] += sign * (xa * xa);
        m[3] += sign * (xb * xb);
        m[4] += sign * (xa * xb);
      }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t item, value_type& v) const {
    const std::uint64_t seg = item % nseg, oy = (item / nseg) % nw1, oz = item / (nseg * nw1);
    const std::uint64_t y0 = oy * step, z0 = oz * step;
    const std::uint64_t p_begin = seg * kSsimSegment;
    const std::uint64_t p_end = p_begin + kSsimSegment < nw0 ? p_begin + kSsimSegment : nw0;
    const double cnt = double(w0 * w1 * w2);
    double m[6] = {0, 0, 0, 0, 0, 0};
    for (std::uint64_t p = p_begin; p < p_end; ++p) {
      const std::uint64_t x0 = p * step;
      if (p == p_begin || step >= w0) {
        for (int k = 0; k < 6; ++k) m[k] = 0;
        for (std::uint64_t x = x0; x < x0 + w0; ++x) column(x, y0, z0, 1.0, m);
      } else {
        for (std::uint64_t x = x0 - step; x < x0; ++x) column(x, y0, z0, -1.0, m);
        for (std::uint64_t x = x0 + w0 - step; x < x0 + w0; ++x) column(x, y0, z0, 1.0, m);
      }
      if (m[5] != 0) continue;  // window touches an excluded element
      // Every product rounded once (no contraction into FMAs, which CUDA does
      // and CPUs may not): identical windows then give numerator == denominator,
      // so SSIM is exactly 1, and backends agree.
      using quantize::add_rn;
      using quantize::mul_rn;
      const double ma = m[0] / cnt, mb = m[1] / cnt;
      const double va = m[2] / cnt - mul_rn(ma, ma), vb = m[3] / cnt - mul_rn(mb, mb);
      const double cov = m[4] / cnt - mul_rn(ma, mb);
      const double ua = ma + shift, ub = mb + shift;  // luminance needs the unshifted means
      const double pab = mul_rn(ua, ub);
      const double lum_num = add_rn(add_rn(pab, pab), c1), lum_den = add_rn(add_rn(mul_rn(ua, ua), mul_rn(ub, ub)), c1);
      const double con_num = add_rn(add_rn(cov, cov), c2), con_den = add_rn(add_rn(va, vb), c2);
      const double s = mul_rn(lum_num, con_num) / mul_rn(lum_den, con_den);
      ++v.windows;
      v.sum += s;
      if (s < v.min) v.min = s;
    }
  }
};

}  // namespace impl

// Assesses dec against orig (shape.count() elements each, x fastest) on `space`.
// `mask` may be an empty View (no mask). Blocks until done.
template <class Space, class T>
QualityResult assess(const Space& space, Kokkos::View<const T*, typename Space::memory_space> orig,
                     Kokkos::View<const T*, typename Space::memory_space> dec, const Shape3& shape,
                     const QualityConfig& cfg,
                     Kokkos::View<const std::uint8_t*, typename Space::memory_space> mask = {}) {
  using Mem = typename Space::memory_space;
  const std::uint64_t n = shape.count();
  KSZ_EXPECTS(orig.extent(0) == n && dec.extent(0) == n, "quality: arrays must have ", n, " elements");
  KSZ_EXPECTS(mask.extent(0) == 0 || mask.extent(0) == n, "quality: mask must have ", n, " elements");
  KSZ_EXPECTS(cfg.pdf_bins >= 1 && cfg.pdf_bins <= (1 << 16), "quality: pdf_bins must be in 1..65536");
  KSZ_EXPECTS(cfg.autocorr_lags >= 0 && cfg.autocorr_lags <= kQualityMaxLag, "quality: autocorrelation lags must be in 0..",
              kQualityMaxLag);
  KSZ_EXPECTS(cfg.ssim_window >= 1 && cfg.ssim_step >= 1, "quality: SSIM window and step must be >= 1");
  KSZ_EXPECTS(!(cfg.fill_threshold <= 0), "quality: fill threshold must be > 0");

  const auto t0 = std::chrono::steady_clock::now();
  impl::FieldPair<T, Mem> f{orig, dec, mask, cfg.fill_threshold};
  QualityResult q;
  q.elements = n;
  if (n == 0) return q;

  // Shift for the second moments: one original value from the middle (when
  // compared, else 0). The CUDA pass reads it on the device and reports it.
  double shift = 0;
  impl::P1Acc r1;
  bool specialized = false;
#if defined(KSZ_HAVE_CUDA)
  const cuda_spec::MetricsFields<T> cuda_fields{orig.data(), dec.data(), mask.extent(0) ? mask.data() : nullptr, n,
                                                cfg.fill_threshold};
  const cuda_spec::MetricsShape cuda_shape{shape.n[0], shape.n[1], shape.n[2], shape.rank};
  if constexpr (std::is_same<Space, Kokkos::Cuda>::value)
    specialized = cuda_spec::metrics_pattern1_shift_at<T>(space, cuda_fields, n / 2, r1, shift);
#endif
  if (!specialized) {
    // On `space` and waiting for it alone (the plain deep_copy fences every
    // backend twice).
    auto mid = Kokkos::subview(orig, std::make_pair(n / 2, n / 2 + 1));
    T hx;
    Kokkos::deep_copy(space, Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&hx, 1), mid);
    space.fence();
    const double x = double(hx);
    shift = impl::FieldPair<T, Mem>::finite(x) && std::fabs(x) < cfg.fill_threshold ? x : 0.0;
    Kokkos::parallel_reduce("ksz::metrics::pattern1", Kokkos::RangePolicy<Space>(space, 0, n),
                            impl::Pattern1<T, Mem>{f, shift}, r1);
  }
  q.compared = r1.cnt;
  q.excluded = r1.excl;
  q.dec_nonfinite = r1.decbad;
  if (q.compared == 0) {
    q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return q;
  }
  const double cn = double(r1.cnt);
  q.min_err = r1.min_e;
  q.max_err = r1.max_e;
  q.avg_err = r1.sum_e / cn;
  q.max_abs_err = r1.max_abs;
  q.max_abs_err_index = r1.imax;
  q.avg_abs_err = r1.sum_abs / cn;
  q.pwr_compared = r1.npwr;
  if (r1.npwr) {
    q.min_pwr_err = r1.min_p;
    q.max_pwr_err = r1.max_p;
    q.avg_pwr_err = r1.sum_p / double(r1.npwr);
  }
  q.mse = r1.sum_e2 / cn;
  q.rmse = std::sqrt(q.mse);
  q.orig_min = r1.min_a;
  q.orig_max = r1.max_a;
  q.dec_min = r1.min_b;
  q.dec_max = r1.max_b;
  q.orig_range = q.orig_max - q.orig_min;
  q.dec_range = q.dec_max - q.dec_min;
  q.nrmse = q.orig_range > 0 ? q.rmse / q.orig_range : (q.mse > 0 ? HUGE_VAL : 0.0);
  const double ma = r1.sa / cn, mb = r1.sb / cn;
  const double va = std::max(0.0, r1.saa / cn - ma * ma), vb = std::max(0.0, r1.sbb / cn - mb * mb);
  const double cov = r1.sab / cn - ma * mb;
  q.pearson = (va > 0 && vb > 0) ? cov / std::sqrt(va * vb) : (va == vb ? 1.0 : 0.0);
  q.psnr = q.mse > 0 ? 20 * std::log10(q.orig_range) - 10 * std::log10(q.mse) : HUGE_VAL;
  q.snr = q.mse > 0 ? 10 * std::log10(va / q.mse) : HUGE_VAL;

  // PDFs over [min, max] of the error and of the point-wise relative error.
  if (cfg.pdf) {
    const int nb = cfg.pdf_bins;
    q.err_pdf_lo = q.min_err;
    q.err_pdf_hi = q.max_err;
    q.pwr_pdf_lo = q.min_pwr_err;
    q.pwr_pdf_hi = q.max_pwr_err;
    const double lo_e = q.min_err, lo_p = q.min_pwr_err;
    const double se = q.max_err > q.min_err ? nb / (q.max_err - q.min_err) : 0.0;
    const double sp = q.max_pwr_err > q.min_pwr_err ? nb / (q.max_pwr_err - q.min_pwr_err) : 0.0;
    Kokkos::View<std::uint64_t*, Mem> hist("ksz::metrics::pdf", 2 * std::size_t(nb));
    bool special_pdf = false;
#if defined(KSZ_HAVE_CUDA)
    if constexpr (std::is_same<Space, Kokkos::Cuda>::value)
      special_pdf = cuda_spec::metrics_pdf<T>(space, cuda_fields, {nb, lo_e, se, lo_p, sp}, hist.data());
#endif
    using Policy = Kokkos::TeamPolicy<Space>;
    using Member = typename Policy::member_type;
    using Scratch = Kokkos::View<std::uint32_t*, typename Space::scratch_memory_space,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    constexpr std::uint64_t slice = std::uint64_t(1) << 16;  // keeps team counts inside uint32
    Policy policy(space, static_cast<int>((n + slice - 1) / slice), Kokkos::AUTO);
    policy.set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(2 * std::size_t(nb))));
    if (!special_pdf)
      Kokkos::parallel_for(
        "ksz::metrics::pdf", policy, KOKKOS_LAMBDA(const Member& team) {
          Scratch local(team.team_scratch(0), 2 * nb);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 2 * nb), [&](const int k) { local(k) = 0; });
          team.team_barrier();
          const std::uint64_t begin = static_cast<std::uint64_t>(team.league_rank()) * slice;
          const std::uint64_t end = begin + slice < n ? begin + slice : n;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, begin, end), [&](const std::uint64_t i) {
            if (!f.valid(i)) return;
            const double x = double(f.a(i)), e = double(f.b(i)) - x;
            // (v - lo) * scale is a subtract then a multiply: nothing to contract
            // into an FMA, so bins agree across backends.
            int be = int((e - lo_e) * se);
            be = be < nb ? be : nb - 1;
            Kokkos::atomic_add(&local(be), std::uint32_t(1));
            if (x != 0) {
              int bp = int((::fabs(e) / ::fabs(x) - lo_p) * sp);
              bp = bp < nb ? bp : nb - 1;
              Kokkos::atomic_add(&local(nb + bp), std::uint32_t(1));
            }
          });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 2 * nb), [&](const int k) {
            if (local(k)) Kokkos::atomic_add(&hist(k), static_cast<std::uint64_t>(local(k)));
          });
        });
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), hist);
    q.err_pdf.resize(nb);
    q.pwr_pdf.resize(nb);
    for (int k = 0; k < nb; ++k) {
      q.err_pdf[k] = double(h(k)) / cn;
      q.pwr_pdf[k] = r1.npwr ? double(h(nb + k)) / double(r1.npwr) : 0.0;
    }
  }

  if (cfg.stencil) {
    impl::P2Acc r2;
    bool special2 = false;
#if defined(KSZ_HAVE_CUDA)
    if constexpr (std::is_same<Space, Kokkos::Cuda>::value)
      special2 = cuda_spec::metrics_pattern2<T>(space, cuda_fields, cuda_shape, cfg.autocorr_lags, q.avg_err, r2);
#endif
    if (!special2) {
      impl::Pattern2<T, Mem> p2{f, shape.n[0], shape.n[1], shape.n[2], shape.rank, cfg.autocorr_lags, q.avg_err};
      Kokkos::parallel_reduce("ksz::metrics::pattern2", Kokkos::RangePolicy<Space>(space, 0, n), p2, r2);
    }
    q.has_stencil = true;
    q.stencil_points = r2.pts;
    if (r2.pts) {
      const double pn = double(r2.pts);
      q.der1_max = r2.d1max;
      q.der1_avg = r2.d1sum / pn;
      q.der2_max = r2.d2max;
      q.der2_avg = r2.d2sum / pn;
      q.div_max = r2.dvmax;
      q.div_avg = r2.dvsum / pn;
      q.lap_max = r2.lpmax;
      q.lap_avg = r2.lpsum / pn;
    }
    const double var_e = q.mse - q.avg_err * q.avg_err;
    q.autocorr.assign(cfg.autocorr_lags, 0.0);
    for (int k = 0; k < cfg.autocorr_lags; ++k)
      if (r2.acn[k] && var_e > 0) q.autocorr[k] = r2.acf[k] / double(r2.acn[k]) / var_e;
  }

  if (cfg.ssim) {
    const std::uint64_t w = std::uint64_t(cfg.ssim_window), st = std::uint64_t(cfg.ssim_step);
    const std::uint64_t w0 = std::min(w, shape.n[0]), w1 = std::min(w, shape.n[1]), w2 = std::min(w, shape.n[2]);
    const std::uint64_t nw0 = (shape.n[0] - w0) / st + 1, nw1 = (shape.n[1] - w1) / st + 1,
                        nw2 = (shape.n[2] - w2) / st + 1;
    const std::uint64_t nseg = (nw0 + impl::kSsimSegment - 1) / impl::kSsimSegment;
    // Constants of Wang et al. with L the original's value range (1 when constant).
    const double L = q.orig_range > 0 ? q.orig_range : 1.0;
    const double c1 = (0.01 * L) * (0.01 * L), c2 = (0.03 * L) * (0.03 * L);
    impl::P3Acc r3;
    bool special3 = false;
#if defined(KSZ_HAVE_CUDA)
    if constexpr (std::is_same<Space, Kokkos::Cuda>::value)
      special3 = cuda_spec::metrics_pattern3<T>(space, cuda_fields, cuda_shape,
                                                cuda_spec::SsimParams{w0, w1, w2, st, shift, c1, c2}, r3);
#endif
    if (!special3) {
      impl::Pattern3<T, Mem> p3{f, shape.n[0], shape.n[1], w0, w1, w2, nw0, nw1, nseg, st, shift, c1, c2};
      Kokkos::parallel_reduce("ksz::metrics::pattern3", Kokkos::RangePolicy<Space>(space, 0, nseg * nw1 * nw2), p3,
                              r3);
    }
    q.has_ssim = true;
    q.ssim_windows = r3.windows;
    if (r3.windows) {
      q.ssim = r3.sum / double(r3.windows);
      q.ssim_min = r3.min;
    }
  }
  space.fence();
  q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return q;
}

}  // namespace ksz::metrics
