// The classic (ParaSZ) pipeline: the bound on every element, identical bytes
// for every thread count, checkWidth and progress control, and hostile streams.
#include <gtest/gtest.h>

#include "src/api/ksz.hpp"
#include "src/cpu_baseline/classic_pipeline.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

const std::vector<std::vector<std::uint64_t>> kShapes = {
    {1}, {1, 1, 1}, {3, 1, 7}, {1023}, {257, 129}, {33, 17, 9}, {5, 6, 7, 3}, {1, 1, 4097}, {2, 300}, {300, 2, 3}};

template <class T>
Bytes classic(const std::vector<T>& in, const Dims& d, ErrorMode m, double e,
              std::uint32_t threads = 1, std::uint32_t width = 384, Report* rep = nullptr) {
  Options opt;
  opt.mode = m;
  opt.bound = e;
  opt.classic = true;
  opt.threads = threads;
  opt.check_width = width;
  return compress(in.data(), sizeof(T) == 8 ? DType::F64 : DType::F32, d, opt, rep);
}

template <class T>
void round_trip(Pattern p, const Dims& d, ErrorMode m, double e) {
  const auto in = make_field<T>(p, d);
  Report rep;
  const auto stream = classic(in, d, m, e, 2, 64, &rep);
  EXPECT_EQ(inspect(stream.data(), stream.size()).predictor, PredictorId::ClassicLorenzo);
  const Field f = decompress(stream.data(), stream.size());
  ASSERT_EQ(f.bytes.size(), in.size() * sizeof(T));
  if (m == ErrorMode::ABS) EXPECT_EQ(rep.abs_bound, e);
  EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const T*>(f.bytes.data()), in.size(), rep.abs_bound))
      << name(p) << " " << d.str() << " " << to_string(m) << " " << e;
}

TEST(ClassicPipeline, BoundOnEveryElementF32) {
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Constant, Pattern::Spiky, Pattern::Fill})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL})
        for (double e : {1e-2, 1e-4}) round_trip<float>(p, dims_of(s), m, e);
}

TEST(ClassicPipeline, BoundOnEveryElementF64) {
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Spiky, Pattern::Fill, Pattern::Ramp})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL})
        for (double e : {1e-3, 1e-7}) round_trip<double>(p, dims_of(s), m, e);
}

TEST(ClassicPipeline, NonFiniteAndTinyBounds) {
  const Dims d = dims_of({40, 30});
  auto in = make_field<float>(Pattern::Smooth, d);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  in[5] = std::numeric_limits<float>::infinity();
  in[77] = -std::numeric_limits<float>::infinity();
  in[100] = std::numeric_limits<float>::max();
  in[101] = std::numeric_limits<float>::denorm_min();
  for (double e : {1e-30, 1e-9, 1.0, 1e30}) {
    Report rep;
    const auto stream = classic(in, d, ErrorMode::ABS, e, 2, 3, &rep);
    const Field f = decompress(stream.data(), stream.size());
    EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const float*>(f.bytes.data()), in.size(), e)) << e;
    EXPECT_GE(rep.verbatim, 3u);
  }
}

// The paper's promise made exact: the same bytes for every thread count.
TEST(ClassicPipeline, SameBytesForEveryThreadCount) {
  const std::vector<std::vector<std::uint64_t>> shapes = {{1000}, {129, 65}, {37, 23, 11}, {7, 300}, {5, 6, 7, 3}, {3, 2, 40}};
  for (const auto& s : shapes)
    for (Pattern p : {Pattern::Noisy, Pattern::Fill}) {
      const Dims d = dims_of(s);
      const auto in = make_field<float>(p, d);
      const auto ref = classic(in, d, ErrorMode::REL, 1e-4, 1);
      const Field fref = decompress(ref.data(), ref.size());
      for (auto wait : {cpu_baseline::WaitMode::Spin, cpu_baseline::WaitMode::CondVar}) {
        cpu_baseline::set_wait_mode(wait);
        for (std::uint32_t t : {1u, 2u, 3u, 4u, 8u})
          for (std::uint32_t w : {3u, 384u}) {
            const auto mine = classic(in, d, ErrorMode::REL, 1e-4, t, w);
            EXPECT_TRUE(mine == ref) << d.str() << " " << name(p) << " threads " << t << " width " << w;
          }
      }
      cpu_baseline::set_wait_mode(cpu_baseline::WaitMode::Spin);
      // Decoding is pipelined the same way (threads from OMP_NUM_THREADS).
      for (const char* t : {"1", "3", "8"}) {
        ::setenv("OMP_NUM_THREADS", t, 1);
        const Field f = decompress(ref.data(), ref.size());
        EXPECT_TRUE(f.bytes == fref.bytes) << d.str() << " decode threads " << t;
      }
      ::setenv("OMP_NUM_THREADS", "2", 1);
    }
}

TEST(ClassicPipeline, PredictsFromReconstructedValues) {
  // A smooth 3D field must compress well: catches a predictor that stopped predicting.
  const Dims d = dims_of({48, 48, 48});
  const auto in = make_field<float>(Pattern::Smooth, d);
  Report rep;
  const auto stream = classic(in, d, ErrorMode::REL, 1e-3, 2, 384, &rep);
  EXPECT_GT(double(in.size() * 4) / double(stream.size()), 8.0);
  EXPECT_LT(rep.verbatim, 16u);  // the first elements of the field, predicted from zeros
}

TEST(ClassicPipeline, HostileStreams) {
  const Dims d = dims_of({60, 50});
  auto in = make_field<float>(Pattern::Spiky, d);
  in[3] = std::numeric_limits<float>::quiet_NaN();
  const auto good = classic(in, d, ErrorMode::ABS, 1e-3, 2);
  // Every truncation is refused.
  for (std::size_t cut = 0; cut < good.size(); cut += 1 + cut / 7) {
    EXPECT_THROW(decompress(good.data(), cut), CorruptStream) << "cut " << cut;
  }
  // Any flipped byte is refused (checksums) or decodes to a full field; never a crash.
  for (std::size_t pos = 0; pos < good.size(); pos += 1 + pos / 5) {
    auto bad = good;
    bad[pos] ^= 0x5A;
    try {
      const Field f = decompress(bad.data(), bad.size());
      EXPECT_EQ(f.bytes.size(), in.size() * 4);
    } catch (const CorruptStream&) {
    }
  }
}

TEST(ClassicPipeline, RejectsBadArguments) {
  const Dims d = dims_of({10, 10});
  const auto in = make_field<float>(Pattern::Smooth, d);
  Options opt;
  opt.classic = true;
  opt.check_width = 0;
  EXPECT_THROW(compress(in.data(), DType::F32, d, opt), InvalidInput);
  opt.check_width = 384;
  opt.predictor = PredictorId::SZx;
  EXPECT_THROW(compress(in.data(), DType::F32, d, opt), InvalidInput);
}

}  // namespace
}  // namespace ksz::test
