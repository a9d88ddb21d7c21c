// Lossless pass (portable/lossless): round trips on random, all-zero, sparse,
// Huffman-like and incompressible buffers of odd sizes, the expansion bound,
// identical bytes on every backend, and hostile payloads rejected without a
// crash.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "portable/lossless/lossless.hpp"
#include "src/core/error.hpp"
#include "tests/common/backends.hpp"

namespace {

using ksz::lossless::Method;
using u8 = std::uint8_t;
using u64 = std::uint64_t;
using Bytes = std::vector<u8>;

enum class Kind { Random, Zero, SparseBytes, SparseWords, HuffmanLike, Mixed };

// Buffers shaped like what the pass meets: Huffman output of smooth data is
// long zero runs with short codes sprinkled in.
Bytes make(Kind k, u64 n, std::uint32_t seed = 3) {
  Bytes b(n, 0);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> byte(1, 255);
  std::uniform_real_distribution<double> u(0, 1);
  for (u64 i = 0; i < n; ++i) {
    switch (k) {
      case Kind::Random: b[i] = static_cast<u8>(rng()); break;
      case Kind::Zero: break;
      case Kind::SparseBytes: b[i] = u(rng) < 0.03 ? static_cast<u8>(byte(rng)) : 0; break;
      case Kind::SparseWords:
        if (i % 4 == 0 && u(rng) < 0.1)
          for (u64 j = i; j < i + 4 && j < n; ++j) b[j] = static_cast<u8>(byte(rng));
        break;
      case Kind::HuffmanLike: {  // runs of zero bits broken by short codes
        for (int j = 0; j < 8; ++j)
          if (u(rng) < 0.01) b[i] |= static_cast<u8>(1u << j);
        break;
      }
      case Kind::Mixed: b[i] = (i / 8192) % 2 ? static_cast<u8>(rng()) : (u(rng) < 0.02 ? 1 : 0); break;
    }
  }
  return b;
}

template <class Space>
Bytes encode_on(const Bytes& in, Method m, int log2_block) {
  using Mem = typename Space::memory_space;
  Space space;
  Kokkos::View<u8*, Mem> d("in", in.size());
  Kokkos::View<const u8*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(in.data(), in.size());
  Kokkos::deep_copy(d, h);
  const auto enc = ksz::lossless::encode<Space>(space, d, m, log2_block);
  EXPECT_EQ(enc.bytes.extent(0), enc.size);
  Bytes out(enc.size);
  Kokkos::View<u8*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> o(out.data(), out.size());
  Kokkos::deep_copy(o, enc.bytes);
  return out;
}

template <class Space>
Bytes decode_on(const Bytes& payload) {
  using Mem = typename Space::memory_space;
  Space space;
  const auto info = ksz::lossless::inspect(payload.data(), payload.size());
  Kokkos::View<u8*, Mem> d("payload", payload.size());
  Kokkos::View<const u8*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(payload.data(),
                                                                                       payload.size());
  Kokkos::deep_copy(d, h);
  Kokkos::View<u8*, Mem> out("out", info.raw_bytes);
  ksz::lossless::decode<Space>(space, d, out);
  Bytes r(info.raw_bytes);
  Kokkos::View<u8*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> ro(r.data(), r.size());
  Kokkos::deep_copy(ro, out);
  return r;
}

u64 blocks_of(u64 n, int log2_block) { return (n + (u64(1) << log2_block) - 1) >> log2_block; }

template <class Space>
class Lossless : public ::testing::Test {};
TYPED_TEST_SUITE(Lossless, ksz::test::ExecSpaces, ksz::test::ExecSpaceName);

const std::vector<u64> kSizes = {0, 1, 3, 4, 12, 31, 33, 1000, 8191, 8192, 8193, 3 * 8192 + 5, 100004};

TYPED_TEST(Lossless, RoundTripEveryKindAndSize) {
  for (Method m : {Method::ZeroBytes, Method::ZeroWords})
    for (int log2_block : {10, 13})
      for (Kind k : {Kind::Random, Kind::Zero, Kind::SparseBytes, Kind::SparseWords, Kind::HuffmanLike, Kind::Mixed})
        for (u64 n : kSizes) {
          const Bytes in = make(k, n);
          const Bytes enc = encode_on<TypeParam>(in, m, log2_block);
          // Never more than the header and 4 bytes per block over the input.
          EXPECT_LE(enc.size(), n + ksz::lossless::kHeaderBytes + 4 * blocks_of(n, log2_block));
          EXPECT_EQ(decode_on<TypeParam>(enc), in)
              << "method " << int(m) << " block 2^" << log2_block << " kind " << int(k) << " n " << n;
        }
}

TYPED_TEST(Lossless, ZerosShrinkAndNoiseStaysRaw) {
  const u64 n = 64 * 8192;
  const Bytes zeros = encode_on<TypeParam>(make(Kind::Zero, n), Method::ZeroBytes, 13);
  // An all-zero 8 KiB block stores its 16-byte top bitmap only.
  EXPECT_EQ(zeros.size(), ksz::lossless::kHeaderBytes + 64 * (4 + 16));
  const Bytes noise = encode_on<TypeParam>(make(Kind::Random, n), Method::ZeroBytes, 13);
  EXPECT_EQ(noise.size(), n + ksz::lossless::kHeaderBytes + 64 * 4);
  const Bytes sparse = encode_on<TypeParam>(make(Kind::HuffmanLike, n), Method::ZeroBytes, 13);
  EXPECT_LT(sparse.size(), n / 3);
}

// cannot_shrink() lets callers skip the pass: it must never say so of a
// buffer the pass shrinks. Zero densities around the break-even (about 1/9 of
// the units) and blocks that differ from each other, both methods and block
// sizes; the all-zero and all-nonzero ends must be decided the obvious way.
template <class Space>
bool cannot_shrink_on(const Bytes& in, Method m, int log2_block) {
  using Mem = typename Space::memory_space;
  Kokkos::View<std::uint32_t*, Mem> d("words", in.size() / 4);
  Kokkos::View<const std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      reinterpret_cast<const std::uint32_t*>(in.data()), in.size() / 4);
  Kokkos::deep_copy(d, h);
  return ksz::lossless::cannot_shrink<Space>(Space(), d, m, log2_block);
}

TYPED_TEST(Lossless, CannotShrinkNeverRulesOutAShrinkingBuffer) {
  int ruled_out = 0, shrunk = 0;
  for (Method m : {Method::ZeroBytes, Method::ZeroWords})
    for (int log2_block : {10, 13})
      for (double p : {0.0, 0.05, 0.09, 0.1, 0.105, 0.11, 0.115, 0.12, 0.13, 0.2, 0.5, 0.9, 1.0})
        for (u64 n : {u64(4), u64(8192), u64(8196), u64(5 * 8192 + 12), u64(100000)}) {
          Bytes in(n);
          std::mt19937_64 rng(static_cast<std::uint64_t>(p * 1000) + n + log2_block);
          std::uniform_real_distribution<double> u(0, 1);
          const u64 unit = m == Method::ZeroBytes ? 1 : 4;
          for (u64 i = 0; i < n; i += unit) {
            // Half the blocks at density p, half at p / 2: sums over blocks matter.
            const double q = ((i >> log2_block) % 2) ? p / 2 : p;
            const bool zero = u(rng) < q;
            for (u64 j = i; j < i + unit && j < n; ++j) in[j] = zero ? 0 : static_cast<u8>(1 + rng() % 255);
          }
          const bool skip = cannot_shrink_on<TypeParam>(in, m, log2_block);
          const u64 size = encode_on<TypeParam>(in, m, log2_block).size();
          ruled_out += skip;
          shrunk += size < n;
          if (skip)
            EXPECT_GE(size, n) << "method " << int(m) << " block 2^" << log2_block << " p " << p << " n " << n;
          if (p == 0.0) EXPECT_TRUE(skip) << "no zero unit at all, n " << n;
          if (p == 1.0 && n >= 8192) EXPECT_FALSE(skip) << "all zero, n " << n;
        }
  EXPECT_GT(ruled_out, 20);  // the bound is useful, not vacuous
  EXPECT_GT(shrunk, 20);
}

// Every backend writes the bytes Serial writes.
TYPED_TEST(Lossless, SameBytesAsSerial) {
  for (Method m : {Method::ZeroBytes, Method::ZeroWords})
    for (Kind k : {Kind::SparseBytes, Kind::HuffmanLike, Kind::Mixed, Kind::Zero})
      for (u64 n : {u64(8193), u64(200004)}) {
        const Bytes in = make(k, n, 11);
        EXPECT_EQ(encode_on<TypeParam>(in, m, 13), encode_on<Kokkos::Serial>(in, m, 13))
            << "method " << int(m) << " kind " << int(k) << " n " << n;
      }
}

template <class Space>
void expect_rejected_or_sized(const Bytes& payload, u64 raw) {
  try {
    const Bytes out = decode_on<Space>(payload);
    EXPECT_EQ(out.size(), raw);  // a flipped value byte may decode; never out of bounds
  } catch (const ksz::CorruptStream&) {
  }
}

TYPED_TEST(Lossless, HostilePayloadsRejected) {
  const Bytes in = make(Kind::Mixed, 3 * 1024 + 100, 5);
  for (Method m : {Method::ZeroBytes, Method::ZeroWords}) {
    const Bytes enc = encode_on<TypeParam>(in, m, 10);
    // Every truncation is refused (the size table no longer adds up).
    for (u64 cut = 0; cut < enc.size(); ++cut) {
      const Bytes t(enc.begin(), enc.begin() + cut);
      EXPECT_THROW(decode_on<TypeParam>(t), ksz::CorruptStream) << cut;
    }
    // Any flipped bit: refused or decoded to the right length, never a crash.
    std::mt19937_64 rng(9);
    for (u64 i = 0; i < enc.size(); ++i) {
      Bytes f = enc;
      f[i] ^= static_cast<u8>(1u << (rng() % 8));
      expect_rejected_or_sized<TypeParam>(f, in.size());
    }
    // Flips in the header and size table are always caught.
    for (u64 i = 0; i < ksz::lossless::kHeaderBytes + 4 * blocks_of(in.size(), 10); ++i) {
      if (i < 8) continue;  // raw length: checked by the caller against what it expects
      Bytes f = enc;
      f[i] ^= 0x10;
      EXPECT_THROW(decode_on<TypeParam>(f), ksz::CorruptStream) << i;
    }
  }
}

TYPED_TEST(Lossless, AbsurdHeadersRejectedBeforeAllocating) {
  Bytes h(ksz::lossless::kHeaderBytes + 8, 0);
  const u64 huge = u64(1) << 50;
  std::memcpy(h.data(), &huge, 8);
  h[8] = 13;
  h[9] = 1;
  const std::uint32_t nb = 2;
  std::memcpy(h.data() + 12, &nb, 4);
  EXPECT_THROW(ksz::lossless::inspect(h.data(), h.size()), ksz::CorruptStream);  // 2^50 bytes in 2 blocks
  const std::uint32_t many = 0xFFFFFFFFu;
  std::memcpy(h.data() + 12, &many, 4);
  EXPECT_THROW(ksz::lossless::inspect(h.data(), h.size()), ksz::CorruptStream);  // table past the end
  h[9] = 7;
  EXPECT_THROW(ksz::lossless::inspect(h.data(), h.size()), ksz::CorruptStream);  // unknown method
  h[9] = 1;
  h[8] = 40;
  EXPECT_THROW(ksz::lossless::inspect(h.data(), h.size()), ksz::CorruptStream);  // block size
  EXPECT_THROW(ksz::lossless::inspect(h.data(), 7), ksz::CorruptStream);
}

// A stored size that claims less than a coded block's top bitmap, or values
// that would start before the block: refused.
TYPED_TEST(Lossless, LyingBlockSizesRejected) {
  const Bytes in = make(Kind::SparseBytes, 4096, 2);
  Bytes enc = encode_on<TypeParam>(in, Method::ZeroBytes, 10);
  ASSERT_EQ(enc.size() > ksz::lossless::kHeaderBytes + 16, true);
  // Move one byte from block 0 to block 1: the table still adds up.
  std::uint32_t s0, s1;
  std::memcpy(&s0, enc.data() + 16, 4);
  std::memcpy(&s1, enc.data() + 20, 4);
  ASSERT_LT(s0, 1024u);
  ASSERT_LT(s1, 1024u);
  s0 -= 1;
  s1 += 1;
  std::memcpy(enc.data() + 16, &s0, 4);
  std::memcpy(enc.data() + 20, &s1, 4);
  EXPECT_THROW(decode_on<TypeParam>(enc), ksz::CorruptStream);
}

}  // namespace
