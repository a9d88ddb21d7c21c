// A few milliseconds of host work split a few ways (a buffer's page faults,
// a checksum's pieces): f(0) on the caller's thread, f(1) .. f(n - 1) on
// threads of their own, all joined before the return; where no thread can be
// had, the rest run on the caller's. Threads are started for the call, not
// kept (HostWorkers keeps them for microsecond tasks): nothing is left
// behind for a process that forks.
#pragma once
#include <cstddef>
#include <thread>
#include <vector>

namespace ksz {

template <class F>
void split_threads(std::size_t n, F f) {
  std::vector<std::thread> others;
  std::size_t started = 1;
  try {
    for (; started < n; ++started) others.emplace_back(f, started);
  } catch (...) {  // no thread to be had
  }
  f(std::size_t(0));
  for (std::size_t k = started; k < n; ++k) f(k);
  for (auto& t : others) t.join();
}

}  // namespace ksz
