// ksz command-line tool: compress, decompress, gen, info, demo.
// Uses the public API only (src/api/ksz.hpp) plus the field generator.
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <iostream>
#include <mutex>
#include <thread>

#include "portable/generate/field.hpp"
#include "src/api/frames.hpp"
#include "src/api/ksz.hpp"
#include "src/api/quality.hpp"
#include "src/cli/check.hpp"
#include "src/cli/io.hpp"
#include "src/cli/quality.hpp"
#include "src/core/host_memory.hpp"

namespace {

using namespace ksz;

// Prints "ksz: <what>... N s" to stderr every 2 s once a task has run for 2 s
// (with its status, e.g. the frame it is on, where one was set).
class Progress {
 public:
  explicit Progress(std::string what) : m_what(std::move(what)), m_thread([this] { run(); }) {}
  void status(std::string s) {
    std::lock_guard<std::mutex> lk(m_mu);
    m_status = std::move(s);
  }
  // A FrameOptions::progress that sets the status "<what> frame i/n" (framed runs only).
  std::function<void(const char*, std::uint64_t, std::uint64_t)> frames() {
    return [this](const char* what, std::uint64_t done, std::uint64_t total) {
      if (total != 1)  // 0: not known (a stream)
        status(std::string(what) + ", frame " + std::to_string(done) + (total ? "/" + std::to_string(total) : ""));
    };
  }
  ~Progress() {
    {
      std::lock_guard<std::mutex> lk(m_mu);
      m_done = true;
    }
    m_cv.notify_all();
    m_thread.join();
  }

 private:
  void run() {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lk(m_mu);
    while (!m_cv.wait_for(lk, std::chrono::seconds(2), [this] { return m_done; })) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (m_status.empty())
        std::fprintf(stderr, "ksz: %s... %.0f s\n", m_what.c_str(), s);
      else
        std::fprintf(stderr, "ksz: %s (%s)... %.0f s\n", m_what.c_str(), m_status.c_str(), s);
    }
  }
  std::string m_what, m_status;
  std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_done = false;
  std::thread m_thread;
};

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float" || s == "float32") return DType::F32;
  if (s == "f64" || s == "double" || s == "float64") return DType::F64;
  throw InvalidInput("unknown dtype '" + s + "' (f32, f64)");
}

ErrorMode parse_mode(const std::string& s) {
  if (s == "abs") return ErrorMode::ABS;
  if (s == "rel") return ErrorMode::REL;
  if (s == "pwrel" || s == "pw_rel") return ErrorMode::PW_REL;
  throw InvalidInput("unknown error-bound mode '" + s + "' (abs, rel, pwrel)");
}

PredictorId parse_predictor(const std::string& s) {
  if (s == "lorenzo") return PredictorId::Lorenzo;
  if (s == "interp") return PredictorId::Interp;
  if (s == "szx") return PredictorId::SZx;
  if (s == "auto") return PredictorId::Auto;
  throw InvalidInput("unknown predictor '" + s + "' (lorenzo, interp, szx, auto)");
}

LosslessId parse_lossless(const std::string& s) {
  if (s == "none") return LosslessId::None;
  if (s == "zbe") return LosslessId::ZeroBytes;
  if (s == "zwe") return LosslessId::ZeroWords;
  throw InvalidInput("unknown lossless pass '" + s + "' (zbe, zwe, none)");
}

Dims parse_dims(const std::vector<std::uint64_t>& v) {
  KSZ_EXPECTS(!v.empty() && v.size() <= 4, "give 1 to 4 extents, fastest-varying first (e.g. -d 512,512,512)");
  Dims d;
  d.rank = static_cast<int>(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    // (0 as the slowest: as many slices as standard input holds, `-i -`)
    KSZ_EXPECTS(v[i] >= 1 || i + 1 == v.size(), "extents must be at least 1");
    d.n[i] = v[i];
  }
  return d;
}

double gbps(double bytes, double s) { return s > 0 ? bytes / s / 1e9 : 0; }

void print_stages(const Report& r, const char* what) {
  std::printf("%s on %s:\n", what, to_string(r.backend));
  for (const auto& s : r.stages)
    std::printf("  %-28s %9.3f ms  %8.2f GB/s\n", s.name.c_str(), s.seconds * 1e3,
                gbps(double(r.input_bytes), s.seconds));
  std::printf("  %-28s %9.3f ms  %8.2f GB/s  (stages, data on the device)\n", "kernels", r.device_seconds * 1e3,
              gbps(double(r.input_bytes), r.device_seconds));
  std::printf("  %-28s %9.3f ms  %8.2f GB/s  (whole call, host copies included)\n", "end to end",
              r.total_seconds * 1e3, gbps(double(r.input_bytes), r.total_seconds));
}

// Prints the summary table and returns false if the bound was violated.
bool print_summary(const Report& c, const cli::Quality& q, std::uint64_t n) {
  const double ratio = double(c.input_bytes) / double(c.output_bytes);
  std::printf("elements %llu, resolved abs bound %.6g, range [%.6g, %.6g]\n", (unsigned long long)n,
              c.abs_bound, c.value_min, c.value_max);
  std::printf("ratio %.3f  bit rate %.4f bits/value  outliers %llu  verbatim %llu\n", ratio,
              8.0 * double(c.output_bytes) / double(n), (unsigned long long)c.outliers,
              (unsigned long long)c.verbatim);
  if (c.radius > 0) std::printf("quantization radius %u (%u Huffman symbols)\n", c.radius, 2 * c.radius);
  if (c.auto_lorenzo_bytes > 0)
    std::printf("predictor auto: lorenzo %llu bytes, interp %llu bytes: kept %s\n",
                (unsigned long long)c.auto_lorenzo_bytes, (unsigned long long)c.auto_interp_bytes,
                to_string(c.predictor));
  if (c.huffman_bytes > 0) {
    const double without = double(c.input_bytes) / double(c.output_bytes - c.lossless_bytes + c.huffman_bytes);
    if (c.lossless != LosslessId::None)
      std::printf("lossless pass %s: Huffman bitstream %llu -> %llu bytes (%.3fx), ratio without it %.3f\n",
                  to_string(c.lossless), (unsigned long long)c.huffman_bytes, (unsigned long long)c.lossless_bytes,
                  double(c.huffman_bytes) / double(c.lossless_bytes), without);
    else
      std::printf("lossless pass: none (off, or it would not shrink the %llu-byte Huffman bitstream)\n",
                  (unsigned long long)c.huffman_bytes);
  }
  std::printf("PSNR %.2f dB  NRMSE %.4g  max abs error %.6g (bound %.6g)\n", q.psnr, q.nrmse, q.max_abs_error,
              c.abs_bound);
  const bool ok = q.over_bound == 0 && q.nonfinite_mismatch == 0;
  std::printf("error bound respected on every element: %s", ok ? "yes" : "NO");
  if (!ok)
    std::printf(" (%llu over the bound, %llu non-finite mismatches)", (unsigned long long)q.over_bound,
                (unsigned long long)q.nonfinite_mismatch);
  std::printf("\n");
  return ok;
}

template <class T>
Bytes generate_on(Backend b, const generate::FieldSpec& spec) {
  return with_backend(b, [&](auto space) {
    using Space = decltype(space);
    const std::uint64_t n = spec.n0 * spec.n1 * spec.n2;
    Kokkos::View<T*, typename Space::memory_space> dev("ksz::generated", n);
    generate::fill<Space, T>(space, spec, dev);
    Bytes out = huge_page_bytes(n * sizeof(T));
    Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
        reinterpret_cast<T*>(out.data()), n);
    Kokkos::deep_copy(h, dev);
    return out;
  });
}

Bytes generate_field(Backend b, DType t, const Dims& d, generate::Kind kind, std::uint32_t seed) {
  const Shape3 s = effective_shape(d);
  generate::FieldSpec spec{kind, seed, s.n[0], s.n[1], s.n[2]};
  return t == DType::F64 ? generate_on<double>(b, spec) : generate_on<float>(b, spec);
}

// Up to buf's size from standard input (fewer only at its end), read by a
// thread of its own. Detached: where the caller gives up (an error), it
// does not wait on a pipe that may never end; the thread keeps its buffer.
std::future<std::size_t> read_stdin_async(std::shared_ptr<Bytes> buf) {
  std::promise<std::size_t> done;
  std::future<std::size_t> f = done.get_future();
  std::thread([buf, done = std::move(done)]() mutable {
    try {
      std::size_t have = 0;
      while (have < buf->size()) {
        const ssize_t r = ::read(STDIN_FILENO, buf->data() + have, std::min<std::size_t>(buf->size() - have, 1 << 30));
        if (r < 0 && errno == EINTR) continue;
        KSZ_EXPECTS(r >= 0, "cannot read standard input: ", std::strerror(errno));
        if (r == 0) break;
        have += static_cast<std::size_t>(r);
      }
      done.set_value(have);
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  }).detach();
  return f;
}

// `-i -`: raw values from standard input, compressed by a FrameWriter as
// they come (ABS or PW_REL). dd's slowest extent: 0 for as many slices as
// come, else exactly that many.
FileResult compress_stdin(const std::string& out, DType t, const Dims& dd, const Options& opt, const FrameOptions& fo,
                          Report* rc) {
  const int last = dd.rank - 1;
  const std::uint64_t want = dd.n[last];
  Dims one = dd;
  one.n[last] = 1;
  validate(t, one, opt);
  const std::uint64_t slice_bytes = one.count() * dtype_size(t);
  const std::uint64_t frame_bytes =
      fo.frame_bytes ? fo.frame_bytes : std::min(memory_budget(opt.backend) / 8, std::uint64_t(1) << 30);
  std::uint64_t slab = std::max<std::uint64_t>(1, frame_bytes / slice_bytes);
  if (want > 0) slab = std::min(slab, want);
  Dims fd = dd;
  fd.n[last] = slab;
  FrameWriter w(out, t, fd, opt, fo);
  // Reads of 64 MiB (whole slices, at least one; the writer gathers frames),
  // the next read by a thread of its own while the last piece is appended
  // (and a frame compressed), so the pipe keeps flowing.
  const std::uint64_t per_read = std::min(slab, std::max<std::uint64_t>(1, (std::uint64_t(64) << 20) / slice_bytes));
  const std::size_t piece = static_cast<std::size_t>(per_read * slice_bytes);
  // A pipe of 1 MiB where the system allows (Linux's default 64 KiB took a
  // read call, and a switch to the writer, every 64 KiB).
#ifdef F_SETPIPE_SZ
  (void)::fcntl(STDIN_FILENO, F_SETPIPE_SZ, 1 << 20);
#endif
  std::shared_ptr<Bytes> bufs[2] = {std::make_shared<Bytes>(huge_page_bytes(piece, false)),
                                    std::make_shared<Bytes>(huge_page_bytes(piece, false))};
  std::future<std::size_t> next = read_stdin_async(bufs[0]);
  std::uint64_t got = 0;
  for (int cur = 0;; cur ^= 1) {
    const std::size_t have = next.get();
    KSZ_EXPECTS(have % slice_bytes == 0, "standard input ended inside a slice (", have % slice_bytes,
                " bytes past its last whole slice of ", slice_bytes, ")");
    const std::uint64_t n = have / slice_bytes;
    KSZ_EXPECTS(want == 0 || got + n <= want, "standard input holds more than the ", want, " slices -d gives");
    const bool end = have < piece;
    if (!end) next = read_stdin_async(bufs[cur ^ 1]);
    if (n > 0) w.append(bufs[cur]->data(), n);
    got += n;
    if (end) break;
  }
  KSZ_EXPECTS(want == 0 || got == want, "standard input held ", got, " slices; -d gives ", want);
  return w.finish(rc);
}

generate::Kind parse_kind(const std::string& k) {
  if (k == "turbulent") return generate::Kind::Turbulent;
  if (k == "smooth") return generate::Kind::Smooth;
  if (k == "noise") return generate::Kind::Noise;
  throw InvalidInput("unknown field kind '" + k + "' (turbulent, smooth, noise)");
}

int run(int argc, char** argv) {
  CLI::App app{"ksz: error-bounded lossy compression of scientific floating-point data"};
  app.require_subcommand(1);
  app.fallthrough();  // --backend and --threads also after the subcommand
  app.set_version_flag("--version", version_string());
  std::string backend_name = "default";
  int threads = 0;
  app.add_option("--backend", backend_name, "serial, openmp or cuda (default: the build's fastest)");
  app.add_option("--threads", threads, "OpenMP threads (default: OMP_NUM_THREADS or all cores)");

  std::string in, out, dtype = "f32", mode = "rel", predictor = "lorenzo", kind = "turbulent";
  std::vector<std::uint64_t> dims;
  double bound = 1e-4;
  std::uint32_t radius = 0, seed = 1;
  bool report = false;

  auto* c = app.add_subcommand("compress", "compress a raw little-endian array");
  c->add_option("-i,--input", in,
                "raw input file, or - for standard input (compressed in frames as it comes; ABS or PW_REL; the "
                "slowest extent of -d may be 0: as many slices as come)")
      ->required();
  c->add_option("-o,--output", out, "compressed output (.ksz)")->required();
  c->add_option("-t,--type", dtype, "f32 or f64")->capture_default_str();
  c->add_option("-d,--dims", dims, "extents, fastest-varying first: -d 512,512,512")->required()->delimiter(',');
  c->add_option("-m,--mode", mode, "error-bound mode: abs, rel (value-range relative) or pwrel (point-wise relative)")->capture_default_str();
  c->add_option("-e,--error", bound, "error bound")->capture_default_str();
  c->add_option("--predictor", predictor,
                "lorenzo, interp, szx, or auto (runs lorenzo and interp, keeps the smaller stream)")
      ->capture_default_str();
  c->add_option("--radius", radius,
                "quantization radius (2*radius Huffman symbols); 0 = automatic: 512 for lorenzo, chosen from the "
                "residuals for interp")
      ->capture_default_str();
  std::string report_kind;  // "" or "quality" (every cuZ-Checker metric, src/api/quality.hpp)
  auto* report_opt = c->add_option("--report", report_kind,
                                   "print ratio, quality and per-stage throughput (decompresses in memory); "
                                   "'--report quality' adds every quality metric")
                         ->expected(0, 1);
  std::string lossless = "zbe", pipeline_name = "dual";
  std::uint32_t block = 128, check_width = 384, subchunk = Options{}.huffman_subchunk;
  c->add_option("--lossless", lossless,
                "pass on the Huffman bitstream: zbe (zero-byte elimination), zwe (zero words, faster, less ratio) "
                "or none; kept only where it shrinks the bitstream")
      ->capture_default_str();
  c->add_option("--block", block, "SZx block size")->capture_default_str();
  c->add_option("--subchunk", subchunk,
                "Huffman sub-chunk: store the bit length of every run of this many codes so GPU decoders start a "
                "thread per run (2 bytes per 585 codes at 512; where that would be over 1/32 of the rest of the "
                "stream, runs of the smallest multiple under it, up to 2048, if enough runs remain for a GPU); "
                "0 = none")
      ->capture_default_str();
  c->add_option("--pipeline", pipeline_name, "dual (cuSZ dual-quantization) or classic (ParaSZ, CPU)")
      ->capture_default_str();
  c->add_option("--check-width", check_width, "classic pipeline progress batch")->capture_default_str();
  std::uint64_t frame_mb = 0;
  c->add_option("--frame-mb", frame_mb,
                "compress in frames of at most this many MiB (whole slices of the slowest dimension), each read, "
                "compressed and written in turn, for files bigger than memory; 0 = automatic: frames only where the "
                "file is over a quarter of the host's (or GPU's) memory")
      ->capture_default_str();

  auto* d = app.add_subcommand("decompress", "decompress a .ksz stream to a raw array");
  d->add_option("-i,--input", in, "compressed input (.ksz)")->required();
  d->add_option("-o,--output", out, "raw output file")->required();
  d->add_flag("--report", report, "print per-stage throughput");

  auto* g = app.add_subcommand("gen", "write a generated field (fBm value noise, power-law spectrum)");
  g->add_option("-o,--output", out, "raw output file")->required();
  g->add_option("-t,--type", dtype, "f32 or f64")->capture_default_str();
  g->add_option("-d,--dims", dims, "extents, fastest first")->required()->delimiter(',');
  g->add_option("--kind", kind, "turbulent (k^-5/3), smooth, noise")->capture_default_str();
  g->add_option("--seed", seed, "random seed")->capture_default_str();

  auto* info = app.add_subcommand("info", "print a .ksz stream's header");
  info->add_option("-i,--input", in, "compressed input (.ksz)")->required();

  auto* demo = app.add_subcommand("demo", "generate a field, compress, decompress, check (the main job)");
  dims = {};
  demo->add_option("-d,--dims", dims, "extents (default 256,256,256)")->delimiter(',');
  demo->add_option("-e,--error", bound, "REL error bound")->capture_default_str();
  demo->add_option("--kind", kind, "turbulent, smooth, noise")->capture_default_str();

  const auto check = cli::register_check(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ksz: error: %s (see ksz --help)\n", e.what());
    return 2;
  }

  if (threads > 0) ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
  std::vector<std::string> kargs = {argv[0], "--kokkos-disable-warnings"};
  std::vector<char*> kargv;
  for (auto& s : kargs) kargv.push_back(s.data());
  int kargc = static_cast<int>(kargv.size());
  Kokkos::ScopeGuard kokkos(kargc, kargv.data());
  const Backend backend = parse_backend(backend_name);
  if (check.active()) return check.run(backend);

  if (*c) {
    report = report_opt->count() > 0;
    KSZ_EXPECTS(report_kind.empty() || report_kind == "quality", "unknown report '", report_kind, "' (quality)");
    Options opt;
    opt.mode = parse_mode(mode);
    opt.bound = bound;
    opt.predictor = parse_predictor(predictor);
    opt.radius = radius;
    opt.backend = backend;
    opt.lossless = parse_lossless(lossless);
    opt.szx_block = block;
    opt.huffman_subchunk = subchunk;
    opt.check_width = check_width;
    opt.threads = threads > 0 ? std::uint32_t(threads) : 0u;
    KSZ_EXPECTS(pipeline_name == "dual" || pipeline_name == "classic", "unknown pipeline '", pipeline_name,
                "' (dual, classic)");
    opt.classic = pipeline_name == "classic";
    const DType t = parse_dtype(dtype);
    const Dims dd = parse_dims(dims);
    const bool from_stdin = in == "-";
    if (!from_stdin) validate(t, dd, opt);
    KSZ_EXPECTS(report_kind != "quality" || (frame_mb == 0 && !from_stdin),
                "--report quality needs the whole array in memory: not with --frame-mb or -i -");
    FrameOptions fo;
    KSZ_EXPECTS(frame_mb <= (std::uint64_t(1) << 40), "--frame-mb must be at most 2^40");
    fo.frame_bytes = frame_mb << 20;
    // --report: each frame decompressed and checked as it is written.
    Report rc, rd;
    cli::Quality q;
    std::string quality_text;
    if (report)
      fo.on_frame = [&](const void* raw, const Bytes& s, const Dims& fd, std::uint64_t first) {
        Report r;
        const Field f = decompress(s.data(), s.size(), backend, &r);
        merge_report(rd, r);
        q = cli::combine(q, cli::assess(raw, f.bytes.data(), t, fd.count(), r.abs_bound));  // the frame's header's
        if (report_kind == "quality") {
          KSZ_EXPECTS(first == 0 && fd.count() == dd.count(),
                      "--report quality needs the whole array in memory: this file is compressed in frames");
          quality_text = quality_table(assess_quality(raw, f.bytes.data(), t, dd, QualityConfig{}, backend));
        }
      };
    FileResult res;
    {
      Progress p(report ? "compressing and checking" : "compressing");
      fo.progress = p.frames();
      res = from_stdin ? compress_stdin(out, t, dd, opt, fo, &rc) : compress_file(in, out, t, dd, opt, fo, &rc);
    }
    if (!report) return 0;
    print_stages(rc, "compress");
    print_stages(rd, "decompress");
    if (res.framed)
      std::printf("framed: %llu frames of %.1f MiB\n", (unsigned long long)res.frames,
                  double(res.frame_bytes) / double(1 << 20));
    const bool ok = print_summary(rc, q, rc.elements);
    std::fputs(quality_text.c_str(), stdout);
    return ok ? 0 : 3;
  }
  if (*d) {
    Report rd;
    FileResult res;
    {
      Progress p("decompressing");
      FrameOptions fo;
      fo.progress = p.frames();
      res = decompress_file(in, out, backend, fo, &rd);
    }
    if (report) {
      print_stages(rd, "decompress");
      if (res.framed) std::printf("framed: %llu frames\n", (unsigned long long)res.frames);
      std::printf("ratio %.3f\n", double(res.file_bytes) / double(rd.output_bytes));
    }
    return 0;
  }
  if (*g) {
    const DType t = parse_dtype(dtype);
    const Dims dd = parse_dims(dims);
    validate(t, dd, Options{});
    Bytes bytes;
    {
      Progress p("generating");
      bytes = generate_field(backend, t, dd, parse_kind(kind), seed);
    }
    cli::write_file_atomic(out, bytes.data(), bytes.size());
    return 0;
  }
  if (*info) {
    const FileInfo fi = inspect_file(in);
    const StreamInfo& i = fi.info;
    std::printf("dtype %s  dims %s  mode %s  bound %.6g (abs %.6g)  predictor %s\n", to_string(i.dtype),
                i.dims.str().c_str(), to_string(i.mode), i.user_bound, i.abs_bound, to_string(i.predictor));
    std::printf("value range [%.6g, %.6g]  outliers %llu  verbatim %llu  lossless %s  ratio %.3f\n", i.value_min,
                i.value_max, (unsigned long long)i.outliers, (unsigned long long)i.verbatim, to_string(i.lossless),
                double(i.dims.count() * dtype_size(i.dtype)) / double(fi.file_bytes));
    if (i.radius > 0) std::printf("quantization radius %u", i.radius);
    if (i.huffman_chunk > 0) {
      std::printf("%sHuffman chunk %u", i.radius > 0 ? "  " : "", i.huffman_chunk);
      if (i.huffman_subchunk > 0) std::printf(" (sub-chunks of %u)", i.huffman_subchunk);
    }
    if (!i.detail.empty()) std::printf("%s%s", i.radius > 0 || i.huffman_chunk > 0 ? "  " : "", i.detail.c_str());
    if (i.radius > 0 || i.huffman_chunk > 0 || !i.detail.empty()) std::printf("\n");
    return 0;
  }
  if (*demo) {
    const Dims dd = parse_dims(dims.empty() ? std::vector<std::uint64_t>{256, 256, 256} : dims);
    Options opt;
    opt.bound = bound;
    opt.backend = backend;
    validate(DType::F32, dd, opt);
    std::printf("ksz %s\n", version_string().c_str());
    std::printf("generated %s field %s f32 (fBm value noise, seed 1), REL bound %g\n", kind.c_str(),
                dd.str().c_str(), bound);
    Bytes raw;
    {
      Progress p("generating");
      raw = generate_field(backend, DType::F32, dd, parse_kind(kind), 1);
    }
    Report rc, rd;
    Bytes stream;
    Field f;
    {
      Progress p("compressing");
      stream = compress(raw.data(), DType::F32, dd, opt, &rc);
    }
    {
      Progress p("decompressing");
      f = decompress(stream.data(), stream.size(), backend, &rd);
    }
    print_stages(rc, "compress");
    print_stages(rd, "decompress");
    const auto q = cli::assess(raw.data(), f.bytes.data(), DType::F32, dd.count(), rc.abs_bound);
    return print_summary(rc, q, dd.count()) ? 0 : 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ksz::CorruptStream& e) {
    std::fprintf(stderr, "ksz: error: %s\n", e.what());
  } catch (const ksz::InvalidInput& e) {
    std::fprintf(stderr, "ksz: error: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ksz: error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ksz: error: %s\n", e.what());
  }
  return 1;
}
