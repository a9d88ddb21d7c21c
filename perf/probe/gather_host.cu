// Probe: a device segment into a fresh host stream, as container::write and
// Segment::fill do it today, piece by piece, against fused copies where each
// of T host threads takes a range: the driver copies a piece into the
// thread's pinned chunk, the thread copies it into the stream (its first
// touch) and checksums it while it is in cache. Also the decompressed
// field's copy into fresh memory, both ways (no checksum). perf/NOTES.md,
// "twenty-seventh round".
//   nvcc -O3 -arch=sm_90 -std=c++17 -I. -o gather_host perf/probe/gather_host.cu src/container/checksum.cpp
//   ./gather_host [stream MiB = 212] [field MiB = 512]
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "src/container/checksum.hpp"

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }
static void check(cudaError_t e, const char* w) {
  if (e != cudaSuccess) std::printf("CUDA error %s: %s\n", w, cudaGetErrorString(e)), std::exit(1);
}
template <class F>
static void split(int n, F f) {
  std::vector<std::thread> t;
  for (int k = 1; k < n; ++k) t.emplace_back(f, k);
  f(0);
  for (auto& x : t) x.join();
}
// As the library's prefault: page-aligned ranges, one a thread.
static void populate(void* p, std::size_t n, int threads) {
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t(4095),
                       end = reinterpret_cast<std::uintptr_t>(p) + n;
  const std::size_t per = ((end - begin) / threads + 4095) & ~std::size_t(4095);
  split(threads, [&](int k) {
    const std::uintptr_t a = begin + k * per, b = std::min<std::uintptr_t>(end, a + per);
    if (a < b) madvise(reinterpret_cast<void*>(a), b - a, 23 /* MADV_POPULATE_WRITE */);
  });
}
// As advise_huge_pages: the whole 2 MiB pages inside.
static void advise(void* p, std::size_t n) {
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (b + kHuge - 1) & ~(kHuge - 1), last = (b + n) & ~(kHuge - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}
static unsigned char* fresh(std::size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  madvise(p, n, MADV_HUGEPAGE);
  return static_cast<unsigned char*>(p);
}

// A thread's pinned chunks, stream and events.
constexpr int kDepth = 3;
struct Stager {
  void* h[kDepth];
  cudaEvent_t e[kDepth];
  cudaStream_t st;
  Stager(std::size_t chunk) {
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    for (int i = 0; i < kDepth; ++i)
      check(cudaHostAlloc(&h[i], chunk, cudaHostAllocPortable), "pinned"),
          check(cudaEventCreateWithFlags(&e[i], cudaEventDisableTiming), "event");
  }
};
// Range [a, b) of src into dst through s's chunks; its CRC (0 if !crc).
static std::uint32_t fused_range(Stager& s, std::size_t chunk, unsigned char* dst, const unsigned char* src,
                                 std::size_t a, std::size_t b, bool crc) {
  std::uint32_t c = 0;
  const std::size_t k = (b - a + chunk - 1) / chunk;
  auto q = [&](std::size_t j) {
    const std::size_t at = a + j * chunk;
    check(cudaMemcpyAsync(s.h[j % kDepth], src + at, std::min(chunk, b - at), cudaMemcpyDeviceToHost, s.st), "d2h");
    check(cudaEventRecord(s.e[j % kDepth], s.st), "rec");
  };
  for (std::size_t j = 0; j < std::min<std::size_t>(k, kDepth); ++j) q(j);
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t at = a + j * chunk, len = std::min(chunk, b - at);
    check(cudaEventSynchronize(s.e[j % kDepth]), "wait");
    // In pieces that stay in the core's cache between the copy and the checksum.
    constexpr std::size_t kPiece = std::size_t(256) << 10;
    for (std::size_t o = 0; o < len; o += kPiece) {
      const std::size_t l = std::min(kPiece, len - o);
      std::memcpy(dst + at + o, static_cast<const unsigned char*>(s.h[j % kDepth]) + o, l);
      if (crc) c = ksz::container::crc32c_threads(dst + at + o, l, c, 1);
    }
    if (j + kDepth < k) q(j + kDepth);
  }
  return c;
}
static std::uint32_t fused(std::vector<Stager>& st, std::size_t chunk, int threads, unsigned char* dst,
                           const unsigned char* src, std::size_t n, bool crc) {
  const std::size_t per = (n / threads + chunk - 1) / chunk * chunk;
  std::vector<std::uint32_t> c(threads, 0);
  split(threads, [&](int k) {
    const std::size_t a = std::min(n, k * per), b = std::min(n, a + per);
    if (a < b) c[k] = fused_range(st[k], chunk, dst, src, a, b, crc);
  });
  return c[0];  // (the probe times the work; joining the registers is a few multiplications)
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const std::size_t ns = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 212) << 20;
  const std::size_t nf = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 512) << 20;
  unsigned char* d;
  check(cudaMalloc(&d, nf), "malloc");
  check(cudaMemset(d, 0x5a, nf), "memset");
  std::printf("stream %zu MiB, field %zu MiB, %u host threads\n", ns >> 20, nf >> 20,
              std::thread::hardware_concurrency());
  std::vector<Stager> st;
  for (int k = 0; k < 8; ++k) st.emplace_back(std::size_t(4) << 20);
  constexpr int kReps = 5;
  // Today's stream: reserve, populate by 4 threads, resize (zero-fill), the
  // driver's copy, the checksum on 4 threads.
  {
    std::vector<double> tp, tz, tc, tk, tt;
    for (int r = 0; r < kReps; ++r) {
      auto t0 = Clock::now();
      std::vector<unsigned char> v;
      v.reserve(ns);
      advise(v.data(), ns);
      populate(v.data(), ns, 4);
      const double a = ms_since(t0);
      auto t1 = Clock::now();
      v.resize(ns);
      const double b = ms_since(t1);
      auto t2 = Clock::now();
      check(cudaMemcpy(v.data(), d, ns, cudaMemcpyDeviceToHost), "d2h");
      const double c = ms_since(t2);
      auto t3 = Clock::now();
      volatile std::uint32_t x = ksz::container::crc32c_threads(v.data(), ns, 0, 4);
      (void)x;
      const double e = ms_since(t3);
      tp.push_back(a), tz.push_back(b), tc.push_back(c), tk.push_back(e), tt.push_back(ms_since(t0));
    }
    std::printf("today stream: populate %.1f  zero-fill %.1f  driver d2h %.1f  crc(4) %.1f  total %.1f ms\n",
                median(tp), median(tz), median(tc), median(tk), median(tt));
  }
  for (int threads : {4, 8}) {
    std::vector<double> tf, tv, tn;
    for (int r = 0; r < kReps; ++r) {
      auto t0 = Clock::now();
      unsigned char* f = fresh(ns);
      fused(st, std::size_t(4) << 20, threads, f, d, ns, true);
      tf.push_back(ms_since(t0));
      munmap(f, ns);
      // into a populated, zero-filled vector (if the vector stays)
      t0 = Clock::now();
      std::vector<unsigned char> v;
      v.reserve(ns);
      advise(v.data(), ns);
      populate(v.data(), ns, 4);
      v.resize(ns);
      fused(st, std::size_t(4) << 20, threads, v.data(), d, ns, true);
      tv.push_back(ms_since(t0));
      // fresh, populated by the same threads first
      t0 = Clock::now();
      f = fresh(ns);
      populate(f, ns, threads);
      fused(st, std::size_t(4) << 20, threads, f, d, ns, true);
      tn.push_back(ms_since(t0));
      munmap(f, ns);
    }
    std::printf("fused x%d stream (copy + crc): into fresh %.1f  into a populated zeroed vector %.1f  populated by "
                "them first %.1f ms\n",
                threads, median(tf), median(tv), median(tn));
  }
  // The decompressed field: today (populate 4, zero-fill, driver copy) and fused.
  {
    std::vector<double> tt, tz;
    for (int r = 0; r < kReps; ++r) {
      auto t0 = Clock::now();
      std::vector<unsigned char> v;
      v.reserve(nf);
      advise(v.data(), nf);
      populate(v.data(), nf, 4);
      v.resize(nf);
      tz.push_back(ms_since(t0));
      check(cudaMemcpy(v.data(), d, nf, cudaMemcpyDeviceToHost), "d2h");
      tt.push_back(ms_since(t0));
    }
    std::printf("today field: populate + zero-fill %.1f  total %.1f ms\n", median(tz), median(tt));
  }
  for (int threads : {4, 8}) {
    std::vector<double> tf, tv;
    for (int r = 0; r < kReps; ++r) {
      auto t0 = Clock::now();
      unsigned char* f = fresh(nf);
      fused(st, std::size_t(4) << 20, threads, f, d, nf, false);
      tf.push_back(ms_since(t0));
      munmap(f, nf);
      t0 = Clock::now();
      std::vector<unsigned char> v;
      v.reserve(nf);
      advise(v.data(), nf);
      populate(v.data(), nf, 4);
      v.resize(nf);
      fused(st, std::size_t(4) << 20, threads, v.data(), d, nf, false);
      tv.push_back(ms_since(t0));
    }
    std::printf("fused x%d field: into fresh %.1f  into a populated zeroed vector %.1f ms\n", threads, median(tf),
                median(tv));
  }
}
