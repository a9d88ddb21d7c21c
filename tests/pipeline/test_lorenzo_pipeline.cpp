// The cuSZ pipeline end to end: the error bound on every element for every
// pattern, shape, type and mode; identical bytes across backends.
#include <gtest/gtest.h>

#include <cmath>

#include "portable/encode/huffman/huffman.hpp"
#include "src/api/ksz.hpp"
#include "src/container/container.hpp"
#include "src/pipeline/pipeline_common.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"
#include "tests/common/stream_parts.hpp"

namespace ksz::test {
namespace {

template <class Space>
class LorenzoPipeline : public ::testing::Test {};
TYPED_TEST_SUITE(LorenzoPipeline, ExecSpaces, ExecSpaceName);

const std::vector<std::vector<std::uint64_t>> kShapes = {
    {1}, {1, 1, 1}, {3, 1, 7}, {1023}, {100000}, {257, 129}, {33, 17, 9}, {64, 64, 64}, {5, 6, 7, 3}, {1, 1, 4097}};

template <class T>
void round_trip(Backend b, Pattern p, const Dims& d, ErrorMode mode, double bound) {
  const auto in = make_field<T>(p, d);
  Options opt;
  opt.mode = mode;
  opt.bound = bound;
  opt.backend = b;
  Report rep;
  const auto stream = compress(in.data(), sizeof(T) == 8 ? DType::F64 : DType::F32, d, opt, &rep);
  const Field f = decompress(stream.data(), stream.size(), b);
  ASSERT_EQ(f.dims.count(), d.count());
  ASSERT_EQ(f.bytes.size(), in.size() * sizeof(T));
  const double abs_bound = rep.abs_bound;
  if (mode == ErrorMode::ABS) EXPECT_EQ(abs_bound, bound);
  EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const T*>(f.bytes.data()), in.size(), abs_bound))
      << name(p) << " " << d.str() << " mode " << to_string(mode) << " bound " << bound;
}

TYPED_TEST(LorenzoPipeline, BoundOnEveryElementF32) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Constant, Pattern::Spiky, Pattern::Fill})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL})
        for (double e : {1e-2, 1e-4}) round_trip<float>(b, p, dims_of(s), m, e);
}

TYPED_TEST(LorenzoPipeline, BoundOnEveryElementF64) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Spiky, Pattern::Fill, Pattern::Ramp})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL})
        for (double e : {1e-3, 1e-7}) round_trip<double>(b, p, dims_of(s), m, e);
}

TYPED_TEST(LorenzoPipeline, TinyBoundsAndNonFinite) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({40, 30});
  auto in = make_field<float>(Pattern::Smooth, d);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  in[5] = std::numeric_limits<float>::infinity();
  in[77] = -std::numeric_limits<float>::infinity();
  in[100] = std::numeric_limits<float>::max();
  in[101] = std::numeric_limits<float>::denorm_min();
  for (double e : {1e-30, 1e-9, 1.0, 1e30}) {
    Options opt;
    opt.mode = ErrorMode::ABS;
    opt.bound = e;
    opt.backend = b;
    Report rep;
    const auto stream = compress(in.data(), DType::F32, d, opt, &rep);
    const Field f = decompress(stream.data(), stream.size(), b);
    EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const float*>(f.bytes.data()), in.size(), e)) << e;
    EXPECT_GE(rep.verbatim, 3u);
  }
}

TYPED_TEST(LorenzoPipeline, SmallRadiusForcesOutliers) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({50, 20, 10});
  const auto in = make_field<float>(Pattern::Noisy, d);
  for (std::uint32_t r : {1u, 2u, 16u, 32768u}) {
    Options opt;
    opt.mode = ErrorMode::REL;
    opt.bound = 1e-4;
    opt.radius = r;
    opt.backend = b;
    Report rep;
    const auto stream = compress(in.data(), DType::F32, d, opt, &rep);
    const Field f = decompress(stream.data(), stream.size(), b);
    EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const float*>(f.bytes.data()), in.size(), rep.abs_bound))
        << "radius " << r;
    if (r <= 2) EXPECT_GT(rep.outliers, in.size() / 2);
  }
}

TYPED_TEST(LorenzoPipeline, RelBoundIsRangeRelative) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({100, 100});
  const auto in = make_field<double>(Pattern::Smooth, d);
  Options opt;
  opt.mode = ErrorMode::REL;
  opt.bound = 1e-3;
  opt.backend = b;
  Report rep;
  compress(in.data(), DType::F64, d, opt, &rep);
  double lo = in[0], hi = in[0];
  for (double v : in) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_DOUBLE_EQ(rep.abs_bound, 1e-3 * (hi - lo));
}

TYPED_TEST(LorenzoPipeline, SameBytesAsSerial) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Fill}) {
      const Dims d = dims_of(s);
      const auto in = make_field<float>(p, d);
      Options opt;
      opt.bound = 1e-4;
      opt.backend = b;
      const auto mine = compress(in.data(), DType::F32, d, opt);
      opt.backend = Backend::Serial;
      const auto ref = compress(in.data(), DType::F32, d, opt);
      EXPECT_TRUE(mine == ref) << name(p) << " " << d.str() << ": " << to_string(b) << " bytes differ from serial";
      // and decoding on one backend what another encoded gives the same values
      const Field fa = decompress(mine.data(), mine.size(), Backend::Serial);
      const Field fb = decompress(ref.data(), ref.size(), b);
      EXPECT_TRUE(fa.bytes == fb.bytes);
    }
}

TYPED_TEST(LorenzoPipeline, SignedZeroEndsAreCanonical) {
  // The range's ends go into the header: with -0 and +0 both at the minimum
  // (or maximum) a reduction could keep either, depending on its schedule.
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({4099});
  for (float sign : {1.0f, -1.0f}) {
    std::vector<float> in(d.count());
    for (std::size_t i = 0; i < in.size(); ++i)
      in[i] = i % 3 == 0 ? (i % 2 ? 0.0f : -0.0f) : sign * (1.0f + float(i % 17));
    Options opt;
    opt.bound = 1e-3;
    opt.backend = b;
    Report rep;
    const auto mine = compress(in.data(), DType::F32, d, opt, &rep);
    EXPECT_FALSE(std::signbit(sign > 0 ? rep.value_min : rep.value_max)) << "range end kept a -0";
    opt.backend = Backend::Serial;
    EXPECT_TRUE(mine == compress(in.data(), DType::F32, d, opt)) << to_string(b) << " bytes differ from serial";
  }
}

TYPED_TEST(LorenzoPipeline, SmoothFieldsCompress) {
  // Not a speed test: a sanity floor that catches a predictor that stopped predicting.
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({64, 64, 64});
  const auto in = make_field<float>(Pattern::Smooth, d);
  Options opt;
  opt.bound = 1e-3;
  opt.backend = b;
  const auto stream = compress(in.data(), DType::F32, d, opt);
  EXPECT_GT(double(in.size() * 4) / double(stream.size()), 8.0);
}

// Format 1.2 sub-chunks: the default stream carries the run lengths (key 7,
// segment 8) and nothing else changes: same bitstream, same decoded bytes as
// a stream without them, for Lorenzo and interpolation, both dtypes.
TYPED_TEST(LorenzoPipeline, SubchunksChangeOnlyTheirSegment) {
  using container::Param;
  using container::SegmentId;
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({40, 50, 30});  // 60000 codes: 14 full chunks and a short one
  const auto in = make_field<float>(Pattern::Noisy, d);
  for (const PredictorId pred : {PredictorId::Lorenzo, PredictorId::Interp}) {
    Options opt;
    opt.bound = 1e-4;
    opt.backend = b;
    opt.predictor = pred;
    const auto with = compress(in.data(), DType::F32, d, opt);
    opt.huffman_subchunk = 0;
    const auto without = compress(in.data(), DType::F32, d, opt);
    Parts pw = split(with), po = split(without);
    ASSERT_TRUE(pw.has(SegmentId::HuffmanRunBits));
    ASSERT_FALSE(po.has(SegmentId::HuffmanRunBits));
    EXPECT_EQ(pw.h.u32(Param::HuffmanSubchunk), 512u);
    EXPECT_EQ(pw.seg(SegmentId::HuffmanRunBits).size(), 2u * (14 * 7 + (60000 - 14 * 4096 - 1) / 512));
    EXPECT_EQ(pw.seg(SegmentId::HuffmanWords), po.seg(SegmentId::HuffmanWords));
    EXPECT_EQ(pw.seg(SegmentId::HuffmanChunkOffsets), po.seg(SegmentId::HuffmanChunkOffsets));
    EXPECT_EQ(with.size(), without.size() + 8 + 32 + pw.seg(SegmentId::HuffmanRunBits).size());
    const Field fw = decompress(with.data(), with.size(), b), fo = decompress(without.data(), without.size(), b);
    EXPECT_EQ(fw.bytes, fo.bytes);

    auto expect_corrupt = [&](const Parts& p, const char* what) {
      const auto s = p.write();
      EXPECT_THROW(decompress(s.data(), s.size(), b), CorruptStream) << what;
    };
    {
      Parts p = pw;
      p.erase(SegmentId::HuffmanRunBits);
      expect_corrupt(p, "key without lengths");
    }
    {
      Parts p = pw;
      p.h.params.erase(std::uint16_t(Param::HuffmanSubchunk));
      expect_corrupt(p, "lengths without key");
    }
    for (const std::uint32_t sub : {0u, 256u, 4096u, 2731u}) {
      Parts p = pw;
      p.h.set_u32(Param::HuffmanSubchunk, sub);
      expect_corrupt(p, "sub-chunk size");
    }
    {
      Parts p = pw;
      p.seg(SegmentId::HuffmanRunBits).resize(p.seg(SegmentId::HuffmanRunBits).size() - 2);
      expect_corrupt(p, "one length short");
    }
    {
      Parts p = pw;
      p.seg(SegmentId::HuffmanRunBits)[6] ^= 1;  // run 3 of chunk 0 one bit longer or shorter
      expect_corrupt(p, "a length off by one bit");
    }
  }
}

// At high ratios the lengths of runs of 512 would be a large share of the
// stream: the writer stores runs of a multiple of 512 whose lengths are at
// most 1/32 of the other segments (else the fewest runs a chunk can have),
// each the sum of the runs it covers, so the bitstream and the decoded bytes
// are those of a stream without sub-chunks. At an ordinary ratio nothing
// changes (runs of 512).
TYPED_TEST(LorenzoPipeline, SubchunksGrowAtHighRatios) {
  using container::Param;
  using container::SegmentId;
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({64, 64, 48});  // 196608 codes: 48 chunks
  const std::uint64_t at512 = 2 * huffman::Runs(d.count(), 4096, 512).stored;
  for (const PredictorId pred : {PredictorId::Lorenzo, PredictorId::Interp}) {
    int unchanged = 0, under = 0, fewest = 0;  // which way each case went
    for (const auto& [p, e] : std::vector<std::pair<Pattern, double>>{
             {Pattern::Noisy, 1e-4}, {Pattern::Smooth, 1e-3}, {Pattern::Smooth, 1e-1}, {Pattern::Ramp, 1e-2},
             {Pattern::Constant, 1e-3}}) {
      SCOPED_TRACE(std::string(name(p)) + " " + std::to_string(e) + (pred == PredictorId::Lorenzo ? " lorenzo" : " interp"));
      const auto in = make_field<float>(p, d);
      Options opt;
      opt.bound = e;
      opt.backend = b;
      opt.predictor = pred;
      const auto with = compress(in.data(), DType::F32, d, opt);
      opt.huffman_subchunk = 0;
      const auto without = compress(in.data(), DType::F32, d, opt);
      const Parts pw = split(with), po = split(without);
      std::uint64_t rest = 0;
      for (const auto& sg : po.segs) rest += sg.second.size();
      ASSERT_TRUE(pw.has(SegmentId::HuffmanRunBits));
      const std::uint32_t sub = pw.h.u32(Param::HuffmanSubchunk);
      const std::uint64_t stored = huffman::Runs(d.count(), 4096, sub).stored;
      EXPECT_EQ(pw.seg(SegmentId::HuffmanRunBits).size(), 2 * stored);
      if (32 * at512 <= rest) {
        EXPECT_EQ(sub, 512u) << at512 << " bytes of lengths, " << rest << " else";
        ++unchanged;
      } else {
        EXPECT_EQ(sub % 512, 0u);
        EXPECT_GT(sub, 512u);
        if (32 * 2 * stored <= rest) {  // the smallest multiple under the budget
          if (sub > 1024) EXPECT_GT(32 * 2 * huffman::Runs(d.count(), 4096, sub - 512).stored, rest) << sub;
          ++under;
        } else {  // else the fewest runs below a chunk: 2 a chunk, 1 stored
          EXPECT_EQ(stored, 48u) << sub;
          EXPECT_EQ(sub, 2048u);
          ++fewest;
        }
      }
      EXPECT_EQ(pw.seg(SegmentId::HuffmanWords), po.seg(SegmentId::HuffmanWords));
      const Field fw = decompress(with.data(), with.size(), b), fo = decompress(without.data(), without.size(), b);
      EXPECT_EQ(fw.bytes, fo.bytes);  // (a reader checks every run's length)
    }
    EXPECT_GT(unchanged, 0);
    EXPECT_GT(under, 0);
    EXPECT_GT(fewest, 0);
  }
}

// The writer's sizing on its own: lengths within their budget stay at 512;
// over it, a small field takes the fewest runs, a big one no fewer than
// kFullRuns (GPU decoders stay full), a middling one stays; each merged length
// is the sum of the runs it covers.
TEST(SubchunkSizing, BudgetAndGpuRuns) {
  using namespace pipeline::impl;
  const auto lengths = [](std::uint64_t n) {
    std::vector<std::uint8_t> v(2 * huffman::Runs(n, 4096, 512).stored);
    for (std::size_t i = 0; i < v.size() / 2; ++i) v[2 * i] = std::uint8_t(100 + i % 7), v[2 * i + 1] = std::uint8_t(i % 3);
    return v;
  };
  const auto at = [](const std::vector<std::uint8_t>& v, std::uint64_t i) { return v[2 * i] | v[2 * i + 1] << 8; };
  {
    auto v = lengths(1 << 20);
    EXPECT_EQ(writer_subchunk(v, 1 << 20, 4096, 512, 32 * v.size()), 512u);  // at the budget
    EXPECT_EQ(v, lengths(1 << 20));
  }
  {
    const auto orig = lengths(1 << 20);
    auto v = orig;
    ASSERT_EQ(writer_subchunk(v, 1 << 20, 4096, 512, 1), 2048u);  // small: the fewest runs
    ASSERT_EQ(v.size(), 2u * (1 << 20) / 4096);
    for (std::uint64_t c = 0; c < (1 << 20) / 4096; ++c)
      EXPECT_EQ(at(v, c), at(orig, 7 * c) + at(orig, 7 * c + 1) + at(orig, 7 * c + 2) + at(orig, 7 * c + 3)) << c;
    auto w = orig;  // a budget that runs of 1024 (3 stored a chunk) meet and 512 do not
    EXPECT_EQ(writer_subchunk(w, 1 << 20, 4096, 512, 32 * 2 * 3 * 256), 1024u);
    EXPECT_EQ(at(w, 4), at(orig, 7 + 2) + at(orig, 7 + 3));  // chunk 1's second run of 1024
  }
  {
    auto v = lengths(std::uint64_t(1) << 25);  // 65536 runs of 512: fewer than kFullRuns at any longer size
    EXPECT_EQ(writer_subchunk(v, std::uint64_t(1) << 25, 4096, 512, 1), 512u);
  }
  {
    auto v = lengths(std::uint64_t(1) << 28);  // kFullRuns runs of 1024, fewer of 1536
    EXPECT_EQ(writer_subchunk(v, std::uint64_t(1) << 28, 4096, 512, 1), 1024u);
    EXPECT_EQ(v.size(), 2 * huffman::Runs(std::uint64_t(1) << 28, 4096, 1024).stored);
  }
  {
    auto v = lengths(5000);  // one chunk of 4096 and one of 904: runs of 2048 leave the second whole
    const auto orig = v;
    ASSERT_EQ(writer_subchunk(v, 5000, 4096, 512, 1), 2048u);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(at(v, 0), at(orig, 0) + at(orig, 1) + at(orig, 2) + at(orig, 3));
  }
}

TEST(LorenzoPipelineArgs, RejectsBadArguments) {
  std::vector<float> v(10, 1.f);
  Options opt;
  for (double e : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    opt.bound = e;
    EXPECT_THROW(compress(v.data(), DType::F32, dims_of({10}), opt), InvalidInput) << e;
  }
  opt.bound = 1e-3;
  EXPECT_THROW(compress(v.data(), DType::F32, dims_of({0}), opt), InvalidInput);
  EXPECT_THROW(compress(v.data(), DType::F32, dims_of({1u << 21, 1u << 21}), opt), InvalidInput);
  EXPECT_THROW(compress(nullptr, DType::F32, dims_of({10}), opt), InvalidInput);
  opt.radius = 32769;  // 0 is automatic (512 for Lorenzo); above 32768 has no codebook
  EXPECT_THROW(compress(v.data(), DType::F32, dims_of({10}), opt), InvalidInput);
  opt.radius = 0;
  opt.mode = ErrorMode::PW_REL;  // implemented: a point-wise bound must be below 1
  opt.bound = 1.5;
  EXPECT_THROW(compress(v.data(), DType::F32, dims_of({10}), opt), InvalidInput);
}

}  // namespace
}  // namespace ksz::test
