// Lorenzo pipeline throughput, data resident in the backend's memory.
//   bench_lorenzo [--backend cuda] [--dims 512,512,512[/...]] [--kind turbulent,smooth] [--rel 1e-4[,...]]
//                 [--input FILE --dtype f32|f64 --dims X,Y,Z] [--reps 5] [--json F] [--csv F]
// Per configuration: median per stage and totals (kernels = stages on resident
// data, what cuSZ reports; end to end = device data -> host stream -> device
// data), peak device memory, and the bound checked on every element.
// KSZ_PORTABLE_ONLY=1 switches the CUDA specializations off (portable vs specialized).
#include "perf/common/harness.hpp"
#include "src/pipeline/lorenzo_pipeline.hpp"

int main(int argc, char** argv) {
  using namespace ksz;
  return perf::bench_main(argc, argv, "bench_lorenzo", "512,512,512", "1e-4",
                          [](const auto& space, const perf::Common& c, const perf::Args& a, perf::Output& out) {
                            using Space = std::decay_t<decltype(space)>;
                            a.finish(perf::Common::usage);
                            c.for_each_field(space, [&](const auto& f) {
                              for (double b : c.bounds)
                                out.add(perf::measure<pipeline::LorenzoPipeline<Space>>(
                                    space, f, c.options(b), c.reps, c.track_memory, "lorenzo", "lorenzo"));
                            });
                          });
}
