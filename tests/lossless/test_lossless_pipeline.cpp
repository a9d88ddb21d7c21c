// The lossless pass inside the pipelines: the bound on every element with the
// pass on, the same decoded values as without it, the same bytes on every
// backend, the format version it stamps, and hostile streams (corrupted
// payloads behind valid checksums, header byte 5 lying) rejected.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>

#include "src/api/ksz.hpp"
#include "src/container/container.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

struct Case {
  PredictorId predictor;
  bool classic;
  ErrorMode mode;
  double bound;
};

// Loose bounds on smooth data: the Huffman bitstream is mostly zero bytes, so
// the pass is stored.
const std::vector<Case> kCases = {
    {PredictorId::Lorenzo, false, ErrorMode::REL, 5e-2},
    {PredictorId::Interp, false, ErrorMode::REL, 1e-2},
    {PredictorId::Lorenzo, true, ErrorMode::REL, 5e-2},
    {PredictorId::Lorenzo, false, ErrorMode::PW_REL, 0.3},
};

Options options(const Case& c, Backend b, LosslessId pass) {
  Options o;
  o.predictor = c.predictor;
  o.classic = c.classic;
  o.mode = c.mode;
  o.bound = c.bound;
  o.backend = b;
  o.lossless = pass;
  return o;
}

std::string name(const Case& c) {
  return std::string(c.classic ? "classic" : to_string(c.predictor)) + " " + to_string(c.mode);
}

template <class Space>
class LosslessPipeline : public ::testing::Test {};
TYPED_TEST_SUITE(LosslessPipeline, ExecSpaces, ExecSpaceName);

TYPED_TEST(LosslessPipeline, BoundOnEveryElementAndSameValuesAsWithout) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({96, 64, 24});
  const auto in = make_field<float>(Pattern::Smooth, d);
  for (const Case& c : kCases) {
    Report r0;
    const auto plain = compress(in.data(), DType::F32, d, options(c, b, LosslessId::None), &r0);
    const Field f0 = decompress(plain.data(), plain.size(), b);
    for (LosslessId pass : {LosslessId::ZeroBytes, LosslessId::ZeroWords}) {
      Report r;
      const auto s = compress(in.data(), DType::F32, d, options(c, b, pass), &r);
      EXPECT_EQ(inspect(s.data(), s.size()).lossless, pass) << name(c);
      EXPECT_EQ(r.lossless, pass);
      EXPECT_LT(r.lossless_bytes, r.huffman_bytes);
      EXPECT_EQ(r.huffman_bytes, r0.huffman_bytes);
      EXPECT_LT(s.size(), plain.size()) << name(c);
      const Field f = decompress(s.data(), s.size(), b);
      EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const float*>(f.bytes.data()), in.size(), r.abs_bound))
          << name(c);
      EXPECT_EQ(f.bytes, f0.bytes) << name(c) << ": the pass is lossless";
    }
  }
}

TYPED_TEST(LosslessPipeline, NotStoredWhereItDoesNotShrink) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({64, 64, 16});
  const auto in = make_field<double>(Pattern::Noisy, d);
  Options o;
  o.mode = ErrorMode::ABS;
  o.bound = 1e-2;  // residuals of some +-50 steps: a dense bitstream, no zero bytes to remove
  o.backend = b;
  Report r;
  const auto s = compress(in.data(), DType::F64, d, o, &r);
  EXPECT_EQ(inspect(s.data(), s.size()).lossless, LosslessId::None);
  EXPECT_EQ(r.lossless_bytes, r.huffman_bytes);
  EXPECT_GT(r.huffman_bytes, d.count() / 2);
  const Field f = decompress(s.data(), s.size(), b);
  EXPECT_TRUE(within_bound(in.data(), reinterpret_cast<const double*>(f.bytes.data()), in.size(), 1e-2));
  std::uint16_t minor;
  std::memcpy(&minor, s.data() + 10, 2);
  EXPECT_EQ(minor, 0) << "a stream without the pass stays readable by format 1.0 readers";
}

TYPED_TEST(LosslessPipeline, SameBytesAsSerialAndMinorVersion) {
  const Dims d = dims_of({80, 40, 20});
  const auto in = make_field<float>(Pattern::Smooth, d);
  for (const Case& c : kCases) {
    if (c.classic) continue;  // host-only pipeline: one code path
    const auto s = compress(in.data(), DType::F32, d, options(c, backend_of<TypeParam>(), LosslessId::ZeroBytes));
    const auto ref = compress(in.data(), DType::F32, d, options(c, Backend::Serial, LosslessId::ZeroBytes));
    EXPECT_TRUE(s == ref) << name(c);
    std::uint16_t minor;
    std::memcpy(&minor, s.data() + 10, 2);
    EXPECT_EQ(minor, 1) << name(c) << ": the pass needs format 1.1 (PW_REL: in its inner stream)";
  }
}

// Rebuilds a stream with its header and segments edited, checksums valid.
Bytes rewrite(const Bytes& s, const std::function<void(container::Header&)>& edit_header,
              const std::function<void(std::vector<std::uint8_t>&)>& edit_words) {
  const container::Parsed p = container::read(s.data(), s.size());
  container::Header h = p.header;
  edit_header(h);
  std::vector<std::vector<std::uint8_t>> bytes;
  for (const auto& seg : p.segments) bytes.emplace_back(seg.data, seg.data + seg.size);
  std::vector<container::Segment> segs;
  for (std::size_t i = 0; i < p.segments.size(); ++i) {
    if (p.segments[i].id == container::SegmentId::HuffmanWords) edit_words(bytes[i]);
    segs.push_back({p.segments[i].id, bytes[i].data(), bytes[i].size()});
  }
  return container::write(h, segs);
}

template <class F>
void expect_corrupt_or_field(const Bytes& s, Backend b, std::uint64_t n, F&& what) {
  try {
    const Field f = decompress(s.data(), s.size(), b);
    EXPECT_EQ(f.dims.count(), n) << what();
  } catch (const CorruptStream&) {
  }
}

TYPED_TEST(LosslessPipeline, HostileStreamsRejected) {
  const Backend b = backend_of<TypeParam>();
  const Dims d = dims_of({64, 32, 16});
  const auto in = make_field<float>(Pattern::Smooth, d);
  for (const Case& c : kCases) {
    if (c.mode == ErrorMode::PW_REL) continue;  // segment 3 lives in the inner stream
    for (LosslessId pass : {LosslessId::ZeroBytes, LosslessId::ZeroWords}) {
      const auto s = compress(in.data(), DType::F32, d, options(c, b, pass));
      ASSERT_EQ(inspect(s.data(), s.size()).lossless, pass);
      const auto keep = [](container::Header&) {};
      const auto same = [](std::vector<std::uint8_t>&) {};
      // Header byte 5: an unknown pass, the other pass, no pass over a payload.
      const auto unknown = rewrite(s, [](container::Header& h) { h.lossless = static_cast<LosslessId>(3); }, same);
      EXPECT_THROW(decompress(unknown.data(), unknown.size(), b), CorruptStream);
      const LosslessId other = pass == LosslessId::ZeroBytes ? LosslessId::ZeroWords : LosslessId::ZeroBytes;
      const auto swapped = rewrite(s, [&](container::Header& h) { h.lossless = other; }, same);
      EXPECT_THROW(decompress(swapped.data(), swapped.size(), b), CorruptStream) << name(c);
      const auto unmarked = rewrite(s, [](container::Header& h) { h.lossless = LosslessId::None; }, same);
      EXPECT_THROW(decompress(unmarked.data(), unmarked.size(), b), CorruptStream) << name(c);
      // Truncated payloads, and a payload cut to its header.
      for (std::size_t keep_bytes : {std::size_t(0), std::size_t(7), std::size_t(16), std::size_t(100)}) {
        const auto t = rewrite(s, keep, [&](std::vector<std::uint8_t>& w) { w.resize(std::min(w.size(), keep_bytes)); });
        EXPECT_THROW(decompress(t.data(), t.size(), b), CorruptStream) << name(c) << " cut " << keep_bytes;
      }
      const auto shorter = rewrite(s, keep, [](std::vector<std::uint8_t>& w) { w.pop_back(); });
      EXPECT_THROW(decompress(shorter.data(), shorter.size(), b), CorruptStream) << name(c);
      // An absurd raw length.
      const auto huge = rewrite(s, keep, [](std::vector<std::uint8_t>& w) {
        const std::uint64_t v = std::uint64_t(1) << 45;
        std::memcpy(w.data(), &v, 8);
      });
      EXPECT_THROW(decompress(huge.data(), huge.size(), b), CorruptStream) << name(c);
      // Bit flips anywhere in the payload, behind valid checksums: refused,
      // or decoded (a flipped value byte is still a valid payload), never a crash.
      std::mt19937_64 rng(4);
      const std::size_t payload = container::read(s.data(), s.size()).require(container::SegmentId::HuffmanWords).size;
      for (int trial = 0; trial < 60; ++trial) {
        const std::size_t at = trial < 40 ? std::size_t(trial) : std::size_t(rng() % payload);
        const auto f = rewrite(s, keep, [&](std::vector<std::uint8_t>& w) { w[at] ^= std::uint8_t(1u << (rng() % 8)); });
        expect_corrupt_or_field(f, b, d.count(), [&] { return name(c) + " flip at " + std::to_string(at); });
      }
    }
  }
}

}  // namespace
}  // namespace ksz::test
