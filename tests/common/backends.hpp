// Tests are written once and run per backend: a typed test suite over the
// execution spaces this build has (Kokkos' TEST_CATEGORY idea, as gtest types).
#pragma once
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include "cuda_specializations/cuda_specializations.hpp"

namespace ksz::test {
using ExecSpaces = ::testing::Types<
#ifdef KOKKOS_ENABLE_CUDA
    Kokkos::Cuda,
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    Kokkos::OpenMP,
#endif
#ifdef KOKKOS_ENABLE_SERIAL
    Kokkos::Serial
#endif
    >;

// Turns the CUDA specializations back on when a test that compares the two
// paths (cuda_spec::set_enabled) leaves, however it leaves.
struct SpecGuard {
  ~SpecGuard() { cuda_spec::set_enabled(true); }
};

struct ExecSpaceName {
  template <class T>
  static std::string GetName(int) {
    return T::name();
  }
};
}  // namespace ksz::test
