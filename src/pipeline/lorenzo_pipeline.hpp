// The cuSZ pipeline: pre-quantize -> Lorenzo predict + quantize -> histogram
// -> canonical Huffman (codebook on the host) -> deflate; outliers and
// verbatim values compacted beside it; all of it in one container stream.
// Data stays in ExecSpace's memory; only the compressed segments (and the
// histogram) cross to the host.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <vector>

#include "src/api/ksz.hpp"
#include "src/container/container.hpp"

namespace ksz::pipeline {

template <class ExecSpace>
struct LorenzoPipeline {
  using Mem = typename ExecSpace::memory_space;

  // `in` holds dims.count() values. Options must have passed validate().
  template <class T>
  static Bytes compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims, const Options& opt,
                        Report* report);

  // Decodes a parsed stream (header dtype must match T) into `out`: reused
  // when it already holds the element count (contiguous), else allocated.
  template <class T>
  static void decompress(const ExecSpace& space, const container::Parsed& stream, Kokkos::View<T*, Mem>& out,
                         Report* report);
};

}  // namespace ksz::pipeline
