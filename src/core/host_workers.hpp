// Host threads kept for small tasks that overlap a caller's device work (the
// Huffman codebook while the caller launches kernels). std::async starts a
// thread per call, and a fresh thread pays its creation and a cold malloc
// arena: on an H200 host the caller's launches took 30-40 us longer and a
// 0.09 ms codebook took 0.23 ms. A task runs on an idle kept thread, or on a
// new one that is then kept (so concurrent callers never wait on each other).
// Not for processes that fork after using it: the child inherits the
// bookkeeping of threads it does not have (the pipelines use it on GPUs only,
// where CUDA rules fork out anyway).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace ksz {

class HostWorkers {
 public:
  // f() on a kept thread; its result (or exception) through the future.
  template <class F>
  static std::future<std::invoke_result_t<F>> run(F f) {
    using R = std::invoke_result_t<F>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(f));
    std::future<R> result = task->get_future();
    instance().post([task] { (*task)(); });
    return result;
  }

  // f's result (a job's, or any future's), polled for up to `poll` and then
  // slept on: for a caller that expects it soon and loses more to a late
  // wake-up than to a busy core (a thread asleep on a future woke 15-380 us
  // after the result on the H200 hosts, VMs). The counterpart of warm().
  template <class R>
  static R result(std::future<R>& f, std::chrono::nanoseconds poll) {
    const auto until = std::chrono::steady_clock::now() + poll;
    while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < until) {
    }
    return f.get();
  }

  // Has a kept thread poll for jobs until `d` from now instead of sleeping
  // (one is started if none is idle): for a caller that will soon post a job
  // and wait for it. A thread woken from sleep ran its first job on a cold,
  // slow core: the H200 hosts took 0.1-0.3 ms for a 0.09 ms codebook.
  // `first`, if given, runs on that thread before it polls: work that warms
  // its caches for the job to come (it may delay a job posted meanwhile).
  static void warm(std::chrono::nanoseconds d, std::function<void()> first = {}) {
    HostWorkers& w = instance();
    std::lock_guard<std::mutex> lock(w.m_mutex);
    w.m_warm_until = std::chrono::steady_clock::now() + d;
    w.m_warm = true;
    w.m_first = std::move(first);
    if (w.m_idle == 0) w.m_threads.emplace_back([&w] { w.loop(); });
    w.m_cv.notify_one();
  }

  ~HostWorkers() {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_stop = true;
    }
    m_stopping.store(true, std::memory_order_relaxed);  // ends a poll at once
    m_cv.notify_all();
    for (std::thread& t : m_threads) t.join();
  }

 private:
  HostWorkers() = default;
  static HostWorkers& instance() {
    static HostWorkers w;
    return w;
  }

  void post(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_jobs.push_back(std::move(job));
    m_pending.fetch_add(1, std::memory_order_release);
    if (m_jobs.size() > m_idle) m_threads.emplace_back([this] { loop(); });
    m_cv.notify_one();
  }

  void loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
      ++m_idle;
      m_cv.wait(lock, [this] { return m_stop || !m_jobs.empty() || m_warm; });
      if (m_jobs.empty() && !m_stop) {  // warmed: poll until a job comes or the time is up
        m_warm = false;
        const auto until = m_warm_until;
        const std::function<void()> first = std::move(m_first);
        m_first = nullptr;
        lock.unlock();
        if (first) first();
        while (m_pending.load(std::memory_order_acquire) == 0 && !m_stopping.load(std::memory_order_relaxed) &&
               std::chrono::steady_clock::now() < until) {
        }
        lock.lock();
      }
      --m_idle;
      if (m_jobs.empty()) {
        if (m_stop) return;
        continue;
      }
      std::function<void()> job = std::move(m_jobs.front());
      m_jobs.pop_front();
      m_pending.fetch_sub(1, std::memory_order_relaxed);
      lock.unlock();
      job();  // a packaged_task: keeps its exception for the future
      lock.lock();
    }
  }

  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<std::function<void()>> m_jobs;
  std::vector<std::thread> m_threads;
  std::size_t m_idle = 0;  // threads waiting for a job
  std::atomic<std::size_t> m_pending{0};  // jobs queued (polled without the lock)
  std::atomic<bool> m_stopping{false};    // m_stop, for the poll
  std::chrono::steady_clock::time_point m_warm_until;
  std::function<void()> m_first;  // warm()'s, for the thread that polls
  bool m_warm = false;
  bool m_stop = false;
};

}  // namespace ksz
