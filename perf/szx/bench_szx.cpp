// SZx pipeline throughput (szx-ultrafast), data resident in the backend's memory.
//   bench_szx [--backend cuda] [--dims 512,512,512[/...]] [--kind turbulent,smooth] [--rel 1e-3[,...]]
//             [--block 128[,...]] [--input FILE --dtype f32|f64 --dims N] [--reps 5] [--json F] [--csv F]
// Per configuration: median per stage and totals (kernels = stages on resident
// data; end to end = device data -> host stream -> device data), peak device
// memory, and the bound checked on every element (exit status 3 if violated).
#include "perf/common/harness.hpp"
#include "src/pipeline/szx_pipeline.hpp"

int main(int argc, char** argv) {
  using namespace ksz;
  return perf::bench_main(
      argc, argv, "bench_szx", "512,512,512", "1e-3",
      [](const auto& space, const perf::Common& c, const perf::Args& a, perf::Output& out) {
        using Space = std::decay_t<decltype(space)>;
        const auto blocks = a.list("block", "128");
        a.finish("[--block 128[,64,...]] " + std::string(perf::Common::usage));
        c.for_each_field(space, [&](const auto& f) {
          for (auto& blk : blocks)
            for (double b : c.bounds) {
              Options opt = c.options(b);
              opt.predictor = PredictorId::SZx;
              opt.szx_block = std::uint32_t(std::stoul(blk));
              perf::Result r = perf::measure<pipeline::SzxPipeline<Space>>(space, f, opt, c.reps, c.track_memory,
                                                                            "szx", "szx b" + blk);
              r.extra.emplace_back("block", blk);
              out.add(r);
            }
        });
      });
}
