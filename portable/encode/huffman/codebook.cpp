#include "portable/encode/huffman/codebook.hpp"

#include <algorithm>
#include <utility>

#include "src/core/error.hpp"

namespace ksz::huffman {
namespace {

// Counts are scaled below this sum so package weights (each a sum of at most
// kMaxCodeLength copies of every count) stay below 2^63.
constexpr std::uint64_t kMaxTotal = std::uint64_t(1) << 58;

std::uint64_t saturating_sum(const std::vector<std::uint64_t>& w) {
  std::uint64_t total = 0;
  for (const std::uint64_t x : w) {
    if (total + x < total) return ~std::uint64_t(0);
    total += x;
  }
  return total;
}

// Scales counts (all nonzero) until their sum fits kMaxTotal, keeping each >= 1.
// Only counts summing above 2^58 are affected; the result stays deterministic.
void scale_weights(std::vector<std::uint64_t>& w) {
  if (saturating_sum(w) <= kMaxTotal) return;
  const std::vector<std::uint64_t> orig = w;
  for (int shift = 1; shift < 64; ++shift) {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::max<std::uint64_t>(orig[i] >> shift, 1);
    if (saturating_sum(w) <= kMaxTotal) return;
  }
}

// Code lengths of an unrestricted Huffman tree over weights sorted ascending.
// Two-queue construction (leaves, then internal nodes in creation order, both
// nondecreasing); on equal weights the leaf goes first, which is deterministic
// and gives the minimum-variance (shallowest) optimal tree.
std::vector<int> huffman_lengths(const std::vector<std::uint64_t>& w) {
  const std::size_t m = w.size();
  // The calling thread's buffers, kept (see package_merge_lengths).
  thread_local std::vector<std::uint64_t> weight;
  thread_local std::vector<std::uint32_t> parent, depth;
  weight.resize(2 * m - 1);
  parent.resize(2 * m - 1);
  depth.resize(2 * m - 1);
  std::copy(w.begin(), w.end(), weight.begin());
  std::size_t leaf = 0, inner = m, next = m;
  auto pop = [&]() {
    if (leaf < m && (inner == next || weight[leaf] <= weight[inner])) return leaf++;
    return inner++;
  };
  while (next < 2 * m - 1) {
    const std::size_t a = pop();
    const std::size_t b = pop();
    weight[next] = weight[a] + weight[b];
    parent[a] = parent[b] = static_cast<std::uint32_t>(next);
    ++next;
  }
  // Parents always have larger indices: one pass from the root down.
  depth[2 * m - 2] = 0;
  for (std::size_t k = 2 * m - 2; k-- > 0;) depth[k] = depth[parent[k]] + 1;
  return std::vector<int>(depth.begin(), depth.begin() + m);
}

// Optimal code lengths limited to `limit` bits for weights sorted ascending
// (package-merge, Larmore & Hirschberg 1990). Requires 2 <= m <= 2^limit.
//
// Level l's list (l = 0 the shallowest, limit - 1 the deepest, which holds
// the leaves alone) is the leaves merged with the packages of two
// consecutive items of level l + 1's list, a leaf first on equal weights. A
// level is kept only as, for each package, the number of leaves placed
// before it; the top-down pass then finds by binary search how many of the
// items it takes are packages, and a symbol's length is the number of levels
// whose taken leaves include it (a prefix of w: a difference array). The
// same lengths as merging item by item with a leaf flag each (checked on
// 20,000 random inputs, ties included), about 3x faster: build_codebook of
// 6,228 symbols, limit 24, 1.0 -> 0.31 ms on the dev VM.
//
// Going up, the lists converge from the front: where list l + 1 agrees with
// list l + 2, the packages pairing those items are level l + 1's again, and
// list l agrees with list l + 1 up to the leaves before the first package
// that changes. Only the rest is merged again (its counts kept for level l;
// the shared ones are read from the deeper level that made them), the list
// built in the buffer of list l + 2 over the prefix it shares. On the
// interp compressor's histograms (512^3, REL 1e-3 and 1e-4: 798 and 3,883
// symbols) 11.4 -> 4.0 and 64 -> 20 us on the dev VM, the same lengths
// (the 20,000 random inputs again, limits from the least possible to 19
// above it).
std::vector<int> package_merge_lengths(const std::vector<std::uint64_t>& w, int limit) {
  const std::size_t m = w.size();
  // Level l's counts at before[l m + p] for its packages p >= fresh[l] (a
  // level has fewer than m packages); the lists of two adjacent levels in
  // two buffers, swapped. No allocation a level: 1.5x faster than a vector a
  // level (m = 5,367, dev VM). The buffers are the calling thread's, kept
  // from call to call: fresh ones (0.7 MB at m = 5,367) cost more in page
  // faults than the merges do.
  thread_local std::vector<std::uint32_t> before;
  thread_local std::vector<std::uint64_t> leaves, lists;
  before.resize(std::size_t(limit) * m);
  leaves.resize(m + 1);
  lists.resize(2 * (2 * m + 1));
  std::vector<std::size_t> npkg(limit, 0), fresh(limit, 0);
  std::copy(w.begin(), w.end(), leaves.begin());
  leaves[m] = ~std::uint64_t(0);  // sentinel: heavier than any package (sums stay below 2^63)
  std::uint64_t* deeper = lists.data();       // list l + 1
  std::uint64_t* older = deeper + 2 * m + 1;  // list l + 2, equal to list l + 1 before `same`
  std::copy(w.begin(), w.end(), deeper);
  std::size_t deeper_len = m, same = 0;
  const std::uint64_t* lf = leaves.data();
  // Leaves before package p of level l: from the level that merged it.
  const auto count_before = [&](int l, std::size_t p) {
    while (p < fresh[l]) ++l;  // level limit - 2 merged all of its packages
    return before[std::size_t(l) * m + p];
  };
  for (int l = limit - 2; l >= 0; --l) {
    const std::size_t np = deeper_len / 2;
    npkg[l] = np;
    // Packages below p0 pair items lists l + 1 and l + 2 share.
    const std::size_t p0 = std::min(same / 2, np);
    fresh[l] = p0;
    std::size_t i = p0 ? count_before(l + 1, p0 - 1) : 0;
    const std::size_t s = i + p0;  // list l agrees with list l + 1 before s
    if (s > same) std::copy(deeper + same, deeper + s, older + same);
    std::uint32_t* b = before.data() + std::size_t(l) * m;
    std::uint64_t* c = older + s;
    for (std::size_t p = p0; p < np; ++p) {
      const std::uint64_t pw = deeper[2 * p] + deeper[2 * p + 1];
      while (lf[i] <= pw) *c++ = lf[i++];
      b[p] = static_cast<std::uint32_t>(i);
      *c++ = pw;
    }
    while (i < m) *c++ = lf[i++];
    const std::size_t len = static_cast<std::size_t>(c - older);
    const std::size_t shorter = std::min(len, deeper_len);
    same = s;
    while (same < shorter && older[same] == deeper[same]) ++same;
    deeper_len = len;
    std::swap(deeper, older);
  }
  // Take the 2m-2 cheapest items at the top level; each package taken at level
  // l takes its two items at level l+1; the leaves taken are a prefix of w.
  std::vector<int> diff(m + 1, 0);
  std::size_t take = 2 * m - 2;
  for (int l = 0; l < limit && take > 0; ++l) {
    std::size_t packages = 0;  // among the first `take` items: those with count_before(l, j) + j < take
    if (l < limit - 1) {
      std::size_t lo = 0, hi = npkg[l];
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (count_before(l, mid) + mid < take)
          lo = mid + 1;
        else
          hi = mid;
      }
      packages = lo;
    }
    ++diff[0];
    --diff[take - packages];
    take = 2 * packages;
  }
  int run = 0;
  for (int& d : diff) d = run += d;  // the lengths, in place
  diff.pop_back();
  return diff;
}

// The used symbols by count ascending, then id descending: fixes every
// tie-break below, and among equal counts lower ids end up with codes no
// longer. Counts below kCounted are placed by a counting sort, the rest (a
// few hundred on the interp compressor's histograms) by a comparison sort
// after them. The H200 hosts pay for the comparisons' branches: there a
// stable sort of all 3,883 symbols of the interp compressor's histogram at
// REL 1e-4 (512^3) took 177 us (21 on the dev VM), and the whole codebook
// 280-330 us, 127-143 with this (3,580 of those symbols count below 1,024);
// at REL 1e-3 (798 symbols) 48-79 -> 24-39 us. Branch-free forms of the
// Huffman queue and of package-merge's merge were slower there.
std::vector<std::uint32_t> used_by_count(const std::uint64_t* hist, std::size_t nsym) {
  constexpr std::size_t kCounted = 1024;
  std::uint32_t at[kCounted] = {};  // symbols of each small count, then where they go
  std::vector<std::uint32_t> sym;
  std::size_t small = 0;
  for (std::size_t s = 0; s < nsym; ++s) {
    if (hist[s] != 0 && hist[s] < kCounted) ++at[hist[s]];
  }
  for (std::size_t c = 1; c < kCounted; ++c) {
    const std::uint32_t k = at[c];
    at[c] = static_cast<std::uint32_t>(small);
    small += k;
  }
  sym.resize(small);
  for (std::size_t s = nsym; s-- > 0;) {
    if (hist[s] == 0) continue;
    if (hist[s] < kCounted)
      sym[at[hist[s]]++] = static_cast<std::uint32_t>(s);
    else
      sym.push_back(static_cast<std::uint32_t>(s));
  }
  std::stable_sort(sym.begin() + small, sym.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return hist[a] < hist[b]; });
  return sym;
}

}  // namespace

namespace impl {
std::vector<int> limited_code_lengths(std::vector<std::uint64_t> w, int limit) {
  scale_weights(w);
  std::vector<int> len = huffman_lengths(w);
  if (*std::max_element(len.begin(), len.end()) > limit) len = package_merge_lengths(w, limit);
  return len;
}

std::vector<std::uint32_t> canonical_codes(const std::vector<std::uint8_t>& lengths) {
  std::uint32_t count[kMaxCodeLength + 1] = {};
  for (const std::uint8_t l : lengths) ++count[l];
  count[0] = 0;
  std::uint32_t next[kMaxCodeLength + 1] = {};
  std::uint32_t code = 0;
  for (int l = 1; l <= kMaxCodeLength; ++l) {
    code = (code + count[l - 1]) << 1;
    next[l] = code;
  }
  std::vector<std::uint32_t> codes(lengths.size(), 0);
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s]) codes[s] = next[lengths[s]]++;
  }
  return codes;
}
}  // namespace impl

Codebook build_codebook(const std::uint64_t* hist, std::size_t nsym) {
  KSZ_EXPECTS(nsym >= 1 && nsym <= kMaxSymbols, "huffman: nsym must be in [1, ", kMaxSymbols,
              "], got ", nsym);
  KSZ_EXPECTS(hist != nullptr, "huffman: null histogram");
  Codebook book;
  book.lengths.assign(nsym, 0);
  const std::vector<std::uint32_t> sym = used_by_count(hist, nsym);
  const std::size_t m = sym.size();
  if (m == 1) book.lengths[sym[0]] = 1;
  if (m >= 2) {
    std::vector<std::uint64_t> w(m);
    for (std::size_t i = 0; i < m; ++i) w[i] = hist[sym[i]];
    const std::vector<int> len = impl::limited_code_lengths(std::move(w), kMaxCodeLength);
    for (std::size_t i = 0; i < m; ++i) book.lengths[sym[i]] = static_cast<std::uint8_t>(len[i]);
  }
  book.codes = impl::canonical_codes(book.lengths);
  return book;
}

Codebook codebook_from_lengths(const std::uint8_t* lengths, std::size_t nsym) {
  KSZ_STREAM_CHECK(nsym >= 1 && nsym <= kMaxSymbols, "huffman: codebook size ", nsym,
                   " is outside [1, ", kMaxSymbols, "]");
  KSZ_EXPECTS(lengths != nullptr, "huffman: null code lengths");
  // Kraft sum in units of 2^-kMaxCodeLength; at most 65536 * 2^23 fits easily.
  std::uint64_t kraft = 0;
  for (std::size_t s = 0; s < nsym; ++s) {
    KSZ_STREAM_CHECK(lengths[s] <= kMaxCodeLength, "huffman: code length ", int(lengths[s]),
                     " of symbol ", s, " exceeds ", kMaxCodeLength);
    if (lengths[s]) kraft += std::uint64_t(1) << (kMaxCodeLength - lengths[s]);
  }
  KSZ_STREAM_CHECK(kraft <= (std::uint64_t(1) << kMaxCodeLength),
                   "huffman: code lengths violate the Kraft inequality (not a prefix code)");
  Codebook book;
  book.lengths.assign(lengths, lengths + nsym);
  book.codes = impl::canonical_codes(book.lengths);
  return book;
}

}  // namespace ksz::huffman
