// Probe: what pinned host memory costs to make (cudaHostAlloc), in many small
// pieces or one block, on a fresh process's first calls and after; and what
// touching it first costs. perf/NOTES.md, "twenty-seventh round": a one-shot
// CLI process pays for the eight pinned chunk sets of its copies (96 MiB).
//   nvcc -O3 -arch=sm_90 -std=c++17 -o pinned_alloc perf/probe/pinned_alloc.cu
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }

int main() {
  cudaFree(nullptr);  // the context first
  constexpr std::size_t kMiB = std::size_t(1) << 20;
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> p(24);
    auto t = Clock::now();
    for (auto& q : p) cudaHostAlloc(&q, 4 * kMiB, cudaHostAllocPortable);
    const double many = ms_since(t);
    t = Clock::now();
    for (auto q : p) cudaFreeHost(q);
    const double free_many = ms_since(t);
    void* one = nullptr;
    t = Clock::now();
    cudaHostAlloc(&one, 96 * kMiB, cudaHostAllocPortable);
    const double single = ms_since(t);
    t = Clock::now();
    std::memset(one, 1, 96 * kMiB);
    const double touch = ms_since(t);
    t = Clock::now();
    cudaFreeHost(one);
    const double free_one = ms_since(t);
    void* small = nullptr;
    t = Clock::now();
    cudaHostAlloc(&small, 12 * kMiB, cudaHostAllocPortable);
    const double set = ms_since(t);
    cudaFreeHost(small);
    std::printf("round %d: 24 x 4 MiB %.1f ms (free %.1f); 1 x 96 MiB %.1f ms (first touch %.1f, free %.1f); 1 x 12 MiB %.1f ms\n",
                round, many, free_many, single, touch, free_one, set);
  }
}
