// Explicit instantiation for every execution space and value type.
#include "src/pipeline/lorenzo_pipeline_impl.hpp"

namespace ksz::pipeline {
#define KSZ_INSTANTIATE_LORENZO(Space)                                                                  \
  template struct LorenzoPipeline<Space>;                                                               \
  template Bytes LorenzoPipeline<Space>::compress<float>(                                             \
      const Space&, Kokkos::View<const float*, Space::memory_space>, const Dims&, const Options&,     \
      Report*);                                                                                         \
  template Bytes LorenzoPipeline<Space>::compress<double>(                                            \
      const Space&, Kokkos::View<const double*, Space::memory_space>, const Dims&, const Options&,    \
      Report*);                                                                                         \
  template void LorenzoPipeline<Space>::decompress<float>(const Space&, const container::Parsed&,      \
                                                          Kokkos::View<float*, Space::memory_space>&,  \
                                                          Report*);                                     \
  template void LorenzoPipeline<Space>::decompress<double>(const Space&, const container::Parsed&,     \
                                                           Kokkos::View<double*, Space::memory_space>&, \
                                                           Report*);
KSZ_FOR_EACH_EXEC_SPACE(KSZ_INSTANTIATE_LORENZO)
#undef KSZ_INSTANTIATE_LORENZO
}  // namespace ksz::pipeline
