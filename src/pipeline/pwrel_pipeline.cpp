// PwRelPipeline bodies and their instantiation for every execution space.
#include "src/pipeline/pwrel_pipeline.hpp"

#include "portable/transform/log_transform.hpp"
#include "src/cpu_baseline/classic_pipeline.hpp"
#include "src/pipeline/lorenzo_pipeline.hpp"
#include "src/pipeline/pipeline_common.hpp"
#include "src/pipeline/stage_timer.hpp"

namespace ksz::pipeline {
namespace {

template <class Mem>
constexpr bool host_accessible() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
}

void append_stages(Report* to, const Report& from, const char* prefix) {
  if (!to) return;
  for (const auto& s : from.stages) to->stages.push_back({std::string(prefix) + s.name, s.seconds});
}

}  // namespace

template <class ExecSpace>
template <class T>
Bytes PwRelPipeline<ExecSpace>::compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims,
                                         const Options& opt, Report* report) {
  using namespace impl;
  const std::uint64_t n = dims.count();
  const double e = opt.bound;
  KSZ_EXPECTS(opt.mode == ErrorMode::PW_REL, "PwRelPipeline needs mode pwrel");
  KSZ_EXPECTS(e > 0 && e < 1, "a point-wise relative bound must be in (0, 1), got ", e);
  KSZ_EXPECTS(in.extent(0) == n, "input has ", in.extent(0), " elements, dims say ", n);
  const bool classic = opt.classic || opt.predictor == PredictorId::ClassicLorenzo;
  KSZ_EXPECTS(classic || opt.predictor == PredictorId::Lorenzo, "pwrel: predictor '", to_string(opt.predictor),
              "' is not available");

  auto timer = std::make_unique<StageTimer<ExecSpace>>(space, report);
  const Range range = value_range<ExecSpace, T>(space, in);
  Kokkos::View<double*, Mem> y(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::pwrel::y")), n);
  transform::forward<ExecSpace, T>(space, in, y);
  const transform::LogStats st = transform::log_stats<ExecSpace, T>(space, in, y);
  // Room for the cast to T and exp2_det's last bits: the verified bound is e.
  const double eps = sizeof(T) == 4 ? 0x1p-24 : 0x1p-53;
  double e_eff = e * (1 - 1e-6) - 4 * eps;
  if (!(e_eff > 0.5 * e)) e_eff = 0.5 * e;
  double b = transform::log2_det(1.0 + e_eff);
  if (!(b > 1e-300)) b = 1e-300;
  const transform::LogParams lp = transform::log_params(st, b);
  transform::set_zero_level<ExecSpace>(space, lp, y);
  timer->mark("log transform");

  Options io = opt;
  io.mode = ErrorMode::ABS;
  io.bound = b;
  io.predictor = classic ? PredictorId::ClassicLorenzo : PredictorId::Lorenzo;
  io.classic = classic;
  // Log fields of rough data have wide residuals: a larger radius (SZ uses
  // 32768) turns most of them from 8-byte outliers into codes. Capped so the
  // codebook (2r bytes) stays below n/32 bytes, and at 4096 on the GPU path,
  // whose histogram keeps a per-team copy of the alphabet in scratch.
  const std::uint64_t want = std::min<std::uint64_t>(n / 64, classic ? 32768 : 4096);
  io.radius = std::max<std::uint32_t>(fixed_radius(opt), static_cast<std::uint32_t>(want));
  Report ir, dr;
  Bytes inner;
  Kokkos::View<double*, Mem> yr;
  if (classic) {
    if constexpr (host_accessible<Mem>()) {
      yr = Kokkos::View<double*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::pwrel::yr")), n);
      inner = cpu_baseline::classic_compress<double>(y.data(), dims, io, report ? &ir : nullptr, yr.data());
    } else {
      throw InvalidInput("the classic pipeline runs on host backends only (serial, openmp)");
    }
  } else {
    inner = LorenzoPipeline<ExecSpace>::template compress<double>(space, y, dims, io, report ? &ir : nullptr);
  }
  append_stages(report, ir, "log field: ");
  timer = std::make_unique<StageTimer<ExecSpace>>(space, report);
  if (!classic) {  // what every decompressor will see
    const container::Parsed ip = container::read(inner.data(), inner.size());
    LorenzoPipeline<ExecSpace>::template decompress<double>(space, ip, yr, report ? &dr : nullptr);
    timer->mark("log field: decode");
  }

  const std::uint32_t sign_mode = st.any_negative ? (st.any_positive ? transform::kBitmap : transform::kAllNegative)
                                                  : transform::kAllPositive;
  Kokkos::View<std::uint8_t*, Mem> bits("ksz::pwrel::signs", sign_mode == transform::kBitmap ? (n + 7) / 8 : 0);
  if (sign_mode == transform::kBitmap) transform::sign_bits<ExecSpace, T>(space, in, bits);
  Kokkos::View<T*, Mem> xr(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::pwrel::xr")), n);
  transform::inverse<ExecSpace, T>(space, yr, sign_mode, bits, lp.threshold, xr);
  const auto verb_idx = outliers::compact_indices(
      space, n, KOKKOS_LAMBDA(const std::uint64_t i) { return !transform::pw_within<T>(in(i), xr(i), e); },
      "ksz::pwrel::verbatim_index");
  Kokkos::View<T*, Mem> verb_val(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::pwrel::verbatim_value")),
                                 verb_idx.extent(0));
  Kokkos::parallel_for(
      "ksz::pwrel::verbatim_values", Kokkos::RangePolicy<ExecSpace>(space, 0, verb_idx.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t j) { verb_val(j) = in(verb_idx(j)); });
  timer->mark("pw check+verbatim");

  const auto sb = to_host_bytes(bits, bits.extent(0));
  const auto vi = pack_indices(verb_idx, n);
  const auto vv = to_host_bytes(verb_val, verb_val.extent(0));
  container::Header h;
  h.dtype = dtype_of<T>();
  h.dims = dims;
  h.mode = ErrorMode::PW_REL;
  h.predictor = io.predictor;
  h.codec = CodecId::Huffman;
  h.user_bound = e;
  // The implied absolute bound: every element is within e|x| <= e max|x|.
  h.abs_bound = e * std::max(std::fabs(range.min), std::fabs(range.max));
  h.value_min = range.min;
  h.value_max = range.max;
  h.set_f64(container::Param::PwZeroThreshold, lp.threshold);
  h.set_u32(container::Param::PwSignMode, sign_mode);
  h.set_f64(container::Param::PwLogBound, b);
  h.set_u64(container::Param::VerbatimCount, verb_idx.extent(0));
  std::vector<container::Segment> segs{{container::SegmentId::PwInnerStream, inner.data(), inner.size()}};
  if (sign_mode == transform::kBitmap) segs.push_back({container::SegmentId::PwSignBits, sb.data(), sb.size()});
  segs.push_back({container::SegmentId::VerbatimIndex, vi.data(), vi.size()});
  segs.push_back({container::SegmentId::VerbatimValue, vv.data(), vv.size()});
  auto stream = container::write(h, segs);
  timer->mark("gather+container");
  if (report) {
    report->elements = n;
    report->input_bytes = n * sizeof(T);
    report->output_bytes = stream.size();
    report->outliers = ir.outliers;
    report->radius = ir.radius;
    report->verbatim = verb_idx.extent(0) + ir.verbatim;
    report->huffman_bytes = ir.huffman_bytes;  // the inner stream's
    report->lossless_bytes = ir.lossless_bytes;
    report->lossless = ir.lossless;
    report->abs_bound = h.abs_bound;
    report->value_min = range.min;
    report->value_max = range.max;
  }
  return stream;
}

template <class ExecSpace>
template <class T>
void PwRelPipeline<ExecSpace>::decompress(const ExecSpace& space, const container::Parsed& s,
                                          Kokkos::View<T*, Mem>& out, Report* report) {
  using namespace impl;
  const container::Header& h = s.header;
  KSZ_STREAM_CHECK(h.dtype == dtype_of<T>(), "dtype mismatch");
  KSZ_STREAM_CHECK(h.mode == ErrorMode::PW_REL, "not a pwrel stream");
  KSZ_STREAM_CHECK(h.predictor == PredictorId::Lorenzo || h.predictor == PredictorId::ClassicLorenzo,
                   "pwrel stream with predictor ", to_string(h.predictor));
  const std::uint64_t n = h.dims.count();
  const double threshold = h.f64(container::Param::PwZeroThreshold);
  KSZ_STREAM_CHECK(std::isfinite(threshold), "pwrel zero threshold is not finite");
  const std::uint32_t sign_mode = h.u32(container::Param::PwSignMode);
  KSZ_STREAM_CHECK(sign_mode <= transform::kBitmap, "pwrel sign mode ", sign_mode, " unknown");
  const std::uint64_t n_verb = h.u64(container::Param::VerbatimCount);
  KSZ_STREAM_CHECK(n_verb <= n, "verbatim count exceeds the element count");

  const auto& inner_seg = s.require(container::SegmentId::PwInnerStream);
  const container::Parsed ip = container::read(inner_seg.data, inner_seg.size);
  const container::Header& ih = ip.header;
  KSZ_STREAM_CHECK(ih.dtype == DType::F64 && ih.mode == ErrorMode::ABS && ih.predictor == h.predictor &&
                       ih.dims.n == h.dims.n && ih.dims.rank == h.dims.rank,
                   "pwrel inner stream does not match its header");
  Kokkos::View<double*, Mem> yr;
  if (h.predictor == PredictorId::Lorenzo) {
    LorenzoPipeline<ExecSpace>::template decompress<double>(space, ip, yr, report);
  } else {
    Kokkos::View<double*, Kokkos::HostSpace> yh(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::pwrel::yh")), n);
    cpu_baseline::classic_decompress<double>(ip, yh.data(), cpu_baseline::resolve_threads(0), report);
    if constexpr (host_accessible<Mem>()) {
      yr = yh;
    } else {
      yr = Kokkos::View<double*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::pwrel::yr")), n);
      Kokkos::deep_copy(space, yr, yh);
    }
  }
  StageTimer<ExecSpace> timer(space, report);
  Kokkos::View<std::uint8_t*, Mem> bits("ksz::pwrel::signs", 0);
  if (sign_mode == transform::kBitmap)
    bits = to_device<std::uint8_t>(space, s.require(container::SegmentId::PwSignBits), (n + 7) / 8, "sign bitmap");
  auto vi = unpack_indices(space, s.require(container::SegmentId::VerbatimIndex), n_verb, n, "verbatim");
  auto vv = to_device<T>(space, s.require(container::SegmentId::VerbatimValue), n_verb, "verbatim values");
  out = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::output")), n);
  transform::inverse<ExecSpace, T>(space, yr, sign_mode, bits, threshold, out);
  outliers::scatter<ExecSpace, T>(space, vi, vv, out);
  timer.mark("inverse transform");
  impl::report_decoded<T>(report, h, n, n_verb);
}

#define KSZ_INSTANTIATE_PWREL(Space)                                                                         \
  template struct PwRelPipeline<Space>;                                                                      \
  template Bytes PwRelPipeline<Space>::compress<float>(                                                      \
      const Space&, Kokkos::View<const float*, Space::memory_space>, const Dims&, const Options&, Report*);  \
  template Bytes PwRelPipeline<Space>::compress<double>(                                                     \
      const Space&, Kokkos::View<const double*, Space::memory_space>, const Dims&, const Options&, Report*); \
  template void PwRelPipeline<Space>::decompress<float>(const Space&, const container::Parsed&,             \
                                                        Kokkos::View<float*, Space::memory_space>&, Report*); \
  template void PwRelPipeline<Space>::decompress<double>(const Space&, const container::Parsed&,            \
                                                         Kokkos::View<double*, Space::memory_space>&, Report*);
KSZ_FOR_EACH_EXEC_SPACE(KSZ_INSTANTIATE_PWREL)
#undef KSZ_INSTANTIATE_PWREL

}  // namespace ksz::pipeline
