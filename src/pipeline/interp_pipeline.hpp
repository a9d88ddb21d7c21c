// The cuSZ-i pipeline (cusz-i-interpolation, sections IV-V): G-Interp spline
// prediction with level-wise bounds and profiling auto-tune -> histogram ->
// canonical Huffman, verbatim elements compacted beside it; one container
// stream (predictor 2). Data stays in ExecSpace's memory.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <vector>

#include "src/api/ksz.hpp"
#include "src/container/container.hpp"

namespace ksz::pipeline {

template <class ExecSpace>
struct InterpPipeline {
  using Mem = typename ExecSpace::memory_space;

  // `in` holds dims.count() values. Options must have passed validate().
  template <class T>
  static Bytes compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims, const Options& opt,
                        Report* report);

  // Decodes a parsed stream (header dtype must match T) into `out`.
  template <class T>
  static void decompress(const ExecSpace& space, const container::Parsed& stream, Kokkos::View<T*, Mem>& out,
                         Report* report);
};

}  // namespace ksz::pipeline
