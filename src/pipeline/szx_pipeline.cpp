// SzxPipeline bodies and their explicit instantiation for every execution
// space and value type.
#include "src/pipeline/szx_pipeline.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "portable/predict/szx/szx.hpp"
#include "src/pipeline/lorenzo_pipeline_impl.hpp"  // value_range, segment transfer helpers
#include "src/pipeline/stage_timer.hpp"

namespace ksz::pipeline {
namespace {

using impl::kHostMem;
using impl::stream_segment;

// The first count values of v as bytes on the host: v's own bytes on host
// spaces, else a copy.
struct HostBytes {
  std::vector<std::uint8_t> copy;
  const std::uint8_t* data = nullptr;
  std::uint64_t size = 0;
};
template <class V, class Mem>
HostBytes host_bytes(Kokkos::View<V*, Mem> v, std::uint64_t count) {
  HostBytes b;
  if constexpr (kHostMem<Mem>) {
    b.data = reinterpret_cast<const std::uint8_t*>(v.data());
  } else {
    b.copy = impl::to_host_bytes(v, count);
    b.data = b.copy.data();
  }
  b.size = count * sizeof(V);
  return b;
}

// A byte segment as a view: read in place on host spaces (bytes need no
// alignment; the stream outlives the call), copied to the device elsewhere.
template <class ExecSpace>
Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> byte_segment(const ExecSpace& space,
                                                                                const container::Segment& s,
                                                                                const char* what) {
  using Mem = typename ExecSpace::memory_space;
  if constexpr (kHostMem<Mem>)
    return Kokkos::View<const std::uint8_t*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(s.data, s.size);
  else
    return impl::to_device<std::uint8_t>(space, s, s.size, what);
}

#if defined(KSZ_HAVE_CUDA)
// The CUDA two-pass path's blocks' mid-byte offsets (szx::run_mid's off).
struct OffsetsMid {
  Kokkos::View<const cuda_spec::SzxOffsets*, Kokkos::CudaSpace> offs;
  KOKKOS_INLINE_FUNCTION std::uint64_t operator()(const std::uint64_t b) const { return offs(b).mid; }
};
#endif

constexpr const char* kBadRunsMessage = "SZx mid-byte run counts disagree with the leading codes";

}  // namespace

template <class ExecSpace>
template <class T>
Bytes SzxPipeline<ExecSpace>::compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims,
                                       const Options& opt, Report* report) {
  return compress_stages<T>(space, in, dims, opt, report, true);
}

template <class ExecSpace>
template <class T>
void SzxPipeline<ExecSpace>::encode(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims,
                                    const Options& opt, Report* report) {
  compress_stages<T>(space, in, dims, opt, report, false);
}

// The device stages, then (gather) the stream.
template <class ExecSpace>
template <class T>
Bytes SzxPipeline<ExecSpace>::compress_stages(const ExecSpace& space, Kokkos::View<const T*, Mem> in,
                                              const Dims& dims, const Options& opt, Report* report, bool gather) {
  using container::Param;
  using container::SegmentId;
  const std::uint64_t n = dims.count();
  KSZ_EXPECTS(in.extent(0) == n, "input has ", in.extent(0), " elements, dims say ", n);
  const std::uint32_t block = opt.szx_block;
  KSZ_EXPECTS(block >= 1 && block <= szx::kMaxBlock, "SZx block size must be in [1, ", szx::kMaxBlock, "], got ",
              block);
  StageTimer<ExecSpace> timer(space, report);

  // The value range and the bound it resolves (under REL): on the host
  // before the blocks are planned, or, on the CUDA one-pass path, from the
  // extremes its kernel read on the device (checked here after it ran, before
  // anything is written); under ABS that kernel finds the range (the
  // header's) itself, as it codes the blocks.
  impl::Range range{};
  double abs_bound = opt.bound;
  bool resolved = false;
  const auto resolve = [&](const impl::Range& r) {
    range = r;
    abs_bound = szx::resolved_bound(opt.bound, opt.mode == ErrorMode::REL, range.min, range.max);
    resolved = true;
    KSZ_EXPECTS(std::isfinite(abs_bound), "the resolved absolute bound overflows (", opt.bound,
                " x value range); use a smaller bound or ABS");
  };
  const auto resolve_on_host = [&] {
    if (resolved) return;
    resolve(impl::value_range<ExecSpace, T>(space, in));
    timer.mark("value range");
  };

  const std::uint64_t nb = (n + block - 1) / block;
  const std::uint32_t rb = szx::run_blocks<T>(block);
  const std::uint64_t nruns = szx::run_count(nb, rb);
  Kokkos::View<std::uint8_t*, Mem> kinds;  // from the workspace on the one-pass path, else allocated here
  Kokkos::View<T*, Mem> medians;
  Kokkos::View<std::uint8_t*, Mem> runs;  // segment 21: 2 bytes a run
  auto allocate_runs = [&] {
    runs = Kokkos::View<std::uint8_t*, Mem>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::runs")), 2 * nruns);
  };
  auto allocate_heads = [&] {
    kinds = Kokkos::View<std::uint8_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::kinds")), nb);
    medians = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::medians")), nb);
  };
  const szx::Layout layout = szx::choose_layout<ExecSpace>(block, nb);
  std::uint64_t lead_total = 0, verb_total = 0, mid_total = 0;
  Kokkos::View<std::uint8_t*, Mem> lead, mid;
  Kokkos::View<T*, Mem> verb;
  bool done = false;
  // One-pass CUDA path: mid-bytes from the front of payload, verbatim values
  // from its back (reordered on the host below).
  Kokkos::View<T*, Mem> payload;
  bool verb_in_tail = false;
  typename Workspace<Mem>::Lease ws;  // payload and leading codes reused across calls
#if defined(KSZ_HAVE_CUDA)
  // The warp-per-block specialization replaces the team layout (the thread
  // layout stays portable: KSZ_SZX_LAYOUT=thread compares the two).
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    const std::size_t state_bytes = cuda_spec::szx_onepass_state_bytes<T>(n, block, true);  // 0: not its case
    if (layout == szx::Layout::TeamPerBlock && state_bytes > 0) {
      const std::uint64_t capv = (n + 3) / 4 * 4;
      payload = ws.template get<T>(Workspace<Mem>::kSzxPayload, capv, "ksz::szx::payload");
      const Kokkos::View<std::uint8_t*, Mem> lead1 =
          ws.template get<std::uint8_t>(Workspace<Mem>::kSzxLead, nb * ((block + 3) / 4), "ksz::szx::lead");
      // One workspace buffer: the look-back states, then medians, kinds and
      // the runs' counts (a run is a group of the kernel's).
      const std::size_t state_words = (state_bytes + 15) / 16 * 2, med_words = (nb * sizeof(T) + 15) / 16 * 2,
                        kind_words = (nb + 7) / 8;
      const auto state = ws.template get<unsigned long long>(
          Workspace<Mem>::kSzxState, state_words + med_words + kind_words + (2 * nruns + 7) / 8, "ksz::szx::state");
      medians = Kokkos::View<T*, Mem>(reinterpret_cast<T*>(state.data() + state_words), nb);
      kinds = Kokkos::View<std::uint8_t*, Mem>(reinterpret_cast<std::uint8_t*>(state.data() + state_words + med_words),
                                              nb);
      runs = Kokkos::View<std::uint8_t*, Mem>(
          reinterpret_cast<std::uint8_t*>(state.data() + state_words + med_words + kind_words), 2 * nruns);
      cuda_spec::SzxOffsets tot{};
      bool fits = false;
      cuda_spec::SzxBound sb;
      if (opt.mode == ErrorMode::ABS) {  // the kernel finds the range (the header's) as it reads the input
        sb.bound = opt.bound;
        sb.find_range = true;
      } else {
        // The one-pass path runs the value range itself, into the workspace's
        // slot (only the value-range passes use it: its counter is zero
        // unless the workspace has just allocated it).
        bool fresh = true;
        const auto extremes = impl::value_range_slot(ws, fresh);
        sb.bound = opt.bound;
        sb.range_buf = extremes.data();
        sb.range_counter_zeroed = !fresh;
        sb.rel = opt.mode == ErrorMode::REL;
      }
      done = cuda_spec::szx_compress_onepass<T>(space, in.data(), n, block, sb, kinds.data(), medians.data(),
                                                reinterpret_cast<std::uint16_t*>(runs.data()), lead1.data(),
                                                reinterpret_cast<std::uint8_t*>(payload.data()), capv * sizeof(T),
                                                state.data(), state_bytes, tot, fits);
      KSZ_EXPECTS(done, "internal: SZx one-pass encode refused a case it sized");
      // The kernel read the range (REL) or found it (ABS).
      resolve(impl::range_of_extremes(sb.mn, sb.mx));
      KSZ_EXPECTS(sb.used == abs_bound, "internal: the SZx kernel's bound ", sb.used, " is not the pipeline's ",
                  abs_bound);
      KSZ_EXPECTS(fits, "internal: SZx one-pass encode overflowed the input size");
      timer.mark("value range+block plan+encode");
      lead_total = tot.lead, mid_total = tot.mid, verb_total = tot.verb;
      lead = lead1;
      mid = Kokkos::View<std::uint8_t*, Mem>(reinterpret_cast<std::uint8_t*>(payload.data()), capv * sizeof(T));
      verb_in_tail = true;
    }
    if (!done && layout == szx::Layout::TeamPerBlock) {
      resolve_on_host();
      allocate_heads();
      Kokkos::View<cuda_spec::SzxOffsets*, Mem> offs(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::offsets")), nb + 1);
      cuda_spec::SzxOffsets tot{};
      if (cuda_spec::szx_plan<T>(space, in.data(), n, block, abs_bound, kinds.data(), medians.data(), offs.data(),
                                 tot)) {
        timer.mark("block plan+offsets");
        lead_total = tot.lead, mid_total = tot.mid, verb_total = tot.verb;
        lead = Kokkos::View<std::uint8_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::lead")), lead_total);
        mid = Kokkos::View<std::uint8_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::mid")), mid_total);
        verb = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::verbatim")), verb_total);
        done = cuda_spec::szx_encode<T>(space, in.data(), n, block, kinds.data(), medians.data(), offs.data(),
                                        lead.data(), mid.data(), verb.data());
        KSZ_EXPECTS(done, "SZx CUDA encode refused a plan it made");
        allocate_runs();
        szx::put_runs(space, nb, rb, OffsetsMid{offs}, runs);
        timer.mark("block encode");
      }
    }
  }
#endif
  if (!done) {
    resolve_on_host();
    if (kinds.data() == nullptr) allocate_heads();
    Kokkos::View<std::uint64_t*, Mem> mid_count(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::mid_count")), nb);
    if (layout == szx::Layout::TeamPerBlock)
      szx::plan_team<ExecSpace, T>(space, in, block, abs_bound, kinds, medians, mid_count);
    else
      szx::plan<ExecSpace, T>(space, in, block, abs_bound, kinds, medians, mid_count);
    timer.mark("block plan");

    Kokkos::View<std::uint64_t*, Mem> lead_off(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::lead_off")), nb + 1);
    Kokkos::View<std::uint64_t*, Mem> mid_off(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::mid_off")), nb + 1);
    Kokkos::View<std::uint64_t*, Mem> verb_off(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::verb_off")), nb + 1);
    const Kokkos::View<const std::uint8_t*, Mem> kc = kinds;
    lead_total = szx::exclusive_offsets(
        space, nb,
        KOKKOS_LAMBDA(const std::uint64_t b) -> std::uint64_t {
          return szx::is_coded(kc(b)) ? (szx::block_len(b, n, block) + 3) / 4 : 0;
        },
        lead_off);
    verb_total = szx::exclusive_offsets(
        space, nb,
        KOKKOS_LAMBDA(const std::uint64_t b) -> std::uint64_t {
          return kc(b) == szx::kVerbatim ? szx::block_len(b, n, block) : 0;
        },
        verb_off);
    const Kokkos::View<const std::uint64_t*, Mem> mc = mid_count;
    mid_total = szx::exclusive_offsets(
        space, nb, KOKKOS_LAMBDA(const std::uint64_t b) -> std::uint64_t { return mc(b); }, mid_off);
    timer.mark("offsets");

    lead = Kokkos::View<std::uint8_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::lead")), lead_total);
    mid = Kokkos::View<std::uint8_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::mid")), mid_total);
    verb = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::verbatim")), verb_total);
    if (layout == szx::Layout::TeamPerBlock)
      szx::encode_team<ExecSpace, T>(space, in, block, kinds, medians, lead_off, mid_off, verb_off, lead, mid, verb);
    else
      szx::encode<ExecSpace, T>(space, in, block, kinds, medians, lead_off, mid_off, verb_off, lead, mid, verb);
    allocate_runs();
    szx::put_runs(space, nb, rb, mid_off, runs);
    timer.mark("block encode");
  }

  const auto fill_report = [&](std::uint64_t output_bytes) {
    if (!report) return;
    report->elements = n;
    report->input_bytes = n * sizeof(T);
    report->output_bytes = output_bytes;
    report->verbatim = verb_total;
    report->abs_bound = abs_bound;
    report->value_min = range.min;
    report->value_max = range.max;
  };
  if (!gather) {
    fill_report(0);
    return {};
  }

  const HostBytes kinds_h = host_bytes(kinds, nb);
  std::uint64_t n_const = 0, n_verb = 0;
  for (std::uint64_t b = 0; b < nb; ++b) {
    n_const += kinds_h.data[b] == szx::kConstant;
    n_verb += kinds_h.data[b] == szx::kVerbatim;
  }
  // The one-pass payload's tail holds the verbatim blocks last first: they go
  // into the stream in block order, from one host copy of the tail.
  const auto tail_segment = [&] {
    const std::uint64_t capv = payload.extent(0);
    const Kokkos::View<T*, Mem> tail = Kokkos::subview(payload, std::make_pair(capv - verb_total, capv));
    const auto fill = [&, tail](std::uint8_t* dst) {
      const std::vector<std::uint8_t> t = impl::to_host_bytes(tail, verb_total);
      std::uint64_t before = 0;  // verbatim values of earlier blocks
      for (std::uint64_t b = 0; b < nb && before < verb_total; ++b) {
        if (kinds_h.data[b] != szx::kVerbatim) continue;
        const std::uint64_t len = szx::block_len(b, n, block);
        std::memcpy(dst + before * sizeof(T), t.data() + (verb_total - before - len) * sizeof(T), len * sizeof(T));
        before += len;
      }
      return container::crc32c(dst, verb_total * sizeof(T));
    };
    return container::Segment{SegmentId::SzxVerbatim, nullptr, verb_total * sizeof(T), fill};
  };
  const container::Segment verb_seg =
      verb_in_tail ? tail_segment() : stream_segment(SegmentId::SzxVerbatim, verb, verb_total);

  container::Header h;
  h.dtype = impl::dtype_of<T>();
  h.dims = dims;
  h.mode = opt.mode;
  h.predictor = PredictorId::SZx;
  h.codec = CodecId::None;
  h.user_bound = opt.bound;
  h.abs_bound = abs_bound;
  h.value_min = range.min;
  h.value_max = range.max;
  h.set_u32(Param::SzxBlock, block);
  h.set_u64(Param::SzxConstantBlocks, n_const);
  h.set_u64(Param::SzxVerbatimBlocks, n_verb);
  auto stream = container::write(h, {{SegmentId::SzxKinds, kinds_h.data, kinds_h.size},
                                     stream_segment(SegmentId::SzxMedians, medians, nb),
                                     stream_segment(SegmentId::SzxLeadCodes, lead, lead_total),
                                     stream_segment(SegmentId::SzxMidBytes, mid, mid_total),
                                     verb_seg, stream_segment(SegmentId::SzxMidRuns, runs, 2 * nruns)});
  timer.mark("gather+container");
  fill_report(stream.size());
  return stream;
}

template <class ExecSpace>
template <class T>
void SzxPipeline<ExecSpace>::decompress(const ExecSpace& space, const container::Parsed& s,
                                        Kokkos::View<T*, Mem>& out, Report* report) {
  StageTimer<ExecSpace> timer(space, report);
  const Resident<T> r = upload<T>(space, s);
  timer.mark("copy to device");
  decode_stages<T>(space, r, out, report, timer);
}

template <class ExecSpace>
template <class T>
void SzxPipeline<ExecSpace>::decode(const ExecSpace& space, const Resident<T>& r, Kokkos::View<T*, Mem>& out,
                                    Report* report) {
  StageTimer<ExecSpace> timer(space, report);
  decode_stages<T>(space, r, out, report, timer);
}

template <class ExecSpace>
template <class T>
typename SzxPipeline<ExecSpace>::template Resident<T> SzxPipeline<ExecSpace>::upload(const ExecSpace& space,
                                                                                     const container::Parsed& s) {
  using container::Param;
  using container::SegmentId;
  const container::Header& h = s.header;
  KSZ_STREAM_CHECK(h.dtype == impl::dtype_of<T>(), "dtype mismatch");
  KSZ_STREAM_CHECK(h.predictor == PredictorId::SZx && h.codec == CodecId::None, "not an SZx stream");
  KSZ_STREAM_CHECK(h.lossless == LosslessId::None, "SZx stream with a lossless pass");
  Resident<T> r;
  r.header = h;
  r.n = h.dims.count();
  r.block = h.u32(Param::SzxBlock);
  KSZ_STREAM_CHECK(r.block >= 1 && r.block <= szx::kMaxBlock, "SZx block size ", r.block, " out of range");
  const std::uint64_t nb = r.nb = (r.n + r.block - 1) / r.block;
  // Sizes first: one kind byte and one median per block must be there before
  // anything of the element count is allocated.
  const auto& kinds_seg = s.require(SegmentId::SzxKinds);
  KSZ_STREAM_CHECK(kinds_seg.size == nb, "SZx kinds segment has ", kinds_seg.size, " bytes, expected ", nb);
  const auto& med_seg = s.require(SegmentId::SzxMedians);
  KSZ_STREAM_CHECK(med_seg.size == nb * sizeof(T), "SZx medians segment has ", med_seg.size, " bytes, expected ",
                   nb * sizeof(T));

  // Every segment to the device first (each bounded by the stream's own
  // size), then the sizes the kinds and leading codes imply are checked there
  // (decode_stages).
  const auto& lead_seg = s.require(SegmentId::SzxLeadCodes);
  const auto& mid_seg = s.require(SegmentId::SzxMidBytes);
  const auto& verb_seg = s.require(SegmentId::SzxVerbatim);
  KSZ_STREAM_CHECK(verb_seg.size % sizeof(T) == 0, "SZx verbatim segment is not whole values");
  const container::Segment* const runs_seg = s.find(SegmentId::SzxMidRuns);  // optional (format 1.3)
  if (runs_seg)
    KSZ_STREAM_CHECK(runs_seg->size == 2 * szx::run_count(nb, szx::run_blocks<T>(r.block)),
                     "SZx mid-byte runs segment has ", runs_seg->size, " bytes, expected ",
                     2 * szx::run_count(nb, szx::run_blocks<T>(r.block)));
  r.kinds = byte_segment(space, kinds_seg, "SZx kinds");
  r.medians = impl::to_device<T>(space, med_seg, nb, "SZx medians");
  r.lead = byte_segment(space, lead_seg, "SZx leading codes");
  r.mid = byte_segment(space, mid_seg, "SZx mid-bytes");
  r.verb = impl::to_device<T>(space, verb_seg, verb_seg.size / sizeof(T), "SZx verbatim");
  if (runs_seg) r.runs = byte_segment(space, *runs_seg, "SZx mid-byte runs");
  r.has_runs = runs_seg != nullptr;
  return r;
}

template <class ExecSpace>
template <class T, class Timer>
void SzxPipeline<ExecSpace>::decode_stages(const ExecSpace& space, const Resident<T>& r, Kokkos::View<T*, Mem>& out,
                                           Report* report, Timer& timer) {
  const container::Header& h = r.header;
  const std::uint64_t n = r.n, nb = r.nb;
  const std::uint32_t block = r.block;
  const std::uint32_t rb = szx::run_blocks<T>(block);
  const auto& kinds = r.kinds;
  const auto& medians = r.medians;
  const auto& lead = r.lead;
  const auto& mid = r.mid;
  const auto& verb = r.verb;
  const auto& runs = r.runs;
  const bool has_runs = r.has_runs;
  const std::uint64_t lead_size = lead.extent(0), mid_size = mid.extent(0), verb_bytes = verb.extent(0) * sizeof(T);

#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    // The portable path's checks, in its order, on what the kinds and codes imply.
    // bad_runs() is asked only once the codes are known good.
    auto check_totals = [&](const cuda_spec::SzxOffsets& tot, bool bad_kinds, bool bad_codes, auto bad_runs) {
      KSZ_STREAM_CHECK(!bad_kinds, "SZx block kind out of range");
      KSZ_STREAM_CHECK(tot.lead == lead_size, "SZx leading-code segment has ", lead_size,
                       " bytes, the block kinds say ", tot.lead);
      KSZ_STREAM_CHECK(tot.verb * sizeof(T) == verb_bytes, "SZx verbatim segment has ", verb_bytes,
                       " bytes, the block kinds say ", tot.verb * sizeof(T));
      KSZ_STREAM_CHECK(!bad_codes, "SZx leading code longer than its value");
      KSZ_STREAM_CHECK(!bad_runs(), kBadRunsMessage);
      KSZ_STREAM_CHECK(tot.mid == mid_size, "SZx mid-byte segment has ", mid_size,
                       " bytes, the leading codes say ", tot.mid);
    };
    const std::size_t state_bytes = cuda_spec::szx_onepass_state_bytes<T>(n, block, false);  // 0: not its case
    if (szx::choose_layout<ExecSpace>(block, nb) == szx::Layout::TeamPerBlock && state_bytes > 0) {
      // One pass: decode first (every read bounded by its segment), then the checks.
      impl::ensure_output(out, n);
      typename Workspace<Mem>::Lease ws;
      const auto state =
          ws.template get<unsigned long long>(Workspace<Mem>::kSzxState, (state_bytes + 7) / 8, "ksz::szx::state");
      cuda_spec::SzxOffsets tot{};
      bool bad_kinds = false, bad_codes = false, bad_runs = false;
      if (cuda_spec::szx_decode_groups<T>(space, n, block, kinds.data(), medians.data(), lead.data(), lead_size,
                                          mid.data(), mid_size, verb.data(), verb.extent(0),
                                          reinterpret_cast<const std::uint16_t*>(runs.data()), out.data(),
                                          state.data(), state_bytes, tot, bad_kinds, bad_codes, bad_runs)) {
        check_totals(tot, bad_kinds, bad_codes, [&] { return bad_runs; });
        timer.mark("block decode");
        impl::report_decoded<T>(report, h, n, tot.verb);
        return;
      }
    }
    if (szx::choose_layout<ExecSpace>(block, nb) == szx::Layout::TeamPerBlock) {
      Kokkos::View<cuda_spec::SzxOffsets*, Mem> offs(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::offsets")), nb + 1);
      cuda_spec::SzxOffsets tot{};
      std::uint64_t bad_kinds = 0, bad_codes = 0;
      if (cuda_spec::szx_decode_offsets<T>(space, n, block, kinds.data(), lead.data(), lead_size, offs.data(),
                                           tot, bad_kinds, bad_codes)) {
        check_totals(tot, bad_kinds != 0, bad_codes != 0, [&] {
          return has_runs && szx::count_bad_runs(space, nb, rb, OffsetsMid{offs}, runs) != 0;
        });
        timer.mark("offsets");
        impl::ensure_output(out, n);
        const bool ok = cuda_spec::szx_decode<T>(space, n, block, kinds.data(), medians.data(), offs.data(),
                                                 lead.data(), mid.data(), mid_size, verb.data(), out.data());
        KSZ_EXPECTS(ok, "SZx CUDA decode refused offsets it made");
        timer.mark("block decode");
        impl::report_decoded<T>(report, h, n, tot.verb);
        return;
      }
    }
  }
#endif
  const Kokkos::View<const std::uint8_t*, Mem> kc = kinds;
  KSZ_STREAM_CHECK(szx::count_bad_kinds<ExecSpace>(space, kc, szx::Bits<T>::kSignExp, szx::Bits<T>::kTotal) == 0,
                   "SZx block kind out of range");
  Kokkos::View<std::uint64_t*, Mem> lead_off(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::lead_off")), nb + 1);
  Kokkos::View<std::uint64_t*, Mem> mid_off(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::mid_off")), nb + 1);
  Kokkos::View<std::uint64_t*, Mem> verb_off(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::verb_off")), nb + 1);
  const auto lead_total = szx::exclusive_offsets(
      space, nb,
      KOKKOS_LAMBDA(const std::uint64_t b) -> std::uint64_t {
        return szx::is_coded(kc(b)) ? (szx::block_len(b, n, block) + 3) / 4 : 0;
      },
      lead_off);
  KSZ_STREAM_CHECK(lead_total == lead_size, "SZx leading-code segment has ", lead_size,
                   " bytes, the block kinds say ", lead_total);
  const auto verb_total = szx::exclusive_offsets(
      space, nb,
      KOKKOS_LAMBDA(const std::uint64_t b) -> std::uint64_t {
        return kc(b) == szx::kVerbatim ? szx::block_len(b, n, block) : 0;
      },
      verb_off);
  KSZ_STREAM_CHECK(verb_total * sizeof(T) == verb_bytes, "SZx verbatim segment has ", verb_bytes,
                   " bytes, the block kinds say ", verb_total * sizeof(T));
  Kokkos::View<std::uint64_t*, Mem> mid_count(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::szx::mid_count")), nb);
  KSZ_STREAM_CHECK(szx::count_mid_bytes<ExecSpace>(space, n, block, kc, lead_off, lead, mid_count) == 0,
                   "SZx leading code longer than its value");
  const Kokkos::View<const std::uint64_t*, Mem> mc = mid_count;
  const auto mid_total = szx::exclusive_offsets(
      space, nb, KOKKOS_LAMBDA(const std::uint64_t b) -> std::uint64_t { return mc(b); }, mid_off);
  KSZ_STREAM_CHECK(!has_runs || szx::count_bad_runs(space, nb, rb, mid_off, runs) == 0, kBadRunsMessage);
  KSZ_STREAM_CHECK(mid_total == mid_size, "SZx mid-byte segment has ", mid_size,
                   " bytes, the leading codes say ", mid_total);
  timer.mark("offsets");

  impl::ensure_output(out, n);
  if (szx::choose_layout<ExecSpace>(block, nb) == szx::Layout::TeamPerBlock)
    szx::decode_team<ExecSpace, T>(space, block, kinds, medians, lead_off, mid_off, verb_off, lead, mid, verb, out);
  else
    szx::decode<ExecSpace, T>(space, block, kinds, medians, lead_off, mid_off, verb_off, lead, mid, verb, out);
  timer.mark("block decode");
  impl::report_decoded<T>(report, h, n, verb_total);
}

#define KSZ_INSTANTIATE_SZX_RESIDENT(Space, T)                                                                  \
  template void SzxPipeline<Space>::encode<T>(const Space&, Kokkos::View<const T*, Space::memory_space>,       \
                                              const Dims&, const Options&, Report*);                           \
  template SzxPipeline<Space>::Resident<T> SzxPipeline<Space>::upload<T>(const Space&, const container::Parsed&); \
  template void SzxPipeline<Space>::decode<T>(const Space&, const SzxPipeline<Space>::Resident<T>&,            \
                                              Kokkos::View<T*, Space::memory_space>&, Report*);
#define KSZ_INSTANTIATE_SZX(Space)                                                                             \
  template struct SzxPipeline<Space>;                                                                          \
  template Bytes SzxPipeline<Space>::compress<float>(                                                          \
      const Space&, Kokkos::View<const float*, Space::memory_space>, const Dims&, const Options&, Report*);    \
  template Bytes SzxPipeline<Space>::compress<double>(                                                         \
      const Space&, Kokkos::View<const double*, Space::memory_space>, const Dims&, const Options&, Report*);   \
  template void SzxPipeline<Space>::decompress<float>(const Space&, const container::Parsed&,                  \
                                                      Kokkos::View<float*, Space::memory_space>&, Report*);    \
  template void SzxPipeline<Space>::decompress<double>(const Space&, const container::Parsed&,                 \
                                                       Kokkos::View<double*, Space::memory_space>&, Report*);   \
  KSZ_INSTANTIATE_SZX_RESIDENT(Space, float)                                                                   \
  KSZ_INSTANTIATE_SZX_RESIDENT(Space, double)
KSZ_FOR_EACH_EXEC_SPACE(KSZ_INSTANTIATE_SZX)
#undef KSZ_INSTANTIATE_SZX
#undef KSZ_INSTANTIATE_SZX_RESIDENT

}  // namespace ksz::pipeline
