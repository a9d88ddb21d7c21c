// G-Interp (cuSZ-i) pipeline throughput and ratio beside the Lorenzo
// pipeline's, data resident in the backend's memory, same field, same bound.
//   bench_interp [--dims 512,512,512] [--rel 1e-3] [--reps 5] [--backend cuda]
//                [--kind turbulent|smooth] [--json out.json]
// Prints both pipelines' figures, PSNR, and interp/lorenzo compression
// throughput (issue 7 target: >= 0.7).
// Reports the median over reps of: kernels (stages only, what cuSZ reports)
// and end to end (including the segment copies and container assembly).
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "portable/generate/field.hpp"
#include "src/api/ksz.hpp"
#include "src/container/container.hpp"
#include "src/pipeline/interp_pipeline.hpp"
#include "src/pipeline/lorenzo_pipeline.hpp"

namespace {

using namespace ksz;

struct Args {
  std::vector<std::uint64_t> dims{512, 512, 512};
  double rel = 1e-3;
  int reps = 5;
  std::string backend = "default", kind = "turbulent", json;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dims") {
      a.dims.clear();
      std::size_t p = 0;
      while (p < v.size()) {
        auto q = v.find(',', p);
        a.dims.push_back(std::stoull(v.substr(p, q - p)));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else if (k == "--rel") a.rel = std::stod(v);
    else if (k == "--reps") a.reps = std::stoi(v);
    else if (k == "--backend") a.backend = v;
    else if (k == "--kind") a.kind = v;
    else if (k == "--json") a.json = v;
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Result {
  double ratio, psnr, ck, ce, dk, de;
};

// PSNR over the value range, reduced on the device.
template <class Space>
double psnr(const Space& space, Kokkos::View<float*, typename Space::memory_space> a,
            Kokkos::View<float*, typename Space::memory_space> b) {
  double se = 0, lo = 0, hi = 0;
  Kokkos::parallel_reduce(
      "bench::se", Kokkos::RangePolicy<Space>(space, 0, a.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i, double& acc) {
        const double d = double(a(i)) - double(b(i));
        acc += d * d;
      },
      se);
  Kokkos::parallel_reduce(
      "bench::min", Kokkos::RangePolicy<Space>(space, 0, a.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i, double& m) { m = double(a(i)) < m ? double(a(i)) : m; }, Kokkos::Min<double>(lo));
  Kokkos::parallel_reduce(
      "bench::max", Kokkos::RangePolicy<Space>(space, 0, a.extent(0)),
      KOKKOS_LAMBDA(const std::uint64_t i, double& m) { m = double(a(i)) > m ? double(a(i)) : m; }, Kokkos::Max<double>(hi));
  const double mse = se / double(a.extent(0));
  return mse > 0 ? 20 * std::log10(hi - lo) - 10 * std::log10(mse) : 1e9;
}

template <class Space, class P>
Result bench(const Space& space, const Args& a, PredictorId pred, const char* label) {
  using Mem = typename Space::memory_space;
  Dims d;
  d.rank = int(a.dims.size());
  for (std::size_t i = 0; i < a.dims.size(); ++i) d.n[i] = a.dims[i];
  const Shape3 s = effective_shape(d);
  const std::uint64_t n = d.count();
  generate::FieldSpec spec{a.kind == "smooth" ? generate::Kind::Smooth : generate::Kind::Turbulent, 1, s.n[0],
                           s.n[1], s.n[2]};
  Kokkos::View<float*, Mem> field("field", n);
  generate::fill<Space, float>(space, spec, field);
  space.fence();
  Options opt;
  opt.bound = a.rel;
  opt.predictor = pred;

  std::vector<double> ck, ce, dk, de;
  std::map<std::string, std::vector<double>> cstage, dstage;
  std::vector<std::uint8_t> stream;
  Kokkos::View<float*, Mem> out;
  for (int r = 0; r < a.reps + 1; ++r) {  // first rep is warm-up
    Report rc, rd;
    auto t0 = std::chrono::steady_clock::now();
    stream = P::template compress<float>(space, field, d, opt, &rc);
    const double tc = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    const auto parsed = container::read(stream.data(), stream.size());
    P::template decompress<float>(space, parsed, out, &rd);
    space.fence();
    const double td = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r == 0) continue;
    double k = 0;
    for (auto& st : rc.stages) cstage[st.name].push_back(st.seconds), k += st.name == "gather+container" ? 0 : st.seconds;
    ck.push_back(k);
    ce.push_back(tc);
    k = 0;
    for (auto& st : rd.stages) dstage[st.name].push_back(st.seconds), k += st.name == "copy to device" ? 0 : st.seconds;
    dk.push_back(k);
    de.push_back(td);
  }
  const double bytes = double(n) * 4;
  const double ratio = bytes / double(stream.size());
  const double q = psnr<Space>(space, field, out);
  std::printf("[%s] backend %s  dims %s  f32 %s  REL %g  reps %d  concurrency %d\n", label, Space::name(),
              d.str().c_str(), a.kind.c_str(), a.rel, a.reps, int(Space::concurrency()));
  std::printf("ratio %.3f  PSNR %.2f dB\n", ratio, q);
  auto row = [&](const char* what, double t) { std::printf("  %-34s %10.3f ms %9.2f GB/s\n", what, t * 1e3, bytes / t / 1e9); };
  std::printf("compress stages (median):\n");
  for (auto& [k, v] : cstage) row(k.c_str(), median(v));
  std::printf("decompress stages (median):\n");
  for (auto& [k, v] : dstage) row(k.c_str(), median(v));
  row("COMPRESS kernels (device-resident)", median(ck));
  row("COMPRESS end to end (to host stream)", median(ce));
  row("DECOMPRESS kernels (device-resident)", median(dk));
  row("DECOMPRESS end to end (from host stream)", median(de));
  if (!a.json.empty()) {
    std::ofstream j(a.json + "." + label + ".json");
    j << "{\"bench\":\"" << label << "\",\"psnr\":" << q << ",\"backend\":\"" << Space::name() << "\",\"dims\":\"" << d.str() << "\",\"kind\":\""
      << a.kind << "\",\"rel\":" << a.rel << ",\"ratio\":" << ratio << ",\"version\":\"" << version_string()
      << "\",\"compress_kernels_gbps\":" << bytes / median(ck) / 1e9
      << ",\"compress_e2e_gbps\":" << bytes / median(ce) / 1e9
      << ",\"decompress_kernels_gbps\":" << bytes / median(dk) / 1e9
      << ",\"decompress_e2e_gbps\":" << bytes / median(de) / 1e9 << ",\"stages\":{";
    bool first = true;
    for (auto* m : {&cstage, &dstage})
      for (auto& [k, v] : *m) {
        j << (first ? "" : ",") << "\"" << (m == &cstage ? "c:" : "d:") << k << "\":" << median(v);
        first = false;
      }
    j << "}}\n";
  }
  return {ratio, q, median(ck), median(ce), median(dk), median(de)};
}

template <class Space>
int bench_both(const Space& space, const Args& a) {
  const Result l = bench<Space, pipeline::LorenzoPipeline<Space>>(space, a, PredictorId::Lorenzo, "lorenzo");
  const Result i = bench<Space, pipeline::InterpPipeline<Space>>(space, a, PredictorId::Interp, "interp");
  std::printf("interp/lorenzo: ratio %.3f  compress kernels %.3f  decompress kernels %.3f  (target: compress >= 0.7)\n",
              i.ratio / l.ratio, l.ck / i.ck, l.dk / i.dk);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  Kokkos::ScopeGuard g(argc, argv);
  try {
    return with_backend(parse_backend(a.backend), [&](auto space) { return bench_both(space, a); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_interp: %s\n", e.what());
    return 1;
  }
}
