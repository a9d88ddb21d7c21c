// Helpers every pipeline shares: bound resolution from the value range,
// segment transfers between device views and container bytes, index packing.
// Factored out of the Lorenzo pipeline unchanged, so its bytes stay the same.
#pragma once
#include <Kokkos_Core.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/encode/huffman/codebook.hpp"
#include "portable/encode/huffman/huffman.hpp"
#include "portable/simd/sse2.hpp"
#include "portable/histogram/histogram.hpp"
#include "portable/lossless/lossless.hpp"
#include "portable/quantize/outliers.hpp"
#include "portable/quantize/prequant.hpp"
#include "src/api/ksz.hpp"
#include "src/container/checksum.hpp"
#include "src/container/container.hpp"
#include "src/core/error.hpp"
#include "src/core/host_memory.hpp"
#include "src/core/host_workers.hpp"
#include "src/core/types.hpp"
#include "src/pipeline/workspace.hpp"

namespace ksz::pipeline::impl {

using container::Param;
using container::SegmentId;

struct Range {
  double min, max;
  bool any_finite;
};

// The range of finite values from their extremes (mn > mx: none). -0 and +0
// compare equal: which one a reduction keeps depends on its schedule, and the
// header stores both ends, so either end that is zero is made +0.
inline Range range_of_extremes(double mn, double mx) {
  Range out{mn, mx, mn <= mx};
  if (!out.any_finite) out.min = out.max = 0;
  if (out.min == 0) out.min = 0;
  if (out.max == 0) out.max = 0;
  return out;
}

// GPUs: a team per slice of kRangeSlice elements; each thread keeps its min
// and max in registers (in T: exact) over 16-byte loads and the team reduces
// once. (A RangePolicy parallel_reduce keeps its running value in shared
// memory in Kokkos 3.4: 1.7 ms for 512^3 f32 on an H200.)
constexpr std::uint64_t kRangeSlice = std::uint64_t(1) << 16;

template <class T>
struct alignas(16) Vec16 {  // one 16-byte load of T
  T v[16 / sizeof(T)];
};

template <class ExecSpace, class T>
struct FiniteMinMaxTeams {  // a functor: see the note on parallel_reduce in lorenzo.hpp
  using MM = Kokkos::MinMax<double>;
  using value_type = typename MM::value_type;
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  Kokkos::View<const T*, typename ExecSpace::memory_space> in;
  bool aligned;  // in.data() on a 16-byte boundary
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, value_type& acc) const {
    constexpr std::uint64_t W = 16 / sizeof(T);
    const std::uint64_t n = in.extent(0);
    const std::uint64_t b = static_cast<std::uint64_t>(team.league_rank()) * kRangeSlice;
    const std::uint64_t e = b + kRangeSlice < n ? b + kRangeSlice : n;
    const std::uint64_t ts = static_cast<std::uint64_t>(team.team_size()), tr = static_cast<std::uint64_t>(team.team_rank());
    T mn = static_cast<T>(HUGE_VAL), mx = -static_cast<T>(HUGE_VAL);
    const auto fold = [&](const T v) {
      const bool f = v - v == T(0);  // finite: NaN and Inf give NaN
      mn = (f && v < mn) ? v : mn;
      mx = (f && v > mx) ? v : mx;
    };
    std::uint64_t i = b + tr;
    if (aligned) {  // b is a multiple of W
      const Vec16<T>* p = reinterpret_cast<const Vec16<T>*>(in.data());
      for (std::uint64_t k = b / W + tr; k < e / W; k += ts) {
        const Vec16<T> v = p[k];
        for (std::uint64_t j = 0; j < W; ++j) fold(v.v[j]);
      }
      i = e / W * W + tr;
    }
    for (; i < e; i += ts) fold(in(i));
    typename Kokkos::MinMax<T>::value_type t;
    t.min_val = mn, t.max_val = mx;
    team.team_reduce(Kokkos::MinMax<T>(t));
    if (t.min_val < acc.min_val) acc.min_val = t.min_val;
    if (t.max_val > acc.max_val) acc.max_val = t.max_val;
  }
};

// Min and max of the finite values of x[0, n) in T, folded into mn and mx;
// branch-free so the loop vectorizes. Exact: any split gives the same ends,
// up to the sign of zero.
template <class T>
inline void finite_min_max(const T* x, std::uint64_t n, T& mn, T& mx) {
  for (std::uint64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const bool f = v - v == T(0);  // finite: NaN and Inf give NaN
    mn = (f && v < mn) ? v : mn;
    mx = (f && v > mx) ? v : mx;
  }
}
#ifdef KSZ_HAVE_SSE2
// SSE2, as compilers do not vectorize a float min/max without
// -ffinite-math-only: v + (v - v) turns NaN and Inf into NaN (and -0 into +0),
// which min(v, acc) and max(v, acc) skip (they return the second operand when
// the first is NaN).
template <class T, class S = simd::Sse2<T>>
inline void finite_min_max_sse2(const T* x, std::uint64_t n, T& mn, T& mx) {
  constexpr std::uint32_t W = S::kWidth;
  typename S::V lo[2] = {S::set1(mn), S::set1(mn)}, hi[2] = {S::set1(mx), S::set1(mx)};
  std::uint64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W)
    for (std::uint32_t j = 0; j < 2; ++j) {
      const typename S::V v = S::load(x + i + j * W);
      const typename S::V u = S::add(v, S::sub(v, v));
      lo[j] = S::min(u, lo[j]);
      hi[j] = S::max(u, hi[j]);
    }
  T a[2 * W], b[2 * W];
  S::store(a, lo[0]), S::store(a + W, lo[1]), S::store(b, hi[0]), S::store(b + W, hi[1]);
  for (std::uint32_t j = 0; j < 2 * W; ++j) {
    mn = a[j] < mn ? a[j] : mn;
    mx = b[j] > mx ? b[j] : mx;
  }
  finite_min_max<T>(x + i, n - i, mn, mx);
}
inline void finite_min_max(const float* x, std::uint64_t n, float& mn, float& mx) {
  finite_min_max_sse2(x, n, mn, mx);
}
inline void finite_min_max(const double* x, std::uint64_t n, double& mn, double& mx) {
  finite_min_max_sse2(x, n, mn, mx);
}
#endif

template <class ExecSpace, class T>
Range value_range(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in) {
  using MM = Kokkos::MinMax<double>;
  typename MM::value_type r;
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    double mn, mx;
    if (cuda_spec::finite_minmax<T>(space, in.data(), in.extent(0), mn, mx)) return range_of_extremes(mn, mx);
  }
#endif
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  if constexpr (host) {
    // CPUs: min/max in T over long segments (finite_min_max); exact, so any
    // split gives the same ends (up to the sign of zero, made canonical below).
    r.min_val = std::numeric_limits<double>::infinity();
    r.max_val = -std::numeric_limits<double>::infinity();
    const std::uint64_t n = in.extent(0), seg = 1 << 16, parts = (n + seg - 1) / seg;
    std::vector<double> pmin(parts), pmax(parts);
    const T* x = in.data();
    Kokkos::parallel_for(
        "ksz::value_range_segments", Kokkos::RangePolicy<ExecSpace>(space, 0, parts), [&](const std::uint64_t p) {
          const std::uint64_t b = p * seg, e = b + seg < n ? b + seg : n;
          T mn = std::numeric_limits<T>::infinity(), mx = -std::numeric_limits<T>::infinity();
          finite_min_max(x + b, e - b, mn, mx);
          pmin[p] = mn, pmax[p] = mx;
        });
    space.fence();
    for (std::uint64_t p = 0; p < parts; ++p) {
      r.min_val = pmin[p] < r.min_val ? pmin[p] : r.min_val;
      r.max_val = pmax[p] > r.max_val ? pmax[p] : r.max_val;
    }
  } else {
    const std::uint64_t league = (in.extent(0) + kRangeSlice - 1) / kRangeSlice;
    if (league == 0) {
      r.min_val = std::numeric_limits<double>::infinity();
      r.max_val = -std::numeric_limits<double>::infinity();
    } else {
      Kokkos::parallel_reduce("ksz::value_range", Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(league), 256),
                              FiniteMinMaxTeams<ExecSpace, T>{in, reinterpret_cast<std::uintptr_t>(in.data()) % 16 == 0},
                              MM(r));
    }
  }
  return range_of_extremes(r.min_val, r.max_val);
}

// Quantization parameters from the resolved bound. A zero bound (a constant
// field under REL) still needs a step: one that reproduces the constant exactly.
inline quantize::QuantParams quant_params(double abs_bound, const Range& r) {
  const double step = quantize::quant_step(abs_bound, r.any_finite, r.max);
  return {step, 1.0 / step, abs_bound};
}

inline std::size_t index_width(std::uint64_t n) { return n > 0xFFFFFFFFull ? 8 : 4; }

template <class IndexView>  // a View of (const) std::uint64_t in any memory space
std::vector<std::uint8_t> pack_indices(const IndexView& idx, std::uint64_t n) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), idx);
  const std::size_t w = index_width(n);
  std::vector<std::uint8_t> out(h.extent(0) * w);
  for (std::size_t j = 0; j < h.extent(0); ++j) {
    if (w == 4) {
      const auto v = static_cast<std::uint32_t>(h(j));
      std::memcpy(out.data() + 4 * j, &v, 4);
    } else {
      std::memcpy(out.data() + 8 * j, &h(j), 8);
    }
  }
  return out;
}

template <class ExecSpace>
Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> unpack_indices(const ExecSpace& space,
                                                                               const container::Segment& s,
                                                                               std::uint64_t count,
                                                                               std::uint64_t n, const char* what) {
  const std::size_t w = index_width(n);
  KSZ_STREAM_CHECK(s.size == count * w, what, " index segment has ", s.size, " bytes, expected ", count * w);
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> h("ksz::indices_host", count);
  for (std::uint64_t j = 0; j < count; ++j) {
    if (w == 4) {
      std::uint32_t v;
      std::memcpy(&v, s.data + 4 * j, 4);
      h(j) = v;
    } else {
      std::memcpy(&h(j), s.data + 8 * j, 8);
    }
  }
  Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> d("ksz::indices", count);
  Kokkos::deep_copy(space, d, h);
  outliers::validate_indices<ExecSpace>(space, d, n, what);
  return d;
}

#if defined(KSZ_HAVE_CUDA)
// The workspace's value-range slot (cuda_spec::kMinmaxBufDoubles). Only the
// value-range passes use it (this file's and the SZx one-pass path's), and
// their kernels leave its counter zeroed: fresh, just allocated, is the one
// case where it is not.
inline Kokkos::View<double*, Kokkos::Cuda::memory_space> value_range_slot(
    typename Workspace<Kokkos::Cuda::memory_space>::Lease& ws, bool& fresh) {
  using WS = Workspace<Kokkos::Cuda::memory_space>;
  fresh = true;
  return ws.template get<double>(WS::kValueRange, cuda_spec::kMinmaxBufDoubles, "ksz::value_range", &fresh);
}
// The finite values' extremes of in[0, n) queued on space into the slot
// (buf[0], buf[1], nothing awaited: cuda_spec::finite_minmax_to); an empty
// view where the specialization does not take the call.
template <class T>
Kokkos::View<double*, Kokkos::Cuda::memory_space> queue_value_range(
    const Kokkos::Cuda& space, const T* in, std::uint64_t n,
    typename Workspace<Kokkos::Cuda::memory_space>::Lease& ws) {
  bool fresh = true;
  const auto buf = value_range_slot(ws, fresh);
  if (!cuda_spec::finite_minmax_to<T>(space, in, n, buf.data(), !fresh)) return {};
  return buf;
}
#endif

// The first `bytes` bytes of v to host memory at dst, after everything
// queued anywhere (as deep_copy; from CUDA memory through pinned chunks on
// several host threads, cuda_spec::copy_bytes_to_host), and their CRC-32C
// where crc is given.
template <class V, class Mem>
void copy_to_host(Kokkos::View<V*, Mem> v, std::uint8_t* dst, std::uint64_t bytes, std::uint32_t* crc = nullptr) {
  if (crc) *crc = 0;
  if (bytes == 0) return;
  if constexpr (cuda_spec::kBulkCopyMem<Mem>) {
#if defined(KSZ_HAVE_CUDA)
    Kokkos::fence();
    cuda_spec::copy_bytes_to_host(Kokkos::Cuda(), dst, v.data(), bytes, crc);
#endif
  } else {
    const std::uint64_t count = bytes / sizeof(V);
    Kokkos::View<V*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(reinterpret_cast<V*>(dst), count);
    Kokkos::deep_copy(h, Kokkos::subview(v, std::make_pair(std::uint64_t(0), count)));
    if (crc) *crc = container::crc32c(dst, bytes);
  }
}

// (A zeroed std::vector: these are small, and callers keep them as such.)
template <class V, class Mem>
std::vector<std::uint8_t> to_host_bytes(Kokkos::View<V*, Mem> v, std::uint64_t count) {
  std::vector<std::uint8_t> out;
  resize_huge(out, count * sizeof(V));
  copy_to_host(v, out.data(), out.size());
  return out;
}

// Host memory is already where the container needs it.
template <class Mem>
constexpr bool kHostMem = std::is_same<Mem, Kokkos::HostSpace>::value;

// The first count values of v as a stream segment: read in place on host
// spaces (v must outlive container::write), written into the stream from the
// device elsewhere (no host copy in between: Segment::fill).
template <class V, class Mem>
container::Segment stream_segment(container::SegmentId id, Kokkos::View<V*, Mem> v, std::uint64_t count) {
  const std::uint64_t bytes = count * sizeof(V);
  if constexpr (kHostMem<Mem>)
    return {id, reinterpret_cast<const std::uint8_t*>(v.data()), bytes};
  else
    return {id, nullptr, bytes, [v, bytes](std::uint8_t* dst) {
              std::uint32_t crc = 0;
              copy_to_host(v, dst, bytes, &crc);
              return crc;
            }};
}

// A segment's bytes that a function hands to its caller's container::write:
// stream_segment's, with the view they come from kept alive.
struct SegmentBytes {
  container::Segment bytes{container::SegmentId{}, nullptr, 0};
  std::shared_ptr<const void> keep;  // the view (host spaces: bytes.data points into it)
  std::uint64_t size() const { return bytes.size; }
  container::Segment segment(container::SegmentId id) const {
    container::Segment s = bytes;
    s.id = id;
    return s;
  }
};
template <class V, class Mem>
SegmentBytes segment_bytes(Kokkos::View<V*, Mem> v, std::uint64_t count) {
  return {stream_segment(container::SegmentId{}, v, count), std::make_shared<const Kokkos::View<V*, Mem>>(v)};
}

// The device arrays `parts`, one after the other, as host words once the
// device has run what was queued on space before the fetch began, not what
// was queued after it: the copy starts here and wait() returns the words, so
// work queued in between runs while the host waits. On CUDA through a pinned
// slot and its event (cuda_spec::PendingCopy; a pageable copy a part took
// 20-40 us more at a stage's end on an H200); elsewhere a deep copy a part,
// at once.
template <class ExecSpace>
class WordsFetch {
 public:
  using Parts = std::initializer_list<Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space>>;
  WordsFetch(const ExecSpace& space, Parts parts) {
    std::size_t total = 0;
    for (const auto& p : parts) total += p.extent(0);
    m_words.resize(total);
#if defined(KSZ_HAVE_CUDA)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      std::vector<const void*> src;
      std::vector<std::size_t> bytes;
      for (const auto& p : parts) {
        src.push_back(p.data());
        bytes.push_back(p.extent(0) * sizeof(std::uint64_t));
      }
      if (m_copy.start(space, src.data(), bytes.data(), static_cast<int>(src.size()))) {
        m_pending = true;
        return;
      }
    }
#endif
    std::size_t at = 0;
    for (const auto& p : parts) {
      Kokkos::deep_copy(space,
                        Kokkos::View<std::uint64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            m_words.data() + at, p.extent(0)),
                        p);
      at += p.extent(0);
    }
    space.fence();
  }
  std::vector<std::uint64_t> wait() {
#if defined(KSZ_HAVE_CUDA)
    if (m_pending) m_copy.finish(m_words.data());
    m_pending = false;
#endif
    return std::move(m_words);
  }

 private:
  std::vector<std::uint64_t> m_words;
#if defined(KSZ_HAVE_CUDA)
  cuda_spec::PendingCopy m_copy;
  bool m_pending = false;
#endif
};

// The same, waited for at once: one synchronization.
template <class ExecSpace>
std::vector<std::uint64_t> fetch_words(const ExecSpace& space, typename WordsFetch<ExecSpace>::Parts parts) {
  return WordsFetch<ExecSpace>(space, parts).wait();
}

template <class V, class ExecSpace>
Kokkos::View<V*, typename ExecSpace::memory_space> to_device(const ExecSpace& space, const container::Segment& s,
                                                              std::uint64_t count, const char* what) {
  KSZ_STREAM_CHECK(s.size == count * sizeof(V), what, " segment has ", s.size, " bytes, expected ",
                   count * sizeof(V));
  Kokkos::View<V*, typename ExecSpace::memory_space> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(what)),
                                                       count);
  if (count == 0) return d;
  if constexpr (cuda_spec::kBulkCopyMem<typename ExecSpace::memory_space>) {
#if defined(KSZ_HAVE_CUDA)
    cuda_spec::copy_bytes_to_device(space, d.data(), s.data, s.size);  // any alignment
#endif
  } else {
    // Segment bytes need not be aligned for V: copy through an aligned host buffer.
    Kokkos::View<V*, Kokkos::HostSpace> h(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ksz::staging"), count);
    std::memcpy(h.data(), s.data, s.size);
    Kokkos::deep_copy(space, d, h);
    space.fence();
  }
  return d;
}

// ---- Huffman sub-chunks (FORMAT.md "Huffman sub-chunks", format 1.2) ----

// The lengths of runs of k * sub symbols from those of runs of sub (n
// symbols in chunks of hchunk; FORMAT.md's layout, u16 little-endian): each
// is the sum of the k runs it covers, the last run of a chunk stored by
// neither.
inline std::vector<std::uint8_t> merge_runs(const std::vector<std::uint8_t>& run_bits, std::uint64_t n,
                                            std::uint32_t hchunk, std::uint32_t sub, std::uint32_t k) {
  const huffman::Runs a(n, hchunk, sub), b(n, hchunk, sub * k);
  KSZ_EXPECTS(run_bits.size() == 2 * a.stored, "sub-chunk lengths: ", run_bits.size(), " bytes for ", a.stored,
              " runs");
  const auto at = [&](std::uint64_t i) {
    return std::uint32_t(run_bits[2 * i]) | std::uint32_t(run_bits[2 * i + 1]) << 8;
  };
  std::vector<std::uint8_t> out;
  out.reserve(2 * b.stored);
  for (std::uint64_t c = 0; c < b.nchunks; ++c) {
    const std::uint64_t runs_b = c + 1 < b.nchunks ? b.per_chunk : b.total - c * b.per_chunk;
    for (std::uint64_t j = 0; j + 1 < runs_b; ++j) {
      std::uint32_t sum = 0;
      for (std::uint64_t i = j * k; i < j * k + k; ++i) sum += at(c * (a.per_chunk - 1) + i);
      out.push_back(std::uint8_t(sum)), out.push_back(std::uint8_t(sum >> 8));  // <= 24 * sub * k bits: a u16
    }
  }
  return out;
}

// Longer runs leave GPU decoders fewer threads: a writer lengthens them only
// where at least kFullRuns remain (twice the Huffman decoder threads an H200
// holds at once, so big fields keep their decode speed), or for fewer than
// kFewCodes codes (at most 32k runs of 512, too few to fill a GPU at any
// length: microseconds of decoding).
constexpr std::uint64_t kFullRuns = std::uint64_t(1) << 18, kFewCodes = std::uint64_t(1) << 24;

// The sub-chunk size a writer stores: sub, or where its lengths would be more
// than 1/32 of the rest of the stream (rest bytes: a high ratio, where they
// cost the most), the smallest multiple of it that brings them under, else
// the one with the fewest runs (below a chunk, at most kMaxSubchunk, and
// within kFullRuns / kFewCodes); 0 where that leaves no chunk with two runs.
// run_bits becomes the chosen runs'.
inline std::uint32_t writer_subchunk(std::vector<std::uint8_t>& run_bits, std::uint64_t n, std::uint32_t hchunk,
                                     std::uint32_t sub, std::uint64_t rest) {
  if (run_bits.empty() || 32 * run_bits.size() <= rest) return sub;
  std::uint32_t best = 1;
  std::uint64_t fewest = run_bits.size() / 2;  // best's stored lengths
  for (std::uint32_t k = 2; std::uint64_t(sub) * k <= huffman::kMaxSubchunk && sub * k < hchunk &&
                            (n < kFewCodes || n / (std::uint64_t(sub) * k) >= kFullRuns);
       ++k) {
    const std::uint64_t stored = huffman::Runs(n, hchunk, sub * k).stored;
    if (stored < fewest) best = k, fewest = stored;
    if (32 * 2 * stored <= rest) break;
  }
  if (best == 1) return sub;
  run_bits = merge_runs(run_bits, n, hchunk, sub, best);
  return run_bits.empty() ? 0 : sub * best;
}

// Key 7 and segment 8 travel together, and only when run lengths are stored:
// after the other segments (the sub-chunk size from writer_subchunk; n
// symbols in chunks of hchunk). run_bits must outlive the segments.
inline void add_run_bits(container::Header& h, std::vector<container::Segment>& segments, std::uint32_t sub,
                         std::vector<std::uint8_t>& run_bits, std::uint64_t n, std::uint32_t hchunk) {
  std::uint64_t rest = 0;
  for (const auto& s : segments) rest += s.size;
  sub = writer_subchunk(run_bits, n, hchunk, sub, rest);
  if (run_bits.empty()) return;
  h.set_u32(container::Param::HuffmanSubchunk, sub);
  segments.push_back({container::SegmentId::HuffmanRunBits, run_bits.data(), run_bits.size()});
}

// The stream's run lengths on the device and its sub-chunk size ({} and 0
// without sub-chunks), checked against n symbols in chunks of hchunk.
template <class ExecSpace>
std::pair<Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space>, std::uint32_t> run_bits_of(
    const ExecSpace& space, const container::Parsed& s, std::uint64_t n, std::uint32_t hchunk) {
  const bool has_key = s.header.params.count(std::uint16_t(container::Param::HuffmanSubchunk)) != 0;
  const container::Segment* seg = s.find(container::SegmentId::HuffmanRunBits);
  KSZ_STREAM_CHECK(has_key == (seg != nullptr), "sub-chunk size (key 7) and lengths (segment 8) must come together");
  if (!has_key) return {{}, 0u};
  const std::uint32_t sub = s.header.u32(container::Param::HuffmanSubchunk);
  KSZ_STREAM_CHECK(sub >= 1 && sub <= huffman::kMaxSubchunk && sub < hchunk, "sub-chunk of ", sub,
                   " symbols is not in [1, min(", huffman::kMaxSubchunk, ", chunk - 1)]");
  const huffman::Runs runs(n, hchunk, sub);
  KSZ_STREAM_CHECK(runs.per_chunk <= huffman::kMaxRuns, "sub-chunk of ", sub, " cuts a chunk of ", hchunk,
                   " into more than ", huffman::kMaxRuns, " runs");
  KSZ_STREAM_CHECK(runs.stored > 0, "sub-chunk lengths stored where no chunk has two sub-chunks");
  return {to_device<std::uint16_t>(space, *seg, runs.stored, "sub-chunk lengths"), sub};
}

// ---- The lossless pass on segment 3 (FORMAT.md "Lossless pass") ----

// Huffman words under 2 bits a symbol: words_segment tries the pass on them
// without first counting what it could save.
inline bool sparse_words(std::uint64_t n_words, std::uint64_t n_codes) { return n_words < n_codes / 16; }

// Segment 3 as stored: the Huffman words (coding n_codes symbols) through
// `pass` where that shrinks them, else the words themselves. `applied` gets
// what header byte 5 must say. The device-side pass is marked on `timer` as
// "lossless pass"; the copy to the host that follows belongs to the caller's
// next stage (gather+container). `queued`: the pass's result where it ran
// already, queued behind the Huffman encoder (the words are then under 2
// bits a symbol, where it is always tried), marked with it.
template <class ExecSpace, class Timer>
SegmentBytes words_segment(const ExecSpace& space,
                                        Kokkos::View<std::uint32_t*, typename ExecSpace::memory_space> words,
                                        std::uint64_t n_words, std::uint64_t n_codes, LosslessId pass,
                                        LosslessId& applied, Timer& timer,
                                        Report* report,
                                        typename Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr,
                                        const lossless::Encoded<ExecSpace>* queued = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  applied = LosslessId::None;
  SegmentBytes out;
  // The pass is kept only where it shrinks the bitstream; a count of nonzero
  // units first rules out, exactly, the streams it cannot shrink (dense
  // Huffman output at low ratios), which then skip it: same stream either way.
  // Below 2 bits a symbol most symbols take the 1-bit code, which is 0 (the
  // canonical code's first), and the pass is tried without that count (a
  // kernel and a read-back: 20-35 us on the H200 at 512^3, where the interp
  // compressor's words at REL 1e-3 hold 1.6 bits a symbol and shrink by a
  // quarter; Lorenzo's, at 2.1, keep the count and skip the pass).
  const bool sparse = sparse_words(n_words, n_codes);
  KSZ_EXPECTS(!queued || (pass != LosslessId::None && sparse), "internal: lossless pass queued for dense words");
  const bool attempt = pass != LosslessId::None && n_words > 0 &&
                       (sparse || !lossless::cannot_shrink<ExecSpace>(
                           space, Kokkos::subview(words, std::make_pair(std::uint64_t(0), n_words)),
                           static_cast<lossless::Method>(pass), lossless::kLog2BlockDefault, ws));
  lossless::Encoded<ExecSpace> enc;
  if (queued) {
    enc = *queued;
  } else if (attempt) {
    const Kokkos::View<const std::uint8_t*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> bytes(
        reinterpret_cast<const std::uint8_t*>(words.data()), n_words * 4);
    enc = lossless::encode<ExecSpace>(space, bytes, static_cast<lossless::Method>(pass), lossless::kLog2BlockDefault,
                                      n_words * 4, ws);
  }
  if (pass != LosslessId::None && !queued) timer.mark("lossless pass");  // fenced: sizes were read back
  if (attempt && enc.size < n_words * 4) {
    applied = pass;
    out = segment_bytes(enc.bytes, enc.size);
  }
  if (applied == LosslessId::None) out = segment_bytes(words, n_words);
  if (report) {
    report->huffman_bytes = n_words * 4;
    report->lossless_bytes = out.size();
    report->lossless = applied;
  }
  return out;
}

// Words of the Huffman bitstream segment 3 holds, once the pass that header
// byte 5 names is undone. Validates the lossless header; allocates nothing.
inline std::uint64_t huffman_word_count(const container::Parsed& s) {
  const auto& seg = s.require(SegmentId::HuffmanWords);
  if (s.header.lossless == LosslessId::None) {
    KSZ_STREAM_CHECK(seg.size % 4 == 0, "Huffman words segment is not whole words");
    return seg.size / 4;
  }
  const lossless::Info info = lossless::inspect(seg.data, seg.size);
  KSZ_STREAM_CHECK(static_cast<std::uint8_t>(info.method) == static_cast<std::uint8_t>(s.header.lossless),
                   "lossless payload method ", int(info.method), " differs from the header's pass ",
                   int(s.header.lossless));
  KSZ_STREAM_CHECK(info.raw_bytes % 4 == 0, "Huffman bitstream after the lossless pass is not whole words");
  return info.raw_bytes / 4;
}

// The Huffman words on the device: segment 3 copied, or decoded by the pass.
// A timer that records nothing (callers without stage reports).
struct NoStages {
  void mark(const char*) {}
};

// Ends stage "copy to device" once the segment is on the device, and stage
// "lossless decode" after undoing the pass, if any: transfers and kernels
// stay apart in the stage reports.
template <class ExecSpace, class Timer = NoStages>
Kokkos::View<std::uint32_t*, typename ExecSpace::memory_space> huffman_words(const ExecSpace& space,
                                                                             const container::Parsed& s,
                                                                             std::uint64_t n_words,
                                                                             Timer&& timer = NoStages{},
                                                                             typename Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  const auto& seg = s.require(SegmentId::HuffmanWords);
  if (s.header.lossless == LosslessId::None) {
    auto words = to_device<std::uint32_t>(space, seg, n_words, "Huffman words");
    timer.mark("copy to device");
    return words;
  }
  const auto payload = to_device<std::uint8_t>(space, seg, seg.size, "lossless payload");
  timer.mark("copy to device");
  // With a workspace lease the decoded words and the decoder's offsets live in it.
  const Kokkos::View<std::uint32_t*, Mem> words =
      Workspace<Mem>::template buffer<std::uint32_t>(ws, Workspace<Mem>::kHuffWords, n_words, "ksz::huffman_words");
  const Kokkos::View<std::uint8_t*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> bytes(
      reinterpret_cast<std::uint8_t*>(words.data()), n_words * 4);
  lossless::decode<ExecSpace>(space, payload, bytes, ws);
  timer.mark("lossless decode");
  return words;
}

template <class T>
constexpr DType dtype_of() {
  return sizeof(T) == 8 ? DType::F64 : DType::F32;
}

// A codebook's device tables, in the workspace's table slot when the caller
// passes a lease (else in an allocation of their own).
template <class ExecSpace>
huffman::DeviceCodebook<ExecSpace> device_codebook(const ExecSpace& space, const huffman::TableImage& tables,
                                                   typename Workspace<typename ExecSpace::memory_space>::Lease* ws) {
  using WS = Workspace<typename ExecSpace::memory_space>;
  if (!ws) return huffman::DeviceCodebook<ExecSpace>(tables, space);
  return huffman::DeviceCodebook<ExecSpace>(
      tables, space,
      ws->template get<std::uint32_t>(WS::kHuffTables, huffman::DeviceCodebook<ExecSpace>::room_words(tables.nsym),
                                      "ksz::huffman::tables"));
}

// The histogram this thread's last codebook_async on a GPU was given: what
// warm_codebook_thread has the worker rehearse on.
inline std::vector<std::uint64_t>& last_codebook_counts() {
  static thread_local std::vector<std::uint64_t> counts;
  return counts;
}

// The Huffman codebook and its table image, built on a thread of its own
// from a copy of nsym counts (package-merge at tight bounds: 0.1-0.7 ms on the
// H200 hosts) while the caller's thread launches device work. On GPUs a kept
// thread (HostWorkers, warm_codebook_thread); host backends start one a call,
// so that a process keeps no threads a fork() would leave behind.
template <class Mem>
std::future<huffman::HostCodebook> codebook_async(const std::uint64_t* counts, std::size_t nsym) {
  auto build = [c = std::vector<std::uint64_t>(counts, counts + nsym), nsym] {
    return huffman::host_codebook(c.data(), nsym);
  };
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    return std::async(std::launch::async, std::move(build));
  } else {
    last_codebook_counts().assign(counts, counts + nsym);
    return HostWorkers::run(std::move(build));
  }
}

// codebook_async's result. On GPUs the caller polls for it (HostWorkers::
// result) instead of sleeping: on the H200 hosts (VMs) a thread asleep on the
// future woke 15-25 us after the codebook was done (REL 1e-3, 512^3), and
// 40-380 us after waits longer than about 0.2 ms (1e-4). Polling, A/B on one
// instance: the outliers+codebook stage 0.108-0.135 -> 0.079-0.099 ms at 1e-3,
// 0.264-0.287 -> 0.241-0.265 at 1e-4. Host backends sleep (their cores run
// the device work).
template <class Mem>
huffman::HostCodebook codebook_result(std::future<huffman::HostCodebook>& task) {
  constexpr bool gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  return HostWorkers::result(task, gpu ? std::chrono::milliseconds(20) : std::chrono::milliseconds(0));
}

// On GPUs, has that thread poll, hot, from now through a pass over n values
// (0.5 ms at 512^3 on an H200; 200 us + 8 ns a value allowed: 1.3 ms there)
// instead of waking cold. The polling ends when the job comes. Before it
// polls, the thread rehearses: it builds (and drops) the codebook of the
// last histogram this thread posted, so that the job finds the codebook's
// code and buffers in its caches. On the H200 hosts a codebook of 798
// symbols took 55-75 us cold and 30-40 us right after another; at 512^3,
// REL 1e-3, the outliers+codebook stage went from 0.096-0.105 to
// 0.079-0.085 ms.
template <class Mem>
void warm_codebook_thread(std::uint64_t n) {
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    std::function<void()> rehearse;
    const std::vector<std::uint64_t>& last = last_codebook_counts();
    if (!last.empty())
      rehearse = [c = last] { (void)huffman::host_codebook(c.data(), c.size()); };
    HostWorkers::warm(std::chrono::microseconds(200) + std::chrono::nanoseconds(8 * n), std::move(rehearse));
  }
}

// A caller's output buffer of n contiguous values is reused (device-resident
// callers keep one across calls, no allocation, no first touch); anything
// else is replaced.
template <class T, class Mem>
void ensure_output(Kokkos::View<T*, Mem>& out, std::uint64_t n) {
  if (out.extent(0) != n || out.data() == nullptr || !out.span_is_contiguous())
    out = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::output")), n);
}

// The report fields every decompressor fills: what it decoded, and the
// bound and value range its header records.
template <class T>
void report_decoded(Report* r, const container::Header& h, std::uint64_t n, std::uint64_t verbatim) {
  if (!r) return;
  r->elements = n;
  r->input_bytes = n * sizeof(T);
  r->verbatim = verbatim;
  r->abs_bound = h.abs_bound;
  r->value_min = h.value_min;
  r->value_max = h.value_max;
}

// Quantization codes -> histogram -> canonical Huffman, as host segments
// (segments 1-3 of FORMAT.md). The Lorenzo pipeline does the same inline.
struct HuffmanSegments {
  std::vector<std::uint8_t> lengths, offsets, run_bits;  // run_bits: segment 8, empty without sub-chunks
  SegmentBytes words;  // segment 3, written into the stream by container::write
  LosslessId lossless = LosslessId::None;  // the pass applied to `words` (header byte 5)
};

template <class ExecSpace, class Timer>
HuffmanSegments huffman_encode_codes(const ExecSpace& space,
                                     Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> codes,
                                     std::uint32_t radius, std::uint32_t huffman_chunk, std::uint32_t subchunk,
                                     LosslessId pass, Timer& timer, Report* report,
                                     const std::uint64_t* known_hist = nullptr,
                                     typename Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr,
                                     const huffman::HostCodebook* prebuilt = nullptr,
                                     const huffman::Narrow narrow = {}) {
  using Mem = typename ExecSpace::memory_space;
  const std::uint32_t nsym = 2 * radius;
  // The codes' histogram: counted here unless the caller already knows it
  // (the interp pipeline derives it from its radius choice's histogram, and
  // has its codes read through `narrow`: the histogram is of what it reads).
  KSZ_EXPECTS(narrow.identity() || known_hist, "internal: narrowed codes need their histogram");
  const std::uint64_t* counts = known_hist;
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> hist_h;
  if (!counts) {
    Kokkos::View<std::uint64_t*, Mem> hist("ksz::hist", nsym);
    histogram::histogram<ExecSpace>(space, codes, hist, radius);
    hist_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), hist);
    counts = hist_h.data();
    timer.mark("histogram");
  }
  // A caller that knew the histogram may have built the codebook already
  // (from these counts), on the host while its device work ran.
  const huffman::HostCodebook built = prebuilt ? huffman::HostCodebook{} : huffman::host_codebook(counts, nsym);
  const huffman::HostCodebook& hb = prebuilt ? *prebuilt : built;
  const huffman::Codebook& book = hb.book;
  // With a workspace: the tables in it, and the encoder's one pass (its
  // bitstream sized by words_bound), as the Lorenzo pipeline does.
  // A prebuilt codebook's tables go with the encoder's stage: their copy is
  // queued ahead of it, nothing waits between.
  const huffman::DeviceCodebook<ExecSpace> dbook = device_codebook(space, hb.tables, ws);
  if (!prebuilt) timer.mark("codebook");
  const std::uint64_t n = codes.extent(0);
  const std::uint64_t bound = ws ? huffman::words_bound(counts, book, n, huffman_chunk) : 0;
  // Words under 2 bits a symbol for sure: words_segment tries the lossless
  // pass on them whatever they hold, so on CUDA its encoder is queued right
  // behind Huffman's, reading the words' count on the device (one
  // synchronization for both, no host round trip between them).
  cuda_spec::EncodeFollower follow;
  lossless::Encoded<ExecSpace> queued;
  Kokkos::View<std::uint8_t*, Mem> payload;
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    if (pass != LosslessId::None && bound > 0 && sparse_words(bound, n))
      follow.queue = [&](const std::uint32_t* words, const std::uint64_t* n_words) -> const void* {
        const unsigned long long* total = nullptr;
        return cuda_spec::lossless_encode_words_queued(space, words, n_words, bound, pass == LosslessId::ZeroBytes,
                                                       ws, payload, total)
                   ? total
                   : nullptr;
      };
  }
#endif
  const auto enc = huffman::encode<ExecSpace>(space, codes, dbook, huffman_chunk, ws, subchunk, bound, narrow,
                                              follow.queue ? &follow : nullptr);
  timer.mark(follow.queued ? "huffman encode+lossless pass" : "huffman encode");
#if defined(KSZ_HAVE_CUDA)
  if (follow.queued) {
    queued.size = lossless::payload_bytes(enc.n_words * 4, lossless::kLog2BlockDefault, follow.result);
    if (queued.size < enc.n_words * 4)  // else only the size, as lossless::encode's give-up
      queued.bytes = Kokkos::subview(payload, std::make_pair(std::uint64_t(0), queued.size));
  }
#endif
  HuffmanSegments out;
  out.lengths.assign(book.lengths.begin(), book.lengths.end());
  out.words = words_segment(space, enc.words, enc.n_words, n, pass, out.lossless, timer, report, ws,
                            follow.queued ? &queued : nullptr);
  // Copies to the host after the lossless pass's mark, with the words': they
  // belong to the caller's gather+container stage (the kernels' figures are
  // for data that stays on the device), not to the pass.
  out.offsets = to_host_bytes(enc.chunk_offsets, enc.chunk_offsets.extent(0));
  out.run_bits = to_host_bytes(enc.run_bits, enc.run_bits.extent(0));
  return out;
}

// Inverse of huffman_encode_codes with the Lorenzo pipeline's stream checks:
// n codes in [0, 2*radius).
template <class ExecSpace, class Timer>
Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> huffman_decode_codes(
    const ExecSpace& space, const container::Parsed& s, std::uint64_t n, std::uint32_t radius,
    std::uint32_t hchunk, Timer& timer, typename Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  const std::uint64_t n_words = huffman_word_count(s);
  // Every symbol takes at least one bit: no absurd allocation from a lying header.
  KSZ_STREAM_CHECK(n <= n_words * 32, "header claims ", n, " elements but the stream holds at most ",
                   n_words * 32);
  const std::uint64_t n_chunks = (n + hchunk - 1) / hchunk;
  const auto& len_seg = s.require(SegmentId::HuffmanLengths);
  KSZ_STREAM_CHECK(len_seg.size == 2ull * radius, "codebook has ", len_seg.size, " lengths, expected ",
                   2ull * radius);
  const huffman::Codebook book = huffman::codebook_from_lengths(len_seg.data, len_seg.size);
  const huffman::DeviceCodebook<ExecSpace> dbook = device_codebook(space, huffman::table_image(book), ws);
  auto offsets =
      to_device<std::uint64_t>(space, s.require(SegmentId::HuffmanChunkOffsets), n_chunks + 1, "chunk offsets");
  const auto runs = run_bits_of(space, s, n, hchunk);
  auto words = huffman_words<ExecSpace>(space, s, n_words, timer, ws);
  const Kokkos::View<std::uint16_t*, Mem> codes =
      Workspace<Mem>::template buffer<std::uint16_t>(ws, Workspace<Mem>::kCodes, n, "ksz::codes");
  huffman::decode<ExecSpace>(space, words, offsets, hchunk, dbook, codes, runs.first, runs.second, ws);
  return codes;
}

}  // namespace ksz::pipeline::impl
