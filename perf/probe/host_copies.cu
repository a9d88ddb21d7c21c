// Probe: what a host-side transfer stage of a few hundred MB costs on a GPU
// machine's host, piece by piece (perf/NOTES.md, "host transfers"): first
// touch of fresh memory (zeroing it), a memcpy between touched buffers, a
// CRC32C pass, pageable cudaMemcpy both ways (into fresh and into touched
// memory), and the same through three pinned 8 MiB chunks.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o host_copies perf/probe/host_copies.cu
#include <cuda_runtime.h>
#include <nmmintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }
static void check(cudaError_t e, const char* w) {
  if (e != cudaSuccess) std::printf("CUDA error %s: %s\n", w, cudaGetErrorString(e)), std::exit(1);
}
__attribute__((target("sse4.2"))) static std::uint32_t crc(const unsigned char* p, std::size_t n) {
  std::uint64_t c = ~0u;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  return ~static_cast<std::uint32_t>(c);
}
static unsigned char* fresh(std::size_t n, bool huge) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (huge) madvise(p, n, MADV_HUGEPAGE);
  return static_cast<unsigned char*>(p);
}
constexpr std::size_t kChunk = 8u << 20;
constexpr int kDepth = 3;
struct Chunks {
  void* h[kDepth];
  cudaEvent_t e[kDepth];
  bool used[kDepth] = {};
};
static void to_device(Chunks& c, void* d, const unsigned char* s, std::size_t n, cudaStream_t st) {
  int i = 0;
  for (std::size_t at = 0; at < n; at += kChunk, i = (i + 1) % kDepth) {
    const std::size_t len = std::min(kChunk, n - at);
    if (c.used[i]) check(cudaEventSynchronize(c.e[i]), "wait");
    std::memcpy(c.h[i], s + at, len);
    check(cudaMemcpyAsync(static_cast<char*>(d) + at, c.h[i], len, cudaMemcpyHostToDevice, st), "h2d");
    check(cudaEventRecord(c.e[i], st), "rec");
    c.used[i] = true;
  }
  check(cudaStreamSynchronize(st), "sync");
  for (bool& u : c.used) u = false;
}
static void to_host(Chunks& c, unsigned char* d, const void* s, std::size_t n, cudaStream_t st) {
  const std::size_t k = (n + kChunk - 1) / kChunk;
  auto q = [&](std::size_t j) {
    const std::size_t at = j * kChunk;
    check(cudaMemcpyAsync(c.h[j % kDepth], static_cast<const char*>(s) + at, std::min(kChunk, n - at),
                          cudaMemcpyDeviceToHost, st), "d2h");
    check(cudaEventRecord(c.e[j % kDepth], st), "rec");
  };
  for (std::size_t j = 0; j < std::min<std::size_t>(k, kDepth); ++j) q(j);
  for (std::size_t j = 0; j < k; ++j) {
    check(cudaEventSynchronize(c.e[j % kDepth]), "wait");
    std::memcpy(d + j * kChunk, c.h[j % kDepth], std::min(kChunk, n - j * kChunk));
    if (j + kDepth < k) q(j + kDepth);
  }
}
int main(int argc, char** argv) {
  const std::size_t n = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 212) << 20;
  cudaStream_t st;
  check(cudaStreamCreate(&st), "stream");
  void* d;
  check(cudaMalloc(&d, n), "malloc");
  Chunks c;
  for (int i = 0; i < kDepth; ++i) check(cudaHostAlloc(&c.h[i], kChunk, 0), "pinned"), check(cudaEventCreate(&c.e[i]), "ev");
  unsigned char* src = fresh(n, true);
  std::memset(src, 1, n);
  unsigned char* touched = fresh(n, true);
  std::memset(touched, 2, n);
  std::printf("%zu MiB\n", n >> 20);
  for (int rep = 0; rep < 3; ++rep) {
    auto t = Clock::now();
    unsigned char* f = fresh(n, false);
    std::memset(f, 0, n);
    const double z4k = ms_since(t);
    munmap(f, n);
    t = Clock::now();
    f = fresh(n, true);
    std::memset(f, 0, n);
    const double z2m = ms_since(t);
    munmap(f, n);
    t = Clock::now();
    std::memcpy(touched, src, n);
    const double mc = ms_since(t);
    t = Clock::now();
    volatile std::uint32_t x = crc(src, n);
    (void)x;
    const double cr = ms_since(t);
    t = Clock::now();
    check(cudaMemcpy(d, src, n, cudaMemcpyHostToDevice), "pageable h2d");
    const double ph2d = ms_since(t);
    t = Clock::now();
    f = fresh(n, true);
    check(cudaMemcpy(f, d, n, cudaMemcpyDeviceToHost), "pageable d2h fresh");
    const double pd2hf = ms_since(t);
    munmap(f, n);
    t = Clock::now();
    check(cudaMemcpy(touched, d, n, cudaMemcpyDeviceToHost), "pageable d2h");
    const double pd2h = ms_since(t);
    t = Clock::now();
    to_device(c, d, src, n, st);
    const double ch2d = ms_since(t);
    t = Clock::now();
    to_host(c, touched, d, n, st);
    const double cd2h = ms_since(t);
    t = Clock::now();
    f = fresh(n, true);
    to_host(c, f, d, n, st);
    const double cd2hf = ms_since(t);
    munmap(f, n);
    std::printf("zero fresh 4K %.1f ms, 2M %.1f; memcpy %.1f; crc %.1f; pageable h2d %.1f, d2h fresh %.1f, d2h touched "
                "%.1f; chunked h2d %.1f, d2h touched %.1f, d2h fresh %.1f\n",
                z4k, z2m, mc, cr, ph2d, pd2hf, pd2h, ch2d, cd2h, cd2hf);
  }
}
