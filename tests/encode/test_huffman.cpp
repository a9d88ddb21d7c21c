// Canonical Huffman: codebook properties (prefix code, Kraft, optimality,
// length limit), bit-exact chunked encode on every backend, round trips, and
// hostile bitstreams that must be rejected without out-of-bounds access.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "portable/encode/huffman/codebook.hpp"
#include "portable/encode/huffman/huffman.hpp"
#include "src/core/error.hpp"
#include "tests/common/backends.hpp"

namespace {

using ksz::huffman::Codebook;
using ksz::huffman::kMaxCodeLength;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// ---- host references -------------------------------------------------------

// Cost (total bits) of an unrestricted Huffman code: the sum of all merges.
u64 reference_huffman_cost(const std::vector<u64>& hist) {
  std::priority_queue<u64, std::vector<u64>, std::greater<u64>> q;
  for (const u64 h : hist) {
    if (h) q.push(h);
  }
  if (q.size() == 1) return q.top();
  u64 cost = 0;
  while (q.size() > 1) {
    const u64 a = q.top();
    q.pop();
    const u64 b = q.top();
    q.pop();
    cost += a + b;
    q.push(a + b);
  }
  return cost;
}

u64 code_cost(const std::vector<u64>& hist, const std::vector<std::uint8_t>& lengths) {
  u64 cost = 0;
  for (std::size_t s = 0; s < hist.size(); ++s) cost += hist[s] * lengths[s];
  return cost;
}

// Kraft sum in units of 2^-kMaxCodeLength.
u64 kraft_units(const std::vector<std::uint8_t>& lengths) {
  u64 k = 0;
  for (const std::uint8_t l : lengths) {
    if (l) k += u64(1) << (kMaxCodeLength - l);
  }
  return k;
}

// Codes as left-aligned intervals must be disjoint: no code prefixes another.
bool prefix_free(const Codebook& book) {
  std::vector<std::pair<u64, u64>> iv;
  for (std::size_t s = 0; s < book.nsym(); ++s) {
    const int l = book.lengths[s];
    if (!l) continue;
    if (book.codes[s] >> l) return false;  // code wider than its length
    iv.emplace_back(u64(book.codes[s]) << (kMaxCodeLength - l), u64(1) << (kMaxCodeLength - l));
  }
  std::sort(iv.begin(), iv.end());
  for (std::size_t i = 1; i < iv.size(); ++i) {
    if (iv[i - 1].first + iv[i - 1].second > iv[i].first) return false;
  }
  return true;
}

int max_length(const Codebook& book) {
  return book.lengths.empty() ? 0 : *std::max_element(book.lengths.begin(), book.lengths.end());
}

void expect_valid_code(const Codebook& book, const std::vector<u64>& hist) {
  ASSERT_EQ(book.lengths.size(), hist.size());
  ASSERT_EQ(book.codes.size(), hist.size());
  std::size_t used = 0;
  for (std::size_t s = 0; s < hist.size(); ++s) {
    EXPECT_EQ(hist[s] != 0, book.lengths[s] != 0) << "symbol " << s;
    used += hist[s] != 0;
  }
  EXPECT_LE(max_length(book), kMaxCodeLength);
  EXPECT_TRUE(prefix_free(book));
  if (used >= 2) {
    EXPECT_EQ(kraft_units(book.lengths), u64(1) << kMaxCodeLength);  // complete code
  }
  // Canonical: by (length, id), each code is the previous one plus one, shifted.
  std::vector<u32> order;
  for (std::size_t s = 0; s < hist.size(); ++s) {
    if (book.lengths[s]) order.push_back(static_cast<u32>(s));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](u32 a, u32 b) { return book.lengths[a] < book.lengths[b]; });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const u32 a = order[i - 1], b = order[i];
    EXPECT_EQ(book.codes[b], (book.codes[a] + 1) << (book.lengths[b] - book.lengths[a]));
  }
  if (!order.empty()) {
    EXPECT_EQ(book.codes[order[0]], 0u);
  }
}

// Bit-exact reference of the chunked MSB-first format.
void reference_encode(const std::vector<u16>& sym, const Codebook& book, u32 cs,
                      std::vector<u32>& words, std::vector<u64>& offsets) {
  words.clear();
  offsets.assign(1, 0);
  for (std::size_t c0 = 0; c0 < sym.size(); c0 += cs) {
    u32 cur = 0;
    int used = 0;
    const std::size_t c1 = std::min<std::size_t>(c0 + cs, sym.size());
    for (std::size_t i = c0; i < c1; ++i) {
      const int l = book.lengths[sym[i]];
      for (int b = l - 1; b >= 0; --b) {
        cur = (cur << 1) | ((book.codes[sym[i]] >> b) & 1u);
        if (++used == 32) {
          words.push_back(cur);
          cur = 0;
          used = 0;
        }
      }
    }
    if (used) words.push_back(cur << (32 - used));
    offsets.push_back(words.size());
  }
}

std::vector<u64> histogram_of(const std::vector<u16>& sym, std::size_t nsym) {
  std::vector<u64> h(nsym, 0);
  for (const u16 s : sym) ++h[s];
  return h;
}

std::vector<u64> fibonacci_hist(std::size_t nsym, std::size_t nfib) {
  std::vector<u64> h(nsym, 0);
  u64 a = 1, b = 1;
  for (std::size_t i = 0; i < nfib && i < nsym; ++i) {
    h[i] = a;
    const u64 t = a + b;
    a = b;
    b = t;
  }
  return h;
}

// Quantization codes: a rounded normal around `center`, clamped to [0, nsym).
std::vector<u16> quant_codes(std::size_t n, std::size_t nsym, double sigma, u64 seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(double(nsym / 2), sigma);
  std::vector<u16> v(n);
  for (auto& x : v) {
    const double r = std::round(d(rng));
    x = static_cast<u16>(std::min<double>(std::max<double>(r, 0.0), double(nsym - 1)));
  }
  return v;
}

std::vector<u16> uniform_codes(std::size_t n, std::size_t nsym, u64 seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<u32> d(0, static_cast<u32>(nsym - 1));
  std::vector<u16> v(n);
  for (auto& x : v) x = static_cast<u16>(d(rng));
  return v;
}

// ---- codebook (host) -------------------------------------------------------

TEST(HuffmanCodebook, EmptyHistogramGivesNoCodes) {
  const std::vector<u64> h(1024, 0);
  const Codebook b = ksz::huffman::build_codebook(h.data(), h.size());
  EXPECT_EQ(b.nsym(), 1024u);
  EXPECT_EQ(max_length(b), 0);
}

TEST(HuffmanCodebook, SingleUsedSymbolGetsOneBit) {
  std::vector<u64> h(1024, 0);
  h[512] = 123456789;
  const Codebook b = ksz::huffman::build_codebook(h.data(), h.size());
  expect_valid_code(b, h);
  EXPECT_EQ(b.lengths[512], 1);
  EXPECT_EQ(b.codes[512], 0u);
  const std::vector<u64> one(1, 7);
  EXPECT_EQ(ksz::huffman::build_codebook(one.data(), 1).lengths[0], 1);
}

TEST(HuffmanCodebook, RejectsBadSize) {
  const std::vector<u64> h(65537, 1);
  EXPECT_THROW(ksz::huffman::build_codebook(h.data(), 0), ksz::InvalidInput);
  EXPECT_THROW(ksz::huffman::build_codebook(h.data(), 65537), ksz::InvalidInput);
  EXPECT_NO_THROW(ksz::huffman::build_codebook(h.data(), 65536));
}

TEST(HuffmanCodebook, RandomHistogramsAreOptimalCanonicalPrefixCodes) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t nsym = 1 + rng() % (trial < 100 ? 40 : 5000);
    std::vector<u64> h(nsym);
    const int kind = trial % 4;
    for (auto& x : h) {
      if (kind == 0) x = rng() % 4;                            // many ties and zeros
      if (kind == 1) x = rng() % 1000000;                      // spread
      if (kind == 2) x = (rng() % 3 == 0) ? 0 : u64(1) << (rng() % 20);  // powers of two
      if (kind == 3) x = rng() % 2 ? 1 : (u64(1) << 40) - rng() % 1000;  // up to 2^40
    }
    const Codebook b = ksz::huffman::build_codebook(h.data(), nsym);
    expect_valid_code(b, h);
    if (max_length(b) < kMaxCodeLength) {  // limit cannot have bound
      EXPECT_EQ(code_cost(h, b.lengths), reference_huffman_cost(h)) << "trial " << trial;
    }
    // Deterministic.
    const Codebook b2 = ksz::huffman::build_codebook(h.data(), nsym);
    EXPECT_EQ(b.lengths, b2.lengths);
    EXPECT_EQ(b.codes, b2.codes);
  }
}

TEST(HuffmanCodebook, TiesBrokenBySymbolId) {
  const std::vector<u64> h(5, 10);  // lengths {2,2,2,3,3}: lower ids get the shorter codes
  const Codebook b = ksz::huffman::build_codebook(h.data(), h.size());
  expect_valid_code(b, h);
  EXPECT_EQ(code_cost(h, b.lengths), reference_huffman_cost(h));
  for (std::size_t s = 1; s < h.size(); ++s) EXPECT_LE(b.lengths[s - 1], b.lengths[s]);
}

// The used symbols' order (count ascending, then id descending; a counting
// sort for small counts, a comparison sort above them) against a plain
// stable sort: the same lengths symbol by symbol, on histograms whose counts
// straddle the two sorts' boundary (1,024), with many ties. Misplacing one
// tie changes some symbol's length.
TEST(HuffmanCodebook, SymbolOrderMatchesPlainSort) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t nsym = 1 + rng() % (trial < 100 ? 50 : 3000);
    std::vector<u64> h(nsym);
    for (auto& x : h) {
      const u64 r = rng();
      const int kind = static_cast<int>(r % 5);
      if (kind == 0) x = 0;
      if (kind == 1) x = 1020 + (r >> 8) % 8;  // both sides of the boundary
      if (kind == 2) x = 1 + (r >> 8) % 3;     // ties
      if (kind == 3) x = (r >> 8) % 1024;
      if (kind == 4) x = 1 + ((r >> 8) >> (r % 56));
    }
    std::vector<std::uint32_t> sym;
    for (std::size_t s = nsym; s-- > 0;)
      if (h[s]) sym.push_back(static_cast<std::uint32_t>(s));
    std::stable_sort(sym.begin(), sym.end(), [&](std::uint32_t a, std::uint32_t b) { return h[a] < h[b]; });
    std::vector<std::uint8_t> expected(nsym, 0);
    if (sym.size() == 1) expected[sym[0]] = 1;
    if (sym.size() >= 2) {
      std::vector<u64> w(sym.size());
      for (std::size_t i = 0; i < sym.size(); ++i) w[i] = h[sym[i]];
      const std::vector<int> len = ksz::huffman::impl::limited_code_lengths(w, kMaxCodeLength);
      for (std::size_t i = 0; i < sym.size(); ++i) expected[sym[i]] = static_cast<std::uint8_t>(len[i]);
    }
    EXPECT_EQ(ksz::huffman::build_codebook(h.data(), nsym).lengths, expected) << "trial " << trial;
  }
}

// A compressor's table image (encode_image) is the full image's encoder
// table, word for word, with its counts.
TEST(HuffmanCodebook, EncodeImageIsTheFullImagesEncoderPart) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t nsym = 1 + rng() % (trial < 20 ? 40 : 5000);
    std::vector<u64> h(nsym);
    for (auto& x : h) x = rng() % 3 == 0 ? 0 : 1 + ((rng() >> 8) >> (rng() % 50));
    if (trial % 7 == 0) h = fibonacci_hist(nsym < 64 ? 64 : nsym, 40);  // lengths limited to 24
    const Codebook b = ksz::huffman::build_codebook(h.data(), h.size());
    const ksz::huffman::TableImage full = ksz::huffman::table_image(b), enc = ksz::huffman::encode_image(b);
    EXPECT_TRUE(full.decodable);
    EXPECT_FALSE(enc.decodable);
    ASSERT_EQ(enc.words.size(), b.nsym()) << "trial " << trial;
    EXPECT_TRUE(std::equal(enc.words.begin(), enc.words.end(), full.words.begin())) << "trial " << trial;
    EXPECT_EQ(enc.nsym, full.nsym);
    EXPECT_EQ(enc.n_used, full.n_used);
    EXPECT_EQ(enc.max_length, full.max_length);
  }
}

TEST(HuffmanCodebook, FibonacciHistogramRespectsLimit) {
  for (const std::size_t nfib : {25, 26, 30, 45, 60}) {  // fib(60) ~ 2^40
    const std::vector<u64> h = fibonacci_hist(1024, nfib);
    const Codebook b = ksz::huffman::build_codebook(h.data(), h.size());
    expect_valid_code(b, h);
    const u64 cost = code_cost(h, b.lengths);
    EXPECT_GE(cost, reference_huffman_cost(h));
    if (nfib <= 25) {
      EXPECT_EQ(cost, reference_huffman_cost(h));  // depth 24 fits
    }
    if (nfib >= 30) {
      EXPECT_EQ(max_length(b), kMaxCodeLength);
    }
  }
}

TEST(HuffmanCodebook, FullAlphabetWithHugeSkewedCounts) {
  std::mt19937_64 rng(7);
  std::vector<u64> h(65536);
  for (auto& x : h) x = 1 + rng() % 3;
  const std::vector<u64> fib = fibonacci_hist(60, 60);
  for (std::size_t i = 0; i < 60; ++i) h[1000 + i] = fib[i] << 1;
  const Codebook b = ksz::huffman::build_codebook(h.data(), h.size());
  expect_valid_code(b, h);
  EXPECT_EQ(max_length(b), kMaxCodeLength);
  // Sums far beyond 2^58 are scaled first; the code must stay valid and complete.
  std::vector<u64> big(300);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = ~u64(0) - i * 977;
  expect_valid_code(ksz::huffman::build_codebook(big.data(), big.size()), big);
}

// Package-merge in its plain form: every level's whole list merged again,
// each item a weight and the leaves it holds counted per symbol (a leaf
// first on equal weights). The reference for the codebook's package-merge,
// which merges again only what changed from the level below.
std::vector<int> plain_package_merge(const std::vector<u64>& w, int limit) {
  const std::size_t m = w.size();
  struct Item {
    u64 weight;
    std::vector<int> leaves;  // per symbol: how many of its leaves the item holds
  };
  std::vector<Item> leaves(m);
  for (std::size_t i = 0; i < m; ++i) {
    leaves[i].weight = w[i];
    leaves[i].leaves.assign(m, 0);
    leaves[i].leaves[i] = 1;
  }
  std::vector<Item> list = leaves;  // the deepest level
  for (int l = limit - 2; l >= 0; --l) {
    std::vector<Item> next;
    std::size_t i = 0;
    for (std::size_t p = 0; p + 1 < list.size(); p += 2) {
      Item pkg{list[p].weight + list[p + 1].weight, list[p].leaves};
      for (std::size_t s = 0; s < m; ++s) pkg.leaves[s] += list[p + 1].leaves[s];
      while (i < m && leaves[i].weight <= pkg.weight) next.push_back(leaves[i++]);
      next.push_back(pkg);
    }
    while (i < m) next.push_back(leaves[i++]);
    list = next;
  }
  std::vector<int> len(m, 0);
  for (std::size_t k = 0; k < 2 * m - 2; ++k)
    for (std::size_t s = 0; s < m; ++s) len[s] += list[k].leaves[s];
  return len;
}

// The codebook's package-merge gives the plain one's lengths: weights with
// ties, heavy skews and long tails of small counts (the quantization codes'
// shape), limits from the least possible to just under the Huffman tree's
// depth (where package-merge runs).
TEST(HuffmanCodebook, PackageMergeMatchesPlainForm) {
  std::mt19937_64 rng(5);
  int bound = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t m = 2 + rng() % (trial < 150 ? 30 : 160);
    std::vector<u64> w(m);
    for (auto& x : w) {
      const int kind = trial % 3;
      if (kind == 0) x = 1 + rng() % 4;                                                  // ties
      if (kind == 1) x = rng() % 3 ? 1 + rng() % 8 : 1 + rng() % (u64(1) << 30);         // a tail and a few heavy
      if (kind == 2) x = 1 + static_cast<u64>(std::exp(double(rng() % 2000) / 100.0));  // a skew
    }
    std::sort(w.begin(), w.end());
    int least = 1;
    while ((std::size_t(1) << least) < m) ++least;
    const std::vector<int> huffman = ksz::huffman::impl::limited_code_lengths(w, 60);  // the tree's own depths
    const int depth = *std::max_element(huffman.begin(), huffman.end());
    if (depth <= least) continue;  // no limit binds
    ++bound;
    const int limit = least + static_cast<int>(rng() % (depth - least));  // below the tree's depth
    EXPECT_EQ(ksz::huffman::impl::limited_code_lengths(w, limit), plain_package_merge(w, limit))
        << "trial " << trial << ", " << m << " symbols, limit " << limit;
  }
  EXPECT_GT(bound, 200);
}

// Package-merge against brute force, with small limits so the search is finite.
TEST(HuffmanCodebook, LengthLimitedCodeIsOptimal) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    const int limit = 3 + trial % 2;
    const std::size_t m = 2 + rng() % 6;  // <= 7 <= 2^limit
    std::vector<u64> w(m);
    for (auto& x : w) x = 1 + (trial % 3 == 0 ? rng() % 1000 : u64(1) << (rng() % 16));
    std::sort(w.begin(), w.end());
    const std::vector<int> len = ksz::huffman::impl::limited_code_lengths(w, limit);
    ASSERT_EQ(len.size(), m);
    u64 cost = 0, kraft = 0;
    for (std::size_t i = 0; i < m; ++i) {
      ASSERT_GE(len[i], 1);
      ASSERT_LE(len[i], limit);
      cost += w[i] * len[i];
      kraft += u64(1) << (limit - len[i]);
    }
    EXPECT_LE(kraft, u64(1) << limit);
    u64 best = ~u64(0);
    std::vector<int> l(m, 1);
    for (;;) {
      u64 k = 0, c = 0;
      for (std::size_t i = 0; i < m; ++i) {
        k += u64(1) << (limit - l[i]);
        c += w[i] * l[i];
      }
      if (k <= (u64(1) << limit)) best = std::min(best, c);
      std::size_t i = 0;
      while (i < m && l[i] == limit) l[i++] = 1;
      if (i == m) break;
      ++l[i];
    }
    EXPECT_EQ(cost, best) << "trial " << trial;
  }
}

TEST(HuffmanCodebook, FromLengthsMatchesBuild) {
  const std::vector<u64> h = fibonacci_hist(2000, 40);
  const Codebook b = ksz::huffman::build_codebook(h.data(), h.size());
  const Codebook r = ksz::huffman::codebook_from_lengths(b.lengths.data(), b.nsym());
  EXPECT_EQ(r.lengths, b.lengths);
  EXPECT_EQ(r.codes, b.codes);
}

TEST(HuffmanCodebook, FromLengthsRejectsInvalid) {
  using ksz::huffman::codebook_from_lengths;
  std::vector<std::uint8_t> l = {1, 1, 1};  // Kraft 3/2
  EXPECT_THROW(codebook_from_lengths(l.data(), l.size()), ksz::CorruptStream);
  l = {2, 2, 2, 2, 3};  // Kraft 1 + 1/8
  EXPECT_THROW(codebook_from_lengths(l.data(), l.size()), ksz::CorruptStream);
  l = {25, 1};
  EXPECT_THROW(codebook_from_lengths(l.data(), l.size()), ksz::CorruptStream);
  l = {255, 0};
  EXPECT_THROW(codebook_from_lengths(l.data(), l.size()), ksz::CorruptStream);
  EXPECT_THROW(codebook_from_lengths(l.data(), 0), ksz::CorruptStream);
  std::vector<std::uint8_t> big(65537, 17);
  EXPECT_THROW(codebook_from_lengths(big.data(), big.size()), ksz::CorruptStream);
  // 65536 codes of length 16 fill the code space exactly; one shorter overflows it.
  std::vector<std::uint8_t> full(65536, 16);
  EXPECT_NO_THROW(codebook_from_lengths(full.data(), full.size()));
  full[0] = 15;
  EXPECT_THROW(codebook_from_lengths(full.data(), full.size()), ksz::CorruptStream);
  // Valid: a single symbol of length 1, an incomplete code, no symbols at all.
  l = {0, 1, 0};
  EXPECT_NO_THROW(codebook_from_lengths(l.data(), l.size()));
  l = {1, 3, 0, 24};
  EXPECT_NO_THROW(codebook_from_lengths(l.data(), l.size()));
  l = {0, 0};
  EXPECT_NO_THROW(codebook_from_lengths(l.data(), l.size()));
}

// ---- encode / decode per backend -----------------------------------------

template <class Space>
using DView = Kokkos::View<u16*, typename Space::memory_space>;

template <class Space, class T>
Kokkos::View<T*, typename Space::memory_space> to_device(const std::vector<T>& v) {
  Kokkos::View<T*, typename Space::memory_space> d("d", v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

template <class V>
std::vector<typename V::non_const_value_type> to_host(const V& d) {
  auto h = Kokkos::create_mirror_view(d);
  Kokkos::deep_copy(h, d);
  return std::vector<typename V::non_const_value_type>(h.data(), h.data() + h.extent(0));
}

struct Stream {
  std::vector<u32> words;
  std::vector<u64> offsets;
};

// An encode()'s words, chunk offsets and run lengths, on the host.
struct HostEncoded {
  std::vector<u32> words;
  std::vector<u64> offsets;
  std::vector<u16> runs;
  template <class E>
  static HostEncoded of(const E& enc) {
    return {to_host(enc.words), to_host(enc.chunk_offsets), to_host(enc.run_bits)};
  }
};

// On GPUs, each case runs twice: with the CUDA specializations (where built)
// and without them, through the portable GPU kernels.
template <class Space>
std::vector<bool> spec_settings() {
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
  return host ? std::vector<bool>{true} : std::vector<bool>{true, false};
}

// Encodes, checks the bits against the host reference, decodes and compares.
template <class Space>
Stream round_trip(const std::vector<u16>& sym, const Codebook& book, u32 cs) {
  Space space;
  const ksz::huffman::DeviceCodebook<Space> dbook(book);
  const auto dsym = to_device<Space>(sym);
  std::vector<u32> rw;
  std::vector<u64> ro;
  reference_encode(sym, book, cs, rw, ro);
  Stream s;
  ksz::test::SpecGuard restore;
  for (const bool spec : spec_settings<Space>()) {
    ksz::cuda_spec::set_enabled(spec);
    const std::string where = "n=" + std::to_string(sym.size()) + " cs=" + std::to_string(cs) + (spec ? "" : " portable");
    const auto enc = ksz::huffman::encode(space, dsym, dbook, cs);
    space.fence();
    s = Stream{to_host(enc.words), to_host(enc.chunk_offsets)};
    EXPECT_EQ(enc.n_words, rw.size()) << where;
    EXPECT_EQ(s.offsets, ro) << where;
    EXPECT_TRUE(s.words == rw) << where;
    DView<Space> out("out", sym.size());
    ksz::huffman::decode(space, enc.words, enc.chunk_offsets, cs, dbook, out);
    EXPECT_TRUE(to_host(out) == sym) << where;
  }
  return s;
}

template <class Space>
class HuffmanCodec : public ::testing::Test {};
TYPED_TEST_SUITE(HuffmanCodec, ksz::test::ExecSpaces, ksz::test::ExecSpaceName);

TYPED_TEST(HuffmanCodec, RoundTripSizes) {
  const u32 cs = 1000;
  for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(cs - 1), std::size_t(cs),
                              std::size_t(cs + 1), std::size_t(3 * cs + 17), std::size_t(1000003)}) {
    const std::vector<u16> sym = quant_codes(n, 1024, 20.0, n);
    std::vector<u64> h = histogram_of(sym, 1024);
    h[0] += 1;  // keep the codebook nonempty for n == 0
    round_trip<TypeParam>(sym, ksz::huffman::build_codebook(h.data(), h.size()), cs);
  }
}

TYPED_TEST(HuffmanCodec, RoundTripChunkSizes) {
  const std::vector<u16> sym = uniform_codes(30011, 300, 5);
  const std::vector<u64> h = histogram_of(sym, 300);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  for (const u32 cs : {1u, 2u, 3u, 5u, 31u, 32u, 33u, 100u, 1023u, 1024u, 4096u, 8191u, 8192u, 40000u}) {
    round_trip<TypeParam>(sym, book, cs);
  }
}

TYPED_TEST(HuffmanCodec, SkewedQuantCodesCompress) {
  // Codes concentrated around 512 of 1024: most symbols take one or two bits.
  const std::vector<u16> sym = quant_codes(200000, 1024, 0.6, 11);
  const std::vector<u64> h = histogram_of(sym, 1024);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  const auto s = round_trip<TypeParam>(sym, book, 4096);
  EXPECT_LT(32.0 * s.words.size() / sym.size(), 2.5);  // bits per symbol
}

// With a workspace and a bound on the words (what the Lorenzo pipeline
// passes), CUDA encodes in one pass with decoupled look-back over the chunks:
// the words, offsets and sub-chunk lengths must be those of the two passes
// (and of the host reference), over chunk counts that span many look-back
// windows, long codes, and a stream too short for one chunk. A symbol without
// a code is refused the same way.
TYPED_TEST(HuffmanCodec, OnePassWithBoundSameAsTwoPasses) {
  using Mem = typename TypeParam::memory_space;
  struct Case {
    std::size_t n;
    u32 cs, sub;
    double sigma;
  };
  const Case cases[] = {{1, 4096, 512, 20.0},         {4095, 4096, 512, 0.6},    {1000003, 1000, 200, 20.0},
                        {4000037, 4096, 512, 0.6},    {300001, 8192, 1024, 80.0}, {777777, 2048, 0, 3.0}};
  for (const Case& c : cases) {
    const std::vector<u16> sym = quant_codes(c.n, 1024, c.sigma, c.n + c.cs);
    const std::vector<u64> h = histogram_of(sym, 1024);
    const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
    TypeParam space;
    const ksz::huffman::DeviceCodebook<TypeParam> dbook(book);
    const auto dsym = to_device<TypeParam>(sym);
    const auto two = ksz::huffman::encode(space, dsym, dbook, c.cs, nullptr, c.sub);
    space.fence();
    const HostEncoded two_h = HostEncoded::of(two);
    typename ksz::pipeline::Workspace<Mem>::Lease ws;
    const auto one = ksz::huffman::encode(space, dsym, dbook, c.cs, &ws, c.sub,
                                          ksz::huffman::words_bound(h.data(), book, c.n, c.cs));
    space.fence();
    const HostEncoded one_h = HostEncoded::of(one);
    EXPECT_EQ(one.n_words, two.n_words) << "n=" << c.n << " cs=" << c.cs;
    EXPECT_TRUE(one_h.words == two_h.words) << "n=" << c.n << " cs=" << c.cs;
    EXPECT_TRUE(one_h.offsets == two_h.offsets) << "n=" << c.n << " cs=" << c.cs;
    EXPECT_TRUE(one_h.runs == two_h.runs) << "n=" << c.n << " cs=" << c.cs;
    std::vector<u32> rw;
    std::vector<u64> ro;
    reference_encode(sym, book, c.cs, rw, ro);
    EXPECT_TRUE(two_h.words == rw && two_h.offsets == ro) << "n=" << c.n << " cs=" << c.cs;
  }
  // A symbol the codebook has no code for.
  std::vector<u16> sym = quant_codes(100000, 1024, 5.0, 3);
  const std::vector<u64> h = histogram_of(sym, 1024);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  u16 unused = 0;
  while (book.lengths[unused]) ++unused;
  sym[77777] = unused;
  TypeParam space;
  const ksz::huffman::DeviceCodebook<TypeParam> dbook(book);
  const auto dsym = to_device<TypeParam>(sym);
  typename ksz::pipeline::Workspace<Mem>::Lease ws;
  EXPECT_THROW(ksz::huffman::encode(space, dsym, dbook, 4096, &ws, 512,
                                    ksz::huffman::words_bound(h.data(), book, sym.size(), 4096)),
               ksz::InvalidInput);
}

// Byte codes (quantize/byte_codes.hpp: what the CUDA 3D Lorenzo path keeps)
// encode to the words, offsets and run lengths of the 16-bit codes they
// stand for, with and without the specializations (the CUDA single pass
// reads them directly; a chunk size it does not take, and every portable
// path, expand them first), and expand to those codes: codes near the radius,
// many listed ones (wide spread), outliers (code 0), a radius below 128 (no
// listed codes), partial runs.
TYPED_TEST(HuffmanCodec, ByteCodesSameAsWideCodes) {
  using Mem = typename TypeParam::memory_space;
  struct Case {
    std::size_t n;
    u32 radius, cs, sub;
    double sigma;
  };
  const Case cases[] = {{1000003, 512, 4096, 512, 20.0}, {300001, 512, 1000, 200, 90.0}, {77777, 64, 4096, 0, 9.0},
                        {5, 512, 4096, 512, 300.0},      {40000, 2048, 333, 0, 400.0}};
  for (const Case& c : cases) {
    const std::string where = "n=" + std::to_string(c.n) + " r=" + std::to_string(c.radius);
    std::vector<u16> sym = quant_codes(c.n, 2 * c.radius, c.sigma, c.n);
    for (std::size_t i = 0; i < c.n; i += 997) sym[i] = 0;  // outliers
    std::vector<std::uint8_t> bytes(c.n);
    std::vector<u64> escapes;
    for (std::size_t i = 0; i < c.n; ++i) {
      bytes[i] = static_cast<std::uint8_t>(ksz::quantize::code_byte(sym[i], c.radius));
      if (bytes[i] == 0 && sym[i] != 0) escapes.push_back(u64(i) << 16 | sym[i]);
    }
    if (c.radius < 128) EXPECT_TRUE(escapes.empty()) << where;
    if (c.sigma > 50 && c.n > 1000) EXPECT_GT(escapes.size(), c.n / 100) << where;
    const std::vector<u64> h = histogram_of(sym, 2 * c.radius);
    const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
    TypeParam space;
    const ksz::huffman::DeviceCodebook<TypeParam> dbook(book);
    const auto dsym = to_device<TypeParam>(sym);
    const ksz::quantize::ByteCodes<Mem> bc{to_device<TypeParam>(bytes), to_device<TypeParam>(escapes), c.radius};
    const u64 bound = ksz::huffman::words_bound(h.data(), book, c.n, c.cs);
    ksz::test::SpecGuard restore;
    for (const bool spec : spec_settings<TypeParam>()) {
      ksz::cuda_spec::set_enabled(spec);
      DView<TypeParam> wide("wide", c.n);
      ksz::quantize::expand(space, bc, wide);
      space.fence();
      EXPECT_TRUE(to_host(wide) == sym) << where;
      const auto ref = ksz::huffman::encode(space, dsym, dbook, c.cs, nullptr, c.sub);
      space.fence();
      const HostEncoded ref_h = HostEncoded::of(ref);
      typename ksz::pipeline::Workspace<Mem>::Lease ws;
      const auto got = ksz::huffman::encode(space, bc, dbook, c.cs, &ws, c.sub, bound);
      space.fence();
      const HostEncoded got_h = HostEncoded::of(got);
      EXPECT_EQ(got.n_words, ref.n_words) << where;
      EXPECT_TRUE(got_h.words == ref_h.words) << where << (spec ? "" : " portable");
      EXPECT_TRUE(got_h.offsets == ref_h.offsets) << where;
      EXPECT_TRUE(got_h.runs == ref_h.runs) << where;
    }
  }
}

// Codes of a wide alphabet read through a Narrow (the interp pipeline's
// codes at radius 4096, encoded at its chosen radius) encode to the words,
// offsets and run lengths of the narrow codes written out, on the single
// pass and the two passes, with and without the specializations: residuals
// on both sides of every radius, outliers (code 0), partial runs. A code past
// the wide alphabet is refused.
TYPED_TEST(HuffmanCodec, NarrowedCodesSameAsNarrowCodes) {
  using Mem = typename TypeParam::memory_space;
  constexpr u32 from = 4096;
  const std::size_t n = 300007;
  const std::vector<u16> wide = quant_codes(n, 2 * from, 150.0, 17);
  for (const u32 r : {16u, 100u, 512u, from}) {
    const ksz::huffman::Narrow narrow{from, r};
    std::vector<u16> sym(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t q = std::int64_t(wide[i]) - from;
      sym[i] = wide[i] != 0 && q > -std::int64_t(r) && q < std::int64_t(r) ? static_cast<u16>(q + r) : u16(0);
      ASSERT_EQ(narrow(wide[i]), sym[i]) << "r=" << r << " code " << wide[i];
    }
    if (r == 16) ASSERT_GT(std::count(sym.begin(), sym.end(), u16(0)), std::ptrdiff_t(n / 2));
    const std::vector<u64> h = histogram_of(sym, 2 * r);
    const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
    TypeParam space;
    const ksz::huffman::DeviceCodebook<TypeParam> dbook(book);
    const auto dsym = to_device<TypeParam>(sym), dwide = to_device<TypeParam>(wide);
    const u64 bound = ksz::huffman::words_bound(h.data(), book, n, 4096);
    ksz::test::SpecGuard restore;
    for (const bool spec : spec_settings<TypeParam>()) {
      ksz::cuda_spec::set_enabled(spec);
      const std::string where = "r=" + std::to_string(r) + (spec ? "" : " portable");
      const auto ref = ksz::huffman::encode(space, dsym, dbook, 4096, nullptr, 512);
      space.fence();
      const HostEncoded ref_h = HostEncoded::of(ref);
      typename ksz::pipeline::Workspace<Mem>::Lease ws;
      for (const bool one_pass : {true, false}) {
        const auto got = ksz::huffman::encode(space, dwide, dbook, 4096, one_pass ? &ws : nullptr, 512,
                                              one_pass ? bound : 0, narrow);
        space.fence();
        const HostEncoded got_h = HostEncoded::of(got);
        EXPECT_EQ(got.n_words, ref.n_words) << where;
        EXPECT_TRUE(got_h.words == ref_h.words) << where << (one_pass ? " one pass" : " two passes");
        EXPECT_TRUE(got_h.offsets == ref_h.offsets) << where;
        EXPECT_TRUE(got_h.runs == ref_h.runs) << where;
      }
    }
    std::vector<u16> bad = wide;
    bad[n / 2] = static_cast<u16>(2 * from);
    const auto dbad = to_device<TypeParam>(bad);
    typename ksz::pipeline::Workspace<Mem>::Lease ws;
    EXPECT_THROW(ksz::huffman::encode(space, dbad, dbook, 4096, &ws, 512, bound, narrow), ksz::InvalidInput);
    EXPECT_THROW(ksz::huffman::encode(space, dbad, dbook, 4096, nullptr, 512, 0, narrow), ksz::InvalidInput);
  }
}

TYPED_TEST(HuffmanCodec, SingleSymbolStream) {
  const std::vector<u16> sym(10000, 7);
  const std::vector<u64> h = histogram_of(sym, 1024);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  const auto s = round_trip<TypeParam>(sym, book, 1000);
  EXPECT_EQ(s.words.size(), 10u * 32u);  // 1000 bits per chunk = 32 words
  for (const u32 w : s.words) EXPECT_EQ(w, 0u);
}

TYPED_TEST(HuffmanCodec, LongCodesUseSlowPath) {
  // Fibonacci counts give lengths up to 24, beyond the lookup table.
  const Codebook book = [] {
    const std::vector<u64> h = fibonacci_hist(200, 60);
    return ksz::huffman::build_codebook(h.data(), h.size());
  }();
  ASSERT_EQ(max_length(book), kMaxCodeLength);
  std::vector<u16> sym;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 50000; ++i) sym.push_back(static_cast<u16>(rng() % 60));  // every symbol
  for (const u32 cs : {1u, 3u, 64u, 777u}) round_trip<TypeParam>(sym, book, cs);
}

TYPED_TEST(HuffmanCodec, FullAlphabet) {
  const std::vector<u16> sym = uniform_codes(300000, 65536, 13);
  const std::vector<u64> h = histogram_of(sym, 65536);
  round_trip<TypeParam>(sym, ksz::huffman::build_codebook(h.data(), h.size()), 2048);
}

TYPED_TEST(HuffmanCodec, IdenticalToSerial) {
#ifdef KOKKOS_ENABLE_SERIAL
  const std::vector<u16> sym = quant_codes(123457, 1024, 8.0, 17);
  const std::vector<u64> h = histogram_of(sym, 1024);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  for (const u32 cs : {1u, 256u, 8192u}) {
    const auto mine = round_trip<TypeParam>(sym, book, cs);
    const auto serial = round_trip<Kokkos::Serial>(sym, book, cs);
    EXPECT_TRUE(mine.words == serial.words) << "cs=" << cs;
    EXPECT_EQ(mine.offsets, serial.offsets);
  }
#else
  GTEST_SKIP() << "no Serial backend";
#endif
}

TYPED_TEST(HuffmanCodec, EncodeRejectsUncodedSymbols) {
  TypeParam space;
  std::vector<u64> h(16, 0);
  h[3] = h[4] = 1;
  const ksz::huffman::DeviceCodebook<TypeParam> book(ksz::huffman::build_codebook(h.data(), h.size()));
  std::vector<u16> sym(5000, 3);
  sym[4321] = 5;  // absent from the histogram
  EXPECT_THROW(ksz::huffman::encode(space, to_device<TypeParam>(sym), book, 100), ksz::InvalidInput);
  sym[4321] = 16;  // outside the alphabet
  EXPECT_THROW(ksz::huffman::encode(space, to_device<TypeParam>(sym), book, 100), ksz::InvalidInput);
  sym[4321] = 4;
  EXPECT_THROW(ksz::huffman::encode(space, to_device<TypeParam>(sym), book, 0), ksz::InvalidInput);
  EXPECT_NO_THROW(ksz::huffman::encode(space, to_device<TypeParam>(sym), book, 100));
  // Codebooks that are not canonical prefix codes are refused up front.
  Codebook bad = ksz::huffman::build_codebook(h.data(), h.size());
  bad.codes[4] ^= 1;
  EXPECT_THROW(ksz::huffman::DeviceCodebook<TypeParam>{bad}, ksz::InvalidInput);
  bad.lengths.assign(16, 1);
  bad.codes.assign(16, 0);
  EXPECT_THROW(ksz::huffman::DeviceCodebook<TypeParam>{bad}, ksz::InvalidInput);
}

// Decodes possibly hostile input; returns true if it was rejected. Any other
// exception (or a crash) fails the test.
template <class Space>
bool rejected(const std::vector<u32>& words, const std::vector<u64>& offsets, u32 cs,
              const ksz::huffman::DeviceCodebook<Space>& book, std::size_t n) {
  Space space;
  DView<Space> out("out", n);
  try {
    ksz::huffman::decode(space, to_device<Space>(words), to_device<Space>(offsets), cs, book, out);
  } catch (const ksz::CorruptStream&) {
    return true;
  }
  return false;
}

TYPED_TEST(HuffmanCodec, DecodeRejectsBadOffsets) {
  const u32 cs = 500;
  const std::vector<u16> sym = quant_codes(10000, 1024, 30.0, 21);
  const std::vector<u64> h = histogram_of(sym, 1024);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  const ksz::huffman::DeviceCodebook<TypeParam> dbook(book);
  const auto s = round_trip<TypeParam>(sym, book, cs);
  const std::size_t n = sym.size();
  ASSERT_FALSE(rejected<TypeParam>(s.words, s.offsets, cs, dbook, n));

  auto offs = s.offsets;
  offs.pop_back();  // truncated table
  EXPECT_TRUE(rejected<TypeParam>(s.words, offs, cs, dbook, n));
  EXPECT_TRUE(rejected<TypeParam>(s.words, s.offsets, cs, dbook, n + 1));  // table for another size
  EXPECT_TRUE(rejected<TypeParam>(s.words, s.offsets, 0, dbook, n));
  EXPECT_TRUE(rejected<TypeParam>(s.words, std::vector<u64>{}, cs, dbook, 0));
  auto words = s.words;
  words.pop_back();  // truncated bitstream
  EXPECT_TRUE(rejected<TypeParam>(words, s.offsets, cs, dbook, n));
  offs = s.offsets;
  offs.back() -= 1;  // last chunk one word short
  EXPECT_TRUE(rejected<TypeParam>(s.words, offs, cs, dbook, n));
  offs = s.offsets;
  std::swap(offs[3], offs[4]);  // not monotone
  EXPECT_TRUE(rejected<TypeParam>(s.words, offs, cs, dbook, n));
  offs = s.offsets;
  offs[0] = 1;
  EXPECT_TRUE(rejected<TypeParam>(s.words, offs, cs, dbook, n));
  offs = s.offsets;
  offs[7] = ~u64(0);
  EXPECT_TRUE(rejected<TypeParam>(s.words, offs, cs, dbook, n));
  // Any change to one offset breaks the exact word count of a chunk.
  std::mt19937_64 rng(23);
  for (int t = 0; t < 200; ++t) {
    offs = s.offsets;
    const std::size_t i = rng() % offs.size();
    const u64 old = offs[i];
    offs[i] = t % 3 == 0 ? rng() : t % 3 == 1 ? old + 1 + rng() % 5 : old - std::min<u64>(old, 1 + rng() % 5);
    if (offs[i] == old) continue;
    EXPECT_TRUE(rejected<TypeParam>(s.words, offs, cs, dbook, n)) << "offset " << i << " = " << offs[i];
  }
}

TYPED_TEST(HuffmanCodec, DecodeSurvivesCorruptWords) {
  std::mt19937_64 rng(29);
  // An incomplete code (Kraft < 1) makes invalid codewords reachable; the
  // Fibonacci code exercises the slow path on corrupted long codes.
  std::vector<std::uint8_t> inc(64, 0);
  for (int s = 0; s < 20; ++s) inc[s] = static_cast<std::uint8_t>(s < 4 ? 3 : 8 + s % 9);
  const std::vector<u64> fib = fibonacci_hist(100, 60);
  const std::vector<Codebook> books = {ksz::huffman::codebook_from_lengths(inc.data(), inc.size()),
                                       ksz::huffman::build_codebook(fib.data(), fib.size())};
  int detected = 0, trials = 0;
  for (const Codebook& book : books) {
    const ksz::huffman::DeviceCodebook<TypeParam> dbook(book);
    std::vector<u16> sym;
    for (int i = 0; i < 20000; ++i) {
      u16 s;
      do s = static_cast<u16>(rng() % book.nsym());
      while (!book.lengths[s]);
      sym.push_back(s);
    }
    for (const u32 cs : {1u, 37u, 1024u}) {
      const auto st = round_trip<TypeParam>(sym, book, cs);
      for (int t = 0; t < 60; ++t, ++trials) {
        auto words = st.words;
        const int kind = t % 3;
        if (kind == 0) {
          words[rng() % words.size()] ^= u32(1) << (rng() % 32);
        } else if (kind == 1) {
          for (int k = 0; k < 8; ++k) words[rng() % words.size()] = static_cast<u32>(rng());
        } else {
          for (auto& w : words) w = static_cast<u32>(rng());
        }
        detected += rejected<TypeParam>(words, st.offsets, cs, dbook, sym.size());
      }
    }
  }
  EXPECT_GT(4 * detected, 3 * trials) << detected << " of " << trials;
}

// ---- sub-chunks (format 1.2): stored run lengths, a decoder thread per run ----

// Bit lengths of every run of sub symbols but each chunk's last, as FORMAT.md says.
std::vector<u16> reference_run_bits(const std::vector<u16>& sym, const Codebook& book, u32 cs, u32 sub) {
  std::vector<u16> out;
  if (sub == 0 || sub >= cs) return out;
  for (std::size_t c0 = 0; c0 < sym.size(); c0 += cs) {
    const std::size_t c1 = std::min(sym.size(), c0 + cs);
    for (std::size_t a = c0; a + sub < c1; a += sub) {
      u64 bits = 0;
      for (std::size_t i = a; i < a + sub; ++i) bits += book.lengths[sym[i]];
      out.push_back(static_cast<u16>(bits));
    }
  }
  return out;
}

struct RunStream {
  std::vector<u32> words;
  std::vector<u64> offsets;
  std::vector<u16> runs;
};

// Encodes with sub-chunks: the bitstream and offsets must be those without
// them (the reference), the run lengths the reference's; decodes run by run.
template <class Space>
RunStream round_trip_runs(const std::vector<u16>& sym, const Codebook& book, u32 cs, u32 sub) {
  Space space;
  const ksz::huffman::DeviceCodebook<Space> dbook(book);
  const auto dsym = to_device<Space>(sym);
  std::vector<u32> rw;
  std::vector<u64> ro;
  reference_encode(sym, book, cs, rw, ro);
  RunStream s;
  ksz::test::SpecGuard restore;
  for (const bool spec : spec_settings<Space>()) {
    ksz::cuda_spec::set_enabled(spec);
    const auto enc = ksz::huffman::encode(space, dsym, dbook, cs, nullptr, sub);
    space.fence();
    s = RunStream{to_host(enc.words), to_host(enc.chunk_offsets), to_host(enc.run_bits)};
    const std::string where = "n=" + std::to_string(sym.size()) + " cs=" + std::to_string(cs) + " sub=" +
                              std::to_string(sub) + (spec ? "" : " portable");
    EXPECT_EQ(s.offsets, ro) << where;
    EXPECT_TRUE(s.words == rw) << where;
    EXPECT_EQ(s.runs, reference_run_bits(sym, book, cs, sub)) << where;
    EXPECT_EQ(s.runs.size(), ksz::huffman::Runs(sym.size(), cs, sub).stored) << where;
    DView<Space> out("out", sym.size());
    ksz::huffman::decode(space, enc.words, enc.chunk_offsets, cs, dbook, out,
                         Kokkos::View<const u16*, typename Space::memory_space>(enc.run_bits), sub);
    EXPECT_TRUE(to_host(out) == sym) << where;
  }
  return s;
}

TYPED_TEST(HuffmanCodec, SubchunksRoundTrip) {
  const std::vector<u16> skewed = quant_codes(100003, 1024, 3.0, 31);
  const std::vector<u64> h = histogram_of(skewed, 1024);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  // Runs dividing the chunk, not dividing it, one symbol, as long as the
  // chunk (none stored), the u16 limit, and short last chunks.
  // At most kMaxRuns (256) runs a chunk.
  const std::vector<std::pair<u32, u32>> shapes = {{4096, 512}, {4096, 1024}, {4096, 16},  {4096, 1000},
                                                   {1000, 96},  {256, 1},     {1000, 999}, {1000, 1000},
                                                   {8192, 2730}, {37, 5}};
  for (const auto& [cs, sub] : shapes)
    for (const std::size_t n : {std::size_t(1), std::size_t(cs) - 1, std::size_t(cs) + 3, skewed.size()}) {
      const std::vector<u16> sym(skewed.begin(), skewed.begin() + std::min(n, skewed.size()));
      round_trip_runs<TypeParam>(sym, book, cs, sub);
    }
  // Codes of up to 24 bits (the decoder's long-code path) crossing run starts at every bit offset.
  const std::vector<u64> fib = fibonacci_hist(60, 60);
  const Codebook long_book = ksz::huffman::build_codebook(fib.data(), fib.size());
  ASSERT_EQ(max_length(long_book), kMaxCodeLength);
  std::mt19937_64 rng(37);
  std::vector<u16> sym;
  for (int i = 0; i < 60000; ++i) sym.push_back(static_cast<u16>(rng() % 60));
  for (const auto& [cs, sub] : std::vector<std::pair<u32, u32>>{{256, 1}, {1024, 7}, {4096, 64}, {4096, 512}})
    round_trip_runs<TypeParam>(sym, long_book, cs, sub);
}

// Decodes with run lengths, possibly hostile; true if rejected.
template <class Space>
bool rejected_runs(const RunStream& s, u32 cs, u32 sub, const std::vector<u16>& runs,
                   const ksz::huffman::DeviceCodebook<Space>& book, std::size_t n) {
  Space space;
  DView<Space> out("out", n);
  try {
    ksz::huffman::decode(space, to_device<Space>(s.words), to_device<Space>(s.offsets), cs, book, out,
                         Kokkos::View<const u16*, typename Space::memory_space>(to_device<Space>(runs)), sub);
  } catch (const ksz::CorruptStream&) {
    return true;
  }
  return false;
}

TYPED_TEST(HuffmanCodec, DecodeRejectsBadRunLengths) {
  const u32 cs = 4096, sub = 512;
  const std::vector<u16> sym = quant_codes(50000, 1024, 6.0, 41);
  const std::vector<u64> h = histogram_of(sym, 1024);
  const Codebook book = ksz::huffman::build_codebook(h.data(), h.size());
  const ksz::huffman::DeviceCodebook<TypeParam> dbook(book);
  const RunStream s = round_trip_runs<TypeParam>(sym, book, cs, sub);
  const std::size_t n = sym.size();
  ASSERT_FALSE(rejected_runs<TypeParam>(s, cs, sub, s.runs, dbook, n));
  auto runs = s.runs;
  runs.pop_back();  // one length missing
  EXPECT_TRUE(rejected_runs<TypeParam>(s, cs, sub, runs, dbook, n));
  EXPECT_TRUE(rejected_runs<TypeParam>(s, cs, 256, s.runs, dbook, n));  // lengths for another sub-chunk size
  EXPECT_TRUE(rejected_runs<TypeParam>(s, cs, ksz::huffman::kMaxSubchunk + 1, s.runs, dbook, n));
  EXPECT_TRUE(rejected_runs<TypeParam>(s, cs, 8, s.runs, dbook, n));  // 512 runs a chunk: more than kMaxRuns
  // Any change to one length moves a run start off the symbol boundary the
  // previous run ends on: the run before it no longer ends where it begins.
  std::mt19937_64 rng(43);
  for (int t = 0; t < 120; ++t) {
    runs = s.runs;
    const std::size_t i = rng() % runs.size();
    const u16 old = runs[i];
    runs[i] = t % 3 == 0 ? static_cast<u16>(rng()) : t % 3 == 1 ? static_cast<u16>(old + 1 + rng() % 40)
                                                                : static_cast<u16>(old - std::min<u16>(old, 1 + rng() % 40));
    if (runs[i] == old) continue;
    EXPECT_TRUE(rejected_runs<TypeParam>(s, cs, sub, runs, dbook, n)) << "length " << i << " = " << runs[i];
  }
  // Two lengths traded between neighbours move one start and keep the next.
  runs = s.runs;
  runs[0] += 3, runs[1] -= 3;
  EXPECT_TRUE(rejected_runs<TypeParam>(s, cs, sub, runs, dbook, n));
}

}  // namespace
