#include "src/cli/quality.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "src/core/split_threads.hpp"

namespace ksz::cli {
namespace {
// PSNR and NRMSE from the range and the MSE.
Quality finish(Quality q) {
  q.value_range = q.compared ? q.value_max - q.value_min : 0;
  q.psnr = q.mse > 0 ? 20 * std::log10(q.value_range) - 10 * std::log10(q.mse)
                     : std::numeric_limits<double>::infinity();
  q.nrmse = q.value_range > 0 ? std::sqrt(q.mse) / q.value_range : 0;
  return q;
}

template <class T>
Quality assess_t(const T* a, const T* b, std::uint64_t n, double bound) {
  Quality q;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sse = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    if (!std::isfinite(x)) {
      const bool same = std::isnan(x) ? std::isnan(y) : std::memcmp(&a[i], &b[i], sizeof(T)) == 0;
      q.nonfinite_mismatch += same ? 0 : 1;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    const double e = std::fabs(x - y);
    if (!(e <= bound)) ++q.over_bound;
    if (!(e <= q.max_abs_error)) q.max_abs_error = e;  // NaN propagates
    sse += e * e;
    ++q.compared;
  }
  q.value_min = q.compared ? lo : 0;
  q.value_max = q.compared ? hi : 0;
  q.mse = q.compared ? sse / q.compared : 0;
  return finish(q);
}
}  // namespace

Quality combine(const Quality& a, const Quality& b) {
  if (a.compared == 0 && a.over_bound == 0 && a.nonfinite_mismatch == 0) return b;  // (b's MSE kept exactly)
  Quality q;
  q.max_abs_error = std::isnan(a.max_abs_error) || std::isnan(b.max_abs_error)
                        ? std::numeric_limits<double>::quiet_NaN()
                        : std::max(a.max_abs_error, b.max_abs_error);
  q.over_bound = a.over_bound + b.over_bound;
  q.nonfinite_mismatch = a.nonfinite_mismatch + b.nonfinite_mismatch;
  q.compared = a.compared + b.compared;
  if (a.compared && b.compared) {
    q.value_min = std::min(a.value_min, b.value_min), q.value_max = std::max(a.value_max, b.value_max);
  } else {
    const Quality& c = a.compared ? a : b;
    q.value_min = c.value_min, q.value_max = c.value_max;
  }
  q.mse = q.compared ? (a.mse * double(a.compared) + b.mse * double(b.compared)) / double(q.compared) : 0;
  return finish(q);
}

// Pieces of 4 Mi values and more on the host's threads, combined (a 1 GiB
// frame took one thread seconds).
Quality assess(const void* orig, const void* recon, DType dtype, std::uint64_t n, double abs_bound) {
  const std::uint64_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t pieces = std::max<std::uint64_t>(1, std::min<std::uint64_t>(hw, n >> 22));
  std::vector<Quality> part(pieces);
  const std::size_t size = dtype_size(dtype);
  split_threads(pieces, [&](std::size_t k) {
    const std::uint64_t a = n * k / pieces, b = n * (k + 1) / pieces;
    const auto* x = static_cast<const std::uint8_t*>(orig) + a * size;
    const auto* y = static_cast<const std::uint8_t*>(recon) + a * size;
    part[k] = dtype == DType::F64
                  ? assess_t(reinterpret_cast<const double*>(x), reinterpret_cast<const double*>(y), b - a, abs_bound)
                  : assess_t(reinterpret_cast<const float*>(x), reinterpret_cast<const float*>(y), b - a, abs_bound);
  });
  Quality q;
  for (const auto& p : part) q = combine(q, p);
  return q;
}

}  // namespace ksz::cli
