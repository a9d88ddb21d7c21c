#include "src/cpu_baseline/classic_pipeline.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "src/pipeline/pipeline_common.hpp"
#include "src/pipeline/stage_timer.hpp"

namespace ksz::cpu_baseline {
namespace {

using container::Param;
using container::SegmentId;
using HostExec = Kokkos::DefaultHostExecutionSpace;
using quantize::add_rn;
using quantize::mul_rn;

// Spin measured faster than CondVar on every shape tried (perf/parasz, checkWidth
// sweep): a batch of 384 elements takes ~1 us, less than a futex round trip.
std::atomic<int> g_wait{int(WaitMode::Spin)};

// Row r of the pipeline: y = r % n1, z = r / n1; elements [r*n0, (r+1)*n0).
struct Grid {
  std::uint64_t n0, n1, n2;
  int rank;
  std::uint64_t rows() const { return n1 * n2; }
};

Grid grid_of(const Dims& dims) {
  const Shape3 s = effective_shape(dims);
  return {s.n[0], s.n[1], s.n[2], s.rank};
}

// The TaskDispatcher/Worker pipeline (parasz section IV). A task is a row
// (2D) or a layer (3D), of L elements in element order; fn(r, x0, x1)
// processes columns [x0, x1) of row r and may read, in the previous task,
// elements up to the same linear position (Lorenzo reads (x-1|x, y-1|y) of the
// layer below, and x-1|x of the row above). Tasks are handed out in
// increasing order through an atomic counter; a task's batch of checkWidth
// elements [j0, j1) starts when the previous task's progress reaches j1. The
// previous task is never behind any older one (each waits on its own
// predecessor), so checking it alone is enough. Layers, not rows, in 3D: a
// row-level pipeline would leave threads idle whenever n0 < threads x checkWidth.
template <class RowFn>
void run_pipeline(const Grid& g, const ClassicConfig& cfg, RowFn&& fn) {
  const bool layers = g.rank == 3;
  const std::uint64_t tasks = layers ? g.n2 : g.rows();
  const std::uint64_t len = layers ? g.n0 * g.n1 : g.n0;
  const std::uint64_t rows_per_task = layers ? g.n1 : 1;
  const unsigned nt = static_cast<unsigned>(std::min<std::uint64_t>(cfg.threads, tasks));
  if (nt <= 1) {
    for (std::uint64_t r = 0; r < g.rows(); ++r) fn(r, std::uint64_t(0), g.n0);
    return;
  }
  const std::uint64_t w = cfg.check_width;
  std::unique_ptr<std::atomic<std::uint64_t>[]> progress(new std::atomic<std::uint64_t>[tasks]);
  for (std::uint64_t r = 0; r < tasks; ++r) progress[r].store(0, std::memory_order_relaxed);
  // Condition-variable slots: tasks in flight are consecutive and at most nt;
  // a slot shared by two tasks only costs a spurious wake-up.
  const std::size_t nslots = nt + 2;
  std::vector<std::mutex> mu(nslots);
  std::vector<std::condition_variable> cv(nslots);
  const bool spin = cfg.wait == WaitMode::Spin;
  std::atomic<std::uint64_t> next{0};

  auto worker = [&]() {
    for (;;) {
      const std::uint64_t r = next.fetch_add(1, std::memory_order_relaxed);  // TaskDispatcher
      if (r >= tasks) return;
      for (std::uint64_t j0 = 0; j0 < len; j0 += w) {
        const std::uint64_t j1 = std::min(len, j0 + w);
        if (r > 0) {
          auto& prev = progress[r - 1];
          if (prev.load(std::memory_order_acquire) < j1) {
            if (spin) {
              // Spin, then yield, then nap: with more workers than free cores
              // (shared machines) a pure spin starves the thread it waits for.
              int tries = 0;
              while (prev.load(std::memory_order_acquire) < j1) {
                if (++tries > 64) std::this_thread::yield();
                if (tries > 2048) std::this_thread::sleep_for(std::chrono::microseconds(20));
              }
            } else {
              const std::size_t s = (r - 1) % nslots;
              std::unique_lock<std::mutex> lk(mu[s]);
              cv[s].wait(lk, [&] { return prev.load(std::memory_order_acquire) >= j1; });
            }
          }
        }
        for (std::uint64_t j = j0; j < j1;) {  // the batch, row segment by row segment
          const std::uint64_t x0 = j % g.n0, x1 = std::min(g.n0, x0 + (j1 - j));
          fn(r * rows_per_task + j / g.n0, x0, x1);
          j += x1 - x0;
        }
        progress[r].store(j1, std::memory_order_release);
        if (!spin) {
          const std::size_t s = r % nslots;
          { std::lock_guard<std::mutex> lk(mu[s]); }  // a waiter is either before its check or asleep
          cv[s].notify_all();
        }
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(nt - 1);
  for (unsigned t = 1; t < nt; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

// Independent per-row work split statically over threads.
template <class RowFn>
void parallel_rows(std::uint64_t rows, unsigned threads, RowFn&& fn) {
  const unsigned nt = static_cast<unsigned>(std::min<std::uint64_t>(std::max(threads, 1u), rows));
  if (nt <= 1) {
    for (std::uint64_t r = 0; r < rows; ++r) fn(r);
    return;
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nt; ++t)
    pool.emplace_back([&, t] {
      for (std::uint64_t r = rows * t / nt; r < rows * (t + 1) / nt; ++r) fn(r);
    });
  for (auto& th : pool) th.join();
}

// Lorenzo prediction from reconstructed neighbours (parasz section III), zero
// outside the field. Missing rows point at a row of zeros, so one formula
// serves 1D/2D/3D; its evaluation order is fixed (compressor == decompressor).
template <class T>
struct RowPtrs {
  T* cur;
  const T *up, *back, *ub;
};

template <class T>
RowPtrs<T> row_ptrs(const Grid& g, T* w, const T* zeros, std::uint64_t r) {
  const std::uint64_t y = r % g.n1, z = r / g.n1;
  T* cur = w + r * g.n0;
  RowPtrs<T> p;
  p.cur = cur;
  p.up = y > 0 ? cur - g.n0 : zeros;
  p.back = z > 0 ? cur - g.n0 * g.n1 : zeros;
  p.ub = (y > 0 && z > 0) ? cur - g.n0 - g.n0 * g.n1 : zeros;
  return p;
}

template <class T>
inline double predict(const RowPtrs<T>& p, std::uint64_t x) {
  const double l = x ? double(p.cur[x - 1]) : 0.0;
  const double ul = x ? double(p.up[x - 1]) : 0.0;
  const double bl = x ? double(p.back[x - 1]) : 0.0;
  const double ubl = x ? double(p.ub[x - 1]) : 0.0;
  double s = add_rn(l, double(p.up[x]));
  s = add_rn(s, -ul);
  s = add_rn(s, double(p.back[x]));
  s = add_rn(s, -bl);
  s = add_rn(s, -double(p.ub[x]));
  return add_rn(s, ubl);
}

inline bool finite(double v) { return v - v == 0; }

struct Quant {
  double step, inv_step;
  double check;  // bound used in the per-element test, a hair below the contract
  double limit;  // |v| < limit keeps |q| <= radius - 1
  std::int32_t radius;
};

Quant quant_of(double abs_bound, std::uint32_t radius) {
  Quant q;
  q.step = abs_bound > 0 ? 2 * abs_bound : 1.0;  // bound 0: only exact predictions pass
  if (!std::isfinite(q.step)) q.step = std::numeric_limits<double>::max();
  q.inv_step = 1.0 / q.step;
  q.check = abs_bound * (1 - 0x1p-50);
  q.limit = double(radius) - 1.0;
  q.radius = std::int32_t(radius);
  return q;
}

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

unsigned resolve_threads(std::uint32_t requested) {
  if (requested > 0) return requested;
  if (const char* e = std::getenv("OMP_NUM_THREADS")) {
    const int v = std::atoi(e);
    if (v > 0) return unsigned(v);
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? hc : 1;
}

WaitMode default_wait_mode() { return WaitMode(g_wait.load()); }
void set_wait_mode(WaitMode m) { g_wait.store(int(m)); }

ClassicConfig config_from(const Options& opt) {
  ClassicConfig c;
  c.threads = resolve_threads(opt.threads);
  c.check_width = opt.check_width;
  c.wait = default_wait_mode();
  return c;
}

template <class T>
Bytes classic_compress(const T* data, const Dims& dims, const Options& opt, Report* report, T* recon) {
  using namespace pipeline::impl;
  KSZ_EXPECTS(opt.mode == ErrorMode::ABS || opt.mode == ErrorMode::REL, "classic: mode must be abs or rel");
  KSZ_EXPECTS(opt.check_width >= 1, "check width must be at least 1");
  const std::uint64_t n = dims.count();
  const Grid g = grid_of(dims);
  const ClassicConfig cfg = config_from(opt);
  HostExec host;
  pipeline::StageTimer<HostExec> timer(host, report);

  Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> in(data, n);
  const Range range = value_range<HostExec, T>(host, in);
  double abs_bound = opt.bound;
  if (opt.mode == ErrorMode::REL) abs_bound = opt.bound * (range.max - range.min);
  const Quant qp = quant_of(abs_bound, fixed_radius(opt));
  timer.mark("value range");

  // Working array of reconstructed values (non-finite unpredictables as 0, so
  // one NaN does not poison every later prediction).
  std::vector<T> own;
  T* w = recon;
  if (!w) {
    own.resize(n);
    w = own.data();
  }
  const std::vector<T> zeros(g.n0, T(0));
  Kokkos::View<std::uint16_t*, Kokkos::HostSpace> codes(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::classic::codes")), n);
  std::vector<std::uint64_t> row_unpred(g.rows(), 0);
  run_pipeline(g, cfg, [&](std::uint64_t r, std::uint64_t x0, std::uint64_t x1) {
    const RowPtrs<T> p = row_ptrs(g, w, zeros.data(), r);
    const std::uint64_t base = r * g.n0;
    std::uint64_t unpred = 0;
    for (std::uint64_t x = x0; x < x1; ++x) {
      const double xv = double(data[base + x]);
      const double pred = predict(p, x);
      const double v = mul_rn(add_rn(xv, -pred), qp.inv_step);
      if (std::fabs(v) < qp.limit) {
        const double qd = std::floor(add_rn(v, 0.5));
        const T rec = static_cast<T>(add_rn(pred, mul_rn(qd, qp.step)));
        if (std::fabs(xv - double(rec)) <= qp.check) {
          codes(base + x) = static_cast<std::uint16_t>(std::int32_t(qd) + qp.radius);
          p.cur[x] = rec;
          continue;
        }
      }
      codes(base + x) = 0;
      p.cur[x] = finite(xv) ? data[base + x] : T(0);
      ++unpred;
    }
    row_unpred[r] += unpred;
  });
  timer.mark("predict+quantize");

  const std::uint32_t nsym = 2 * fixed_radius(opt);
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> hist("ksz::classic::hist", nsym);
  histogram::histogram<HostExec>(host, codes, hist, fixed_radius(opt));
  timer.mark("histogram");
  const huffman::Codebook book = huffman::build_codebook(hist.data(), nsym);
  const huffman::DeviceCodebook<HostExec> dbook(book);
  timer.mark("codebook");
  const auto enc = huffman::encode<HostExec>(host, codes, dbook, opt.huffman_chunk);
  timer.mark("huffman encode");
  LosslessId pass = LosslessId::None;
  const auto words = words_segment(host, enc.words, enc.n_words, codes.extent(0), opt.lossless, pass, timer, report);

  // Unpredictable values in element order: exact input bits.
  std::vector<std::uint64_t> row_off(g.rows() + 1, 0);
  for (std::uint64_t r = 0; r < g.rows(); ++r) row_off[r + 1] = row_off[r] + row_unpred[r];
  const std::uint64_t n_unpred = row_off[g.rows()];
  std::vector<T> unpred(n_unpred);
  parallel_rows(g.rows(), cfg.threads, [&](std::uint64_t r) {
    std::uint64_t k = row_off[r];
    for (std::uint64_t i = r * g.n0; i < (r + 1) * g.n0; ++i)
      if (codes(i) == 0) unpred[k++] = data[i];
  });
  if (recon) {  // the caller wants the decompressed field: restore non-finite values
    parallel_rows(g.rows(), cfg.threads, [&](std::uint64_t r) {
      for (std::uint64_t i = r * g.n0; i < (r + 1) * g.n0; ++i)
        if (codes(i) == 0) recon[i] = data[i];
    });
  }

  std::vector<std::uint8_t> lengths(book.lengths.begin(), book.lengths.end());
  const auto offsets = to_host_bytes(enc.chunk_offsets, enc.chunk_offsets.extent(0));
  const auto uv = bytes_of(unpred);
  container::Header h;
  h.dtype = dtype_of<T>();
  h.dims = dims;
  h.mode = opt.mode;
  h.predictor = PredictorId::ClassicLorenzo;
  h.codec = CodecId::Huffman;
  h.lossless = pass;
  h.user_bound = opt.bound;
  h.abs_bound = abs_bound;
  h.value_min = range.min;
  h.value_max = range.max;
  h.set_f64(Param::QuantStep, qp.step);
  h.set_u32(Param::Radius, fixed_radius(opt));
  h.set_u32(Param::HuffmanChunk, opt.huffman_chunk);
  h.set_u64(Param::VerbatimCount, n_unpred);
  auto stream = container::write(h, {{SegmentId::HuffmanLengths, lengths.data(), lengths.size()},
                                     {SegmentId::HuffmanChunkOffsets, offsets.data(), offsets.size()},
                                     words.segment(SegmentId::HuffmanWords),
                                     {SegmentId::ClassicUnpredictable, uv.data(), uv.size()}});
  timer.mark("gather+container");
  if (report) {
    report->elements = n;
    report->input_bytes = n * sizeof(T);
    report->output_bytes = stream.size();
    report->outliers = 0;
    report->verbatim = n_unpred;
    report->radius = fixed_radius(opt);
    report->abs_bound = abs_bound;
    report->value_min = range.min;
    report->value_max = range.max;
  }
  return stream;
}

template <class T>
void classic_decompress(const container::Parsed& s, T* out, unsigned threads, Report* report) {
  using namespace pipeline::impl;
  const container::Header& h = s.header;
  KSZ_STREAM_CHECK(h.dtype == dtype_of<T>(), "dtype mismatch");
  KSZ_STREAM_CHECK(h.predictor == PredictorId::ClassicLorenzo && h.codec == CodecId::Huffman,
                   "not a classic Lorenzo+Huffman stream");
  KSZ_STREAM_CHECK(h.mode == ErrorMode::ABS || h.mode == ErrorMode::REL, "classic stream with mode ",
                   to_string(h.mode));
  const std::uint64_t n = h.dims.count();
  const std::uint32_t radius = h.u32(Param::Radius);
  KSZ_STREAM_CHECK(radius >= 1 && radius <= 32768, "radius ", radius, " out of range");
  const std::uint32_t hchunk = h.u32(Param::HuffmanChunk);
  KSZ_STREAM_CHECK(hchunk >= 1 && hchunk <= (1u << 24), "Huffman chunk ", hchunk, " out of range");
  const double step = h.f64(Param::QuantStep);
  KSZ_STREAM_CHECK(std::isfinite(step) && step > 0, "quantization step is not a positive number");
  const std::uint64_t n_unpred = h.u64(Param::VerbatimCount);
  KSZ_STREAM_CHECK(n_unpred <= n, "unpredictable count exceeds the element count");
  const std::uint64_t n_words = huffman_word_count(s);  // after the lossless pass, if any
  KSZ_STREAM_CHECK(n <= n_words * 32, "header claims ", n, " elements but the stream holds at most ", n_words * 32);
  const std::uint64_t n_chunks = (n + hchunk - 1) / hchunk;
  const auto& len_seg = s.require(SegmentId::HuffmanLengths);
  KSZ_STREAM_CHECK(len_seg.size == 2ull * radius, "codebook has ", len_seg.size, " lengths, expected ",
                   2ull * radius);
  const auto& uv_seg = s.require(SegmentId::ClassicUnpredictable);
  KSZ_STREAM_CHECK(uv_seg.size == n_unpred * sizeof(T), "unpredictable segment has ", uv_seg.size,
                   " bytes, expected ", n_unpred * sizeof(T));

  HostExec host;
  pipeline::StageTimer<HostExec> timer(host, report);
  auto words = huffman_words<HostExec>(host, s, n_words);
  if (h.lossless != LosslessId::None) timer.mark("lossless decode");
  const huffman::Codebook book = huffman::codebook_from_lengths(len_seg.data, len_seg.size);
  const huffman::DeviceCodebook<HostExec> dbook(book);
  auto offsets = to_device<std::uint64_t>(host, s.require(SegmentId::HuffmanChunkOffsets), n_chunks + 1,
                                          "chunk offsets");
  Kokkos::View<std::uint16_t*, Kokkos::HostSpace> codes(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::classic::codes")), n);
  huffman::decode<HostExec>(host, words, offsets, hchunk, dbook, codes);
  std::vector<T> unpred(n_unpred);
  if (n_unpred) std::memcpy(unpred.data(), uv_seg.data, uv_seg.size);
  timer.mark("huffman decode");

  ClassicConfig cfg;
  cfg.threads = threads;
  cfg.wait = default_wait_mode();
  const Grid g = grid_of(h.dims);
  // Where each row's unpredictable values start.
  std::vector<std::uint64_t> row_off(g.rows() + 1, 0);
  parallel_rows(g.rows(), threads, [&](std::uint64_t r) {
    std::uint64_t c = 0;
    for (std::uint64_t i = r * g.n0; i < (r + 1) * g.n0; ++i) c += codes(i) == 0;
    row_off[r + 1] = c;
  });
  for (std::uint64_t r = 0; r < g.rows(); ++r) row_off[r + 1] += row_off[r];
  KSZ_STREAM_CHECK(row_off[g.rows()] == n_unpred, "unpredictable count does not match the coded stream");

  const std::vector<T> zeros(g.n0, T(0));
  std::vector<std::uint64_t> row_pos(row_off.begin(), row_off.end() - 1);
  const std::int32_t rad = std::int32_t(radius);
  run_pipeline(g, cfg, [&](std::uint64_t r, std::uint64_t x0, std::uint64_t x1) {
    const RowPtrs<T> p = row_ptrs(g, out, zeros.data(), r);
    const std::uint64_t base = r * g.n0;
    std::uint64_t k = row_pos[r];
    for (std::uint64_t x = x0; x < x1; ++x) {
      const std::int32_t c = codes(base + x);
      if (c != 0) {
        const double pred = predict(p, x);
        p.cur[x] = static_cast<T>(add_rn(pred, mul_rn(double(c - rad), step)));
      } else {
        const T v = unpred[k++];
        p.cur[x] = finite(double(v)) ? v : T(0);
      }
    }
    row_pos[r] = k;
  });
  timer.mark("reconstruct");
  parallel_rows(g.rows(), threads, [&](std::uint64_t r) {
    std::uint64_t k = row_off[r];
    for (std::uint64_t i = r * g.n0; i < (r + 1) * g.n0; ++i)
      if (codes(i) == 0) out[i] = unpred[k++];
  });
  timer.mark("unpredictables");
  pipeline::impl::report_decoded<T>(report, h, n, n_unpred);
}

template Bytes classic_compress<float>(const float*, const Dims&, const Options&, Report*, float*);
template Bytes classic_compress<double>(const double*, const Dims&, const Options&, Report*, double*);
template void classic_decompress<float>(const container::Parsed&, float*, unsigned, Report*);
template void classic_decompress<double>(const container::Parsed&, double*, unsigned, Report*);

}  // namespace ksz::cpu_baseline
