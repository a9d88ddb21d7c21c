// Container v1: round trip of header and segments, and rejection of hostile
// streams (truncation anywhere, bit flips, wrong magic, absurd headers).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "src/api/ksz.hpp"
#include "src/container/checksum.hpp"
#include "src/container/container.hpp"
#include "src/core/host_memory.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

using container::Param;
using container::SegmentId;

Bytes sample_stream() {
  const Dims d = dims_of({40, 20, 6});
  const auto in = make_field<float>(Pattern::Noisy, d);
  Options opt;
  opt.bound = 1e-3;
  opt.backend = Backend::Serial;
  return compress(in.data(), DType::F32, d, opt);
}

TEST(Crc32c, KnownVectors) {
  // RFC 3720 B.4 test vectors.
  std::vector<std::uint8_t> zeros(32, 0), ones(32, 0xFF), inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = std::uint8_t(i);
  EXPECT_EQ(container::crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(container::crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(container::crc32c(inc.data(), 32), 0x46DD794Eu);
  const char* s = "123456789";
  EXPECT_EQ(container::crc32c(s, 9), 0xE3069283u);
  // The hardware path (where the CPU has one) equals the table reference at
  // every length and alignment, and when continued across pieces.
  std::vector<unsigned char> buf(1000);
  for (std::size_t k = 0; k < buf.size(); ++k) buf[k] = static_cast<unsigned char>(k * 131 + 7);
  for (std::size_t off = 0; off < 9; ++off)
    for (std::size_t len : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(8), std::size_t(9), std::size_t(63), std::size_t(500), 991 - off})
      EXPECT_EQ(container::crc32c(buf.data() + off, len), container::crc32c_portable(buf.data() + off, len));
  const std::uint32_t part = container::crc32c(buf.data(), 333);
  EXPECT_EQ(container::crc32c(buf.data() + 333, 667, part), container::crc32c_portable(buf.data(), 1000));
  // Long buffers (the hardware path's three interleaved thirds, joined), at
  // and around its threshold, continued from a CRC, at odd offsets.
  std::vector<unsigned char> big(300001);
  for (std::size_t k = 0; k < big.size(); ++k) big[k] = static_cast<unsigned char>((k * 2654435761u) >> 13);
  for (std::size_t len : {std::size_t(12287), std::size_t(12288), std::size_t(12289), std::size_t(12295),
                          std::size_t(65536), std::size_t(299990)})
    for (std::size_t off : {std::size_t(0), std::size_t(5)}) {
      EXPECT_EQ(container::crc32c(big.data() + off, len), container::crc32c_portable(big.data() + off, len))
          << len << " bytes at " << off;
      EXPECT_EQ(container::crc32c(big.data() + off, len, 0xDEADBEEFu),
                container::crc32c_portable(big.data() + off, len, 0xDEADBEEFu))
          << len << " bytes at " << off << ", continued";
    }
}

// Buffers past the threads' threshold: every thread count, at and around the
// threshold and with a last piece longer than the others, from 0 and
// continued, equal the table reference over the whole buffer (one chain).
TEST(Crc32c, ThreadedPiecesJoin) {
  const std::size_t unit = container::kCrcThreadBytes;
  std::vector<unsigned char> big(4 * unit + 4099);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : big) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x >> 24);
  }
  for (std::size_t len : {2 * unit - 1, 2 * unit, 2 * unit + 1, 3 * unit + 65, 4 * unit + 4099}) {
    const std::size_t off = len % 2;  // odd lengths at an odd address
    const std::size_t n = std::min(len, big.size() - off);
    const std::uint32_t want = container::crc32c_portable(big.data() + off, n);
    const std::uint32_t want_on = container::crc32c_portable(big.data() + off, n, 0x1234567u);
    for (std::size_t threads : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(4), std::size_t(9)}) {
      EXPECT_EQ(container::crc32c_threads(big.data() + off, n, 0, threads), want) << n << " bytes, " << threads;
      EXPECT_EQ(container::crc32c_threads(big.data() + off, n, 0x1234567u, threads), want_on)
          << n << " bytes, " << threads << ", continued";
    }
  }
  // The default entry point too (its thread count is the machine's).
  EXPECT_EQ(container::crc32c(big.data(), big.size()), container::crc32c_portable(big.data(), big.size()));
}

// The CRC of a concatenation from its parts' CRCs, and the copy that
// checksums as it goes (on threads past the threshold, from 0 and
// continued): equal to the table reference, the bytes equal to the source.
TEST(Crc32c, CombineAndCopy) {
  const std::size_t unit = container::kCrcThreadBytes;
  std::vector<unsigned char> src(5 * unit + 777), dst(src.size() + 16, 0);
  std::uint64_t x = 0x2545F4914F6CDD1Dull;
  for (auto& b : src) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x >> 29);
  }
  for (std::size_t split : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(4096), std::size_t(99999)}) {
    const std::size_t len = 200000;
    EXPECT_EQ(container::crc32c_combine(container::crc32c(src.data(), split), container::crc32c(src.data() + split, len),
                                        len),
              container::crc32c_portable(src.data(), split + len))
        << split;
  }
  EXPECT_EQ(container::crc32c_combine(0x1234u, 0, 0), 0x1234u);
  for (std::size_t len : {std::size_t(0), std::size_t(1), std::size_t(300001), 2 * unit - 1, 2 * unit + 5,
                          5 * unit + 777}) {
    for (std::uint32_t from : {0u, 0xCAFEF00Du}) {
      std::fill(dst.begin(), dst.end(), 0);
      const std::uint32_t got = container::copy_crc32c(dst.data() + 3, src.data(), len, from);
      EXPECT_EQ(got, container::crc32c_portable(src.data(), len, from)) << len << " bytes from " << from;
      EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, dst.begin() + 3)) << len;
      EXPECT_EQ(dst[2], 0);
      EXPECT_EQ(dst[3 + len], 0);
    }
  }
}

// The host buffers' page hints change no byte: a buffer grown past the
// prefault threshold keeps what it held and is zero beyond it, and
// prefaulting memory already written leaves it as it was.
TEST(HostMemory, GrowthKeepsBytesAndZeroes) {
  std::vector<std::uint8_t> v(1000);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<std::uint8_t>(k * 7 + 1);
  const std::size_t size = (std::size_t(48) << 20) + 12345;
  resize_huge(v, size);
  ASSERT_EQ(v.size(), size);
  for (std::size_t k = 0; k < 1000; ++k) ASSERT_EQ(v[k], static_cast<std::uint8_t>(k * 7 + 1)) << k;
  std::size_t nonzero = 0;
  for (std::size_t k = 1000; k < size; ++k) nonzero += v[k] != 0;
  EXPECT_EQ(nonzero, 0u);
  for (std::size_t k = 0; k < size; k += 4093) v[k] = 0xA5;
  prefault(v.data(), v.size());
  for (std::size_t k = 0; k < size; k += 4093) ASSERT_EQ(v[k], 0xA5) << k;
  // Bytes grow the same way and keep what they held (what lies beyond is
  // the caller's to write: not zeroed).
  Bytes b(1000);
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<std::uint8_t>(k * 5 + 3);
  resize_huge(b, size, false);
  ASSERT_EQ(b.size(), size);
  for (std::size_t k = 0; k < 1000; ++k) ASSERT_EQ(b[k], static_cast<std::uint8_t>(k * 5 + 3)) << k;
  EXPECT_EQ(huge_page_bytes(std::size_t(40) << 20).size(), std::size_t(40) << 20);
}

// A segment written by its fill (straight into the stream, its checksum and
// the header's patched after) gives the same stream as the same bytes given
// in place, among segments given in place, empty ones included.
TEST(Container, FilledSegmentsSameStream) {
  container::Header h;
  h.dims = dims_of({100000});
  h.user_bound = h.abs_bound = 1e-3;
  // d is long enough for write's threaded copy and checksum (copy_crc32c).
  std::vector<std::uint8_t> a(5000), b(70001), c, d(2 * container::kCrcThreadBytes + 12345);
  for (std::size_t k = 0; k < a.size(); ++k) a[k] = static_cast<std::uint8_t>(k * 13 + 5);
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<std::uint8_t>(k * 31 + 2);
  for (std::size_t k = 0; k < d.size(); ++k) d[k] = static_cast<std::uint8_t>((k * 2654435761u) >> 11);
  const auto fill = [](const std::vector<std::uint8_t>& v) {
    return [&v](std::uint8_t* dst) {
      std::copy(v.begin(), v.end(), dst);
      return container::crc32c(v.data(), v.size());
    };
  };
  const auto plain = container::write(h, {{SegmentId::SzxKinds, a.data(), a.size()},
                                          {SegmentId::SzxMidBytes, b.data(), b.size()},
                                          {SegmentId::SzxVerbatim, c.data(), 0},
                                          {SegmentId::SzxMedians, a.data(), a.size()},
                                          {SegmentId::SzxLeadCodes, d.data(), d.size()}});
  const auto filled = container::write(h, {{SegmentId::SzxKinds, a.data(), a.size()},
                                           {SegmentId::SzxMidBytes, nullptr, b.size(), fill(b)},
                                           {SegmentId::SzxVerbatim, nullptr, 0, fill(c)},
                                           {SegmentId::SzxMedians, nullptr, a.size(), fill(a)},
                                           {SegmentId::SzxLeadCodes, nullptr, d.size(), fill(d)}});
  EXPECT_TRUE(plain == filled);
  const auto p = container::read(plain.data(), plain.size());  // every checksum verified
  EXPECT_EQ(p.require(SegmentId::SzxMidBytes).size, b.size());
  const auto& big = p.require(SegmentId::SzxLeadCodes);
  ASSERT_EQ(big.size, d.size());
  EXPECT_TRUE(std::equal(d.begin(), d.end(), big.data));
}

TEST(Container, HeaderAndSegmentsRoundTrip) {
  container::Header h;
  h.dtype = DType::F64;
  h.dims = dims_of({7, 8, 9, 2});
  h.mode = ErrorMode::REL;
  h.user_bound = 1e-3;
  h.abs_bound = 0.5;
  h.value_min = -1;
  h.value_max = 499;
  h.set_u32(Param::Radius, 512);
  h.set_f64(Param::QuantStep, 1.0);
  h.set_u32s(Param::LorenzoChunk, {16, 16, 16});
  h.params[999] = {1, 2, 3};  // unknown key: kept, not an error
  std::vector<std::uint8_t> a = {1, 2, 3}, b;
  const auto s = container::write(h, {{SegmentId::HuffmanWords, a.data(), a.size()},
                                      {SegmentId::OutlierIndex, b.data(), 0}});
  const auto p = container::read(s.data(), s.size());
  EXPECT_EQ(p.header.dtype, DType::F64);
  EXPECT_EQ(p.header.dims.str(), "7x8x9x2");
  EXPECT_EQ(p.header.mode, ErrorMode::REL);
  EXPECT_EQ(p.header.abs_bound, 0.5);
  EXPECT_EQ(p.header.u32(Param::Radius), 512u);
  EXPECT_EQ(p.header.u32s(Param::LorenzoChunk, 3)[2], 16u);
  EXPECT_EQ(p.header.params.at(999).size(), 3u);
  ASSERT_EQ(p.segments.size(), 2u);
  EXPECT_EQ(p.require(SegmentId::HuffmanWords).size, 3u);
  EXPECT_EQ(p.require(SegmentId::HuffmanWords).data[2], 3);
  EXPECT_EQ(p.find(SegmentId::VerbatimValue), nullptr);
  EXPECT_THROW(p.require(SegmentId::VerbatimValue), CorruptStream);
  EXPECT_THROW(p.header.u64(Param::OutlierCount), CorruptStream);
}

TEST(Container, RejectsEveryTruncation) {
  const auto s = sample_stream();
  ASSERT_NO_THROW(decompress(s.data(), s.size(), Backend::Serial));
  for (std::size_t len = 0; len < s.size(); ++len)
    EXPECT_THROW(decompress(s.data(), len, Backend::Serial), CorruptStream) << "length " << len;
}

TEST(Container, RejectsTrailingBytes) {
  auto s = sample_stream();
  s.push_back(0);
  EXPECT_THROW(decompress(s.data(), s.size(), Backend::Serial), CorruptStream);
}

TEST(Container, RejectsBitFlips) {
  const auto s = sample_stream();
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    auto c = s;
    const std::size_t bit = rng() % (c.size() * 8);
    c[bit / 8] ^= std::uint8_t(1u << (bit % 8));
    EXPECT_THROW(decompress(c.data(), c.size(), Backend::Serial), CorruptStream) << "bit " << bit;
  }
}

TEST(Container, RejectsForeignStreams) {
  std::vector<std::uint8_t> empty;
  EXPECT_THROW(decompress(empty.data(), 0, Backend::Serial), CorruptStream);
  auto s = sample_stream();
  auto m = s;
  m[1] = 'X';
  EXPECT_THROW(decompress(m.data(), m.size(), Backend::Serial), CorruptStream);
  std::vector<std::uint8_t> junk(4096);
  std::mt19937 rng(5);
  for (auto& b : junk) b = std::uint8_t(rng());
  EXPECT_THROW(decompress(junk.data(), junk.size(), Backend::Serial), CorruptStream);
  auto v = s;
  v[8] = 2;  // future major version
  EXPECT_THROW(decompress(v.data(), v.size(), Backend::Serial), CorruptStream);
}

// A well-formed container (valid checksums) whose header lies: absurd dims,
// counts or parameters must be refused before any large allocation. (A forged
// header that stays self-consistent cannot be told from a real one: accidental
// corruption is what the checksums catch.)
TEST(Container, RejectsLyingHeaders) {
  const auto s = sample_stream();
  const auto p = container::read(s.data(), s.size());
  auto rewrite = [&](auto edit) {
    container::Header h = p.header;
    std::vector<container::Segment> segs = p.segments;
    edit(h, segs);
    return container::write(h, segs);
  };
  std::vector<Bytes> bad;
  bad.push_back(rewrite([](auto& h, auto&) { h.dims = dims_of({1u << 20, 1u << 20}); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.dims = dims_of({41, 20, 6}); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_u32(Param::Radius, 0); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_u32(Param::Radius, 256); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_u32(Param::HuffmanChunk, 0); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_u32(Param::HuffmanChunk, 1000); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_u32s(Param::LorenzoChunk, {0, 1, 1}); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_f64(Param::QuantStep, -1); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_u64(Param::OutlierCount, 1u << 30); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.set_u64(Param::OutlierCount, h.u64(Param::OutlierCount) + 1); }));
  bad.push_back(rewrite([](auto& h, auto&) { h.params.erase(std::uint16_t(Param::Radius)); }));
  bad.push_back(rewrite([](auto&, auto& segs) { segs.pop_back(); }));
  bad.push_back(rewrite([](auto&, auto& segs) { segs[2].size -= 4; }));
  bad.push_back(rewrite([](auto&, auto& segs) { segs[1].size -= 8; }));
  for (std::size_t i = 0; i < bad.size(); ++i)
    EXPECT_THROW(decompress(bad[i].data(), bad[i].size(), Backend::Serial), CorruptStream) << "case " << i;
}

}  // namespace
}  // namespace ksz::test
