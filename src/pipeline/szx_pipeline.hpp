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
  // upload, then decode.
  template <class T>
  static void decompress(const ExecSpace& space, const container::Parsed& stream, Kokkos::View<T*, Mem>& out,
                         Report* report);

  // Device-resident use, input and stream in ExecSpace's memory (what
  // perf/szx/bench_szx.cpp --resident times back to back):
  // - encode: compress's device stages alone, the segments left in the
  //   pipeline's workspace, nothing gathered;
  // - upload: a parsed stream's checks and its segments in ExecSpace's memory
  //   (on host spaces, views of the stream's bytes: the stream must outlive
  //   it), decode: its device stages, as often as wanted.
  template <class T>
  static void encode(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims, const Options& opt,
                     Report* report);
  template <class T>
  struct Resident {
    container::Header header;
    std::uint64_t n = 0, nb = 0;
    std::uint32_t block = 0;
    Kokkos::View<const std::uint8_t*, Mem> kinds, lead, mid, runs;
    Kokkos::View<const T*, Mem> medians, verb;
    bool has_runs = false;  // segment 21 (format 1.3 on)
  };
  template <class T>
  static Resident<T> upload(const ExecSpace& space, const container::Parsed& stream);
  template <class T>
  static void decode(const ExecSpace& space, const Resident<T>& stream, Kokkos::View<T*, Mem>& out, Report* report);

  // The steps the calls above share (public: nvcc's extended lambdas need a
  // parent function that is not private). gather: the stream, else none.
  template <class T>
  static Bytes compress_stages(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims,
                               const Options& opt, Report* report, bool gather);
  template <class T, class Timer>
  static void decode_stages(const ExecSpace& space, const Resident<T>& stream, Kokkos::View<T*, Mem>& out,
                            Report* report, Timer& timer);
};

}  // namespace ksz::pipeline
