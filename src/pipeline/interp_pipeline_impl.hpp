// Template bodies of InterpPipeline; included by the instantiation unit only.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include "portable/predict/spline/spline.hpp"
#include "src/pipeline/interp_pipeline.hpp"
#include "src/pipeline/pipeline_common.hpp"
#include "src/pipeline/stage_timer.hpp"

namespace ksz::pipeline {
namespace impl {

// The interp compressor's device counters (the workspace's kCounters): the
// trial's verbatim count (never read), the passes' verbatim count, and the
// verbatim elements the split of the code-0 list met.
constexpr std::size_t kInterpCounters = 3;

// The spline-kind trial's finest level in tiles (spline::traverse_tiled) on
// GPUs: all boxes at once instead of a team per box. Host backends keep the
// passes (a thread per box there is no loss). Same choice either way.
template <class ExecSpace>
constexpr bool kFineInTiles =
    !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;

inline spline::Shape spline_shape(const Dims& dims) {
  const Shape3 s = effective_shape(dims);
  return spline::make_shape(s.n[0], s.n[1], s.n[2]);
}

// The spline-kind trial's sample (spline::plan_sample): the whole field up to
// kTrialWhole elements, else whole boxes gathered one after the other. It
// depends on no tuned choice, so its gather is queued with the profile.
template <class Mem, class T>
struct TrialSample {
  Kokkos::View<const T*, Mem> values;
  spline::Shape box;          // predicted independently,
  std::uint64_t boxes = 1;    // `boxes` of them one after the other
};

template <class ExecSpace, class T>
TrialSample<typename ExecSpace::memory_space, T> trial_sample(
    const ExecSpace& space, const spline::Shape& sh, int rank,
    Kokkos::View<const T*, typename ExecSpace::memory_space> in,
    typename Workspace<typename ExecSpace::memory_space>::Lease& ws) {
  using Mem = typename ExecSpace::memory_space;
  using WS = Workspace<Mem>;
  TrialSample<Mem, T> smp{in, sh, 1};
  if (sh.count() > spline::kTrialWhole) {
    const spline::Sample plan = spline::plan_sample(sh, rank);
    smp.box = spline::make_shape(plan.box[0], plan.box[1], plan.box[2]);
    smp.boxes = plan.boxes;
    const Kokkos::View<T*, Mem> g = ws.template get<T>(WS::kTrialSample, plan.shape.count(), "ksz::spline::sample");
    spline::gather_sample<ExecSpace, T>(space, sh, plan, in, g);
    smp.values = g;
  }
  return smp;
}

// The spline-kind trial: the tuned cubic configuration against an all-linear
// one on the sample; cfg keeps the cheaper.
// `queue` runs once the trial's kernels are queued, before their histograms
// are fetched: work for the device while the host waits and weighs them.
template <class ExecSpace, class T, class Queue>
void choose_spline_kind(const ExecSpace& space, const TrialSample<typename ExecSpace::memory_space, T>& smp,
                        const double* steps, double bound, spline::Config& cfg,
                        typename Workspace<typename ExecSpace::memory_space>::Lease& ws, const Queue& queue) {
  using Mem = typename ExecSpace::memory_space;
  using WS = Workspace<Mem>;
  const Kokkos::View<const T*, Mem> sample = smp.values;
  const spline::Shape& box = smp.box;
  const std::uint64_t boxes = smp.boxes;
  const std::uint64_t ns = box.count() * boxes;
  // Both configurations (tuned, all-linear) at once: same passes, other splines.
  spline::Config lin = cfg;
  for (auto& k : lin.kind) k = spline::kLinear;
  constexpr std::uint32_t radius = spline::kAutoRadiusMax;
  std::vector<spline::Pass> host_passes;
  spline::Anchors anchors;
  quantize::QuantParams aqp{};
  spline::FineTiles fine;  // on GPUs the finest level in tiles, all boxes and both configurations a launch
  for (int c = 0; c < 2; ++c) {
    const auto anchor_body = [&](const spline::Anchors& a, const quantize::QuantParams& q) {
      anchors = a;
      aqp = q;
    };
    const auto pass_body = [&](const spline::Pass& p) { host_passes.push_back(p); };
    const spline::Config& conf = c == 0 ? cfg : lin;
    if constexpr (kFineInTiles<ExecSpace>)
      spline::traverse_tiled(box, conf, steps, bound, anchor_body, pass_body,
                             [&](const spline::FineTiles& ft) {
                               if (c == 0) fine = ft;  // the all-linear one's differs only in its splines
                             });
    else
      spline::traverse(box, conf, steps, bound, anchor_body, pass_body);
  }
  const Kokkos::View<spline::Pass*, Mem> passes =
      ws.template get<spline::Pass>(WS::kTrialPasses, host_passes.size(), "ksz::spline::trial_passes");
  // The pass table's copy (from pageable memory: it waits for the stream,
  // idle here: the sample's gather went before the profile's fetch).
  Kokkos::deep_copy(space, passes,
                    Kokkos::View<const spline::Pass*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        host_passes.data(), host_passes.size()));
  const Kokkos::View<T*, Mem> rec = ws.template get<T>(WS::kTrialRec, 2 * ns, "ksz::spline::trial_rec");
  const Kokkos::View<std::uint16_t*, Mem> codes =
      ws.template get<std::uint16_t>(WS::kTrialCodes, 2 * ns, "ksz::spline::trial_codes");
  const Kokkos::View<std::int32_t*, Mem> qv =
      ws.template get<std::int32_t>(WS::kTrialResiduals, 2 * ns, "ksz::spline::trial_q");
  // Its verbatim count is not read: the workspace's first counter, left as it is.
  const Kokkos::View<std::uint64_t, Mem> unread(
      ws.template get<std::uint64_t>(WS::kCounters, kInterpCounters, "ksz::interp::counters").data());
  spline::trial_predict<ExecSpace, T>(space, anchors, aqp, radius, bound, boxes, 2, passes, sample, rec, codes, qv,
                                      unread);
  if constexpr (kFineInTiles<ExecSpace>) {
    // Both configurations' tiles in one launch: the same tiles, other splines.
    fine.items = 2 * boxes;
    fine.item_n = box.count();
    fine.variant_from = boxes;
    for (int p = 0; p < 3; ++p) fine.variant_kind[p] = lin.kind[fine.pass[p].dim];
    spline::compress_fine<ExecSpace, T>(space, fine, bound, radius, sample, rec, codes, qv, unread);
  }
  // Both configurations' histograms side by side, one copy back.
  const std::uint64_t nbins = 2 * radius;
  const Kokkos::View<std::uint64_t*, Mem> hist =
      ws.template get<std::uint64_t>(WS::kHistogram, 2 * nbins, "ksz::hist");  // zeroed by histogram()
  histogram::histograms<ExecSpace>(space, Kokkos::subview(codes, std::make_pair(std::uint64_t(0), 2 * ns)),
                                   Kokkos::subview(hist, std::make_pair(std::uint64_t(0), 2 * nbins)), radius, 2);
  WordsFetch<ExecSpace> fetch(space, {hist});
  queue();
  const std::vector<std::uint64_t> h = fetch.wait();
  if (spline::trial_bits(h.data() + nbins, nbins) < spline::trial_bits(h.data(), nbins)) cfg = lin;
}

// On CUDA: the value range and the auto-tune's profile in one round trip.
// The profile's kernel is queued behind the range's and takes its unit from
// the extremes that kernel leaves in device memory (spline::profile_unit);
// one copy brings both back. False (nothing done) elsewhere.
// `queue` runs before the fetch (the trial's sample).
template <class ExecSpace, class T, class Queue>
bool range_and_profile(const ExecSpace& space, Kokkos::View<const T*, typename ExecSpace::memory_space> in,
                       const spline::Shape& sh, bool rel, double bound,
                       typename Workspace<typename ExecSpace::memory_space>::Lease& ws, Range& range,
                       spline::Profile& prof, const Queue& queue) {
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    using Mem = typename ExecSpace::memory_space;
    using WS = Workspace<Mem>;
    const Kokkos::View<double*, Mem> buf = queue_value_range<T>(space, in.data(), in.extent(0), ws);
    if (buf.data() == nullptr) return false;
    auto f = spline::plan_profile(sh, in, prof);
    f.range = buf.data();
    f.rel = rel;
    f.bound = bound;
    const Kokkos::View<std::uint64_t*, Mem> sums =
        ws.template get<std::uint64_t>(WS::kScalar, f.kValues, "ksz::spline::profile_sums");
    spline::profile_sums<ExecSpace, T>(space, f, sums);
    queue();
    const std::vector<std::uint64_t> h = fetch_words(
        space, {Kokkos::View<const std::uint64_t*, Mem>(reinterpret_cast<const std::uint64_t*>(buf.data()), 2), sums});
    double mn, mx;
    std::memcpy(&mn, &h[0], sizeof mn);
    std::memcpy(&mx, &h[1], sizeof mx);
    range = range_of_extremes(mn, mx);
    // The unit the device used, from these same extremes: the one the host
    // path takes (checked by the caller against the bound).
    KSZ_EXPECTS(spline::profile_unit(mn, mx, rel, bound) == spline::profile_unit(range.min, range.max, rel, bound),
                "internal: the profile's unit depends on the range's zeros");
    spline::profile_errors(h.data() + 2, prof);
    return true;
  }
#endif
  (void)space, (void)in, (void)sh, (void)rel, (void)bound, (void)ws, (void)range, (void)prof, (void)queue;
  return false;
}
}  // namespace impl

template <class ExecSpace>
template <class T>
Bytes InterpPipeline<ExecSpace>::compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims,
                                          const Options& opt, Report* report) {
  using namespace impl;
  const std::uint64_t n = dims.count();
  KSZ_EXPECTS(in.extent(0) == n, "input has ", in.extent(0), " elements, dims say ", n);
  StageTimer<ExecSpace> timer(space, report);
  // The large buffers from the workspace (no allocation per call once sized).
  using WS = Workspace<Mem>;
  typename WS::Lease ws;

  const bool rel = opt.mode == ErrorMode::REL;
  const spline::Shape sh = spline_shape(dims);
  Range range;
  spline::Profile prof;
  const Shape3 s3 = effective_shape(dims);
  TrialSample<Mem, T> smp;
  const auto sample = [&] { smp = trial_sample<ExecSpace, T>(space, sh, s3.rank, in, ws); };
  const bool profiled = range_and_profile<ExecSpace, T>(space, in, sh, rel, opt.bound, ws, range, prof, sample);
  if (!profiled) range = value_range<ExecSpace, T>(space, in);
  double abs_bound = opt.bound;
  if (rel) abs_bound = opt.bound * (range.max - range.min);
  const quantize::QuantParams qp = quant_params(abs_bound, range);
  // The profile's errors count in units of the bound (else of the step),
  // from the extremes alone where the device worked it out.
  const double unit = spline::profile_unit(range.min, range.max, rel, opt.bound);
  KSZ_EXPECTS(unit == (abs_bound > 0 ? abs_bound : qp.step), "internal: profile unit ", unit, " is not the bound's");
  if (!profiled) {
    prof = spline::profile<ExecSpace, T>(space, sh, unit, in);
    sample();
  }
  timer.mark("value range+profile");

  spline::Config cfg;
  cfg.anchor_stride = spline::default_anchor_stride(s3.rank);
  // Eq. 1 takes the bound relative to the value range, whatever the mode.
  const double span = range.max - range.min;
  const double eps = span > 0 ? abs_bound / span : 0;
  cfg.alpha = abs_bound > 0 ? spline::alpha_of(eps) : 1.0;
  spline::tune(prof, cfg);
  const int L = spline::level_count(cfg.anchor_stride);
  double steps[16];
  spline::level_steps(qp.step, abs_bound > 0 ? cfg.alpha : 1.0, L, steps);

  const Kokkos::View<std::uint16_t*, Mem> codes = ws.template get<std::uint16_t>(WS::kCodes, n, "ksz::codes");
  const Kokkos::View<T*, Mem> rec = ws.template get<T>(WS::kInterpRec, n, "ksz::reconstructed");
  // Residuals of the code-0 positions only (sparse: never initialized).
  const Kokkos::View<std::int32_t*, Mem> qv = ws.template get<std::int32_t>(WS::kInterpResiduals, n, "ksz::residuals");
  // The passes' verbatim count: the workspace's second counter, zeroed
  // before the anchors are coded.
  const Kokkos::View<std::uint64_t*, Mem> counters =
      ws.template get<std::uint64_t>(WS::kCounters, kInterpCounters, "ksz::interp::counters");
  // Counter k as a kernel's scalar, and as a one-word view for fetch_words.
  const auto scalar = [&counters](std::size_t k) { return Kokkos::View<std::uint64_t, Mem>(counters.data() + k); };
  const auto word = [&counters](std::size_t k) { return Kokkos::subview(counters, std::make_pair(k, k + 1)); };
  const Kokkos::View<std::uint64_t, Mem> nverb = scalar(1);
  // Radius 0 (automatic): code with the largest candidate, then choose from
  // the code histogram (spline::choose_radius); the codes are then read
  // through a huffman::Narrow, never rewritten.
  const bool auto_radius = opt.radius == 0;
  const std::uint32_t coded_radius = auto_radius ? spline::kAutoRadiusMax : opt.radius;
  // The passes ahead of the finest level's along x on the even-x grid where
  // it applies (spline::traverse_even; the same codes either way).
  const bool even = spline::even_x_applies(sh, cfg) && spline::from_even_aligned(rec, codes);
  spline::EvenGrid<T, Mem> eg;
  if (even) {
    const std::uint64_t ne = spline::even_x_shape(sh).count();
    eg.r = ws.template get<T>(WS::kEvenRec, ne, "ksz::even_x::reconstructed");
    eg.codes = ws.template get<std::uint16_t>(WS::kEvenCodes, ne, "ksz::even_x::codes");
  }
  const spline::CompressArrays<T, Mem> arrays{in, eg, rec, codes, qv, nverb};
  const auto anchor_body = [&](const spline::Anchors& a, const quantize::QuantParams& aqp, spline::PassGrid grid) {
    spline::compress_anchors_on<ExecSpace, T>(space, a, aqp, grid, coded_radius, arrays);
  };
  const auto pass_body = [&](const spline::Pass& p, spline::PassGrid grid) {
    spline::compress_pass_on<ExecSpace, T>(space, p, grid, qp.bound, coded_radius, arrays);
  };
  // Queued behind the trial's kernels while the host waits for their
  // histograms and weighs them: the anchors (no tuned choice in them) and, on
  // GPUs, the coarsest level with the tuned splines (on the H200 hosts that
  // wait is 30-40 us, the two 50 us of device work). Should the trial pick
  // the linear splines, that level is coded again. Host backends code the
  // anchors only (their cores would spend the guess's time).
  const std::uint64_t coarsest = std::uint64_t(1) << (L - 1);
  const bool guess = kFineInTiles<ExecSpace> && L >= 2;  // the traversal's last pass is never a guess
  const spline::Config tuned = cfg;
  choose_spline_kind<ExecSpace, T>(space, smp, steps, qp.bound, cfg, ws, [&] {
    Kokkos::deep_copy(space, nverb, std::uint64_t(0));  // after the trial's launches: they wait for nothing
    spline::traverse_on(even, sh, tuned, steps, qp.bound, anchor_body,
                        [&](const spline::Pass& p, spline::PassGrid grid) {
                          if (guess && spline::level_stride(p, grid) == coarsest) pass_body(p, grid);
                        });
  });
  const bool kept = std::equal(std::begin(cfg.kind), std::end(cfg.kind), std::begin(tuned.kind));
  // No stage ends here: the anchors and the coarsest level are still running
  // and the rest of the passes go straight behind them (a fence here left
  // the device idle for the next launch, about 10 us on the H200).

  if (guess && !kept) Kokkos::deep_copy(space, nverb, std::uint64_t(0));  // the guess's verbatim count
  spline::traverse_on(
      even, sh, cfg, steps, qp.bound,
      [&](const spline::Anchors& a, const quantize::QuantParams& aqp, spline::PassGrid grid) {
        if (guess && !kept) anchor_body(a, aqp, grid);
      },
      [&](const spline::Pass& p, spline::PassGrid grid) {
        if (!(guess && kept && spline::level_stride(p, grid) == coarsest)) pass_body(p, grid);
      });
  // With the automatic radius, the wide histogram and (on CUDA, in the same
  // pass) each compaction block's magnitude classes, from which the outlier
  // counts at the chosen radius follow without another read of the codes;
  // queued behind the passes, in their stage.
  const std::uint64_t nblocks = (n + outliers::kCompactBlock - 1) / outliers::kCompactBlock;
  Kokkos::View<std::uint32_t*, Mem> classes;
  Kokkos::View<std::uint64_t*, Mem> wide;
  bool classed = false;
  if (auto_radius) {
    wide = ws.template get<std::uint64_t>(WS::kHistogram, 2 * coded_radius, "ksz::hist");  // zeroed by histogram()
    classes = ws.template get<std::uint32_t>(WS::kCodeClasses, nblocks * histogram::kCodeClasses, "ksz::code_classes");
    classed = histogram::histogram_classes<ExecSpace>(space, codes, wide, coded_radius, classes);
    warm_codebook_thread<Mem>(n);  // through the passes' end: polls, hot, until the codebook is posted below
  }
  // The histogram's copy queued behind it: the stage's fence below covers it,
  // and no second round trip follows.
  WordsFetch<ExecSpace> counted(space, auto_radius ? typename WordsFetch<ExecSpace>::Parts{wide, word(1)}
                                                   : typename WordsFetch<ExecSpace>::Parts{word(1)});
  timer.mark(auto_radius ? "auto-tune+predict+quantize+histogram" : "auto-tune+predict+quantize");
  std::uint32_t radius = coded_radius;
  std::vector<std::uint64_t> hist;  // the final codes' histogram, when known here
  std::future<huffman::HostCodebook> book_task;  // its codebook
  std::uint64_t n_verbatim = 0;     // counted by the passes
  if (auto_radius) {
    const std::vector<std::uint64_t> h = counted.wait();
    n_verbatim = h.back();
    radius = spline::choose_radius(spline::spread_from_histogram(h.data(), n_verbatim), index_width(n));
    hist = spline::narrow_histogram(h.data(), radius);
    // The codebook from that histogram on the warm thread while this one
    // lists the outliers (0.1-0.5 ms on the H200 hosts at 512^3,
    // package-merge at tight bounds).
    book_task = codebook_async<Mem>(hist.data(), 2 * radius);
    timer.mark("radius choice");
  } else {
    n_verbatim = counted.wait()[0];
  }

  // Outlier and verbatim lists: the code-0 positions at the chosen radius
  // (counted per block from the classes, else by one read of the codes), in
  // one compaction; split below only when there are verbatim elements.
  const huffman::Narrow narrow = radius == coded_radius ? huffman::Narrow{} : huffman::Narrow(coded_radius, radius);
  const spline::ListedResidual<Mem> residual{codes, qv, static_cast<std::int32_t>(coded_radius)};
  const Kokkos::View<std::uint64_t*, Mem> zero_counts =
      ws.template get<std::uint64_t>(WS::kZeroCounts, nblocks + 1, "ksz::zero_counts");
  if (classed)  // counted from the classes and scanned (on CUDA in one kernel)
    spline::zero_offsets_from_classes<ExecSpace>(
        space, classes, nblocks, radius, zero_counts,
        ws.template get<unsigned long long>(WS::kZeroScanState, cuda_spec::zero_offsets_state_words(nblocks),
                                           "ksz::zero_scan"));
  else
    spline::count_outliers<ExecSpace>(space, codes, narrow, zero_counts);
  // With the histogram known here its bin 0 is their number: the list is
  // made without waiting for the device (checked below, where this thread
  // waits anyway).
  const auto is_zero = KOKKOS_LAMBDA(const std::uint64_t i) { return narrow(codes(i)) == 0; };
  const auto zero_idx =
      classed        ? outliers::compact_scanned(space, n, is_zero, "ksz::zero_index", zero_counts, hist[0], &ws,
                                                 WS::kOutliers)
      : hist.empty() ? outliers::compact_counted(space, n, is_zero, "ksz::zero_index", zero_counts, ~std::uint64_t(0),
                                                 &ws, WS::kOutliers)
                     : outliers::compact_known(space, n, is_zero, "ksz::zero_index", zero_counts, hist[0], &ws,
                                               WS::kOutliers);
  const std::uint64_t n_zero = zero_idx.extent(0);
  KSZ_EXPECTS(n_verbatim <= n_zero, "internal: more verbatim elements than code-0 positions");
  // Without verbatim elements every code-0 position is an outlier; with them,
  // one scan over the code-0 list splits it (in order) into the outlier list
  // with its residuals and the verbatim list with its values. The lists come
  // from the workspace: no allocation, no synchronization.
  Kokkos::View<std::uint64_t*, Mem> out_idx = zero_idx, verb_idx;
  Kokkos::View<T*, Mem> verb_val;
  const Kokkos::View<std::int32_t*, Mem> out_val =
      ws.template get<std::int32_t>(WS::kOutliersAlt, n_zero - n_verbatim, "ksz::outlier_value");
  if (n_verbatim > 0) {
    out_idx = ws.template get<std::uint64_t>(WS::kOutlierSplit, n_zero - n_verbatim, "ksz::outlier_index");
    verb_idx = ws.template get<std::uint64_t>(WS::kVerbatim, n_verbatim, "ksz::verbatim_index");
    verb_val = ws.template get<T>(WS::kVerbatimAlt, n_verbatim, "ksz::verbatim_value");
    const Kokkos::View<std::uint64_t*, Mem> o_idx = out_idx, v_idx = verb_idx;
    const Kokkos::View<T*, Mem> v_val = verb_val;
    const std::uint64_t n_out = n_zero - n_verbatim;
    const Kokkos::View<std::uint64_t, Mem> n_split = scalar(2);  // verbatim elements the scan met: checked below
    Kokkos::parallel_scan(
        "ksz::interp::split_zeros", Kokkos::RangePolicy<ExecSpace>(space, 0, n_zero),
        KOKKOS_LAMBDA(const std::uint64_t j, std::uint64_t& verb_before, const bool final) {
          const std::uint64_t i = zero_idx(j);
          const std::int32_t q = residual(i);
          const bool verb = q == spline::kVerbatim;
          if (final) {
            if (verb && verb_before < n_verbatim) {
              v_idx(verb_before) = i;
              v_val(verb_before) = in(i);
            } else if (!verb && j - verb_before < n_out) {
              o_idx(j - verb_before) = i;
              out_val(j - verb_before) = q;
            }
          }
          verb_before += verb ? 1 : 0;
          if (final && j + 1 == n_zero) n_split() = verb_before;
        });
  } else {
    Kokkos::parallel_for(
        "ksz::outlier_values", Kokkos::RangePolicy<ExecSpace>(space, 0, n_zero),
        KOKKOS_LAMBDA(const std::uint64_t j) { out_val(j) = residual(zero_idx(j)); });
  }
  // The lists' counts, checked once the encoder has run: their copy is
  // queued now and nothing waits for it before the codebook's tables and the
  // encoder are queued (on the H200 hosts a round trip here held the encoder
  // back 10-15 us after the codebook was in).
  const bool check_counts = !hist.empty() || n_verbatim > 0;
  std::optional<WordsFetch<ExecSpace>> counts;
  if (check_counts)
    counts.emplace(space, typename WordsFetch<ExecSpace>::Parts{
                              Kokkos::subview(zero_counts, std::make_pair(nblocks, nblocks + 1)), word(2)});
  huffman::HostCodebook book;
  if (book_task.valid()) book = codebook_result<Mem>(book_task);
  timer.mark(hist.empty() ? "outliers" : "outliers+codebook");

  // Its last stage ends before the Huffman segments' copy to the host, which
  // therefore counts in gather+container, as in the other pipelines.
  auto huff =
      huffman_encode_codes<ExecSpace>(space, codes, radius, opt.huffman_chunk, opt.huffman_subchunk, opt.lossless,
                                      timer, report, hist.empty() ? nullptr : hist.data(), &ws,
                                      hist.empty() ? nullptr : &book, narrow);

  if (check_counts) {
    const auto c = counts->wait();
    KSZ_EXPECTS(c[0] == n_zero, "internal: ", c[0], " code-0 positions counted, ", n_zero, " listed");
    KSZ_EXPECTS(n_verbatim == 0 || c[1] == n_verbatim, "internal: ", c[1],
                " verbatim elements listed, the passes counted ", n_verbatim);
  }
  const auto oi = pack_indices(out_idx, n);
  const auto ov = to_host_bytes(out_val, out_val.extent(0));
  const auto vi = pack_indices(verb_idx, n);
  const auto vv = to_host_bytes(verb_val, verb_val.extent(0));
  container::Header h;
  h.dtype = dtype_of<T>();
  h.dims = dims;
  h.mode = opt.mode;
  h.predictor = PredictorId::Interp;
  h.codec = CodecId::Huffman;
  h.lossless = huff.lossless;
  h.user_bound = opt.bound;
  h.abs_bound = abs_bound;
  h.value_min = range.min;
  h.value_max = range.max;
  h.set_f64(Param::QuantStep, qp.step);
  h.set_u32(Param::Radius, radius);
  h.set_u32(Param::HuffmanChunk, opt.huffman_chunk);
  h.set_u64(Param::OutlierCount, out_idx.extent(0));
  h.set_u64(Param::VerbatimCount, verb_idx.extent(0));
  h.set_u32(Param::InterpAnchorStride, cfg.anchor_stride);
  h.set_f64(Param::InterpAlpha, cfg.alpha);
  h.set_u32s(Param::InterpOrder, {cfg.order[0], cfg.order[1], cfg.order[2]});
  h.set_u32s(Param::InterpNatural, {cfg.kind[0], cfg.kind[1], cfg.kind[2]});
  std::vector<container::Segment> segments = {
      {SegmentId::HuffmanLengths, huff.lengths.data(), huff.lengths.size()},
      {SegmentId::HuffmanChunkOffsets, huff.offsets.data(), huff.offsets.size()},
      huff.words.segment(SegmentId::HuffmanWords),
      {SegmentId::OutlierIndex, oi.data(), oi.size()},
      {SegmentId::OutlierValue, ov.data(), ov.size()},
      {SegmentId::VerbatimIndex, vi.data(), vi.size()},
      {SegmentId::VerbatimValue, vv.data(), vv.size()}};
  add_run_bits(h, segments, opt.huffman_subchunk, huff.run_bits, n, opt.huffman_chunk);
  auto stream = container::write(h, segments);
  timer.mark("gather+container");
  if (report) {
    report->elements = n;
    report->input_bytes = n * sizeof(T);
    report->output_bytes = stream.size();
    report->outliers = out_idx.extent(0);
    report->verbatim = verb_idx.extent(0);
    report->radius = radius;
    report->abs_bound = abs_bound;
    report->value_min = range.min;
    report->value_max = range.max;
  }
  return stream;
}

template <class ExecSpace>
template <class T>
void InterpPipeline<ExecSpace>::decompress(const ExecSpace& space, const container::Parsed& s,
                                           Kokkos::View<T*, Mem>& out, Report* report) {
  using namespace impl;
  const container::Header& h = s.header;
  KSZ_STREAM_CHECK(h.dtype == dtype_of<T>(), "dtype mismatch");
  KSZ_STREAM_CHECK(h.predictor == PredictorId::Interp && h.codec == CodecId::Huffman,
                   "not an interpolation+Huffman stream");
  const std::uint64_t n = h.dims.count();
  const std::uint32_t radius = h.u32(Param::Radius);
  KSZ_STREAM_CHECK(radius >= 1 && radius <= 32768, "radius ", radius, " out of range");
  const std::uint32_t hchunk = h.u32(Param::HuffmanChunk);
  KSZ_STREAM_CHECK(hchunk >= 1 && hchunk <= (1u << 24), "Huffman chunk ", hchunk, " out of range");
  const double step = h.f64(Param::QuantStep);
  KSZ_STREAM_CHECK(std::isfinite(step) && step > 0, "quantization step is not a positive number");
  const std::uint64_t n_out = h.u64(Param::OutlierCount), n_verb = h.u64(Param::VerbatimCount);
  KSZ_STREAM_CHECK(n_out <= n && n_verb <= n, "outlier counts exceed the element count");
  spline::Config cfg;
  cfg.anchor_stride = h.u32(Param::InterpAnchorStride);
  KSZ_STREAM_CHECK(cfg.anchor_stride >= 2 && cfg.anchor_stride <= 512 &&
                       (cfg.anchor_stride & (cfg.anchor_stride - 1)) == 0,
                   "anchor stride ", cfg.anchor_stride, " is not a power of two in [2, 512]");
  cfg.alpha = h.f64(Param::InterpAlpha);
  KSZ_STREAM_CHECK(std::isfinite(cfg.alpha) && cfg.alpha >= 1 && cfg.alpha <= 4, "alpha out of range");
  const auto order = h.u32s(Param::InterpOrder, 3);
  const auto kind = h.u32s(Param::InterpNatural, 3);
  bool seen[3] = {false, false, false};
  for (int d = 0; d < 3; ++d) {
    KSZ_STREAM_CHECK(order[d] < 3 && !seen[order[d]], "dimension order is not a permutation");
    seen[order[d]] = true;
    KSZ_STREAM_CHECK(kind[d] <= spline::kLinear, "unknown spline kind ", kind[d]);
    cfg.order[d] = order[d];
    cfg.kind[d] = kind[d];
  }

  StageTimer<ExecSpace> timer(space, report);
  auto oi = unpack_indices(space, s.require(SegmentId::OutlierIndex), n_out, n, "outlier");
  auto ov = to_device<std::int32_t>(space, s.require(SegmentId::OutlierValue), n_out, "outlier values");
  auto vi = unpack_indices(space, s.require(SegmentId::VerbatimIndex), n_verb, n, "verbatim");
  auto vv = to_device<T>(space, s.require(SegmentId::VerbatimValue), n_verb, "verbatim values");
  // Marks "copy to device" (the lists above and the Huffman words) and "lossless decode".
  using WS = Workspace<Mem>;
  typename WS::Lease ws;
  const auto codes = huffman_decode_codes<ExecSpace>(space, s, n, radius, hchunk, timer, &ws);
  timer.mark("huffman decode");

  // Residuals of the code-0 positions (sparse, as the compressor's): outlier
  // values and verbatim markers. The lists are strictly increasing
  // (unpack_indices) and must land on code-0 positions only, never on each
  // other (both checked here); the passes count the code-0 positions they
  // meet, and the lists cover them all exactly when that count is their
  // total length (checked after the passes, before anything is returned).
  const Kokkos::View<std::int32_t*, Mem> qv = ws.template get<std::int32_t>(WS::kInterpResiduals, n, "ksz::residuals");
  std::uint64_t bad = 0;
  Kokkos::parallel_reduce(
      "ksz::interp::check_outliers", Kokkos::RangePolicy<ExecSpace>(space, 0, n_out),
      KOKKOS_LAMBDA(const std::uint64_t j, std::uint64_t& acc) {
        acc += (codes(oi(j)) == 0 && ov(j) != spline::kVerbatim) ? 0 : 1;
      },
      bad);
  KSZ_STREAM_CHECK(bad == 0, "outlier list does not match the coded stream");
  Kokkos::parallel_reduce(
      "ksz::interp::check_verbatim", Kokkos::RangePolicy<ExecSpace>(space, 0, n_verb),
      KOKKOS_LAMBDA(const std::uint64_t j, std::uint64_t& acc) { acc += codes(vi(j)) == 0 ? 0 : 1; }, bad);
  KSZ_STREAM_CHECK(bad == 0, "verbatim list does not match the coded stream");
  outliers::scatter<ExecSpace, std::int32_t>(space, oi, ov, qv);
  Kokkos::parallel_for(
      "ksz::interp::mark_verbatim", Kokkos::RangePolicy<ExecSpace>(space, 0, n_verb),
      KOKKOS_LAMBDA(const std::uint64_t j) { qv(vi(j)) = spline::kVerbatim; });
  Kokkos::parallel_reduce(  // an outlier overwritten by a verbatim marker: the lists overlap
      "ksz::interp::check_overlap", Kokkos::RangePolicy<ExecSpace>(space, 0, n_out),
      KOKKOS_LAMBDA(const std::uint64_t j, std::uint64_t& acc) { acc += qv(oi(j)) == spline::kVerbatim ? 1 : 0; },
      bad);
  KSZ_STREAM_CHECK(bad == 0, "outlier and verbatim lists overlap");
  ensure_output(out, n);
  outliers::scatter<ExecSpace, T>(space, vi, vv, out);
  timer.mark("outliers");

  // The compressor's exact steps: same host arithmetic from the same header.
  const bool degenerate = !(h.abs_bound > 0);
  const int L = spline::level_count(cfg.anchor_stride);
  double steps[16];
  spline::level_steps(step, degenerate ? 1.0 : cfg.alpha, L, steps);
  const spline::Shape sh = spline_shape(h.dims);
  const double bound = h.abs_bound;
  const Kokkos::View<std::uint64_t, Mem> zeros(
      ws.template get<std::uint64_t>(WS::kCounters, 1, "ksz::interp::counters").data());
  Kokkos::deep_copy(space, zeros, std::uint64_t(0));
  // The passes ahead of the finest level's along x on the even-x grid, as
  // the compressor's (spline::traverse_on), its verbatim values put there first.
  const bool even = spline::even_x_applies(sh, cfg) && spline::quads_aligned<T>(out);
  Kokkos::View<T*, Mem> ev;
  if (even) {
    ev = ws.template get<T>(WS::kEvenRec, spline::even_x_shape(sh).count(), "ksz::even_x::reconstructed");
    const Kokkos::View<T*, Mem> e = ev;
    Kokkos::parallel_for(
        "ksz::interp::even_verbatim", Kokkos::RangePolicy<ExecSpace>(space, 0, n_verb),
        KOKKOS_LAMBDA(const std::uint64_t j) {
          if (vi(j) % 2 == 0) e(vi(j) / 2) = vv(j);
        });
  }
  const spline::DecompressArrays<T, Mem> arrays{codes, qv, ev, out, zeros};
  spline::traverse_on(
      even, sh, cfg, steps, bound,
      [&](const spline::Anchors& a, const quantize::QuantParams& aqp, spline::PassGrid grid) {
        spline::decompress_anchors_on<ExecSpace, T>(space, a, aqp, grid, radius, arrays);
      },
      [&](const spline::Pass& p, spline::PassGrid grid) {
        spline::decompress_pass_on<ExecSpace, T>(space, p, grid, radius, arrays);
      });
  std::uint64_t n_zero = 0;
  Kokkos::deep_copy(space, n_zero, zeros);
  space.fence();
  if (n_zero != n_out + n_verb) {
    out = Kokkos::View<T*, Mem>();  // what the passes made of uncovered positions is never returned
    KSZ_STREAM_CHECK(false, "code-0 positions (", n_zero, ") and the outlier and verbatim lists (", n_out + n_verb,
                     ") disagree");
  }
  timer.mark("interp inverse");
  report_decoded<T>(report, h, n, n_verb);
  if (report) report->outliers = n_out;
}

}  // namespace ksz::pipeline
