// CUDA specializations of the quality engine (portable/metrics/metrics.hpp),
// chosen at compile time when Kokkos has CUDA (KSZ_HAVE_CUDA) and at run time
// by cuda_spec::enabled(). The portable functors are the reference: same
// fields, integer results identical, floating-point sums equal to rounding
// (other summation order), min/max and the max-error index identical, PDF
// bins identical (tests/metrics asserts it on the GPU).
//
//  - metrics_pattern1: every pattern-1 scalar in one grid-stride pass, 16-byte
//    loads of both arrays (and 4- or 2-byte loads of the mask), double
//    accumulators in registers, warp-shuffle then shared-memory block
//    reduction, one partial per block, partials combined by one more block.
//    Replaces a Kokkos parallel_reduce whose ~20-double value_type goes
//    through shared memory at every level (cuZ-Checker section IV, pattern 1).
//  - metrics_pdf: the two PDFs' histogram pass, one shared histogram per warp
//    (no contention between warps on the few hot bins), the same bin formula.
//
// Every function returns false when it does not handle the case (disabled,
// sizes); the caller then runs the portable path.
#pragma once
#include <cstdint>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/metrics/accumulators.hpp"

namespace ksz::cuda_spec {

#if defined(KSZ_HAVE_CUDA)

// The arrays of one assessment, device pointers; mask nullptr when none.
template <class T>
struct MetricsFields {
  const T* orig;
  const T* dec;
  const std::uint8_t* mask;  // 0 excludes
  std::uint64_t n;
  double fill;  // |orig| >= fill excludes
};

// out as metrics::impl::Pattern1 reduces it over [0, n) with this shift.
template <class T>
bool metrics_pattern1(const Kokkos::Cuda& space, const MetricsFields<T>& f, double shift, metrics::impl::P1Acc& out);

// hist[0, nb) += error bins, hist[nb, 2 nb) += point-wise relative error bins,
// as the portable PDF pass counts them (bin = int((v - lo) * scale), clamped
// to nb - 1). hist is a device array of 2 nb counts.
template <class T>
bool metrics_pdf(const Kokkos::Cuda& space, const MetricsFields<T>& f, int nb, double lo_e, double scale_e,
                 double lo_p, double scale_p, std::uint64_t* hist);

#endif  // KSZ_HAVE_CUDA

}  // namespace ksz::cuda_spec
