// Chunked canonical Huffman encode ("deflate") and decode ("inflate") on any
// Kokkos execution space (cusz-2020 section III-C, "Encoding and Deflating",
// "Decompression"). Each chunk starts on a fresh 32-bit word, which makes
// chunks independently decodable. Host backends code a chunk a thread; GPUs
// encode a chunk a team (impl::StagedChunks) and decode a run a thread.
//
// Bitstream: a chunk's codes are packed MSB-first into uint32 words, the last
// word zero-padded; chunk c occupies words [chunk_offsets[c], chunk_offsets[c+1]).
//
// Sub-chunks (format 1.2): a chunk may also be cut into runs of `sub` symbols
// whose bit lengths are stored (u16, every run but a chunk's last), so a
// decoder starts one thread at each run instead of one a chunk: the bitstream
// is unchanged, the lengths only say where runs begin, and the decoder checks
// each run ends exactly where the next one begins.
#pragma once
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "portable/encode/huffman/codebook.hpp"
#include "portable/encode/huffman/narrow.hpp"
#include "portable/quantize/byte_codes.hpp"
#include "portable/simd/bits.hpp"
#include "portable/simd/scan.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/workspace.hpp"

#include "cuda_specializations/cuda_specializations.hpp"

namespace ksz::huffman {

// Decode lookup table width: 2^12 entries of 4 bytes (16 KiB) cover every code
// of <= 12 bits in one step; longer codes fall back to the per-length search.
constexpr int kLutBits = 12;

namespace impl {

// Bits of the device status word.
enum StatusBits : std::uint32_t {
  kBadSymbol = 1u,   // encode: a symbol outside the codebook or with no code
  kBadOffsets = 2u,  // decode: chunk offsets not monotone, not from 0, past the words, or a chunk >= 2^27 words
  kBadCode = 4u,     // decode: bits that are no codeword (incomplete code)
  kOverrun = 8u,     // decode: a chunk needs more bits than its words hold
  kTrailing = 16u,   // decode: unused words or nonzero padding after a chunk
  kBadRun = 32u,     // decode: a sub-chunk does not end where the next one begins
};

inline std::string describe_status(std::uint32_t s) {
  std::string out;
  auto add = [&](std::uint32_t bit, const char* what) {
    if (!(s & bit)) return;
    if (!out.empty()) out += "; ";
    out += what;
  };
  add(kBadOffsets, "chunk offsets are not monotone or exceed the bitstream");
  add(kBadCode, "bits that are no codeword");
  add(kOverrun, "a chunk runs past its words");
  add(kTrailing, "unused words or nonzero padding after a chunk");
  add(kBadRun, "a sub-chunk does not end where the next one begins (sub-chunk lengths are wrong)");
  return out;
}

// Canonical decode tables. With codes left-aligned to kMaxCodeLength bits,
// the codes of length l fill [limit[l-1], limit[l]) in canonical order, so
// the length of the code at the front of v is the least l with v < limit[l].
template <class Mem>
struct DecodeTables {
  Kokkos::View<const std::uint32_t*, Mem> lut;      // 2^kLutBits: symbol | length << 16; 0 = longer code
  Kokkos::View<const std::uint32_t*, Mem> limit;    // [l], l <= kMaxCodeLength, left-aligned end of length l
  Kokkos::View<const std::uint32_t*, Mem> first;    // [l]: first canonical code of length l
  Kokkos::View<const std::uint32_t*, Mem> offset;   // [l]: index in symbols of that first code
  Kokkos::View<const std::uint16_t*, Mem> symbols;  // used symbols sorted by (length, id)

  // Decodes the code at the top of buf (MSB-first; bits past the valid ones
  // must be zero). Returns its length, or 0 when the bits are no codeword.
  // Every index stays in range for tables built from valid lengths.
  // l1 is lut or a copy of it (a decoder's scratch memory).
  template <class Lut>
  KOKKOS_INLINE_FUNCTION int decode_with(const Lut& l1, const std::uint64_t buf, std::uint32_t& sym) const {
    const std::uint32_t e = l1(static_cast<std::uint32_t>(buf >> (64 - kLutBits)));
    if (e >> 16) {
      sym = e & 0xFFFFu;
      return static_cast<int>(e >> 16);
    }
    const std::uint32_t v = static_cast<std::uint32_t>(buf >> (64 - kMaxCodeLength));
    for (int l = kLutBits + 1; l <= kMaxCodeLength; ++l) {
      if (v < limit(l)) {
        sym = symbols(offset(l) + (v >> (kMaxCodeLength - l)) - first(l));
        return l;
      }
    }
    return 0;
  }
};

// Run u of chunks of cs symbols cut into runs of step (per_chunk a chunk):
// its chunk c, its place k there, its symbols [s0, s1), and its chunk's end c1.
struct RunSpan {
  std::uint64_t c = 0, k = 0, s0 = 0, s1 = 0, c1 = 0;
  RunSpan() = default;
  KOKKOS_INLINE_FUNCTION RunSpan(std::uint64_t u, std::uint64_t n, std::uint64_t cs, std::uint64_t step,
                                 std::uint64_t per_chunk)
      : c(u / per_chunk), k(u - c * per_chunk), s0(c * cs + k * step), s1(0), c1(c * cs + cs < n ? c * cs + cs : n) {
    s1 = s0 + step < c1 ? s0 + step : c1;
  }
  // Its first bit in its chunk: the bits of the chunk's earlier runs
  // (stored lengths, per_chunk - 1 a chunk).
  template <class RunBits>
  KOKKOS_INLINE_FUNCTION std::uint64_t start(const RunBits& run_bits, std::uint64_t per_chunk) const {
    std::uint64_t b = 0;
    for (std::uint64_t j = 0; j < k; ++j) b += run_bits(c * (per_chunk - 1) + j);
    return b;
  }
};

// f(symbol) for p[a, b) in order, eight symbols a 16-byte load where p + a
// is 16-byte aligned (a GPU thread walking its own run: 2-byte loads from
// 32 runs a warp miss L1 at every line). Little-endian: a word's low half is
// the earlier symbol.
template <class F>
KOKKOS_INLINE_FUNCTION void for_each_symbol(const std::uint16_t* p, std::uint64_t a, const std::uint64_t b, const F& f) {
  if ((reinterpret_cast<std::uintptr_t>(p + a) & 15) == 0)
    for (; a + 8 <= b; a += 8) {
      const Words4 v = *reinterpret_cast<const Words4*>(p + a);
      for (int k = 0; k < 4; ++k) {
        f(v.w[k] & 0xFFFFu);
        f(v.w[k] >> 16);
      }
    }
  for (; a < b; ++a) f(static_cast<std::uint32_t>(p[a]));
}

// Entry e of the multi-symbol table: up to three whole codes the kLutBits
// window e holds, from the first-level table (a code is whole when it ends in
// the window; a canonical code's entry is the same for every extension of it).
// sym0 | sym1 << 16 | sym2 << 32 | end0 << 48 | end1 << 52 | end2 << 56 |
// count << 60, end_k the window bits used through code k. Count 0: the first
// code is longer than the window, or no code (the single-symbol path decides).
template <class Lut>
KOKKOS_INLINE_FUNCTION std::uint64_t multi_entry(const Lut& lut, const std::uint32_t e) {
  constexpr std::uint32_t mask = (std::uint32_t(1) << kLutBits) - 1;
  std::uint64_t m = 0;
  int used = 0, count = 0;
  for (int k = 0; k < 3; ++k) {
    const std::uint32_t ent = lut((e << used) & mask);
    const int l = static_cast<int>(ent >> 16);
    if (l == 0 || l > kLutBits - used) break;
    used += l;
    m |= static_cast<std::uint64_t>(ent & 0xFFFFu) << (16 * k);
    m |= static_cast<std::uint64_t>(used) << (48 + 4 * k);
    ++count;
  }
  return m | static_cast<std::uint64_t>(count) << 60;
}

// Runs a GPU inflate team decodes (a thread each).
constexpr std::uint64_t kInflateTeam = 256;

// A run's decoding (a thread's work in decode()), in steps so that a GPU team
// can store its threads' symbols together between them.
template <class Mem>
struct InflateRun {
  Kokkos::View<const std::uint32_t*, Mem> words;
  Kokkos::View<const std::uint64_t*, Mem> chunk_offsets;
  Kokkos::View<const std::uint16_t*, Mem> run_bits;
  DecodeTables<Mem> dec;
  Kokkos::View<std::uint16_t*, Mem> out;
  Kokkos::View<std::uint32_t*, Mem> status;
  std::uint64_t n, cs, step, per_chunk, nwords;

  struct NoMulti {};

  // A run being decoded: where it lies and how far the decoder got.
  struct State {
    RunSpan sp;  // where the run lies
    std::uint64_t begin = 0, end = 0, start = 0, pos = 0, i = 0, buf = 0;
    std::uint32_t ahead = 0;
    int avail = 0;
    bool ok = false;  // false: nothing (more) to decode, the status says why where it is an error
  };

  // Run u's state before its first symbol; ok false (status set) when its
  // chunk's offsets or its start are invalid.
  KOKKOS_INLINE_FUNCTION State begin_run(const std::uint64_t u) const {
    State st;
    st.sp = RunSpan(u, n, cs, step, per_chunk);
    const RunSpan& sp = st.sp;
    st.begin = chunk_offsets(sp.c);
    st.end = chunk_offsets(sp.c + 1);
    // No chunk of <= 2^24 codes of <= 24 bits takes 2^27 words.
    if (st.begin > st.end || st.end > nwords || (sp.c == 0 && st.begin != 0) || st.end - st.begin > 0xFFFFFFFFull / 32) {
      Kokkos::atomic_fetch_or(&status(0), std::uint32_t(kBadOffsets));
      return st;
    }
    st.start = sp.start(run_bits, per_chunk);  // < kMaxRuns runs of < 2^16 bits
    if (st.start > (st.end - st.begin) * 32) {
      Kokkos::atomic_fetch_or(&status(0), std::uint32_t(kBadRun));
      return st;
    }
    // buf holds avail valid bits MSB-first, zeros below. One refill per
    // symbol keeps avail >= 32 >= kMaxCodeLength while words remain.
    st.pos = st.begin + st.start / 32;
    const int skip = static_cast<int>(st.start % 32);
    if (skip) {  // start < the chunk's bits, so the word exists
      st.buf = static_cast<std::uint64_t>(words(st.pos++)) << (32 + skip);
      st.avail = 32 - skip;
    }
    // The next word is loaded one refill ahead, so its latency overlaps the
    // symbols decoded in between.
    st.ahead = st.pos < st.end ? words(st.pos) : 0u;
    st.i = st.sp.s0;
    st.ok = true;
    return st;
  }

  // Decodes the run's symbols up to index stop (<= s1), emit(i, symbol) each,
  // with the first-level table lut and, unless Multi is NoMulti, the
  // multi-symbol table multi (multi_entry(): up to three whole codes of a
  // kLutBits window a lookup; the same symbols and status bits). A bad code
  // sets the status and st.ok false.
  template <class Lut, class Multi, class Emit>
  KOKKOS_INLINE_FUNCTION void decode_to(State& st, const std::uint64_t stop, const Lut& lut, const Multi& multi,
                                        const Emit& emit) const {
    while (st.i < stop) {
      if (st.avail <= 32 && st.pos < st.end) {
        st.buf |= static_cast<std::uint64_t>(st.ahead) << (32 - st.avail);
        st.avail += 32;
        ++st.pos;
        st.ahead = st.pos < st.end ? words(st.pos) : 0u;
      }
      if constexpr (!std::is_same<Multi, NoMulti>::value) {
        const std::uint64_t m = multi(static_cast<std::uint32_t>(st.buf >> (64 - kLutBits)));
        int take = static_cast<int>(m >> 60);
        if (static_cast<std::uint64_t>(take) > stop - st.i) take = static_cast<int>(stop - st.i);
        if (st.avail < kLutBits)  // only at a chunk's end: whole codes may pass the valid bits
          while (take > 0 && static_cast<int>((m >> (44 + 4 * take)) & 15u) > st.avail) --take;
        if (take > 0) {
          const int bits = static_cast<int>((m >> (44 + 4 * take)) & 15u);
          for (int j = 0; j < take; ++j) emit(st.i++, static_cast<std::uint32_t>(m >> (16 * j)) & 0xFFFFu);
          st.buf <<= bits;
          st.avail -= bits;
          continue;
        }
      }
      std::uint32_t sym = 0;
      const int len = dec.decode_with(lut, st.buf, sym);
      if (len == 0 || len > st.avail) {
        Kokkos::atomic_fetch_or(&status(0), std::uint32_t(len == 0 ? kBadCode : kOverrun));
        st.ok = false;
        return;
      }
      emit(st.i++, sym);
      st.buf <<= len;
      st.avail -= len;
    }
  }

  // After the run's last symbol: it must end where the next run begins, or
  // where its chunk's words do.
  KOKKOS_INLINE_FUNCTION void end_run(const State& st) const {
    if (st.sp.s1 < st.sp.c1) {  // not the chunk's last run
      if ((st.pos - st.begin) * 32 - static_cast<std::uint64_t>(st.avail) - st.start !=
          run_bits(st.sp.c * (per_chunk - 1) + st.sp.k))
        Kokkos::atomic_fetch_or(&status(0), std::uint32_t(kBadRun));
    } else if (st.pos != st.end || st.avail >= 32 || st.buf != 0) {
      // The encoder writes exactly ceil(bits / 32) words, zero-padded.
      Kokkos::atomic_fetch_or(&status(0), std::uint32_t(kTrailing));
    }
  }

  // Decodes run u into out (host backends: a thread a run).
  template <class Lut>
  KOKKOS_INLINE_FUNCTION void run(const std::uint64_t u, const Lut& lut) const {
    State st = begin_run(u);
    if (!st.ok) return;
    decode_to(st, st.sp.s1, lut, NoMulti(), [&](const std::uint64_t i, const std::uint32_t sym) {
      out(i) = static_cast<std::uint16_t>(sym);
    });
    if (st.ok) end_run(st);
  }
};

// The device status word, zeroed: in the caller's workspace when ws is given.
template <class ExecSpace>
Kokkos::View<std::uint32_t*, typename ExecSpace::memory_space> zeroed_status(
    const ExecSpace& space, typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws) {
  using WS = pipeline::Workspace<typename ExecSpace::memory_space>;
  return WS::template zeroed<std::uint32_t>(space, ws, WS::kHuffStatus, 1, "ksz::huffman::status");
}

}  // namespace impl

// A Codebook's tables as DeviceCodebook keeps them, built and checked on the
// host: a thread of its own can prepare them while the caller's thread
// launches kernels, leaving only their copy to the device.
struct TableImage {
  std::size_t nsym = 0, n_used = 0;  // symbols, and those with a code
  int max_length = 0;
  // In 32-bit words: enc[nsym] | limit[kL+1] | first[kL+1] | offset[kL+1] |
  // lut[2^kLutBits] | symbols (u16, packed), kL = kMaxCodeLength; an
  // encoder's image (encode_image) stops after enc.
  std::vector<std::uint32_t> words;
  bool decodable = true;
  std::size_t o_limit() const { return nsym; }
  std::size_t o_first() const { return o_limit() + kMaxCodeLength + 1; }
  std::size_t o_offset() const { return o_first() + kMaxCodeLength + 1; }
  std::size_t o_lut() const { return o_offset() + kMaxCodeLength + 1; }
  std::size_t o_sym() const { return o_lut() + (std::size_t(1) << kLutBits); }
};
// Throws ksz::InvalidInput unless book has 1..kMaxSymbols symbols, lengths
// <= kMaxCodeLength forming a prefix code, and the canonical codes of them.
inline TableImage table_image(const Codebook& book);
// The encoder's part alone (enc), of a book build_codebook made (canonical,
// a prefix code within kMaxCodeLength by construction): what a compressor
// uploads. The decoder's tables (a 2^kLutBits lookup table among them) took
// most of the image's host time and bytes.
inline TableImage encode_image(const Codebook& book);

// A codebook built from a histogram, with its encoder's table image.
struct HostCodebook {
  Codebook book;
  TableImage tables;
};
inline HostCodebook host_codebook(const std::uint64_t* hist, std::size_t nsym) {
  HostCodebook c{build_codebook(hist, nsym), {}};
  c.tables = encode_image(c.book);
  return c;
}

// A Codebook's tables in ExecSpace's memory. Cheap to copy (shares the views).
template <class ExecSpace>
struct DeviceCodebook {
  using memory_space = typename ExecSpace::memory_space;

  // Throws as table_image. Ready for any instance when this returns.
  explicit DeviceCodebook(const Codebook& book) : DeviceCodebook(table_image(book), ExecSpace()) {
    ExecSpace().fence();
  }
  // The same, the tables copied on `space` (ready for kernels queued after
  // them there; nothing waits), into `room` when it holds
  // room_words(book.nsym()) words (a workspace buffer the caller keeps alive
  // while the codebook is used), else into a fresh allocation.
  DeviceCodebook(const Codebook& book, const ExecSpace& space, Kokkos::View<std::uint32_t*, memory_space> room = {})
      : DeviceCodebook(table_image(book), space, room) {}
  DeviceCodebook(const TableImage& tables, const ExecSpace& space,
                 Kokkos::View<std::uint32_t*, memory_space> room = {});
  // Words of device memory a codebook of nsym symbols needs at most.
  static std::size_t room_words(std::size_t nsym) {
    const std::size_t total = nsym + 3 * (kMaxCodeLength + 1) + (std::size_t(1) << kLutBits) + (nsym + 1) / 2;
    return ((total + 1) & ~std::size_t(1)) + 2 * (std::size_t(1) << kLutBits);
  }

  std::size_t nsym() const { return m_nsym; }
  int max_length() const { return m_max_length; }
  // Per symbol: length << 24 | code (cuSZ's 32-bit bitwidth-codeword tuple); 0 = no code.
  Kokkos::View<const std::uint32_t*, memory_space> encode_table() const { return m_enc; }
  impl::DecodeTables<memory_space> decode_tables() const { return m_dec; }
  // Room (2^kLutBits entries, uninitialized) for a decoder's own derived table
  // (the CUDA inflate's multi-symbol table), so it allocates nothing per call.
  // Empty in host memory.
  Kokkos::View<unsigned long long*, memory_space> scratch_table() const { return m_scratch; }

 private:
  std::size_t m_nsym = 0;
  int m_max_length = 0;
  Kokkos::View<std::uint32_t*, memory_space> m_storage;  // owns every table below (unmanaged views into it)
  Kokkos::View<const std::uint32_t*, memory_space> m_enc;
  impl::DecodeTables<memory_space> m_dec;
  Kokkos::View<unsigned long long*, memory_space> m_scratch;
};

template <class ExecSpace>
struct Encoded {
  Kokkos::View<std::uint32_t*, typename ExecSpace::memory_space> words;          // the bitstream
  Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> chunk_offsets;  // nchunks+1 word offsets
  Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> run_bits;       // Runs::stored entries (may be 0)
  std::uint64_t n_words = 0;                                                     // == chunk_offsets[nchunks]
};

// Number of chunks of chunk_symbols (>= 1) symbols covering n symbols.
inline std::uint64_t chunk_count(std::uint64_t n, std::uint32_t chunk_symbols) {
  return n == 0 ? 0 : (n - 1) / chunk_symbols + 1;
}

// Longest sub-chunk whose bit length always fits the u16 it is stored in.
constexpr std::uint32_t kMaxSubchunk = 65535u / kMaxCodeLength;
// Most runs a chunk may have: a decoder sums a run's predecessors' lengths
// itself (at most 255 adds, a start below 2^24 bits).
constexpr std::uint64_t kMaxRuns = 256;

// How n symbols split into chunks of cs and those into runs of sub (sub 0 or
// >= cs: a run is a chunk). Run u is run k = u % per_chunk of chunk
// u / per_chunk; only the last chunk may have fewer runs. The stored lengths
// of chunk c's runs 0..runs-2 are entries c * (per_chunk - 1) + k.
struct Runs {
  std::uint64_t n = 0, cs = 1, step = 1;  // step: symbols a run (cs without sub-chunks)
  std::uint64_t nchunks = 0, per_chunk = 1, total = 0, stored = 0;
  Runs(std::uint64_t n_, std::uint32_t cs_, std::uint32_t sub) : n(n_), cs(cs_) {
    step = sub == 0 || sub >= cs ? cs : sub;
    nchunks = chunk_count(n, cs_);
    per_chunk = (cs - 1) / step + 1;
    if (nchunks) total = (nchunks - 1) * per_chunk + (n - (nchunks - 1) * cs - 1) / step + 1;
    stored = total - nchunks;
  }
};

inline TableImage encode_image(const Codebook& book) {
  const std::size_t nsym = book.nsym();
  KSZ_EXPECTS(nsym >= 1 && nsym <= kMaxSymbols, "huffman: codebook size ", nsym, " is outside [1, ", kMaxSymbols,
              "]");
  KSZ_EXPECTS(book.codes.size() == nsym, "huffman: codebook has ", book.codes.size(), " codes for ", nsym,
              " lengths");
  TableImage t;
  t.nsym = nsym;
  t.decodable = false;
  t.words.resize(nsym);
  for (std::size_t s = 0; s < nsym; ++s) {
    const int l = book.lengths[s];
    KSZ_EXPECTS(l <= kMaxCodeLength, "huffman: code length ", l, " exceeds ", kMaxCodeLength);
    t.words[s] = l ? (std::uint32_t(l) << 24) | book.codes[s] : 0u;
    t.n_used += l ? 1 : 0;
    t.max_length = l > t.max_length ? l : t.max_length;
  }
  return t;
}

inline TableImage table_image(const Codebook& book) {
  TableImage t = encode_image(book);  // sizes and lengths checked; enc, n_used, max_length
  const std::size_t nsym = t.nsym;
  std::uint32_t count[kMaxCodeLength + 1] = {};
  std::uint64_t kraft = 0;
  for (std::size_t s = 0; s < nsym; ++s) {
    const int l = book.lengths[s];
    if (l == 0) continue;
    ++count[l];
    kraft += std::uint64_t(1) << (kMaxCodeLength - l);
  }
  KSZ_EXPECTS(kraft <= (std::uint64_t(1) << kMaxCodeLength), "huffman: lengths are no prefix code");
  KSZ_EXPECTS(impl::canonical_codes(book.lengths) == book.codes, "huffman: codes are not canonical");

  constexpr int kL = kMaxCodeLength;
  t.decodable = true;
  t.words.resize(t.o_sym() + (t.n_used + 1) / 2, 0u);  // enc stays in front
  std::uint32_t* hp = t.words.data();
  std::uint32_t code = 0, index = 0;
  for (int l = 1; l <= kL; ++l) {
    code = (code + count[l - 1]) << 1;  // count[0] is 0: absent symbols take no code
    hp[t.o_first() + l] = code;
    hp[t.o_offset() + l] = index;
    index += count[l];
    hp[t.o_limit() + l] = (code + count[l]) << (kL - l);  // Kraft <= 1 keeps this <= 2^kL
  }
  auto* h_symbols = reinterpret_cast<std::uint16_t*>(hp + t.o_sym());
  std::uint32_t fill[kL + 1];
  for (int l = 0; l <= kL; ++l) fill[l] = hp[t.o_offset() + l];
  for (std::size_t s = 0; s < nsym; ++s) {
    if (book.lengths[s]) h_symbols[fill[book.lengths[s]]++] = static_cast<std::uint16_t>(s);
  }
  for (std::size_t s = 0; s < nsym; ++s) {
    const int l = book.lengths[s];
    if (l == 0 || l > kLutBits) continue;
    const std::uint32_t begin = book.codes[s] << (kLutBits - l);
    const std::uint32_t end = (book.codes[s] + 1) << (kLutBits - l);
    for (std::uint32_t i = begin; i < end; ++i) hp[t.o_lut() + i] = std::uint32_t(s) | (std::uint32_t(l) << 16);
  }
  return t;
}

template <class ExecSpace>
DeviceCodebook<ExecSpace>::DeviceCodebook(const TableImage& t, const ExecSpace& space,
                                          Kokkos::View<std::uint32_t*, memory_space> room) {
  // Every table in one device buffer filled by one copy: a stage that builds
  // a codebook per call should not pay a dozen small allocations and
  // synchronous copies (0.2-0.3 ms on a GPU).
  constexpr int kL = kMaxCodeLength;
  m_nsym = t.nsym;
  m_max_length = t.max_length;
  const std::size_t total = t.words.size();
  const bool scratch = t.decodable && !std::is_same<memory_space, Kokkos::HostSpace>::value;
  const std::size_t o_scratch = (total + 1) & ~std::size_t(1);  // 8-byte aligned
  const std::size_t need = scratch ? o_scratch + 2 * (std::size_t(1) << kLutBits) : total;
  const Kokkos::View<std::uint32_t*, memory_space> d =
      room.extent(0) >= need ? room
                             : Kokkos::View<std::uint32_t*, memory_space>(
                                   Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::huffman::tables")),
                                   need);
  const Kokkos::View<const std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      t.words.data(), total);
  // The caller may free t once this returns, with no fence: a copy from
  // pageable host memory returns once the bytes are staged (CUDA), and host
  // spaces copy at once; kernels queued after it on space see the tables.
  Kokkos::deep_copy(space, Kokkos::subview(d, std::make_pair(std::size_t(0), total)), h);
  m_storage = d;
  if (scratch)
    m_scratch = Kokkos::View<unsigned long long*, memory_space>(
        reinterpret_cast<unsigned long long*>(d.data() + o_scratch), std::size_t(1) << kLutBits);
  const std::uint32_t* dp = d.data();
  m_enc = Kokkos::View<const std::uint32_t*, memory_space>(dp, t.nsym);
  if (!t.decodable) return;  // an encoder's: no decode tables
  m_dec.limit = Kokkos::View<const std::uint32_t*, memory_space>(dp + t.o_limit(), kL + 1);
  m_dec.first = Kokkos::View<const std::uint32_t*, memory_space>(dp + t.o_first(), kL + 1);
  m_dec.offset = Kokkos::View<const std::uint32_t*, memory_space>(dp + t.o_offset(), kL + 1);
  m_dec.lut = Kokkos::View<const std::uint32_t*, memory_space>(dp + t.o_lut(), std::size_t(1) << kLutBits);
  m_dec.symbols = Kokkos::View<const std::uint16_t*, memory_space>(
      reinterpret_cast<const std::uint16_t*>(dp + t.o_sym()), t.n_used);
}

// An upper bound on encode()'s words for n symbols of histogram hist (book's
// nsym counts) in chunks of chunk_symbols: every code's bits, and a partial
// word a chunk.
inline std::uint64_t words_bound(const std::uint64_t* hist, const Codebook& book, std::uint64_t n,
                                 std::uint32_t chunk_symbols) {
  if (chunk_symbols == 0) return 0;  // none: encode() refuses the chunk size
  std::uint64_t bits = 0;
  for (std::size_t s = 0; s < book.nsym(); ++s) bits += hist[s] * book.lengths[s];
  return bits / 32 + chunk_count(n, chunk_symbols) + 1;
}

namespace impl {

// GPU encode of chunks of at most kStagedChunk symbols, its two passes (the
// chunks' bit counts, then the deflate) as the CUDA twins do them: a team a
// chunk, looping over chunks (a league of about one wave); team thread t
// holds the chunk's symbols [t kSlice, (t + 1) kSlice) in registers, and an
// exclusive team scan of their bit counts places them. The deflate packs
// the chunk in scratch memory (a word two threads share by atomic or) and
// stores its words. The code table sits in scratch when it fits. Runs must
// begin on slices: step a multiple of kSlice or the whole chunk.
constexpr std::uint64_t kSlice = 32, kStagedChunk = 4096;
constexpr std::uint32_t kScratchTable = 8192;  // most symbols a team copies
inline bool staged_fits(std::uint64_t cs, std::uint64_t step) {
  return cs <= kStagedChunk && (step >= cs || step % kSlice == 0);
}

template <class ExecSpace, bool kDeflate>
struct StagedChunks {
  using Mem = typename ExecSpace::memory_space;
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchU = Kokkos::View<std::uint32_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  Kokkos::View<const std::uint16_t*, Mem> symbols;
  Kokkos::View<const std::uint32_t*, Mem> enc;
  std::uint32_t nsym;
  std::uint64_t n, cs, step, per_chunk, nchunks;
  Kokkos::View<std::uint64_t*, Mem> offsets;  // in: the scan's (deflate); out: word counts (bits)
  Kokkos::View<std::uint16_t*, Mem> run_bits;
  Kokkos::View<std::uint32_t*, Mem> status;
  Kokkos::View<std::uint32_t*, Mem> words;
  Narrow narrow;
  int team = 1;  // threads a team: a power of two (team_scan's need) covering cs

  StagedChunks(Kokkos::View<const std::uint16_t*, Mem> symbols_, Kokkos::View<const std::uint32_t*, Mem> enc_,
               std::uint32_t nsym_, const Runs& runs, Kokkos::View<std::uint64_t*, Mem> offsets_,
               Kokkos::View<std::uint16_t*, Mem> run_bits_, Kokkos::View<std::uint32_t*, Mem> status_,
               Kokkos::View<std::uint32_t*, Mem> words_, Narrow narrow_)
      : symbols(symbols_), enc(enc_), nsym(nsym_), n(runs.n), cs(runs.cs), step(runs.step),
        per_chunk(runs.per_chunk), nchunks(runs.nchunks), offsets(offsets_), run_bits(run_bits_),
        status(status_), words(words_), narrow(narrow_) {
    while (team * kSlice < cs) team *= 2;
  }
  KOKKOS_INLINE_FUNCTION std::uint32_t table_size() const { return nsym <= kScratchTable ? nsym : 0u; }
  KOKKOS_INLINE_FUNCTION std::uint64_t stage_words() const { return kDeflate ? cs * kMaxCodeLength / 32 + 1 : std::uint64_t(team); }
  void run(const ExecSpace& space) const {
    const std::uint64_t wave = static_cast<std::uint64_t>(space.concurrency()) / team;
    const int league = static_cast<int>(nchunks < wave ? nchunks : (wave ? wave : 1));
    Kokkos::parallel_for(kDeflate ? "ksz::huffman::deflate_staged" : "ksz::huffman::chunk_bits_staged",
                         Kokkos::TeamPolicy<ExecSpace>(space, league, team, 1)
                             .set_scratch_size(0, Kokkos::PerTeam(ScratchU::shmem_size(table_size()) +
                                                                  ScratchU::shmem_size(stage_words()))),
                         *this);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& m) const {
    const int t = m.team_rank();
    ScratchU table(m.team_scratch(0), table_size());
    ScratchU stage(m.team_scratch(0), stage_words());  // the chunk's words (deflate); slices' bit ends (bits)
    for (std::uint32_t s = t; s < table_size(); s += team) table(s) = enc(s);
    const std::uint32_t* const tab = table_size() ? table.data() : enc.data();
    for (std::uint64_t c = m.league_rank(); c < nchunks; c += m.league_size()) {
      m.team_barrier();  // table loaded; the last chunk's stage read
      const std::uint64_t c1 = c * cs + cs < n ? c * cs + cs : n;
      const std::uint64_t a = c * cs + t * kSlice < c1 ? c * cs + t * kSlice : c1;
      const int len = static_cast<int>(a + kSlice < c1 ? kSlice : c1 - a);
      std::uint32_t w[kSlice / 2];  // two symbols a word, the earlier in the low half
      if (len == int(kSlice) && (reinterpret_cast<std::uintptr_t>(symbols.data() + a) & 15) == 0) {
        for (int k = 0; k < int(kSlice / 8); ++k) {
          const Words4 v = reinterpret_cast<const Words4*>(symbols.data() + a)[k];
          for (int j = 0; j < 4; ++j) w[4 * k + j] = v.w[j];
        }
      } else {
        for (int k = 0; k < int(kSlice / 2); ++k)
          w[k] = (2 * k < len ? symbols(a + 2 * k) : 0u) | (2 * k + 1 < len ? symbols(a + 2 * k + 1) : 0u) << 16;
      }
      // The deflate keeps the slice's codes in registers (0 past its end); the
      // count keeps only their sum (32 more registers cost it 60% in time).
      std::uint32_t e[kDeflate ? kSlice : 1];
      std::uint32_t bits = 0;
      [[maybe_unused]] bool bad = false;
      for (int j = 0; j < int(kSlice); ++j) {
        const std::uint32_t sym = narrow((w[j / 2] >> (16 * (j % 2))) & 0xFFFFu);
        const std::uint32_t code = j < len && sym < nsym ? tab[sym] : 0u;
        bits += code >> 24;
        if constexpr (kDeflate)
          e[j] = code;
        else
          bad = bad || (j < len && code == 0);
      }
      const std::uint32_t p = m.team_scan(bits);  // chunk bits < 2^32: cs <= 4096 symbols of <= 24 bits
      if constexpr (!kDeflate) {
        stage(t) = p + bits;  // slice t's bit end
        m.team_barrier();
        const std::uint64_t runs_here = (c1 - c * cs - 1) / step + 1, per = step / kSlice;
        if (static_cast<std::uint64_t>(t) + 1 < runs_here)
          run_bits(c * (per_chunk - 1) + t) =
              static_cast<std::uint16_t>(stage((t + 1) * per - 1) - (t ? stage(t * per - 1) : 0u));
        if (t == 0) offsets(c) = (stage(team - 1) + 31) / 32;
        if (bad) Kokkos::atomic_fetch_or(&status(0), std::uint32_t(kBadSymbol));
      } else {
        const std::uint64_t w0 = offsets(c), nw = offsets(c + 1) - w0;
        for (std::uint64_t i = t; i < nw; i += team) stage(i) = 0;
        m.team_barrier();
        std::uint32_t o = p / 32;
        int nbits = static_cast<int>(p % 32);  // zeros standing for earlier bits
        std::uint64_t acc = 0;
        for (int j = 0; j < int(kSlice); ++j) {
          const int l = static_cast<int>(e[j] >> 24);
          acc = (acc << l) | (e[j] & 0xFFFFFFu);
          nbits += l;
          if (nbits >= 32) {
            nbits -= 32;
            Kokkos::atomic_fetch_or(&stage(o++), static_cast<std::uint32_t>(acc >> nbits));
          }
        }
        if (nbits > 0 && bits > 0) Kokkos::atomic_fetch_or(&stage(o), static_cast<std::uint32_t>(acc << (32 - nbits)));
        m.team_barrier();
        for (std::uint64_t i = t; i < nw; i += team) words(w0 + i) = stage(i);
      }
    }
  }
};

}  // namespace impl

// The two passes (per-chunk bits, scan, deflate) on any backend.
template <class ExecSpace>
Encoded<ExecSpace> encode_two_pass(const ExecSpace& space,
                          Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> symbols,
                          const DeviceCodebook<ExecSpace>& book, std::uint32_t chunk_symbols,
                          typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr,
                          std::uint32_t sub = 0, const Narrow narrow = {}) {
  using WS = pipeline::Workspace<typename ExecSpace::memory_space>;
  using Mem = typename ExecSpace::memory_space;
  using Policy = Kokkos::RangePolicy<ExecSpace>;
  KSZ_EXPECTS(chunk_symbols >= 1, "huffman: chunk_symbols must be >= 1");
  KSZ_EXPECTS(sub <= kMaxSubchunk, "huffman: sub-chunk of ", sub, " symbols exceeds ", kMaxSubchunk);
  const std::uint64_t n = symbols.extent(0);
  const Runs runs(n, chunk_symbols, sub);
  KSZ_EXPECTS(runs.per_chunk <= kMaxRuns, "huffman: ", runs.per_chunk, " sub-chunks a chunk exceed ", kMaxRuns);
  const std::uint64_t nchunks = runs.nchunks, cs = chunk_symbols, step = runs.step, per_chunk = runs.per_chunk;
  Encoded<ExecSpace> res;
  res.run_bits = WS::template buffer<std::uint16_t>(ws, WS::kHuffRunBits, runs.stored, "ksz::huffman::run_bits");
  const auto run_bits = res.run_bits;
  // Every chunk's count is written before the scan, which never reads entry nchunks.
  const auto offsets =
      WS::template buffer<std::uint64_t>(ws, WS::kHuffOffsets, nchunks + 1, "ksz::huffman::chunk_offsets");
  res.chunk_offsets = offsets;
  if (n == 0) {
    Kokkos::deep_copy(space, offsets, std::uint64_t(0));
    res.words = Kokkos::View<std::uint32_t*, Mem>("ksz::huffman::words", 0);
    return res;
  }
  const auto enc = book.encode_table();
  const std::uint32_t nsym = static_cast<std::uint32_t>(book.nsym());
  const Kokkos::View<std::uint32_t*, Mem> status = impl::zeroed_status(space, ws);

  // Word count of chunk c into offsets(c); the scan below shifts it to c+1.
  bool specialized = false;
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    specialized = narrow.identity() &&  // the CUDA two passes read the symbols as they are
                  cuda_spec::huffman_chunk_bits(space, symbols.data(), n, chunk_symbols, enc.data(), nsym,
                                                offsets.data(), status.data(),
                                                runs.stored ? static_cast<std::uint32_t>(step) : 0u, per_chunk,
                                                run_bits.data());
#endif
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  const bool staged = !host && impl::staged_fits(cs, step);
  if (!specialized && staged) {
    impl::StagedChunks<ExecSpace, false>(symbols, enc, nsym, runs, offsets, run_bits, status, {}, narrow).run(space);
  } else if (!specialized) Kokkos::parallel_for(
      "ksz::huffman::chunk_bits", Policy(space, 0, nchunks), KOKKOS_LAMBDA(const std::uint64_t c) {
        const std::uint64_t s0 = c * cs;
        const std::uint64_t s1 = s0 + cs < n ? s0 + cs : n;
        std::uint64_t bits = 0, e = c * (per_chunk - 1);
        bool bad = false;
        for (std::uint64_t a = s0; a < s1; a += step) {
          const std::uint64_t b = a + step < s1 ? a + step : s1;
          std::uint64_t run = 0;
          for (std::uint64_t i = a; i < b; ++i) {
            const std::uint32_t s = narrow(symbols(i));
            const std::uint32_t len = s < nsym ? enc(s) >> 24 : 0u;
            bad = bad || len == 0;
            run += len;
          }
          if (b < s1) run_bits(e++) = static_cast<std::uint16_t>(run);
          bits += run;
        }
        offsets(c) = (bits + 31) / 32;
        if (bad) Kokkos::atomic_fetch_or(&status(0), std::uint32_t(impl::kBadSymbol));
      });
  Kokkos::parallel_scan("ksz::huffman::chunk_scan", Policy(space, 0, nchunks + 1),
                        ExclusiveScan<Mem>{offsets, offsets, nchunks});
  auto h_status = Kokkos::create_mirror_view(status);
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> h_total("ksz::huffman::total", 1);
  Kokkos::deep_copy(space, h_status, status);
  Kokkos::deep_copy(space, h_total, Kokkos::subview(offsets, std::make_pair(nchunks, nchunks + 1)));
  space.fence();
  KSZ_EXPECTS(h_status(0) == 0, "huffman: input has a symbol with no code in the codebook");
  res.n_words = h_total(0);

  const Kokkos::View<std::uint32_t*, Mem> words =
      ws ? ws->template get<std::uint32_t>(WS::kHuffWords, res.n_words, "ksz::huffman::words")
         : Kokkos::View<std::uint32_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ksz::huffman::words"),
                                             res.n_words);
  res.words = words;
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    if (narrow.identity() && cuda_spec::huffman_deflate(space, symbols.data(), n, chunk_symbols, enc.data(),
                                                       offsets.data(), words.data(), res.n_words))
      return res;
#endif
  if (staged) {
    impl::StagedChunks<ExecSpace, true>(symbols, enc, nsym, runs, offsets, run_bits, status, words, narrow).run(space);
    return res;
  }
  Kokkos::parallel_for(
      "ksz::huffman::deflate", Policy(space, 0, nchunks), KOKKOS_LAMBDA(const std::uint64_t c) {
        const std::uint64_t s0 = c * cs;
        const std::uint64_t s1 = s0 + cs < n ? s0 + cs : n;
        std::uint64_t w = offsets(c);
        // acc's low nbits (< 32 between codes) are pending; codes add <= 24 bits.
        std::uint64_t acc = 0;
        int nbits = 0;
        for (std::uint64_t i = s0; i < s1; ++i) {
          const std::uint32_t e = enc(narrow(symbols(i)));
          const int len = static_cast<int>(e >> 24);
          acc = (acc << len) | (e & 0xFFFFFFu);
          nbits += len;
          if (nbits >= 32) {
            nbits -= 32;
            words(w++) = static_cast<std::uint32_t>(acc >> nbits);
          }
        }
        if (nbits > 0) words(w) = static_cast<std::uint32_t>(acc << (32 - nbits));
      });
  return res;
}

namespace impl {

#if defined(KSZ_HAVE_CUDA)
// encode()'s CUDA single pass over n symbols of src, where it applies (a
// bound on the words, the workspace, chunks and runs it takes): true with
// res filled.
inline bool encode_single_pass(const Kokkos::Cuda& space, const cuda_spec::SymbolSource& src, std::uint64_t n,
                               const DeviceCodebook<Kokkos::Cuda>& book, std::uint32_t chunk_symbols,
                               pipeline::Workspace<Kokkos::CudaSpace>::Lease* ws, std::uint32_t sub,
                               std::uint64_t words_bound, Encoded<Kokkos::Cuda>& res,
                               cuda_spec::EncodeFollower* follow = nullptr) {
  using WS = pipeline::Workspace<Kokkos::CudaSpace>;
  if (!words_bound || !ws || n == 0 || chunk_symbols < 1 || sub > kMaxSubchunk) return false;
  const Runs runs(n, chunk_symbols, sub);
  if (runs.per_chunk > kMaxRuns) return false;
  const std::uint64_t nchunks = runs.nchunks;
  res.run_bits = ws->template get<std::uint16_t>(WS::kHuffRunBits, runs.stored, "ksz::huffman::run_bits");
  res.chunk_offsets = ws->template get<std::uint64_t>(WS::kHuffOffsets, nchunks + 1, "ksz::huffman::chunk_offsets");
  const Kokkos::View<std::uint32_t*, Kokkos::CudaSpace> words =
      ws->template get<std::uint32_t>(WS::kHuffWords, words_bound, "ksz::huffman::words");
  const Kokkos::View<unsigned long long*, Kokkos::CudaSpace> state =
      ws->template get<unsigned long long>(WS::kHuffState, cuda_spec::huffman_encode_state_words(nchunks),
                                           "ksz::huffman::state");
  std::uint32_t st = 0;
  if (!cuda_spec::huffman_encode_single_pass(space, src, n, chunk_symbols, book.encode_table().data(),
                                             static_cast<std::uint32_t>(book.nsym()), res.chunk_offsets.data(),
                                             words.data(), words_bound, state.data(),
                                             runs.stored ? static_cast<std::uint32_t>(runs.step) : 0u,
                                             runs.per_chunk, res.run_bits.data(), res.n_words, st, follow))
    return false;
  KSZ_EXPECTS(st == 0, "huffman: input has a symbol with no code in the codebook");
  res.words = Kokkos::subview(words, std::make_pair(std::uint64_t(0), res.n_words));
  return true;
}
#endif

}  // namespace impl

// Encodes symbols in chunks of chunk_symbols (>= 1, else ksz::InvalidInput;
// the last chunk may be short). Every symbol needs a code in book, else
// ksz::InvalidInput. Steps: per-chunk bit count, exclusive scan of word
// counts into chunk_offsets, then deflate with each chunk writing only its words.
// Synchronizes once (to size the bitstream); the deflate is left in flight on space.
// With ws, the bitstream, offsets, run lengths and status live in the caller's workspace
// (valid while its lease is held) instead of fresh allocations. With sub in
// [1, kMaxSubchunk] below chunk_symbols, run_bits gets the lengths of the
// chunks' runs of sub symbols (Runs); else it is empty. With words_bound (at
// least the words the bitstream takes: words_bound() from the symbols'
// histogram), the CUDA specialization encodes in one pass; the result is the
// same. With narrow, the symbols are narrow's reading of the codes given.
// follow, where the single pass runs, queues its work behind it (one
// synchronization for both; cuda_spec::EncodeFollower).
template <class ExecSpace>
Encoded<ExecSpace> encode(const ExecSpace& space,
                          Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> symbols,
                          const DeviceCodebook<ExecSpace>& book, std::uint32_t chunk_symbols,
                          typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr,
                          std::uint32_t sub = 0, std::uint64_t words_bound = 0, const Narrow narrow = {},
                          cuda_spec::EncodeFollower* follow = nullptr) {
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    cuda_spec::SymbolSource src;
    src.codes = symbols.data();
    src.narrow = narrow;
    Encoded<ExecSpace> res;
    if (impl::encode_single_pass(space, src, symbols.extent(0), book, chunk_symbols, ws, sub, words_bound, res,
                                 follow))
      return res;
  }
#endif
  (void)words_bound, (void)follow;
  return encode_two_pass<ExecSpace>(space, symbols, book, chunk_symbols, ws, sub, narrow);
}

// encode() of byte codes (quantize/byte_codes.hpp), the same result: the
// CUDA single pass reads them as they are; every other path expands them to
// 16-bit codes first, in a buffer of its own.
template <class ExecSpace>
Encoded<ExecSpace> encode(const ExecSpace& space, const quantize::ByteCodes<typename ExecSpace::memory_space>& codes,
                          const DeviceCodebook<ExecSpace>& book, std::uint32_t chunk_symbols,
                          typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr,
                          std::uint32_t sub = 0, std::uint64_t words_bound = 0) {
  const std::uint64_t n = codes.bytes.extent(0);
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    // Scratch for each chunk's first listed code (filled by the one pass where it runs).
    const std::uint64_t nchunks = chunk_symbols ? chunk_count(n, chunk_symbols) : 0;
    using WS = pipeline::Workspace<typename ExecSpace::memory_space>;
    const auto starts = WS::template buffer<std::uint64_t>(ws, WS::kEscapeStarts, nchunks + 1, "ksz::escape_starts");
    cuda_spec::SymbolSource src;
    src.bytes = codes.bytes.data();
    src.escapes = codes.escapes.data();
    src.n_escapes = codes.escapes.extent(0);
    src.chunk_escapes = starts.data();
    src.radius = codes.radius;
    Encoded<ExecSpace> res;
    if (impl::encode_single_pass(space, src, n, book, chunk_symbols, ws, sub, words_bound, res)) return res;
  }
#endif
  const Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> wide(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::huffman::expanded_codes")), n);
  quantize::expand<ExecSpace>(space, codes, wide);
  return encode<ExecSpace>(space, wide, book, chunk_symbols, ws, sub, words_bound);
}

// Decodes out.extent(0) symbols; chunk c is decoded from words
// [chunk_offsets[c], chunk_offsets[c+1]) alone, run by run when run_bits
// holds its runs' lengths (encode's sub, Runs; empty and sub 0 without
// sub-chunks). Safe on hostile input: reads stay inside words and the chunk's
// range, writes inside out. Throws ksz::CorruptStream if chunk_symbols is 0,
// chunk_offsets does not have nchunks+1 entries, run_bits does not have
// Runs::stored, or any chunk or run is invalid (then out holds partial data).
// Every run is checked to end where the next one begins, so the symbols are
// those of decoding each chunk from its start. With ws, the status word lives
// in the caller's workspace.
template <class ExecSpace>
void decode(const ExecSpace& space, Kokkos::View<const std::uint32_t*, typename ExecSpace::memory_space> words,
            Kokkos::View<const std::uint64_t*, typename ExecSpace::memory_space> chunk_offsets,
            std::uint32_t chunk_symbols, const DeviceCodebook<ExecSpace>& book,
            Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space> out,
            Kokkos::View<const std::uint16_t*, typename ExecSpace::memory_space> run_bits = {}, std::uint32_t sub = 0,
            typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  KSZ_STREAM_CHECK(chunk_symbols >= 1, "huffman: chunk size is 0");
  KSZ_STREAM_CHECK(sub <= kMaxSubchunk, "huffman: sub-chunk of ", sub, " symbols exceeds ", kMaxSubchunk);
  const std::uint64_t n = out.extent(0);
  const std::uint64_t nchunks = chunk_count(n, chunk_symbols);
  KSZ_STREAM_CHECK(chunk_offsets.extent(0) == nchunks + 1, "huffman: ", chunk_offsets.extent(0),
                   " chunk offsets for ", nchunks, " chunks");
  const Runs runs(n, chunk_symbols, sub);
  KSZ_STREAM_CHECK(runs.per_chunk <= kMaxRuns, "huffman: ", runs.per_chunk, " sub-chunks a chunk exceed ", kMaxRuns);
  KSZ_STREAM_CHECK(run_bits.extent(0) == runs.stored, "huffman: ", run_bits.extent(0), " sub-chunk lengths, expected ",
                   runs.stored);
  if (n == 0) return;
  const std::uint64_t cs = chunk_symbols, step = runs.step, per_chunk = runs.per_chunk;
  const std::uint64_t nwords = words.extent(0);
  const auto dec = book.decode_tables();
  const Kokkos::View<std::uint32_t*, Mem> status = impl::zeroed_status(space, ws);
  bool specialized = false;
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    specialized = cuda_spec::huffman_inflate(
        space, words.data(), nwords, chunk_offsets.data(), chunk_symbols,
        cuda_spec::InflateTables{dec.lut.data(), dec.limit.data(), dec.first.data(), dec.offset.data(),
                                 dec.symbols.data(), book.scratch_table().data()},
        out.data(), n, status.data(), static_cast<std::uint32_t>(step), per_chunk, runs.total, run_bits.data());
#endif
  if (!specialized) {
    const impl::InflateRun<Mem> f{words, chunk_offsets, run_bits, dec, out, status, n, cs, step, per_chunk, nwords};
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      Kokkos::parallel_for(
          "ksz::huffman::inflate", Kokkos::RangePolicy<ExecSpace>(space, 0, runs.total),
          KOKKOS_LAMBDA(const std::uint64_t u) { f.run(u, dec.lut); });
    } else {
      // GPUs: a thread a run, kInflateTeam runs a team sharing the
      // multi-symbol table in scratch memory (a chain of dependent lookups
      // per run, up to three symbols a lookup; longer codes and errors take
      // the first-level table). Threads decode kStage symbols at a time into
      // scratch rows, and the team stores the rows together, 16 bytes a
      // thread over consecutive pieces (a thread's own stores down its run
      // would touch a line each). Teams take their own batch of runs, then
      // more by ticket. (Drawing the first batch by ticket too measured
      // slower: 1.50 against 1.29 ms.)
      using Policy = Kokkos::TeamPolicy<ExecSpace>;
      using ScratchU = Kokkos::View<std::uint32_t*, typename ExecSpace::scratch_memory_space,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      using ScratchM = Kokkos::View<std::uint64_t*, typename ExecSpace::scratch_memory_space,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      using WS = pipeline::Workspace<Mem>;
      using F = impl::InflateRun<Mem>;
      constexpr std::uint32_t lut_n = std::uint32_t(1) << kLutBits;
      constexpr std::uint64_t T = impl::kInflateTeam, kStage = 16;
      const std::uint64_t total = runs.total, batches = (total + T - 1) / T;
      const std::uint64_t resident = static_cast<std::uint64_t>(space.concurrency()) / T;
      const std::uint64_t league = std::max<std::uint64_t>(1, std::min(batches, resident));  // fewer may be resident
      const std::uint64_t rounds = (step + kStage - 1) / kStage;
      const auto ticket = WS::template zeroed<std::uint32_t>(space, ws, WS::kTicket, 1, "ksz::ticket");
      Policy policy(space, static_cast<int>(league), static_cast<int>(T));
      policy.set_scratch_size(0, Kokkos::PerTeam(ScratchM::shmem_size(lut_n) + ScratchM::shmem_size(T) +
                                                 ScratchU::shmem_size(T) + ScratchU::shmem_size(1) +
                                                 T * kStage * sizeof(std::uint16_t) + 16));
      std::uint16_t* const o = out.data();
      Kokkos::parallel_for(
          "ksz::huffman::inflate_teams", policy, KOKKOS_LAMBDA(const typename Policy::member_type& team) {
            const ScratchM multi(team.team_scratch(0), lut_n);
            const ScratchM first(team.team_scratch(0), T);  // each thread's run: first symbol
            const ScratchU count(team.team_scratch(0), T);  // and symbols (0: nothing to store)
            const ScratchU next(team.team_scratch(0), 1);
            std::uint16_t* const stage = static_cast<std::uint16_t*>(
                team.team_scratch(0).get_shmem_aligned(T * kStage * sizeof(std::uint16_t), 16));
            const std::uint64_t r = static_cast<std::uint64_t>(team.team_rank());
            std::uint16_t* const mine = stage + r * kStage;
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, lut_n),
                                 [&](const std::uint32_t e) { multi(e) = impl::multi_entry(dec.lut, e); });
            for (std::uint64_t b = static_cast<std::uint64_t>(team.league_rank()); b < batches;) {
              team.team_barrier();  // the table is loaded, the last batch stored, the last ticket read
              if (r == 0)
                next(0) = static_cast<std::uint32_t>(league) + Kokkos::atomic_fetch_add(&ticket(0), std::uint32_t(1));
              const std::uint64_t u = b * T + r;
              typename F::State st;
              if (u < total) st = f.begin_run(u);
              first(r) = st.ok ? st.sp.s0 : 0;
              count(r) = st.ok ? static_cast<std::uint32_t>(st.sp.s1 - st.sp.s0) : 0u;
              for (std::uint64_t round = 0; round < rounds; ++round) {  // the same count on every thread
                const std::uint64_t at = st.sp.s0 + round * kStage;
                if (st.ok)
                  f.decode_to(st, at + kStage < st.sp.s1 ? at + kStage : st.sp.s1, dec.lut, multi,
                              [&](const std::uint64_t i, const std::uint32_t sym) {
                                mine[i - at] = static_cast<std::uint16_t>(sym);
                              });
                team.team_barrier();  // the rows are staged
                for (std::uint64_t p = r; p < T * (kStage / 8); p += T) {
                  const std::uint64_t src = p / (kStage / 8), piece = p % (kStage / 8);
                  const std::uint64_t from = round * kStage + 8 * piece;  // symbol index in src's run
                  const std::uint32_t len = count(src);
                  if (from >= len) continue;
                  std::uint16_t* const dst = o + first(src) + from;
                  const std::uint16_t* const row = stage + src * kStage + 8 * piece;
                  if (from + 8 <= len && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0)
                    *reinterpret_cast<Words4*>(dst) = *reinterpret_cast<const Words4*>(row);
                  else
                    for (std::uint64_t e = 0; e < 8 && from + e < len; ++e) dst[e] = row[e];
                }
                team.team_barrier();  // the rows are out
              }
              if (st.ok) f.end_run(st);
              b = next(0);
            }
          });
    }
  }
  auto h_status = Kokkos::create_mirror_view(status);
  Kokkos::deep_copy(space, h_status, status);
  space.fence();
  KSZ_STREAM_CHECK(h_status(0) == 0, "huffman: ", impl::describe_status(h_status(0)));
}

}  // namespace ksz::huffman
