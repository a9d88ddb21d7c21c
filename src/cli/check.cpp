#include "src/cli/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "src/api/quality.hpp"
#include "src/cli/io.hpp"

namespace ksz::cli {

struct CheckState {
  CLI::App* sub = nullptr;
  std::string a, b, dtype = "f32", json, svg, metrics = "all";
  std::vector<std::uint64_t> dims;
  QualityConfig cfg;
  bool baseline = false;
};

namespace {

// A bar chart as a standalone SVG (no plotting library needed): one bar per
// value, a zero line, the x range labelled at both ends.
std::string svg_bars(const std::string& title, const std::string& xlabel, const std::string& xlo,
                     const std::string& xhi, const std::vector<double>& v) {
  const double W = 640, H = 360, L = 60, R = 20, T = 40, B = 50;
  double lo = 0, hi = 0;
  for (double x : v)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  if (hi == lo) hi = lo + 1;
  auto ypix = [&](double y) { return T + (H - T - B) * (hi - y) / (hi - lo); };
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
                "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%g\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n",
                W, H, W / 2, title.c_str());
  s += buf;
  const double bw = (W - L - R) / double(std::max<std::size_t>(v.size(), 1));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) continue;
    const double y0 = ypix(0), y1 = ypix(v[i]);
    std::snprintf(buf, sizeof buf, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#3b6ea5\"/>\n",
                  L + i * bw + 0.1 * bw, std::min(y0, y1), 0.8 * bw, std::fabs(y1 - y0));
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%g\" y1=\"%.2f\" x2=\"%g\" y2=\"%.2f\" stroke=\"black\"/>\n"
                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n"
                "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.3g</text>\n"
                "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.3g</text>\n",
                L, ypix(0), W - R, ypix(0), L, T, L, H - B, L - 4, T + 4, hi, L - 4, H - B, lo);
  s += buf;
  std::snprintf(buf, sizeof buf,
                "<text x=\"%g\" y=\"%g\">%s</text>\n<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text>\n"
                "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n</svg>\n",
                L, H - B + 16, xlo.c_str(), W - R, H - B + 16, xhi.c_str(), W / 2, H - 12, xlabel.c_str());
  s += buf;
  return s;
}

std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

}  // namespace

bool CheckCommand::active() const { return m_state && m_state->sub && m_state->sub->parsed(); }

int CheckCommand::run(Backend backend) const {
  CheckState& st = *m_state;
  KSZ_EXPECTS(st.dtype == "f32" || st.dtype == "f64", "unknown dtype '", st.dtype, "' (f32, f64)");
  const DType t = st.dtype == "f64" ? DType::F64 : DType::F32;
  KSZ_EXPECTS(!st.dims.empty() && st.dims.size() <= 4, "give 1 to 4 extents, fastest-varying first");
  Dims d;
  d.rank = int(st.dims.size());
  for (std::size_t i = 0; i < st.dims.size(); ++i) {
    KSZ_EXPECTS(st.dims[i] >= 1, "extents must be at least 1");
    d.n[i] = st.dims[i];
  }
  QualityConfig cfg = st.cfg;
  // --metrics: a comma list of pattern1 (always computed), stencil|pattern2, ssim|pattern3, all.
  cfg.stencil = cfg.ssim = false;
  std::size_t p = 0;
  const std::string& m = st.metrics;
  while (p <= m.size()) {
    const std::size_t q = std::min(m.find(',', p), m.size());
    const std::string w = m.substr(p, q - p);
    if (w == "all") cfg.stencil = cfg.ssim = true;
    else if (w == "stencil" || w == "pattern2" || w == "autocorr" || w == "derivatives") cfg.stencil = true;
    else if (w == "ssim" || w == "pattern3") cfg.ssim = true;
    else KSZ_EXPECTS(w == "pattern1" || w.empty(), "unknown metric group '", w, "' (pattern1, stencil, ssim, all)");
    p = q + 1;
  }
  const std::size_t bytes = d.count() * dtype_size(t);
  const auto a = read_file(st.a), b = read_file(st.b);
  KSZ_EXPECTS(a.size() == bytes, "'", st.a, "' has ", a.size(), " bytes; ", d.str(), " ", to_string(t), " needs ",
              bytes);
  KSZ_EXPECTS(b.size() == bytes, "'", st.b, "' has ", b.size(), " bytes; ", d.str(), " ", to_string(t), " needs ",
              bytes);
  const QualityResult q = assess_quality(a.data(), b.data(), t, d, cfg, backend);
  std::printf("quality of '%s' against '%s' (%s %s) on %s\n", st.b.c_str(), st.a.c_str(), d.str().c_str(),
              to_string(t), to_string(resolve_backend(backend)));
  std::fputs(quality_table(q).c_str(), stdout);
  std::printf("assessment time %.3f ms (%.2f GB/s over both arrays)\n", q.seconds * 1e3,
              q.seconds > 0 ? 2.0 * double(bytes) / q.seconds / 1e9 : 0.0);
  if (st.baseline) {
    const QualityResult kb = assess_quality_baseline(a.data(), b.data(), t, d, backend);
    std::printf("Kokkos Kernels metric-oriented baseline (pattern 1 only): %.3f ms, PSNR %.6g, max abs err %.6g\n",
                kb.seconds * 1e3, kb.psnr, kb.max_abs_err);
  }
  if (!st.json.empty()) {
    const std::string js = quality_json(q);
    write_file_atomic(st.json, js.data(), js.size());
  }
  if (!st.svg.empty()) {
    const std::string pdf = svg_bars("error PDF (dec - orig)", "error", fmt(q.err_pdf_lo), fmt(q.err_pdf_hi), q.err_pdf);
    write_file_atomic(st.svg + "_err_pdf.svg", pdf.data(), pdf.size());
    if (q.has_stencil) {
      const std::string ac = svg_bars("error autocorrelation by lag", "lag", "1", std::to_string(q.autocorr.size()),
                                      q.autocorr);
      write_file_atomic(st.svg + "_autocorr.svg", ac.data(), ac.size());
    }
  }
  return 0;
}

CheckCommand register_check(CLI::App& app) {
  auto st = std::make_shared<CheckState>();
  auto* c = app.add_subcommand("check", "distortion metrics of a reconstruction (cuZ-Checker): table, JSON, SVG");
  st->sub = c;
  c->add_option("-a,--orig", st->a, "original raw array")->required();
  c->add_option("-b,--dec", st->b, "reconstructed raw array")->required();
  c->add_option("-t,--type", st->dtype, "f32 or f64")->capture_default_str();
  c->add_option("-d,--dims", st->dims, "extents, fastest-varying first: -d 512,512,512")->required()->delimiter(',');
  c->add_option("--metrics", st->metrics, "pattern1,stencil,ssim or all (pattern1 always runs)")
      ->capture_default_str();
  c->add_option("--json", st->json, "write every metric as JSON here");
  c->add_option("--svg", st->svg, "write PREFIX_err_pdf.svg and PREFIX_autocorr.svg");
  c->add_option("--fill", st->cfg.fill_threshold, "exclude elements with |orig| >= this (fill values)");
  c->add_option("--window", st->cfg.ssim_window, "SSIM window per side")->capture_default_str();
  c->add_option("--step", st->cfg.ssim_step, "SSIM window step")->capture_default_str();
  c->add_option("--lags", st->cfg.autocorr_lags, "autocorrelation lags 1..N (N <= 16)")->capture_default_str();
  c->add_option("--bins", st->cfg.pdf_bins, "PDF bins")->capture_default_str();
  c->add_flag("--baseline", st->baseline, "also time the Kokkos Kernels metric-oriented baseline");
  return CheckCommand{st};
}

}  // namespace ksz::cli
