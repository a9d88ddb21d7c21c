// Partial results of the quality engine's reductions (portable/metrics/metrics.hpp),
// shared with their CUDA specializations (cuda_specializations/metrics_cuda.hpp),
// which must fill the same fields the same way.
#pragma once
#include <cstdint>

#include "src/api/quality.hpp"

namespace ksz::metrics::impl {

// Pattern 1. Identities: counts 0, imax ~0, max_abs -1, min/max +-DBL_MAX.
struct P1Acc {
  std::uint64_t cnt, excl, decbad, npwr, imax;
  double min_e, max_e, sum_e, sum_abs, max_abs, sum_e2;
  double min_p, max_p, sum_p;
  double min_a, max_a, min_b, max_b;
  double sa, sb, saa, sbb, sab;  // shifted by the functor's shift (Pearson without cancellation)
};

struct P2Acc {
  std::uint64_t pts;
  double d1max, d1sum, d2max, d2sum, dvmax, dvsum, lpmax, lpsum;
  double acf[kQualityMaxLag];
  std::uint64_t acn[kQualityMaxLag];
};

struct P3Acc {
  std::uint64_t windows;
  double sum, min;
};

}  // namespace ksz::metrics::impl
