// G-Interp (cuSZ-i) pipeline throughput and ratio beside the Lorenzo
// pipeline's, data resident in the backend's memory, same field, same bound.
//   bench_interp [--backend cuda] [--dims 512,512,512[/...]] [--kind turbulent,smooth] [--rel 1e-3[,...]]
//                [--input FILE --dtype f32|f64 --dims X,Y,Z] [--reps 5] [--json F] [--csv F]
// Prints both pipelines' figures (stages, totals, PSNR, peak device memory,
// bound on every element) and interp/lorenzo ratio and compression throughput
// (issue 7 target: >= 0.7).
#include "perf/common/harness.hpp"
#include "src/pipeline/interp_pipeline.hpp"
#include "src/pipeline/lorenzo_pipeline.hpp"

int main(int argc, char** argv) {
  using namespace ksz;
  return perf::bench_main(
      argc, argv, "bench_interp", "512,512,512", "1e-3",
      [](const auto& space, const perf::Common& c, const perf::Args& a, perf::Output& out) {
        using Space = std::decay_t<decltype(space)>;
        a.finish(perf::Common::usage);
        c.for_each_field(space, [&](const auto& f) {
          for (double b : c.bounds) {
            Options opt = c.options(b);
            const perf::Result l = perf::measure<pipeline::LorenzoPipeline<Space>>(space, f, opt, c.reps,
                                                                                   c.track_memory, "interp", "lorenzo");
            out.add(l);
            opt.predictor = PredictorId::Interp;
            perf::Result i = perf::measure<pipeline::InterpPipeline<Space>>(space, f, opt, c.reps, c.track_memory,
                                                                            "interp", "interp");
            i.extra.emplace_back("vs_lorenzo_ratio", perf::jnum(i.ratio / l.ratio));
            i.extra.emplace_back("vs_lorenzo_compress_kernels", perf::jnum(l.c.kernels / i.c.kernels));
            i.extra.emplace_back("vs_lorenzo_decompress_kernels", perf::jnum(l.d.kernels / i.d.kernels));
            out.add(i);
            std::printf("interp/lorenzo: ratio %.3f  compress kernels %.3f  decompress kernels %.3f  "
                        "(target: compress >= 0.7)\n",
                        i.ratio / l.ratio, l.c.kernels / i.c.kernels, l.d.kernels / i.d.kernels);
          }
        });
      });
}
