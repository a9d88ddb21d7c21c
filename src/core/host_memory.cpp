#include "src/core/host_memory.hpp"

#include <algorithm>
#include <thread>

#include "src/core/split_threads.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ksz {

void advise_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  if (p == nullptr || bytes < kHuge) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1), last = (begin + bytes) & ~(kHuge - 1);
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

void prefault(void* p, std::size_t bytes) {
#if defined(__linux__)
  constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14; older kernels refuse it: a no-op)
  constexpr std::size_t kFrom = std::size_t(32) << 20, kPage = 4096;
  if (p == nullptr || bytes < kFrom) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(p) & ~(kPage - 1), end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  const unsigned hw = std::thread::hardware_concurrency();
  const std::size_t threads = std::min<std::size_t>(4, hw ? hw : 1);  // 8 MiB or more each past kFrom
  const std::size_t per = ((end - begin) / threads + kPage - 1) & ~(kPage - 1);
  const auto populate = [&](std::size_t k) {
    const std::uintptr_t a = begin + k * per, b = std::min<std::uintptr_t>(end, a + per);
    if (a < b) (void)madvise(reinterpret_cast<void*>(a), b - a, kPopulateWrite);
  };
  split_threads(threads, populate);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace ksz
