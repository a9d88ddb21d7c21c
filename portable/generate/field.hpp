// Generated test fields: fractional Brownian motion built from value noise,
// a cheap stand-in for a Gaussian random field with a power-law spectrum.
// Octave o has 2^o times the base frequency and amplitude 2^(-o*H): the
// spectrum falls as k^-(2H+1) along a line, so H = 1/3 gives Kolmogorov's
// k^-5/3 ("turbulent"), H = 1 a smooth field. Integer hashing only, so the
// field depends on the seed and extents alone (CUDA may differ from the CPU
// backends in the last bit where nvcc contracts multiply-adds).
#pragma once
#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>

namespace ksz::generate {

enum class Kind : std::uint8_t { Turbulent = 0, Smooth = 1, Noise = 2 };

struct FieldSpec {
  Kind kind = Kind::Turbulent;
  std::uint32_t seed = 1;
  std::uint64_t n0 = 1, n1 = 1, n2 = 1;  // fastest first
};

namespace impl {
KOKKOS_INLINE_FUNCTION std::uint32_t mix(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
KOKKOS_INLINE_FUNCTION double lattice(std::uint32_t seed, std::uint32_t o, std::int64_t i, std::int64_t j,
                                      std::int64_t k) {
  std::uint32_t h = mix(seed * 0x9E3779B9U + o);
  h = mix(h ^ static_cast<std::uint32_t>(i));
  h = mix(h ^ static_cast<std::uint32_t>(j));
  h = mix(h ^ static_cast<std::uint32_t>(k));
  return static_cast<double>(h) * (2.0 / 4294967295.0) - 1.0;
}
KOKKOS_INLINE_FUNCTION double fade(double t) { return t * t * t * (t * (t * 6 - 15) + 10); }
KOKKOS_INLINE_FUNCTION double value_noise(std::uint32_t seed, std::uint32_t o, double x, double y, double z) {
  const double fx = ::floor(x), fy = ::floor(y), fz = ::floor(z);
  const auto i = static_cast<std::int64_t>(fx), j = static_cast<std::int64_t>(fy),
             k = static_cast<std::int64_t>(fz);
  const double u = fade(x - fx), v = fade(y - fy), w = fade(z - fz);
  double c[2][2];
  for (int dk = 0; dk < 2; ++dk)
    for (int dj = 0; dj < 2; ++dj) {
      const double a = lattice(seed, o, i, j + dj, k + dk), b = lattice(seed, o, i + 1, j + dj, k + dk);
      c[dk][dj] = a + (b - a) * u;
    }
  const double p = c[0][0] + (c[0][1] - c[0][0]) * v;
  const double q = c[1][0] + (c[1][1] - c[1][0]) * v;
  return p + (q - p) * w;
}
}  // namespace impl

template <class ExecSpace, class T>
void fill(const ExecSpace& space, const FieldSpec& s, Kokkos::View<T*, typename ExecSpace::memory_space> out) {
  const std::uint64_t nmax = s.n0 > s.n1 ? (s.n0 > s.n2 ? s.n0 : s.n2) : (s.n1 > s.n2 ? s.n1 : s.n2);
  const double hurst = s.kind == Kind::Smooth ? 1.0 : 1.0 / 3.0;
  // The finest octave keeps 8 grid points per lattice cell: like a resolved
  // simulation, the field is smooth at the grid scale (a dissipation range).
  int octaves = 1;
  while (octaves < 12 && (4ull << octaves) * 8 <= nmax) ++octaves;
  if (s.kind == Kind::Smooth && octaves > 4) octaves = 4;
  const double gain = ::pow(2.0, -hurst);
  const double base = 4.0 / static_cast<double>(nmax);
  const FieldSpec spec = s;
  const Kind kind = s.kind;
  Kokkos::parallel_for(
      "ksz::generate::fill", Kokkos::RangePolicy<ExecSpace>(space, 0, s.n0 * s.n1 * s.n2),
      KOKKOS_LAMBDA(const std::uint64_t idx) {
        const std::uint64_t x = idx % spec.n0, yz = idx / spec.n0, y = yz % spec.n1, z = yz / spec.n1;
        if (kind == Kind::Noise) {
          out(idx) = static_cast<T>(impl::lattice(spec.seed, 99, x, y, z));
          return;
        }
        double sum = 0, amp = 1, freq = base;
        for (int o = 0; o < octaves; ++o) {
          sum += amp * impl::value_noise(spec.seed, o, x * freq, y * freq, z * freq);
          amp *= gain;
          freq *= 2;
        }
        out(idx) = static_cast<T>(sum);
      });
}

}  // namespace ksz::generate
