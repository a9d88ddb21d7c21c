// Sparse-index compaction: the same increasing list as a plain host loop, for
// sparse, dense, empty and full predicates and block-boundary sizes.
#include <gtest/gtest.h>

#include "portable/quantize/outliers.hpp"
#include "tests/common/backends.hpp"

namespace ksz::test {
namespace {

template <class Space>
class Compaction : public ::testing::Test {};
TYPED_TEST_SUITE(Compaction, ExecSpaces, ExecSpaceName);

template <class Space>
void compaction_matches_host() {
  using Mem = typename Space::memory_space;
  Space space;
  for (std::uint64_t n : {std::uint64_t(1), outliers::kCompactBlock - 1, outliers::kCompactBlock,
                          outliers::kCompactBlock + 1, std::uint64_t(100003)})
    for (std::uint64_t every : {std::uint64_t(1), std::uint64_t(2), std::uint64_t(977), std::uint64_t(1) << 40}) {
      Kokkos::View<std::uint8_t*, Mem> flag("flag", n);
      Kokkos::parallel_for(
          Kokkos::RangePolicy<Space>(space, 0, n),
          KOKKOS_LAMBDA(const std::uint64_t i) { flag(i) = ((i * 2654435761u) % every) == 0 ? 1 : 0; });
      const auto idx = outliers::compact_indices(
          space, n, KOKKOS_LAMBDA(const std::uint64_t i) { return flag(i) != 0; }, "idx");
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), idx);
      std::vector<std::uint64_t> ref;
      for (std::uint64_t i = 0; i < n; ++i)
        if (((i * 2654435761u) % every) == 0) ref.push_back(i);
      ASSERT_EQ(h.extent(0), ref.size()) << n << " every " << every;
      for (std::size_t j = 0; j < ref.size(); ++j) ASSERT_EQ(h(j), ref[j]);
    }
}

TYPED_TEST(Compaction, MatchesHostLoop) { compaction_matches_host<TypeParam>(); }

}  // namespace
}  // namespace ksz::test
