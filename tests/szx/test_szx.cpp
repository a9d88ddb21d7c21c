// SZx end to end: the bound on every element for every pattern, block size,
// type and mode; constant, noisy and fill-value blocks; identical bytes on
// every backend; hostile streams rejected with CorruptStream.
#include <gtest/gtest.h>

#include <random>
#include <cstring>
#include <cmath>
#include <limits>
#include <fstream>
#include <sstream>

#include "portable/predict/szx/szx.hpp"
#include "src/api/ksz.hpp"
#include "src/container/container.hpp"
#include "src/pipeline/szx_pipeline.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"
#include "tests/common/stream_parts.hpp"

namespace ksz::test {
namespace {

template <class Space>
class Szx : public ::testing::Test {};
TYPED_TEST_SUITE(Szx, ExecSpaces, ExecSpaceName);

template <class T>
constexpr DType dt() {
  return sizeof(T) == 8 ? DType::F64 : DType::F32;
}

template <class T>
Bytes szx_round_trip(Backend b, const std::vector<T>& in, const Dims& d, ErrorMode mode, double bound,
                     std::uint32_t block, Report* rep_out = nullptr) {
  Options opt;
  opt.predictor = PredictorId::SZx;
  opt.mode = mode;
  opt.bound = bound;
  opt.backend = b;
  opt.szx_block = block;
  Report rep;
  auto stream = compress(in.data(), dt<T>(), d, opt, &rep);
  const Field f = decompress(stream.data(), stream.size(), b);
  EXPECT_EQ(f.dims.count(), d.count());
  EXPECT_EQ(f.bytes.size(), in.size() * sizeof(T));
  if (mode == ErrorMode::ABS) EXPECT_EQ(rep.abs_bound, bound);
  EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const T*>(f.bytes.data()), in.size(), rep.abs_bound))
      << d.str() << " mode " << to_string(mode) << " bound " << bound << " block " << block;
  if (rep_out) *rep_out = rep;
  return stream;
}

const std::vector<std::vector<std::uint64_t>> kShapes = {{1}, {1000}, {33, 17, 9}};

TYPED_TEST(Szx, BoundOnEveryElementF32) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Constant, Pattern::Spiky, Pattern::Fill, Pattern::Ramp})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL})
        for (double e : {1e-2, 1e-6}) {
          SCOPED_TRACE(name(p));
          szx_round_trip<float>(b, make_field<float>(p, dims_of(s)), dims_of(s), m, e, 128);
        }
}

TYPED_TEST(Szx, BoundOnEveryElementF64) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Constant, Pattern::Spiky, Pattern::Fill, Pattern::Ramp})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL})
        for (double e : {1e-3, 1e-14}) {
          SCOPED_TRACE(name(p));
          szx_round_trip<double>(b, make_field<double>(p, dims_of(s)), dims_of(s), m, e, 128);
        }
}

TYPED_TEST(Szx, BlockSizes) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({50, 41, 7});
  for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Fill})
    for (std::uint32_t block : {1u, 8u, 16u, 31u, 64u, 128u, 256u, 1000u, 1024u, 4096u}) {
      SCOPED_TRACE(name(p));
      szx_round_trip<float>(b, make_field<float>(p, d), d, ErrorMode::REL, 1e-3, block);
      szx_round_trip<double>(b, make_field<double>(p, d), d, ErrorMode::ABS, 1e-5, block);
    }
}

// A constant field is all constant blocks: one kind byte and one median each.
TYPED_TEST(Szx, ConstantBlocksAreOneMedian) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({128 * 1000});
  Report rep;
  const auto s = szx_round_trip<float>(b, make_field<float>(Pattern::Constant, d), d, ErrorMode::ABS, 1e-3, 128, &rep);
  const auto i = inspect(s.data(), s.size());
  EXPECT_EQ(i.predictor, PredictorId::SZx);
  EXPECT_LT(s.size(), 1000u * 5 + 1024);  // 5 bytes per block plus header and table
  EXPECT_EQ(rep.verbatim, 0u);
}

// A smooth field mostly compresses; a noisy one at a tight bound still holds it.
TYPED_TEST(Szx, SmoothFieldCompresses) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({64, 64, 32});
  const auto in = make_field<float>(Pattern::Smooth, d);
  const auto s = szx_round_trip<float>(b, in, d, ErrorMode::REL, 1e-3, 128);
  EXPECT_GT(double(in.size() * 4) / double(s.size()), 2.0);
}

// NaN, Inf, extreme and subnormal values: their blocks go verbatim, bit-exact.
TYPED_TEST(Szx, NonFiniteAndExtremeValues) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({40, 30});
  auto in = make_field<float>(Pattern::Smooth, d);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  in[300] = std::numeric_limits<float>::infinity();
  in[777] = -std::numeric_limits<float>::infinity();
  in[1000] = std::numeric_limits<float>::max();
  in[1001] = -std::numeric_limits<float>::max();
  in[1100] = std::numeric_limits<float>::denorm_min();
  for (double e : {1e-30, 1e-9, 1e-3, 1.0, 1e30, 1e300})
    for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL}) {
      Report rep;
      if (m == ErrorMode::REL && e > 1e200) {  // range x bound overflows: refused up front
        Options opt;
        opt.predictor = PredictorId::SZx;
        opt.mode = m;
        opt.bound = e;
        opt.backend = b;
        EXPECT_THROW(compress(in.data(), DType::F32, d, opt), InvalidInput);
        continue;
      }
      szx_round_trip<float>(b, in, d, m, e, 128, &rep);
      EXPECT_GE(rep.verbatim, 3u * 128u);
    }
  auto in64 = make_field<double>(Pattern::Ramp, d);
  in64[5] = std::numeric_limits<double>::quiet_NaN();
  in64[200] = std::numeric_limits<double>::max();
  in64[201] = -std::numeric_limits<double>::max();
  in64[600] = std::numeric_limits<double>::denorm_min();
  for (double e : {1e-300, 1e-12, 1.0, 1e300}) szx_round_trip<double>(b, in64, d, ErrorMode::ABS, e, 64);
}

// Same bytes as the Serial reference, compressing and decompressing.
TYPED_TEST(Szx, IdenticalBytesAcrossBackends) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({70, 50, 9});
  for (Pattern p : {Pattern::Noisy, Pattern::Spiky, Pattern::Fill}) {
    const auto in = make_field<float>(p, d);
    const auto in64 = make_field<double>(p, d);
    for (std::uint32_t block : {8u, 128u, 1024u}) {
      const auto mine = szx_round_trip<float>(b, in, d, ErrorMode::REL, 1e-4, block);
      const auto ref = szx_round_trip<float>(Backend::Serial, in, d, ErrorMode::REL, 1e-4, block);
      EXPECT_EQ(mine, ref) << name(p) << " block " << block;
      const auto mine64 = szx_round_trip<double>(b, in64, d, ErrorMode::ABS, 1e-9, block);
      const auto ref64 = szx_round_trip<double>(Backend::Serial, in64, d, ErrorMode::ABS, 1e-9, block);
      EXPECT_EQ(mine64, ref64) << name(p) << " block " << block;
      const Field fa = decompress(ref.data(), ref.size(), b), fb = decompress(ref.data(), ref.size(), Backend::Serial);
      EXPECT_EQ(fa.bytes, fb.bytes);
    }
  }
}

// Every pair of neighbouring blocks in every kind pair (constant, coded at two
// widths, verbatim), in whole groups and a partial last one: the CUDA decoder
// takes float blocks of 128 two at a time, half a warp each, and each half
// follows its own kind. Same bytes and values as Serial, and the pattern's
// kinds are in the stream.
TYPED_TEST(Szx, MixedKindsSideBySideAsSerial) {
  using container::SegmentId;
  const Backend b = backend_of<TypeParam>();
  constexpr std::uint32_t kBlock = 128;
  const std::uint64_t nb = 3 * 32 + 5, n = nb * kBlock - 37;  // three whole CUDA groups and a partial one
  std::vector<float> in(n);
  // Kind of block j: pair k = j / 2 takes (k % 4, k / 4 % 4) for its two
  // blocks: 0 constant, 1 coded (narrow), 2 coded (wide), 3 verbatim.
  const auto kind_of = [](std::uint64_t j) {
    const std::uint64_t k = j / 2;
    return int(j % 2 == 0 ? k % 4 : k / 4 % 4);
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (std::uint64_t i = 0; i < n; ++i) {
    const int kind = kind_of(i / kBlock);
    in[i] = kind == 0 ? 2.5f : kind == 1 ? 3.f + 0.01f * u(rng) : kind == 2 ? 300.f * u(rng) : u(rng);
    if (kind == 3 && i % kBlock == 7) in[i] = std::numeric_limits<float>::quiet_NaN();
  }
  const Dims d = dims_of({n});
  const auto mine = szx_round_trip<float>(b, in, d, ErrorMode::ABS, 1e-3, kBlock);
  const auto ref = szx_round_trip<float>(Backend::Serial, in, d, ErrorMode::ABS, 1e-3, kBlock);
  EXPECT_EQ(mine, ref);
  const Field fa = decompress(ref.data(), ref.size(), b), fb = decompress(ref.data(), ref.size(), Backend::Serial);
  EXPECT_EQ(fa.bytes, fb.bytes);
  const Parts parts = split(ref);
  const auto& kinds = parts.seg(SegmentId::SzxKinds);
  ASSERT_EQ(kinds.size(), nb);
  std::uint8_t narrow = 0, wide = 0;
  for (std::uint64_t j = 0; j < nb; ++j) {
    const int want = kind_of(j);
    if (want == 0) EXPECT_EQ(kinds[j], szx::kConstant) << j;
    if (want == 3) EXPECT_EQ(kinds[j], szx::kVerbatim) << j;
    if (want == 1 || want == 2) {
      ASSERT_TRUE(szx::is_coded(kinds[j])) << j;
      std::uint8_t& k = want == 1 ? narrow : wide;
      k = std::max(k, kinds[j]);
    }
  }
  EXPECT_LT(szx::bytes_of(narrow), szx::bytes_of(wide));  // the two coded widths differ in mid-bytes a value
}

// REL resolves the bound from the finite values' span: on the CUDA one-pass
// path the kernel works it out from the extremes on the device. Fields with
// no finite value (a bound of 0 under REL), a constant one (span 0), signed
// zeros at the ends and a wide span: the same header and bytes as Serial.
TYPED_TEST(Szx, RelBoundFromTheRangeAsSerial) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({3000});
  std::vector<std::vector<float>> fields(4, std::vector<float>(d.count()));
  for (std::uint64_t i = 0; i < d.count(); ++i) {
    fields[0][i] = i % 3 ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity();
    fields[1][i] = 2.5f;
    fields[2][i] = float(std::sin(0.01 * double(i))) * 1e-3f;
    fields[3][i] = float(i % 17) * 3e30f - 2e31f;
  }
  fields[2][0] = -0.0f, fields[2][1] = 0.0f;
  for (const auto& f : fields)
    for (double e : {1e-2, 1e-5}) {
      Report rep, ref_rep;
      const auto mine = szx_round_trip<float>(b, f, d, ErrorMode::REL, e, 128, &rep);
      const auto ref = szx_round_trip<float>(Backend::Serial, f, d, ErrorMode::REL, e, 128, &ref_rep);
      EXPECT_EQ(rep.abs_bound, ref_rep.abs_bound) << e;
      EXPECT_EQ(rep.value_min, ref_rep.value_min) << e;
      EXPECT_EQ(rep.value_max, ref_rep.value_max) << e;
      EXPECT_EQ(mine, ref) << "bound " << e << " field of " << f[2];
    }
}

// Team per block (the GPU layout, Figure 9 index propagation) writes and
// reads the same bytes as thread per block, here on this backend.
struct LayoutEnv {
  explicit LayoutEnv(const char* v) { setenv("KSZ_SZX_LAYOUT", v, 1); }
  ~LayoutEnv() { unsetenv("KSZ_SZX_LAYOUT"); }
};

TYPED_TEST(Szx, TeamLayoutSameBytes) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({70, 50, 9});
  for (Pattern p : {Pattern::Noisy, Pattern::Spiky, Pattern::Fill}) {
    const auto in = make_field<float>(p, d);
    const auto in64 = make_field<double>(p, d);
    for (std::uint32_t block : {1u, 33u, 128u, 1024u})
      for (double e : {1e-4}) {
        SCOPED_TRACE(name(p));
        Bytes thread32, team32, thread64, team64;
        {
          LayoutEnv env("thread");
          thread32 = szx_round_trip<float>(b, in, d, ErrorMode::REL, e, block);
          thread64 = szx_round_trip<double>(b, in64, d, ErrorMode::REL, e * 1e-6, block);
        }
        LayoutEnv env("team");
        team32 = szx_round_trip<float>(b, in, d, ErrorMode::REL, e, block);
        team64 = szx_round_trip<double>(b, in64, d, ErrorMode::REL, e * 1e-6, block);
        EXPECT_EQ(thread32, team32) << "block " << block << " e " << e;
        EXPECT_EQ(thread64, team64) << "block " << block << " e " << e;
      }
  }
}

#ifndef __CUDA_ARCH__  // host functions: tested in nvcc's host pass only
// The host fast paths (szx::host) agree with the portable block functions on
// every block: kind, median, mid-byte count, leading codes and mid-bytes
// (and nothing written past them), the decoder's mid-byte count and the
// decoded values. Blocks: smooth, noisy, constant, with a NaN, with huge
// values, tiny and loose bounds, lengths 1..300.
template <class T>
void host_paths_agree() {
  using namespace ksz::szx;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uint64_t blocks = 0, coded = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const std::uint32_t len = 1 + std::uint32_t(rng() % 300);
    std::vector<T> x(len);
    const int kind = trial % 6;
    const double scale = std::ldexp(1.0, int(rng() % 40) - 20);
    for (std::uint32_t i = 0; i < len; ++i) {
      const double v = kind == 0 ? std::sin(0.01 * i) : kind == 1 ? normal(rng) : kind == 2 ? 3.25 : normal(rng) * 1e-3 + 5;
      x[i] = T(v * scale);
    }
    if (kind == 3) x[rng() % len] = std::numeric_limits<T>::quiet_NaN();
    if (kind == 4) x[rng() % len] = T(1e30);
    const double e = scale * std::ldexp(1.0, -int(rng() % 30));
    struct Acc {
      const T* p;
      T operator()(std::uint64_t i) const { return p[i]; }
    } acc{x.data()};
    const BlockPlan<T> ref = plan_block<T>(acc, 0, len, e);
    Kokkos::View<std::uint8_t*, Kokkos::HostSpace> lead_ref("lead", (len + 3) / 4), mid_ref("mid", ref.mid_bytes);
    if (is_coded(ref.kind)) encode_block<T>(acc, 0, len, ref.kind, ref.median, lead_ref, 0, mid_ref, 0);
    ++blocks;
    coded += is_coded(ref.kind) ? 1 : 0;
    const BlockPlan<T> got = host::plan_block<T>(x.data(), len, e, proof_threshold<T>(e));
    ASSERT_EQ(got.kind, ref.kind) << "trial " << trial;
    ASSERT_EQ(got.mid_bytes, ref.mid_bytes) << "trial " << trial;
    if (ref.kind == kVerbatim) continue;
    ASSERT_EQ(std::memcmp(&got.median, &ref.median, sizeof(T)), 0) << "trial " << trial;
    if (!is_coded(ref.kind)) continue;
    std::vector<std::uint8_t> lead((len + 3) / 4, 0xAB), mid(ref.mid_bytes + 8, 0xCD);
    host::encode_block<T>(x.data(), len, ref.kind, ref.median, lead.data(), mid.data());
    for (std::size_t j = 0; j < lead.size(); ++j) ASSERT_EQ(lead[j], lead_ref(j)) << "trial " << trial << " lead " << j;
    for (std::size_t j = 0; j < ref.mid_bytes; ++j) ASSERT_EQ(mid[j], mid_ref(j)) << "trial " << trial << " mid " << j;
    for (std::size_t j = ref.mid_bytes; j < mid.size(); ++j)
      ASSERT_EQ(mid[j], 0xCD) << "trial " << trial << ": wrote past the block's mid-bytes";
    std::uint64_t count_ref = 0, sum = 0;
    ASSERT_TRUE(count_mid(lead_ref, 0, len, ref.kind, count_ref));
    ASSERT_TRUE(host::lead_sum(lead.data(), len, bytes_of(ref.kind), sum));
    ASSERT_EQ(std::uint64_t(len) * bytes_of(ref.kind) - sum, count_ref) << "trial " << trial;
    // Decoding: the block's mid-bytes alone (byte-wise tail) and followed by
    // readable bytes (full-width loads).
    Kokkos::View<T*, Kokkos::HostSpace> out_ref("out", len);
    decode_block<T>(lead_ref, 0, mid_ref, 0, len, ref.kind, ref.median, out_ref, 0);
    for (const std::uint8_t* end : {mid.data() + ref.mid_bytes, mid.data() + mid.size()}) {
      std::vector<T> out(len);
      host::decode_block<T>(lead.data(), mid.data(), mid.data() + ref.mid_bytes, end, len, ref.kind, ref.median,
                            out.data());
      ASSERT_EQ(std::memcmp(out.data(), out_ref.data(), len * sizeof(T)), 0) << "trial " << trial;
    }
  }
  EXPECT_GT(coded, blocks / 4);
}

// szx::bound_proven lets the compressors skip the per-value test: wherever
// it holds, every value of the block must pass that test. Blocks are drawn
// near the proof's edges: magnitudes just under the threshold (roundings of
// m + t near e / 16), radii just over e (non-constant blocks) or as wide as
// the magnitudes (where v - m and m + t round), bounds down to the subnormal
// cutoff, and sign changes through zero. A threshold 2^5 too generous fails.
template <class T>
void bound_proof_holds() {
  using namespace ksz::szx;
  using U = typename Bits<T>::U;
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  constexpr int p = std::numeric_limits<T>::digits;
  std::uint64_t proven = 0, values = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int scale = int(rng() % 200) - 100;
    const double e = std::ldexp(1.0 + unit(rng), sizeof(T) == 4 ? scale : 9 * scale);
    const double thr = proof_threshold<T>(e);
    if (!(thr > 0)) continue;
    // Center: up to the threshold (sometimes just over it); spread: a few e.
    const double c = (rng() % 2 ? 1 : -1) * thr * (rng() % 4 == 0 ? 1.0 + 1e-6 : unit(rng));
    const int shape = int(rng() % 3);
    const double spread = shape == 2 ? std::fabs(c) * (0.1 + 2 * unit(rng)) : e * (1.0 + 8 * unit(rng)) * (shape ? 1e3 : 1.0);
    std::vector<T> x(1 + rng() % 128);
    for (T& v : x) v = static_cast<T>(c + spread * (unit(rng) - 0.5) * 2);
    T mn = x[0], mx = x[0];
    for (const T v : x) mn = v < mn ? v : mn, mx = v > mx ? v : mx;
    const BlockHead<T> hd = block_head<T>(mn, mx, e);
    if (hd.constant || !bound_proven<T>(mn, mx, thr)) continue;
    ++proven;
    const int shift = Bits<T>::kTotal - hd.len_bits;
    for (const T v : x) {
      const U code = code_of<T>(v, hd.median, shift);
      ASSERT_TRUE(within(static_cast<double>(v), static_cast<double>(value_of<T>(code, hd.median, shift)), e))
          << "trial " << trial << " v " << v << " e " << e << " median " << hd.median << " bits " << hd.len_bits;
      ++values;
    }
  }
  // The proof must hold on a large share of the blocks drawn, or it proves nothing.
  EXPECT_GT(proven, 5000u) << "precision " << p;
  EXPECT_GT(values, 100000u);
}
TEST(SzxBoundProof, EveryValueOfAProvenBlockPassesF32) { bound_proof_holds<float>(); }
TEST(SzxBoundProof, EveryValueOfAProvenBlockPassesF64) { bound_proof_holds<double>(); }

TEST(SzxHostPaths, AgreeWithPortableBlocksF32) { host_paths_agree<float>(); }
TEST(SzxHostPaths, AgreeWithPortableBlocksF64) { host_paths_agree<double>(); }

// The 2-bit code count rejects a code longer than a 2-byte value (3) where
// the portable count does, padding codes of a last partial byte ignored.
TEST(SzxHostPaths, LeadSumRejectsWhereCountMidDoes) {
  using namespace ksz::szx;
  std::mt19937_64 rng(5);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const std::uint32_t len = 1 + std::uint32_t(rng() % 200);
    const int nbytes = 2 + int(rng() % 3), len_bits = 8 * nbytes;
    Kokkos::View<std::uint8_t*, Kokkos::HostSpace> lead("lead", (len + 3) / 4);
    for (std::size_t j = 0; j < lead.extent(0); ++j)  // mostly valid codes, now and then a 3
      lead(j) = static_cast<std::uint8_t>(rng() % 64 == 0 ? rng() : (rng() & 0xAA) >> (rng() % 2));
    std::uint64_t ref = 0, sum = 0;
    const bool ok_ref = count_mid(lead, 0, len, len_bits, ref);
    ASSERT_EQ(host::lead_sum(lead.data(), len, nbytes, sum), ok_ref) << "trial " << trial;
    if (ok_ref) ASSERT_EQ(std::uint64_t(len) * nbytes - sum, ref) << "trial " << trial;
    rejected += ok_ref ? 0 : 1;
  }
  EXPECT_GT(rejected, 50);
  EXPECT_LT(rejected, 1000);
}
#endif

// ---- Pinned bytes: the SZx format has no golden file; these hashes of the
// streams the first encoder wrote (commit 6b35da2) pin it on every backend,
// read without segment 21 (format 1.3's mid-byte runs, which that encoder
// did not write); `full` pins the whole stream with it.
// Inputs from integer arithmetic and exact double operations only, so they
// are the same on every machine: coded, constant, noisy, wide-range and
// subnormal stretches, a NaN and an Inf (verbatim blocks).
template <class T>
std::vector<T> pinned_input() {
  std::vector<T> v(5000);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double h = double((i * 7919) % 1013);
    switch (i / 1000) {
      case 0: v[i] = T(0.5 * double(i) + 1e-4 * h); break;
      case 1: v[i] = T(3.25); break;
      case 2: v[i] = T(1e-3 * h - 0.5); break;
      case 3: v[i] = T(((i / 100) % 2 ? 1e3 : -1e3) * h); break;
      default: v[i] = T(double(i - 4000) * 1e-40); break;
    }
  }
  v[17] = std::numeric_limits<T>::quiet_NaN();
  v[2500] = std::numeric_limits<T>::infinity();
  return v;
}

template <class Stream>
std::uint64_t fnv1a(const Stream& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint8_t c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

TYPED_TEST(Szx, StreamBytesPinned) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({5000});
  const auto in = pinned_input<float>();
  const auto in64 = pinned_input<double>();
  struct Pin {
    bool f64;
    ErrorMode mode;
    double bound;
    std::uint32_t block;
    std::uint64_t hash, full;
  };
  const Pin pins[] = {
      {false, ErrorMode::REL, 1e-3, 1, 0xd38471faa80c763aull, 0x8654bdf2e350e379ull},
      {false, ErrorMode::REL, 1e-3, 7, 0x555107dad4fe3303ull, 0xa5ad6fc4fadf2ccaull},
      {false, ErrorMode::REL, 1e-3, 128, 0x296b645e29198c19ull, 0x6562681273d4c267ull},
      {false, ErrorMode::REL, 1e-3, 1024, 0xde671d384e1d0468ull, 0x953d8ff75c5abc10ull},
      {false, ErrorMode::REL, 1e-6, 64, 0x5ac07a964f21c726ull, 0x4bb842d943678de1ull},
      {false, ErrorMode::ABS, 0.5, 128, 0x07711b3910253d7dull, 0xa68665dbf160484dull},
      {true, ErrorMode::ABS, 1e-9, 7, 0x80d6ec504b212da4ull, 0x84d14e89c815a823ull},
      {true, ErrorMode::ABS, 1e-9, 128, 0x5f77af58c89fe1ccull, 0x9a4e7bd4302017c7ull},
      {true, ErrorMode::REL, 1e-3, 1000, 0x371fce22d129bcf2ull, 0xd5848486746f26f8ull},
      {true, ErrorMode::REL, 1e-12, 4096, 0xb4ffe400866829e6ull, 0x65c8b541369e1e23ull},
  };
  for (const Pin& p : pins) {
    const auto s = p.f64 ? szx_round_trip<double>(b, in64, d, p.mode, p.bound, p.block)
                         : szx_round_trip<float>(b, in, d, p.mode, p.bound, p.block);
    Parts first = split(s);
    first.erase(container::SegmentId::SzxMidRuns);
    std::ostringstream what;
    what << (p.f64 ? "f64 " : "f32 ") << to_string(p.mode) << " " << p.bound << " block " << p.block;
    EXPECT_EQ(fnv1a(first.write()), p.hash) << what.str() << std::hex << ": 0x" << fnv1a(first.write());
    EXPECT_EQ(fnv1a(s), p.full) << what.str() << std::hex << ": 0x" << fnv1a(s);
  }
}

// The device-resident stages (SzxPipeline::encode, upload, decode: what
// bench_szx --resident times back to back): an uploaded stream decodes, call
// after call and into a reused output, to the bytes decompress gives, and an
// encode between two compressions changes no byte of the stream.
template <class Space, class T>
void resident_stages_agree(const Dims& d, ErrorMode mode, double bound, std::uint32_t block) {
  using P = pipeline::SzxPipeline<Space>;
  using Mem = typename Space::memory_space;
  std::vector<T> host = make_field<T>(Pattern::Spiky, d);
  host[host.size() / 3] = std::numeric_limits<T>::quiet_NaN();  // a verbatim block
  Kokkos::View<T*, Mem> in("in", host.size());
  {
    auto m = Kokkos::create_mirror_view(in);
    std::memcpy(m.data(), host.data(), host.size() * sizeof(T));
    Kokkos::deep_copy(in, m);
  }
  Options opt;
  opt.predictor = PredictorId::SZx;
  opt.mode = mode;
  opt.bound = bound;
  opt.szx_block = block;
  const Space space;
  const Kokkos::View<const T*, Mem> cin = in;
  Report rep;
  const Bytes first = P::template compress<T>(space, cin, d, opt, &rep);
  P::template encode<T>(space, cin, d, opt, nullptr);
  const Bytes again = P::template compress<T>(space, cin, d, opt, nullptr);
  EXPECT_TRUE(first == again) << "a compression after encode wrote other bytes";
  const container::Parsed parsed = container::read(first.data(), first.size());
  Kokkos::View<T*, Mem> ref;
  P::template decompress<T>(space, parsed, ref, nullptr);
  const auto ref_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ref);
  ASSERT_EQ(ref_h.extent(0), host.size());
  EXPECT_TRUE(within_bound(host.data(), ref_h.data(), host.size(), rep.abs_bound));
  const auto resident = P::template upload<T>(space, parsed);
  Kokkos::View<T*, Mem> out;
  for (int call = 0; call < 2; ++call) {
    if (call == 1) Kokkos::deep_copy(out, T(7));  // reused: every element written again
    P::template decode<T>(space, resident, out, nullptr);
    const auto out_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    ASSERT_EQ(out_h.extent(0), host.size());
    EXPECT_EQ(std::memcmp(out_h.data(), ref_h.data(), host.size() * sizeof(T)), 0) << "decode call " << call;
  }
}

TYPED_TEST(Szx, ResidentStagesAgreeWithTheStream) {
  for (const Dims& d : {dims_of({70, 33, 9}), dims_of({128, 128, 17})})
    for (ErrorMode m : {ErrorMode::REL, ErrorMode::ABS}) {
      SCOPED_TRACE(d.str() + " " + to_string(m));
      resident_stages_agree<TypeParam, float>(d, m, m == ErrorMode::REL ? 1e-3 : 1e-2, 128);
      resident_stages_agree<TypeParam, double>(d, m, m == ErrorMode::REL ? 1e-3 : 1e-2, 256);
    }
}

// ---- Hostile streams: rebuilt with valid checksums so the SZx decoder's own
// checks, not the container's CRC, must catch them.
TYPED_TEST(Szx, HostileStreamsRejected) {
  using container::Param;
  using container::SegmentId;
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({1000});
  auto in = make_field<float>(Pattern::Noisy, d);
  in[900] = std::numeric_limits<float>::quiet_NaN();  // one verbatim block
  for (std::size_t i = 0; i < 128; ++i) in[i] = 1.5f;  // one constant block
  Options opt;
  opt.predictor = PredictorId::SZx;
  opt.mode = ErrorMode::ABS;
  opt.bound = 1e-3;
  opt.backend = b;
  const auto good = compress(in.data(), DType::F32, d, opt);
  ASSERT_NO_THROW(decompress(good.data(), good.size(), b));
  const Parts base = split(good);
  auto expect_corrupt = [&](const Parts& p, const char* what) {
    const auto s = p.write();
    EXPECT_THROW(decompress(s.data(), s.size(), b), CorruptStream) << what;
  };
  {  // every truncation
    for (std::size_t len = 0; len < good.size(); len += 7)
      EXPECT_THROW(decompress(good.data(), len, b), CorruptStream) << len;
  }
  for (std::uint32_t blk : {0u, 4097u, 64u, 1u << 31}) {
    Parts p = base;
    p.h.set_u32(Param::SzxBlock, blk);
    expect_corrupt(p, "block size");
  }
  {
    Parts p = base;
    p.h.params.erase(std::uint16_t(Param::SzxBlock));
    expect_corrupt(p, "missing block size");
  }
  {  // header claims far more elements than the kinds segment covers
    Parts p = base;
    p.h.dims.n[0] = std::uint64_t(1) << 40;
    expect_corrupt(p, "lying element count");
  }
  for (std::uint8_t k : {1, 8, 33, 254}) {
    Parts p = base;
    p.seg(SegmentId::SzxKinds)[2] = k;
    expect_corrupt(p, "kind byte");
  }
  {  // a coded block turned verbatim: verbatim segment too short
    Parts p = base;
    auto& kinds = p.seg(SegmentId::SzxKinds);
    for (auto& k : kinds)
      if (k != 0 && k != 255) {
        k = 255;
        break;
      }
    expect_corrupt(p, "kind changed");
  }
  for (SegmentId id : {SegmentId::SzxKinds, SegmentId::SzxMedians, SegmentId::SzxLeadCodes, SegmentId::SzxMidBytes,
                       SegmentId::SzxVerbatim}) {
    Parts p = base;
    p.seg(id).push_back(0);
    expect_corrupt(p, "segment one byte long");
    Parts q = base;
    q.seg(id).pop_back();
    expect_corrupt(q, "segment one byte short");
    Parts r = base;
    r.erase(id);
    expect_corrupt(r, "segment missing");
  }
  {  // leading codes changed: the mid-byte count no longer matches
    Parts p = base;
    for (auto& c : p.seg(SegmentId::SzxLeadCodes)) c = 0;
    expect_corrupt(p, "leading codes");
  }
  {  // a leading code longer than the value (3 > 2 bytes) in a 9..16-bit block
    Parts p = base;
    auto& kinds = p.seg(SegmentId::SzxKinds);
    for (auto& k : kinds)
      if (k != 0 && k != 255) k = 16;
    for (auto& c : p.seg(SegmentId::SzxLeadCodes)) c = 0xFF;
    expect_corrupt(p, "impossible leading code");
  }
  {  // an f64 stream read as f32
    Parts p = base;
    p.h.dtype = DType::F64;
    expect_corrupt(p, "dtype");
  }
}

// Segment 21 (the runs' mid-byte counts): a count changed, two swapped or a
// byte moved between runs (the total unchanged), the segment a byte long or
// short, all rejected; without it the stream still decodes, to the same
// values. Blocks of 128 (the CUDA one-pass decoder), 64 and 1000 (the
// two-pass one), both types.
template <class T>
void hostile_runs(Backend b, std::uint32_t block) {
  using container::SegmentId;
  const Dims d = dims_of({20000});
  auto in = make_field<T>(Pattern::Noisy, d);
  in[7000] = std::numeric_limits<T>::quiet_NaN();  // a verbatim block
  Options opt;
  opt.predictor = PredictorId::SZx;
  opt.mode = ErrorMode::REL;
  opt.bound = 1e-3;
  opt.backend = b;
  opt.szx_block = block;
  const auto good = compress(in.data(), dt<T>(), d, opt);
  const Field want = decompress(good.data(), good.size(), b);
  const Parts base = split(good);
  const std::string what = std::string(sizeof(T) == 4 ? "f32" : "f64") + " block " + std::to_string(block) + ": ";
  const auto expect_corrupt = [&](const Parts& p, const char* how) {
    const auto s = p.write();
    try {
      decompress(s.data(), s.size(), b);
      ADD_FAILURE() << what << how << ": accepted";
    } catch (const CorruptStream& e) {
      EXPECT_NE(std::string(e.what()).find("run"), std::string::npos) << what << how << ": " << e.what();
    }
  };
  const std::vector<std::uint8_t>& runs = base.seg(SegmentId::SzxMidRuns);
  ASSERT_EQ(runs.size(), 2 * szx::run_count((d.count() + block - 1) / block, szx::run_blocks<T>(block))) << what;
  ASSERT_GE(runs.size(), 8u) << what;
  const auto get = [](const Parts& p, std::size_t r) {
    const auto& v = p.seg(SegmentId::SzxMidRuns);
    return unsigned(v[2 * r] | v[2 * r + 1] << 8);
  };
  const auto put = [](Parts& p, std::size_t r, unsigned x) {
    auto& v = p.seg(SegmentId::SzxMidRuns);
    v[2 * r] = static_cast<std::uint8_t>(x), v[2 * r + 1] = static_cast<std::uint8_t>(x >> 8);
  };
  {
    Parts p = base;
    put(p, 1, get(p, 1) + 1);
    expect_corrupt(p, "a count one more");
  }
  {
    Parts p = base;
    ASSERT_NE(get(p, 0), get(p, 2)) << what;
    const unsigned a = get(p, 0), c = get(p, 2);
    put(p, 0, c), put(p, 2, a);
    expect_corrupt(p, "two counts swapped");
  }
  {
    Parts p = base;
    put(p, 1, get(p, 1) - 1), put(p, 2, get(p, 2) + 1);
    expect_corrupt(p, "a byte moved to the next run");
  }
  for (const int grow : {1, -1}) {
    Parts p = base;
    auto& v = p.seg(SegmentId::SzxMidRuns);
    if (grow > 0) v.push_back(0);
    else v.pop_back();
    const auto s = p.write();
    EXPECT_THROW(decompress(s.data(), s.size(), b), CorruptStream) << what << "segment 21 " << grow << " byte";
  }
  Parts without = base;
  without.erase(SegmentId::SzxMidRuns);
  const auto s = without.write();
  const Field got = decompress(s.data(), s.size(), b);
  EXPECT_TRUE(got.bytes == want.bytes) << what << "decoded without segment 21";
}

TYPED_TEST(Szx, HostileRunCountsRejected) {
  const Backend b = backend_of<TypeParam>();
  for (const std::uint32_t block : {128u, 64u, 1000u}) {
    hostile_runs<float>(b, block);
    hostile_runs<double>(b, block);
  }
}

TYPED_TEST(Szx, InvalidOptionsRejected) {
  const Dims d = dims_of({100});
  const auto in = make_field<float>(Pattern::Smooth, d);
  Options opt;
  opt.predictor = PredictorId::SZx;
  opt.backend = backend_of<TypeParam>();
  for (std::uint32_t blk : {0u, 4097u}) {
    opt.szx_block = blk;
    EXPECT_THROW(compress(in.data(), DType::F32, d, opt), InvalidInput) << blk;
  }
}

// Every real field in ../shared/data at REL 1e-2..1e-4 (skipped without it),
// on Serial: the bytes are the same on every backend (tested above).
TEST(SzxSharedData, BoundOnEveryElementOfEveryField) {
  std::ifstream man(std::string(KSZ_SHARED_DATA_DIR) + "/MANIFEST.tsv");
  if (!man) GTEST_SKIP() << "no ../shared/data beside the checkout";
  std::string line;
  std::getline(man, line);
  while (std::getline(man, line)) {
    std::istringstream ls(line);
    std::string path, bytes, dtype, dims;
    std::getline(ls, path, '\t');
    std::getline(ls, bytes, '\t');
    std::getline(ls, dtype, '\t');
    std::getline(ls, dims, '\t');
    std::ifstream f(std::string(KSZ_SHARED_DATA_DIR) + "/" + path, std::ios::binary);
    ASSERT_TRUE(f) << path;
    std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const bool f64 = dtype == "f64";
    const std::uint64_t n = raw.size() / (f64 ? 8 : 4);
    const Dims d = dims_of({n});
    for (double rel : {1e-2, 1e-3, 1e-4}) {
      SCOPED_TRACE(path);
      if (f64) {
        std::vector<double> v(n);
        std::memcpy(v.data(), raw.data(), n * 8);
        szx_round_trip<double>(Backend::Serial, v, d, ErrorMode::REL, rel, 128);
      } else {
        std::vector<float> v(n);
        std::memcpy(v.data(), raw.data(), n * 4);
        szx_round_trip<float>(Backend::Serial, v, d, ErrorMode::REL, rel, 128);
      }
    }
  }
}

}  // namespace
}  // namespace ksz::test
