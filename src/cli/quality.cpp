#include "src/cli/quality.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ksz::cli {
namespace {
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
  q.value_range = q.compared ? hi - lo : 0;
  q.mse = q.compared ? sse / q.compared : 0;
  q.psnr = q.mse > 0 ? 20 * std::log10(q.value_range) - 10 * std::log10(q.mse)
                     : std::numeric_limits<double>::infinity();
  q.nrmse = q.value_range > 0 ? std::sqrt(q.mse) / q.value_range : 0;
  return q;
}
}  // namespace

Quality assess(const void* orig, const void* recon, DType dtype, std::uint64_t n, double abs_bound) {
  if (dtype == DType::F64)
    return assess_t(static_cast<const double*>(orig), static_cast<const double*>(recon), n, abs_bound);
  return assess_t(static_cast<const float*>(orig), static_cast<const float*>(recon), n, abs_bound);
}

}  // namespace ksz::cli
