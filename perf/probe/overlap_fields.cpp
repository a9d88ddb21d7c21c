// Probe: do several fields' SZx compressions on their own streams overlap on
// the GPU, so that one field's REL value-range pass (memory-bound) runs under
// another's compressor (ALU-bound)? perf/NOTES.md, "twenty-ninth round".
// Each host thread compresses its own generated 512^3 float32 field (seeds
// 1, 2, ...) `reps` times through cuda_spec::szx_compress_onepass on its own
// stream (stream priorities: thread 0 lowest); time per field = wall time of
// all threads' calls / their number. The totals (lead, mid, verbatim) of
// every call are checked against the field's first, serial call. Then one
// thread pipelining REL fields by hand (pipelined, below).
//   built by the CUDA build (cmake/dev.sh build-cuda): build-cuda/perf/overlap_fields
//   overlap_fields [reps=20]
#include <cuda_runtime.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "cuda_specializations/cuda_specializations.hpp"
#include "perf/common/harness.hpp"
#include "portable/predict/szx/szx.hpp"

using namespace ksz;
using Mem = Kokkos::CudaSpace;

namespace {

struct Job {
  cudaStream_t stream = nullptr;
  std::unique_ptr<Kokkos::Cuda> space;
  perf::Field<Kokkos::Cuda, float> field;
  Kokkos::View<float*, Mem> payload;
  Kokkos::View<std::uint8_t*, Mem> lead, kinds, runs;
  Kokkos::View<float*, Mem> medians;
  Kokkos::View<unsigned long long*, Mem> state;
  Kokkos::View<double*, Mem> range;
  std::size_t state_bytes = 0;
  cuda_spec::SzxOffsets first{};
  int mismatches = 0;
};

constexpr std::uint32_t kBlock = 128;

cuda_spec::SzxOffsets compress(Job& j, bool rel) {
  const std::uint64_t n = j.field.data.extent(0);
  cuda_spec::SzxBound sb;
  sb.bound = rel ? 1e-3 : 5e-3;
  if (rel) {
    sb.rel = true;
    sb.range_buf = j.range.data();
  } else {
    sb.find_range = true;
  }
  cuda_spec::SzxOffsets tot{};
  bool fits = false;
  const bool done = cuda_spec::szx_compress_onepass<float>(
      *j.space, j.field.data.data(), n, kBlock, sb, j.kinds.data(), j.medians.data(),
      reinterpret_cast<std::uint16_t*>(j.runs.data()), j.lead.data(), reinterpret_cast<std::uint8_t*>(j.payload.data()),
      j.payload.extent(0) * sizeof(float), j.state.data(), j.state_bytes, tot, fits);
  if (!done || !fits) std::printf("compress refused or overflowed\n"), std::exit(1);
  return tot;
}

bool same(const cuda_spec::SzxOffsets& a, const cuda_spec::SzxOffsets& b) {
  return a.lead == b.lead && a.mid == b.mid && a.verb == b.verb;
}

// Seconds per field with `threads` threads, each `reps` calls.
double run(std::vector<Job>& jobs, int threads, int reps, bool rel) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Job& j = jobs[t];
      ready.fetch_add(1);
      while (!go.load()) {
      }
      for (int r = 0; r < reps; ++r)
        if (!same(compress(j, rel), j.first)) ++j.mismatches;
    });
  }
  while (ready.load() < threads) {
  }
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true);
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s / (threads * reps);
}

// One host thread, REL: field k+1's value range (finite_minmax_to) queued on
// stream B (high priority) before field k's compressor runs on stream A with
// field k's range given (the compressor then works out the block extremes
// itself); A waits on B's event for field k's range. overlap = false: the
// same calls, each range awaited before the compressor's launch.
// late_us >= 0: the next range is launched by a helper thread late_us after
// the compressor's call starts (so that the compressor's CTAs hold the SMs
// first and the range pass's fill what they leave), instead of before it.
double pipelined(std::vector<Job>& jobs, Kokkos::Cuda& a, Kokkos::Cuda& b, int fields, bool overlap,
                 int late_us = -1) {
  const std::uint64_t n = jobs[0].field.data.extent(0);
  Kokkos::View<double*, Mem> bufs("ranges", 2 * cuda_spec::kMinmaxBufDoubles);
  cudaEvent_t ev[2];
  for (auto& e : ev) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  const auto range_of = [&](int k) {
    Job& j = jobs[k % jobs.size()];
    double* const buf = bufs.data() + (k % 2) * cuda_spec::kMinmaxBufDoubles;
    cuda_spec::finite_minmax_to<float>(b, j.field.data.data(), n, buf);
    cudaEventRecord(ev[k % 2], b.cuda_stream());
  };
  int bad = 0;
  const auto t0 = std::chrono::steady_clock::now();
  range_of(0);
  std::atomic<int> launch_next{-1}, launched{0};
  std::atomic<bool> stop{false};
  std::thread helper;
  if (late_us >= 0) helper = std::thread([&] {
    int last = -1;
    while (!stop.load()) {
      const int k = launch_next.load();
      if (k <= last) continue;
      const auto t = std::chrono::steady_clock::now() + std::chrono::microseconds(late_us);
      while (std::chrono::steady_clock::now() < t) {
      }
      range_of(k);
      last = k;
      launched.store(k);
    }
  });
  for (int k = 0; k < fields; ++k) {
    if (overlap && late_us < 0 && k + 1 < fields) range_of(k + 1);
    cudaStreamWaitEvent(a.cuda_stream(), ev[k % 2], 0);
    Job& j = jobs[k % jobs.size()];
    cuda_spec::SzxBound sb;
    sb.bound = 1e-3, sb.rel = true, sb.range = bufs.data() + (k % 2) * cuda_spec::kMinmaxBufDoubles;
    cuda_spec::SzxOffsets tot{};
    bool fits = false;
    if (overlap && late_us >= 0 && k + 1 < fields) launch_next.store(k + 1);
    cuda_spec::szx_compress_onepass<float>(a, j.field.data.data(), n, kBlock, sb, j.kinds.data(), j.medians.data(),
                                           reinterpret_cast<std::uint16_t*>(j.runs.data()), j.lead.data(),
                                           reinterpret_cast<std::uint8_t*>(j.payload.data()),
                                           j.payload.extent(0) * sizeof(float), j.state.data(), j.state_bytes, tot,
                                           fits);
    if (!fits || !same(tot, j.first)) ++bad;
    if (!overlap && k + 1 < fields) range_of(k + 1), cudaEventSynchronize(ev[(k + 1) % 2]);
    if (overlap && late_us >= 0 && k + 1 < fields) {
      while (launched.load() < k + 1) {  // the helper has queued the next range and its event
      }
    }
  }
  stop.store(true);
  if (helper.joinable()) helper.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& e : ev) cudaEventDestroy(e);
  if (bad) std::printf("  %d fields' totals differ from the serial calls'\n", bad);
  return s / fields;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  constexpr int kJobs = 3;
  Dims d;
  d.n = {512, 512, 512, 1};
  d.rank = 3;
  const std::uint64_t n = d.count(), nb = (n + kBlock - 1) / kBlock;
  int lo = 0, hi = 0;
  cudaDeviceGetStreamPriorityRange(&lo, &hi);
  std::vector<Job> jobs(kJobs);
  for (int t = 0; t < kJobs; ++t) {
    Job& j = jobs[t];
    cudaStreamCreateWithPriority(&j.stream, cudaStreamNonBlocking, t == 0 ? lo : hi);
    j.space = std::make_unique<Kokkos::Cuda>(j.stream);
    j.field = perf::generate_field<Kokkos::Cuda, float>(*j.space, "turbulent", d, std::uint32_t(t + 1));
    j.state_bytes = cuda_spec::szx_onepass_state_bytes<float>(n, kBlock, true);
    j.payload = Kokkos::View<float*, Mem>("payload", (n + 3) / 4 * 4);
    j.lead = Kokkos::View<std::uint8_t*, Mem>("lead", nb * (kBlock / 4));
    j.kinds = Kokkos::View<std::uint8_t*, Mem>("kinds", nb);
    j.medians = Kokkos::View<float*, Mem>("medians", nb);
    j.runs = Kokkos::View<std::uint8_t*, Mem>("runs", 2 * szx::run_count(nb, szx::run_blocks<float>(kBlock)));
    j.state = Kokkos::View<unsigned long long*, Mem>("state", j.state_bytes / 8 + 16);
    j.range = Kokkos::View<double*, Mem>("range", cuda_spec::kMinmaxBufDoubles);
  }
  Kokkos::fence();
  for (const bool rel : {true, false}) {
    for (auto& j : jobs) {
      compress(j, rel);  // warm
      j.first = compress(j, rel);
      j.mismatches = 0;
    }
    for (const int threads : {1, 2, 3, 1, 2, 3}) {
      const double s = run(jobs, threads, reps, rel);
      int bad = 0;
      for (auto& j : jobs) bad += j.mismatches, j.mismatches = 0;
      std::printf("%s threads %d: %.1f us a field, %.1f GB/s%s\n", rel ? "REL 1e-3" : "ABS 5e-3", threads, s * 1e6,
                  n * 4.0 / s / 1e9, bad ? "  TOTALS DIFFER" : "");
    }
  }
  for (auto& j : jobs) {  // the REL totals again, for the pipelined calls
    compress(j, true);
    j.first = compress(j, true);
  }
  cudaStream_t sa = nullptr, sb = nullptr;
  cudaStreamCreateWithPriority(&sa, cudaStreamNonBlocking, lo);
  cudaStreamCreateWithPriority(&sb, cudaStreamNonBlocking, hi);
  {
    Kokkos::Cuda a(sa), b(sb);
    for (int round = 0; round < 2; ++round) {
      for (const bool overlap : {false, true}) {
        const double s = pipelined(jobs, a, b, 3 * reps, overlap);
        std::printf("REL 1e-3 range given, %s: %.1f us a field, %.1f GB/s\n",
                    overlap ? "next field's range queued before this one's compressor" : "range then compressor",
                    s * 1e6, n * 4.0 / s / 1e9);
      }
      for (const int late : {20, 60, 150}) {
        const double s = pipelined(jobs, a, b, 3 * reps, true, late);
        std::printf("REL 1e-3 range given, next field's range %d us after this one's compressor call: %.1f us a "
                    "field, %.1f GB/s\n",
                    late, s * 1e6, n * 4.0 / s / 1e9);
      }
    }
  }
  for (auto& j : jobs) {  // the instances before their streams
    j.space.reset();
    cudaStreamDestroy(j.stream);
  }
  cudaStreamDestroy(sa);
  cudaStreamDestroy(sb);
  return 0;
}
