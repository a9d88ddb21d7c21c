// The CUDA specializations against their portable twins: the same stream bytes
// from compression and the same values from decompression, over shapes that
// exercise partial chunks, every rank, radii at and beyond the specialized
// limits, Huffman chunk sizes with and without 16-byte stores, outliers and
// verbatim elements. Runs on CUDA builds only (a GPU is needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "tests/common/backends.hpp"
#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/histogram/histogram.hpp"
#include "portable/lossless/lossless.hpp"
#include "portable/predict/spline/spline.hpp"
#include "src/container/checksum.hpp"
#include "tests/common/fields.hpp"
#include "tests/common/stream_parts.hpp"

namespace ksz::test {
namespace {

#if defined(KSZ_HAVE_CUDA)

// SZx under REL 1e-3 with blocks of `block`.
Options szx_rel_1e3(std::uint32_t block) {
  Options opt;
  opt.mode = ErrorMode::REL;
  opt.bound = 1e-3;
  opt.predictor = PredictorId::SZx;
  opt.szx_block = block;
  return opt;
}

template <class T>
void expect_same_as_portable(const std::vector<T>& field, const Dims& dims, Options opt, const std::string& what) {
  SpecGuard guard;
  opt.backend = Backend::Cuda;
  cuda_spec::set_enabled(false);
  const auto portable = compress(field.data(), sizeof(T) == 4 ? DType::F32 : DType::F64, dims, opt);
  const Field portable_out = decompress(portable.data(), portable.size(), Backend::Cuda);
  cuda_spec::set_enabled(true);
  const auto special = compress(field.data(), sizeof(T) == 4 ? DType::F32 : DType::F64, dims, opt);
  const Field special_out = decompress(portable.data(), portable.size(), Backend::Cuda);  // same stream, other decoder
  ASSERT_EQ(portable.size(), special.size()) << what;
  EXPECT_TRUE(portable == special) << what << ": specialized stream differs from the portable one";
  EXPECT_TRUE(portable_out.bytes == special_out.bytes) << what << ": specialized decoding differs";
}

template <class T>
void run_matrix() {
  struct Case {
    std::vector<std::uint64_t> ext;
    Pattern p;
    double bound;
    std::uint32_t radius, hchunk;
    std::uint64_t nan_every = 0;  // more verbatim elements: a NaN every so many
  };
  const Case cases[] = {
      {{64, 48, 40}, Pattern::Noisy, 1e-4, 512, 4096},   // partial chunks in y/z, outliers
      {{37, 19, 23}, Pattern::Spiky, 1e-3, 512, 1000},   // odd shape, scalar decode stores
      {{33, 17, 9}, Pattern::Fill, 1e-3, 8, 4096},       // tiny radius: hot window clipped
      {{300, 200}, Pattern::Smooth, 1e-5, 4096, 4096},   // 2D, largest specialized radius
      {{130, 70}, Pattern::Noisy, 1e-3, 8192, 333},      // beyond it: portable fallback inside
      {{100003}, Pattern::Spiky, 1e-4, 512, 4096},       // 1D
      {{16, 16, 16}, Pattern::Constant, 1e-3, 512, 4096},  // one chunk, one symbol
      {{128, 128, 64}, Pattern::Noisy, 1e-7, 512, 2048},   // outliers beyond the fused lists' capacity
      {{96, 32, 20}, Pattern::Smooth, 1e-4, 2048, 8192},   // largest 3D fast-path radius, 8192-symbol chunks
      {{48, 40, 36}, Pattern::Noisy, 1e-4, 512, 333},      // byte codes with listed ones, chunks the one pass refuses
      // The fused lists sorted together, each over many buckets: 5,324
      // verbatim elements beside ~2,800 listed byte codes, then beside
      // 14,382 outliers of 16-bit codes.
      {{96, 80, 70}, Pattern::Spiky, 1e-3, 512, 4096, 101},
      {{96, 80, 70}, Pattern::Spiky, 1e-3, 64, 4096, 101}
  };
  for (const Case& c : cases) {
    const Dims d = dims_of(c.ext);
    std::vector<T> f = make_field<T>(c.p, d, 11);
    f[f.size() / 3] = std::numeric_limits<T>::quiet_NaN();  // a verbatim element
    for (std::uint64_t i = 0; c.nan_every && i < f.size(); i += c.nan_every) f[i] = std::numeric_limits<T>::quiet_NaN();
    Options opt;
    opt.mode = ErrorMode::REL;
    opt.bound = c.bound;
    opt.radius = c.radius;
    opt.huffman_chunk = c.hchunk;
    expect_same_as_portable(f, d, opt, std::string(name(c.p)) + " " + std::to_string(d.count()) + " r" + std::to_string(c.radius));
  }
}

TEST(CudaSpecializations, SameBytesAsPortableF32) { run_matrix<float>(); }
TEST(CudaSpecializations, SameBytesAsPortableF64) { run_matrix<double>(); }

// SZx (szx_cuda.cpp: warp per block) and interpolation (the Huffman and
// value-range specializations under another predictor): partial last blocks,
// every block size the CLI takes, constant and verbatim blocks, both types.
template <class T>
void run_other_predictors() {
  struct Case {
    std::vector<std::uint64_t> ext;
    Pattern p;
    double bound;
    PredictorId pred;
    std::uint32_t block;
  };
  const Case cases[] = {
      {{64, 48, 40}, Pattern::Noisy, 1e-3, PredictorId::SZx, 128},
      {{37, 19, 23}, Pattern::Spiky, 1e-4, PredictorId::SZx, 64},    // partial last block
      {{300, 201}, Pattern::Smooth, 1e-2, PredictorId::SZx, 256},
      {{100003}, Pattern::Fill, 1e-3, PredictorId::SZx, 1000},
      {{16, 16, 16}, Pattern::Constant, 1e-3, PredictorId::SZx, 128},  // constant blocks only
      {{200000}, Pattern::Noisy, 1e-6, PredictorId::SZx, 32},          // tight bound: verbatim blocks
      // The one-pass kernels (blocks of 128 * C): thousands of groups of
      // look-back, verbatim blocks from the payload's tail (the last one
      // partial), every C.
      {{1000003}, Pattern::Noisy, 1e-6, PredictorId::SZx, 128},
      {{777777}, Pattern::Spiky, 1e-4, PredictorId::SZx, 256},
      {{513, 1001}, Pattern::Smooth, 1e-3, PredictorId::SZx, 512},
      {{96, 64, 33}, Pattern::Fill, 1e-2, PredictorId::SZx, 128},
      // More groups (2,199) than the decoder's offsets kernel has CTAs.
      {{3000, 3001}, Pattern::Noisy, 1e-3, PredictorId::SZx, 128},
      // The compressor's look-back tiles of two whole float groups (4,096
      // values a group): an even count of whole groups (the last group a
      // tile's second, its last block verbatim), an odd one (the last group a
      // tile of its own; the NaN's block in a tile's second group), blocks of 256.
      {{8 * 4096}, Pattern::Noisy, 1e-4, PredictorId::SZx, 128},
      {{7 * 4096}, Pattern::Spiky, 1e-3, PredictorId::SZx, 128},
      {{6 * 4096}, Pattern::Noisy, 1e-3, PredictorId::SZx, 256},
      {{64, 48, 40}, Pattern::Smooth, 1e-3, PredictorId::Interp, 0},
      {{37, 19, 23}, Pattern::Spiky, 1e-4, PredictorId::Interp, 0},
      {{300, 201}, Pattern::Noisy, 1e-5, PredictorId::Interp, 0},
      {{100003}, Pattern::Smooth, 1e-3, PredictorId::Interp, 0},
  };
  for (const Case& c : cases) {
    const Dims d = dims_of(c.ext);
    std::vector<T> f = make_field<T>(c.p, d, 5);
    f[f.size() / 2] = std::numeric_limits<T>::quiet_NaN();  // a verbatim element / block
    if (c.pred == PredictorId::SZx) f.back() = std::numeric_limits<T>::infinity();  // the last block verbatim
    Options opt;
    opt.bound = c.bound;
    opt.predictor = c.pred;
    if (c.block) opt.szx_block = c.block;
    // SZx under ABS too: the one-pass kernel then finds the header's range itself.
    for (const ErrorMode m : {ErrorMode::REL, ErrorMode::ABS}) {
      if (m == ErrorMode::ABS && c.pred != PredictorId::SZx) continue;
      opt.mode = m;
      expect_same_as_portable(f, d, opt,
                              std::string(c.pred == PredictorId::SZx ? "szx b" + std::to_string(c.block) : "interp") +
                                  (m == ErrorMode::ABS ? " abs " : " rel ") + name(c.p) + " " +
                                  std::to_string(d.count()));
    }
  }
  // Signed zeros (the CUDA kernels take block extremes by fmin / fmax, which
  // may return either zero): blocks of zeros of both signs starting with
  // either, and a block of zeros with one positive value.
  const Dims d = dims_of({300000});
  std::vector<T> f = make_field<T>(Pattern::Noisy, d, 7);
  for (std::size_t i = 0; i < 128; ++i) {
    f[3 * 128 + i] = i % 2 ? T(0) : -T(0);
    f[4 * 128 + i] = i % 3 ? -T(0) : T(0);
    f[5 * 128 + i] = i % 2 ? -T(0) : T(0);
  }
  f[5 * 128 + 77] = T(0.5);
  Options opt;
  opt.mode = ErrorMode::REL;
  opt.bound = 1e-3;
  opt.predictor = PredictorId::SZx;
  opt.szx_block = 128;
  expect_same_as_portable(f, d, opt, "szx b128 signed zeros");
  opt.mode = ErrorMode::ABS;
  expect_same_as_portable(f, d, opt, "szx b128 signed zeros, abs");
}

// SZx under ABS finds the header's range in its one-pass kernel (from the
// blocks' extremes where they are finite, value by value where not): no
// finite value, one finite value among NaNs and infinities, and the field's
// extremes in blocks that also hold a NaN or an infinity. REL beside it (the
// range from the value-range kernel).
template <class T>
void szx_range_in_kernel() {
  const Dims d = dims_of({70001});  // 547 blocks of 128, the last partial: 18 groups
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  for (const ErrorMode m : {ErrorMode::ABS, ErrorMode::REL}) {
    Options opt;
    opt.mode = m;
    opt.bound = 1e-3;
    opt.predictor = PredictorId::SZx;
    opt.szx_block = 128;
    const std::string mode = m == ErrorMode::ABS ? " abs" : " rel";
    std::vector<T> f(d.count(), nan);
    expect_same_as_portable(f, d, opt, "szx all NaN" + mode);
    f[40000] = T(-2.5), f[17] = inf, f[70000] = -inf;
    expect_same_as_portable(f, d, opt, "szx one finite value" + mode);
    std::vector<T> g = make_field<T>(Pattern::Noisy, d, 11);
    g[128 * 7] = inf, g[128 * 7 + 5] = -inf, g[128 * 7 + 9] = T(50);  // the maximum, beside infinities
    g[128 * 300 + 3] = nan, g[128 * 300 + 4] = T(-60);                 // the minimum, beside a NaN
    g[70000] = nan;                                                    // the partial last block
    expect_same_as_portable(g, d, opt, "szx extremes in non-finite blocks" + mode);
    // Both extremes past the last whole block (546 of them: the REL float
    // range pass reads the rest value by value), then in the last whole block.
    std::vector<T> t = make_field<T>(Pattern::Noisy, d, 13);
    t[69990] = T(70), t[69900] = T(-70), t[69950] = nan;
    expect_same_as_portable(t, d, opt, "szx extremes in the partial block" + mode);
    t[69990] = T(0), t[69900] = T(0);
    t[69887] = T(80), t[69760] = T(-80);
    expect_same_as_portable(t, d, opt, "szx extremes in the last whole block" + mode);
  }
}
TEST(CudaSpecializations, SzxRangeInKernelF32) { szx_range_in_kernel<float>(); }
TEST(CudaSpecializations, SzxRangeInKernelF64) { szx_range_in_kernel<double>(); }

// The REL float range pass with the block extremes (range_blocks_kernel) on a
// field large enough that each thread takes several pairs of segments, then
// single ones, then a tail, at every C; the extremes and non-finite blocks
// spread over them. Its counter is left zeroed between calls of any size.
TEST(CudaSpecializations, SzxRangePassLargeF32) {
  const Dims d = dims_of({9000017});
  std::vector<float> f = make_field<float>(Pattern::Noisy, d, 21);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (std::uint64_t i = 12345; i < f.size(); i += 777777) f[i] = (i / 777777) % 2 ? nan : -inf;
  f[8999999] = 90.f, f[4500001] = -90.f;
  for (const std::uint32_t block : {128u, 256u, 512u}) {
    const Options opt = szx_rel_1e3(block);
    expect_same_as_portable(f, d, opt, "szx large rel b" + std::to_string(block));
    const Dims small = dims_of({5000});
    const std::vector<float> s = make_field<float>(Pattern::Smooth, small, 3);
    expect_same_as_portable(s, small, opt, "szx small after large b" + std::to_string(block));
  }
}

// Undoes cuda_spec::szx_limit_offset_ctas when a test ends.
struct OffsetCtasReset {
  ~OffsetCtasReset() { cuda_spec::szx_limit_offset_ctas(0); }
};
// SZx on CUDA with blocks of 128 under a bound.
Options szx_cuda_options(ErrorMode mode, double bound) {
  Options opt;
  opt.mode = mode;
  opt.bound = bound;
  opt.predictor = PredictorId::SZx;
  opt.szx_block = 128;
  opt.backend = Backend::Cuda;
  return opt;
}

// The decoder's offsets kernel with one and three CTAs: each takes hundreds
// or thousands of groups, so its run is scanned in several rounds and (on a
// stream without segment 21, as format 1.2 writers left them) its leading
// codes summed in several windows; the last block is partial and coded (its
// last code byte part codes).
template <class T>
void szx_offsets_few_ctas() {
  const OffsetCtasReset reset;
  const Dims d = dims_of({2501, 2001});  // 5,004,501 values: the last block of 128 has 85
  std::vector<T> f = make_field<T>(Pattern::Noisy, d, 9);
  f[f.size() / 2] = std::numeric_limits<T>::quiet_NaN();  // a verbatim block
  const Options opt = szx_cuda_options(ErrorMode::REL, 1e-3);
  const auto stream = compress(f.data(), sizeof(T) == 4 ? DType::F32 : DType::F64, d, opt);
  const Field want = decompress(stream.data(), stream.size(), Backend::Cuda);
  Parts p = split(stream);
  p.erase(container::SegmentId::SzxMidRuns);
  const auto without = p.write();
  for (const unsigned ctas : {1u, 3u}) {
    cuda_spec::szx_limit_offset_ctas(ctas);
    expect_same_as_portable(f, d, opt, "szx b128, offsets on " + std::to_string(ctas) + " CTAs");
    const Field got = decompress(without.data(), without.size(), Backend::Cuda);
    EXPECT_TRUE(got.bytes == want.bytes) << "szx b128 without segment 21, offsets on " << ctas << " CTAs";
  }
}
TEST(CudaSpecializations, SzxOffsetsOnFewCtasF32) { szx_offsets_few_ctas<float>(); }
TEST(CudaSpecializations, SzxOffsetsOnFewCtasF64) { szx_offsets_few_ctas<double>(); }

// The decoder's state buffer is not zeroed between calls: two streams of one
// layout (the same value count and block, so every run word and group offset
// sits at the same place) but different offsets, decoded in turn, each to its
// own values, with the offsets on many CTAs and on three; a call that read
// any of the other's words as its own would place mid-bytes at the other's
// offsets.
TEST(CudaSpecializations, SzxDecodeStateIsEachCallsOwn) {
  const OffsetCtasReset reset;
  const Dims d = dims_of({1501, 2001});
  const Options opt = szx_cuda_options(ErrorMode::ABS, 1e-3);
  const std::vector<float> a = make_field<float>(Pattern::Noisy, d, 5), b = make_field<float>(Pattern::Smooth, d, 6);
  const auto sa = compress(a.data(), DType::F32, d, opt), sb = compress(b.data(), DType::F32, d, opt);
  const Field wa = decompress(sa.data(), sa.size(), Backend::Serial), wb = decompress(sb.data(), sb.size(), Backend::Serial);
  ASSERT_NE(sa.size(), sb.size());
  for (const unsigned ctas : {0u, 3u}) {
    cuda_spec::szx_limit_offset_ctas(ctas);
    for (int round = 0; round < 4; ++round) {
      EXPECT_TRUE(decompress(sa.data(), sa.size(), Backend::Cuda).bytes == wa.bytes) << "a, round " << round;
      EXPECT_TRUE(decompress(sb.data(), sb.size(), Backend::Cuda).bytes == wb.bytes) << "b, round " << round;
    }
  }
}

TEST(CudaSpecializations, OtherPredictorsSameBytesF32) { run_other_predictors<float>(); }
TEST(CudaSpecializations, OtherPredictorsSameBytesF64) { run_other_predictors<double>(); }

TEST(CudaSpecializations, ValueRangeWithoutFiniteValues) {
  const Dims d = dims_of({5000});
  std::vector<float> f(d.count(), std::numeric_limits<float>::quiet_NaN());
  Options opt;
  opt.mode = ErrorMode::ABS;
  opt.bound = 1e-3;
  expect_same_as_portable(f, d, opt, "all NaN");
  f[4321] = -2.5f;
  f[17] = std::numeric_limits<float>::infinity();
  opt.mode = ErrorMode::REL;
  expect_same_as_portable(f, d, opt, "one finite value");
}

// 32-bit pseudo-random values (Knuth's MMIX LCG, high half): test data only.
struct Lcg {
  std::uint64_t seed;
  std::uint32_t operator()() {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(seed >> 32);
  }
};

// REL speculation (cuda_spec::szx_speculation): the compressor codes under
// the bound of a sample's range (one piece of 2 KiB in 32: floats 0-511,
// 16384-16895, ..., doubles 0-255, 8192-8447, ...) and keeps its bytes only
// where the field's bound codes the same, else codes again. Fields built so
// that each outcome happens: the sample misses the maximum but not its
// bound's exponent (kept, also with blocks whose radius is of that exponent
// but above both bounds); the missed maximum moves the exponent (again); a
// block whose radius lies between the two bounds (again: constant under the
// field's); no finite value sampled (again); a constant field (the same
// bound). Every stream equals the portable one.
template <class T>
void expect_speculation_keeps_only_the_fields_bytes(std::initializer_list<std::uint32_t> blocks) {
  struct Mode {
    ~Mode() { cuda_spec::szx_speculation(2); }
  } mode;
  cuda_spec::szx_speculation(1);
  constexpr std::uint64_t kPiece = 2048 / sizeof(T), kEvery = 32;
  const Dims d = dims_of({std::uint64_t(1) << 20});
  Lcg next{5};
  std::vector<T> noisy(d.count());
  for (T& x : noisy) x = static_cast<T>(next() >> 8) * T(0x1p-23) - T(1);  // [-1, 1)
  noisy[100] = T(1.25);  // sampled: the sample's range about 2.25, its bound 2.25e-3
  struct Case {
    const char* what;
    std::vector<T> f;
    bool held;
  };
  std::vector<Case> cases;
  {
    std::vector<T> f = noisy;
    f[6000] = T(1.5);  // unsampled: the field's bound 2.5e-3, of the same exponent
    cases.push_back({"missed maximum, same exponent", f, true});
    f[6000] = T(4);  // 5e-3: the next exponent
    cases.push_back({"missed maximum, next exponent", f, false});
    f[6000] = T(1.5);
    for (std::uint64_t i = 0; i < 512; ++i)  // whole blocks of 0.5 +- 3e-3: of the bounds' exponent, above both
      f[4608 + i] = i % 2 ? T(0.503) : T(0.497);
    cases.push_back({"a radius above the bounds, of their exponent", f, true});
    for (std::uint64_t i = 0; i < 512; ++i)  // 0.5 +- 2.4e-3: constant under 2.5e-3, not under 2.25e-3
      f[4608 + i] = i % 2 ? T(0.5024) : T(0.4976);
    cases.push_back({"a radius between the bounds", f, false});
  }
  {
    std::vector<T> f = noisy;
    for (std::uint64_t p = 0; p < f.size() / kPiece; p += kEvery)
      std::fill(f.begin() + p * kPiece, f.begin() + (p + 1) * kPiece, std::numeric_limits<T>::quiet_NaN());
    cases.push_back({"no finite value sampled", f, false});
  }
  cases.push_back({"constant", std::vector<T>(d.count(), T(3)), true});
  for (const Case& c : cases)
    for (const std::uint32_t block : blocks) {
      const Options opt = szx_rel_1e3(block);
      const cuda_spec::SzxSpeculation before = cuda_spec::szx_speculation_counts();
      const std::string what = std::string(c.what) + ", blocks of " + std::to_string(block);
      expect_same_as_portable(c.f, d, opt, what);
      const cuda_spec::SzxSpeculation after = cuda_spec::szx_speculation_counts();
      EXPECT_EQ(after.tried - before.tried, 1u) << what;
      EXPECT_EQ(after.held - before.held, c.held ? 1u : 0u) << what;
    }
}
TEST(CudaSpecializations, SzxSpeculationKeepsOnlyTheFieldsBytes) {
  expect_speculation_keeps_only_the_fields_bytes<float>({128u, 256u, 512u});
}
TEST(CudaSpecializations, SzxSpeculationKeepsOnlyTheFieldsBytesF64) {
  expect_speculation_keeps_only_the_fields_bytes<double>({128u, 256u});  // double's one-pass blocks
}

// The default speculation policy: from 4 Mi values; after a miss the next 8
// calls take the value-range pass, 16 after a second miss in a row, and a
// kept speculation brings the rest back to 8. A field whose one spike the
// sample misses, and the same field without it (kept); every stream of a
// field equals its first, whichever way it was made.
TEST(CudaSpecializations, SzxSpeculationRestsAfterMisses) {
  struct Mode {
    ~Mode() { cuda_spec::szx_speculation(2); }
  } mode;
  cuda_spec::szx_speculation(2);
  const Dims d = dims_of({std::uint64_t(1) << 22});
  Lcg next{7};
  std::vector<float> plain(d.count());
  for (float& x : plain) x = static_cast<float>(next() >> 8) * 0x1p-23f - 1.f;
  std::vector<float> spiky = plain;
  spiky[6000] = 100.f;  // unsampled (pieces 0-511, 16384-16895, ...): 50 times the sampled range
  // (field, whether the call speculates): a miss, a rest of 8, kept, a miss
  // and a rest of 8 again, a miss and a rest of 16, a miss.
  std::vector<std::pair<const std::vector<float>*, bool>> calls = {{&spiky, true}};
  for (int i = 0; i < 8; ++i) calls.push_back({&plain, false});
  calls.push_back({&plain, true});
  calls.push_back({&spiky, true});
  for (int i = 0; i < 8; ++i) calls.push_back({&spiky, false});
  calls.push_back({&spiky, true});
  for (int i = 0; i < 16; ++i) calls.push_back({&spiky, false});
  calls.push_back({&spiky, true});
  Options opt = szx_rel_1e3(128);
  opt.backend = Backend::Cuda;
  Bytes first_plain, first_spiky;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::vector<float>& f = *calls[i].first;
    const cuda_spec::SzxSpeculation before = cuda_spec::szx_speculation_counts();
    const auto stream = compress(f.data(), DType::F32, d, opt);
    const cuda_spec::SzxSpeculation after = cuda_spec::szx_speculation_counts();
    const bool is_plain = &f == &plain;
    EXPECT_EQ(after.tried - before.tried, calls[i].second ? 1u : 0u) << "call " << i;
    EXPECT_EQ(after.held - before.held, calls[i].second && is_plain ? 1u : 0u) << "call " << i;
    Bytes& first = is_plain ? first_plain : first_spiky;
    if (first.empty()) first = stream;
    EXPECT_TRUE(stream == first) << "call " << i << ": the stream differs from the field's first";
  }
  expect_same_as_portable(spiky, d, szx_rel_1e3(128), "the spiky field");
}

// finite_minmax_to leaves its counter zeroed, launched or refused: a buffer
// handed back with counter_zeroed (no memset) gives every later call the
// right extremes. The first call, refused (n = 0), meets a buffer of
// garbage, as a fresh workspace one is.
TEST(CudaSpecializations, ValueRangeCounterLeftZeroed) {
  SpecGuard guard;
  Kokkos::Cuda space;
  Kokkos::View<double*, Kokkos::CudaSpace> buf("ksz::test::range", cuda_spec::kMinmaxBufDoubles);
  Kokkos::deep_copy(Kokkos::View<unsigned char*, Kokkos::CudaSpace, Kokkos::MemoryUnmanaged>(
                        reinterpret_cast<unsigned char*>(buf.data()), buf.size() * sizeof(double)),
                    static_cast<unsigned char>(0xA5));
  ASSERT_FALSE(cuda_spec::finite_minmax_to<float>(space, nullptr, 0, buf.data(), false));
  Lcg next{11};
  for (const std::uint64_t n : {5000ull, 1ull, 3ull << 20, 777ull, 1ull << 22, 64ull}) {
    std::vector<float> h(n);
    double mn = std::numeric_limits<double>::max(), mx = std::numeric_limits<double>::lowest();
    for (std::uint64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(static_cast<std::int32_t>(next())) * 1e-6f;
      h[i] = i % 1000 == 7 ? std::numeric_limits<float>::quiet_NaN() : v;
      if (h[i] == h[i]) mn = std::min(mn, double(v)), mx = std::max(mx, double(v));
    }
    Kokkos::View<float*, Kokkos::CudaSpace> d("ksz::test::values", n);
    Kokkos::deep_copy(d, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), n));
    ASSERT_TRUE(cuda_spec::finite_minmax_to<float>(space, d.data(), n, buf.data(), true));
    double back[3];
    Kokkos::deep_copy(Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(back, 3),
                      Kokkos::subview(buf, std::make_pair(0, 3)));
    unsigned counter = 1;
    std::memcpy(&counter, &back[2], sizeof(counter));
    EXPECT_EQ(back[0], mn) << "n " << n;
    EXPECT_EQ(back[1], mx) << "n " << n;
    EXPECT_EQ(counter, 0u) << "n " << n;
  }
}

// The pinned bulk copies: every byte there and back, for sizes below the
// chunked path's threshold, at it, and over several chunks with a partial
// last one (on every thread count, with a few bytes past a whole number of
// chunks a thread), from and to addresses of every alignment; bytes around the
// destination range stay as they were; the copy to the host's checksum (its
// staging threads' pieces, joined) equals the table reference.
TEST(CudaSpecializations, BulkCopiesEveryByte) {
  Kokkos::Cuda space;
  Lcg next{5};
  for (const std::size_t bytes : {std::size_t(1), std::size_t(4097), std::size_t(1) << 20,
                                  (std::size_t(1) << 20) + 3, std::size_t(3) * (8u << 20) + 12345,
                                  std::size_t(7) * (8u << 20) + 1, std::size_t(9) * (8u << 20) + 5,
                                  std::size_t(64) << 20, (std::size_t(64) << 20) + 1, (std::size_t(64) << 20) + 3,
                                  (std::size_t(128) << 20) + 7}) {
    for (const std::size_t skew : {std::size_t(0), std::size_t(3)}) {
      std::vector<unsigned char> src(bytes + skew), back(bytes + skew + 2, 0x5A);
      for (auto& b : src) b = static_cast<unsigned char>(next());
      Kokkos::View<unsigned char*, Kokkos::CudaSpace> d("ksz::test::bulk", bytes + 8);
      cuda_spec::copy_bytes_to_device(space, d.data() + skew, src.data() + skew, bytes);
      cuda_spec::copy_bytes_to_host(space, back.data() + 1 + skew, d.data() + skew, bytes);
      EXPECT_EQ(std::memcmp(back.data() + 1 + skew, src.data() + skew, bytes), 0) << bytes << " bytes, skew " << skew;
      std::fill(back.begin(), back.end(), 0x5A);
      std::uint32_t crc = 1;
      cuda_spec::copy_bytes_to_host(space, back.data() + 1 + skew, d.data() + skew, bytes, &crc);
      EXPECT_EQ(std::memcmp(back.data() + 1 + skew, src.data() + skew, bytes), 0) << bytes << " bytes, skew " << skew;
      EXPECT_EQ(crc, container::crc32c_portable(src.data() + skew, bytes)) << bytes << " bytes, skew " << skew;
      EXPECT_EQ(back[skew], 0x5A) << bytes << " bytes, skew " << skew;
      EXPECT_EQ(back[1 + skew + bytes], 0x5A) << bytes << " bytes, skew " << skew;
    }
  }
}

// The lossless pass's skip test: the specialized bound equals the portable
// one exactly, over densities from all-zero to dense, block sizes, both
// methods, and lengths that end inside a block and inside a 16-byte vector.
TEST(CudaSpecializations, LosslessCodedBoundSameAsPortable) {
  SpecGuard guard;
  Kokkos::Cuda space;
  Lcg next{7};
  for (const std::uint64_t n_words : {1ull, 3ull, 2048ull, 2049ull, 100001ull, 1ull << 20}) {
    for (const int zero_percent : {0, 50, 90, 100}) {
      std::vector<std::uint32_t> h(n_words);
      for (auto& w : h) {
        std::uint32_t v = next();
        for (int b = 0; b < 4; ++b)
          if (int(next() % 100) < zero_percent) v &= ~(0xFFu << (8 * b));
        w = v;
      }
      Kokkos::View<std::uint32_t*, Kokkos::CudaSpace> d("words", n_words);
      Kokkos::deep_copy(d, Kokkos::View<const std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                               h.data(), n_words));
      for (const auto m : {lossless::Method::ZeroBytes, lossless::Method::ZeroWords}) {
        for (const int lb : {lossless::kLog2BlockMin, lossless::kLog2BlockDefault}) {
          cuda_spec::set_enabled(false);
          const std::uint64_t portable = lossless::coded_lower_bound<Kokkos::Cuda>(space, d, m, lb);
          cuda_spec::set_enabled(true);
          const std::uint64_t special = lossless::coded_lower_bound<Kokkos::Cuda>(space, d, m, lb);
          EXPECT_EQ(portable, special) << n_words << " words, " << zero_percent << "% zero bytes, block 2^" << lb;
        }
      }
    }
  }
}

// The lossless encoder (lossless::encode's CUDA twin, 8 KiB blocks) gives
// the portable payload byte for byte: densities from all-zero to dense (raw
// blocks), zero runs of whole blocks, lengths that end inside a block, a
// word and a 16-byte vector, an input that is not 16-byte aligned, both
// methods, with and without a workspace, and the give-up size.
TEST(CudaSpecializations, LosslessEncodeSameAsPortable) {
  SpecGuard guard;
  Kokkos::Cuda space;
  Lcg next{11};
  using Mem = Kokkos::CudaSpace;
  const auto encode = [&](Kokkos::View<const std::uint8_t*, Mem> in, lossless::Method m, bool special,
                          std::uint64_t give_up, pipeline::Workspace<Mem>::Lease* ws) {
    cuda_spec::set_enabled(special);
    const auto e = lossless::encode<Kokkos::Cuda>(space, in, m, lossless::kLog2BlockDefault, give_up, ws);
    std::vector<std::uint8_t> h(e.bytes.extent(0));
    Kokkos::deep_copy(Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), h.size()),
                      e.bytes);
    return std::make_pair(e.size, h);
  };
  for (const std::uint64_t n : {1ull, 5ull, 100ull, 8191ull, 8192ull, 8193ull, 40000ull, 100001ull, 1ull << 21}) {
    for (const int zero_percent : {0, 60, 97, 100}) {
      std::vector<std::uint8_t> h(n + 1);
      for (std::uint64_t i = 0; i < h.size(); ++i)
        h[i] = int(next() % 100) < zero_percent ? 0 : static_cast<std::uint8_t>(next() | 1u);
      if (n > 3 * 8192)  // a whole block of zeros, one of a single nonzero byte
        for (std::uint64_t i = 8192; i < 3 * 8192; ++i) h[i] = i == 2 * 8192 + 77 ? 5 : 0;
      Kokkos::View<std::uint8_t*, Mem> d("bytes", n + 1);
      Kokkos::deep_copy(d, Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(),
                                                                                                         n + 1));
      for (const std::uint64_t shift : {0ull, 1ull}) {
        const Kokkos::View<const std::uint8_t*, Mem> in = Kokkos::subview(d, std::make_pair(shift, shift + n));
        for (const auto m : {lossless::Method::ZeroBytes, lossless::Method::ZeroWords}) {
          const std::string what = std::to_string(n) + " bytes at +" + std::to_string(shift) + ", " +
                                   std::to_string(zero_percent) + "% zero, method " + std::to_string(int(m));
          const auto portable = encode(in, m, false, ~0ull, nullptr);
          ASSERT_GT(portable.first, 0u) << what;
          {
            pipeline::Workspace<Mem>::Lease ws;
            const auto special = encode(in, m, true, ~0ull, &ws);
            EXPECT_EQ(portable.first, special.first) << what;
            EXPECT_TRUE(portable.second == special.second) << what;
          }
          const auto fresh = encode(in, m, true, ~0ull, nullptr);
          EXPECT_TRUE(portable.second == fresh.second) << what << " (no workspace)";
          const auto given_up = encode(in, m, true, portable.first, nullptr);  // size only
          EXPECT_EQ(given_up.first, portable.first) << what;
          EXPECT_TRUE(given_up.second.empty()) << what;
        }
      }
    }
  }
}

// The code histogram (histogram::histogram's CUDA twin) counts what the
// portable one counts: codes crowded at the center, spread over the whole
// alphabet, above the alphabet (not counted), a hot window clipped at 0, and
// lengths that end inside a 16-byte vector; a misaligned start falls back.
TEST(CudaSpecializations, CodeHistogramSameAsPortable) {
  SpecGuard guard;
  Kokkos::Cuda space;
  Lcg next{11};
  for (const std::uint64_t n : {1ull, 7ull, 8ull, 4099ull, 100003ull, 3000000ull}) {
    for (const std::uint32_t radius : {2u, 512u, 4096u}) {
      std::vector<std::uint16_t> h(n + 1);
      for (auto& c : h) {
        const std::uint32_t r = next() % 100;
        const std::int32_t spread = r < 60 ? 3 : r < 90 ? 40 : 9000;
        const std::int32_t v = std::int32_t(radius) + std::int32_t(next() % (2 * spread + 1)) - spread;
        c = static_cast<std::uint16_t>(v < 0 ? 0 : v > 65535 ? 65535 : v);
      }
      Kokkos::View<std::uint16_t*, Kokkos::CudaSpace> d("codes", n + 1);
      Kokkos::deep_copy(d, Kokkos::View<const std::uint16_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                               h.data(), n + 1));
      for (const std::uint64_t off : {0ull, 1ull}) {  // 1: misaligned, the portable path either way
        const Kokkos::View<const std::uint16_t*, Kokkos::CudaSpace> codes =
            Kokkos::subview(d, std::make_pair(off, off + n));
        Kokkos::View<std::uint64_t*, Kokkos::CudaSpace> hp("hp", 2 * radius), hs("hs", 2 * radius);
        cuda_spec::set_enabled(false);
        histogram::histogram<Kokkos::Cuda>(space, codes, hp, radius);
        cuda_spec::set_enabled(true);
        histogram::histogram<Kokkos::Cuda>(space, codes, hs, radius);
        const auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), hp);
        const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), hs);
        std::uint64_t diff = 0, total = 0;
        for (std::uint32_t k = 0; k < 2 * radius; ++k) {
          diff += a(k) != b(k) ? 1 : 0;
          total += b(k);
        }
        EXPECT_EQ(diff, 0u) << n << " codes, radius " << radius << ", offset " << off;
        std::uint64_t want = 0;
        for (std::uint64_t i = 0; i < n; ++i) want += h[off + i] < 2 * radius ? 1 : 0;
        EXPECT_EQ(total, want) << n << " codes, radius " << radius << ", offset " << off;
      }
    }
  }
}

// Several histograms in one launch (histogram::histograms, the interp
// trial's two configurations) count what the portable histogram counts for
// each run; runs whose length is not a multiple of 8 take a launch each.
TEST(CudaSpecializations, CodeHistogramsInOneLaunch) {
  SpecGuard guard;
  Kokkos::Cuda space;
  Lcg next{5};
  for (const std::uint32_t items : {1u, 2u, 3u}) {
    for (const std::uint64_t n : {8ull, 4096ull, 7ull, 100000ull}) {
      const std::uint32_t radius = 512;
      std::vector<std::uint16_t> h(items * n);
      for (auto& c : h) {
        const std::uint32_t r = next() % 100;
        const std::int32_t spread = r < 70 ? 2 : r < 95 ? 60 : 700;
        const std::int32_t v = std::int32_t(radius) + std::int32_t(next() % (2 * spread + 1)) - spread;
        c = static_cast<std::uint16_t>(v < 0 ? 0 : v);
      }
      Kokkos::View<std::uint16_t*, Kokkos::CudaSpace> d("codes", h.size());
      Kokkos::deep_copy(d, Kokkos::View<const std::uint16_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                               h.data(), h.size()));
      Kokkos::View<std::uint64_t*, Kokkos::CudaSpace> hp("hp", items * 2 * radius), hs("hs", items * 2 * radius);
      cuda_spec::set_enabled(false);
      for (std::uint64_t c = 0; c < items; ++c)
        histogram::histogram<Kokkos::Cuda>(
            space, Kokkos::subview(d, std::make_pair(c * n, (c + 1) * n)),
            Kokkos::subview(hp, std::make_pair(c * 2 * radius, (c + 1) * 2 * radius)), radius);
      cuda_spec::set_enabled(true);
      histogram::histograms<Kokkos::Cuda>(space, d, hs, radius, items);
      const auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), hp);
      const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), hs);
      std::uint64_t diff = 0, total = 0;
      for (std::uint64_t k = 0; k < a.extent(0); ++k) {
        diff += a(k) != b(k) ? 1 : 0;
        total += b(k);
      }
      std::uint64_t want = 0;  // codes past the alphabet are not counted
      for (const std::uint16_t c : h) want += c < 2 * radius ? 1 : 0;
      EXPECT_EQ(diff, 0u) << items << " runs of " << n;
      EXPECT_EQ(total, want) << items << " runs of " << n;
    }
  }
}

// The lossless encoder queued behind a kernel that leaves the input's length
// on the device (cuda_spec::lossless_encode_words_queued, the interp
// compressor's path after the Huffman encoder) writes the payload the
// portable lossless::encode writes for that length: lengths shorter than the
// bound by nothing, by part of a block and by many blocks, sparse and dense
// words, both methods.
TEST(CudaSpecializations, LosslessEncodeQueuedSameAsEncode) {
  SpecGuard guard;
  Kokkos::Cuda space;
  Lcg next{23};
  using Mem = Kokkos::CudaSpace;
  for (const std::uint64_t n_words : {1ull, 2047ull, 2048ull, 2049ull, 100000ull}) {
    for (const std::uint64_t extra : {0ull, 3ull, 50000ull}) {
      for (const int zero_percent : {0, 90, 100}) {
        const std::uint64_t max_words = n_words + extra;
        std::vector<std::uint32_t> h(max_words);
        for (auto& w : h) w = int(next() % 100) < zero_percent ? 0u : (next() & 0xFF00FF0Fu) | 1u;
        Kokkos::View<std::uint32_t*, Mem> words("words", max_words);
        Kokkos::deep_copy(words, Kokkos::View<const std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                     h.data(), max_words));
        Kokkos::View<std::uint64_t, Mem> count("count");
        Kokkos::deep_copy(count, n_words);
        for (const auto m : {lossless::Method::ZeroBytes, lossless::Method::ZeroWords}) {
          const std::string what = std::to_string(n_words) + " of " + std::to_string(max_words) + " words, " +
                                   std::to_string(zero_percent) + "% zero, method " + std::to_string(int(m));
          const Kokkos::View<const std::uint8_t*, Mem, Kokkos::MemoryUnmanaged> bytes(
              reinterpret_cast<const std::uint8_t*>(words.data()), 4 * n_words);
          cuda_spec::set_enabled(false);  // the portable encoder
          const auto want = lossless::encode<Kokkos::Cuda>(space, bytes, m);
          cuda_spec::set_enabled(true);
          std::vector<std::uint8_t> w(want.size);
          Kokkos::deep_copy(Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(w.data(), w.size()),
                            Kokkos::subview(want.bytes, std::make_pair(std::uint64_t(0), want.size)));
          pipeline::Workspace<Mem>::Lease ws;
          Kokkos::View<std::uint8_t*, Mem> payload;
          const unsigned long long* total = nullptr;
          ASSERT_TRUE(cuda_spec::lossless_encode_words_queued(space, words.data(), count.data(), max_words,
                                                              m == lossless::Method::ZeroBytes, &ws, payload, total))
              << what;
          unsigned long long t = 0;
          Kokkos::deep_copy(space, t, Kokkos::View<const unsigned long long, Mem, Kokkos::MemoryUnmanaged>(total));
          space.fence();
          const std::uint64_t size = lossless::payload_bytes(4 * n_words, lossless::kLog2BlockDefault, t);
          ASSERT_EQ(size, want.size) << what;
          std::vector<std::uint8_t> got(size);
          Kokkos::deep_copy(Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(got.data(), size),
                            Kokkos::subview(payload, std::make_pair(std::uint64_t(0), size)));
          EXPECT_TRUE(got == w) << what;
        }
      }
    }
  }
}

// The code-0 offsets from magnitude classes in one kernel (the interp
// compressor's outlier compaction on CUDA) equal the exclusive scan of
// count_outliers_from_classes' counts: one tile and many (a tile is 1024
// compaction blocks), every candidate radius.
TEST(CudaSpecializations, ZeroOffsetsFromClassesAreTheScannedCounts) {
  SpecGuard guard;
  Kokkos::Cuda space;
  Lcg next{3};
  constexpr std::uint32_t C = histogram::kCodeClasses;
  for (const std::uint64_t nblocks : {1ull, 1023ull, 1024ull, 1025ull, 40000ull}) {
    std::vector<std::uint32_t> h(nblocks * C);
    for (auto& c : h) c = next() % 5 == 0 ? next() % 400 : 0;
    Kokkos::View<std::uint32_t*, Kokkos::CudaSpace> classes("classes", h.size());
    Kokkos::deep_copy(classes, Kokkos::View<const std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                   h.data(), h.size()));
    for (std::uint32_t r = 1u << spline::kSpreadMinLog; r <= spline::kAutoRadiusMax; r *= 2) {
      Kokkos::View<std::uint64_t*, Kokkos::CudaSpace> offsets("offsets", nblocks + 1);
      Kokkos::View<unsigned long long*, Kokkos::CudaSpace> state("state", cuda_spec::zero_offsets_state_words(nblocks));
      ASSERT_TRUE(cuda_spec::zero_offsets_from_classes(space, classes.data(), nblocks, spline::first_class(r),
                                                       offsets.data(), state.data()));
      Kokkos::View<std::uint64_t*, Kokkos::CudaSpace> counts("counts", nblocks);
      spline::count_outliers_from_classes<Kokkos::Cuda>(space, classes, nblocks, r, counts);
      const auto o = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), offsets);
      const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counts);
      std::uint64_t run = 0, bad = 0;
      for (std::uint64_t b = 0; b <= nblocks; ++b) {
        bad += o(b) != run ? 1 : 0;
        if (b < nblocks) run += c(b);
      }
      EXPECT_EQ(bad, 0u) << nblocks << " blocks, radius " << r;
    }
  }
}

#else

TEST(CudaSpecializations, SameBytesAsPortableF32) { GTEST_SKIP() << "no CUDA in this build"; }

#endif

}  // namespace
}  // namespace ksz::test
