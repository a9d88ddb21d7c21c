// SZx pipeline throughput (szx-ultrafast), data resident in the backend's memory.
//   bench_szx [--dims 512,512,512] [--rel 1e-3] [--block 128] [--reps 5] [--backend cuda]
//                 [--kind turbulent] [--json out.json]
// Reports the median over reps of: kernels (stages only, what cuSZ reports)
// and end to end (including the segment copies and container assembly).
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "portable/generate/field.hpp"
#include "src/api/ksz.hpp"
#include "src/container/container.hpp"
#include "src/pipeline/szx_pipeline.hpp"

namespace {

using namespace ksz;

struct Args {
  std::vector<std::uint64_t> dims{512, 512, 512};
  double rel = 1e-3;
  std::uint32_t block = 128;
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
    else if (k == "--block") a.block = std::uint32_t(std::stoul(v));
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

template <class Space>
int bench(const Space& space, const Args& a) {
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
  opt.predictor = PredictorId::SZx;
  opt.szx_block = a.block;

  using P = pipeline::SzxPipeline<Space>;
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
  // Not timed: the bound on every element, so a fast wrong result cannot pass.
  const double abs_bound = container::read(stream.data(), stream.size()).header.abs_bound;
  double max_err = 0;
  const Kokkos::View<const float*, Mem> fin = field, fout = out;
  Kokkos::parallel_reduce(
      "bench::max_err", Kokkos::RangePolicy<Space>(space, 0, n),
      KOKKOS_LAMBDA(const std::uint64_t i, double& m) {
        const double e = ::fabs(double(fin(i)) - double(fout(i)));
        if (!(e <= m)) m = e;
      },
      Kokkos::Max<double>(max_err));
  const bool held = max_err <= abs_bound;
  const double bytes = double(n) * 4;
  const double ratio = bytes / double(stream.size());
  std::printf("backend %s  dims %s  f32 %s  REL %g  reps %d  concurrency %d\n", Space::name(), d.str().c_str(),
              a.kind.c_str(), a.rel, a.reps, int(Space::concurrency()));
  std::printf("ratio %.3f  block %u  max abs error %.6g  bound %.6g  %s\n", ratio, a.block, max_err, abs_bound,
              held ? "bound held on every element" : "BOUND VIOLATED");
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
    std::ofstream j(a.json);
    j << "{\"bench\":\"szx\",\"block\":" << a.block << ",\"max_abs_error\":" << max_err << ",\"abs_bound\":" << abs_bound << ",\"bound_held\":" << (held ? "true" : "false") << ",\"backend\":\"" << Space::name() << "\",\"dims\":\"" << d.str() << "\",\"kind\":\""
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
  return held ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  Kokkos::ScopeGuard g(argc, argv);
  try {
    return with_backend(parse_backend(a.backend), [&](auto space) { return bench(space, a); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_szx: %s\n", e.what());
    return 1;
  }
}
