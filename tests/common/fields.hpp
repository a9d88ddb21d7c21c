// Host-side test fields and the per-element bound check every test uses.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/api/ksz.hpp"

namespace ksz::test {

template <class Space>
Backend backend_of() {
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same_v<Space, Kokkos::Cuda>) return Backend::Cuda;
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  if (std::is_same_v<Space, Kokkos::OpenMP>) return Backend::OpenMP;
#endif
  return Backend::Serial;
}

enum class Pattern { Smooth, Noisy, Constant, Spiky, Fill, Ramp };
inline const char* name(Pattern p) {
  switch (p) {
    case Pattern::Smooth: return "smooth";
    case Pattern::Noisy: return "noisy";
    case Pattern::Constant: return "constant";
    case Pattern::Spiky: return "spiky";
    case Pattern::Fill: return "fill";
    case Pattern::Ramp: return "ramp";
  }
  return "?";
}

template <class T>
std::vector<T> make_field(Pattern p, const Dims& d, std::uint32_t seed = 7) {
  const std::uint64_t n = d.count();
  std::vector<T> v(n);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::uint64_t i = 0; i < n; ++i) {
    const double x = double(i % d.n[0]), y = double(i / d.n[0] % d.n[1]), z = double(i / (d.n[0] * d.n[1]));
    const double smooth = std::sin(0.05 * x) * std::cos(0.07 * y) + 0.3 * std::sin(0.11 * z + 0.02 * x) + 2.0;
    switch (p) {
      case Pattern::Smooth: v[i] = T(smooth); break;
      case Pattern::Noisy: v[i] = T(smooth + 0.5 * normal(rng)); break;
      case Pattern::Constant: v[i] = T(3.25); break;
      case Pattern::Spiky: v[i] = T(rng() % 97 == 0 ? 1e6 * normal(rng) : smooth); break;
      case Pattern::Fill: v[i] = T((i / 37) % 5 == 0 ? 1e20 : ((i / 53) % 7 == 0 ? -1e34 : smooth)); break;
      case Pattern::Ramp: v[i] = T(1e-3 * double(i)); break;
    }
  }
  return v;
}

// |x - x'| <= bound on every element (computed in long double), and
// non-finite values reproduced exactly. Reports the first few violations.
template <class T>
::testing::AssertionResult within_bound(const T* a, const T* b, std::uint64_t n, double bound) {
  std::uint64_t bad = 0;
  std::string first;
  for (std::uint64_t i = 0; i < n; ++i) {
    bool ok;
    if (std::isnan(a[i])) ok = std::isnan(b[i]);
    else if (std::isinf(a[i])) ok = a[i] == b[i];
    else ok = std::fabs(static_cast<long double>(a[i]) - static_cast<long double>(b[i])) <= bound;
    if (!ok && bad++ < 3)
      first += " [" + std::to_string(i) + "] " + std::to_string(double(a[i])) + " -> " + std::to_string(double(b[i]));
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << n << " elements exceed bound " << bound << ":" << first;
}

inline Dims dims_of(std::vector<std::uint64_t> e) {
  Dims d;
  d.rank = int(e.size());
  for (std::size_t i = 0; i < e.size(); ++i) d.n[i] = e[i];
  return d;
}

}  // namespace ksz::test
