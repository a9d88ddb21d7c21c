// The cuSZ pipeline end to end: the error bound on every element for every
// pattern, shape, type and mode; identical bytes across backends.
#include <gtest/gtest.h>

#include <cmath>

#include "src/api/ksz.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"

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
