// Bulk copies between pageable host memory and the device
// (copy_bytes_to_device, copy_bytes_to_host). Measured on the H200 machine
// (perf/probe/host_copies.cu, 212 MiB): a pageable cudaMemcpy to the device
// moves 6.3-6.6 GB/s, bound by the driver's one host thread staging it, and
// one thread's memcpy into three pinned 8 MiB chunks while the copy engine
// moves the last one 6.8-7.4. So both directions are split into ranges, each
// staged by its own host thread through its own chunks. To the host the
// driver's pageable copy moved 12.2-13.6 GB/s into touched memory, but fresh
// memory (a stream or a field handed to the caller) pays its page faults,
// and touching it first cost as much again (perf/probe/gather_host.cu: 212
// MiB, populated, zeroed and copied by the driver 52 ms, checksummed 5 more;
// eight threads through chunks into fresh memory, each copying its range's
// pieces and checksumming them from cache, 12 ms).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <mutex>
#include <vector>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/launch.hpp"
#include "src/container/checksum.hpp"
#include "src/core/host_workers.hpp"

namespace ksz::cuda_spec {
namespace {
using launch::check;

// Chunks a staging thread cycles through, and their size: two of 2 MiB keep
// the copy engine ahead of the thread (2 MiB move in about 0.05 ms over PCIe
// 5, against 0.2-0.5 ms for the thread's copy of them). Pinned memory costs
// about 0.35 ms a MiB to make on the H200 host, once a process
// (perf/probe/pinned_alloc.cu): three of 4 MiB a thread, eight threads, took
// a one-shot CLI process about 35 ms.
constexpr int kDepth = 2;
constexpr std::size_t kChunk = std::size_t(2) << 20;
// Staging threads of one copy (the caller and kept host workers), and the
// bytes each must have at least. To the host eight: its threads also fault in
// fresh pages and checksum (12 against 20 ms for four). To the device eight
// too now that a set is small (a 212 MB stream 7.7-8.6 against 8.8-9.5 ms):
// with three 4 MiB chunks a set, the four more sets cost a one-shot process
// more to make than they saved.
constexpr int kStagers = 8, kStagersToHost = 8;
constexpr std::size_t kStagedBytes = std::size_t(16) << 20, kStagedToHost = std::size_t(8) << 20;

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
// One staging thread's range to the host: the chunks' copies queued ahead
// (kDepth), each chunk copied out in pieces that stay in cache, checksummed
// from there where crc is given (continued), and queued again.
void stage_range_to_host(int device, cudaStream_t st, char* to, const char* from, std::size_t bytes,
                         std::uint32_t* crc) {
  Chunks c(device);
  const std::size_t k = (bytes + kChunk - 1) / kChunk;
  const auto queue = [&](std::size_t j) {
    const std::size_t at = j * kChunk;
    check(cudaMemcpyAsync(c.host(j % kDepth), from + at, std::min(kChunk, bytes - at), cudaMemcpyDeviceToHost, st),
          "copy to host");
    c.queued(static_cast<int>(j % kDepth), st);
  };
  for (std::size_t j = 0; j < std::min<std::size_t>(k, kDepth); ++j) queue(j);
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t at = j * kChunk, len = std::min(kChunk, bytes - at);
    c.wait(static_cast<int>(j % kDepth));
    if (crc) {
      *crc = container::copy_crc32c_one(to + at, c.host(static_cast<int>(j % kDepth)), len, *crc);
    } else {
      std::memcpy(to + at, c.host(static_cast<int>(j % kDepth)), len);
    }
    if (j + kDepth < k) queue(j + kDepth);
  }
}

// The ranges of whole chunks of a copy on up to `most` staging threads (at
// least `least` bytes each): f(k, offset, length) for each, the caller's
// first; the stream orders nothing between them (disjoint bytes), each
// thread waits for its own copies. Every range is done (or failed) before
// this returns, so no chunk goes back to the pool in use.
template <class F>
void split_ranges(std::size_t bytes, int most, std::size_t least, int device, F f) {
  const int stagers = static_cast<int>(std::min<std::size_t>(most, std::max<std::size_t>(1, bytes / least)));
  // A range of at least bytes / stagers rounded up, then up to whole chunks,
  // so that the ranges cover every byte (bytes / stagers rounded down lost the
  // last bytes wherever it was a whole number of chunks: 64 MiB + 1 on four
  // threads, an upload short of its last byte).
  const std::size_t per = ((bytes + stagers - 1) / stagers + kChunk - 1) / kChunk * kChunk;
  std::vector<std::future<void>> others;
  for (int k = 1; k < stagers && k * per < bytes; ++k) {
    const std::size_t at = k * per, len = std::min(per, bytes - at);
    others.push_back(HostWorkers::run([device, f, k, at, len] {
      check(cudaSetDevice(device), "staging thread's device");  // a worker's current device is its own
      f(k, at, len);
    }));
  }
  std::exception_ptr failed;
  try {
    f(0, std::size_t(0), std::min(per, bytes));
  } catch (...) {
    failed = std::current_exception();
  }
  for (auto& r : others) {
    try {
      r.get();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
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
  const char* const from = static_cast<const char*>(src);
  char* const to = static_cast<char*>(dst);
  split_ranges(bytes, kStagers, kStagedBytes, device, [device, st, to, from](int, std::size_t at, std::size_t len) {
    stage_range(device, st, to + at, from + at, len);
  });
}

void copy_bytes_to_host(const Kokkos::Cuda& space, void* dst, const void* src, std::size_t bytes, std::uint32_t* crc) {
  if (crc) *crc = 0;
  if (bytes == 0) return;
  const cudaStream_t st = space.cuda_stream();
  if (bytes < kChunkedFrom) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st), "copy to host");
    check(cudaStreamSynchronize(st), "copy to host sync");
    if (crc) *crc = container::crc32c(dst, bytes);
    return;
  }
  const int device = space.cuda_device();
  const char* const from = static_cast<const char*>(src);
  char* const to = static_cast<char*>(dst);
  std::uint32_t crcs[kStagersToHost] = {};
  std::size_t lens[kStagersToHost] = {};
  split_ranges(bytes, kStagersToHost, kStagedToHost, device,
               [device, st, to, from, crc, &crcs, &lens](int k, std::size_t at, std::size_t len) {
                 lens[k] = len;
                 stage_range_to_host(device, st, to + at, from + at, len, crc ? &crcs[k] : nullptr);
               });
  if (crc)
    for (int k = 0; k < kStagersToHost; ++k) *crc = container::crc32c_combine(*crc, crcs[k], lens[k]);
}

}  // namespace ksz::cuda_spec
