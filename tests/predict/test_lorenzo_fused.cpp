// The Lorenzo stages: the histogram equals a plain count, and the fused
// compression and decompression kernels equal the unfused reference stages
// bit for bit.
#include <gtest/gtest.h>

#include "portable/histogram/histogram.hpp"
#include "portable/predict/lorenzo/lorenzo.hpp"
#include "portable/predict/lorenzo/lorenzo_fused.hpp"
#include "portable/quantize/outliers.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"
#include "src/pipeline/workspace.hpp"

namespace ksz::test {
namespace {

template <class Space>
class LorenzoFused : public ::testing::Test {};
TYPED_TEST_SUITE(LorenzoFused, ExecSpaces, ExecSpaceName);

template <class V>
auto host(const V& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

// A free function: nvcc refuses device lambdas inside gtest's TestBody.
template <class Space>
void fused_equals_reference() {
  using Mem = typename Space::memory_space;
  Space space;
  struct Case {
    std::vector<std::uint64_t> n;
    std::vector<std::uint32_t> c;
    Pattern p;
    double step;
    std::uint32_t radius;
  };
  const std::vector<Case> cases = {
      {{1000}, {256, 1, 1}, Pattern::Noisy, 1e-3, 512},   {{4097}, {4096, 1, 1}, Pattern::Fill, 1e-2, 16},
      {{70, 33}, {16, 16, 1}, Pattern::Spiky, 1e-4, 512}, {{33, 17, 9}, {8, 8, 8}, Pattern::Smooth, 1e-3, 4},
      {{40, 40, 40}, {16, 16, 16}, Pattern::Noisy, 1e-2, 512}, {{5, 3, 300}, {4, 2, 64}, Pattern::Fill, 1e-3, 32768},
      // x extent no multiple of 4: the GPUs' element-wise inverse, no fused compression
      {{31, 20, 11}, {6, 5, 3}, Pattern::Spiky, 1e-3, 64}};
  for (const auto& cs : cases) {
    const Dims d = dims_of(cs.n);
    auto field = make_field<float>(cs.p, d);
    field[d.count() / 2] = std::numeric_limits<float>::quiet_NaN();
    field[d.count() / 3] = 1e30f;  // no pre-quantized value: verbatim
    field[d.count() - 1] = -std::numeric_limits<float>::infinity();
    const std::uint64_t n = d.count();
    Kokkos::View<float*, Mem> in("in", n);
    Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(field.data(), n));
    lorenzo::Geometry g;
    g.n0 = d.n[0], g.n1 = d.n[1], g.n2 = d.n[2];
    g.c0 = cs.c[0], g.c1 = cs.c[1], g.c2 = cs.c[2];
    const quantize::QuantParams qp{cs.step, 1 / cs.step, cs.step / 2};
    const std::uint32_t nbins = 2 * cs.radius;

    // reference
    Kokkos::View<std::int32_t*, Mem> q("q", n);
    Kokkos::View<std::uint16_t*, Mem> rc("rc", n);
    Kokkos::View<std::uint64_t*, Mem> rh("rh", nbins);
    lorenzo::prequantize<Space, float>(space, in, qp, q);
    lorenzo::predict_quantize<Space>(space, g, q, cs.radius, rc);
    histogram::histogram<Space>(space, rc, rh, cs.radius);
    const auto ro = outliers::compact_indices(
        space, n, KOKKOS_LAMBDA(const std::uint64_t i) { return rc(i) == 0; }, "ro");
    // histogram against a plain host count
    const auto hrc = host(rc);
    const auto hrh = host(rh);
    std::vector<std::uint64_t> ref(nbins, 0);
    for (std::uint64_t i = 0; i < n; ++i) ++ref[hrc(i)];
    for (std::uint32_t b = 0; b < nbins; ++b) ASSERT_EQ(hrh(b), ref[b]) << d.str() << " bin " << b;
    const auto hro = host(ro);
    ASSERT_EQ(hro.extent(0), ref[0]);

    // The fused compression pass: the same codes, histogram and lists.
    {
      Kokkos::View<std::uint16_t*, Mem> fc("fc", n);
      Kokkos::View<std::uint64_t*, Mem> fh("fh", nbins);
      typename pipeline::Workspace<Mem>::Lease ws;
      lorenzo::FusedResult<Mem> fr;
      const bool ran = lorenzo::fused_compress<Space, float>(space, in, g, qp, cs.radius, fc, fh, ws, fr);
      ASSERT_EQ(ran, nbins <= 8192 && cs.c[0] % 4 == 0) << d.str();
      if (ran) {
        const auto hfc = host(fc);
        EXPECT_EQ(0, std::memcmp(hfc.data(), hrc.data(), n * sizeof(std::uint16_t))) << d.str();
        for (std::uint32_t b = 0; b < nbins; ++b) ASSERT_EQ(fr.hist(b), ref[b]) << d.str() << " bin " << b;
        const auto hfo = host(fr.outliers);
        ASSERT_EQ(hfo.extent(0), hro.extent(0)) << d.str();
        for (std::uint64_t j = 0; j < hro.extent(0); ++j) ASSERT_EQ(hfo(j), hro(j)) << d.str();
        std::vector<std::uint64_t> rv;
        for (std::uint64_t i = 0; i < n; ++i) {
          std::int32_t qq;
          if (!quantize::prequantize<float>(field[i], qp, qq)) rv.push_back(i);
        }
        EXPECT_GE(rv.size(), 2u);
        const auto hfv = host(fr.verbatim);
        ASSERT_EQ(hfv.extent(0), rv.size()) << d.str();
        for (std::uint64_t j = 0; j < rv.size(); ++j) ASSERT_EQ(hfv(j), rv[j]) << d.str();
      }
    }

    // inverse: reference stages vs fused, from the reference codes + outliers
    Kokkos::View<std::int32_t*, Mem> ov("ov", ro.extent(0)), dense("dense", n), v("v", n);
    const Kokkos::View<const std::int32_t*, Mem> qc = q;
    const lorenzo::Geometry geo = g;
    Kokkos::parallel_for(
        Kokkos::RangePolicy<Space>(space, 0, ro.extent(0)),
        KOKKOS_LAMBDA(const std::uint64_t j) { ov(j) = lorenzo::residual(geo, qc, ro(j)); });
    lorenzo::dequantize_codes<Space>(space, rc, cs.radius, v);
    outliers::scatter<Space, std::int32_t>(space, ro, ov, v);
    lorenzo::reconstruct<Space>(space, g, v);
    Kokkos::View<float*, Mem> rout("rout", n), fout("fout", n);
    lorenzo::dequantize<Space, float>(space, v, cs.step, rout);
    outliers::scatter<Space, std::int32_t>(space, ro, ov, dense);
    const auto zeros = lorenzo::reconstruct_dequantize<Space, float>(space, g, {{lorenzo::Slab{}, rc}}, dense, {}, {},
                                                                    cs.radius, cs.step, fout);
    EXPECT_EQ(zeros, ro.extent(0));
    // The same from the sparse list (GPUs' way): no dense array.
    Kokkos::View<float*, Mem> sout("sout", n);
    const auto szeros = lorenzo::reconstruct_dequantize<Space, float>(space, g, {{lorenzo::Slab{}, rc}}, {}, ro, ov,
                                                                     cs.radius, cs.step, sout);
    EXPECT_EQ(szeros, zeros);
    const auto hs = host(sout);
    const auto hq = host(q);
    const auto hv = host(v);
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(hq(i), hv(i)) << "reference inverse at " << i;
    const auto hr = host(rout);
    const auto hf = host(fout);
    EXPECT_EQ(0, std::memcmp(hr.data(), hf.data(), n * sizeof(float))) << d.str();
    EXPECT_EQ(0, std::memcmp(hr.data(), hs.data(), n * sizeof(float))) << d.str();

    // In the output's memory (the pipeline's way): the codes in its last
    // bytes, in_place_plan's slabs in order, the tail from a copy.
    for (const bool f64 : {false, true}) {
      const std::size_t S = f64 ? sizeof(double) : sizeof(float);
      const auto plan = lorenzo::in_place_plan(g, S);
      Kokkos::View<double*, Mem> buf("buf", n);  // n values of either type
      const Kokkos::View<std::uint16_t*, Mem> ic(reinterpret_cast<std::uint16_t*>(buf.data()) + plan.code_offset, n);
      Kokkos::deep_copy(space, ic, rc);
      const Kokkos::View<std::uint16_t*, Mem> tail("tail", plan.tail_codes(n));
      const auto parts = lorenzo::in_place_parts<Space>(space, plan, ic, tail);
      std::uint64_t izeros = 0;
      if (f64) {
        izeros = lorenzo::reconstruct_dequantize<Space, double>(space, g, parts, {}, ro, ov, cs.radius, cs.step, buf);
      } else {
        const Kokkos::View<float*, Mem> fbuf(reinterpret_cast<float*>(buf.data()), n);
        izeros = lorenzo::reconstruct_dequantize<Space, float>(space, g, parts, {}, ro, ov, cs.radius, cs.step, fbuf);
      }
      EXPECT_EQ(izeros, zeros) << d.str();
      const auto hb = host(buf);
      for (std::uint64_t i = 0; i < n; ++i) {
        if (f64) ASSERT_EQ(hb(i), quantize::reconstruct<double>(hq(i), cs.step)) << d.str() << " f64 at " << i;
        else ASSERT_EQ(reinterpret_cast<const float*>(hb.data())[i], hr(i)) << d.str() << " f32 at " << i;
      }
    }
  }
}

// The in-place plan's promise, checked chunk by chunk: the slabs cover the
// chunks in order, each slab's elements are one range [a, b) right after the
// previous one, and its values (S bytes each) never reach a code (2 bytes
// each, from the 16-bit word code_offset) of an element at or past a; the
// tail (from a copy) takes the rest; the codes fit in the buffer.
TEST(InPlacePlan, SlabsOverwriteOnlyInvertedCodes) {
  struct Case {
    std::uint64_t n0, n1, n2;
    std::uint32_t c0, c1, c2;
  };
  const std::vector<Case> cases = {{512, 512, 512, 16, 16, 16}, {100, 37, 53, 16, 16, 16}, {64, 64, 5, 16, 16, 16},
                                   {1000, 777, 1, 64, 64, 1},   {1000000, 1, 1, 4096, 1, 1}, {100, 1, 1, 4096, 1, 1},
                                   {5, 3, 300, 4, 2, 64},       {1, 1, 1, 16, 16, 16}};
  for (const auto& c : cases)
    for (const std::uint64_t S : {4u, 8u}) {
      lorenzo::Geometry g;
      g.n0 = c.n0, g.n1 = c.n1, g.n2 = c.n2, g.c0 = c.c0, g.c1 = c.c1, g.c2 = c.c2;
      const std::uint64_t n = g.count();
      const lorenzo::impl::ChunkGrid cg(g);
      const auto plan = lorenzo::in_place_plan(g, S);
      const std::string what = std::to_string(n) + " elements, S " + std::to_string(S);
      EXPECT_EQ(plan.code_offset % 8, 0u) << what;
      EXPECT_LE(2 * plan.code_offset + 2 * n, S * n) << what;
      // The element range of chunks [k0, k1): must be one contiguous range.
      const auto range = [&](std::uint64_t k0, std::uint64_t k1) {
        std::uint64_t lo = ~std::uint64_t(0), hi = 0, count = 0;
        for (std::uint64_t k = k0; k < k1; ++k) {
          const lorenzo::impl::ChunkBox b(cg, k);
          lo = std::min(lo, b.x0 + g.n0 * (b.y0 + g.n1 * b.z0));
          const std::uint64_t last =
              b.x0 + b.e0 - 1 + g.n0 * ((b.y0 + b.e1 - 1) + g.n1 * (b.z0 + b.e2 - 1));
          hi = std::max(hi, last + 1);
          count += std::uint64_t(b.e0) * b.e1 * b.e2;
        }
        EXPECT_EQ(hi - lo, count) << what << ": chunks " << k0 << ".." << k1 << " not one range";
        return std::make_pair(lo, hi);
      };
      std::uint64_t next_chunk = 0, next_elem = 0;
      for (const auto& sl : plan.slabs) {
        ASSERT_EQ(sl.chunk_begin, next_chunk) << what;
        ASSERT_LT(sl.chunk_begin, sl.chunk_end) << what;
        const auto [a, b] = range(sl.chunk_begin, sl.chunk_end);
        EXPECT_EQ(a, next_elem) << what;
        EXPECT_LE(S * b, 2 * plan.code_offset + 2 * a) << what << ": slab " << a << ".." << b;
        next_chunk = sl.chunk_end, next_elem = b;
      }
      if (plan.has_tail()) {
        ASSERT_EQ(plan.tail.chunk_begin, next_chunk) << what;
        ASSERT_EQ(plan.tail.chunk_end, cg.chunks()) << what;
        const auto [a, b] = range(plan.tail.chunk_begin, plan.tail.chunk_end);
        EXPECT_EQ(a, next_elem) << what;
        EXPECT_EQ(plan.tail.code_origin, a) << what;
        next_elem = b;
      } else {
        EXPECT_EQ(next_chunk, cg.chunks()) << what;
      }
      EXPECT_EQ(next_elem, n) << what;
      // Large fields: at most about a quarter from a copy (the short slabs' limit, rounded to layers).
      if (n >= 1000000) EXPECT_LE(plan.tail_codes(n), n / 4 + n / 100) << what;
      if (n >= 1000000) EXPECT_GE(plan.slabs.size(), 2u) << what;
    }
}

TYPED_TEST(LorenzoFused, EqualsReferenceStages) { fused_equals_reference<TypeParam>(); }

}  // namespace
}  // namespace ksz::test
