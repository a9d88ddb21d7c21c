// Explicit instantiation for every execution space and value type.
#include "src/pipeline/interp_pipeline_impl.hpp"

namespace ksz::pipeline {
#define KSZ_INSTANTIATE_INTERP(Space)                                                                  \
  template struct InterpPipeline<Space>;                                                               \
  template Bytes InterpPipeline<Space>::compress<float>(                                              \
      const Space&, Kokkos::View<const float*, Space::memory_space>, const Dims&, const Options&,     \
      Report*);                                                                                         \
  template Bytes InterpPipeline<Space>::compress<double>(                                             \
      const Space&, Kokkos::View<const double*, Space::memory_space>, const Dims&, const Options&,    \
      Report*);                                                                                         \
  template void InterpPipeline<Space>::decompress<float>(const Space&, const container::Parsed&,      \
                                                          Kokkos::View<float*, Space::memory_space>&,  \
                                                          Report*);                                     \
  template void InterpPipeline<Space>::decompress<double>(const Space&, const container::Parsed&,     \
                                                           Kokkos::View<double*, Space::memory_space>&, \
                                                           Report*);
KSZ_FOR_EACH_EXEC_SPACE(KSZ_INSTANTIATE_INTERP)
#undef KSZ_INSTANTIATE_INTERP
}  // namespace ksz::pipeline
