// CUDA specializations of the quality engine (portable/metrics/metrics.hpp),
// chosen at compile time when Kokkos has CUDA (KSZ_HAVE_CUDA) and at run time
// by cuda_spec::enabled(). The portable functors are the reference: same
// fields, integer results identical, floating-point sums equal to rounding
// (other summation order), min/max and the max-error index identical
// (tests/cuda_spec/test_metrics_cuda.cpp asserts it on the GPU).
//
//  - metrics_pattern1: every pattern-1 scalar in one grid-stride pass, 16-byte
//    loads of both arrays (byte loads of the mask), double accumulators in
//    registers, warp-shuffle then shared-memory block reduction, one partial
//    per block, partials combined in a fixed order by the last block to
//    finish, which writes the result to host-mapped memory: no atomics on the
//    sums, so a device gives the same bits on every run. Replaces a Kokkos
//    parallel_reduce whose ~25-word value_type goes through shared memory at
//    every level (cuZ-Checker section IV, pattern 1). float32 without a mask
//    takes a kernel that adds only the sums per element and filters the
//    extremes in float32 against thresholds its warps share (the exact test
//    only for candidates; metrics_cuda.cpp says why the result is the same).
//  - metrics_pdf: the two PDFs' counts in one read, a shared histogram per
//    block with same-bin lanes of a warp merged into one atomic (match_any);
//    integer counts, so identical to the portable pass.
//  - metrics_pattern2: the 7-point stencils and the error autocorrelation, a
//    thread per (x, y) of a 32x8 (1D: 256x1) tile walking 8 planes along z,
//    neighbours and lagged partners read through L1 (the tile's rows overlap),
//    the autocorrelation sums unrolled over kQualityMaxLag so they stay in
//    registers; reduced like pattern 1. Same points and pair counts.
//  - metrics_pattern3: SSIM, window step 1 only (cuZ-Checker section IV,
//    pattern 3): a block per 32x8x32 tile of window origins keeps, in shared
//    memory, the z-window sums of the five moments (and the excluded count)
//    for every (x, y) of the tile plus its halo, updated per plane by adding
//    the entering and removing the leaving plane (each element read twice);
//    the x then y window sums are direct sums from shared memory. Window
//    count identical; moments are the same sums in another order, so each
//    window's SSIM moves by rounding only (tests: mean and min within 1e-9).
//
// Every function returns false when it does not handle the case (disabled);
// the caller then runs the portable path.
#pragma once
#include <cstdint>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/metrics/accumulators.hpp"

namespace ksz::cuda_spec {

#if defined(KSZ_HAVE_CUDA)

// The arrays of one assessment, device pointers (any alignment of T); mask
// nullptr when none.
template <class T>
struct MetricsFields {
  const T* orig;
  const T* dec;
  const std::uint8_t* mask;  // 0 excludes
  std::uint64_t n;
  double fill;  // |orig| >= fill excludes
};

// out as metrics::impl::Pattern1 reduces it over [0, n) with this shift.
// Blocks until out is on the host.
template <class T>
bool metrics_pattern1(const Kokkos::Cuda& space, const MetricsFields<T>& f, double shift, metrics::impl::P1Acc& out);

// The same with the shift taken on the device from orig[at] by the portable
// rule (the value when compared, |orig[at]| < fill and finite, else 0), so no
// host round trip precedes the pass; `shift` gets the value used.
template <class T>
bool metrics_pattern1_shift_at(const Kokkos::Cuda& space, const MetricsFields<T>& f, std::uint64_t at,
                               metrics::impl::P1Acc& out, double& shift);

// Bin edges of the two PDFs as assess() computes them.
struct PdfParams {
  int bins;
  double lo_e, se, lo_p, sp;  // bin = int((v - lo) * s), clamped to bins - 1
};

// Adds the counts of every compared element to hist (2 * bins device words:
// error bins, then point-wise relative error bins), asynchronously on space.
template <class T>
bool metrics_pdf(const Kokkos::Cuda& space, const MetricsFields<T>& f, const PdfParams& p, std::uint64_t* hist);

// Extents (x fastest; 1 beyond rank) of the field an assessment walks.
struct MetricsShape {
  std::uint64_t n0, n1, n2;
  int rank;
};

// out as metrics::impl::Pattern2 reduces it over every element (lags in
// 0..kQualityMaxLag, mean of the error). Blocks until out is on the host.
template <class T>
bool metrics_pattern2(const Kokkos::Cuda& space, const MetricsFields<T>& f, const MetricsShape& s, int lags,
                      double mean, metrics::impl::P2Acc& out);

// Window extents (each <= its axis' extent), step, and the SSIM constants of
// metrics::impl::Pattern3.
struct SsimParams {
  std::uint64_t w0, w1, w2, step;
  double shift, c1, c2;
};

// out as metrics::impl::Pattern3 reduces it over every window; false (portable
// path) unless step == 1 and the tile fits in shared memory.
template <class T>
bool metrics_pattern3(const Kokkos::Cuda& space, const MetricsFields<T>& f, const MetricsShape& s,
                      const SsimParams& p, metrics::impl::P3Acc& out);

#endif  // KSZ_HAVE_CUDA

}  // namespace ksz::cuda_spec
