// Small results of a kernel (a reduction's value, a few counters) delivered
// straight into host memory: a slot of pinned, device-mapped host memory that
// the kernel writes and the host reads after synchronizing the stream. No
// copy call and no staging through pageable memory: on an H200 the pageable
// copy and the extra kernel that folded partials cost 20-25 us of a 0.32 ms
// pass. Slots come from a process-wide pool (one per concurrent call), are
// reused, and go back to CUDA when Kokkos finalizes. Each slot also owns a
// small device scratch buffer (per-block partials, a completion counter), so
// a call needs no allocation and no workspace lease. Host code; include only
// from CUDA translation units.
#pragma once
#include <cuda_runtime.h>

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <mutex>
#include <vector>

#include "src/core/error.hpp"

namespace ksz::cuda_spec {

class HostResult {
 public:
  // Up to the interp spline-kind trial's two histograms (2 x 8192 counts).
  static constexpr std::size_t kBytes = 128 * 1024 + 64;
  static constexpr std::size_t kScratchBytes = 64 * 1024;

  HostResult() {
    Pool& p = pool();
    {
      std::lock_guard<std::mutex> lock(p.mutex);
      if (!p.free.empty()) {
        m_slot = p.free.back();
        p.free.pop_back();
      }
    }
    if (!m_slot.host) {
      cudaError_t e = cudaHostAlloc(&m_slot.host, kBytes, cudaHostAllocMapped | cudaHostAllocPortable);
      KSZ_EXPECTS(e == cudaSuccess, "CUDA error in cudaHostAlloc: ", cudaGetErrorString(e));
      e = cudaMalloc(&m_slot.scratch, kScratchBytes);
      if (e != cudaSuccess) cudaFreeHost(m_slot.host);
      KSZ_EXPECTS(e == cudaSuccess, "CUDA error in cudaMalloc: ", cudaGetErrorString(e));
      e = cudaEventCreateWithFlags(&m_slot.done, cudaEventDisableTiming);
      if (e != cudaSuccess) cudaFreeHost(m_slot.host), cudaFree(m_slot.scratch);
      KSZ_EXPECTS(e == cudaSuccess, "CUDA error in cudaEventCreate: ", cudaGetErrorString(e));
      std::lock_guard<std::mutex> lock(p.mutex);
      p.all.push_back(m_slot);
    }
    const cudaError_t e = cudaHostGetDevicePointer(&m_device, m_slot.host, 0);
    KSZ_EXPECTS(e == cudaSuccess, "CUDA error in cudaHostGetDevicePointer: ", cudaGetErrorString(e));
  }
  ~HostResult() {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.free.push_back(m_slot);
  }
  HostResult(const HostResult&) = delete;
  HostResult& operator=(const HostResult&) = delete;

  // The slot as an array of T: the device's view (for kernels and copies) and
  // the host's (read after the stream is synchronized).
  template <class T>
  T* device() const {
    static_assert(alignof(T) <= 16, "slot alignment");
    return static_cast<T*>(m_device);
  }
  template <class T>
  const T* host() const {
    return static_cast<const T*>(m_slot.host);
  }
  // kScratchBytes of device memory, contents undefined at the start of a call.
  void* scratch() const { return m_slot.scratch; }
  // The slot's event (cuda_spec::PendingCopy records it after its copies).
  cudaEvent_t event() const { return m_slot.done; }

  // A count kernels on stream st add to: the scratch's first word, zeroed on
  // st. read_counter() then returns it once st's work so far is done (it
  // synchronizes st): no allocation and no pageable copy a call.
  unsigned long long* zeroed_counter(cudaStream_t st) const {
    auto* const c = static_cast<unsigned long long*>(m_slot.scratch);
    const cudaError_t e = cudaMemsetAsync(c, 0, sizeof(unsigned long long), st);
    KSZ_EXPECTS(e == cudaSuccess, "CUDA error in cudaMemsetAsync: ", cudaGetErrorString(e));
    return c;
  }
  unsigned long long read_counter(cudaStream_t st) const {
    cudaError_t e = cudaMemcpyAsync(device<unsigned long long>(), m_slot.scratch, sizeof(unsigned long long),
                                    cudaMemcpyDefault, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    KSZ_EXPECTS(e == cudaSuccess, "CUDA error reading a counter back: ", cudaGetErrorString(e));
    return host<unsigned long long>()[0];
  }

 private:
  struct Slot {
    void* host = nullptr;
    void* scratch = nullptr;
    cudaEvent_t done = nullptr;
  };
  struct Pool {
    std::mutex mutex;
    std::vector<Slot> free, all;
  };
  static Pool& pool() {
    static Pool* p = [] {
      auto* q = new Pool;
      Kokkos::push_finalize_hook([q] {
        std::lock_guard<std::mutex> lock(q->mutex);
        for (const Slot& s : q->all) {
          cudaFreeHost(s.host);
          cudaFree(s.scratch);
          cudaEventDestroy(s.done);
        }
        q->all.clear();
        q->free.clear();
      });
      return q;
    }();
    return *p;
  }
  Slot m_slot;
  void* m_device = nullptr;
};

}  // namespace ksz::cuda_spec
