#include "src/api/ksz.hpp"

#include <chrono>
#include <cmath>
#include <cstring>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/encode/huffman/huffman.hpp"
#include "src/api/internal.hpp"
#include "src/container/container.hpp"
#include "src/container/frames.hpp"
#include "src/core/host_memory.hpp"
#include "src/cpu_baseline/classic_pipeline.hpp"
#include "src/pipeline/interp_pipeline.hpp"
#include "src/pipeline/lorenzo_pipeline.hpp"
#include "src/pipeline/pwrel_pipeline.hpp"
#include "src/pipeline/szx_pipeline.hpp"

#ifndef KSZ_GIT_REV
#define KSZ_GIT_REV "unknown"
#endif

namespace ksz {
namespace {

using Clock = std::chrono::steady_clock;

template <class T, class ExecSpace>
Bytes compress_on(const ExecSpace& space, const void* data, const Dims& dims, const Options& opt, Report* report) {
  using Mem = typename ExecSpace::memory_space;
  const std::uint64_t n = dims.count();
  Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(
      static_cast<const T*>(data), n);
  if (report) report->stages.push_back({"copy to device", 0});
  const auto t0 = Clock::now();
  Kokkos::View<const T*, Mem> in;
  if constexpr (std::is_same_v<Mem, Kokkos::HostSpace>) {
    in = host;
  } else {
    Kokkos::View<T*, Mem> dev(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ksz::input"), n);
    if constexpr (cuda_spec::kBulkCopyMem<Mem>) {
#if defined(KSZ_HAVE_CUDA)
      cuda_spec::copy_bytes_to_device(space, dev.data(), data, n * sizeof(T));  // pinned chunks
#endif
    } else {
      Kokkos::deep_copy(space, dev, host);
      space.fence();
    }
    in = dev;
  }
  if (report) report->stages.back().seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (opt.mode == ErrorMode::PW_REL) {
    Options o = opt;
    if (o.predictor == PredictorId::Auto) o.predictor = PredictorId::Lorenzo;  // PW_REL predicts with Lorenzo
    if (report) report->predictor = o.predictor;
    return pipeline::PwRelPipeline<ExecSpace>::template compress<T>(space, in, dims, o, report);
  }
  if (report) report->predictor = opt.predictor;
  switch (opt.predictor) {
    case PredictorId::Auto: {
      // Both predictors on the same resident data; the smaller stream is kept
      // (SZ3 picks between them from samples; this is exact, at the price of
      // running both). The report holds both runs' stages, prefixed.
      Options o = opt;
      Report rl, ri;
      o.predictor = PredictorId::Lorenzo;
      auto sl = pipeline::LorenzoPipeline<ExecSpace>::template compress<T>(space, in, dims, o, report ? &rl : nullptr);
      o.predictor = PredictorId::Interp;
      auto si = pipeline::InterpPipeline<ExecSpace>::template compress<T>(space, in, dims, o, report ? &ri : nullptr);
      const bool interp = si.size() < sl.size();
      if (report) {
        Report chosen = interp ? ri : rl;
        chosen.stages = report->stages;
        for (const auto& st : rl.stages) chosen.stages.push_back({"lorenzo: " + st.name, st.seconds});
        for (const auto& st : ri.stages) chosen.stages.push_back({"interp: " + st.name, st.seconds});
        chosen.backend = report->backend;
        chosen.predictor = interp ? PredictorId::Interp : PredictorId::Lorenzo;
        chosen.auto_lorenzo_bytes = sl.size();
        chosen.auto_interp_bytes = si.size();
        *report = chosen;
      }
      return interp ? si : sl;
    }
    case PredictorId::Lorenzo:
      return pipeline::LorenzoPipeline<ExecSpace>::template compress<T>(space, in, dims, opt, report);
    case PredictorId::Interp:
      return pipeline::InterpPipeline<ExecSpace>::template compress<T>(space, in, dims, opt, report);
    case PredictorId::SZx:
      return pipeline::SzxPipeline<ExecSpace>::template compress<T>(space, in, dims, opt, report);
    default: break;
  }
  throw InvalidInput(impl::concat("predictor '", to_string(opt.predictor), "' is not available"));
}

template <class T, class ExecSpace>
void decompress_on(const ExecSpace& space, const container::Parsed& parsed, Field& field, Report* report) {
  using Mem = typename ExecSpace::memory_space;
  Kokkos::View<T*, Mem> out;
  // PW_REL wraps a predictor's stream of the log field.
  const bool pwrel = parsed.header.mode == ErrorMode::PW_REL;
  if (pwrel) pipeline::PwRelPipeline<ExecSpace>::template decompress<T>(space, parsed, out, report);
  if (!pwrel) switch (parsed.header.predictor) {
    case PredictorId::Lorenzo:
      pipeline::LorenzoPipeline<ExecSpace>::template decompress<T>(space, parsed, out, report);
      break;
    case PredictorId::Interp:
      pipeline::InterpPipeline<ExecSpace>::template decompress<T>(space, parsed, out, report);
      break;
    case PredictorId::SZx:
      pipeline::SzxPipeline<ExecSpace>::template decompress<T>(space, parsed, out, report);
      break;
    default:
      throw CorruptStream(impl::concat("corrupt stream: predictor '", to_string(parsed.header.predictor),
                                       "' is not supported by this ksz"));
  }
  const auto t0 = Clock::now();
  // Fresh memory from the device: the copy's eight threads fault its pages
  // in as they write them (perf/probe/gather_host.cu: 28 against 128 ms for
  // 512 MiB, which a zeroed vector and the driver's copy took).
  resize_huge(field.bytes, out.extent(0) * sizeof(T), !cuda_spec::kBulkCopyMem<Mem>);
  if constexpr (cuda_spec::kBulkCopyMem<Mem>) {
#if defined(KSZ_HAVE_CUDA)
    cuda_spec::copy_bytes_to_host(space, field.bytes.data(), out.data(), field.bytes.size());  // after the decode
#endif
  } else {
    Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(
        reinterpret_cast<T*>(field.bytes.data()), out.extent(0));
    Kokkos::deep_copy(host, out);
  }
  if (report)
    report->stages.push_back({"copy to host", std::chrono::duration<double>(Clock::now() - t0).count()});
}

bool is_classic(const Options& opt) { return opt.classic || opt.predictor == PredictorId::ClassicLorenzo; }

// The classic (ParaSZ) pipeline is a CPU pipeline: it runs on the host
// whatever the backend (its threads are its own, see cpu_baseline/).
template <class T>
Bytes compress_classic(const void* data, const Dims& dims, const Options& opt, Report* report) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  Options o = opt;
  o.predictor = PredictorId::ClassicLorenzo;
  o.classic = true;
  if (opt.mode == ErrorMode::PW_REL) {
    Kokkos::View<const T*, Kokkos::HostSpace> in(static_cast<const T*>(data), dims.count());
    return pipeline::PwRelPipeline<Host>::template compress<T>(Host(), in, dims, o, report);
  }
  return cpu_baseline::classic_compress<T>(static_cast<const T*>(data), dims, o, report);
}

template <class T>
void decompress_classic(const container::Parsed& parsed, Field& field, Report* report) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  const std::uint64_t n = parsed.header.dims.count();
  resize_huge(field.bytes, n * sizeof(T));
  T* out = reinterpret_cast<T*>(field.bytes.data());
  if (parsed.header.mode == ErrorMode::PW_REL) {
    Kokkos::View<T*, Kokkos::HostSpace> v;
    pipeline::PwRelPipeline<Host>::template decompress<T>(Host(), parsed, v, report);
    std::memcpy(out, v.data(), n * sizeof(T));
  } else {
    cpu_baseline::classic_decompress<T>(parsed, out, cpu_baseline::resolve_threads(0), report);
  }
}

Backend host_backend() {
#ifdef KOKKOS_ENABLE_OPENMP
  if (std::is_same_v<Kokkos::DefaultHostExecutionSpace, Kokkos::OpenMP>) return Backend::OpenMP;
#endif
  return Backend::Serial;
}

double stage_sum(const Report& r) {
  double s = 0;
  for (const auto& st : r.stages)
    if (st.name != "copy to device" && st.name != "copy to host") s += st.seconds;
  return s;
}

}  // namespace

void validate(DType dtype, const Dims& dims, const Options& opt) {
  KSZ_EXPECTS(dtype == DType::F32 || dtype == DType::F64, "unknown dtype");
  KSZ_EXPECTS(dims.rank >= 1 && dims.rank <= 4, "rank must be 1 to 4, got ", dims.rank);
  std::uint64_t count = 1;
  for (int i = 0; i < 4; ++i) {
    KSZ_EXPECTS(dims.n[i] >= 1, "every extent must be at least 1 (extent ", i, " is ", dims.n[i], ")");
    KSZ_EXPECTS(i < dims.rank || dims.n[i] == 1, "extents beyond the rank must be 1");
    KSZ_EXPECTS(count <= container::kMaxElements / dims.n[i], "more than 2^40 elements");
    count *= dims.n[i];
  }
  KSZ_EXPECTS(std::isfinite(opt.bound) && opt.bound > 0, "error bound must be a positive number, got ",
              opt.bound);
  KSZ_EXPECTS(opt.mode == ErrorMode::ABS || opt.mode == ErrorMode::REL || opt.mode == ErrorMode::PW_REL,
              "error-bound mode '", to_string(opt.mode), "' is not available in this version (abs, rel, pwrel)");
  KSZ_EXPECTS(opt.mode != ErrorMode::PW_REL || opt.bound < 1, "a point-wise relative bound must be below 1, got ",
              opt.bound);
  KSZ_EXPECTS(opt.predictor == PredictorId::Lorenzo || opt.predictor == PredictorId::ClassicLorenzo ||
                  opt.predictor == PredictorId::Interp || opt.predictor == PredictorId::SZx ||
                  opt.predictor == PredictorId::Auto,
              "predictor '", to_string(opt.predictor), "' is not available in this version (lorenzo, interp, szx, auto)");
  KSZ_EXPECTS(!opt.classic || opt.predictor == PredictorId::Lorenzo || opt.predictor == PredictorId::ClassicLorenzo,
              "the classic pipeline predicts with Lorenzo only");
  KSZ_EXPECTS(opt.mode != ErrorMode::PW_REL || opt.predictor == PredictorId::Lorenzo ||
                  opt.predictor == PredictorId::ClassicLorenzo || opt.predictor == PredictorId::Auto,
              "pwrel is available with the lorenzo predictor only (or --pipeline classic)");
  KSZ_EXPECTS(opt.predictor != PredictorId::SZx || (opt.szx_block >= 1 && opt.szx_block <= 4096),
              "SZx block size must be in [1, 4096], got ", opt.szx_block);
  KSZ_EXPECTS(opt.check_width >= 1, "check width must be at least 1");
  KSZ_EXPECTS(opt.lossless == LosslessId::None || opt.lossless == LosslessId::ZeroBytes ||
                  opt.lossless == LosslessId::ZeroWords,
              "unknown lossless pass id ", int(opt.lossless), " (none, zbe, zwe)");
  KSZ_EXPECTS(opt.radius <= 32768, "radius must be 0 (automatic) or in [1, 32768], got ", opt.radius);
  KSZ_EXPECTS(opt.huffman_chunk >= 1 && opt.huffman_chunk <= (1u << 24),
              "Huffman chunk must be in [1, 2^24], got ", opt.huffman_chunk);
  KSZ_EXPECTS(opt.huffman_subchunk <= huffman::kMaxSubchunk, "Huffman sub-chunk must be 0 (none) or in [1, ",
              huffman::kMaxSubchunk, "], got ", opt.huffman_subchunk);
  KSZ_EXPECTS(opt.huffman_subchunk == 0 ||
                  huffman::Runs(opt.huffman_chunk, opt.huffman_chunk, opt.huffman_subchunk).per_chunk <=
                      huffman::kMaxRuns,
              "Huffman sub-chunk ", opt.huffman_subchunk, " cuts a chunk of ", opt.huffman_chunk, " into more than ",
              huffman::kMaxRuns, " runs");
}

Bytes compress(const void* data, DType dtype, const Dims& dims, const Options& opt, Report* report) {
  validate(dtype, dims, opt);
  KSZ_EXPECTS(data != nullptr, "null input buffer");
  const auto t0 = Clock::now();
  if (report) {
    *report = Report{};
    report->backend = resolve_backend(opt.backend);
  }
  Bytes out;
  if (is_classic(opt)) {
    if (report) report->backend = host_backend();
    out = dtype == DType::F64 ? compress_classic<double>(data, dims, opt, report)
                              : compress_classic<float>(data, dims, opt, report);
  } else {
    out = with_backend(opt.backend, [&](auto space) {
      using Space = decltype(space);
      return dtype == DType::F64 ? compress_on<double, Space>(space, data, dims, opt, report)
                                 : compress_on<float, Space>(space, data, dims, opt, report);
    });
  }
  if (report) {
    report->total_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    report->device_seconds = stage_sum(*report);
  }
  return out;
}

namespace impl {

Field decompress_parsed(const container::Parsed& parsed, std::size_t size, Backend backend, Report* report) {
  const auto t0 = Clock::now();
  if (report) {
    *report = Report{};
    report->backend = resolve_backend(backend);
  }
  Field field;
  field.dtype = parsed.header.dtype;
  field.dims = parsed.header.dims;
  if (parsed.header.predictor == PredictorId::ClassicLorenzo) {
    if (report) report->backend = host_backend();
    if (field.dtype == DType::F64)
      decompress_classic<double>(parsed, field, report);
    else
      decompress_classic<float>(parsed, field, report);
  } else {
    with_backend(backend, [&](auto space) {
      using Space = decltype(space);
      if (field.dtype == DType::F64)
        decompress_on<double, Space>(space, parsed, field, report);
      else
        decompress_on<float, Space>(space, parsed, field, report);
    });
  }
  if (report) {
    report->output_bytes = size;
    report->total_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    report->device_seconds = stage_sum(*report);
  }
  return field;
}

}  // namespace impl

Field decompress(const std::uint8_t* stream, std::size_t size, Backend backend, Report* report) {
  if (container::is_framed(stream, size)) return impl::decompress_framed(stream, size, backend, report);
  const auto t0 = Clock::now();
  const container::Parsed parsed = container::read(stream, size);
  const double parse = std::chrono::duration<double>(Clock::now() - t0).count();
  Field field = impl::decompress_parsed(parsed, size, backend, report);
  if (report) report->total_seconds += parse;
  return field;
}

StreamInfo inspect(const std::uint8_t* stream, std::size_t size) {
  if (container::is_framed(stream, size)) return impl::inspect_framed(stream, size);
  return impl::info_of(container::read(stream, size));
}

StreamInfo impl::info_of(const container::Parsed& p) {
  const auto& h = p.header;
  StreamInfo i{h.dtype, h.dims,      h.mode, h.predictor, h.user_bound, h.abs_bound,
               h.value_min, h.value_max, 0, 0, h.lossless, 0, 0, 0, {}};
  auto huffman_params = [&i](const container::Header& hh) {
    if (hh.params.count(std::uint16_t(container::Param::HuffmanChunk)))
      i.huffman_chunk = hh.u32(container::Param::HuffmanChunk);
    if (hh.params.count(std::uint16_t(container::Param::HuffmanSubchunk)))
      i.huffman_subchunk = hh.u32(container::Param::HuffmanSubchunk);
  };
  huffman_params(h);
  if (const container::Segment* inner = p.find(container::SegmentId::PwInnerStream)) {
    const container::Parsed ip = container::read(inner->data, inner->size);
    i.lossless = ip.header.lossless;
    huffman_params(ip.header);
  }
  if (h.params.count(std::uint16_t(container::Param::OutlierCount)))
    i.outliers = h.u64(container::Param::OutlierCount);
  if (h.params.count(std::uint16_t(container::Param::VerbatimCount)))
    i.verbatim = h.u64(container::Param::VerbatimCount);
  if (h.params.count(std::uint16_t(container::Param::Radius))) i.radius = h.u32(container::Param::Radius);
  if (h.predictor == PredictorId::Interp && h.params.count(std::uint16_t(container::Param::InterpNatural)) &&
      h.params.count(std::uint16_t(container::Param::InterpOrder))) {
    static const char* const kKind[] = {"cubic not-a-knot", "cubic natural", "linear"};
    static const char* const kAxis[] = {"x", "y", "z"};
    const auto kind = h.u32s(container::Param::InterpNatural, 3);
    const auto order = h.u32s(container::Param::InterpOrder, 3);
    i.detail = "splines";
    for (int d = 0; d < 3; ++d)
      i.detail += std::string(d ? ", " : " ") + kAxis[d] + " " + (kind[d] <= 2 ? kKind[kind[d]] : "unknown");
    i.detail += "; pass order";
    for (int d = 0; d < 3; ++d) i.detail += std::string(" ") + (order[d] < 3 ? kAxis[order[d]] : "?");
  }
  return i;
}

std::string version_string() {
  std::string s = KSZ_VERSION_STRING;
  s += " (git " KSZ_GIT_REV ", Kokkos ";
  s += std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
       std::to_string(KOKKOS_VERSION % 100);
  s += ", backends:";
  for (Backend b : available_backends()) s += std::string(" ") + to_string(b);
  s += ")";
  return s;
}

}  // namespace ksz
