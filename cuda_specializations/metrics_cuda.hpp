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
//    per block, partials combined in a fixed order by one more block: no
//    atomics, so a device gives the same bits on every run. Replaces a Kokkos
//    parallel_reduce whose ~25-word value_type goes through shared memory at
//    every level (cuZ-Checker section IV, pattern 1).
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

#endif  // KSZ_HAVE_CUDA

}  // namespace ksz::cuda_spec
