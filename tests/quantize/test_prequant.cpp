// The host prequantizer over a span (SSE2 two elements a step where there)
// against prequantize() element by element: the same q and the same verbatim
// verdict for every value, including NaN, Inf, huge and subnormal values, the
// range limit, halves (the floor's step down) and values whose rounding
// breaks the bound; both types, odd lengths (the scalar tail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "portable/quantize/prequant.hpp"

namespace ksz::test {
namespace {

template <class T>
void span_matches_scalar() {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const double bound : {1e-4, 0.5, 3.0e-8, 1e3}) {
    quantize::QuantParams p;
    p.bound = bound;
    p.step = 2 * bound;
    p.inv_step = 1 / p.step;
    std::vector<T> x;
    for (int k = 0; k < 20001; ++k) x.push_back(T(u(rng) * 1e3));
    for (double m = -3; m <= 3; m += 0.5) x.push_back(T(m * p.step));  // halves of a step
    const double lim = quantize::kMaxPrequant * p.step;
    for (const double f : {0.999999, 1.0, 1.000001}) {
      x.push_back(T(lim * f));
      x.push_back(T(-lim * f));
    }
    const T inf = std::numeric_limits<T>::infinity();
    for (const T v : {std::numeric_limits<T>::quiet_NaN(), inf, -inf, std::numeric_limits<T>::max(),
                      std::numeric_limits<T>::lowest(), std::numeric_limits<T>::denorm_min(), T(-0.0), T(0),
                      T(16777217.0), T(-16777217.0)})
      x.push_back(v);
    for (std::size_t n : {x.size(), x.size() - 1, std::size_t(1), std::size_t(2), std::size_t(3)}) {
      std::vector<std::int32_t> q(n, 12345), want(n);
      std::uint32_t want_bad = 0;
      for (std::size_t i = 0; i < n; ++i) want_bad += quantize::prequantize(x[i], p, want[i]) ? 0 : 1;
      EXPECT_EQ(quantize::prequantize_span(x.data(), q.data(), n, p), want_bad) << "bound " << bound << " n " << n;
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(q[i], want[i]) << "x " << double(x[i]) << " bound " << bound;
    }
  }
}

TEST(Prequantize, SpanMatchesScalarF32) { span_matches_scalar<float>(); }
TEST(Prequantize, SpanMatchesScalarF64) { span_matches_scalar<double>(); }

}  // namespace
}  // namespace ksz::test
