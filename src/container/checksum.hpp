// CRC-32C (Castagnoli), the checksum of every segment and of the header.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ksz::container {
// CRC-32C of size bytes, continuing from crc (0 to start). Uses the CPU's
// crc32 instruction where it has one; crc32c_portable is the table reference.
// From 2 kCrcThreadBytes on, pieces of at least kCrcThreadBytes run on up to
// kCrcMaxThreads threads (the streams' segments are hundreds of MB: one
// thread took 42-44 ms for 212 MiB on an H200 host, four 5.3 ms).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
constexpr std::size_t kCrcThreadBytes = std::size_t(8) << 20, kCrcMaxThreads = 8;
// crc32c on at most `threads` threads (the tests' way to pick a count).
std::uint32_t crc32c_threads(const void* data, std::size_t size, std::uint32_t crc, std::size_t threads);
std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc = 0);
// The CRC-32C of A then B from crc32c(A), crc32c(B) and B's length.
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t len_b);
// memcpy(dst, src, size) and the CRC-32C of the bytes, in one pass: pieces
// that stay in a core's cache are copied then checksummed, from 2
// kCrcThreadBytes on by up to kCopyMaxThreads threads (a range each, which
// also makes each thread fault in its own range of a fresh dst). A 212 MiB
// stream segment took 57 ms as a zeroed vector, a copy and a checksum on an
// H200 host, 12 ms this way into fresh memory on eight threads.
std::uint32_t copy_crc32c(void* dst, const void* src, std::size_t size, std::uint32_t crc = 0);
constexpr std::size_t kCopyMaxThreads = 8;
// What copy_crc32c does to one range, on the caller's thread (crc continued).
std::uint32_t copy_crc32c_one(void* dst, const void* src, std::size_t size, std::uint32_t crc = 0);
}
