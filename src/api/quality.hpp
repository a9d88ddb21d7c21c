// ksz quality assessment (after cuZ-Checker, ../shared/papers/cuz-checker.txt):
// distortion metrics of a reconstruction against its original, computed where
// the data lives. Host buffers go through assess_quality(); device-resident
// Views go straight to ksz::metrics::assess() in portable/metrics/metrics.hpp.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "src/core/backends.hpp"
#include "src/core/types.hpp"

namespace ksz {

constexpr int kQualityMaxLag = 16;  // autocorrelation lags are 1..autocorr_lags <= this

struct QualityConfig {
  bool stencil = true;   // pattern 2: derivative, divergence, Laplacian errors + error autocorrelation
  bool ssim = true;      // pattern 3: SSIM over sliding windows
  bool pdf = true;       // error and point-wise relative error PDFs (the one extra read of pattern 1)
  int pdf_bins = 64;     // bins of those PDFs
  int autocorr_lags = 10;  // lags 1..autocorr_lags of the error autocorrelation
  int ssim_window = 8;     // window extent per dimension (clamped to the field's extent)
  int ssim_step = 1;       // distance between neighbouring window origins
  // Elements whose original is non-finite or |orig| >= fill_threshold are
  // excluded from every metric (fill values); so are masked-out elements.
  double fill_threshold = std::numeric_limits<double>::infinity();
};

// Error is e = dec - orig. Averages are over the compared elements.
struct QualityResult {
  std::uint64_t elements = 0;       // in the field
  std::uint64_t compared = 0;       // not excluded
  std::uint64_t excluded = 0;       // fill values, non-finite originals, mask
  std::uint64_t dec_nonfinite = 0;  // finite original, non-finite reconstruction (also excluded)

  // pattern 1 (one fused reduction, then one histogram pass for the PDFs)
  double min_err = 0, max_err = 0, avg_err = 0;
  double max_abs_err = 0, avg_abs_err = 0;
  std::uint64_t max_abs_err_index = 0;  // smallest index attaining max_abs_err
  std::uint64_t pwr_compared = 0;       // compared elements with orig != 0
  double min_pwr_err = 0, max_pwr_err = 0, avg_pwr_err = 0;  // |e| / |orig|
  double mse = 0, rmse = 0, nrmse = 0;
  double snr = 0, psnr = 0;  // dB; +inf when the reconstruction is exact
  double orig_min = 0, orig_max = 0, dec_min = 0, dec_max = 0;
  double orig_range = 0, dec_range = 0;
  double pearson = 1;  // correlation of orig and dec (1 when both constant and equal)
  double err_pdf_lo = 0, err_pdf_hi = 0;  // PDFs: fraction of compared elements per equal-width bin
  std::vector<double> err_pdf;
  double pwr_pdf_lo = 0, pwr_pdf_hi = 0;
  std::vector<double> pwr_pdf;

  // pattern 2 (stencils, interior points whose whole 7-point stencil is compared)
  bool has_stencil = false;
  std::uint64_t stencil_points = 0;
  double der1_max = 0, der1_avg = 0;  // |grad e|, central differences
  double der2_max = 0, der2_avg = 0;  // |(d2e/dx2, d2e/dy2, d2e/dz2)|
  double div_max = 0, div_avg = 0;    // |div e| = |sum_d de/dx_d|
  double lap_max = 0, lap_avg = 0;    // |Laplacian e|
  std::vector<double> autocorr;       // lag k at [k-1]; 0 when the error has no variance

  // pattern 3
  bool has_ssim = false;
  std::uint64_t ssim_windows = 0;  // windows without excluded elements
  double ssim = 1, ssim_min = 1;

  double seconds = 0;  // device time of the assessment (data already resident), fenced
};

// Runs the engine on `backend` over host buffers (dims.count() elements of dtype,
// fastest dimension first). `mask` (optional, dims.count() bytes): 0 excludes.
// Throws InvalidInput for bad arguments.
QualityResult assess_quality(const void* orig, const void* dec, DType dtype, const Dims& dims,
                             const QualityConfig& cfg, Backend backend = Backend::Default,
                             const std::uint8_t* mask = nullptr);

// The metric-oriented baseline (cuZ-Checker's moZC): one Kokkos Kernels call
// (or one Kokkos reduction where BLAS has none) per metric, pattern-1 metrics
// only, no PDFs, no fill handling (every original must be finite and nonzero
// for the point-wise relative error). Throws InvalidInput when ksz was built
// without Kokkos Kernels (see has_kokkos_kernels()).
QualityResult assess_quality_baseline(const void* orig, const void* dec, DType dtype, const Dims& dims,
                                      Backend backend = Backend::Default);
bool has_kokkos_kernels();

// The same metrics as a JSON object (non-finite numbers as null) and a human table.
std::string quality_json(const QualityResult& q);
std::string quality_table(const QualityResult& q);

}  // namespace ksz
