// Lossless pass after the codec: hierarchical zero elimination, block-parallel,
// on any Kokkos execution space, the same bytes on every backend.
//
// Why zeros: canonical Huffman gives the most frequent symbol (the center
// quantization code) the all-zero shortest code, so smooth regions become runs
// of zero bits, hence zero bytes and words. That is the redundancy behind
// Huffman's 1-bit-per-symbol floor (ratio <= 32 for f32), which cuSZ-i removes
// with NVIDIA's proprietary Bitcomp (cusz-i section VI-B). Designs measured on
// real Huffman output: perf/results/lossless_designs.md.
//
// Payload (FORMAT.md "Lossless pass"): a 16-byte header, one u32 stored size
// per block of B = 2^log2_block raw bytes, then the blocks back to back. A block
// whose stored size equals its raw length is stored raw, so the pass never
// grows data by more than the header and 4 bytes per block.
//
// A coded block: level 0 is the block's units (bytes for ZeroBytes, u32 words
// for ZeroWords); D1 is the bitmap of its nonzero units (bit u % 8, LSB first,
// of byte u / 8); each further level is the bitmap of the previous level's
// nonzero bytes, until a bitmap has at most kTopBytes bytes. Stored: V0 (the
// nonzero units of level 0, in order), V1, ..., V(top-1) (the nonzero bytes of
// each bitmap level), then the top bitmap itself. An all-zero 8 KiB block
// takes 16 bytes.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/simd/bits.hpp"
#include "portable/simd/scan.hpp"
#include "src/core/error.hpp"

namespace ksz::lossless {

// Numeric values are LosslessId's (header byte 5): never renumber.
enum class Method : std::uint8_t { ZeroBytes = 1, ZeroWords = 2 };

constexpr int kLog2BlockDefault = 13;  // 8 KiB: ratio within 0.3% of 64 KiB blocks, 8x the parallelism
constexpr int kLog2BlockMin = 10;
constexpr int kLog2BlockMax = 16;
constexpr std::uint32_t kTopBytes = 16;  // levels stop at a bitmap of at most this many bytes
constexpr std::uint64_t kHeaderBytes = 16;
constexpr int kMaxLevels = 8;  // 2^16 bytes: 65536 units, bitmaps 8192, 1024, 128, 16

// The payload header, read on the host.
struct Info {
  std::uint64_t raw_bytes = 0;  // length before the pass
  Method method = Method::ZeroBytes;
  int log2_block = kLog2BlockDefault;
  std::uint64_t blocks = 0;
};

// Validates a payload's header (and that its size table fits): throws
// ksz::CorruptStream with a one-line reason. `p` holds `size` bytes (at least
// the header when size >= kHeaderBytes).
inline Info inspect(const std::uint8_t* p, std::uint64_t size) {
  KSZ_STREAM_CHECK(size >= kHeaderBytes, "lossless payload of ", size, " bytes is shorter than its header");
  Info i;
  std::memcpy(&i.raw_bytes, p, 8);
  const int log2_block = p[8];
  const int method = p[9];
  std::uint16_t reserved;
  std::uint32_t blocks;
  std::memcpy(&reserved, p + 10, 2);
  std::memcpy(&blocks, p + 12, 4);
  KSZ_STREAM_CHECK(method == 1 || method == 2, "unknown lossless method ", method);
  KSZ_STREAM_CHECK(log2_block >= kLog2BlockMin && log2_block <= kLog2BlockMax, "lossless block size 2^",
                   log2_block, " out of range");
  KSZ_STREAM_CHECK(reserved == 0, "lossless header reserved field is not 0");
  i.method = static_cast<Method>(method);
  i.log2_block = log2_block;
  i.blocks = blocks;
  const std::uint64_t b = std::uint64_t(1) << log2_block;
  // Every coded block stores at least one byte, so a payload bounds the raw
  // length it can claim: no absurd allocation from a lying header.
  KSZ_STREAM_CHECK(blocks <= (size - kHeaderBytes) / 5, "lossless payload of ", size, " bytes cannot hold ",
                   blocks, " blocks");
  KSZ_STREAM_CHECK(i.raw_bytes <= blocks * b && (blocks == 0 || i.raw_bytes > (blocks - 1) * b),
                   "lossless raw length ", i.raw_bytes, " does not match its ", blocks, " blocks of ", b, " bytes");
  return i;
}

// Device memory encode() allocates besides its result: the staging copy and
// the per-block sizes and offsets.
inline std::size_t workspace_bytes(std::uint64_t raw_bytes, int log2_block = kLog2BlockDefault) {
  const std::uint64_t b = std::uint64_t(1) << log2_block, nb = (raw_bytes + b - 1) / b;
  return static_cast<std::size_t>(nb * b + 16 * (nb + 1));
}

namespace impl {

// Bits of the device status word (decode).
enum StatusBits : std::uint32_t {
  kBadSize = 1u,       // a block's stored size exceeds its raw length
  kOverrun = 2u,       // a level's values run before the block's first byte
  kTrailing = 4u,      // bytes of a block left unused
  kBadPadding = 8u,    // bitmap bits past a level's end, or bytes past the raw end, are set
  kZeroValue = 16u,    // a stored value is zero (a bitmap bit says it is not)
};

inline std::string describe_status(std::uint32_t s) {
  std::string out;
  auto add = [&](std::uint32_t bit, const char* what) {
    if (!(s & bit)) return;
    if (!out.empty()) out += "; ";
    out += what;
  };
  add(kBadSize, "a block's stored size exceeds its raw length");
  add(kOverrun, "a block's values run past its start");
  add(kTrailing, "unused bytes in a block");
  add(kBadPadding, "bits set past the end of a level");
  add(kZeroValue, "a stored value is zero");
  return out;
}

// The payload header (inspect() reads it) as two little-endian words: the
// raw length; the log2 block size, the method, 0 (reserved) and the block
// count. Host and device (the CUDA encoder writes it from its kernel).
KOKKOS_INLINE_FUNCTION void write_header(std::uint64_t* h, std::uint64_t raw_bytes, int log2_block, Method method,
                                         std::uint64_t blocks) {
  h[0] = raw_bytes;
  h[1] = static_cast<std::uint64_t>(log2_block) | static_cast<std::uint64_t>(method) << 8 | blocks << 32;
}

// Level geometry of one block of `bytes` raw bytes: len[0] units at level 0,
// len[k] bytes of bitmap level k (1 <= k <= top); off[k] is level k's offset
// in team scratch.
struct Levels {
  int top;
  std::uint32_t len[kMaxLevels + 1];
  std::uint32_t off[kMaxLevels + 1];
  std::uint32_t scratch;  // bytes of levels 1..top
};

KOKKOS_INLINE_FUNCTION Levels levels_of(std::uint32_t bytes, int unit) {
  Levels lv{};
  lv.len[0] = (bytes + unit - 1) / unit;
  lv.len[1] = (lv.len[0] + 7) / 8;
  lv.off[1] = 0;
  int k = 1;
  while (lv.len[k] > kTopBytes && k < kMaxLevels) {
    lv.len[k + 1] = (lv.len[k] + 7) / 8;
    lv.off[k + 1] = lv.off[k] + lv.len[k];
    ++k;
  }
  lv.top = k;
  lv.scratch = lv.off[k] + lv.len[k];
  return lv;
}

// Bit i of the result is set iff byte i of w is nonzero.
KOKKOS_INLINE_FUNCTION std::uint32_t nonzero_bytes(std::uint64_t w) {
  constexpr std::uint64_t low7 = 0x7F7F7F7F7F7F7F7Full;
  const std::uint64_t high = (((w & low7) + low7) | w) & ~low7;  // the top bit of each nonzero byte
  return static_cast<std::uint32_t>(((high >> 7) * 0x0102040810204080ull) >> 56);  // gathered, no carries
}

// A chunk is 32 bytes of a level: 32 byte units or 8 word units, so one
// chunk's bitmap is 4 or 1 bitmap bytes. Reads bytes [at, at + 32) of p that
// lie below `end`, zero past it; aligned 64-bit loads when the whole chunk is
// present and p + at is 8-byte aligned (the common case on every backend).
struct Chunk {
  std::uint64_t w[4];
  KOKKOS_INLINE_FUNCTION std::uint32_t unit(int j, int u) const {
    return u == 1 ? static_cast<std::uint32_t>((w[j >> 3] >> (8 * (j & 7))) & 0xFFu)
                  : static_cast<std::uint32_t>(w[j >> 1] >> (32 * (j & 1)));
  }
};

KOKKOS_INLINE_FUNCTION void load_chunk(const std::uint8_t* p, std::uint64_t at, std::uint64_t end, Chunk& c) {
  if (at + 32 <= end && ((reinterpret_cast<std::uintptr_t>(p + at) & 7u) == 0)) {
    const std::uint64_t* q = reinterpret_cast<const std::uint64_t*>(p + at);
    c.w[0] = q[0];
    c.w[1] = q[1];
    c.w[2] = q[2];
    c.w[3] = q[3];
    return;
  }
  for (int k = 0; k < 4; ++k) {
    std::uint64_t v = 0;
    for (int j = 0; j < 8; ++j) {
      const std::uint64_t a = at + 8 * k + j;
      if (a < end) v |= static_cast<std::uint64_t>(p[a]) << (8 * j);
    }
    c.w[k] = v;
  }
}

KOKKOS_INLINE_FUNCTION void store_chunk(std::uint8_t* p, std::uint64_t at, std::uint64_t end, const Chunk& c) {
  if (at + 32 <= end && ((reinterpret_cast<std::uintptr_t>(p + at) & 7u) == 0)) {
    std::uint64_t* q = reinterpret_cast<std::uint64_t*>(p + at);
    q[0] = c.w[0];
    q[1] = c.w[1];
    q[2] = c.w[2];
    q[3] = c.w[3];
    return;
  }
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 8; ++j) {
      const std::uint64_t a = at + 8 * k + j;
      if (a < end) p[a] = static_cast<std::uint8_t>(c.w[k] >> (8 * j));
    }
}

// Bitmap bits of a chunk whose first unit is first_unit, of a level with
// `units` units of u bytes (units past the end are zero in the chunk).
KOKKOS_INLINE_FUNCTION std::uint32_t chunk_mask(const Chunk& c, int u) {
  if (u == 1)
    return nonzero_bytes(c.w[0]) | nonzero_bytes(c.w[1]) << 8 | nonzero_bytes(c.w[2]) << 16 |
           nonzero_bytes(c.w[3]) << 24;
  std::uint32_t m = 0;
  for (int j = 0; j < 8; ++j)
    if (c.unit(j, 4) != 0) m |= 1u << j;
  return m;
}

KOKKOS_INLINE_FUNCTION std::uint32_t read_mask(const std::uint8_t* bitmap, std::uint64_t i, int mbytes,
                                               std::uint32_t bitmap_len) {
  std::uint32_t m = 0;
  for (int k = 0; k < mbytes; ++k) {
    const std::uint64_t a = i * mbytes + k;
    if (a < bitmap_len) m |= static_cast<std::uint32_t>(bitmap[a]) << (8 * k);
  }
  return m;
}

template <class ExecSpace>
using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;

template <class ExecSpace>
int team_size() {  // one thread per block on CPUs: a block stays in one core's cache
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible ? 1 : 128;
}

// The coders' teams: one thread whose vector lanes (a warp on GPUs) share a
// block, so a level's counts and places are warp reductions and scans
// (shuffles) rather than team ones (shared memory and barriers across four
// warps). One lane on CPUs.
template <class ExecSpace>
constexpr int block_lanes() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible ? 1 : 32;
}
template <class ExecSpace>
Kokkos::TeamPolicy<ExecSpace> block_policy(const ExecSpace& space, std::uint64_t nb) {
  return Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(nb), 1, block_lanes<ExecSpace>());
}

// Bitmap of one level inside a team: the level's `units` units of u bytes at
// src (zero past src_end) give their bitmap (written to `bitmap`, blen
// bytes). Returns the number of nonzero units, on every thread of the team.
template <class M>
KOKKOS_INLINE_FUNCTION std::uint32_t bitmap_level(const M& t, const std::uint8_t* src, std::uint64_t src_end,
                                                  std::uint64_t units, int u, std::uint8_t* bitmap,
                                                  std::uint32_t blen) {
  const int mbytes = u == 1 ? 4 : 1;
  const std::uint64_t g = 32 / u;
  std::uint32_t count = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(t, (units + g - 1) / g),
      [&](const std::uint64_t i, std::uint32_t& acc) {
        Chunk c;
        load_chunk(src, 32 * i, src_end, c);
        const std::uint32_t m = chunk_mask(c, u);
        for (int k = 0; k < mbytes; ++k)
          if (i * mbytes + k < blen) bitmap[i * mbytes + k] = static_cast<std::uint8_t>(m >> (8 * k));
        acc += static_cast<std::uint32_t>(popcount32(m));
      },
      count);
  t.team_barrier();  // the bitmap is the next level's input
  return count;
}

// The nonzero units of a level, in order, to dst[pos...]: a vector lane per
// 4 bytes of the level (four byte units or one word unit), places by a scan
// over the lanes, so a warp's loads and its stores each cover one stretch of
// memory. (A lane per 32-byte chunk, as bitmap_level reads, scattered its
// byte stores over 32 places a warp instruction: on the H200 the encoder was
// bound by L2 write requests, 0.21 ms for 27 MB.)
KOKKOS_INLINE_FUNCTION std::uint32_t load_word(const std::uint8_t* p, std::uint64_t at, std::uint64_t end) {
  if (at + 4 <= end && ((reinterpret_cast<std::uintptr_t>(p + at) & 3u) == 0))
    return *reinterpret_cast<const std::uint32_t*>(p + at);
  std::uint32_t v = 0;
  for (int j = 0; j < 4; ++j)
    if (at + j < end) v |= static_cast<std::uint32_t>(p[at + j]) << (8 * j);
  return v;
}

template <class M>
KOKKOS_INLINE_FUNCTION void values_level(const M& t, const std::uint8_t* src, std::uint64_t src_end,
                                         std::uint64_t units, int u, std::uint8_t* dst) {
  const std::uint64_t words = (units * u + 3) / 4;
  Kokkos::parallel_scan(Kokkos::ThreadVectorRange(t, words),
                        [&](const std::uint64_t i, std::uint64_t& acc, const bool final) {
                          const std::uint32_t w = load_word(src, 4 * i, src_end);
                          if (u == 1) {
                            const std::uint32_t m = nonzero_bytes(w);
                            if (final)
                              for (std::uint32_t r = m, o = 0; r; r &= r - 1, ++o)
                                dst[acc + o] = static_cast<std::uint8_t>(w >> (8 * lowest_bit(r)));
                            acc += static_cast<std::uint64_t>(popcount32(m));
                          } else {
                            if (final && w)
                              for (int k = 0; k < 4; ++k) dst[4 * acc + k] = static_cast<std::uint8_t>(w >> (8 * k));
                            acc += w != 0 ? 1u : 0u;
                          }
                        });
}

// Encodes block b of `in` into staging[b*B, b*B + len) and its stored size.
// Bitmaps and counts first, so a block that would not shrink costs one read
// and is stored raw without writing its values.
template <class ExecSpace>
struct EncodeBlocks {
  using Mem = typename ExecSpace::memory_space;
  Kokkos::View<const std::uint8_t*, Mem> in;
  Kokkos::View<std::uint8_t*, Mem> staging;
  Kokkos::View<std::uint64_t*, Mem> sizes;
  std::uint64_t n;
  int log2_block, unit;

  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& t) const {
    using Scratch = Kokkos::View<std::uint64_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
    const std::uint64_t b = static_cast<std::uint64_t>(t.league_rank());
    const std::uint64_t begin = b << log2_block;
    const std::uint64_t bsize = std::uint64_t(1) << log2_block;
    const std::uint32_t len = static_cast<std::uint32_t>(n - begin < bsize ? n - begin : bsize);
    const Levels lv = levels_of(len, unit);
    Scratch shared(t.team_scratch(0), (lv.scratch + 7) / 8);
    std::uint8_t* levels = reinterpret_cast<std::uint8_t*>(shared.data());
    const std::uint8_t* src = in.data() + begin;
    std::uint64_t pos[kMaxLevels + 1];  // where V_k starts; pos[top] is where the top bitmap goes
    pos[0] = 0;
    pos[1] = std::uint64_t(bitmap_level(t, src, len, lv.len[0], unit, levels + lv.off[1], lv.len[1])) * unit;
    bool raw = pos[1] >= len;  // team-uniform: counts are broadcast
    for (int k = 1; k < lv.top && !raw; ++k) {
      pos[k + 1] = pos[k] + bitmap_level(t, levels + lv.off[k], lv.len[k], lv.len[k], 1, levels + lv.off[k + 1],
                                         lv.len[k + 1]);
      raw = pos[k + 1] >= len;
    }
    raw = raw || pos[lv.top] + lv.len[lv.top] >= len;
    if (!raw) {
      std::uint8_t* dst = staging.data() + begin;
      values_level(t, src, len, lv.len[0], unit, dst);
      for (int k = 1; k < lv.top; ++k)
        values_level(t, levels + lv.off[k], lv.len[k], lv.len[k], 1, dst + pos[k]);
      const std::uint8_t* top = levels + lv.off[lv.top];
      std::uint8_t* tdst = dst + pos[lv.top];
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, lv.len[lv.top]), [&](const std::uint32_t j) { tdst[j] = top[j]; });
    }
    Kokkos::single(Kokkos::PerTeam(t), [&]() { sizes(b) = raw ? len : pos[lv.top] + lv.len[lv.top]; });
  }
};

// Copies each block's stored bytes (staging, or the input for a raw block)
// to its place in the payload, and its size into the size table.
template <class ExecSpace>
struct GatherBlocks {
  using Mem = typename ExecSpace::memory_space;
  Kokkos::View<const std::uint8_t*, Mem> in, staging;
  Kokkos::View<const std::uint64_t*, Mem> sizes, offsets;
  Kokkos::View<std::uint8_t*, Mem> out;
  std::uint64_t n, data_start;
  int log2_block;

  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& t) const {
    const std::uint64_t b = static_cast<std::uint64_t>(t.league_rank());
    const std::uint64_t begin = b << log2_block;
    const std::uint64_t bsize = std::uint64_t(1) << log2_block;
    const std::uint64_t len = n - begin < bsize ? n - begin : bsize;
    const std::uint64_t s = sizes(b);
    const std::uint8_t* src = (s == len ? in.data() : staging.data()) + begin;
    std::uint8_t* dst = out.data() + data_start + offsets(b);
    // By the destination's aligned 4-byte words: whole ones stored as words
    // (from two source words when the two are not aligned alike), the
    // partial ones at the ends (shared with the neighbouring blocks) by bytes.
    // A byte a thread took 52 us for 20 MB on the H200.
    const std::uint64_t head = (4 - (reinterpret_cast<std::uintptr_t>(dst) & 3)) & 3;  // bytes before the first aligned word
    const std::uint64_t h = head < s ? head : s;
    const std::uint64_t whole = (s - h) / 4;
    const std::uint64_t tail_from = h + 4 * whole;
    const bool aligned = (reinterpret_cast<std::uintptr_t>(src) & 3) == 0;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, whole), [&](const std::uint64_t w) {
      const std::uint64_t j = h + 4 * w;  // first byte of the word in the block
      const std::uint64_t a = j & ~std::uint64_t(3);
      const int k = static_cast<int>(j & 3);
      std::uint32_t v = 0;
      if (aligned && (k == 0 || a + 8 <= s)) {  // source words inside the block's s bytes
        const std::uint32_t* s32 = reinterpret_cast<const std::uint32_t*>(src + a);
        v = k == 0 ? s32[0] : (s32[0] >> (8 * k)) | (s32[1] << (32 - 8 * k));
      } else {
        for (int q = 0; q < 4; ++q) v |= static_cast<std::uint32_t>(src[j + q]) << (8 * q);
      }
      *reinterpret_cast<std::uint32_t*>(dst + j) = v;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, h + (s - tail_from)), [&](const std::uint64_t e) {
      const std::uint64_t j = e < h ? e : tail_from + (e - h);
      dst[j] = src[j];
    });
    Kokkos::single(Kokkos::PerTeam(t), [&]() {
      for (int k = 0; k < 4; ++k) out(kHeaderBytes + 4 * b + k) = static_cast<std::uint8_t>(s >> (8 * k));
    });
  }
};

KOKKOS_INLINE_FUNCTION std::uint64_t stored_size(const std::uint8_t* payload, std::uint64_t b) {
  const std::uint8_t* p = payload + kHeaderBytes + 4 * b;
  return std::uint64_t(p[0]) | std::uint64_t(p[1]) << 8 | std::uint64_t(p[2]) << 16 | std::uint64_t(p[3]) << 24;
}

// Decodes block b of a payload into out.
template <class ExecSpace>
struct DecodeBlocks {
  using Mem = typename ExecSpace::memory_space;
  Kokkos::View<const std::uint8_t*, Mem> payload;
  Kokkos::View<const std::uint64_t*, Mem> offsets;
  Kokkos::View<std::uint8_t*, Mem> out;
  Kokkos::View<std::uint32_t*, Mem> status;
  std::uint64_t n, data_start;
  int log2_block, unit;

  KOKKOS_INLINE_FUNCTION void fail(const Member<ExecSpace>& t, std::uint32_t bit) const {
    Kokkos::single(Kokkos::PerTeam(t), [&]() { Kokkos::atomic_fetch_or(&status(0), bit); });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& t) const {
    using Scratch = Kokkos::View<std::uint64_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
    const std::uint64_t b = static_cast<std::uint64_t>(t.league_rank());
    const std::uint64_t begin = b << log2_block;
    const std::uint64_t bsize = std::uint64_t(1) << log2_block;
    const std::uint32_t len = static_cast<std::uint32_t>(n - begin < bsize ? n - begin : bsize);
    const std::uint64_t s = stored_size(payload.data(), b);
    const std::uint8_t* src = payload.data() + data_start + offsets(b);
    std::uint8_t* dst = out.data() + begin;
    if (s > len) return;  // flagged by the offsets scan
    if (s == len) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, len), [&](const std::uint32_t j) { dst[j] = src[j]; });
      return;
    }
    const Levels lv = levels_of(len, unit);
    const std::uint32_t top_len = lv.len[lv.top];
    if (s < top_len) return fail(t, kOverrun);
    Scratch shared(t.team_scratch(0), (lv.scratch + 7) / 8);
    std::uint8_t* levels = reinterpret_cast<std::uint8_t*>(shared.data());
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, top_len),
                         [&](const std::uint32_t j) { levels[lv.off[lv.top] + j] = src[s - top_len + j]; });
    t.team_barrier();
    std::uint64_t pos = s - top_len;
    for (int k = lv.top - 1; k >= 0; --k) {
      const int u = k == 0 ? unit : 1;
      const std::uint64_t units = lv.len[k];
      const std::uint8_t* bitmap = levels + lv.off[k + 1];
      const std::uint32_t blen = lv.len[k + 1];
      // Set units, and bits past the level's end (which must be clear).
      std::uint64_t count = 0, padding = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(t, blen),
          [&](const std::uint32_t i, std::uint64_t& acc) {
            const std::uint32_t byte = bitmap[i];
            const std::uint64_t first = 8 * std::uint64_t(i);
            const std::uint32_t valid = first + 8 <= units ? 0xFFu : (1u << (units - first)) - 1u;
            acc += std::uint64_t(popcount32(byte & valid)) | (std::uint64_t((byte & ~valid) != 0) << 32);
          },
          count);
      padding = count >> 32;
      count &= 0xFFFFFFFFu;
      if (padding) return fail(t, kBadPadding);
      if (count * u > pos) return fail(t, kOverrun);
      const std::uint64_t start = pos - count * u;
      const std::uint8_t* vals = src + start;
      const int mbytes = u == 1 ? 4 : 1;
      const std::uint64_t g = 32 / u;
      const std::uint64_t nchunks = (units + g - 1) / g;
      std::uint8_t* level_out = k == 0 ? dst : levels + lv.off[k];
      const std::uint64_t out_end = k == 0 ? len : lv.len[k];
      std::uint32_t bad = 0;
      Kokkos::parallel_scan(Kokkos::ThreadVectorRange(t, nchunks), [&](const std::uint64_t i, std::uint64_t& acc,
                                                                     const bool final) {
        const std::uint32_t m = read_mask(bitmap, i, mbytes, blen);
        if (final) {
          // Word by word with constant indices, so the chunk stays in
          // registers (see values_level).
          Chunk c;
          const std::uint8_t* v8 = vals + acc * u;
          const int per = 8 / u;  // units a word
          for (int k = 0; k < 4; ++k) {
            std::uint64_t w = 0;
            for (std::uint32_t r = (m >> (per * k)) & ((1u << per) - 1u); r; r &= r - 1) {
              std::uint64_t v = 0;
              for (int q = 0; q < u; ++q) v |= std::uint64_t(*v8++) << (8 * q);
              if (v == 0) bad |= kZeroValue;
              w |= v << (8 * u * lowest_bit(r));
            }
            c.w[k] = w;
          }
          // A partial last chunk must not carry bytes past the raw end.
          const std::uint64_t first = 32 * i;
          if (first + 32 > out_end) {
            const std::uint64_t keep = out_end - first;  // bytes of the chunk inside (< 32)
            for (int k = 0; k < 4; ++k) {
              const std::uint64_t lo = 8 * static_cast<std::uint64_t>(k);
              const std::uint64_t past = keep <= lo ? ~std::uint64_t(0)
                                         : keep >= lo + 8 ? std::uint64_t(0)
                                                          : ~std::uint64_t(0) << (8 * (keep - lo));
              if (c.w[k] & past) bad |= kBadPadding;
            }
          }
          store_chunk(level_out, first, out_end, c);
        }
        acc += popcount32(m);
      });
      if (bad) Kokkos::atomic_fetch_or(&status(0), bad);
      t.team_barrier();
      pos = start;
    }
    if (pos != 0) fail(t, kTrailing);
  }
};

// Exclusive offsets of the blocks' stored bytes; flags sizes over the raw length.
template <class ExecSpace>
struct BlockOffsets {
  using Mem = typename ExecSpace::memory_space;
  Kokkos::View<const std::uint8_t*, Mem> payload;
  Kokkos::View<std::uint64_t*, Mem> offsets;
  Kokkos::View<std::uint32_t*, Mem> status;
  std::uint64_t n, nb;
  int log2_block;
  KOKKOS_INLINE_FUNCTION void operator()(const std::uint64_t b, std::uint64_t& acc, const bool final) const {
    std::uint64_t s = 0;
    if (b < nb) {
      const std::uint64_t begin = b << log2_block, bsize = std::uint64_t(1) << log2_block;
      const std::uint64_t len = n - begin < bsize ? n - begin : bsize;
      s = stored_size(payload.data(), b);
      if (s > len) {
        if (final) Kokkos::atomic_fetch_or(&status(0), std::uint32_t(kBadSize));
        s = len;
      }
    }
    if (final) offsets(b) = acc;
    acc += s;
  }
};

}  // namespace impl

// A payload's bytes for n input bytes in blocks of 2^log2_block, whose
// coded blocks take data_bytes: the header, a size a block, the data.
inline std::uint64_t payload_bytes(std::uint64_t n, int log2_block, std::uint64_t data_bytes) {
  const std::uint64_t nb = (n + (std::uint64_t(1) << log2_block) - 1) >> log2_block;
  return kHeaderBytes + 4 * nb + data_bytes;
}

template <class ExecSpace>
struct Encoded {
  Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> bytes;  // exactly `size` bytes, or none (below)
  std::uint64_t size = 0;
};

// Encodes in.extent(0) bytes already in ExecSpace's memory: per-block coding
// into a staging copy, an exclusive scan of the stored sizes, then a gather.
// Synchronizes twice (to size the result, and at the end); on CUDA, for the
// default block size, one kernel and one synchronization
// (cuda_spec::lossless_encode, the same bytes). When the payload
// would take `give_up_at` bytes or more, only `size` is set (no gather, empty
// `bytes`): the caller keeps its input. Throws ksz::InvalidInput for a
// log2_block outside [kLog2BlockMin, kLog2BlockMax]. With a workspace lease
// its buffers (the payload included, valid while the lease is held) come
// from the workspace: no allocation per call.
template <class ExecSpace>
Encoded<ExecSpace> encode(const ExecSpace& space, Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> in,
                          Method method, int log2_block = kLog2BlockDefault,
                          std::uint64_t give_up_at = ~std::uint64_t(0),
                          typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  KSZ_EXPECTS(log2_block >= kLog2BlockMin && log2_block <= kLog2BlockMax, "lossless: block size 2^", log2_block,
              " out of range");
  KSZ_EXPECTS(method == Method::ZeroBytes || method == Method::ZeroWords, "lossless: unknown method");
  const std::uint64_t n = in.extent(0);
  const std::uint64_t bsize = std::uint64_t(1) << log2_block;
  const std::uint64_t nb = (n + bsize - 1) / bsize;
  KSZ_EXPECTS(nb < (std::uint64_t(1) << 31), "lossless: input of ", n, " bytes has too many blocks");
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    Encoded<ExecSpace> res;
    Kokkos::View<std::uint8_t*, Mem> payload;
    if (cuda_spec::lossless_encode(space, in.data(), n, method == Method::ZeroBytes, log2_block, ws, payload,
                                   res.size)) {
      if (res.size < give_up_at) res.bytes = Kokkos::subview(payload, std::make_pair(std::uint64_t(0), res.size));
      return res;
    }
  }
#endif
  const int unit = method == Method::ZeroWords ? 4 : 1;
  using WS = pipeline::Workspace<Mem>;
  const Kokkos::View<std::uint64_t*, Mem> table =
      WS::template buffer<std::uint64_t>(ws, WS::kLosslessSizes, 2 * nb + 1, "ksz::lossless::sizes");
  const Kokkos::View<std::uint64_t*, Mem> sizes = Kokkos::subview(table, std::make_pair(std::uint64_t(0), nb));
  const Kokkos::View<std::uint64_t*, Mem> offsets = Kokkos::subview(table, std::make_pair(nb, 2 * nb + 1));
  const Kokkos::View<std::uint8_t*, Mem> staging =
      WS::template buffer<std::uint8_t>(ws, WS::kLosslessStaging, nb * bsize, "ksz::lossless::staging");
  const int ts = impl::team_size<ExecSpace>();
  const std::size_t scratch = 8 * ((impl::levels_of(static_cast<std::uint32_t>(bsize), unit).scratch + 7) / 8);
  if (nb > 0)
    Kokkos::parallel_for("ksz::lossless::encode",
                         impl::block_policy(space, nb).set_scratch_size(0, Kokkos::PerTeam(scratch)),
                         impl::EncodeBlocks<ExecSpace>{in, staging, sizes, n, log2_block, unit});
  Kokkos::parallel_scan("ksz::lossless::offsets", Kokkos::RangePolicy<ExecSpace>(space, 0, nb + 1),
                        ExclusiveScan<typename ExecSpace::memory_space>{sizes, offsets, nb});
  std::uint64_t total = 0;
  Kokkos::deep_copy(space, total, Kokkos::subview(offsets, nb));
  space.fence();

  const std::uint64_t data_start = kHeaderBytes + 4 * nb;
  Encoded<ExecSpace> res;
  res.size = payload_bytes(n, log2_block, total);
  if (res.size >= give_up_at) return res;
  res.bytes = WS::template buffer<std::uint8_t>(ws, WS::kLosslessPayload, res.size, "ksz::lossless::payload");
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> head("ksz::lossless::header", kHeaderBytes / 8);
  impl::write_header(head.data(), n, log2_block, method, nb);
  Kokkos::deep_copy(space, Kokkos::subview(res.bytes, std::make_pair(std::uint64_t(0), kHeaderBytes)),
                    Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        reinterpret_cast<const std::uint8_t*>(head.data()), kHeaderBytes));
  if (nb > 0)
    Kokkos::parallel_for("ksz::lossless::gather",
                         Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(nb), ts),
                         impl::GatherBlocks<ExecSpace>{in, staging, sizes, offsets, res.bytes, n, data_start,
                                                       log2_block});
  space.fence();  // `head` is a host temporary of the asynchronous copy above
  return res;
}

namespace impl {
// cannot_shrink's reduction: per block of wpb words, the least bytes the pass
// can code it in (its nonzero units, a bitmap byte per eight of them, or its
// raw length), summed over blocks.
template <class ExecSpace>
struct CodedBound {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  Kokkos::View<const std::uint32_t*, typename ExecSpace::memory_space> words;
  std::uint64_t n_words, n, wpb, bsize, nb;
  bool bytes;  // ZeroBytes (else ZeroWords)
  bool vec;    // words 16-byte aligned
  int lanes;   // the teams' vector length
  Kokkos::View<std::uint64_t*, typename ExecSpace::memory_space> sum;  // [0] += each block's bound, zeroed

  // Nonzero bytes of w (ZeroBytes) or whether w is nonzero (ZeroWords).
  KOKKOS_INLINE_FUNCTION std::uint32_t nonzero_units(const std::uint32_t w) const {
    return bytes ? static_cast<std::uint32_t>(popcount32(nonzero_bytes(w))) : (w != 0 ? 1u : 0u);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& t) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, t.team_size()), [&](const int r) {
      const std::uint64_t b = static_cast<std::uint64_t>(t.league_rank()) * t.team_size() + r;
      if (b < nb) block(t, b);
    });
  }

  KOKKOS_INLINE_FUNCTION void block(const Member& t, const std::uint64_t b) const {
    const std::uint64_t begin = b * wpb, end = begin + wpb < n_words ? begin + wpb : n_words;
    std::uint32_t c = 0;
    // Each vector lane takes every lanes-th group of four words (16-byte
    // loads where the words are aligned).
    const std::uint64_t groups = (end - begin + 3) / 4;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(t, lanes),
        [&](const int lane, std::uint32_t& acc) {
          // kUnroll groups' loads in flight at once.
          constexpr int kUnroll = 4;
          for (std::uint64_t g0 = lane; g0 < groups; g0 += kUnroll * lanes) {
            std::uint32_t w[kUnroll][4];
            for (int m = 0; m < kUnroll; ++m) {
              const std::uint64_t i = begin + 4 * (g0 + m * lanes);
              if (vec && i + 4 <= end) {
                const Words4 q = *reinterpret_cast<const Words4*>(words.data() + i);
                for (int k = 0; k < 4; ++k) w[m][k] = q.w[k];
              } else {
                for (int k = 0; k < 4; ++k) w[m][k] = i + k < end ? words(i + k) : 0u;
              }
            }
            for (int m = 0; m < kUnroll; ++m)
              for (int k = 0; k < 4; ++k) acc += nonzero_units(w[m][k]);  // 0 for the zero padding
          }
        },
        c);
    const std::uint64_t len = b + 1 < nb ? bsize : n - b * bsize;
    const std::uint64_t coded = std::uint64_t(c) * (bytes ? 1 : 4) + (c + 7) / 8;
    Kokkos::single(Kokkos::PerThread(t), [&]() { atomic_add_u64(&sum(0), coded < len ? coded : len); });
  }
};
}  // namespace impl

// A lower bound on encode(words as bytes, method, log2_block)'s size: a coded
// block stores its nonzero units (nz * unit bytes) and, above them, a bitmap
// level with at least one nonzero byte per 8 nonzero units: at least
// nz * unit + ceil(nz / 8) bytes, or its raw length when that is less; the
// payload adds kHeaderBytes and 4 bytes per block. Nonzero units are counted
// exactly per block and the bound summed, on the device (in the workspace's
// scalar slot with ws).
template <class ExecSpace>
std::uint64_t coded_lower_bound(const ExecSpace& space,
                                Kokkos::View<const std::uint32_t*, typename ExecSpace::memory_space> words,
                                Method method, int log2_block = kLog2BlockDefault,
                                typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  using WS = pipeline::Workspace<typename ExecSpace::memory_space>;
  const std::uint64_t n_words = words.extent(0), n = n_words * 4;
  KSZ_EXPECTS(log2_block >= kLog2BlockMin && log2_block <= kLog2BlockMax, "lossless: block size 2^", log2_block,
              " out of range");
  if (n == 0) return kHeaderBytes;
  const std::uint64_t bsize = std::uint64_t(1) << log2_block;  // bytes, a multiple of 4
  const std::uint64_t nb = (n + bsize - 1) / bsize;
  const std::uint64_t wpb = bsize / 4;  // words per block
  const bool bytes = method == Method::ZeroBytes;
  std::uint64_t coded = 0;
#if defined(KSZ_HAVE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    if (cuda_spec::lossless_coded_bytes(space, words.data(), n_words, bytes, log2_block, coded))
      return kHeaderBytes + 4 * nb + coded;
#endif
  // A team thread (its vector lanes) per block, eight a team on GPUs (a
  // team of one warp leaves most of an SM idle); each block's bound added
  // atomically (no team reduction).
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  constexpr int per_team = host ? 1 : 8;
  const auto sum = WS::template zeroed<std::uint64_t>(space, ws, WS::kScalar, 1, "ksz::lossless::bound");
  Kokkos::parallel_for("ksz::lossless::count_nonzero",
                       Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>((nb + per_team - 1) / per_team), per_team,
                                                     impl::block_lanes<ExecSpace>()),
                       impl::CodedBound<ExecSpace>{words, n_words, n, wpb, bsize, nb, bytes,
                                                   reinterpret_cast<std::uintptr_t>(words.data()) % 16 == 0,
                                                   impl::block_lanes<ExecSpace>(), sum});
  Kokkos::deep_copy(space, coded, Kokkos::subview(sum, 0));
  space.fence();
  return kHeaderBytes + 4 * nb + coded;
}

// Whether encode(words as bytes, method, log2_block) is bound to give at
// least n_words * 4 bytes (coded_lower_bound), so that a caller keeping the
// pass only where it shrinks the data can skip it (same stream, one read
// instead of the pass).
template <class ExecSpace>
bool cannot_shrink(const ExecSpace& space,
                   Kokkos::View<const std::uint32_t*, typename ExecSpace::memory_space> words, Method method,
                   int log2_block = kLog2BlockDefault,
                   typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  const std::uint64_t n = words.extent(0) * 4;
  return n == 0 || coded_lower_bound<ExecSpace>(space, words, method, log2_block, ws) >= n;
}

// Decodes a payload already in ExecSpace's memory into `out`, which must hold
// exactly the payload's raw length (inspect() reads it). Safe on hostile input:
// reads stay inside the payload, writes inside out. Throws ksz::CorruptStream
// (then out holds partial data).
template <class ExecSpace>
void decode(const ExecSpace& space, Kokkos::View<const std::uint8_t*, typename ExecSpace::memory_space> payload,
            Kokkos::View<std::uint8_t*, typename ExecSpace::memory_space> out,
            typename pipeline::Workspace<typename ExecSpace::memory_space>::Lease* ws = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  const std::uint64_t size = payload.extent(0);
  KSZ_STREAM_CHECK(size >= kHeaderBytes, "lossless payload of ", size, " bytes is shorter than its header");
  Kokkos::View<std::uint8_t*, Kokkos::HostSpace> head("ksz::lossless::header", kHeaderBytes);
  Kokkos::deep_copy(space, head, Kokkos::subview(payload, std::make_pair(std::uint64_t(0), kHeaderBytes)));
  space.fence();
  const Info info = inspect(head.data(), size);
  KSZ_STREAM_CHECK(out.extent(0) == info.raw_bytes, "lossless payload holds ", info.raw_bytes,
                   " bytes, expected ", out.extent(0));
  const std::uint64_t nb = info.blocks, n = info.raw_bytes;
  const std::uint64_t data_start = kHeaderBytes + 4 * nb;
  KSZ_STREAM_CHECK(data_start <= size, "lossless payload truncated in its size table");
  const int unit = info.method == Method::ZeroWords ? 4 : 1;
  using WS = pipeline::Workspace<Mem>;
  const Kokkos::View<std::uint64_t*, Mem> offsets =
      WS::template buffer<std::uint64_t>(ws, WS::kLosslessSizes, nb + 1, "ksz::lossless::offsets");
  const auto status = WS::template zeroed<std::uint32_t>(space, ws, WS::kScalar, 1, "ksz::lossless::status");
  Kokkos::parallel_scan("ksz::lossless::block_offsets", Kokkos::RangePolicy<ExecSpace>(space, 0, nb + 1),
                        impl::BlockOffsets<ExecSpace>{payload, offsets, status, n, nb, info.log2_block});
  std::uint64_t total = 0;
  Kokkos::deep_copy(space, total, Kokkos::subview(offsets, nb));
  auto h_status = Kokkos::create_mirror_view(status);
  Kokkos::deep_copy(space, h_status, status);
  space.fence();
  KSZ_STREAM_CHECK(h_status(0) == 0, "lossless: ", impl::describe_status(h_status(0)));
  KSZ_STREAM_CHECK(total == size - data_start, "lossless payload has ", size - data_start,
                   " bytes of blocks, its size table says ", total);
  if (nb == 0) return;
  const std::uint64_t bsize = std::uint64_t(1) << info.log2_block;
  const std::size_t scratch = 8 * ((impl::levels_of(static_cast<std::uint32_t>(bsize), unit).scratch + 7) / 8);
  Kokkos::parallel_for("ksz::lossless::decode",
                       impl::block_policy(space, nb).set_scratch_size(0, Kokkos::PerTeam(scratch)),
                       impl::DecodeBlocks<ExecSpace>{payload, offsets, out, status, n, data_start, info.log2_block,
                                                     unit});
  Kokkos::deep_copy(space, h_status, status);
  space.fence();
  KSZ_STREAM_CHECK(h_status(0) == 0, "lossless: ", impl::describe_status(h_status(0)));
}

}  // namespace ksz::lossless
