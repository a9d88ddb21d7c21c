// The G-Interp (cuSZ-i) pipeline end to end: the bound on every element for
// every pattern, shape (chunk multiples or not), type and mode; identical
// bytes across backends; auto-tune choices recorded and stable; the
// decompressor reproducing the compressor's reconstruction bit for bit;
// hostile streams rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "portable/histogram/histogram.hpp"
#include "portable/predict/spline/spline.hpp"
#include "src/api/ksz.hpp"
#include "src/container/container.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

template <class Space>
class InterpPipeline : public ::testing::Test {};
TYPED_TEST_SUITE(InterpPipeline, ExecSpaces, ExecSpaceName);

// Shapes below, at and across anchor strides (8^3, 16^2, 512) and ranks 1-4.
const std::vector<std::vector<std::uint64_t>> kShapes = {
    {1},        {2},         {1, 1, 1},  {3, 1, 7},  {1023}, {1025},     {513, 1}, {17, 16},
    {257, 129}, {33, 17, 9}, {9, 9, 9},  {8, 8, 8},  {2, 3, 5}, {40, 24, 16}, {5, 6, 7, 3}, {1, 1, 4097}};

Options interp_opts(Backend b, ErrorMode mode, double bound) {
  Options opt;
  opt.predictor = PredictorId::Interp;
  opt.mode = mode;
  opt.bound = bound;
  opt.backend = b;
  return opt;
}

// The coarser levels (anchors and every level but the finest) of `cfg` by the
// field's own kernels, at radius 64, as the spline-kind trial codes them
// before its finest level in tiles.
template <class Space>
void code_coarser_levels(const Space& space, const spline::Shape& sh, const spline::Config& cfg, const double* steps,
                         double e, Kokkos::View<const float*, typename Space::memory_space> in,
                         Kokkos::View<float*, typename Space::memory_space> rec,
                         Kokkos::View<std::uint16_t*, typename Space::memory_space> codes,
                         Kokkos::View<std::int32_t*, typename Space::memory_space> qv,
                         Kokkos::View<std::uint64_t, typename Space::memory_space> nverb) {
  spline::traverse_tiled(
      sh, cfg, steps, e,
      [&](const spline::Anchors& a, const quantize::QuantParams& qp) {
        spline::compress_anchors<Space, float>(space, a, qp, 64, in, rec, codes, qv, nverb);
      },
      [&](const spline::Pass& p) { spline::compress_pass<Space, float>(space, p, e, 64, in, rec, codes, qv, nverb); },
      [&](const spline::FineTiles&) {});
}

template <class T>
void round_trip(Backend b, Pattern p, const Dims& d, ErrorMode mode, double bound) {
  const auto in = make_field<T>(p, d);
  Report rep;
  const auto stream =
      compress(in.data(), sizeof(T) == 8 ? DType::F64 : DType::F32, d, interp_opts(b, mode, bound), &rep);
  EXPECT_EQ(inspect(stream.data(), stream.size()).predictor, PredictorId::Interp);
  const Field f = decompress(stream.data(), stream.size(), b);
  ASSERT_EQ(f.bytes.size(), in.size() * sizeof(T));
  if (mode == ErrorMode::ABS) EXPECT_EQ(rep.abs_bound, bound);
  EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const T*>(f.bytes.data()), in.size(), rep.abs_bound))
      << name(p) << " " << d.str() << " mode " << to_string(mode) << " bound " << bound;
}

TYPED_TEST(InterpPipeline, BoundOnEveryElementF32) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Constant, Pattern::Spiky, Pattern::Fill})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL})
        round_trip<float>(b, p, dims_of(s), m, m == ErrorMode::ABS ? 1e-4 : 1e-2);
}

TYPED_TEST(InterpPipeline, BoundOnEveryElementF64) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Noisy, Pattern::Fill, Pattern::Ramp})
      for (ErrorMode m : {ErrorMode::ABS, ErrorMode::REL}) round_trip<double>(b, p, dims_of(s), m, m == ErrorMode::ABS ? 1e-7 : 1e-3);
}

TYPED_TEST(InterpPipeline, TinyBoundsNonFiniteAndSmallRadius) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({40, 30});
  auto in = make_field<float>(Pattern::Smooth, d);
  in[0] = std::numeric_limits<float>::quiet_NaN();  // an anchor
  in[5] = std::numeric_limits<float>::infinity();
  in[77] = -std::numeric_limits<float>::infinity();
  in[100] = std::numeric_limits<float>::max();
  in[101] = std::numeric_limits<float>::denorm_min();
  for (double e : {1e-30, 1e-9, 1.0, 1e30})
    for (std::uint32_t r : {1u, 2u, 512u, 32768u}) {
      Options opt = interp_opts(b, ErrorMode::ABS, e);
      opt.radius = r;
      Report rep;
      const auto stream = compress(in.data(), DType::F32, d, opt, &rep);
      const Field f = decompress(stream.data(), stream.size(), b);
      EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const float*>(f.bytes.data()), in.size(), e))
          << e << " radius " << r;
      EXPECT_GE(rep.verbatim, 3u);
    }
  // A noisy field with a tiny radius: most residuals become outliers, still in bound.
  const Dims d3 = dims_of({50, 20, 10});
  const auto noisy = make_field<float>(Pattern::Noisy, d3);
  Options opt = interp_opts(b, ErrorMode::REL, 1e-4);
  opt.radius = 2;
  Report rep;
  const auto stream = compress(noisy.data(), DType::F32, d3, opt, &rep);
  const Field f = decompress(stream.data(), stream.size(), b);
  EXPECT_TRUE(within_bound(noisy.data(), reinterpret_cast<const float*>(f.bytes.data()), noisy.size(), rep.abs_bound));
  EXPECT_GT(rep.outliers, noisy.size() / 2);
  EXPECT_EQ(rep.verbatim, 0u);
}

TYPED_TEST(InterpPipeline, SameBytesAsSerial) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : kShapes)
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Fill}) {
      const Dims d = dims_of(s);
      const auto in = make_field<float>(p, d);
      Options opt = interp_opts(b, ErrorMode::REL, 1e-4);
      const auto mine = compress(in.data(), DType::F32, d, opt);
      opt.backend = Backend::Serial;
      const auto ref = compress(in.data(), DType::F32, d, opt);
      EXPECT_TRUE(mine == ref) << name(p) << " " << d.str() << ": " << to_string(b) << " bytes differ from serial";
      const Field fa = decompress(mine.data(), mine.size(), Backend::Serial);
      const Field fb = decompress(ref.data(), ref.size(), b);
      EXPECT_TRUE(fa.bytes == fb.bytes);
    }
}

// Rows of a multiple of 4 values take the finest level's pass along x by
// quads (spline::compress_from_even, decompress_from_even) and, in
// decompression on GPUs, the even-x grid's stride-2 pass along x too
// (spline::walk_row_pairs): the same bytes and values as Serial's, for both types, ranks 1-3, rows of 8 (no interior
// quad) and more, with NaN, Inf and huge values at the pass's points (odd x
// on even rows: verbatim inside a quad, kept by the decompressor's store).
template <class T>
void row_pairs_same_as_serial(Backend b) {
  for (const auto& s : {std::vector<std::uint64_t>{64, 12, 10}, {8, 9, 5}, {256, 6}, {1024}, {40, 24, 16}}) {
    const Dims d = dims_of(s);
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy}) {
      auto in = make_field<T>(p, d);
      const std::uint64_t nx = d.n[0], y = d.n[1] > 2 ? 2 : 0, z = d.n[2] > 4 ? 4 : 0, row = nx * (y + d.n[1] * z);
      in[row + 5] = std::numeric_limits<T>::quiet_NaN();
      in[row + 7] = std::numeric_limits<T>::infinity();
      in[row + nx - 3] = std::numeric_limits<T>::max();
      in[row + nx / 2 + 1] = -std::numeric_limits<T>::infinity();
      Options opt = interp_opts(b, ErrorMode::ABS, 1e-3);
      Report rep;
      const auto mine = compress(in.data(), sizeof(T) == 8 ? DType::F64 : DType::F32, d, opt, &rep);
      EXPECT_GE(rep.verbatim, 4u) << d.str();
      opt.backend = Backend::Serial;
      const auto ref = compress(in.data(), sizeof(T) == 8 ? DType::F64 : DType::F32, d, opt);
      EXPECT_TRUE(mine == ref) << name(p) << " " << d.str() << ": " << to_string(b) << " bytes differ from serial";
      const Field fa = decompress(mine.data(), mine.size(), Backend::Serial);
      const Field fb = decompress(ref.data(), ref.size(), b);
      EXPECT_TRUE(fa.bytes == fb.bytes) << name(p) << " " << d.str() << ": decoded values differ from serial";
      EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const T*>(fb.bytes.data()), in.size(), 1e-3)) << d.str();
    }
  }
}
TYPED_TEST(InterpPipeline, RowPairsSameAsSerial) {
  row_pairs_same_as_serial<float>(backend_of<TypeParam>());
  row_pairs_same_as_serial<double>(backend_of<TypeParam>());
}

// The even-x grid tests' case: a spiky field with NaN (at even and odd x)
// and -Inf on the device, a configuration of the given pass order and
// spline kinds, and the field's own passes (spline::traverse) at radius 64.
template <class Space>
struct EvenCase {
  using Mem = typename Space::memory_space;
  std::string what;
  std::uint64_t n = 0;
  spline::Shape sh;
  spline::Config cfg;
  double steps[16] = {};
  double e = 1e-3;
  Kokkos::View<const float*, Mem> in;
  void code(const Space& space, Kokkos::View<float*, Mem> rec, Kokkos::View<std::uint16_t*, Mem> codes,
            Kokkos::View<std::int32_t*, Mem> qv, Kokkos::View<std::uint64_t, Mem> nverb) const {
    spline::traverse(
        sh, cfg, steps, e,
        [&](const spline::Anchors& a, const quantize::QuantParams& qp) {
          spline::compress_anchors<Space, float>(space, a, qp, 64, in, rec, codes, qv, nverb);
        },
        [&](const spline::Pass& p) {
          spline::compress_pass<Space, float>(space, p, e, 64, in, rec, codes, qv, nverb);
        });
  }
};
template <class Space>
EvenCase<Space> even_case(const std::vector<std::uint64_t>& s, const std::uint32_t (&order)[3],
                          const std::uint32_t (&kind)[3], std::uint32_t seed) {
  using Mem = typename Space::memory_space;
  EvenCase<Space> c;
  const Dims d = dims_of(s);
  const Shape3 s3 = effective_shape(d);
  auto host = make_field<float>(Pattern::Spiky, d, seed);
  c.n = host.size();
  for (std::uint64_t i = 4; i < c.n; i += 97) host[i] = std::numeric_limits<float>::quiet_NaN();
  for (std::uint64_t i = 51; i < c.n; i += 203) host[i] = -std::numeric_limits<float>::infinity();
  Kokkos::View<float*, Mem> in("in", c.n);
  Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            host.data(), c.n));
  c.in = in;
  c.sh = spline::make_shape(s3.n[0], s3.n[1], s3.n[2]);
  c.cfg.anchor_stride = spline::default_anchor_stride(s3.rank);
  c.cfg.alpha = 1.5;
  for (int q = 0; q < 3; ++q) c.cfg.order[q] = order[q], c.cfg.kind[q] = kind[q];
  spline::level_steps(2 * c.e, c.cfg.alpha, spline::level_count(c.cfg.anchor_stride), c.steps);
  c.what = d.str() + " order " + std::to_string(order[0]) + std::to_string(order[1]) + std::to_string(order[2]) +
           " kinds " + std::to_string(kind[0]) + std::to_string(kind[1]) + std::to_string(kind[2]);
  return c;
}

// The passes ahead of the finest level's along x on the even-x grid
// (spline::traverse_even, as the compressor runs them on rows of quads) give
// the codes, code-0 residuals, reconstructions and verbatim count of
// spline::traverse, bit for bit: ranks 1-3, odd and even extents along y and
// z, all six pass orders (the pass along x first, between or last), every
// spline kind, NaN, Inf and outliers.
template <class Space>
void even_grid_equals_field(const Space& space) {
  using Mem = typename Space::memory_space;
  const std::uint32_t orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& s : {std::vector<std::uint64_t>{64, 12, 10}, {128, 19, 18}, {8, 9, 5}, {40, 21, 11}, {12, 7, 33},
                        {256, 6}, {16, 35}, {1024}, {8}})
    for (int o = 0; o < 6; ++o)
      for (std::uint32_t kind = 0; kind < 3; ++kind) {
        const std::uint32_t kinds[3] = {kind, (kind + 1) % 3, (kind + 2) % 3};
        const EvenCase<Space> c = even_case<Space>(s, orders[o], kinds, 5 + o + kind);
        const std::uint64_t n = c.n;
        ASSERT_TRUE(spline::even_x_applies(c.sh, c.cfg)) << c.what;
        Kokkos::View<float*, Mem> rec[2] = {Kokkos::View<float*, Mem>("rec", n), Kokkos::View<float*, Mem>("rec", n)};
        Kokkos::View<std::uint16_t*, Mem> codes[2] = {Kokkos::View<std::uint16_t*, Mem>("codes", n),
                                                      Kokkos::View<std::uint16_t*, Mem>("codes", n)};
        Kokkos::View<std::int32_t*, Mem> qv[2] = {Kokkos::View<std::int32_t*, Mem>("qv", n),
                                                  Kokkos::View<std::int32_t*, Mem>("qv", n)};
        Kokkos::View<std::uint64_t, Mem> nverb[2] = {Kokkos::View<std::uint64_t, Mem>("nverb"),
                                                     Kokkos::View<std::uint64_t, Mem>("nverb")};
        c.code(space, rec[0], codes[0], qv[0], nverb[0]);
        const std::uint64_t ne = spline::even_x_shape(c.sh).count();
        spline::EvenGrid<float, Mem> eg;
        eg.r = Kokkos::View<float*, Mem>("even_rec", ne);
        eg.codes = Kokkos::View<std::uint16_t*, Mem>("even_codes", ne);
        ASSERT_TRUE(spline::from_even_aligned(rec[1], codes[1]));
        const spline::CompressArrays<float, Mem> arrays{c.in, eg, rec[1], codes[1], qv[1], nverb[1]};
        spline::traverse_on(
            true, c.sh, c.cfg, c.steps, c.e,
            [&](const spline::Anchors& a, const quantize::QuantParams& qp, spline::PassGrid grid) {
              spline::compress_anchors_on<Space, float>(space, a, qp, grid, 64, arrays);
            },
            [&](const spline::Pass& p, spline::PassGrid grid) {
              spline::compress_pass_on<Space, float>(space, p, grid, c.e, 64, arrays);
            });
        space.fence();
        const auto c0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes[0]);
        const auto c1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes[1]);
        const auto q0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), qv[0]);
        const auto q1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), qv[1]);
        const auto r0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rec[0]);
        const auto r1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rec[1]);
        // Where the finest level's last pass is along x, the even-x grid's
        // points never reach the field's reconstructions: nothing reads them.
        std::uint32_t last_dim = 0;
        for (int q = 0; q < 3; ++q)
          if (c.sh.n[c.cfg.order[q]] > 1) last_dim = c.cfg.order[q];
        const bool x_last = last_dim == 0;
        std::uint64_t code_diff = 0, q_diff = 0, r_diff = 0, zero = 0, v0 = 0, v1 = 0;
        for (std::uint64_t i = 0; i < n; ++i) {
          code_diff += c0(i) != c1(i) ? 1 : 0;
          if (!x_last || (i % c.sh.n[0]) % 2 == 1) r_diff += std::memcmp(&r0(i), &r1(i), sizeof(float)) != 0 ? 1 : 0;
          if (c0(i) == 0) {
            ++zero;
            q_diff += q0(i) != q1(i) ? 1 : 0;
          }
        }
        Kokkos::deep_copy(v0, nverb[0]);
        Kokkos::deep_copy(v1, nverb[1]);
        EXPECT_EQ(code_diff, 0u) << c.what;
        EXPECT_EQ(q_diff, 0u) << c.what;
        EXPECT_EQ(r_diff, 0u) << c.what;
        EXPECT_EQ(v1, v0) << c.what;
        EXPECT_GT(zero, 0u) << c.what;
        if (n > 100) EXPECT_GT(v0, 0u) << c.what;  // the NaNs are verbatim
      }
}
TYPED_TEST(InterpPipeline, EvenGridEqualsField) { even_grid_equals_field(TypeParam()); }

// Free function: CUDA device lambdas cannot live in gtest's private TestBody.
// The verbatim values of every `every`-th element (1: the field's, 2: the
// even-x grid's) into out, as the decompressor puts them.
template <class Space>
void copy_verbatim(const Space& space, Kokkos::View<std::uint16_t*, typename Space::memory_space> codes,
                   Kokkos::View<std::int32_t*, typename Space::memory_space> qv,
                   Kokkos::View<const float*, typename Space::memory_space> in,
                   Kokkos::View<float*, typename Space::memory_space> out, std::uint64_t every = 1) {
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(space, 0, qv.extent(0) / every), KOKKOS_LAMBDA(const std::uint64_t j) {
        const std::uint64_t i = every * j;
        if (codes(i) == 0 && qv(i) == spline::kVerbatim) out(j) = in(i);  // qv: code-0 positions only
      });
}

// The decompressor on the even-x grid (spline::traverse_even) decodes the
// values of spline::traverse, bit for bit, and meets every code-0 position
// once: the six pass orders, every spline kind, ranks 1-3, NaN and Inf.
TYPED_TEST(InterpPipeline, EvenGridDecodesAsField) {
  using Mem = typename TypeParam::memory_space;
  const TypeParam space;
  const std::uint32_t orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& s : {std::vector<std::uint64_t>{128, 19, 18}, {12, 7, 33}, {16, 35}, {1024}})
    for (int o = 0; o < 6; ++o) {
      const std::uint32_t kinds[3] = {std::uint32_t(o) % 3, std::uint32_t(o + 1) % 3, std::uint32_t(o + 2) % 3};
      const EvenCase<TypeParam> c = even_case<TypeParam>(s, orders[o], kinds, 3 + o);
      const std::uint64_t n = c.n;
      Kokkos::View<float*, Mem> rec("rec", n), out[2] = {Kokkos::View<float*, Mem>("out", n),
                                                         Kokkos::View<float*, Mem>("out", n)};
      Kokkos::View<float*, Mem> even("even", n / 2);
      Kokkos::View<std::uint16_t*, Mem> codes("codes", n);
      Kokkos::View<std::int32_t*, Mem> qv("qv", n);
      Kokkos::View<std::uint64_t, Mem> nverb("nverb"), zeros[2] = {Kokkos::View<std::uint64_t, Mem>("zeros"),
                                                                   Kokkos::View<std::uint64_t, Mem>("zeros")};
      c.code(space, rec, codes, qv, nverb);
      for (int k = 0; k < 2; ++k) copy_verbatim<TypeParam>(space, codes, qv, c.in, out[k]);
      copy_verbatim<TypeParam>(space, codes, qv, c.in, even, 2);
      const Kokkos::View<const std::int32_t*, Mem> cqv = qv;
      const Kokkos::View<const std::uint16_t*, Mem> ccodes = codes;
      spline::traverse(
          c.sh, c.cfg, c.steps, c.e,
          [&](const spline::Anchors& a, const quantize::QuantParams& qp) {
            spline::decompress_anchors<TypeParam, float>(space, a, qp, ccodes, cqv, 64, out[0], zeros[0]);
          },
          [&](const spline::Pass& p) {
            spline::decompress_pass<TypeParam, float>(space, p, ccodes, cqv, 64, out[0], zeros[0]);
          });
      ASSERT_TRUE(spline::even_x_applies(c.sh, c.cfg) && spline::quads_aligned<float>(out[1])) << c.what;
      const spline::DecompressArrays<float, Mem> arrays{ccodes, cqv, even, out[1], zeros[1]};
      spline::traverse_on(
          true, c.sh, c.cfg, c.steps, c.e,
          [&](const spline::Anchors& a, const quantize::QuantParams& qp, spline::PassGrid grid) {
            spline::decompress_anchors_on<TypeParam, float>(space, a, qp, grid, 64, arrays);
          },
          [&](const spline::Pass& p, spline::PassGrid grid) {
            spline::decompress_pass_on<TypeParam, float>(space, p, grid, 64, arrays);
          });
      space.fence();
      const auto o0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out[0]);
      const auto o1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out[1]);
      std::uint64_t diff = 0, z0 = 0, z1 = 0;
      for (std::uint64_t i = 0; i < n; ++i) diff += std::memcmp(&o0(i), &o1(i), sizeof(float)) != 0 ? 1 : 0;
      Kokkos::deep_copy(z0, zeros[0]);
      Kokkos::deep_copy(z1, zeros[1]);
      EXPECT_EQ(diff, 0u) << c.what;
      EXPECT_EQ(z1, z0) << c.what;
      EXPECT_GT(z0, 0u) << c.what;
    }
}

// The decompressor's values are exactly the compressor's reconstruction
// (the values it predicted from), element for element, bit for bit.
TYPED_TEST(InterpPipeline, DecompressionReproducesPredictions) {
  using Mem = typename TypeParam::memory_space;
  const TypeParam space;
  // {2112, 6}: anchor rows of 132, decoded a row a thread (decompress_anchors)
  for (const auto& s : {std::vector<std::uint64_t>{37, 21, 11}, {100, 33}, {2000}, {2112, 6}}) {
    const Dims d = dims_of(s);
    const Shape3 s3 = effective_shape(d);
    const auto host = make_field<float>(Pattern::Spiky, d);
    const std::uint64_t n = host.size();
    Kokkos::View<float*, Mem> in("in", n), rec("rec", n), out("out", n);
    Kokkos::View<std::uint16_t*, Mem> codes("codes", n);
    Kokkos::View<std::int32_t*, Mem> qv("qv", n);
    Kokkos::View<std::uint64_t, Mem> nverb("nverb"), zeros("zeros");
    Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                              host.data(), n));
    const spline::Shape sh = spline::make_shape(s3.n[0], s3.n[1], s3.n[2]);
    spline::Config cfg;
    cfg.anchor_stride = spline::default_anchor_stride(s3.rank);
    cfg.alpha = 1.5;
    cfg.kind[1] = spline::kNatural;
    cfg.kind[2] = spline::kLinear;
    cfg.order[0] = 2, cfg.order[1] = 0, cfg.order[2] = 1;
    double steps[16];
    const double e = 1e-3;
    spline::level_steps(2 * e, cfg.alpha, spline::level_count(cfg.anchor_stride), steps);
    const Kokkos::View<const float*, Mem> cin = in;
    spline::traverse(
        sh, cfg, steps, e,
        [&](const spline::Anchors& a, const quantize::QuantParams& qp) {
          spline::compress_anchors<TypeParam, float>(space, a, qp, 64, cin, rec, codes, qv, nverb);
        },
        [&](const spline::Pass& p) {
          spline::Pass all = p;  // keep every reconstruction, the last pass's too, to compare below
          all.last = false;
          spline::compress_pass<TypeParam, float>(space, all, e, 64, cin, rec, codes, qv, nverb);
        });
    // verbatim elements first, as the pipeline does
    copy_verbatim<TypeParam>(space, codes, qv, cin, out);
    const Kokkos::View<const std::int32_t*, Mem> cqv = qv;
    const Kokkos::View<const std::uint16_t*, Mem> ccodes = codes;
    spline::traverse(
        sh, cfg, steps, e,
        [&](const spline::Anchors& a, const quantize::QuantParams& qp) {
          spline::decompress_anchors<TypeParam, float>(space, a, qp, ccodes, cqv, 64, out, zeros);
        },
        [&](const spline::Pass& p) { spline::decompress_pass<TypeParam, float>(space, p, ccodes, cqv, 64, out, zeros); });
    space.fence();
    auto r_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rec);
    auto o_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    auto c_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes);
    std::uint64_t diff = 0, coded = 0, z = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      diff += std::memcmp(&r_h(i), &o_h(i), sizeof(float)) != 0 ? 1 : 0;
      coded += c_h(i) != 0 ? 1 : 0;
    }
    Kokkos::deep_copy(z, zeros);
    EXPECT_EQ(diff, 0u) << d.str();
    EXPECT_EQ(z, n - coded) << d.str();  // the decoder met every code-0 position once
    EXPECT_GT(coded, n / 2) << d.str();  // the spline predicts: most elements are coded
    EXPECT_TRUE(within_bound(host.data(), o_h.data(), n, e));
  }
}

// The finest level in tiles (spline::traverse_tiled, as the spline-kind
// trial runs it on GPUs) gives the codes, the residuals of code-0 positions
// and the verbatim count of the finest level in passes (spline::traverse),
// bit for bit: on every dimension order, tile sizes that cut the field at
// odd places (and fields smaller than a tile), ranks 1-3, NaN, Inf and
// outliers; and two copies of the field coded in one launch (ft.items), the
// second at an offset (out_base), as the trial codes its boxes.
TYPED_TEST(InterpPipeline, FineTilesEqualPasses) {
  using Mem = typename TypeParam::memory_space;
  const TypeParam space;
  const std::uint32_t orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  struct Case {
    std::vector<std::uint64_t> dims;
    std::uint32_t side;
  };
  const std::vector<Case> cases = {{{37, 21, 11}, 4}, {{37, 21, 11}, 16}, {{2, 3, 40}, 6}, {{20, 3, 9}, 0},
                                   {{100, 33}, 8},     {{33, 2}, 0},       {{2000}, 64},     {{5}, 0}};
  for (const Case& cs : cases)
    for (int o = 0; o < 6; ++o) {
      const Dims d = dims_of(cs.dims);
      const Shape3 s3 = effective_shape(d);
      auto host = make_field<float>(Pattern::Spiky, d, 11 + o);
      const std::uint64_t n = host.size();
      for (std::uint64_t i = 3; i < n; i += 101) host[i] = std::numeric_limits<float>::quiet_NaN();
      for (std::uint64_t i = 50; i < n; i += 211) host[i] = -std::numeric_limits<float>::infinity();
      // The field twice, one copy after the other: the tiles code both (items).
      std::vector<float> twice(host);
      twice.insert(twice.end(), host.begin(), host.end());
      Kokkos::View<float*, Mem> in("in", 2 * n), rec("rec", 3 * n);
      Kokkos::View<std::uint16_t*, Mem> codes[2] = {Kokkos::View<std::uint16_t*, Mem>("codes", n),
                                                    Kokkos::View<std::uint16_t*, Mem>("codes", 3 * n)};
      Kokkos::View<std::int32_t*, Mem> qv[2] = {Kokkos::View<std::int32_t*, Mem>("qv", n),
                                                Kokkos::View<std::int32_t*, Mem>("qv", 3 * n)};
      Kokkos::View<std::uint64_t, Mem> nverb[2] = {Kokkos::View<std::uint64_t, Mem>("nverb"),
                                                   Kokkos::View<std::uint64_t, Mem>("nverb")};
      Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                twice.data(), 2 * n));
      const Kokkos::View<const float*, Mem> cin = in;
      const spline::Shape sh = spline::make_shape(s3.n[0], s3.n[1], s3.n[2]);
      spline::Config cfg;
      cfg.anchor_stride = spline::default_anchor_stride(s3.rank);
      cfg.alpha = 1.5;
      for (int q = 0; q < 3; ++q) cfg.order[q] = orders[o][q];
      cfg.kind[0] = spline::kNotAKnot;
      cfg.kind[1] = o % 2 ? spline::kNatural : spline::kLinear;
      cfg.kind[2] = o % 3 ? spline::kNatural : spline::kNotAKnot;
      double steps[16];
      const double e = 1e-3;
      spline::level_steps(2 * e, cfg.alpha, spline::level_count(cfg.anchor_stride), steps);
      // Passes: the first copy into codes[0]. Tiles: both copies into codes[1]
      // at [n, 3n) (coarser levels by passes, each copy on its own).
      spline::traverse(
          sh, cfg, steps, e,
          [&](const spline::Anchors& a, const quantize::QuantParams& qp) {
            spline::compress_anchors<TypeParam, float>(space, a, qp, 64, cin, rec, codes[0], qv[0], nverb[0]);
          },
          [&](const spline::Pass& p) {
            spline::compress_pass<TypeParam, float>(space, p, e, 64, cin, rec, codes[0], qv[0], nverb[0]);
          });
      for (std::uint64_t copy = 0; copy < 2; ++copy) {
        const auto at = std::make_pair((1 + copy) * n, (2 + copy) * n);
        const Kokkos::View<const float*, Mem> cin_c = Kokkos::subview(cin, std::make_pair(copy * n, (copy + 1) * n));
        const Kokkos::View<float*, Mem> rec_c = Kokkos::subview(rec, at);
        const Kokkos::View<std::uint16_t*, Mem> codes_c = Kokkos::subview(codes[1], at);
        const Kokkos::View<std::int32_t*, Mem> qv_c = Kokkos::subview(qv[1], at);
        code_coarser_levels<TypeParam>(space, sh, cfg, steps, e, cin_c, rec_c, codes_c, qv_c, nverb[1]);
      }
      spline::FineTiles ft = spline::make_fine_tiles(sh, cfg, steps[0], cs.side);
      ft.items = 2;
      ft.item_n = n;
      spline::compress_fine<TypeParam, float>(space, ft, e, 64, cin, rec, codes[1], qv[1], nverb[1], n);
      space.fence();
      const auto c0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes[0]);
      const auto c1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes[1]);
      const auto q0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), qv[0]);
      const auto q1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), qv[1]);
      std::uint64_t code_diff = 0, q_diff = 0, zero = 0, v0 = 0, v1 = 0;
      for (std::uint64_t copy = 1; copy <= 2; ++copy)
        for (std::uint64_t i = 0; i < n; ++i) {
          code_diff += c0(i) != c1(copy * n + i) ? 1 : 0;
          if (c0(i) == 0) {
            ++zero;
            q_diff += q0(i) != q1(copy * n + i) ? 1 : 0;
          }
        }
      Kokkos::deep_copy(v0, nverb[0]);
      Kokkos::deep_copy(v1, nverb[1]);
      const std::string what = d.str() + " side " + std::to_string(cs.side) + " order " + std::to_string(o);
      EXPECT_EQ(code_diff, 0u) << what;
      EXPECT_EQ(q_diff, 0u) << what;
      EXPECT_EQ(v1, 2 * v0) << what;  // each verbatim element of each copy counted once
      EXPECT_GT(zero, 0u) << what;
      if (n > 100) EXPECT_GT(v0, 0u) << what;  // the NaNs are verbatim
    }
}

container::Header header_of(const Bytes& s) { return container::read(s.data(), s.size()).header; }

// The trial's two configurations in one launch (FineTiles::variant_from):
// the variant's items read the input of the first ones and predict with
// variant_kind, and give what a launch of their own configuration's tiles
// gives; the first items are unchanged. Both read the same coarser levels.
TYPED_TEST(InterpPipeline, FineTilesVariantEqualsItsOwnLaunch) {
  using Mem = typename TypeParam::memory_space;
  const TypeParam space;
  for (const std::vector<std::uint64_t>& dd : {std::vector<std::uint64_t>{37, 21, 11}, {100, 33}}) {
    const Dims d = dims_of(dd);
    const Shape3 s3 = effective_shape(d);
    auto host = make_field<float>(Pattern::Spiky, d, 5);
    const std::uint64_t n = host.size();
    for (std::uint64_t i = 3; i < n; i += 101) host[i] = std::numeric_limits<float>::quiet_NaN();
    Kokkos::View<float*, Mem> in("in", n), rec("rec", 2 * n);
    Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                              host.data(), n));
    const Kokkos::View<const float*, Mem> cin = in;
    const spline::Shape sh = spline::make_shape(s3.n[0], s3.n[1], s3.n[2]);
    spline::Config cfg, lin;
    cfg.anchor_stride = spline::default_anchor_stride(s3.rank);
    cfg.order[0] = 1, cfg.order[1] = 2, cfg.order[2] = 0;
    cfg.kind[0] = spline::kNatural, cfg.kind[1] = spline::kNotAKnot, cfg.kind[2] = spline::kNatural;
    lin = cfg;
    for (auto& k : lin.kind) k = spline::kLinear;
    double steps[16];
    const double e = 1e-3;
    spline::level_steps(2 * e, 1.5, spline::level_count(cfg.anchor_stride), steps);
    // The coarser levels once (the tuned configuration's), copied to both halves.
    Kokkos::View<std::uint16_t*, Mem> codes[2] = {Kokkos::View<std::uint16_t*, Mem>("codes", 2 * n),
                                                  Kokkos::View<std::uint16_t*, Mem>("codes", 2 * n)};
    Kokkos::View<std::int32_t*, Mem> qv[2] = {Kokkos::View<std::int32_t*, Mem>("qv", 2 * n),
                                              Kokkos::View<std::int32_t*, Mem>("qv", 2 * n)};
    Kokkos::View<std::uint64_t, Mem> nverb[2] = {Kokkos::View<std::uint64_t, Mem>("nverb"),
                                                 Kokkos::View<std::uint64_t, Mem>("nverb")};
    const auto first = std::make_pair(std::uint64_t(0), n), second = std::make_pair(n, 2 * n);
    code_coarser_levels<TypeParam>(space, sh, cfg, steps, e, cin, rec, codes[0], qv[0], nverb[0]);
    Kokkos::deep_copy(space, Kokkos::subview(rec, second), Kokkos::subview(rec, first));
    const spline::FineTiles own[2] = {spline::make_fine_tiles(sh, cfg, steps[0], 8),
                                      spline::make_fine_tiles(sh, lin, steps[0], 8)};
    // Each configuration's tiles on their own (the second into [n, 2n)), then both in one launch.
    spline::compress_fine<TypeParam, float>(space, own[0], e, 64, cin, rec, codes[0], qv[0], nverb[0]);
    spline::compress_fine<TypeParam, float>(space, own[1], e, 64, cin, rec, codes[0], qv[0], nverb[0], n);
    spline::FineTiles both = own[0];
    both.items = 2;
    both.item_n = n;
    both.variant_from = 1;
    for (int p = 0; p < 3; ++p) both.variant_kind[p] = own[1].pass[p].kind;
    spline::compress_fine<TypeParam, float>(space, both, e, 64, cin, rec, codes[1], qv[1], nverb[1]);
    space.fence();
    const auto c0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes[0]);
    const auto c1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes[1]);
    const auto q0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), qv[0]);
    const auto q1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), qv[1]);
    std::uint64_t fine = 0, code_diff = 0, q_diff = 0, kind_diff = 0;
    for (std::uint64_t i = 0; i < 2 * n; ++i) {
      if (c1(i) == 0 && q1(i) == 0) continue;  // not a point of the finest level (left as allocated)
      ++fine;
      code_diff += c0(i) != c1(i) ? 1 : 0;
      if (c1(i) == 0) q_diff += q0(i) != q1(i) ? 1 : 0;
      if (i < n) kind_diff += c1(i) != c1(n + i) ? 1 : 0;
    }
    EXPECT_GT(fine, n) << d.str();
    EXPECT_EQ(code_diff, 0u) << d.str();
    EXPECT_EQ(q_diff, 0u) << d.str();
    EXPECT_GT(kind_diff, 0u) << d.str();  // the variant's splines were used
  }
}

// A field smooth along z, rough along x: the tuner must pass along x first and z
// last, record it, and choose the same way every time and on every backend.
TYPED_TEST(InterpPipeline, AutoTuneRecordedAndStable) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({48, 40, 32});
  std::vector<float> in(d.count());
  for (std::uint64_t i = 0; i < in.size(); ++i) {
    const double x = double(i % 48), y = double(i / 48 % 40), z = double(i / (48 * 40));
    in[i] = float(std::sin(1.3 * x) + 0.2 * std::sin(0.35 * y) + 0.01 * std::sin(0.05 * z));
  }
  const auto s1 = compress(in.data(), DType::F32, d, interp_opts(b, ErrorMode::REL, 1e-4));
  const auto s2 = compress(in.data(), DType::F32, d, interp_opts(b, ErrorMode::REL, 1e-4));
  EXPECT_TRUE(s1 == s2);
  const auto h = header_of(s1);
  const auto order = h.u32s(container::Param::InterpOrder, 3);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(h.u32(container::Param::InterpAnchorStride), 8u);
  EXPECT_NEAR(h.f64(container::Param::InterpAlpha), 1.25, 1e-12);  // Eq. 1 at 1e-4
  // transposed: rough along z, smooth along x
  std::vector<float> t(in.size());
  const Dims dt = dims_of({32, 40, 48});
  for (std::uint64_t x = 0; x < 48; ++x)
    for (std::uint64_t y = 0; y < 40; ++y)
      for (std::uint64_t z = 0; z < 32; ++z) t[z + 32 * (y + 40 * x)] = in[x + 48 * (y + 40 * z)];
  const auto s3 = compress(t.data(), DType::F32, dt, interp_opts(b, ErrorMode::REL, 1e-4));
  EXPECT_EQ(header_of(s3).u32s(container::Param::InterpOrder, 3), (std::vector<std::uint32_t>{2, 1, 0}));
  const Field f = decompress(s3.data(), s3.size(), b);
  EXPECT_TRUE(within_bound(t.data(), reinterpret_cast<const float*>(f.bytes.data()), t.size(),
                           1e-4 * 2.42));  // range < 2.42
}

TYPED_TEST(InterpPipeline, BeatsLorenzoOnSmoothFields) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({64, 64, 64});
  const auto in = make_field<float>(Pattern::Smooth, d);
  for (double e : {1e-2, 1e-3, 1e-4}) {
    Options opt = interp_opts(b, ErrorMode::REL, e);
    const auto si = compress(in.data(), DType::F32, d, opt);
    opt.predictor = PredictorId::Lorenzo;
    const auto sl = compress(in.data(), DType::F32, d, opt);
    EXPECT_LT(si.size(), sl.size()) << "REL " << e;
  }
}

// Radius choice (--radius 0). The cost model on hand-made spreads: all
// residuals tiny -> the smallest alphabet; a heavy tail -> an alphabet that
// holds it; a few huge residuals -> outliers, not a 8192-symbol codebook.
TEST(InterpRadius, ChoiceFollowsTheResiduals) {
  spline::Spread s{};
  EXPECT_EQ(spline::choose_radius(s, 4), 16u);  // nothing coded
  s.core = 1000000;
  EXPECT_EQ(spline::choose_radius(s, 4), 16u);
  s.bucket[10 - spline::kSpreadMinLog] = 50000;  // 1024 <= |q| < 2048: 5% of the field
  EXPECT_EQ(spline::choose_radius(s, 4), 2048u);
  s.bucket[10 - spline::kSpreadMinLog] = 0;
  s.bucket[spline::kSpreadMaxLog - spline::kSpreadMinLog] = 50;  // >= 4096: always outliers
  s.bucket[5 - spline::kSpreadMinLog] = 3;                       // three residuals in [32, 64)
  EXPECT_EQ(spline::choose_radius(s, 4), 16u);
  s.bucket[5 - spline::kSpreadMinLog] = 30000;
  EXPECT_EQ(spline::choose_radius(s, 4), 64u);
}

// Free functions: CUDA device lambdas cannot live in gtest's private TestBody.
// Codes of radius kAutoRadiusMax for residuals q (kVerbatim: verbatim) on the
// backend, as the passes write them, and their histogram.
template <class Space>
struct WideCodes {
  Kokkos::View<std::uint16_t*, typename Space::memory_space> codes;
  std::vector<std::uint64_t> hist;
  std::uint64_t nverb = 0;
};
template <class Space>
std::vector<std::uint64_t> histogram_of(Kokkos::View<std::uint16_t*, typename Space::memory_space> codes,
                                        std::uint32_t r) {
  Kokkos::View<std::uint64_t*, typename Space::memory_space> h("hist", 2 * r);
  histogram::histogram<Space>(Space(), codes, h, r);
  const auto hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), h);
  return std::vector<std::uint64_t>(hh.data(), hh.data() + hh.extent(0));
}
template <class Space>
WideCodes<Space> wide_codes(const std::vector<std::int32_t>& q) {
  using Mem = typename Space::memory_space;
  const std::uint64_t n = q.size();
  Kokkos::View<std::int32_t*, Mem> d("q", n);
  Kokkos::deep_copy(d, Kokkos::View<const std::int32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                           q.data(), n));
  WideCodes<Space> w;
  w.codes = Kokkos::View<std::uint16_t*, Mem>("codes", n);
  const auto codes = w.codes;
  constexpr std::int32_t R = spline::kAutoRadiusMax;
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(0, n), KOKKOS_LAMBDA(const std::uint64_t i) {
        const std::int32_t v = d(i);
        const bool coded = v != spline::kVerbatim && v > -R && v < R;
        codes(i) = coded ? static_cast<std::uint16_t>(v + R) : std::uint16_t(0);
      });
  w.hist = histogram_of<Space>(w.codes, R);
  for (const std::int32_t v : q) w.nverb += v == spline::kVerbatim ? 1 : 0;
  return w;
}

std::vector<std::int32_t> spread_residuals() {
  std::vector<std::int32_t> q;
  for (std::int32_t i = 0; i < 200000; ++i) {
    const std::int32_t m = i % 5 == 0 ? (1 << 29) + i : (i * 7919) % 9000;  // up to 2^29 + 2e5 < 2^30
    q.push_back(i % 97 == 0 ? spline::kVerbatim : i % 2 ? -m : m);
  }
  return q;
}

// The radius choice's spread, from the histogram of the radius-4096 codes:
// every bucket as counted from the residuals themselves.
TYPED_TEST(InterpPipeline, SpreadFromHistogramCountsEveryBucket) {
  const std::vector<std::int32_t> q = spread_residuals();
  std::uint64_t want[spline::kSpreadMaxLog - spline::kSpreadMinLog + 1] = {};
  std::uint64_t core = 0;
  for (const std::int32_t v : q) {
    if (v == spline::kVerbatim) continue;
    const std::uint32_t a = static_cast<std::uint32_t>(v < 0 ? -v : v);
    if (a < 16) {
      ++core;
      continue;
    }
    int k = 0;
    while ((a >> (k + 1)) != 0) ++k;
    ++want[std::min(k, spline::kSpreadMaxLog) - spline::kSpreadMinLog];
  }
  const auto w = wide_codes<TypeParam>(q);
  const spline::Spread s = spline::spread_from_histogram(w.hist.data(), w.nverb);
  EXPECT_EQ(s.core, core);
  for (int b = 0; b <= spline::kSpreadMaxLog - spline::kSpreadMinLog; ++b) EXPECT_EQ(s.bucket[b], want[b]) << b;
}

// Reading the radius-4096 codes at a narrower radius (huffman::Narrow): the
// codes read are those of that radius computed from the residuals, their
// histogram is the one derived on the host, and count_outliers counts each
// block's code-0 positions at that radius.
TYPED_TEST(InterpPipeline, NarrowReadsTheCodesOfTheNarrowRadius) {
  const std::vector<std::int32_t> q = spread_residuals();
  for (const std::uint32_t r : {16u, 512u, 2048u}) {
    const auto w = wide_codes<TypeParam>(q);
    const huffman::Narrow narrow{spline::kAutoRadiusMax, r};
    const std::uint64_t nb = (q.size() + outliers::kCompactBlock - 1) / outliers::kCompactBlock;
    Kokkos::View<std::uint64_t*, typename TypeParam::memory_space> counts("counts", nb + 1);
    spline::count_outliers<TypeParam>(TypeParam(), w.codes, narrow, counts);
    const auto counts_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counts);
    const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.codes);
    std::vector<std::uint64_t> hist(2 * r, 0);
    std::uint64_t wrong = 0;
    const std::int32_t rad = static_cast<std::int32_t>(r);
    std::vector<std::uint64_t> zeros(nb, 0);
    for (std::size_t i = 0; i < q.size(); ++i) {
      const bool coded = q[i] != spline::kVerbatim && q[i] > -rad && q[i] < rad;
      const std::uint32_t s = narrow(c(i));
      wrong += coded ? (s != std::uint32_t(q[i] + rad)) : (s != 0);
      ++hist[s < 2 * r ? s : 0];
      zeros[i / outliers::kCompactBlock] += coded ? 0 : 1;
    }
    EXPECT_EQ(wrong, 0u) << r;
    EXPECT_EQ(hist, spline::narrow_histogram(w.hist.data(), r)) << r;
    for (std::uint64_t b = 0; b < nb; ++b) EXPECT_EQ(counts_h(b), zeros[b]) << r << " block " << b;
    // Where the histogram pass also counts the blocks' magnitude classes (CUDA),
    // the same histogram and the same counts from them.
    Kokkos::View<std::uint64_t*, typename TypeParam::memory_space> wide("wide", 2 * spline::kAutoRadiusMax);
    Kokkos::View<std::uint32_t*, typename TypeParam::memory_space> classes("classes", nb * histogram::kCodeClasses);
    const bool classed =
        histogram::histogram_classes<TypeParam>(TypeParam(), w.codes, wide, spline::kAutoRadiusMax, classes);
#if defined(KSZ_HAVE_CUDA)
    EXPECT_EQ(classed, (std::is_same<TypeParam, Kokkos::Cuda>::value && cuda_spec::enabled())) << r;
#endif
    if (classed) {
      const auto wide_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), wide);
      EXPECT_TRUE(std::equal(w.hist.begin(), w.hist.end(), wide_h.data())) << r;
      Kokkos::deep_copy(counts, 0);
      spline::count_outliers_from_classes<TypeParam>(TypeParam(), classes, nb, r, counts);
      const auto from_classes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counts);
      for (std::uint64_t b = 0; b < nb; ++b) EXPECT_EQ(from_classes(b), zeros[b]) << r << " block " << b;
    }
  }
}

// End to end: the automatic radius is recorded, reported, keeps the bound,
// and beats the fixed 512 where 512 fits badly: a loose bound on a smooth
// field (codebook-dominated) and a tight bound on a noisy one (outliers).
TYPED_TEST(InterpPipeline, AutomaticRadiusBeatsTheFixedOneWhereItFitsBadly) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({64, 48, 40});
  struct Case {
    Pattern p;
    double e;
    bool larger;  // expect a radius above 512 (else below)
  };
  for (const Case c : {Case{Pattern::Smooth, 1e-2, false}, Case{Pattern::Noisy, 1e-4, true}}) {
    const auto in = make_field<float>(c.p, d);
    Options opt = interp_opts(b, ErrorMode::REL, c.e);
    Report ra, rf;
    const auto sa = compress(in.data(), DType::F32, d, opt, &ra);
    opt.radius = 512;
    const auto sf = compress(in.data(), DType::F32, d, opt, &rf);
    const std::uint32_t r = header_of(sa).u32(container::Param::Radius);
    EXPECT_EQ(ra.radius, r);
    EXPECT_EQ(rf.radius, 512u);
    EXPECT_TRUE(c.larger ? r > 512 : r < 512) << name(c.p) << " radius " << r;
    EXPECT_LT(sa.size(), sf.size()) << name(c.p) << " radius " << r;
    const Field f = decompress(sa.data(), sa.size(), b);
    EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const float*>(f.bytes.data()), in.size(), ra.abs_bound));
  }
}

// The spline-kind trial's sample: whole boxes of the field, spread over it,
// one after the other along the slowest dimension; checked element by element.
template <class Space>
std::vector<float> gathered(const spline::Shape& sh, const spline::Sample& sm, const std::vector<float>& host) {
  Kokkos::View<float*, typename Space::memory_space> in("in", host.size()), out("out", sm.shape.count());
  Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            host.data(), host.size()));
  spline::gather_sample<Space, float>(Space(), sh, sm, in, out);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

TYPED_TEST(InterpPipeline, TrialSampleIsWholeBoxesOfTheField) {
  struct Want {
    std::vector<std::uint64_t> dims;
    int rank;
    std::uint64_t boxes, stacked[3];
  };
  for (const Want& w : {Want{{200, 180, 100}, 3, 4, {40, 40, 160}}, Want{{100, 70, 85}, 3, 2, {40, 40, 80}},
                        Want{{600, 500}, 2, 1, {256, 256, 1}}, Want{{1200, 520}, 2, 2, {256, 512, 1}},
                        Want{{300000}, 1, 1, {65536, 1, 1}}, Want{{30, 90, 41}, 3, 1, {30, 40, 40}}}) {
    const Dims d = dims_of(w.dims);
    const Shape3 s3 = effective_shape(d);
    const spline::Shape sh = spline::make_shape(s3.n[0], s3.n[1], s3.n[2]);
    const spline::Sample sm = spline::plan_sample(sh, w.rank);
    EXPECT_EQ(sm.boxes, w.boxes) << d.str();
    for (int k = 0; k < 3; ++k) EXPECT_EQ(sm.shape.n[k], w.stacked[k]) << d.str() << " dim " << k;
    std::vector<float> host(d.count());
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i);  // exact up to 2^24
    const auto got = gathered<TypeParam>(sh, sm, host);
    const std::uint64_t G = sm.grid[0] * sm.grid[1] * sm.grid[2];
    std::uint64_t bad = 0;
    for (std::uint64_t i = 0; i < got.size(); ++i) {
      std::uint64_t c[3] = {i % sm.shape.n[0], i / sm.shape.n[0] % sm.shape.n[1], i / (sm.shape.n[0] * sm.shape.n[1])};
      const std::uint64_t k = c[sm.stack] / sm.box[sm.stack];
      c[sm.stack] %= sm.box[sm.stack];
      const std::uint64_t j = k * G / sm.boxes;
      const std::uint64_t b[3] = {j % sm.grid[0], j / sm.grid[0] % sm.grid[1], j / (sm.grid[0] * sm.grid[1])};
      std::uint64_t src = 0;
      for (int e = 0; e < 3; ++e) {
        ASSERT_LT(b[e] * sm.box[e] + c[e], sh.n[e]);
        src += (b[e] * sm.box[e] + c[e]) * sh.stride[e];
      }
      bad += got[i] != host[src] ? 1 : 0;
    }
    EXPECT_EQ(bad, 0u) << d.str();
  }
}

// The trial keeps cubic splines on a smooth field and picks linear ones on
// an edged one (blocks of constants: cubic splines overshoot at every edge),
// on the whole field and on a sampled one (> kTrialWhole elements), with the
// same bytes on every backend and the bound on every element.
TYPED_TEST(InterpPipeline, SplineTrialPicksLinearOnEdgedFields) {
  const Backend b = backend_of<TypeParam>();
  for (const auto& s : {std::vector<std::uint64_t>{48, 40, 32}, {90, 80, 70}}) {
    const Dims d = dims_of(s);
    for (bool edged : {false, true}) {
      std::vector<float> in(d.count());
      for (std::uint64_t i = 0; i < in.size(); ++i) {
        const std::uint64_t x = i % d.n[0], y = i / d.n[0] % d.n[1], z = i / (d.n[0] * d.n[1]);
        in[i] = edged ? float(((x / 5) * 7 + (y / 6) * 3 + (z / 7)) % 4)
                      : float(std::sin(0.05 * double(x)) * std::cos(0.04 * double(y)) + 0.01 * double(z));
      }
      Options opt = interp_opts(b, ErrorMode::REL, 1e-3);
      const auto mine = compress(in.data(), DType::F32, d, opt);
      const auto kind = header_of(mine).u32s(container::Param::InterpNatural, 3);
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(kind[k] == spline::kLinear, edged) << d.str() << (edged ? " edged" : " smooth") << " dim " << k;
      const StreamInfo info = inspect(mine.data(), mine.size());
      EXPECT_EQ(info.radius, header_of(mine).u32(container::Param::Radius));
      EXPECT_NE(info.detail.find(edged ? "x linear, y linear, z linear" : "x cubic"), std::string::npos) << info.detail;
      opt.backend = Backend::Serial;
      EXPECT_TRUE(mine == compress(in.data(), DType::F32, d, opt)) << d.str() << ": bytes differ from serial";
      const Field f = decompress(mine.data(), mine.size(), b);
      EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const float*>(f.bytes.data()), in.size(), 1e-3 * 4.0))
          << d.str();
    }
  }
}

// --predictor auto: the stream is byte for byte the smaller of the Lorenzo
// and interp streams, the report says which and both sizes; over these
// fields each predictor wins somewhere. PW_REL falls back to Lorenzo.
TYPED_TEST(InterpPipeline, AutoPredictorKeepsTheSmallerStream) {
  const Backend b = backend_of<TypeParam>();
  bool won[2] = {false, false};
  for (const auto& s : {std::vector<std::uint64_t>{64, 64, 64}, {3000}, {40, 30, 20}})
    for (Pattern p : {Pattern::Smooth, Pattern::Noisy, Pattern::Ramp}) {
      const Dims d = dims_of(s);
      const auto in = make_field<float>(p, d);
      Options opt = interp_opts(b, ErrorMode::REL, 1e-3);
      const auto si = compress(in.data(), DType::F32, d, opt);
      opt.predictor = PredictorId::Lorenzo;
      const auto sl = compress(in.data(), DType::F32, d, opt);
      opt.predictor = PredictorId::Auto;
      Report rep;
      const auto sa = compress(in.data(), DType::F32, d, opt, &rep);
      const bool interp = si.size() < sl.size();
      EXPECT_TRUE(sa == (interp ? si : sl)) << name(p) << " " << d.str();
      EXPECT_EQ(rep.predictor, interp ? PredictorId::Interp : PredictorId::Lorenzo);
      EXPECT_EQ(rep.auto_lorenzo_bytes, sl.size());
      EXPECT_EQ(rep.auto_interp_bytes, si.size());
      EXPECT_EQ(rep.output_bytes, sa.size());
      won[interp ? 1 : 0] = true;
    }
  EXPECT_TRUE(won[0] && won[1]) << "lorenzo won: " << won[0] << ", interp won: " << won[1];
  const Dims d = dims_of({30, 20});
  const auto in = make_field<float>(Pattern::Smooth, d);
  Options opt = interp_opts(b, ErrorMode::PW_REL, 1e-3);
  opt.predictor = PredictorId::Auto;
  const auto s = compress(in.data(), DType::F32, d, opt);
  const Field f = decompress(s.data(), s.size(), b);
  const float* out = reinterpret_cast<const float*>(f.bytes.data());
  for (std::size_t i = 0; i < in.size(); ++i) ASSERT_LE(std::fabs(out[i] - in[i]), 1e-3 * std::fabs(in[i])) << i;
}

TEST(InterpPipelineHostile, RejectsCorruptStreams) {
  const Dims d = dims_of({20, 12, 9});
  auto in = make_field<float>(Pattern::Fill, d);
  in[5] = std::numeric_limits<float>::quiet_NaN();  // a verbatim element: its segment's size depends on the dtype
  Options opt = interp_opts(Backend::Serial, ErrorMode::REL, 1e-3);
  opt.radius = 512;  // fixed, so the radius tampers below change it
  const auto good = compress(in.data(), DType::F32, d, opt);
  for (std::size_t cut : {std::size_t(0), std::size_t(10), good.size() / 2, good.size() - 1})
    EXPECT_THROW(decompress(good.data(), cut, Backend::Serial), CorruptStream) << cut;
  for (std::size_t i = 0; i < good.size(); i += 7) {
    auto bad = good;
    bad[i] ^= 0x5A;
    EXPECT_THROW(decompress(bad.data(), bad.size(), Backend::Serial), CorruptStream) << i;
  }
  // Valid checksums, lying parameters: rebuild the stream from a tampered header.
  const container::Parsed p = container::read(good.data(), good.size());
  using container::Param;
  auto rebuild = [&](auto&& tamper, std::vector<container::Segment> segs) {
    container::Header h = p.header;
    tamper(h);
    return container::write(h, segs);
  };
  const auto& segs = p.segments;
  std::vector<std::function<void(container::Header&)>> tampers = {
      [](container::Header& h) { h.set_u32(Param::InterpAnchorStride, 3); },
      [](container::Header& h) { h.set_u32(Param::InterpAnchorStride, 0); },
      [](container::Header& h) { h.set_u32(Param::InterpAnchorStride, 1u << 20); },
      [](container::Header& h) { h.set_f64(Param::InterpAlpha, std::nan("")); },
      [](container::Header& h) { h.set_f64(Param::InterpAlpha, 0.5); },
      [](container::Header& h) { h.set_u32s(Param::InterpOrder, {0, 0, 1}); },
      [](container::Header& h) { h.set_u32s(Param::InterpOrder, {0, 1, 7}); },
      [](container::Header& h) { h.set_u32s(Param::InterpNatural, {0, 3, 0}); },
      [](container::Header& h) { h.params.erase(std::uint16_t(Param::InterpOrder)); },
      [](container::Header& h) { h.set_u64(Param::VerbatimCount, h.u64(Param::VerbatimCount) + 1); },
      [](container::Header& h) { h.set_u64(Param::VerbatimCount, ~0ull); },
      [](container::Header& h) { h.set_u32(Param::Radius, 0); },
      [](container::Header& h) { h.set_u32(Param::Radius, 256); },
      [](container::Header& h) { h.dims.n[2] = 1u << 30; },
      [](container::Header& h) { h.set_f64(Param::QuantStep, -1); },
      [](container::Header& h) { h.dtype = DType::F64; },
  };
  for (std::size_t k = 0; k < tampers.size(); ++k) {
    const auto bad = rebuild(tampers[k], segs);
    EXPECT_THROW(decompress(bad.data(), bad.size(), Backend::Serial), CorruptStream) << "tamper " << k;
  }
  // Dropping a segment
  for (std::size_t drop = 0; drop < segs.size(); ++drop) {
    auto fewer = segs;
    fewer.erase(fewer.begin() + long(drop));
    const auto bad = rebuild([](container::Header&) {}, fewer);
    EXPECT_THROW(decompress(bad.data(), bad.size(), Backend::Serial), CorruptStream) << "drop " << drop;
  }
}

}  // namespace
}  // namespace ksz::test
