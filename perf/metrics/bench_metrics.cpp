// Quality engine throughput, data resident in the backend's memory:
// fused pattern 1, the full set (patterns 1-3), each pattern alone, and the
// Kokkos Kernels metric-oriented baseline (moZC) over the same pattern-1 metrics.
//   bench_metrics [--dims 512,512,512] [--reps 5] [--backend cuda] [--kind turbulent]
//                 [--window 8] [--step 1] [--json out.json]
// GB/s are over the bytes of both arrays (2 * n * 4). Median over reps, after a warm-up.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "portable/generate/field.hpp"
#include "portable/metrics/baseline_kk.hpp"
#include "portable/metrics/metrics.hpp"
#include "src/api/ksz.hpp"

namespace ksz_bench {  // named: nvcc refuses extended lambdas in some unnamed-namespace contexts

using namespace ksz;

struct Args {
  std::vector<std::uint64_t> dims{512, 512, 512};
  int reps = 5, window = 8, step = 1;
  std::string backend = "default", kind = "turbulent", json;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dims") {
      a.dims.clear();
      std::size_t p = 0;
      while (p < v.size()) {
        auto q = v.find(',', p);
        a.dims.push_back(std::stoull(v.substr(p, q - p)));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else if (k == "--reps") a.reps = std::stoi(v);
    else if (k == "--backend") a.backend = v;
    else if (k == "--kind") a.kind = v;
    else if (k == "--window") a.window = std::stoi(v);
    else if (k == "--step") a.step = std::stoi(v);
    else if (k == "--json") a.json = v;
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_median(const Args& a, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < a.reps + 1; ++r) {  // first rep is warm-up
    const auto t0 = std::chrono::steady_clock::now();
    f();  // assess() and the baseline return host results: they end synchronized (no device-wide fence here)
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r) t.push_back(s);
  }
  return median(t);
}

template <class Space>
int bench(const Space& space, const Args& a) {
  using Mem = typename Space::memory_space;
  Dims d;
  d.rank = int(a.dims.size());
  for (std::size_t i = 0; i < a.dims.size(); ++i) d.n[i] = a.dims[i];
  const Shape3 s = effective_shape(d);
  const std::uint64_t n = d.count();
  generate::FieldSpec spec{a.kind == "smooth" ? generate::Kind::Smooth : generate::Kind::Turbulent, 1, s.n[0],
                           s.n[1], s.n[2]};
  Kokkos::View<float*, Mem> orig("orig", n), dec("dec", n);
  generate::fill<Space, float>(space, spec, orig);
  // A reconstruction with a bounded, deterministic error (hashed, ~1e-4 of unit range).
  Kokkos::parallel_for(
      "perturb", Kokkos::RangePolicy<Space>(space, 0, n), KOKKOS_LAMBDA(const std::uint64_t i) {
        std::uint64_t h = i * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        dec(i) = orig(i) + float(double(h % 2001) * 1e-7 - 1e-4);
      });
  space.fence();
  Kokkos::View<const float*, Mem> ca = orig, cb = dec;
  const double bytes = 2.0 * double(n) * sizeof(float);
  QualityConfig p1;
  p1.stencil = p1.ssim = false;
  QualityConfig p1s = p1;  // the single fused reduction, no PDF pass
  p1s.pdf = false;
  QualityConfig full;
  full.ssim_window = a.window;
  full.ssim_step = a.step;
  QualityConfig p2 = full, p3 = full;
  p2.ssim = false;
  p3.stencil = false;

  QualityResult q;
  const double t_p1 = time_median(a, [&] { q = metrics::assess<Space, float>(space, ca, cb, s, p1); });
  const double t_p1s = time_median(a, [&] { metrics::assess<Space, float>(space, ca, cb, s, p1s); });
  const double t_full = time_median(a, [&] { q = metrics::assess<Space, float>(space, ca, cb, s, full); });
  const double t_p12 = time_median(a, [&] { metrics::assess<Space, float>(space, ca, cb, s, p2); });
  const double t_p13 = time_median(a, [&] { metrics::assess<Space, float>(space, ca, cb, s, p3); });
  double t_kk = 0;
#ifdef KSZ_HAVE_KOKKOSKERNELS
  QualityResult kb;
  t_kk = time_median(a, [&] { kb = metrics::assess_baseline<Space, float>(space, ca, cb); });
#endif
  const char* be = Space::name();
  std::printf("ksz %s, backend %s, concurrency %d, %s float32 (%s)\n", version_string().c_str(), be,
              int(Space().concurrency()), d.str().c_str(), a.kind.c_str());
  auto row = [&](const char* what, double t) {
    std::printf("  %-34s %10.3f ms  %8.2f GB/s\n", what, t * 1e3, t > 0 ? bytes / t / 1e9 : 0.0);
  };
  row("pattern 1 fused (+PDF pass)", t_p1);
  row("pattern 1 scalars (one read)", t_p1s);
  row("patterns 1+2 (stencils, autocorr)", t_p12);
  row("patterns 1+3 (SSIM)", t_p13);
  row("full set (patterns 1-3)", t_full);
  if (t_kk > 0) {
    row("Kokkos Kernels baseline (pattern 1)", t_kk);
    std::printf("  fused pattern 1 vs baseline: %.2fx\n", t_kk / t_p1);
  }
  std::printf("  PSNR %.3f dB  max abs err %.4g  SSIM %.6f  autocorr(1) %.4f\n", q.psnr, q.max_abs_err, q.ssim,
              q.autocorr.empty() ? 0.0 : q.autocorr[0]);
  if (!a.json.empty()) {
    std::ofstream o(a.json);
    o << "{\"backend\": \"" << be << "\", \"concurrency\": " << Space().concurrency() << ", \"dims\": \""
      << d.str() << "\", \"bytes_both\": " << bytes << ", \"ssim_window\": " << a.window
      << ", \"ssim_step\": " << a.step << ",\n \"seconds\": {\"pattern1\": " << t_p1 << ", \"pattern1_scalars\": " << t_p1s << ", \"pattern12\": " << t_p12
      << ", \"pattern13\": " << t_p13 << ", \"full\": " << t_full << ", \"kk_baseline\": " << t_kk
      << "},\n \"gbps\": {\"pattern1\": " << bytes / t_p1 / 1e9 << ", \"pattern1_scalars\": " << bytes / t_p1s / 1e9 << ", \"full\": " << bytes / t_full / 1e9
      << ", \"kk_baseline\": " << (t_kk > 0 ? bytes / t_kk / 1e9 : 0) << "},\n \"fused_vs_baseline\": "
      << (t_kk > 0 ? t_kk / t_p1 : 0) << ", \"psnr\": " << q.psnr << ", \"ssim\": " << q.ssim << "}\n";
  }
  return 0;
}

}  // namespace ksz_bench

int main(int argc, char** argv) {
  using namespace ksz_bench;
  Kokkos::ScopeGuard guard(argc, argv);
  const Args a = parse(argc, argv);
  try {
    return with_backend(parse_backend(a.backend), [&](auto space) { return bench(space, a); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_metrics: %s\n", e.what());
    return 1;
  }
}
