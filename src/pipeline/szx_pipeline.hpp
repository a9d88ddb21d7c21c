// The SZx pipeline (szx-ultrafast): block plan -> offsets (prefix scans) ->
// block encode, all in ExecSpace's memory; only the compressed segments cross
// to the host. No Huffman, no lossless pass: speed over ratio.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <vector>

#include "src/api/ksz.hpp"
#include "src/container/container.hpp"

namespace ksz::pipeline {

template <class ExecSpace>
struct SzxPipeline {
  using Mem = typename ExecSpace::memory_space;

  // `in` holds dims.count() values. Options must have passed validate().
  template <class T>
  static Bytes compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims, const Options& opt,
                        Report* report);

  // Decodes a parsed SZx stream (header dtype must match T) into `out`, which
  // is reused if it already holds the element count, else (re)allocated.
  template <class T>
  static void decompress(const ExecSpace& space, const container::Parsed& stream, Kokkos::View<T*, Mem>& out,
                         Report* report);
};

}  // namespace ksz::pipeline
