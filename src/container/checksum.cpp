#include "src/container/checksum.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>
#include <vector>

#include "src/core/split_threads.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define KSZ_CRC32C_HW 1
#endif

namespace ksz::container {
namespace {
// Slicing-by-8 tables for the reflected polynomial 0x82F63B78.
struct Tables {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  Tables() {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};
const Tables& tables() {
  static const Tables tb;
  return tb;
}

// The register update is linear: the register after data D from r is
// r x^(8|D|) + (D's from 0), modulo the polynomial. So pieces of a buffer
// can run apart (interleaved chains, threads) and be joined.
constexpr std::uint32_t kPoly = 0x82F63B78u;
// a b modulo the polynomial, both reflected (bit 31 is x^0); a != 0.
std::uint32_t mult_mod(std::uint32_t a, std::uint32_t b) {
  std::uint32_t m = 1u << 31, p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = b & 1 ? (b >> 1) ^ kPoly : b >> 1;
  }
  return p;
}
// x^(8 n) modulo the polynomial: what n more bytes multiply a register by.
std::uint32_t x8n_mod(std::uint64_t n) {
  std::uint32_t sq = 1u << 23, p = 1u << 31;  // x^8, x^0
  for (; n; n >>= 1) {
    if (n & 1) p = mult_mod(sq, p);
    sq = mult_mod(sq, sq);
  }
  return p;
}

#if defined(KSZ_CRC32C_HW)
// SSE4.2's crc32 instruction computes exactly this CRC (Castagnoli,
// reflected): 8 bytes a step, several times the table's speed. Chosen at run
// time; the table version below stays the reference (the tests pin both).
//
// The instruction's latency is three cycles and its throughput one a cycle,
// so a long buffer runs as three interleaved thirds from registers ~crc, 0
// and 0, joined as above. 212 MB took 34 ms as one chain and 19 ms as three
// on the dev VM.
constexpr std::size_t kInterleaveFrom = 3 * 4096;
__attribute__((target("sse4.2"))) std::uint32_t crc32c_hw(const unsigned char* p, std::size_t size,
                                                           std::uint32_t crc) {
  std::uint64_t c = ~crc;
  if (size >= kInterleaveFrom) {
    const std::size_t third = size / 24 * 8;
    const unsigned char *q = p + third, *r = q + third;
    std::uint64_t c1 = 0, c2 = 0;
    for (std::size_t i = 0; i < third; i += 8) {
      std::uint64_t a, b, d;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, q + i, 8);
      std::memcpy(&d, r + i, 8);
      c = _mm_crc32_u64(c, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, d);
    }
    const std::uint32_t shift = x8n_mod(third);
    c = mult_mod(shift, mult_mod(shift, static_cast<std::uint32_t>(c)) ^ static_cast<std::uint32_t>(c1)) ^
        static_cast<std::uint32_t>(c2);
    p += 3 * third;
    size -= 3 * third;
  }
  while (size >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    size -= 8;
  }
  std::uint32_t c32 = static_cast<std::uint32_t>(c);
  while (size--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
bool have_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

// One thread's CRC: the instruction where the CPU has it, else the tables.
std::uint32_t crc32c_one(const void* data, std::size_t size, std::uint32_t crc) {
#if defined(KSZ_CRC32C_HW)
  if (have_sse42()) return crc32c_hw(static_cast<const unsigned char*>(data), size, crc);
#endif
  return crc32c_portable(data, size, crc);
}
}  // namespace

namespace {
// Threads for a buffer of `size` bytes: at most `most` and the machine's
// cores, a piece of at least kCrcThreadBytes each (1: the caller alone).
std::size_t threads_for(std::size_t size, std::size_t most) {
  if (size < 2 * kCrcThreadBytes) return 1;  // (the core count is a file read on Linux)
  static const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return std::min<std::size_t>({most, hw, size / kCrcThreadBytes});
}
// The CRC of `size` bytes as `threads` pieces (the last also taking what the
// others leave; `align` divides the others' length): piece(at, len, from) is
// the CRC of the piece continued from `from`, each on a thread of its own but
// the first (from crc; the others from 0), joined in order by crc32c_combine.
template <class Piece>
std::uint32_t crc_of_pieces(std::size_t size, std::size_t threads, std::size_t align, std::uint32_t crc, Piece piece) {
  const std::size_t per = size / threads / align * align, last = size - (threads - 1) * per;
  const auto len = [&](std::size_t k) { return k + 1 == threads ? last : per; };
  std::vector<std::uint32_t> crcs(threads);
  split_threads(threads, [&](std::size_t k) { crcs[k] = piece(k * per, len(k), k == 0 ? crc : 0u); });
  std::uint32_t r = crcs[0];
  for (std::size_t k = 1; k < threads; ++k) r = crc32c_combine(r, crcs[k], len(k));
  return r;
}
}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) {
  return crc32c_threads(data, size, crc, threads_for(size, kCrcMaxThreads));
}

std::uint32_t crc32c_threads(const void* data, std::size_t size, std::uint32_t crc, std::size_t threads) {
  threads = std::min(threads, size / kCrcThreadBytes);
  if (threads < 2) return crc32c_one(data, size, crc);
  const auto* p = static_cast<const unsigned char*>(data);
  return crc_of_pieces(size, threads, 64, crc,
                       [p](std::size_t at, std::size_t len, std::uint32_t from) { return crc32c_one(p + at, len, from); });
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t len_b) {
  // With registers: crc(A B) = ~(~crc(A) x^(8|B|) + B's register from 0), and
  // crc(B) = ~(~0 x^(8|B|) + B's from 0); the ~0 terms cancel (linearity).
  return len_b == 0 ? crc_a : mult_mod(x8n_mod(len_b), crc_a) ^ crc_b;
}

std::uint32_t copy_crc32c_one(void* dst, const void* src, std::size_t size, std::uint32_t crc) {
  constexpr std::size_t kPiece = std::size_t(256) << 10;  // copied, then read again from cache
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  for (std::size_t at = 0; at < size; at += kPiece) {
    const std::size_t len = std::min(kPiece, size - at);
    std::memcpy(d + at, s + at, len);
    crc = crc32c_one(d + at, len, crc);
  }
  return crc;
}

std::uint32_t copy_crc32c(void* dst, const void* src, std::size_t size, std::uint32_t crc) {
  const std::size_t threads = threads_for(size, kCopyMaxThreads);
  if (threads < 2) return copy_crc32c_one(dst, src, size, crc);
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  return crc_of_pieces(size, threads, 4096, crc, [d, s](std::size_t at, std::size_t len, std::uint32_t from) {
    return copy_crc32c_one(d + at, s + at, len, from);
  });
}

std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc) {
  const auto& t = tables().t;
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  while (size >= 8) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);  // the format is little-endian, as are our hosts
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
  return ~crc;
}
}  // namespace ksz::container
