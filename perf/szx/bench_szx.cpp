// SZx pipeline throughput (szx-ultrafast), data resident in the backend's memory.
//   bench_szx [--backend cuda] [--dims 512,512,512[/...]] [--kind turbulent,smooth] [--rel 1e-3[,...]]
//             [--block 128[,...]] [--input FILE --dtype f32|f64 --dims N] [--reps 5] [--resident]
//             [--json F] [--csv F]
// Per configuration: median per stage and totals (kernels = stages on resident
// data; end to end = device data -> host stream -> device data), peak device
// memory, and the bound checked on every element (exit status 3 if violated).
// --resident: also the device stages back to back, input and stream staying
// in the backend's memory (SzxPipeline::encode, and decode of a stream
// uploaded once), as a device-resident user runs them between other device
// work; each call of the measured loop above follows milliseconds of host
// work (its gather, the stream's upload), after which the GPU's first
// microseconds run slower (perf/NOTES.md, twenty-seventh round). Reported
// beside the figures above (resident_*), the decoded field's bound checked
// again.
#include "perf/common/harness.hpp"
#include "src/pipeline/szx_pipeline.hpp"
#if defined(KSZ_HAVE_CUDA)
#include "cuda_specializations/cuda_specializations.hpp"
#endif

namespace {

using namespace ksz;

// Medians of `reps` back-to-back runs of each direction's device stages, into
// r.extra; returns the line to print.
template <class Space, class T>
std::string measure_resident(const Space& space, const perf::Field<Space, T>& f, const Options& opt, int reps,
                      perf::Result& r) {
  using P = pipeline::SzxPipeline<Space>;
  using Mem = typename Space::memory_space;
  const Kokkos::View<const T*, Mem> in = f.data;
  Report rc0;
  const Bytes stream = P::template compress<T>(space, in, f.dims, opt, &rc0);
  const container::Parsed parsed = container::read(stream.data(), stream.size());
  const auto resident = P::template upload<T>(space, parsed);
  Kokkos::View<T*, Mem> out;
  const auto total = [](const Report& rep) {
    double s = 0;
    for (auto& st : rep.stages) s += st.seconds;
    return s;
  };
  std::vector<double> ck, dk;
  for (int i = 0; i < reps + 1; ++i) {  // the first of each untimed
    Report rc;
    P::template encode<T>(space, in, f.dims, opt, &rc);
    if (i > 0) ck.push_back(total(rc));
  }
  for (int i = 0; i < reps + 1; ++i) {
    Report rd;
    P::template decode<T>(space, resident, out, &rd);
    if (i > 0) dk.push_back(total(rd));
  }
  const perf::BoundCheck check =
      perf::check_bound<Space, T>(space, in, out, rc0.abs_bound, rc0.value_min, rc0.value_max);
  if (check.violations != 0) r.check = check;  // a resident decode that broke the bound fails the run
  const double cs = perf::median(ck), ds = perf::median(dk);
  r.extra.emplace_back("resident_compress_seconds", perf::jnum(cs));
  r.extra.emplace_back("resident_compress_gbps", perf::jnum(r.gbps(cs)));
  r.extra.emplace_back("resident_decompress_seconds", perf::jnum(ds));
  r.extra.emplace_back("resident_decompress_gbps", perf::jnum(r.gbps(ds)));
  char line[256];
  std::snprintf(line, sizeof line,
                "  back to back, device-resident (median of %d): compress %.1f us %.1f GB/s, decompress %.1f us "
                "%.1f GB/s; bound %s\n",
                reps, cs * 1e6, r.gbps(cs), ds * 1e6, r.gbps(ds), check.held() ? "held" : "VIOLATED");
  return line;
}

// REL on CUDA: how many compressions since construction coded under a
// sample's bound and kept their bytes (cuda_spec::szx_speculation); note()
// adds them to r and returns the line to print ("" where none speculated, and
// on every other backend).
class SpeculationCount {
 public:
#if defined(KSZ_HAVE_CUDA)
  SpeculationCount() : m_before(cuda_spec::szx_speculation_counts()) {}
  std::string note(perf::Result& r) const {
    const cuda_spec::SzxSpeculation after = cuda_spec::szx_speculation_counts();
    if (after.tried == m_before.tried) return "";
    const unsigned long long tried = after.tried - m_before.tried, held = after.held - m_before.held;
    r.extra.emplace_back("speculation_tried", std::to_string(tried));
    r.extra.emplace_back("speculation_held", std::to_string(held));
    char line[160];
    std::snprintf(line, sizeof line, "  REL speculation: %llu of %llu compressions kept the sample's bound's bytes\n",
                  held, tried);
    return line;
  }

 private:
  cuda_spec::SzxSpeculation m_before;
#else
  std::string note(perf::Result&) const { return ""; }
#endif
};

}  // namespace

int main(int argc, char** argv) {
  using namespace ksz;
  return perf::bench_main(
      argc, argv, "bench_szx", "512,512,512", "1e-3",
      [](const auto& space, const perf::Common& c, const perf::Args& a, perf::Output& out) {
        using Space = std::decay_t<decltype(space)>;
        const auto blocks = a.list("block", "128");
        const bool resident = a.has("resident");
        a.finish("[--block 128[,64,...]] [--resident] " + std::string(perf::Common::usage));
        c.for_each_field(space, [&](const auto& f) {
          for (auto& blk : blocks)
            for (double b : c.bounds) {
              Options opt = c.options(b);
              opt.predictor = PredictorId::SZx;
              opt.szx_block = std::uint32_t(std::stoul(blk));
              const SpeculationCount spec;
              perf::Result r = perf::measure<pipeline::SzxPipeline<Space>>(space, f, opt, c.reps, c.track_memory,
                                                                            "szx", "szx b" + blk);
              r.extra.emplace_back("block", blk);
              const std::string line = resident ? measure_resident(space, f, opt, c.reps, r) : "";
              const std::string spec_line = spec.note(r);
              out.add(r);
              std::printf("%s%s", line.c_str(), spec_line.c_str());
            }
        });
      });
}
