// Canonical, length-limited Huffman codebook (cusz-2020 section III-C,
// "Constructing Huffman Codebook" and "Canonizing Codebook"). Built on the
// host: k <= 65536 symbols makes the O(k log k) tree cheap next to the data.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ksz::huffman {

// Codes are at most this long: a code and its length then pack into one
// uint32 (cuSZ's 32-bit bitwidth-codeword tuple) and decoders peek 24 bits.
constexpr int kMaxCodeLength = 24;
// Largest alphabet: symbols are uint16.
constexpr std::size_t kMaxSymbols = std::size_t(1) << 16;

struct Codebook {
  std::vector<std::uint8_t> lengths;  // one per symbol; 0 = symbol absent
  std::vector<std::uint32_t> codes;   // canonical code, right-aligned in lengths[s] bits
  std::size_t nsym() const { return lengths.size(); }
};

// Length-limited (<= kMaxCodeLength) canonical Huffman code from a histogram
// over nsym symbols (nsym in [1, kMaxSymbols], else ksz::InvalidInput).
// Zero counts get length 0; exactly one used symbol gets length 1; an
// all-zero histogram gives all lengths 0 (valid for an empty input).
// Deterministic: ties are broken by symbol id. Optimal among codes within the
// limit, except when the counts sum above 2^58, where they are first scaled down.
Codebook build_codebook(const std::uint64_t* hist, std::size_t nsym);

// Rebuilds the codebook from stored lengths (what the container keeps).
// Throws ksz::CorruptStream unless nsym is in [1, kMaxSymbols], every length
// is <= kMaxCodeLength and the lengths form a prefix code (Kraft sum <= 1).
Codebook codebook_from_lengths(const std::uint8_t* lengths, std::size_t nsym);

namespace impl {
// Optimal code lengths (<= limit) for nonzero weights sorted ascending, m >= 2,
// m <= 2^limit: a Huffman tree, or package-merge when the tree is too deep.
std::vector<int> limited_code_lengths(std::vector<std::uint64_t> weights, int limit);
// Canonical codes for valid lengths: used symbols sorted by (length, id), codes
// counting up and shifting left when the length grows (as in DEFLATE).
std::vector<std::uint32_t> canonical_codes(const std::vector<std::uint8_t>& lengths);
}  // namespace impl

}  // namespace ksz::huffman
