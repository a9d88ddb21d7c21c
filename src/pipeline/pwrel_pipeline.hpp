// Point-wise relative error bound (PW_REL): |x - x'| <= e|x| for every element,
// by the logarithmic transform (parasz-pipeline section III, step 1; Liang et
// al.): y = log2|x| is compressed under the absolute bound log2(1 + e') by an
// inner pipeline (dual-quantization Lorenzo on any backend, or the classic CPU
// pipeline), kept whole as one segment; signs go in a bitmap, zeros map below
// a threshold that decodes to exactly 0. The compressor decodes what every
// decompressor will compute and stores the elements that miss the bound
// verbatim (NaN, Inf, and rare rounding misses).
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <vector>

#include "src/api/ksz.hpp"
#include "src/container/container.hpp"

namespace ksz::pipeline {

template <class ExecSpace>
struct PwRelPipeline {
  using Mem = typename ExecSpace::memory_space;

  // opt.mode must be PW_REL with 0 < opt.bound < 1; opt.predictor Lorenzo, or
  // ClassicLorenzo (host spaces only; use Kokkos::DefaultHostExecutionSpace).
  template <class T>
  static Bytes compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims, const Options& opt,
                        Report* report);

  template <class T>
  static void decompress(const ExecSpace& space, const container::Parsed& stream, Kokkos::View<T*, Mem>& out,
                         Report* report);
};

}  // namespace ksz::pipeline
