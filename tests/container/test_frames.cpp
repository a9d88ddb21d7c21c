// Framed files' footer (FORMAT.md "Framed files"): its round trip, and
// rejection of footers that are damaged, truncated, or describe frames that
// do not fill the file.
#include <gtest/gtest.h>

#include <cstring>

#include "src/container/checksum.hpp"
#include "src/container/container.hpp"
#include "src/container/frames.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

using container::FrameIndex;

FrameIndex sample_index() {
  FrameIndex idx;
  idx.dtype = DType::F64;
  idx.dims = dims_of({7, 5, 11});
  idx.mode = ErrorMode::REL;
  idx.predictor = PredictorId::SZx;
  idx.user_bound = 1e-3;
  idx.abs_bound = 2.5e-3;
  idx.value_min = -1, idx.value_max = 1.5;
  idx.outliers = 3, idx.verbatim = 9;
  idx.slab = 4;  // frames of 4, 4 and 3 slices
  idx.lengths = {100, 70, 51};
  return idx;
}

// The file a footer ends: magic, frames of the footer's lengths, footer.
Bytes file_of(const FrameIndex& idx) {
  Bytes f(container::kFramedMagic, container::kFramedMagic + 8);
  std::uint64_t frames = 0;
  for (auto l : idx.lengths) frames += l;
  f.resize(f.size() + frames, 0xAB);
  const Bytes foot = container::write_footer(idx);
  f.insert(f.end(), foot.begin(), foot.end());
  return f;
}

FrameIndex read_of(const Bytes& file) {
  const std::uint32_t len = container::footer_length(file.data() + file.size() - 16, file.size());
  return container::read_footer(file.data() + file.size() - len - 16, len + 16, file.size());
}

TEST(FramedFooter, RoundTrip) {
  const FrameIndex idx = sample_index();
  const Bytes file = file_of(idx);
  EXPECT_TRUE(container::is_framed(file.data(), file.size()));
  EXPECT_FALSE(container::is_framed(file.data(), 7));
  const FrameIndex r = read_of(file);
  EXPECT_EQ(r.dtype, idx.dtype);
  EXPECT_EQ(r.dims.rank, 3);
  EXPECT_EQ(r.dims.n, idx.dims.n);
  EXPECT_EQ(r.mode, idx.mode);
  EXPECT_EQ(r.predictor, idx.predictor);
  EXPECT_EQ(r.user_bound, idx.user_bound);
  EXPECT_EQ(r.abs_bound, idx.abs_bound);
  EXPECT_EQ(r.value_min, idx.value_min);
  EXPECT_EQ(r.value_max, idx.value_max);
  EXPECT_EQ(r.outliers, 3u);
  EXPECT_EQ(r.verbatim, 9u);
  EXPECT_EQ(r.slab, 4u);
  EXPECT_EQ(r.lengths, idx.lengths);
  ASSERT_EQ(r.frames(), 3u);
  EXPECT_EQ(r.frame_dims(0).n[2], 4u);
  EXPECT_EQ(r.frame_dims(2).n[2], 3u);
  EXPECT_EQ(r.frame_dims(2).n[0], 7u);
  EXPECT_EQ(r.frame_first_element(2), 8u * 35);
}

TEST(FramedFooter, RejectsDamage) {
  const Bytes file = file_of(sample_index());
  const std::size_t footer = file.size() - 16 - (container::kFramedFixedFooterBytes + 8 * 3);
  // Every byte of the footer and trailer flipped in turn.
  for (std::size_t at = footer; at < file.size(); ++at) {
    Bytes bad = file;
    bad[at] ^= 0x10;
    EXPECT_THROW(read_of(bad), CorruptStream) << "byte " << at;
  }
  // Truncated anywhere (a frame's end, the footer's, one byte short).
  for (std::size_t cut : {std::size_t(1), std::size_t(16), std::size_t(17), file.size() - footer, file.size() - 8}) {
    const Bytes shorter(file.begin(), file.end() - cut);
    EXPECT_THROW(read_of(shorter), CorruptStream) << cut;
  }
  // Frames that do not fill the file: one byte more between them.
  Bytes longer = file;
  longer.insert(longer.begin() + 20, 0);
  EXPECT_THROW(read_of(longer), CorruptStream);
}

TEST(FramedFooter, RejectsInconsistentFields) {
  const auto rejects = [](FrameIndex idx, const char* what) {
    EXPECT_THROW(read_of(file_of(idx)), CorruptStream) << what;
  };
  FrameIndex a = sample_index();
  a.slab = 12;  // more slices than the extent (one frame)
  a.lengths = {221};
  rejects(a, "slab over the extent");
  FrameIndex b = sample_index();
  b.dims.n[3] = 2;  // an extent beyond the rank
  rejects(b, "extent beyond the rank");
  FrameIndex c = sample_index();
  c.abs_bound = -1;
  rejects(c, "negative resolved bound");
  FrameIndex d = sample_index();
  d.value_min = 2;
  rejects(d, "min over max");
  FrameIndex e = sample_index();
  e.lengths = {100, 0, 121};
  rejects(e, "an empty frame");
  // A footer whose frame count disagrees with its extents and slab cannot be
  // written (write_footer checks), nor read: patched in, CRC recomputed.
  FrameIndex f = sample_index();
  f.lengths = {100, 121};
  EXPECT_THROW(container::write_footer(f), InvalidInput);
  Bytes file = file_of(sample_index());
  const std::size_t footer = file.size() - 16 - (container::kFramedFixedFooterBytes + 8 * 3);
  const std::uint64_t two = 2;
  std::memcpy(file.data() + footer + 96, &two, 8);
  const std::uint32_t crc = container::crc32c(file.data() + footer, file.size() - 16 - footer);
  std::memcpy(file.data() + file.size() - 12, &crc, 4);
  EXPECT_THROW(read_of(file), CorruptStream);
}

}  // namespace
}  // namespace ksz::test
