// ParaSZ classic pipeline on the host (parasz-pipeline section V):
//   bench_parasz [--dims 256,256,256 | --file f.raw --type f32|f64 --dims x,y,z]
//                [--mode pwrel|abs|rel] [-e 1e-3] [--threads 1,2,4,8,16] [--reps 3]
//                [--widths 48,96,192,384,768,1536,6144] [--ratios] [--backend cuda] [--kind turbulent]
// 1. per-stage time as the paper's Figure 7 (log transform, predict+quantize,
//    Huffman = histogram + codebook + encode, other, total) for each thread
//    count, speedup and efficiency against the first count, and whether the
//    stream bytes equal the first count's (they must);
// 2. with --widths: predict+quantize time against checkWidth at the largest
//    thread count, for both progress controls (spin on atomics, condition variables);
// 3. with --ratios: PW_REL 1e-2/1e-3/1e-4 ratios, classic pipeline and
//    dual-quantization pipeline (the latter on --backend).
// The log transform and the Huffman stage run on Kokkos' host space, whose
// thread count is fixed at start: for a per-T figure of those stages run once
// per T with OMP_NUM_THREADS=T (the classic pipeline's own workers follow --threads).
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "perf/common/harness.hpp"
#include "portable/generate/field.hpp"
#include "src/api/ksz.hpp"
#include "src/cpu_baseline/classic_pipeline.hpp"

namespace {

using namespace ksz;

struct Args {
  std::vector<std::uint64_t> dims{256, 256, 256}, threads{1, 2, 4, 8, 16}, widths;
  std::string file, type = "f32", mode = "pwrel", kind = "turbulent", backend = "default";
  double bound = 1e-3;
  int reps = 3;
  bool ratios = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--ratios") {
      a.ratios = true;
      continue;
    }
    if (i + 1 >= argc) break;
    std::string v = argv[++i];
    if (k == "--dims") a.dims = perf::Args::numbers(v);
    else if (k == "--threads") a.threads = perf::Args::numbers(v);
    else if (k == "--widths") a.widths = perf::Args::numbers(v);
    else if (k == "--file") a.file = v;
    else if (k == "--type") a.type = v;
    else if (k == "--mode") a.mode = v;
    else if (k == "-e" || k == "--error") a.bound = std::stod(v);
    else if (k == "--reps") a.reps = std::stoi(v);
    else if (k == "--kind") a.kind = v;
    else if (k == "--backend") a.backend = v;
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

ErrorMode mode_of(const std::string& m) {
  return m == "abs" ? ErrorMode::ABS : m == "rel" ? ErrorMode::REL : ErrorMode::PW_REL;
}

// Figure 7's categories.
const char* category(const std::string& stage) {
  if (stage.find("log transform") != std::string::npos) return "transform";
  if (stage.find("predict+quantize") != std::string::npos) return "predict+quant";
  if (stage.find("histogram") != std::string::npos || stage.find("codebook") != std::string::npos ||
      stage.find("huffman") != std::string::npos)
    return "huffman";
  return "other";
}

struct Run {
  std::map<std::string, double> cat;  // median seconds per category
  double total = 0;
  Bytes stream;
};

Run run(const std::vector<std::uint8_t>& raw, DType t, const Dims& d, Options opt, int reps) {
  std::map<std::string, std::vector<double>> cats;
  std::vector<double> totals;
  Run r;
  for (int i = 0; i < reps + 1; ++i) {  // first is warm-up
    Report rep;
    r.stream = compress(raw.data(), t, d, opt, &rep);
    if (i == 0) continue;
    std::map<std::string, double> c;
    for (const auto& s : rep.stages) c[category(s.name)] += s.seconds;
    for (auto& [k, v] : c) cats[k].push_back(v);
    totals.push_back(rep.total_seconds);
  }
  for (auto& [k, v] : cats) r.cat[k] = median(v);
  r.total = median(totals);
  return r;
}

int bench(const Args& a) {
  Dims d;
  d.rank = int(a.dims.size());
  for (std::size_t i = 0; i < a.dims.size(); ++i) d.n[i] = a.dims[i];
  const DType t = a.type == "f64" ? DType::F64 : DType::F32;
  const std::uint64_t n = d.count();
  std::vector<std::uint8_t> raw;
  std::string what;
  if (!a.file.empty()) {
    std::ifstream f(a.file, std::ios::binary);
    raw.assign(std::istreambuf_iterator<char>(f), {});
    if (raw.size() != n * dtype_size(t)) {
      std::fprintf(stderr, "bench_parasz: %s has %zu bytes, dims say %llu\n", a.file.c_str(), raw.size(),
                   (unsigned long long)(n * dtype_size(t)));
      return 1;
    }
    what = a.file;
  } else {
    const Shape3 s = effective_shape(d);
    generate::FieldSpec spec{a.kind == "smooth" ? generate::Kind::Smooth : a.kind == "noise" ? generate::Kind::Noise
                                                                                            : generate::Kind::Turbulent,
                             1, s.n[0], s.n[1], s.n[2]};
    using Host = Kokkos::DefaultHostExecutionSpace;
    raw.resize(n * 4);
    Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(
        reinterpret_cast<float*>(raw.data()), n);
    generate::fill<Host, float>(Host(), spec, v);
    Host().fence();
    what = "generated " + a.kind;
    if (t == DType::F64) {
      std::vector<std::uint8_t> r8(n * 8);
      for (std::uint64_t i = 0; i < n; ++i) reinterpret_cast<double*>(r8.data())[i] = v(i);
      raw.swap(r8);
    }
  }
  const double bytes = double(raw.size());
  std::printf("bench_parasz  %s  %s %s  mode %s e %g  reps %d  host concurrency %d  %s\n", what.c_str(),
              d.str().c_str(), to_string(t), a.mode.c_str(), a.bound, a.reps,
              int(Kokkos::DefaultHostExecutionSpace::concurrency()), version_string().c_str());

  Options opt;
  opt.mode = mode_of(a.mode);
  opt.bound = a.bound;
  opt.classic = true;
  const char* cats[] = {"transform", "predict+quant", "huffman", "other"};

  std::printf("\n1. classic pipeline per stage (ms, median), checkWidth %u, progress control %s\n", opt.check_width,
              cpu_baseline::default_wait_mode() == cpu_baseline::WaitMode::Spin ? "spin" : "condvar");
  std::printf("%7s %10s %14s %10s %10s %10s %8s %9s %7s %6s\n", "threads", "transform", "predict+quant", "huffman",
              "other", "total", "MB/s", "speedup", "eff", "same");
  Bytes ref;
  double t1 = 0, pq1 = 0;
  for (auto th : a.threads) {
    opt.threads = std::uint32_t(th);
    const Run r = run(raw, t, d, opt, a.reps);
    if (ref.empty()) ref = r.stream, t1 = r.total, pq1 = r.cat.count("predict+quant") ? r.cat.at("predict+quant") : 0;
    std::printf("%7llu", (unsigned long long)th);
    for (const char* c : cats) std::printf(" %*.2f", c == cats[1] ? 14 : 10, r.cat.count(c) ? r.cat.at(c) * 1e3 : 0.0);
    const double pq = r.cat.count("predict+quant") ? r.cat.at("predict+quant") : 0;
    std::printf(" %10.2f %8.1f %8.2fx %6.2f %6s   (predict+quant speedup %.2fx, ratio %.3f)\n", r.total * 1e3,
                bytes / r.total / 1e6, t1 / r.total, t1 / r.total / double(th) * double(a.threads[0]),
                r.stream == ref ? "yes" : "NO", pq > 0 ? pq1 / pq : 0.0, bytes / double(r.stream.size()));
  }

  if (!a.widths.empty()) {
    opt.threads = std::uint32_t(*std::max_element(a.threads.begin(), a.threads.end()));
    std::printf("\n2. checkWidth at %u threads: predict+quant ms (total ms)\n%9s %18s %18s\n", opt.threads, "width",
                "spin", "condvar");
    for (auto w : a.widths) {
      opt.check_width = std::uint32_t(w);
      std::printf("%9llu", (unsigned long long)w);
      for (auto m : {cpu_baseline::WaitMode::Spin, cpu_baseline::WaitMode::CondVar}) {
        cpu_baseline::set_wait_mode(m);
        const Run r = run(raw, t, d, opt, a.reps);
        std::printf("   %7.2f (%7.2f)", r.cat.count("predict+quant") ? r.cat.at("predict+quant") * 1e3 : 0.0,
                    r.total * 1e3);
      }
      std::printf("\n");
    }
    cpu_baseline::set_wait_mode(cpu_baseline::WaitMode::Spin);
    opt.check_width = 384;
  }

  if (a.ratios) {
    std::printf("\n3. PW_REL ratios (classic: %u threads; dual: backend %s)\n%8s %10s %10s %10s %10s\n",
                unsigned(cpu_baseline::resolve_threads(0)), a.backend.c_str(), "e", "classic", "verbatim", "dual",
                "verbatim");
    for (double e : {1e-2, 1e-3, 1e-4}) {
      Options o;
      o.mode = ErrorMode::PW_REL;
      o.bound = e;
      o.classic = true;
      Report rc, rd;
      const auto sc = compress(raw.data(), t, d, o, &rc);
      o.classic = false;
      o.backend = parse_backend(a.backend);
      const auto sd = compress(raw.data(), t, d, o, &rd);
      std::printf("%8g %10.3f %10llu %10.3f %10llu\n", e, bytes / double(sc.size()), (unsigned long long)rc.verbatim,
                  bytes / double(sd.size()), (unsigned long long)rd.verbatim);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  Kokkos::ScopeGuard g;  // not argv: Kokkos 3.4 claims --threads; it takes OMP_NUM_THREADS
  try {
    return bench(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_parasz: %s\n", e.what());
    return 1;
  }
}
