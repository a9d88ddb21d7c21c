#include "src/api/quality.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "portable/metrics/baseline_kk.hpp"
#include "portable/metrics/metrics.hpp"

namespace ksz {
namespace {

template <class T>
using HostIn = Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class Space, class T>
QualityResult assess_on(const Space& space, const void* orig, const void* dec, const Shape3& s,
                        const QualityConfig& cfg, const std::uint8_t* mask) {
  using Mem = typename Space::memory_space;
  const std::uint64_t n = s.count();
  // Host memory spaces get the caller's buffers back without a copy.
  auto a = Kokkos::create_mirror_view_and_copy(Mem(), HostIn<T>(static_cast<const T*>(orig), n));
  auto b = Kokkos::create_mirror_view_and_copy(Mem(), HostIn<T>(static_cast<const T*>(dec), n));
  Kokkos::View<const std::uint8_t*, Mem> m;
  if (mask) m = Kokkos::create_mirror_view_and_copy(Mem(), HostIn<std::uint8_t>(mask, n));
  return metrics::assess<Space, T>(space, a, b, s, cfg, m);
}

void check_args(const void* orig, const void* dec, DType dtype, const Dims& dims) {
  KSZ_EXPECTS(orig && dec, "quality: null input");
  KSZ_EXPECTS(dtype == DType::F32 || dtype == DType::F64, "quality: dtype must be f32 or f64");
  KSZ_EXPECTS(dims.rank >= 1 && dims.rank <= 4 && dims.count() > 0, "quality: bad dims");
}

// JSON has no infinities or NaN: write them as null.
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string arr(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

}  // namespace

QualityResult assess_quality(const void* orig, const void* dec, DType dtype, const Dims& dims,
                             const QualityConfig& cfg, Backend backend, const std::uint8_t* mask) {
  check_args(orig, dec, dtype, dims);
  const Shape3 s = effective_shape(dims);
  return with_backend(backend, [&](auto space) {
    using Space = decltype(space);
    return dtype == DType::F64 ? assess_on<Space, double>(space, orig, dec, s, cfg, mask)
                               : assess_on<Space, float>(space, orig, dec, s, cfg, mask);
  });
}

bool has_kokkos_kernels() {
#ifdef KSZ_HAVE_KOKKOSKERNELS
  return true;
#else
  return false;
#endif
}

QualityResult assess_quality_baseline(const void* orig, const void* dec, DType dtype, const Dims& dims,
                                      Backend backend) {
  check_args(orig, dec, dtype, dims);
#ifdef KSZ_HAVE_KOKKOSKERNELS
  const std::uint64_t n = dims.count();
  return with_backend(backend, [&](auto space) {
    using Space = decltype(space);
    using Mem = typename Space::memory_space;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      auto a = Kokkos::create_mirror_view_and_copy(Mem(), HostIn<T>(static_cast<const T*>(orig), n));
      auto b = Kokkos::create_mirror_view_and_copy(Mem(), HostIn<T>(static_cast<const T*>(dec), n));
      return metrics::assess_baseline<Space, T>(space, a, b);
    };
    return dtype == DType::F64 ? run(double{}) : run(float{});
  });
#else
  (void)backend;
  throw InvalidInput("quality baseline: ksz was built without Kokkos Kernels");
#endif
}

std::string quality_json(const QualityResult& q) {
  std::ostringstream o;
  o << "{\n";
  o << "  \"elements\": " << q.elements << ", \"compared\": " << q.compared << ", \"excluded\": " << q.excluded
    << ", \"dec_nonfinite\": " << q.dec_nonfinite << ",\n";
  o << "  \"pattern1\": {\"min_err\": " << num(q.min_err) << ", \"max_err\": " << num(q.max_err)
    << ", \"avg_err\": " << num(q.avg_err) << ", \"max_abs_err\": " << num(q.max_abs_err)
    << ", \"max_abs_err_index\": " << q.max_abs_err_index << ", \"avg_abs_err\": " << num(q.avg_abs_err)
    << ",\n    \"pwr_compared\": " << q.pwr_compared << ", \"min_pwr_err\": " << num(q.min_pwr_err)
    << ", \"max_pwr_err\": " << num(q.max_pwr_err) << ", \"avg_pwr_err\": " << num(q.avg_pwr_err)
    << ",\n    \"mse\": " << num(q.mse) << ", \"rmse\": " << num(q.rmse) << ", \"nrmse\": " << num(q.nrmse)
    << ", \"snr_db\": " << num(q.snr) << ", \"psnr_db\": " << num(q.psnr)
    << ", \"exact\": " << (q.compared && q.mse == 0 ? "true" : "false")
    << ",\n    \"orig_min\": " << num(q.orig_min) << ", \"orig_max\": " << num(q.orig_max)
    << ", \"dec_min\": " << num(q.dec_min) << ", \"dec_max\": " << num(q.dec_max)
    << ", \"orig_range\": " << num(q.orig_range) << ", \"dec_range\": " << num(q.dec_range)
    << ", \"pearson\": " << num(q.pearson) << ",\n    \"err_pdf\": {\"lo\": " << num(q.err_pdf_lo)
    << ", \"hi\": " << num(q.err_pdf_hi) << ", \"fraction\": " << arr(q.err_pdf) << "},\n"
    << "    \"pwr_pdf\": {\"lo\": " << num(q.pwr_pdf_lo) << ", \"hi\": " << num(q.pwr_pdf_hi)
    << ", \"fraction\": " << arr(q.pwr_pdf) << "}}";
  if (q.has_stencil)
    o << ",\n  \"pattern2\": {\"points\": " << q.stencil_points << ", \"der1_max\": " << num(q.der1_max)
      << ", \"der1_avg\": " << num(q.der1_avg) << ", \"der2_max\": " << num(q.der2_max)
      << ", \"der2_avg\": " << num(q.der2_avg) << ", \"div_max\": " << num(q.div_max)
      << ", \"div_avg\": " << num(q.div_avg) << ", \"lap_max\": " << num(q.lap_max)
      << ", \"lap_avg\": " << num(q.lap_avg) << ",\n    \"autocorr\": " << arr(q.autocorr) << "}";
  if (q.has_ssim)
    o << ",\n  \"ssim\": {\"windows\": " << q.ssim_windows << ", \"mean\": " << num(q.ssim)
      << ", \"min\": " << num(q.ssim_min) << "}";
  o << ",\n  \"seconds\": " << num(q.seconds) << "\n}\n";
  return o.str();
}

std::string quality_table(const QualityResult& q) {
  char buf[256];
  std::string s;
  auto line = [&](const char* name, double v) {
    std::snprintf(buf, sizeof buf, "  %-26s %.6g\n", name, v);
    s += buf;
  };
  std::snprintf(buf, sizeof buf, "elements %llu  compared %llu  excluded %llu  (non-finite reconstruction %llu)\n",
                (unsigned long long)q.elements, (unsigned long long)q.compared, (unsigned long long)q.excluded,
                (unsigned long long)q.dec_nonfinite);
  s += buf;
  s += "pattern 1: global reductions\n";
  line("min error", q.min_err);
  line("max error", q.max_err);
  line("avg error", q.avg_err);
  line("max abs error", q.max_abs_err);
  std::snprintf(buf, sizeof buf, "  %-26s %llu\n", "  at index", (unsigned long long)q.max_abs_err_index);
  s += buf;
  line("avg abs error", q.avg_abs_err);
  line("min pw-rel error", q.min_pwr_err);
  line("max pw-rel error", q.max_pwr_err);
  line("avg pw-rel error", q.avg_pwr_err);
  line("MSE", q.mse);
  line("RMSE", q.rmse);
  line("NRMSE", q.nrmse);
  if (q.mse == 0 && q.compared) s += "  SNR, PSNR                  inf (reconstruction is exact)\n";
  else {
    line("SNR (dB)", q.snr);
    line("PSNR (dB)", q.psnr);
  }
  std::snprintf(buf, sizeof buf, "  %-26s [%.6g, %.6g] / [%.6g, %.6g]\n", "range orig / dec", q.orig_min, q.orig_max,
                q.dec_min, q.dec_max);
  s += buf;
  line("Pearson correlation", q.pearson);
  if (q.has_stencil) {
    std::snprintf(buf, sizeof buf, "pattern 2: stencils (%llu interior points)\n", (unsigned long long)q.stencil_points);
    s += buf;
    line("1st-derivative err max", q.der1_max);
    line("1st-derivative err avg", q.der1_avg);
    line("2nd-derivative err max", q.der2_max);
    line("2nd-derivative err avg", q.der2_avg);
    line("divergence err max", q.div_max);
    line("divergence err avg", q.div_avg);
    line("Laplacian err max", q.lap_max);
    line("Laplacian err avg", q.lap_avg);
    s += "  error autocorrelation     ";
    for (std::size_t k = 0; k < q.autocorr.size(); ++k) {
      std::snprintf(buf, sizeof buf, "%s%.3g", k ? " " : "", q.autocorr[k]);
      s += buf;
    }
    s += "  (lags 1..)\n";
  }
  if (q.has_ssim) {
    std::snprintf(buf, sizeof buf, "pattern 3: SSIM (%llu windows)\n", (unsigned long long)q.ssim_windows);
    s += buf;
    line("SSIM mean", q.ssim);
    line("SSIM min", q.ssim_min);
  }
  return s;
}

}  // namespace ksz
