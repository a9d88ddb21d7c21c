// The quality engine's CUDA reductions (patterns 1-3) against the portable
// functors on the GPU. Pattern 1: counts, min/max and the max-error index identical, sums equal to
// rounding; f32 and f64, with and without mask and fill value, sizes around
// the vector width and pointers off every 16-byte boundary (the vector path's
// head and tail, and the scalar path when the arrays' offsets differ).
// Runs on CUDA builds only (a GPU is needed).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/common/backends.hpp"
#include "cuda_specializations/metrics_cuda.hpp"
#include "portable/metrics/metrics.hpp"
#include "src/api/quality.hpp"

namespace ksz::test {
namespace {

#if defined(KSZ_HAVE_CUDA)

using metrics::impl::P1Acc;
using Mem = Kokkos::CudaSpace;

struct Case {
  std::uint64_t n;
  int off_a, off_b;  // elements from the allocations' (aligned) start
  bool mask;
  double fill;
};

template <class T>
struct Data {
  Kokkos::View<T*, Mem> a, b;
  Kokkos::View<std::uint8_t*, Mem> m;
};

// Host data: a smooth-ish original with zeros (no point-wise relative
// error), fill values, NaN/Inf in both, and several elements sharing the
// largest error (the index tie-break).
template <class T>
Data<T> make(const Case& c, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const std::uint64_t na = c.n + c.off_a, nb = c.n + c.off_b;
  std::vector<T> ha(na), hb(nb);
  std::vector<std::uint8_t> hm(c.n, 1);
  for (std::uint64_t i = 0; i < c.n; ++i) {
    const double x = 10.0 * std::sin(0.01 * double(i)) + u(rng);
    ha[c.off_a + i] = i % 17 == 5 ? T(0) : T(x);
    hb[c.off_b + i] = T(double(ha[c.off_a + i]) + 1e-3 * u(rng));
    if (c.mask && i % 13 == 7) hm[i] = 0;
  }
  if (c.n > 4) {
    ha[c.off_a + c.n / 2 + 1] = std::numeric_limits<T>::quiet_NaN();
    hb[c.off_b + c.n / 3] = std::numeric_limits<T>::infinity();
    if (std::isfinite(c.fill)) ha[c.off_a + c.n / 4] = T(2 * c.fill);
    if (std::isfinite(c.fill)) ha[c.off_a + c.n - 2] = T(-c.fill);
    for (std::uint64_t i : {c.n - 1, c.n / 5, c.n / 7 + 1}) {  // equal largest errors
      ha[c.off_a + i] = T(4);
      hb[c.off_b + i] = T(4.5);
    }
  }
  Data<T> d{Kokkos::View<T*, Mem>("a", na), Kokkos::View<T*, Mem>("b", nb), Kokkos::View<std::uint8_t*, Mem>("m", c.n)};
  Kokkos::deep_copy(d.a, Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(ha.data(), na));
  Kokkos::deep_copy(d.b, Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(hb.data(), nb));
  Kokkos::deep_copy(d.m, Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(hm.data(), c.n));
  return d;
}

void expect_same(const P1Acc& p, const P1Acc& s, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(p.cnt, s.cnt);
  EXPECT_EQ(p.excl, s.excl);
  EXPECT_EQ(p.decbad, s.decbad);
  EXPECT_EQ(p.npwr, s.npwr);
  EXPECT_EQ(p.imax, s.imax);
  EXPECT_EQ(p.max_abs, s.max_abs);
  EXPECT_EQ(p.min_e, s.min_e);
  EXPECT_EQ(p.max_e, s.max_e);
  EXPECT_EQ(p.min_p, s.min_p);
  EXPECT_EQ(p.max_p, s.max_p);
  EXPECT_EQ(p.min_a, s.min_a);
  EXPECT_EQ(p.max_a, s.max_a);
  EXPECT_EQ(p.min_b, s.min_b);
  EXPECT_EQ(p.max_b, s.max_b);
  // Sums: another summation order, so equal to rounding, relative to the
  // sum of the terms' magnitudes (Cauchy-Schwarz bounds it for the signed ones).
  const double cn = double(p.cnt), rel = 1e-12;
  auto near = [&](const char* name, double x, double y, double mag) {
    EXPECT_LE(std::fabs(x - y), rel * mag + 1e-300) << name << ": " << x << " vs " << y;
  };
  near("sum_e", p.sum_e, s.sum_e, p.sum_abs);
  near("sum_abs", p.sum_abs, s.sum_abs, p.sum_abs);
  near("sum_e2", p.sum_e2, s.sum_e2, p.sum_e2);
  near("sum_p", p.sum_p, s.sum_p, p.sum_p);
  near("saa", p.saa, s.saa, p.saa);
  near("sbb", p.sbb, s.sbb, p.sbb);
  near("sa", p.sa, s.sa, std::sqrt(p.saa * cn));
  near("sb", p.sb, s.sb, std::sqrt(p.sbb * cn));
  near("sab", p.sab, s.sab, std::sqrt(p.saa * p.sbb));
}

template <class T>
void run_cases() {
  SpecGuard guard;
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {1, 0, 0, false, inf},        {1, 1, 1, true, inf},          {3, 0, 0, false, inf},
      {3, 1, 1, true, 5.0},         {1023, 0, 0, false, inf},      {1023, 1, 1, true, 12.0},
      {1023, 1, 0, true, 12.0},     {1023, 3, 2, false, inf},      {4097, 2, 2, false, 11.5},
      {100003, 0, 0, true, 10.5},   {100003, 3, 3, false, inf},    {1 << 20, 0, 0, false, inf},
      {(1 << 20) + 5, 1, 1, true, 9.75},
  };
  Kokkos::Cuda space;
  std::uint32_t seed = 3;
  for (const Case& c : cases) {
    const std::string what = std::string(sizeof(T) == 4 ? "f32" : "f64") + " n=" + std::to_string(c.n) +
                             " off=" + std::to_string(c.off_a) + "," + std::to_string(c.off_b) +
                             (c.mask ? " mask" : "") + " fill=" + std::to_string(c.fill);
    const Data<T> d = make<T>(c, seed++);
    auto a = Kokkos::subview(d.a, std::make_pair(std::uint64_t(c.off_a), std::uint64_t(c.off_a) + c.n));
    auto b = Kokkos::subview(d.b, std::make_pair(std::uint64_t(c.off_b), std::uint64_t(c.off_b) + c.n));
    Kokkos::View<const T*, Mem> ca = a, cb = b;
    Kokkos::View<const std::uint8_t*, Mem> cm;
    if (c.mask) cm = d.m;
    const double shift = 1.25;

    P1Acc portable;
    metrics::impl::FieldPair<T, Mem> f{ca, cb, cm, c.fill};
    Kokkos::parallel_reduce("test::pattern1", Kokkos::RangePolicy<Kokkos::Cuda>(space, 0, c.n),
                            metrics::impl::Pattern1<T, Mem>{f, shift}, portable);

    const cuda_spec::MetricsFields<T> mf{ca.data(), cb.data(), c.mask ? cm.data() : nullptr, c.n, c.fill};
    P1Acc special, again;
    ASSERT_TRUE(cuda_spec::metrics_pattern1<T>(space, mf, shift, special)) << what;
    ASSERT_TRUE(cuda_spec::metrics_pattern1<T>(space, mf, shift, again)) << what;
    expect_same(portable, special, what);
    EXPECT_EQ(std::memcmp(&special, &again, sizeof(P1Acc)), 0) << what << ": repeated run differs";

    cuda_spec::set_enabled(false);
    P1Acc off;
    EXPECT_FALSE(cuda_spec::metrics_pattern1<T>(space, mf, shift, off)) << what << ": ran while disabled";
    cuda_spec::set_enabled(true);
  }
}

TEST(CudaMetrics, Pattern1SameAsPortableF32) { run_cases<float>(); }
TEST(CudaMetrics, Pattern1SameAsPortableF64) { run_cases<double>(); }

// The float32 kernel filters each group of 4 elements in float against
// thresholds its warp shares, and only candidates go the exact way. Data that
// probe the filters: the largest |error| tied within one group across lanes
// (smallest index on lane 0's last element) and again later; relative errors
// whose largest values differ by ~2^-22, the filter's own margin; a run of
// exact reconstructions (error 0 ties the extreme 0 until a nonzero error);
// zeros, subnormal and huge originals, an error that overflows float; and, in
// the second case, no zero error at all, so the smallest relative error is a
// near-tie as well. Every extreme and count must equal the portable one.
TEST(CudaMetrics, Pattern1FloatFilterEdges) {
  Kokkos::Cuda space;
  const std::uint64_t n = (3u << 20) + 7;
  for (int variant = 0; variant < 2; ++variant)
    for (int off : {0, 1}) {
      const std::string what = "variant " + std::to_string(variant) + " off " + std::to_string(off);
      std::mt19937_64 rng(41 + variant);
      std::uniform_real_distribution<double> u(0.5, 1.0);
      std::vector<float> ha(n + off), hb(n + off);
      for (std::uint64_t i = 0; i < n; ++i) {
        const float x = float(5.0 + std::sin(0.001 * double(i)) + 0.1 * u(rng));
        ha[off + i] = x;
        hb[off + i] = variant == 0 && i >= 100000 && i < 200000 ? x : float(x + 1e-3 * u(rng) * (i % 2 ? 1 : -1));
        if (variant == 0 && i % 101 == 3) ha[off + i] = 0.f;
      }
      auto put = [&](std::uint64_t i, float x, float y) {
        ha[off + i] = x;
        hb[off + i] = y;
      };
      std::uint64_t imax = 0;
      if (variant == 0) {
        // |error| 1000, the largest, four times: lanes 0 and 1 of one group
        // (index 2000003 first), another lane of it, and a later chunk.
        for (std::uint64_t i : {2000003u, 2000004u, 2000068u, 2600000u}) put(i, 4.f, i % 2 ? -996.f : 1004.f);
        imax = 2000003;
        // The largest relative errors (~999) at originals one ulp apart.
        const float x0 = 1e-3f;
        put(1500000, x0, 1.f);
        put(1500001, std::nextafter(x0, 1.f), 1.f);
        put(1500100, std::nextafter(x0, 0.f), 1.f);
      } else {
        put(400001, 1e-40f, 1e-3f);  // subnormal original: the largest relative error
        put(777777, 1e38f, -3e38f);  // |x| > 2^126, an error beyond FLT_MAX: the largest |error|
        imax = 777777;
        put(777778, 3e38f, std::nextafter(3e38f, 0.f));  // relative error ~6.8e-8
        // The smallest relative errors (~7.3e-8): one ulp of error at originals one ulp apart.
        for (std::uint64_t k = 0; k < 3; ++k) {
          const float x = std::nextafter(6.5f, k == 1 ? 7.f : 6.f);
          put(2200000 + 37 * k, x, std::nextafter(x, 7.f));
        }
      }
      Kokkos::View<float*, Mem> da("a", n + off), db("b", n + off);
      Kokkos::deep_copy(da, Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(ha.data(), n + off));
      Kokkos::deep_copy(db, Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(hb.data(), n + off));
      Kokkos::View<const float*, Mem> ca = Kokkos::subview(da, std::make_pair(std::uint64_t(off), n + off));
      Kokkos::View<const float*, Mem> cb = Kokkos::subview(db, std::make_pair(std::uint64_t(off), n + off));
      const double inf = std::numeric_limits<double>::infinity(), shift = 5.0;
      P1Acc portable, special;
      metrics::impl::FieldPair<float, Mem> f{ca, cb, {}, inf};
      Kokkos::parallel_reduce("test::pattern1", Kokkos::RangePolicy<Kokkos::Cuda>(space, 0, n),
                              metrics::impl::Pattern1<float, Mem>{f, shift}, portable);
      const cuda_spec::MetricsFields<float> mf{ca.data(), cb.data(), nullptr, n, inf};
      ASSERT_TRUE(cuda_spec::metrics_pattern1<float>(space, mf, shift, special)) << what;
      expect_same(portable, special, what);
      EXPECT_EQ(portable.imax, imax) << what;
    }
}

// The shift read on the device (assess() takes this entry): the portable rule
// (orig[at] when compared, else 0) and then the very pass an explicit shift gives.
template <class T>
void shift_cases() {
  Kokkos::Cuda space;
  const double inf = std::numeric_limits<double>::infinity();
  for (const T mid : {T(3.5), T(-2.25), std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity()})
    for (const double fill : {inf, 3.0}) {
      const Case c{100003, 1, 1, false, fill};
      Data<T> d = make<T>(c, 5);
      const std::uint64_t at = c.n / 2;
      Kokkos::deep_copy(Kokkos::subview(d.a, c.off_a + at), mid);
      Kokkos::View<const T*, Mem> a = Kokkos::subview(d.a, std::make_pair(std::uint64_t(1), c.n + 1));
      Kokkos::View<const T*, Mem> b = Kokkos::subview(d.b, std::make_pair(std::uint64_t(1), c.n + 1));
      const cuda_spec::MetricsFields<T> mf{a.data(), b.data(), nullptr, c.n, fill};
      const double want = std::isfinite(double(mid)) && std::fabs(double(mid)) < fill ? double(mid) : 0.0;
      P1Acc on_device, given;
      double shift = -1;
      ASSERT_TRUE(cuda_spec::metrics_pattern1_shift_at<T>(space, mf, at, on_device, shift));
      EXPECT_EQ(shift, want) << "mid " << double(mid) << " fill " << fill;
      ASSERT_TRUE(cuda_spec::metrics_pattern1<T>(space, mf, want, given));
      EXPECT_EQ(std::memcmp(&on_device, &given, sizeof(P1Acc)), 0) << "mid " << double(mid) << " fill " << fill;
    }
}

TEST(CudaMetrics, ShiftOnDeviceF32) { shift_cases<float>(); }
TEST(CudaMetrics, ShiftOnDeviceF64) { shift_cases<double>(); }

// The PDF pass (vectors of both arrays, then head and tail scalars) against
// the portable pass, through assess() on 1D fields: every case of run_cases
// (sizes around the vector width, offsets, masks, fill values).
template <class T>
void pdf_cases() {
  SpecGuard guard;
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {{3, 1, 1, true, 5.0},         {1023, 0, 0, false, inf}, {1023, 1, 1, true, 12.0},
                        {1023, 1, 0, true, 12.0},     {4097, 2, 2, false, 11.5}, {100003, 3, 3, false, inf},
                        {(1 << 20) + 5, 1, 1, true, 9.75}};
  Kokkos::Cuda space;
  std::uint32_t seed = 17;
  for (const Case& c : cases) {
    const std::string what = std::string(sizeof(T) == 4 ? "f32" : "f64") + " n=" + std::to_string(c.n) +
                             " off=" + std::to_string(c.off_a) + "," + std::to_string(c.off_b);
    const Data<T> d = make<T>(c, seed++);
    Kokkos::View<const T*, Mem> a = Kokkos::subview(d.a, std::make_pair(std::uint64_t(c.off_a), c.off_a + c.n));
    Kokkos::View<const T*, Mem> b = Kokkos::subview(d.b, std::make_pair(std::uint64_t(c.off_b), c.off_b + c.n));
    Kokkos::View<const std::uint8_t*, Mem> m;
    if (c.mask) m = d.m;
    Shape3 s;
    s.n[0] = c.n;
    s.n[1] = s.n[2] = 1;
    s.rank = 1;
    QualityConfig cfg;
    cfg.fill_threshold = c.fill;
    cfg.stencil = cfg.ssim = false;
    cfg.pdf_bins = 257;
    cuda_spec::set_enabled(false);
    const QualityResult p = metrics::assess<Kokkos::Cuda, T>(space, a, b, s, cfg, m);
    cuda_spec::set_enabled(true);
    const QualityResult q = metrics::assess<Kokkos::Cuda, T>(space, a, b, s, cfg, m);
    ASSERT_EQ(p.err_pdf.size(), q.err_pdf.size()) << what;
    ASSERT_EQ(p.pwr_pdf.size(), q.pwr_pdf.size()) << what;
    EXPECT_EQ(p.err_pdf, q.err_pdf) << what;
    EXPECT_EQ(p.pwr_pdf, q.pwr_pdf) << what;
  }
}

TEST(CudaMetrics, PdfSameAsPortableF32) { pdf_cases<float>(); }
TEST(CudaMetrics, PdfSameAsPortableF64) { pdf_cases<double>(); }

// Through the public engine: assess() takes the specialization and reports
// what the portable path reports.
TEST(CudaMetrics, AssessDispatchSameAsPortable) {
  SpecGuard guard;
  const Case c{(1 << 18) + 3, 1, 1, true, 12.0};
  const Data<float> d = make<float>(c, 99);
  Kokkos::View<const float*, Mem> a = Kokkos::subview(d.a, std::make_pair(std::uint64_t(1), c.n + 1));
  Kokkos::View<const float*, Mem> b = Kokkos::subview(d.b, std::make_pair(std::uint64_t(1), c.n + 1));
  Shape3 s;
  s.n[0] = 64;
  s.n[1] = 64;
  s.n[2] = 64;
  s.rank = 3;
  // 64^3 elements of the (n + 1)-long arrays.
  a = Kokkos::subview(a, std::make_pair(std::uint64_t(0), s.count()));
  b = Kokkos::subview(b, std::make_pair(std::uint64_t(0), s.count()));
  Kokkos::View<const std::uint8_t*, Mem> m = Kokkos::subview(d.m, std::make_pair(std::uint64_t(0), s.count()));
  QualityConfig cfg;
  cfg.fill_threshold = c.fill;
  cfg.stencil = cfg.ssim = false;
  Kokkos::Cuda space;
  cuda_spec::set_enabled(false);
  const QualityResult p = metrics::assess<Kokkos::Cuda, float>(space, a, b, s, cfg, m);
  cuda_spec::set_enabled(true);
  const QualityResult q = metrics::assess<Kokkos::Cuda, float>(space, a, b, s, cfg, m);
  EXPECT_EQ(p.compared, q.compared);
  EXPECT_EQ(p.excluded, q.excluded);
  EXPECT_EQ(p.dec_nonfinite, q.dec_nonfinite);
  EXPECT_EQ(p.pwr_compared, q.pwr_compared);
  EXPECT_EQ(p.max_abs_err_index, q.max_abs_err_index);
  EXPECT_EQ(p.max_abs_err, q.max_abs_err);
  EXPECT_EQ(p.min_err, q.min_err);
  EXPECT_EQ(p.max_err, q.max_err);
  EXPECT_EQ(p.orig_min, q.orig_min);
  EXPECT_EQ(p.dec_max, q.dec_max);
  EXPECT_EQ(p.max_pwr_err, q.max_pwr_err);
  EXPECT_NEAR(p.mse, q.mse, 1e-12 * p.mse);
  EXPECT_NEAR(p.psnr, q.psnr, 1e-9);
  EXPECT_NEAR(p.pearson, q.pearson, 1e-12);
  EXPECT_NEAR(p.avg_abs_err, q.avg_abs_err, 1e-12 * p.avg_abs_err);
  EXPECT_EQ(p.err_pdf.size(), q.err_pdf.size());
  for (std::size_t k = 0; k < p.err_pdf.size() && k < q.err_pdf.size(); ++k) {
    EXPECT_EQ(p.err_pdf[k], q.err_pdf[k]) << "bin " << k;  // same edges from identical min/max
    EXPECT_EQ(p.pwr_pdf[k], q.pwr_pdf[k]) << "bin " << k;
  }
}

// Patterns 2 and 3 on small fields of every rank: the specializations against
// the portable functors run on the GPU. Integer results (points, pair counts,
// windows) identical, maxima identical (the same values per point), sums equal
// to rounding. SSIM: each window's moments are the same sums in another order,
// and the cancellation in va = E[a^2] - E[a]^2 amplifies that rounding, so the
// mean and the minimum are held to 1e-9 (seen: ~1e-15 on these data).
struct GridCase {
  std::uint64_t n0, n1, n2;
  int rank;
  bool mask;
  double fill;
};

constexpr GridCase kGrids[] = {
    {37, 29, 23, 3, true, 12.0},   {64, 64, 64, 3, false, 1e300}, {40, 33, 9, 3, false, 11.5},
    {300, 200, 1, 2, true, 12.0},  {5000, 1, 1, 1, true, 12.0},   {8, 8, 8, 3, true, 12.0},
    {3, 2, 2, 3, false, 1e300},
};

template <class T>
Data<T> make_grid(const GridCase& g, std::uint32_t seed) {
  const Case c{g.n0 * g.n1 * g.n2, 0, 0, g.mask, g.fill};
  return make<T>(c, seed);
}

template <class T>
void run_pattern2() {
  SpecGuard guard;
  Kokkos::Cuda space;
  std::uint32_t seed = 11;
  for (const GridCase& g : kGrids)
    for (int lags : {0, 3, 10, kQualityMaxLag}) {
      const std::string what = std::string(sizeof(T) == 4 ? "f32 " : "f64 ") + std::to_string(g.n0) + "x" +
                               std::to_string(g.n1) + "x" + std::to_string(g.n2) + " lags " + std::to_string(lags);
      const std::uint64_t n = g.n0 * g.n1 * g.n2;
      const Data<T> d = make_grid<T>(g, seed++);
      Kokkos::View<const T*, Mem> a = d.a, b = d.b;
      Kokkos::View<const std::uint8_t*, Mem> m;
      if (g.mask) m = d.m;
      const double mean = 3e-4;
      metrics::impl::FieldPair<T, Mem> f{a, b, m, g.fill};
      metrics::impl::P2Acc p, q;
      Kokkos::parallel_reduce("test::pattern2", Kokkos::RangePolicy<Kokkos::Cuda>(space, 0, n),
                              metrics::impl::Pattern2<T, Mem>{f, g.n0, g.n1, g.n2, g.rank, lags, mean}, p);
      const cuda_spec::MetricsFields<T> mf{a.data(), b.data(), g.mask ? m.data() : nullptr, n, g.fill};
      ASSERT_TRUE(cuda_spec::metrics_pattern2<T>(space, mf, {g.n0, g.n1, g.n2, g.rank}, lags, mean, q)) << what;
      SCOPED_TRACE(what);
      EXPECT_EQ(p.pts, q.pts);
      EXPECT_EQ(p.d1max, q.d1max);
      EXPECT_EQ(p.d2max, q.d2max);
      EXPECT_EQ(p.dvmax, q.dvmax);
      EXPECT_EQ(p.lpmax, q.lpmax);
      EXPECT_NEAR(p.d1sum, q.d1sum, 1e-12 * p.d1sum);
      EXPECT_NEAR(p.d2sum, q.d2sum, 1e-12 * p.d2sum);
      EXPECT_NEAR(p.dvsum, q.dvsum, 1e-12 * p.dvsum);
      EXPECT_NEAR(p.lpsum, q.lpsum, 1e-12 * p.lpsum);
      for (int k = 0; k < kQualityMaxLag; ++k) {
        EXPECT_EQ(p.acn[k], q.acn[k]) << "lag " << k + 1;
        // Terms bounded by the largest squared error (1e-3 scale, and the ties' 0.5).
        EXPECT_NEAR(p.acf[k], q.acf[k], 1e-12 * double(p.acn[k] + 1)) << "lag " << k + 1;
      }
      cuda_spec::set_enabled(false);
      EXPECT_FALSE(cuda_spec::metrics_pattern2<T>(space, mf, {g.n0, g.n1, g.n2, g.rank}, lags, mean, q));
      cuda_spec::set_enabled(true);
    }
}

template <class T>
void run_pattern3() {
  SpecGuard guard;
  Kokkos::Cuda space;
  std::uint32_t seed = 41;
  for (const GridCase& g : kGrids)
    for (std::uint64_t w : {1, 3, 8, 11}) {
      const std::string what = std::string(sizeof(T) == 4 ? "f32 " : "f64 ") + std::to_string(g.n0) + "x" +
                               std::to_string(g.n1) + "x" + std::to_string(g.n2) + " window " + std::to_string(w);
      const std::uint64_t n = g.n0 * g.n1 * g.n2;
      const Data<T> d = make_grid<T>(g, seed++);
      Kokkos::View<const T*, Mem> a = d.a, b = d.b;
      Kokkos::View<const std::uint8_t*, Mem> m;
      if (g.mask) m = d.m;
      const std::uint64_t w0 = std::min(w, g.n0), w1 = std::min(w, g.n1), w2 = std::min(w, g.n2);
      const std::uint64_t nw0 = g.n0 - w0 + 1, nw1 = g.n1 - w1 + 1, nw2 = g.n2 - w2 + 1;
      const std::uint64_t nseg = (nw0 + metrics::impl::kSsimSegment - 1) / metrics::impl::kSsimSegment;
      const double shift = 1.25, c1 = 4e-4, c2 = 3.6e-3;
      metrics::impl::FieldPair<T, Mem> f{a, b, m, g.fill};
      metrics::impl::P3Acc p, q;
      Kokkos::parallel_reduce(
          "test::pattern3", Kokkos::RangePolicy<Kokkos::Cuda>(space, 0, nseg * nw1 * nw2),
          metrics::impl::Pattern3<T, Mem>{f, g.n0, g.n1, w0, w1, w2, nw0, nw1, nseg, 1, shift, c1, c2}, p);
      const cuda_spec::MetricsFields<T> mf{a.data(), b.data(), g.mask ? m.data() : nullptr, n, g.fill};
      const cuda_spec::MetricsShape sh{g.n0, g.n1, g.n2, g.rank};
      ASSERT_TRUE(cuda_spec::metrics_pattern3<T>(space, mf, sh, {w0, w1, w2, 1, shift, c1, c2}, q)) << what;
      SCOPED_TRACE(what);
      EXPECT_EQ(p.windows, q.windows);
      if (p.windows) {
        EXPECT_NEAR(p.sum / double(p.windows), q.sum / double(q.windows), 1e-9);
        EXPECT_NEAR(p.min, q.min, 1e-9);
      }
      // Steps other than 1 are left to the portable path.
      EXPECT_FALSE(cuda_spec::metrics_pattern3<T>(space, mf, sh, {w0, w1, w2, 2, shift, c1, c2}, q));
    }
}

TEST(CudaMetrics, Pattern2SameAsPortableF32) { run_pattern2<float>(); }
TEST(CudaMetrics, Pattern2SameAsPortableF64) { run_pattern2<double>(); }
TEST(CudaMetrics, Pattern3SameAsPortableF32) { run_pattern3<float>(); }
TEST(CudaMetrics, Pattern3SameAsPortableF64) { run_pattern3<double>(); }

// The full set through assess(): specialized against portable (a 3D field
// with mask and fill, and a 2D one).
TEST(CudaMetrics, AssessFullSetSameAsPortable) {
  SpecGuard guard;
  Kokkos::Cuda space;
  for (const GridCase& g : {kGrids[0], kGrids[3]}) {
    const Data<float> d = make_grid<float>(g, 7);
    Kokkos::View<const float*, Mem> a = d.a, b = d.b;
    Kokkos::View<const std::uint8_t*, Mem> m = d.m;
    Shape3 s;
    s.n[0] = g.n0;
    s.n[1] = g.n1;
    s.n[2] = g.n2;
    s.rank = g.rank;
    QualityConfig cfg;
    cfg.fill_threshold = g.fill;
    cuda_spec::set_enabled(false);
    const QualityResult p = metrics::assess<Kokkos::Cuda, float>(space, a, b, s, cfg, m);
    cuda_spec::set_enabled(true);
    const QualityResult q = metrics::assess<Kokkos::Cuda, float>(space, a, b, s, cfg, m);
    ASSERT_TRUE(p.has_stencil && q.has_stencil && p.has_ssim && q.has_ssim);
    EXPECT_EQ(p.stencil_points, q.stencil_points);
    EXPECT_EQ(p.der1_max, q.der1_max);
    EXPECT_EQ(p.lap_max, q.lap_max);
    EXPECT_NEAR(p.der2_avg, q.der2_avg, 1e-12 * p.der2_avg);
    EXPECT_NEAR(p.div_avg, q.div_avg, 1e-12 * p.div_avg);
    ASSERT_EQ(p.autocorr.size(), q.autocorr.size());
    for (std::size_t k = 0; k < p.autocorr.size(); ++k) EXPECT_NEAR(p.autocorr[k], q.autocorr[k], 1e-9) << k;
    EXPECT_EQ(p.ssim_windows, q.ssim_windows);
    EXPECT_NEAR(p.ssim, q.ssim, 1e-9);
    EXPECT_NEAR(p.ssim_min, q.ssim_min, 1e-9);
  }
}

#else

TEST(CudaMetrics, Pattern1SameAsPortableF32) { GTEST_SKIP() << "no CUDA in this build"; }
TEST(CudaMetrics, Pattern2SameAsPortableF32) { GTEST_SKIP() << "no CUDA in this build"; }
TEST(CudaMetrics, Pattern3SameAsPortableF32) { GTEST_SKIP() << "no CUDA in this build"; }

#endif

}  // namespace
}  // namespace ksz::test
