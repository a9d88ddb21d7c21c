// Per-stage wall time with the device fenced at each boundary, so a stage's
// time is its own kernels' time.
#pragma once
#include <Kokkos_Core.hpp>
#include <chrono>
#include <string>

#include "src/api/ksz.hpp"

namespace ksz::pipeline {

template <class ExecSpace>
class StageTimer {
 public:
  StageTimer(const ExecSpace& space, Report* r) : m_space(space), m_report(r) {
    m_space.fence();
    m_start = m_last = Clock::now();
  }
  // Ends the current stage under `name`.
  void mark(const char* name) {
    m_space.fence();
    const auto now = Clock::now();
    if (m_report) m_report->stages.push_back({name, seconds(m_last, now)});
    m_last = now;
  }
  double total() const { return seconds(m_start, Clock::now()); }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  ExecSpace m_space;
  Report* m_report;
  Clock::time_point m_start, m_last;
};

}  // namespace ksz::pipeline
