// Template bodies of LorenzoPipeline; included by the instantiation unit only.
#pragma once
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/encode/huffman/codebook.hpp"
#include "portable/encode/huffman/huffman.hpp"
#include "portable/histogram/histogram.hpp"
#include "portable/predict/lorenzo/lorenzo.hpp"
#include "portable/predict/lorenzo/lorenzo_fused.hpp"
#include "portable/quantize/byte_codes.hpp"
#include "portable/quantize/outliers.hpp"
#include "portable/quantize/prequant.hpp"
#include "src/pipeline/lorenzo_pipeline.hpp"
#include "src/pipeline/pipeline_common.hpp"
#include "src/pipeline/stage_timer.hpp"
#include "src/pipeline/workspace.hpp"

namespace ksz::pipeline {
namespace impl {

template <class Mem>
struct NonZeroCodeAt {  // a functor: see the note on parallel_reduce in lorenzo.hpp
  Kokkos::View<const std::uint16_t*, Mem> codes;
  Kokkos::View<const std::uint64_t*, Mem> idx;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t j, std::uint64_t& acc) const {
    acc += codes(idx(j)) == 0 ? 0 : 1;
  }
};

inline lorenzo::Geometry geometry(const Dims& dims, const std::uint32_t c[3]) {
  const Shape3 s = effective_shape(dims);
  lorenzo::Geometry g;
  g.n0 = s.n[0];
  g.n1 = s.n[1];
  g.n2 = s.n[2];
  g.c0 = c[0];
  g.c1 = c[1];
  g.c2 = c[2];
  return g;
}

}  // namespace impl

template <class ExecSpace>
template <class T>
Bytes LorenzoPipeline<ExecSpace>::compress(const ExecSpace& space, Kokkos::View<const T*, Mem> in, const Dims& dims,
                                           const Options& opt, Report* report) {
  using namespace impl;
  const std::uint64_t n = dims.count();
  KSZ_EXPECTS(in.extent(0) == n, "input has ", in.extent(0), " elements, dims say ", n);
  StageTimer<ExecSpace> timer(space, report);

  // Bound resolution needs the value range (REL), which the header keeps anyway.
  const Range range = value_range<ExecSpace, T>(space, in);
  double abs_bound = opt.bound;
  if (opt.mode == ErrorMode::REL) abs_bound = opt.bound * (range.max - range.min);
  const quantize::QuantParams qp = quant_params(abs_bound, range);
  timer.mark("value range");
  warm_codebook_thread<Mem>(n);  // through the fused pass

  std::uint32_t chunk[3];
  const Shape3 shape = effective_shape(dims);
  lorenzo::default_chunk(shape.rank, chunk);
  const lorenzo::Geometry g = geometry(dims, chunk);

  const std::uint32_t radius = fixed_radius(opt);
  const std::uint32_t nsym = 2 * radius;
  typename Workspace<Mem>::Lease ws;
  // The codes: 16 bits each, or on the CUDA 3D path one byte each with the
  // rest listed (quantize/byte_codes.hpp: half the largest buffer), which the
  // Huffman encoder reads as they are.
  Kokkos::View<std::uint16_t*, Mem> codes;
  const auto wide_codes = [&] {
    codes = ws.template get<std::uint16_t>(Workspace<Mem>::kCodes, n, "ksz::codes");
    return codes;
  };
  Kokkos::View<std::uint8_t*, Mem> bytes;
  Kokkos::View<std::uint64_t*, Mem> escapes;  // the bytes' listed codes
  // Every path below zeroes it first.
  const Kokkos::View<std::uint64_t*, Mem> hist = ws.template get<std::uint64_t>(Workspace<Mem>::kHistogram, nsym, "ksz::hist");
  Kokkos::View<std::int32_t*, Mem> q;  // stays empty on the fused path
  std::uint64_t n_verbatim = 0;
  bool fused = false;
  Kokkos::View<const std::uint64_t*, Mem> out_idx, verb_idx;
  bool have_lists = false;  // the fused kernel already listed outliers and verbatim elements
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> hist_h;  // filled by the fused kernel's call, or copied below
  // The Huffman codebook is built on a thread of its own from the moment the
  // histogram is on the host, while this thread launches the list sorts and
  // the outlier kernels.
  std::future<huffman::HostCodebook> book_task;
  const auto start_codebook = [&book_task, nsym](const std::uint64_t* h) { book_task = codebook_async<Mem>(h, nsym); };
#if defined(KSZ_HAVE_CUDA)
  // At function scope: without a workspace lease they own the lists' memory.
  cuda_spec::FusedLists byte_lists, wide_lists;
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    const cuda_spec::LorenzoShape cs{g.n0, g.n1, g.n2, g.c0, g.c1, g.c2};
    const cuda_spec::FusedLists* lists = &byte_lists;
    const bool fast3d = cuda_spec::lorenzo_fused3d_takes(cs, radius);
    if (fast3d && radius >= quantize::kByteCodesMinRadius && !cuda_spec::wide_codes()) {
      const auto b = ws.template get<std::uint8_t>(Workspace<Mem>::kCodes, n, "ksz::byte_codes");
      fused = cuda_spec::lorenzo_fused_compress3d<T, std::uint8_t>(
          space, in.data(), cs, qp, radius, b.data(), hist.data(), byte_lists, ws,
          [&] { if (byte_lists.valid) start_codebook(byte_lists.hist_host.data()); });
      if (fused && byte_lists.valid) {
        bytes = b;
        escapes = byte_lists.escape_idx;
      } else {
        fused = false;  // more listed elements than the byte path holds: 16-bit codes
      }
    }
    if (fast3d && !fused) {
      lists = &wide_lists;
      fused = cuda_spec::lorenzo_fused_compress3d<T, std::uint16_t>(
          space, in.data(), cs, qp, radius, wide_codes().data(), hist.data(), wide_lists, ws,
          [&] { start_codebook(wide_lists.hist_host.data()); });
    }
    if (fused) {
      n_verbatim = lists->n_verbatim;
      hist_h = lists->hist_host;
      if (lists->valid) {
        out_idx = lists->outlier_idx;  // byte codes: found among the escapes below
        verb_idx = lists->verbatim_idx;
        have_lists = true;
      }
    } else {
      fused = cuda_spec::lorenzo_fused_compress<T>(space, in.data(), cs, qp, radius, wide_codes().data(),
                                                   hist.data(), n_verbatim);
    }
  }
#endif
  if (!fused) wide_codes();
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    // GPUs without the specialization: the portable fused kernel (host
    // backends keep their row-wise passes below).
    lorenzo::FusedResult<Mem> res;
    if (!fused && lorenzo::fused_compress<ExecSpace, T>(space, in, g, qp, radius, codes, hist, ws, res)) {
      fused = true;
      hist_h = res.hist;
      out_idx = res.outliers;
      verb_idx = res.verbatim;
      n_verbatim = verb_idx.extent(0);
      have_lists = true;
    }
  }
  if (fused) {
    timer.mark("prequant+predict+histogram (fused)");
  } else {
    q = Kokkos::View<std::int32_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ksz::q"), n);
    n_verbatim = lorenzo::prequantize<ExecSpace, T>(space, in, qp, q);
    timer.mark("prequantize");
    lorenzo::predict_quantize<ExecSpace>(space, g, q, radius, codes);
    timer.mark("predict+quantize");
    histogram::histogram<ExecSpace>(space, codes, hist, radius);
  }
  if (hist_h.extent(0) != nsym) {
    hist_h = Kokkos::View<std::uint64_t*, Kokkos::HostSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::hist_host")), nsym);
    Kokkos::deep_copy(space, hist_h, hist);
    space.fence();
    timer.mark("histogram");
  }
  if (!book_task.valid()) start_codebook(hist_h.data());
  // Outlier and verbatim lists and values while the codebook is built: on
  // GPUs their kernels run meanwhile (no fence between them), hence one
  // stage, "outliers+codebook". Lists not made by a fused kernel come from a
  // prefix-scan compaction (increasing order on every backend); their sizes
  // are already known, so empty lists cost nothing.
  const std::uint64_t n_outliers = hist_h(0);
  const lorenzo::Geometry geo = g;
  const lorenzo::PrequantOf<Kokkos::View<const T*, Mem>> qf{in, qp};
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    if (n > 0 && bytes.extent(0) == n) {
      // Byte codes: the elements of byte 0 get their codes beside their
      // indices (0 where |residual| >= radius); the outliers are those of code 0.
      const Kokkos::View<std::uint64_t*, Mem> esc = escapes;
      Kokkos::parallel_for(
          "ksz::escaped_codes", Kokkos::RangePolicy<ExecSpace>(space, 0, esc.extent(0)),
          KOKKOS_LAMBDA(const std::uint64_t j) {
            const std::uint64_t i = esc(j);
            const std::int32_t r = lorenzo::residual(geo, qf, i), rad = std::int32_t(radius);
            esc(j) = i << 16 | (r > -rad && r < rad ? static_cast<std::uint32_t>(r + rad) : 0u);
          });
      const auto oi = ws.template get<std::uint64_t>(Workspace<Mem>::kOutliersAlt, n_outliers, "ksz::outlier_index");
      KSZ_EXPECTS(cuda_spec::byte_code_outliers(space, esc.data(), esc.extent(0), oi.data(), n_outliers, ws),
                  "internal: byte codes without their outlier selection");
      out_idx = oi;
    }
  }
#endif
  KSZ_EXPECTS(!have_lists || out_idx.extent(0) == n_outliers, "internal: outlier list and histogram disagree");
  if (n_outliers && !have_lists)
    out_idx = outliers::compact_indices(
        space, n, KOKKOS_LAMBDA(const std::uint64_t i) { return codes(i) == 0; }, "ksz::outlier_index",
        n_outliers);
  if (n_verbatim && !have_lists) {
    // Pre-quantization leaves q = 0 where it fails: elsewhere no need to redo it.
    const Kokkos::View<const std::int32_t*, Mem> qz = q;
    const bool have_q = q.extent(0) == n;
    verb_idx = outliers::compact_indices(
        space, n,
        KOKKOS_LAMBDA(const std::uint64_t i) {
          if (have_q && qz(i) != 0) return false;
          std::int32_t v;
          return !quantize::prequantize<T>(in(i), qp, v);
        },
        "ksz::verbatim_index", n_verbatim);
  }
  const Kokkos::View<const std::int32_t*, Mem> qc = q;
  const Kokkos::View<std::int32_t*, Mem> out_val =
      ws.template get<std::int32_t>(Workspace<Mem>::kOutlierValues, out_idx.extent(0), "ksz::outlier_value");
  if (fused) {  // no q array: pre-quantize the few neighbours again
    Kokkos::parallel_for(
        "ksz::outlier_values", Kokkos::RangePolicy<ExecSpace>(space, 0, out_idx.extent(0)),
        KOKKOS_LAMBDA(const std::uint64_t j) { out_val(j) = lorenzo::residual(geo, qf, out_idx(j)); });
  } else {
    Kokkos::parallel_for(
        "ksz::outlier_values", Kokkos::RangePolicy<ExecSpace>(space, 0, out_idx.extent(0)),
        KOKKOS_LAMBDA(const std::uint64_t j) { out_val(j) = lorenzo::residual(geo, qc, out_idx(j)); });
  }
  const Kokkos::View<T*, Mem> verb_val =
      ws.template get<T>(Workspace<Mem>::kVerbatimValues, verb_idx.extent(0), "ksz::verbatim_value");
  Kokkos::parallel_for(
      "ksz::verbatim_values", Kokkos::RangePolicy<ExecSpace>(space, 0, verb_idx.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t j) { verb_val(j) = in(verb_idx(j)); });
  const huffman::HostCodebook built = codebook_result<Mem>(book_task);
  const huffman::Codebook& book = built.book;
  const huffman::DeviceCodebook<ExecSpace> dbook(
      built.tables, space,
      ws.template get<std::uint32_t>(Workspace<Mem>::kHuffTables,
                                     huffman::DeviceCodebook<ExecSpace>::room_words(nsym), "ksz::huffman::tables"));
  timer.mark("outliers+codebook");

  const std::uint64_t bound = huffman::words_bound(hist_h.data(), book, n, opt.huffman_chunk);
  const auto enc = bytes.extent(0) == n && n > 0
                       ? huffman::encode<ExecSpace>(space, quantize::ByteCodes<Mem>{bytes, escapes, radius}, dbook,
                                                    opt.huffman_chunk, &ws, opt.huffman_subchunk, bound)
                       : huffman::encode<ExecSpace>(space, codes, dbook, opt.huffman_chunk, &ws,
                                                    opt.huffman_subchunk, bound);
  timer.mark("huffman encode");

  // Segments to the host, then the container.
  LosslessId pass = LosslessId::None;
  const auto words = words_segment(space, enc.words, enc.n_words, n, opt.lossless, pass, timer, report, &ws);
  std::vector<std::uint8_t> lengths(book.lengths.begin(), book.lengths.end());
  const auto offsets = to_host_bytes(enc.chunk_offsets, enc.chunk_offsets.extent(0));
  auto run_bits = to_host_bytes(enc.run_bits, enc.run_bits.extent(0));
  const auto oi = pack_indices(out_idx, n);
  const auto ov = to_host_bytes(out_val, out_val.extent(0));
  const auto vi = pack_indices(verb_idx, n);
  const auto vv = to_host_bytes(verb_val, verb_val.extent(0));

  container::Header h;
  h.dtype = dtype_of<T>();
  h.dims = dims;
  h.mode = opt.mode;
  h.predictor = PredictorId::Lorenzo;
  h.codec = CodecId::Huffman;
  h.lossless = pass;
  h.user_bound = opt.bound;
  h.abs_bound = abs_bound;
  h.value_min = range.min;
  h.value_max = range.max;
  h.set_f64(Param::QuantStep, qp.step);
  h.set_u32(Param::Radius, radius);
  h.set_u32s(Param::LorenzoChunk, {chunk[0], chunk[1], chunk[2]});
  h.set_u32(Param::HuffmanChunk, opt.huffman_chunk);
  h.set_u64(Param::OutlierCount, out_idx.extent(0));
  h.set_u64(Param::VerbatimCount, verb_idx.extent(0));
  std::vector<container::Segment> segments = {{SegmentId::HuffmanLengths, lengths.data(), lengths.size()},
                                              {SegmentId::HuffmanChunkOffsets, offsets.data(), offsets.size()},
                                              words.segment(SegmentId::HuffmanWords),
                                              {SegmentId::OutlierIndex, oi.data(), oi.size()},
                                              {SegmentId::OutlierValue, ov.data(), ov.size()},
                                              {SegmentId::VerbatimIndex, vi.data(), vi.size()},
                                              {SegmentId::VerbatimValue, vv.data(), vv.size()}};
  add_run_bits(h, segments, opt.huffman_subchunk, run_bits, n, opt.huffman_chunk);
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
void LorenzoPipeline<ExecSpace>::decompress(const ExecSpace& space, const container::Parsed& s,
                                            Kokkos::View<T*, Mem>& out, Report* report) {
  using namespace impl;
  const container::Header& h = s.header;
  KSZ_STREAM_CHECK(h.dtype == dtype_of<T>(), "dtype mismatch");
  KSZ_STREAM_CHECK(h.predictor == PredictorId::Lorenzo && h.codec == CodecId::Huffman,
                   "not a Lorenzo+Huffman stream");
  const std::uint64_t n = h.dims.count();
  const std::uint32_t radius = h.u32(Param::Radius);
  KSZ_STREAM_CHECK(radius >= 1 && radius <= 32768, "radius ", radius, " out of range");
  const auto chunk = h.u32s(Param::LorenzoChunk, 3);
  for (auto c : chunk) KSZ_STREAM_CHECK(c >= 1 && c <= 8192, "chunk extent ", c, " out of range");
  // A chunk is staged in scratch memory: at most 8192 elements (32 KiB).
  KSZ_STREAM_CHECK(std::uint64_t(chunk[0]) * chunk[1] * chunk[2] <= 8192, "chunk of more than 8192 elements");
  const std::uint32_t hchunk = h.u32(Param::HuffmanChunk);
  KSZ_STREAM_CHECK(hchunk >= 1 && hchunk <= (1u << 24), "Huffman chunk ", hchunk, " out of range");
  const double step = h.f64(Param::QuantStep);
  KSZ_STREAM_CHECK(std::isfinite(step) && step > 0, "quantization step is not a positive number");
  const std::uint64_t n_out = h.u64(Param::OutlierCount), n_verb = h.u64(Param::VerbatimCount);
  KSZ_STREAM_CHECK(n_out <= n && n_verb <= n, "outlier counts exceed the element count");

  const std::uint64_t n_words = huffman_word_count(s);  // after the lossless pass, if any
  // Every symbol takes at least one bit: a header claiming more elements than
  // the stream has bits is corrupt (and would make us allocate absurd memory).
  KSZ_STREAM_CHECK(n <= n_words * 32, "header claims ", n, " elements but the stream holds at most ",
                   n_words * 32);
  const std::uint64_t n_chunks = (n + hchunk - 1) / hchunk;

  StageTimer<ExecSpace> timer(space, report);
  auto words = huffman_words<ExecSpace>(space, s, n_words, timer);
  const auto& len_seg = s.require(SegmentId::HuffmanLengths);
  KSZ_STREAM_CHECK(len_seg.size == 2ull * radius, "codebook has ", len_seg.size, " lengths, expected ",
                   2ull * radius);
  const huffman::Codebook book = huffman::codebook_from_lengths(len_seg.data, len_seg.size);
  const huffman::DeviceCodebook<ExecSpace> dbook(book);
  auto offsets =
      to_device<std::uint64_t>(space, s.require(SegmentId::HuffmanChunkOffsets), n_chunks + 1, "chunk offsets");
  const auto runs = run_bits_of(space, s, n, hchunk);
  auto oi = unpack_indices(space, s.require(SegmentId::OutlierIndex), n_out, n, "outlier");
  auto ov = to_device<std::int32_t>(space, s.require(SegmentId::OutlierValue), n_out, "outlier values");
  auto vi = unpack_indices(space, s.require(SegmentId::VerbatimIndex), n_verb, n, "verbatim");
  auto vv = to_device<T>(space, s.require(SegmentId::VerbatimValue), n_verb, "verbatim values");
  timer.mark("copy to device");

  typename Workspace<Mem>::Lease ws;
  ensure_output(out, n);
  const std::uint32_t c3[3] = {chunk[0], chunk[1], chunk[2]};
  const lorenzo::Geometry geo = geometry(h.dims, c3);
  // The codes live in the output's last bytes until the inverse overwrites
  // them, slab by slab (lorenzo::in_place_plan): no n-element code buffer,
  // only a copy of the tail's codes. An output not 16-byte aligned takes a
  // code buffer of its own.
  const bool in_place = reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0;
  const lorenzo::InPlacePlan plan = in_place ? lorenzo::in_place_plan(geo, sizeof(T)) : lorenzo::InPlacePlan{};
  const Kokkos::View<std::uint16_t*, Mem> codes =
      in_place ? Kokkos::View<std::uint16_t*, Mem>(reinterpret_cast<std::uint16_t*>(out.data()) + plan.code_offset, n)
               : ws.template get<std::uint16_t>(Workspace<Mem>::kCodes, n, "ksz::codes");
  huffman::decode<ExecSpace>(space, words, offsets, hchunk, dbook, codes, runs.first, runs.second, &ws);
  timer.mark("huffman decode");

  // GPUs look outlier residuals up in their sparse list; host backends
  // scatter them into a dense array.
  constexpr bool sparse_inverse = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  // Outlier residuals at their positions; read only where the code is 0.
  Kokkos::View<std::int32_t*, Mem> dense;
  if (!sparse_inverse) {
    dense = Kokkos::View<std::int32_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ksz::outlier_dense"), n);
    outliers::scatter<ExecSpace, std::int32_t>(space, oi, ov, dense);
  }
  std::uint64_t mismatched = 0;
  Kokkos::parallel_reduce("ksz::check_outlier_positions", Kokkos::RangePolicy<ExecSpace>(space, 0, n_out),
                          NonZeroCodeAt<Mem>{codes, oi}, mismatched);
  timer.mark("outliers");

  const std::vector<lorenzo::SlabCodes<Mem>> parts =
      in_place ? lorenzo::in_place_parts<ExecSpace>(
                     space, plan, codes,
                     ws.template get<std::uint16_t>(Workspace<Mem>::kCodes, plan.tail_codes(n), "ksz::tail_codes"))
               : std::vector<lorenzo::SlabCodes<Mem>>{{lorenzo::Slab{}, codes}};  // the whole field
  const std::uint64_t zeros =
      lorenzo::reconstruct_dequantize<ExecSpace, T>(space, geo, parts, dense, oi, ov, radius, step, out, &ws);
  // Outliers are exactly the code-0 positions: same count, every index a 0.
  KSZ_STREAM_CHECK(zeros == n_out && mismatched == 0, "outlier list does not match the coded stream");
  outliers::scatter<ExecSpace, T>(space, vi, vv, out);
  timer.mark("lorenzo inverse+dequantize");
  report_decoded<T>(report, h, n, n_verb);
  if (report) report->outliers = n_out;
}

}  // namespace ksz::pipeline
