// Bulk copies between pageable host memory and the device
// (copy_bytes_to_device, copy_bytes_to_host). Measured on the H200 machine
// (perf/probe/host_copies.cu, 212 MiB): a pageable cudaMemcpy to the device
// moves 6.3-6.6 GB/s, bound by the driver's one host thread staging it, and
// one thread's memcpy into three pinned 8 MiB chunks while the copy engine
// moves the last one 6.8-7.4; to the host the driver's pageable copy is the
// faster one (12.2-13.6 GB/s into touched memory against 6.4-7.5 through
// chunks), and into fresh memory both pay its page faults. So the device-bound copy is split into
// ranges, each staged by its own host thread through its own chunks, and the
// host-bound copy is the driver's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <mutex>
#include <vector>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/launch.hpp"
#include "src/core/host_workers.hpp"

namespace ksz::cuda_spec {
namespace {
using launch::check;

// Chunks a staging thread cycles through, and their size: three of 4 MiB keep
// the copy engine busy while the thread copies the next (4 MiB move in about
// 0.1 ms over PCIe 5).
constexpr int kDepth = 3;
constexpr std::size_t kChunk = std::size_t(4) << 20;
// Staging threads of one copy (the caller and kept host workers), and the
// bytes each must have at least.
constexpr int kStagers = 4;
constexpr std::size_t kStagedBytes = std::size_t(16) << 20;

// A set of pinned chunks and an event each (the copy that last used it), from
// a process-wide pool (one set a concurrent copy; events belong to a device,
// so a set serves the device it was made on), freed when Kokkos finalizes.
// Made and used with `device` current.
class Chunks {
 public:
  explicit Chunks(int device) {
    Pool& p = pool();
    {
      std::lock_guard<std::mutex> lock(p.mutex);
      for (std::size_t k = 0; k < p.free.size(); ++k) {
        if (p.free[k].device != device) continue;
        m_set = p.free[k];
        p.free.erase(p.free.begin() + static_cast<std::ptrdiff_t>(k));
        return;
      }
    }
    Set s;
    s.device = device;
    for (int i = 0; i < kDepth; ++i) {
      cudaError_t e = cudaHostAlloc(&s.host[i], kChunk, cudaHostAllocPortable);
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s.done[i], cudaEventDisableTiming);
      if (e != cudaSuccess) {
        release(s);
        check(e, "pinned transfer chunks");
      }
    }
    std::lock_guard<std::mutex> lock(p.mutex);
    p.all.push_back(s);
    m_set = s;
  }
  ~Chunks() {
    // A copy still in flight must not land in a set handed to another call
    // (after an error thrown between a queued copy and its wait).
    for (int i = 0; i < kDepth; ++i)
      if (m_used[i]) cudaEventSynchronize(m_set.done[i]);
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.free.push_back(m_set);
  }
  Chunks(const Chunks&) = delete;
  Chunks& operator=(const Chunks&) = delete;

  char* host(int i) const { return static_cast<char*>(m_set.host[i]); }
  // Marks chunk i's copy queued on st.
  void queued(int i, cudaStream_t st) {
    check(cudaEventRecord(m_set.done[i], st), "transfer event");
    m_used[i] = true;
  }
  // Waits for chunk i's last queued copy.
  void wait(int i) {
    if (!m_used[i]) return;
    check(cudaEventSynchronize(m_set.done[i]), "transfer wait");
    m_used[i] = false;
  }

 private:
  struct Set {
    int device = 0;
    void* host[kDepth] = {};
    cudaEvent_t done[kDepth] = {};
  };
  struct Pool {
    std::mutex mutex;
    std::vector<Set> free, all;
  };
  static void release(const Set& s) {
    for (int i = 0; i < kDepth; ++i) {
      if (s.host[i]) cudaFreeHost(s.host[i]);
      if (s.done[i]) cudaEventDestroy(s.done[i]);
    }
  }
  static Pool& pool() {
    static Pool* p = [] {
      auto* q = new Pool;
      Kokkos::push_finalize_hook([q] {
        std::lock_guard<std::mutex> lock(q->mutex);
        for (const Set& s : q->all) release(s);
        q->all.clear();
        q->free.clear();
      });
      return q;
    }();
    return *p;
  }
  Set m_set;
  bool m_used[kDepth] = {};
};

// Copies no larger than this go as one pageable copy: the chunks' hand-offs
// would cost more than they save.
constexpr std::size_t kChunkedFrom = std::size_t(1) << 20;

// One staging thread's range: a memcpy into a chunk, its copy queued, the
// next chunk; a chunk is reused once its last copy is done. `device` (the
// stream's) is current.
void stage_range(int device, cudaStream_t st, char* to, const char* from, std::size_t bytes) {
  Chunks c(device);
  int i = 0;
  for (std::size_t at = 0; at < bytes; at += kChunk, i = (i + 1) % kDepth) {
    const std::size_t len = std::min(kChunk, bytes - at);
    c.wait(i);
    std::memcpy(c.host(i), from + at, len);
    check(cudaMemcpyAsync(to + at, c.host(i), len, cudaMemcpyHostToDevice, st), "copy to device");
    c.queued(i, st);
  }
  for (int k = 0; k < kDepth; ++k) c.wait(k);
}
}  // namespace

void copy_bytes_to_device(const Kokkos::Cuda& space, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t st = space.cuda_stream();
  if (bytes < kChunkedFrom) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st), "copy to device");
    check(cudaStreamSynchronize(st), "copy to device sync");
    return;
  }
  const int device = space.cuda_device();
  // Ranges of whole chunks, the caller's first; the stream orders nothing
  // between them (disjoint bytes), each thread waits for its own copies.
  const int stagers = static_cast<int>(std::min<std::size_t>(kStagers, std::max<std::size_t>(1, bytes / kStagedBytes)));
  const std::size_t per = (bytes / stagers + kChunk - 1) / kChunk * kChunk;
  const char* const from = static_cast<const char*>(src);
  char* const to = static_cast<char*>(dst);
  std::vector<std::future<void>> others;
  for (int k = 1; k < stagers && k * per < bytes; ++k) {
    const std::size_t at = k * per, len = std::min(per, bytes - at);
    others.push_back(HostWorkers::run([device, st, to, from, at, len] {
      check(cudaSetDevice(device), "staging thread's device");  // a worker's current device is its own
      stage_range(device, st, to + at, from + at, len);
    }));
  }
  std::exception_ptr failed;
  try {
    stage_range(device, st, to, from, std::min(per, bytes));
  } catch (...) {
    failed = std::current_exception();
  }
  for (auto& f : others) {  // every range done (or failed) before the buffers go back
    try {
      f.get();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
}

void copy_bytes_to_host(const Kokkos::Cuda& space, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaStream_t st = space.cuda_stream();
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st), "copy to host");
  check(cudaStreamSynchronize(st), "copy to host sync");
}

}  // namespace ksz::cuda_spec
