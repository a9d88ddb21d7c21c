// Device buffers reused across calls: a pipeline's large intermediates (the
// quantization codes, n 16-bit words) are sized once and grown only when a
// larger field arrives, instead of being allocated and freed on every call
// (on an H200 a 256 MiB cudaMalloc+cudaFree pair costs 0.2-0.4 ms, as much as
// a whole pipeline stage). One workspace per memory space, process-wide,
// released by a Kokkos finalize hook. A call leases it for its duration; a
// concurrent call that finds it leased allocates its own buffers, so the
// workspace never serializes host threads.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace ksz::pipeline {

template <class Mem>
class Workspace {
 public:
  enum Slot {
    kCodes = 0,
    kOutliers,
    kOutliersAlt,
    kVerbatim,
    kVerbatimAlt,
    kSortTemp,
    kCounters,
    kHuffOffsets,
    kHuffWords,
    kHuffStatus,
    kHuffState,  // the single-pass Huffman encoder's chunk states
    kHuffRunBits,
    kHistogram,
    kHuffTables,  // a device codebook's tables
    kMetrics,  // per-block partials of the quality engine's reductions
    kSzxPayload,  // the one-pass SZx encoder's mid-bytes and verbatim values
    kSzxLead,     // and its leading codes
    kSzxState,    // the one-pass SZx kernels' look-back states
    kInterpRec,        // the interp compressor's reconstructed values
    kInterpResiduals,  // the interp pipeline's sparse residuals (code-0 positions)
    kEvenRec,          // the interp compressor's even-x grid (spline::EvenGrid): reconstructions
    kEvenCodes,        // and codes
    kLosslessSizes,    // the lossless encoder's block sizes and offsets
    kLosslessStaging,  // its coded blocks before the gather
    kLosslessPayload,  // and its payload
    kTrialSample,      // the interp spline-kind trial's sample,
    kTrialRec,         // its reconstructions,
    kTrialCodes,       // codes,
    kTrialResiduals,   // sparse residuals
    kTrialPasses,      // and pass table
    kZeroCounts,       // the interp compressor's code-0 counts per compaction block
    kZeroScanState,    // and their scan's look-back states (on CUDA)
    kCodeClasses,      // and its codes' magnitude classes per compaction block (histogram::histogram_classes)
    kOutlierSplit,     // its outlier list when verbatim elements are split off the code-0 list
    kBitGroups,        // outliers::list_bits' counts per group of words
    kTicket,           // a 32-bit work counter (native atomics on every GPU)
    kScalar,           // a stage's one-off device count or sum (the inverse's zero codes, the lossless bound)
    kOutlierValues,    // the Lorenzo compressor's outlier residuals
    kVerbatimValues,   // and verbatim values
    kEscapes,          // its byte codes' listed codes (quantize/byte_codes.hpp)
    kEscapesAlt,       // and their sort's second buffer
    kEscapeStarts,     // and the first of each Huffman chunk
    kValueRange,       // the value range's result and scratch on GPUs, for kernels queued behind it
                       // (the value-range passes' only, impl::queue_value_range's and the SZx
                       // one-pass path's: their kernels leave its counter zeroed)
    kSlots
  };

  // Holds the workspace (if free) for one call; get() then hands out its
  // buffers, or fresh ones when the lease was not granted.
  class Lease {
   public:
    Lease() : m_ws(instance()), m_held(m_ws.m_mutex.try_lock()) {}
    ~Lease() {
      if (m_held) m_ws.m_mutex.unlock();
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    // A buffer of at least n elements of T (uninitialized), the first n used.
    template <class T>
    // *fresh (where given): the buffer was allocated by this call, so it
    // holds nothing an earlier call left.
    Kokkos::View<T*, Mem> get(Slot slot, std::size_t n, const char* label, bool* fresh = nullptr) {
      if (!m_held) {
        if (fresh) *fresh = true;
        return Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
      }
      auto& buf = m_ws.m_buf[slot];
      const std::size_t bytes = n * sizeof(T);
      const bool grow = buf.extent(0) < bytes;
      if (fresh) *fresh = grow;
      if (grow) {
        // Exact the first time (peak memory of a single call); a slot that
        // has to grow gets room to grow a little more.
        const std::size_t room = buf.extent(0) ? bytes + bytes / 8 : bytes;
        buf = Kokkos::View<unsigned char*, Mem>();  // the old buffer goes first
        buf = Kokkos::View<unsigned char*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                                room);
      }
      return Kokkos::View<T*, Mem>(reinterpret_cast<T*>(buf.data()), n);  // unmanaged alias
    }

   private:
    Workspace& m_ws;
    bool m_held;
  };

  // A buffer from `ws` when the caller passes a lease, else a fresh one (for
  // helpers whose lease is optional).
  template <class T>
  static Kokkos::View<T*, Mem> buffer(Lease* ws, Slot slot, std::size_t n, const char* label) {
    return ws ? ws->template get<T>(slot, n, label)
              : Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
  }

  // buffer(), zeroed on space (asynchronously): a stage's counter or status word.
  template <class T, class ExecSpace>
  static Kokkos::View<T*, Mem> zeroed(const ExecSpace& space, Lease* ws, Slot slot, std::size_t n, const char* label) {
    const Kokkos::View<T*, Mem> v = buffer<T>(ws, slot, n, label);
    Kokkos::deep_copy(space, v, T(0));
    return v;
  }

  // Bytes currently held (reported by benchmarks as part of peak memory).
  static std::size_t held_bytes() {
    std::size_t b = 0;
    for (const auto& v : instance().m_buf) b += v.extent(0);
    return b;
  }

  // Frees every buffer (waits for a call holding the lease). For benchmarks
  // that measure the memory one call needs from a cold start.
  static void release() {
    Workspace& w = instance();
    std::lock_guard<std::mutex> g(w.m_mutex);
    for (auto& v : w.m_buf) v = Kokkos::View<unsigned char*, Mem>();
  }

 private:
  static Workspace& instance() {
    static Workspace* ws = [] {
      auto* w = new Workspace;
      // Device memory must go back before Kokkos finalizes.
      Kokkos::push_finalize_hook([w] {
        for (auto& v : w->m_buf) v = Kokkos::View<unsigned char*, Mem>();
      });
      return w;
    }();
    return *ws;
  }
  std::mutex m_mutex;
  Kokkos::View<unsigned char*, Mem> m_buf[kSlots];
};

}  // namespace ksz::pipeline
