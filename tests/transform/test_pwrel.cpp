// Point-wise relative bounds: |x - x'| <= e|x| on every element (zeros exactly
// zero, signs kept, tiny/huge/subnormal magnitudes, fill values, NaN/Inf),
// through the dual-quantization pipeline on every backend and through the
// classic pipeline; identical bytes across backends; hostile streams.
#include <gtest/gtest.h>

#include "portable/transform/log_transform.hpp"
#include "src/api/ksz.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

template <class T>
::testing::AssertionResult within_pw(const T* a, const T* b, std::uint64_t n, double e) {
  std::uint64_t bad = 0;
  std::string first;
  for (std::uint64_t i = 0; i < n; ++i) {
    bool ok;
    if (std::isnan(a[i])) ok = std::isnan(b[i]);
    else if (std::isinf(a[i])) ok = a[i] == b[i];
    else if (a[i] == 0) ok = b[i] == 0 && std::signbit(a[i]) == std::signbit(b[i]);
    else
      ok = std::fabs(static_cast<long double>(a[i]) - static_cast<long double>(b[i])) <=
           static_cast<long double>(e) * std::fabs(static_cast<long double>(a[i]));
    if (!ok && bad++ < 3)
      first += " [" + std::to_string(i) + "] " + std::to_string(double(a[i])) + " -> " + std::to_string(double(b[i]));
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << n << " elements exceed e|x|, e = " << e << ":" << first;
}

// A field with everything PW_REL must survive.
template <class T>
std::vector<T> hard_field(const Dims& d, std::uint32_t seed) {
  auto v = make_field<T>(Pattern::Noisy, d, seed);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (rng() % 23) {
      case 0: v[i] = T(0); break;
      case 1: v[i] = -v[i]; break;
      case 2: v[i] = T(-0.0); break;
      case 3: v[i] = T(v[i] * T(1e-30)); break;
      case 4: v[i] = T(1e20); break;  // fill value
      case 5: v[i] = std::numeric_limits<T>::denorm_min() * T(rng() % 5 + 1); break;
      case 6: v[i] = std::numeric_limits<T>::max(); break;
      case 7: v[i] = std::numeric_limits<T>::quiet_NaN(); break;
      case 8: v[i] = (rng() & 1) ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity(); break;
      case 9: v[i] = std::numeric_limits<T>::min(); break;
      default: break;
    }
  }
  return v;
}

template <class T>
void pw_round_trip(Backend b, bool classic, const std::vector<T>& in, const Dims& d, double e, const char* what) {
  Options opt;
  opt.mode = ErrorMode::PW_REL;
  opt.bound = e;
  opt.backend = b;
  opt.classic = classic;
  opt.threads = 3;
  opt.check_width = 7;
  const auto stream = compress(in.data(), sizeof(T) == 8 ? DType::F64 : DType::F32, d, opt);
  const StreamInfo info = inspect(stream.data(), stream.size());
  EXPECT_EQ(info.mode, ErrorMode::PW_REL);
  const Field f = decompress(stream.data(), stream.size(), b);
  ASSERT_EQ(f.bytes.size(), in.size() * sizeof(T));
  EXPECT_TRUE(within_pw(in.data(), reinterpret_cast<const T*>(f.bytes.data()), in.size(), e))
      << what << " " << d.str() << " e " << e << (classic ? " classic" : " dual");
}

TEST(LogTransform, InverseOfForward) {
  for (double x : {1e-300, 4.9e-324, 1e-10, 0.3, 1.0, 1.5, 2.0, 3.14159, 1e10, 1.7e308}) {
    const double y = transform::log2_det(x);
    EXPECT_NEAR(y, std::log2(x), 1e-12 * std::max(1.0, std::fabs(y))) << x;
    if (x > 1e-300) EXPECT_NEAR(transform::exp2_det(y) / x, 1.0, 1e-13) << x;
  }
  EXPECT_EQ(transform::exp2_det(-2000), 0.0);
  EXPECT_TRUE(std::isinf(transform::exp2_det(2000)));
}

template <class Space>
class PwRel : public ::testing::Test {};
TYPED_TEST_SUITE(PwRel, ExecSpaces, ExecSpaceName);

const std::vector<std::vector<std::uint64_t>> kShapes = {{1}, {1023}, {257, 129}, {33, 17, 9}, {5, 6, 7, 3}};

TYPED_TEST(PwRel, BoundOnEveryElementDual) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (double e : {1e-2, 1e-3, 1e-4}) {
      const Dims d = dims_of(s);
      pw_round_trip<float>(b, false, hard_field<float>(d, 3), d, e, "hard f32");
      pw_round_trip<double>(b, false, hard_field<double>(d, 4), d, e, "hard f64");
      pw_round_trip<float>(b, false, make_field<float>(Pattern::Smooth, d), d, e, "smooth f32");
    }
  const Dims d = dims_of({40, 30});
  for (double e : {1e-7, 1e-12, 0.5, 0.999})
    pw_round_trip<double>(b, false, hard_field<double>(d, 5), d, e, "extreme bound");
  pw_round_trip<float>(b, false, std::vector<float>(1200, 0.0f), d, 1e-3, "all zero");
  pw_round_trip<float>(b, false, std::vector<float>(1200, -2.5f), d, 1e-3, "all negative");
}

TYPED_TEST(PwRel, BoundOnEveryElementClassic) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (double e : {1e-2, 1e-4}) {
      const Dims d = dims_of(s);
      pw_round_trip<float>(b, true, hard_field<float>(d, 6), d, e, "hard f32");
      pw_round_trip<double>(b, true, hard_field<double>(d, 7), d, e, "hard f64");
    }
}

TYPED_TEST(PwRel, SameBytesAsSerial) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes) {
    const Dims d = dims_of(s);
    const auto in = hard_field<float>(d, 9);
    Options opt;
    opt.mode = ErrorMode::PW_REL;
    opt.bound = 1e-3;
    opt.backend = b;
    const auto mine = compress(in.data(), DType::F32, d, opt);
    opt.backend = Backend::Serial;
    const auto ref = compress(in.data(), DType::F32, d, opt);
    EXPECT_TRUE(mine == ref) << d.str() << ": " << to_string(b) << " bytes differ from serial";
    const Field fa = decompress(mine.data(), mine.size(), Backend::Serial);
    const Field fb = decompress(ref.data(), ref.size(), b);
    EXPECT_TRUE(fa.bytes == fb.bytes);
  }
}

TYPED_TEST(PwRel, SmoothPositiveFieldCompresses) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({48, 48, 48});
  const auto in = make_field<float>(Pattern::Smooth, d);
  Options opt;
  opt.mode = ErrorMode::PW_REL;
  opt.bound = 1e-3;
  opt.backend = b;
  Report rep;
  const auto stream = compress(in.data(), DType::F32, d, opt, &rep);
  EXPECT_GT(double(in.size() * 4) / double(stream.size()), 6.0);
  EXPECT_LT(rep.verbatim, in.size() / 1000);
}

TYPED_TEST(PwRel, HostileStreams) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({30, 20});
  const auto in = hard_field<float>(d, 11);
  for (bool classic : {false, true}) {
    Options opt;
    opt.mode = ErrorMode::PW_REL;
    opt.bound = 1e-3;
    opt.backend = b;
    opt.classic = classic;
    const auto good = compress(in.data(), DType::F32, d, opt);
    for (std::size_t cut = 0; cut < good.size(); cut += 1 + cut / 5)
      EXPECT_THROW(decompress(good.data(), cut, b), CorruptStream) << "cut " << cut;
    for (std::size_t pos = 0; pos < good.size(); pos += 1 + pos / 4) {
      auto bad = good;
      bad[pos] ^= 0xA5;
      try {
        const Field f = decompress(bad.data(), bad.size(), b);
        EXPECT_EQ(f.bytes.size(), in.size() * 4);
      } catch (const CorruptStream&) {
      }
    }
  }
}

TEST(PwRelArgs, BoundMustBeBelowOne) {
  const Dims d = dims_of({10});
  std::vector<float> in(10, 1.0f);
  Options opt;
  opt.mode = ErrorMode::PW_REL;
  for (double e : {1.0, 2.0, 0.0, -1e-3}) {
    opt.bound = e;
    EXPECT_THROW(compress(in.data(), DType::F32, d, opt), InvalidInput) << e;
  }
}

}  // namespace
}  // namespace ksz::test
