// SSE2 (the x86-64 baseline) by element type, for host loops compilers leave
// scalar: a float min/max is not vectorized without -ffinite-math-only. Only
// where SSE2 is there and outside nvcc's device pass (KSZ_HAVE_SSE2).
#pragma once
#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#define KSZ_HAVE_SSE2 1
#include <emmintrin.h>

#include <cstdint>

namespace ksz::simd {

template <class T>
struct Sse2;
template <>
struct Sse2<float> {
  using V = __m128;
  static constexpr std::uint32_t kWidth = 4;
  static V set1(float a) { return _mm_set1_ps(a); }
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V sub(V a, V b) { return _mm_sub_ps(a, b); }
  static V min(V a, V b) { return _mm_min_ps(a, b); }
  static V max(V a, V b) { return _mm_max_ps(a, b); }
  static V unordered(V a, V b) { return _mm_cmpunord_ps(a, b); }
  static V or_(V a, V b) { return _mm_or_ps(a, b); }
  static V zero() { return _mm_setzero_ps(); }
  static bool any(V a) { return _mm_movemask_ps(a) != 0; }
};
template <>
struct Sse2<double> {
  using V = __m128d;
  static constexpr std::uint32_t kWidth = 2;
  static V set1(double a) { return _mm_set1_pd(a); }
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
  static V add(V a, V b) { return _mm_add_pd(a, b); }
  static V sub(V a, V b) { return _mm_sub_pd(a, b); }
  static V min(V a, V b) { return _mm_min_pd(a, b); }
  static V max(V a, V b) { return _mm_max_pd(a, b); }
  static V unordered(V a, V b) { return _mm_cmpunord_pd(a, b); }
  static V or_(V a, V b) { return _mm_or_pd(a, b); }
  static V zero() { return _mm_setzero_pd(); }
  static bool any(V a) { return _mm_movemask_pd(a) != 0; }
};

}  // namespace ksz::simd
#endif
