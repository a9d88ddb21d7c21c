// The Kokkos execution spaces this build instantiates pipelines for, and a
// run-time name for each so the CLI can pick one (--backend).
#pragma once
#include <Kokkos_Core.hpp>
#include <string>
#include <vector>

namespace ksz {

enum class Backend : std::uint8_t { Default = 0, Serial = 1, OpenMP = 2, Cuda = 3 };

const char* to_string(Backend b);
Backend parse_backend(const std::string& name);  // throws InvalidInput
std::vector<Backend> available_backends();       // in build order
Backend resolve_backend(Backend b);              // Default -> the build's default space

// Calls f(ExecSpace{}) for the space named by b (must be available).
template <class F>
decltype(auto) with_backend(Backend b, F&& f);

}  // namespace ksz

// Instantiation helper: KSZ_FOR_EACH_EXEC_SPACE(M) expands M(Space) per space.
#ifdef KOKKOS_ENABLE_SERIAL
#define KSZ_IF_SERIAL(M) M(Kokkos::Serial)
#else
#define KSZ_IF_SERIAL(M)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#define KSZ_IF_OPENMP(M) M(Kokkos::OpenMP)
#else
#define KSZ_IF_OPENMP(M)
#endif
#ifdef KOKKOS_ENABLE_CUDA
#define KSZ_IF_CUDA(M) M(Kokkos::Cuda)
#else
#define KSZ_IF_CUDA(M)
#endif
#define KSZ_FOR_EACH_EXEC_SPACE(M) KSZ_IF_SERIAL(M) KSZ_IF_OPENMP(M) KSZ_IF_CUDA(M)

#include "src/core/error.hpp"

namespace ksz {
template <class F>
decltype(auto) with_backend(Backend b, F&& f) {
  switch (resolve_backend(b)) {
#ifdef KOKKOS_ENABLE_CUDA
    case Backend::Cuda: return f(Kokkos::Cuda{});
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    case Backend::OpenMP: return f(Kokkos::OpenMP{});
#endif
#ifdef KOKKOS_ENABLE_SERIAL
    case Backend::Serial: return f(Kokkos::Serial{});
#endif
    default: break;
  }
  throw InvalidInput(impl::concat("backend '", to_string(b), "' is not built in this ksz"));
}
}  // namespace ksz
