// Quality engine (portable/metrics): every metric against a plain double CPU
// reference, analytic cases, fill-value exclusion, agreement between
// backends and with the Kokkos Kernels baseline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "src/api/quality.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"

namespace {

using namespace ksz;
using ksz::test::dims_of;

// Straightforward definitions, one loop per metric, no reuse: the reference.
template <class T>
QualityResult reference(const std::vector<T>& av, const std::vector<T>& bv, const Dims& dims,
                        const QualityConfig& cfg, const std::vector<std::uint8_t>* mask = nullptr) {
  const Shape3 s = effective_shape(dims);
  const std::uint64_t n = s.count();
  auto valid = [&](std::uint64_t i) {
    if (mask && !(*mask)[i]) return false;
    const double x = av[i], y = bv[i];
    return std::isfinite(x) && std::fabs(x) < cfg.fill_threshold && std::isfinite(y);
  };
  auto err = [&](std::uint64_t i) { return double(bv[i]) - double(av[i]); };
  QualityResult q;
  q.elements = n;
  double sa = 0, sb = 0, se = 0, sae = 0, se2 = 0, sp = 0;
  q.min_err = q.min_pwr_err = q.orig_min = q.dec_min = HUGE_VAL;
  q.max_err = q.max_pwr_err = q.orig_max = q.dec_max = -HUGE_VAL;
  q.max_abs_err = -1;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (!valid(i)) {
      ++q.excluded;
      continue;
    }
    const double x = av[i], y = bv[i], e = y - x;
    ++q.compared;
    q.min_err = std::min(q.min_err, e);
    q.max_err = std::max(q.max_err, e);
    if (std::fabs(e) > q.max_abs_err) {
      q.max_abs_err = std::fabs(e);
      q.max_abs_err_index = i;
    }
    se += e;
    sae += std::fabs(e);
    se2 += e * e;
    if (x != 0) {
      const double p = std::fabs(e) / std::fabs(x);
      ++q.pwr_compared;
      q.min_pwr_err = std::min(q.min_pwr_err, p);
      q.max_pwr_err = std::max(q.max_pwr_err, p);
      sp += p;
    }
    q.orig_min = std::min(q.orig_min, x);
    q.orig_max = std::max(q.orig_max, x);
    q.dec_min = std::min(q.dec_min, y);
    q.dec_max = std::max(q.dec_max, y);
    sa += x;
    sb += y;
  }
  const double cn = double(q.compared);
  q.avg_err = se / cn;
  q.avg_abs_err = sae / cn;
  q.avg_pwr_err = sp / double(q.pwr_compared);
  q.mse = se2 / cn;
  q.rmse = std::sqrt(q.mse);
  q.orig_range = q.orig_max - q.orig_min;
  q.dec_range = q.dec_max - q.dec_min;
  q.nrmse = q.rmse / q.orig_range;
  const double ma = sa / cn, mb = sb / cn;
  double va = 0, vb = 0, cov = 0;  // two-pass: no cancellation in the reference
  for (std::uint64_t i = 0; i < n; ++i)
    if (valid(i)) {
      va += (av[i] - ma) * (av[i] - ma);
      vb += (bv[i] - mb) * (bv[i] - mb);
      cov += (av[i] - ma) * (bv[i] - mb);
    }
  q.pearson = cov / std::sqrt(va * vb);
  q.psnr = 20 * std::log10(q.orig_range) - 10 * std::log10(q.mse);
  q.snr = 10 * std::log10(va / cn / q.mse);
  const int nb = cfg.pdf_bins;
  q.err_pdf.assign(nb, 0);
  q.pwr_pdf.assign(nb, 0);
  const double sce = nb / (q.max_err - q.min_err), scp = nb / (q.max_pwr_err - q.min_pwr_err);
  for (std::uint64_t i = 0; i < n; ++i)
    if (valid(i)) {
      const double e = err(i);
      q.err_pdf[std::min(nb - 1, int((e - q.min_err) * sce))] += 1 / cn;
      if (av[i] != 0)
        q.pwr_pdf[std::min(nb - 1, int((std::fabs(e) / std::fabs(double(av[i])) - q.min_pwr_err) * scp))] +=
            1 / double(q.pwr_compared);
    }
  // Pattern 2.
  const std::uint64_t nn[3] = {s.n[0], s.n[1], s.n[2]}, st[3] = {1, s.n[0], s.n[0] * s.n[1]};
  double var_e = 0;
  for (std::uint64_t i = 0; i < n; ++i)
    if (valid(i)) var_e += (err(i) - q.avg_err) * (err(i) - q.avg_err);
  var_e /= cn;
  std::vector<double> acf(cfg.autocorr_lags, 0), acn(cfg.autocorr_lags, 0);
  double d1s = 0, d2s = 0, dvs = 0, lps = 0;
  for (std::uint64_t z = 0; z < nn[2]; ++z)
    for (std::uint64_t y = 0; y < nn[1]; ++y)
      for (std::uint64_t x = 0; x < nn[0]; ++x) {
        const std::uint64_t c[3] = {x, y, z}, i = x + nn[0] * (y + nn[1] * z);
        if (!valid(i)) continue;
        for (int k = 1; k <= cfg.autocorr_lags; ++k)
          for (int d = 0; d < s.rank; ++d)
            if (c[d] + k < nn[d] && valid(i + k * st[d])) {
              acf[k - 1] += (err(i) - q.avg_err) * (err(i + k * st[d]) - q.avg_err);
              acn[k - 1] += 1;
            }
        bool interior = true;
        for (int d = 0; d < s.rank; ++d)
          interior = interior && c[d] > 0 && c[d] + 1 < nn[d] && valid(i - st[d]) && valid(i + st[d]);
        if (!interior) continue;
        double g2 = 0, h2 = 0, dv = 0, lp = 0;
        for (int d = 0; d < s.rank; ++d) {
          const double g = (err(i + st[d]) - err(i - st[d])) / 2;
          const double h = err(i + st[d]) - 2 * err(i) + err(i - st[d]);
          g2 += g * g;
          h2 += h * h;
          dv += g;
          lp += h;
        }
        ++q.stencil_points;
        q.der1_max = std::max(q.der1_max, std::sqrt(g2));
        q.der2_max = std::max(q.der2_max, std::sqrt(h2));
        q.div_max = std::max(q.div_max, std::fabs(dv));
        q.lap_max = std::max(q.lap_max, std::fabs(lp));
        d1s += std::sqrt(g2);
        d2s += std::sqrt(h2);
        dvs += std::fabs(dv);
        lps += std::fabs(lp);
      }
  q.has_stencil = true;
  q.der1_avg = d1s / double(q.stencil_points);
  q.der2_avg = d2s / double(q.stencil_points);
  q.div_avg = dvs / double(q.stencil_points);
  q.lap_avg = lps / double(q.stencil_points);
  q.autocorr.resize(cfg.autocorr_lags);
  for (int k = 0; k < cfg.autocorr_lags; ++k) q.autocorr[k] = var_e > 0 ? acf[k] / acn[k] / var_e : 0;
  // Pattern 3: every window computed from scratch, two-pass moments.
  const std::uint64_t w[3] = {std::min<std::uint64_t>(cfg.ssim_window, nn[0]),
                              std::min<std::uint64_t>(cfg.ssim_window, nn[1]),
                              std::min<std::uint64_t>(cfg.ssim_window, nn[2])};
  const double L = q.orig_range > 0 ? q.orig_range : 1, c1 = 1e-4 * L * L, c2 = 9e-4 * L * L;
  double ssum = 0;
  q.ssim_min = HUGE_VAL;
  for (std::uint64_t z0 = 0; z0 + w[2] <= nn[2]; z0 += cfg.ssim_step)
    for (std::uint64_t y0 = 0; y0 + w[1] <= nn[1]; y0 += cfg.ssim_step)
      for (std::uint64_t x0 = 0; x0 + w[0] <= nn[0]; x0 += cfg.ssim_step) {
        std::vector<std::uint64_t> idx;
        bool ok = true;
        for (std::uint64_t z = z0; z < z0 + w[2]; ++z)
          for (std::uint64_t y = y0; y < y0 + w[1]; ++y)
            for (std::uint64_t x = x0; x < x0 + w[0]; ++x) {
              const std::uint64_t i = x + nn[0] * (y + nn[1] * z);
              ok = ok && valid(i);
              idx.push_back(i);
            }
        if (!ok) continue;
        double mA = 0, mB = 0;
        for (auto i : idx) mA += av[i], mB += bv[i];
        mA /= idx.size();
        mB /= idx.size();
        double vA = 0, vB = 0, cv = 0;
        for (auto i : idx) {
          vA += (av[i] - mA) * (av[i] - mA);
          vB += (bv[i] - mB) * (bv[i] - mB);
          cv += (av[i] - mA) * (bv[i] - mB);
        }
        vA /= idx.size();
        vB /= idx.size();
        cv /= idx.size();
        const double v = ((2 * mA * mB + c1) * (2 * cv + c2)) / ((mA * mA + mB * mB + c1) * (vA + vB + c2));
        ssum += v;
        q.ssim_min = std::min(q.ssim_min, v);
        ++q.ssim_windows;
      }
  q.has_ssim = true;
  q.ssim = ssum / double(q.ssim_windows);
  return q;
}

::testing::AssertionResult close(const char* what, double got, double want, double rel = 1e-9) {
  if (got == want || std::fabs(got - want) <= rel * std::max(std::fabs(got), std::fabs(want)) + 1e-300)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": got " << got << ", want " << want << " (rel "
                                       << std::fabs(got - want) / std::max(std::fabs(got), std::fabs(want)) << ")";
}

// Pattern-1 scalars; PDFs bin-exact (same formula on integers counts).
void expect_pattern1(const QualityResult& g, const QualityResult& w, double rel = 1e-9, bool pdfs = true) {
  EXPECT_EQ(g.compared, w.compared);
  EXPECT_EQ(g.excluded, w.excluded);
  EXPECT_EQ(g.max_abs_err_index, w.max_abs_err_index);
  EXPECT_TRUE(close("min_err", g.min_err, w.min_err, rel));
  EXPECT_TRUE(close("max_err", g.max_err, w.max_err, rel));
  EXPECT_TRUE(close("avg_err", g.avg_err, w.avg_err, rel));
  EXPECT_TRUE(close("max_abs_err", g.max_abs_err, w.max_abs_err, rel));
  EXPECT_TRUE(close("avg_abs_err", g.avg_abs_err, w.avg_abs_err, rel));
  EXPECT_TRUE(close("min_pwr_err", g.min_pwr_err, w.min_pwr_err, rel));
  EXPECT_TRUE(close("max_pwr_err", g.max_pwr_err, w.max_pwr_err, rel));
  EXPECT_TRUE(close("avg_pwr_err", g.avg_pwr_err, w.avg_pwr_err, rel));
  EXPECT_TRUE(close("mse", g.mse, w.mse, rel));
  EXPECT_TRUE(close("rmse", g.rmse, w.rmse, rel));
  EXPECT_TRUE(close("nrmse", g.nrmse, w.nrmse, rel));
  EXPECT_TRUE(close("snr", g.snr, w.snr, rel));
  EXPECT_TRUE(close("psnr", g.psnr, w.psnr, rel));
  EXPECT_TRUE(close("orig_min", g.orig_min, w.orig_min, rel));
  EXPECT_TRUE(close("orig_max", g.orig_max, w.orig_max, rel));
  EXPECT_TRUE(close("dec_min", g.dec_min, w.dec_min, rel));
  EXPECT_TRUE(close("dec_max", g.dec_max, w.dec_max, rel));
  EXPECT_TRUE(close("pearson", g.pearson, w.pearson, rel));
  if (!pdfs) return;
  ASSERT_EQ(g.err_pdf.size(), w.err_pdf.size());
  for (std::size_t k = 0; k < g.err_pdf.size(); ++k) {
    EXPECT_TRUE(close("err_pdf", g.err_pdf[k], w.err_pdf[k], 1e-12)) << "bin " << k;
    EXPECT_TRUE(close("pwr_pdf", g.pwr_pdf[k], w.pwr_pdf[k], 1e-12)) << "bin " << k;
  }
}

void expect_all(const QualityResult& g, const QualityResult& w, double rel = 1e-9) {
  expect_pattern1(g, w, rel);
  EXPECT_EQ(g.stencil_points, w.stencil_points);
  EXPECT_TRUE(close("der1_max", g.der1_max, w.der1_max, rel));
  EXPECT_TRUE(close("der1_avg", g.der1_avg, w.der1_avg, rel));
  EXPECT_TRUE(close("der2_max", g.der2_max, w.der2_max, rel));
  EXPECT_TRUE(close("der2_avg", g.der2_avg, w.der2_avg, rel));
  EXPECT_TRUE(close("div_max", g.div_max, w.div_max, rel));
  EXPECT_TRUE(close("div_avg", g.div_avg, w.div_avg, rel));
  EXPECT_TRUE(close("lap_max", g.lap_max, w.lap_max, rel));
  EXPECT_TRUE(close("lap_avg", g.lap_avg, w.lap_avg, rel));
  ASSERT_EQ(g.autocorr.size(), w.autocorr.size());
  for (std::size_t k = 0; k < g.autocorr.size(); ++k)
    EXPECT_TRUE(close("autocorr", g.autocorr[k], w.autocorr[k], rel)) << "lag " << k + 1;
  EXPECT_EQ(g.ssim_windows, w.ssim_windows);
  EXPECT_TRUE(close("ssim", g.ssim, w.ssim, rel));
  EXPECT_TRUE(close("ssim_min", g.ssim_min, w.ssim_min, rel));
}

// An original field and a reconstruction with small, spatially correlated error.
template <class T>
std::pair<std::vector<T>, std::vector<T>> pair_of(const Dims& d, double amp, std::uint32_t seed = 3) {
  auto a = ksz::test::make_field<T>(ksz::test::Pattern::Noisy, d, seed);
  std::vector<T> b(a.size());
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> u(-amp, amp);
  double prev = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    prev = 0.6 * prev + u(rng);
    b[i] = T(double(a[i]) + prev);
  }
  return {a, b};
}

template <class Space>
class Metrics : public ::testing::Test {};
TYPED_TEST_SUITE(Metrics, ksz::test::ExecSpaces, ksz::test::ExecSpaceName);

TYPED_TEST(Metrics, MatchesReferenceEveryRankAndType) {
  const Backend be = ksz::test::backend_of<TypeParam>();
  for (const auto& e : {std::vector<std::uint64_t>{3000}, {41, 29}, {19, 17, 13}, {9, 7, 6, 3}}) {
    const Dims d = dims_of(e);
    QualityConfig cfg;
    cfg.ssim_window = 5;
    {
      auto [a, b] = pair_of<float>(d, 1e-3);
      SCOPED_TRACE("f32 " + d.str());
      expect_all(assess_quality(a.data(), b.data(), DType::F32, d, cfg, be), reference(a, b, d, cfg));
    }
    {
      auto [a, b] = pair_of<double>(d, 1e-6);
      SCOPED_TRACE("f64 " + d.str());
      expect_all(assess_quality(a.data(), b.data(), DType::F64, d, cfg, be), reference(a, b, d, cfg));
    }
  }
}

TYPED_TEST(Metrics, SsimWindowAndStepConfigurable) {
  const Backend be = ksz::test::backend_of<TypeParam>();
  const Dims d = dims_of({70, 23, 11});
  auto [a, b] = pair_of<float>(d, 5e-2);
  for (auto [w, s] : {std::pair{8, 1}, {4, 3}, {3, 5}, {16, 2}}) {
    QualityConfig cfg;
    cfg.ssim_window = w;
    cfg.ssim_step = s;
    cfg.autocorr_lags = 16;
    SCOPED_TRACE("window " + std::to_string(w) + " step " + std::to_string(s));
    expect_all(assess_quality(a.data(), b.data(), DType::F32, d, cfg, be), reference(a, b, d, cfg));
  }
}

TYPED_TEST(Metrics, IdenticalArrays) {
  const Backend be = ksz::test::backend_of<TypeParam>();
  const Dims d = dims_of({33, 20, 9});
  auto a = ksz::test::make_field<float>(ksz::test::Pattern::Noisy, d);
  const QualityResult q = assess_quality(a.data(), a.data(), DType::F32, d, QualityConfig{}, be);
  EXPECT_EQ(q.compared, d.count());
  EXPECT_EQ(q.max_abs_err, 0.0);
  EXPECT_EQ(q.mse, 0.0);
  EXPECT_EQ(q.min_err, 0.0);
  EXPECT_EQ(q.max_err, 0.0);
  EXPECT_TRUE(std::isinf(q.psnr) && q.psnr > 0);
  EXPECT_TRUE(std::isinf(q.snr) && q.snr > 0);
  EXPECT_TRUE(close("pearson", q.pearson, 1.0, 1e-12));
  EXPECT_EQ(q.ssim, 1.0);  // identical moment sums: exactly 1
  EXPECT_EQ(q.ssim_min, 1.0);
  EXPECT_EQ(q.der1_max, 0.0);
  EXPECT_EQ(q.lap_max, 0.0);
  EXPECT_EQ(q.err_pdf[0], 1.0);  // all mass in one bin
  const std::string js = quality_json(q);
  EXPECT_NE(js.find("\"psnr_db\": null"), std::string::npos) << js;
  EXPECT_NE(js.find("\"exact\": true"), std::string::npos);
  EXPECT_NE(quality_table(q).find("inf (reconstruction is exact)"), std::string::npos);
}

TYPED_TEST(Metrics, ConstantOffsetAndKnownNoise) {
  const Backend be = ksz::test::backend_of<TypeParam>();
  const Dims d = dims_of({64, 32, 16});
  auto a = ksz::test::make_field<double>(ksz::test::Pattern::Smooth, d);
  for (auto& x : a) x = std::round(x * 1024) / 1024;  // so that x + 0.25 - x == 0.25 exactly
  std::vector<double> b(a);
  for (auto& x : b) x += 0.25;  // exact in binary
  QualityResult q = assess_quality(a.data(), b.data(), DType::F64, d, QualityConfig{}, be);
  EXPECT_EQ(q.min_err, 0.25);
  EXPECT_EQ(q.max_err, 0.25);
  EXPECT_TRUE(close("avg", q.avg_err, 0.25, 1e-12));
  EXPECT_TRUE(close("mse", q.mse, 0.0625, 1e-12));
  EXPECT_TRUE(close("psnr", q.psnr, 20 * std::log10(q.orig_range / 0.25), 1e-12));
  EXPECT_TRUE(close("pearson", q.pearson, 1.0, 1e-12));
  EXPECT_EQ(q.der1_max, 0.0);  // a constant error has no derivatives
  EXPECT_EQ(q.lap_max, 0.0);
  for (double r : q.autocorr) EXPECT_EQ(r, 0.0);  // and no variance
  EXPECT_EQ(q.dec_min, q.orig_min + 0.25);
  // Uniform white noise in [-h, h]: MSE h^2/3, autocorrelation ~0 at every lag.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1e-3, 1e-3);
  for (std::size_t i = 0; i < a.size(); ++i) b[i] = a[i] + u(rng);
  q = assess_quality(a.data(), b.data(), DType::F64, d, QualityConfig{}, be);
  EXPECT_NEAR(q.mse, 1e-6 / 3, 0.02 * 1e-6 / 3);
  EXPECT_NEAR(q.avg_err, 0.0, 2e-5);
  EXPECT_LE(q.max_abs_err, 1e-3);
  for (double r : q.autocorr) EXPECT_NEAR(r, 0.0, 0.03);
  for (double p : q.err_pdf) EXPECT_NEAR(p, 1.0 / 64, 0.2 / 64);  // flat PDF
}

TYPED_TEST(Metrics, FillValuesNanAndMaskExcluded) {
  const Backend be = ksz::test::backend_of<TypeParam>();
  const Dims d = dims_of({40, 30, 7});
  auto [a, b] = pair_of<float>(d, 1e-3);
  for (std::size_t i = 0; i < a.size(); i += 997) a[i] = 1e20f;
  for (std::size_t i = 5; i < a.size(); i += 1301) a[i] = std::nanf("");
  a[17] = -std::numeric_limits<float>::infinity();
  b[23] = std::numeric_limits<float>::infinity();  // a reconstruction gone wrong is counted, not averaged
  QualityConfig cfg;
  cfg.fill_threshold = 1e19;
  cfg.ssim_window = 3;
  const QualityResult q = assess_quality(a.data(), b.data(), DType::F32, d, cfg, be);
  EXPECT_EQ(q.dec_nonfinite, 1u);
  EXPECT_GT(q.excluded, a.size() / 997);
  EXPECT_GT(q.ssim_windows, 0u);
  EXPECT_GT(q.stencil_points, 0u);
  EXPECT_TRUE(std::isfinite(q.mse) && std::isfinite(q.ssim) && std::isfinite(q.psnr));
  expect_all(q, reference(a, b, d, cfg));
  std::vector<std::uint8_t> mask(a.size(), 1);
  for (std::size_t i = 0; i < mask.size(); i += 501) mask[i] = 0;
  expect_all(assess_quality(a.data(), b.data(), DType::F32, d, cfg, be, mask.data()), reference(a, b, d, cfg, &mask));
}

TEST(Metrics, BackendsAgree) {
  const Dims d = dims_of({50, 21, 17});
  auto [a, b] = pair_of<float>(d, 2e-3);
  const QualityResult ref = assess_quality(a.data(), b.data(), DType::F32, d, QualityConfig{}, Backend::Serial);
  for (Backend be : available_backends()) {
    SCOPED_TRACE(to_string(be));
    expect_all(assess_quality(a.data(), b.data(), DType::F32, d, QualityConfig{}, be), ref);
  }
}

TEST(Metrics, KokkosKernelsBaselineAgrees) {
  if (!has_kokkos_kernels()) GTEST_SKIP() << "built without Kokkos Kernels";
  const Dims d = dims_of({50, 21, 17});
  auto [a, b] = pair_of<float>(d, 2e-3);
  for (Backend be : available_backends()) {
    SCOPED_TRACE(to_string(be));
    const QualityResult fused = assess_quality(a.data(), b.data(), DType::F32, d, QualityConfig{}, be);
    const QualityResult base = assess_quality_baseline(a.data(), b.data(), DType::F32, d, be);
    expect_pattern1(base, fused, 1e-9, false);
  }
}

TEST(Metrics, BadArgumentsRejected) {
  const Dims d = dims_of({10, 10});
  std::vector<float> a(100, 1.f);
  QualityConfig cfg;
  cfg.autocorr_lags = kQualityMaxLag + 1;
  EXPECT_THROW(assess_quality(a.data(), a.data(), DType::F32, d, cfg), InvalidInput);
  cfg = QualityConfig{};
  cfg.ssim_window = 0;
  EXPECT_THROW(assess_quality(a.data(), a.data(), DType::F32, d, cfg), InvalidInput);
  cfg = QualityConfig{};
  cfg.pdf_bins = 0;
  EXPECT_THROW(assess_quality(a.data(), a.data(), DType::F32, d, cfg), InvalidInput);
  EXPECT_THROW(assess_quality(nullptr, a.data(), DType::F32, d, QualityConfig{}), InvalidInput);
  // Everything excluded: a sane, empty result rather than NaN soup.
  std::vector<float> fill(100, 1e30f);
  cfg = QualityConfig{};
  cfg.fill_threshold = 1e20;
  const QualityResult q = assess_quality(fill.data(), fill.data(), DType::F32, d, cfg);
  EXPECT_EQ(q.compared, 0u);
  EXPECT_EQ(q.excluded, 100u);
}

}  // namespace
