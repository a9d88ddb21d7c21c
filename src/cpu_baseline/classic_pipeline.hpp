// The classic SZ pipeline as parallelized by ParaSZ (parasz-pipeline.txt):
// Lorenzo prediction from *reconstructed* neighbours (section III: the serial
// data dependency), linear-scaling quantization, unpredictable values stored
// exactly, then the same Huffman stage and container as the rest of ksz.
//
// Parallelism is the paper's pipeline (section IV): rows (2D) or the rows of
// each layer (3D) are tasks handed out in order by a TaskDispatcher; a Worker
// processes its row in batches of checkWidth elements, each batch only after
// the previous row has finished the same columns. Every element sees exactly
// the neighbours the serial order gives it, so the output bytes are the same
// for every thread count. Host only: it runs on std::threads, whatever the
// Kokkos backend (Kokkos' OpenMP thread count is fixed at initialization).
#pragma once
#include <cstdint>
#include <vector>

#include "src/api/ksz.hpp"
#include "src/container/container.hpp"

namespace ksz::cpu_baseline {

// How a Worker waits for the previous row (parasz section IV, "progress control").
enum class WaitMode {
  Spin,     // poll an atomic, yielding the core after a few tries
  CondVar,  // mutex + condition variable, as the paper's ConcurrentController
};

struct ClassicConfig {
  unsigned threads = 1;            // >= 1
  std::uint32_t check_width = 384; // >= 1
  WaitMode wait = WaitMode::Spin;
};

// Threads for opt.threads: itself if > 0, else OMP_NUM_THREADS, else the cores.
unsigned resolve_threads(std::uint32_t requested);
ClassicConfig config_from(const Options& opt);
// The default progress control (the faster one measured, see perf/parasz).
WaitMode default_wait_mode();
void set_wait_mode(WaitMode m);  // for the benchmark

// Compresses n = dims.count() host values under ABS or REL. If recon is not
// null it receives the decompressed field (what classic_decompress returns),
// which the PW_REL wrapper checks without a second pass.
template <class T>
Bytes classic_compress(const T* data, const Dims& dims, const Options& opt, Report* report, T* recon = nullptr);

// Decodes a classic stream (predictor ClassicLorenzo, ABS/REL) into out
// (dims.count() values). Throws CorruptStream on any inconsistency.
template <class T>
void classic_decompress(const container::Parsed& stream, T* out, unsigned threads, Report* report);

}  // namespace ksz::cpu_baseline
