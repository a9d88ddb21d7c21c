// CRC-32C (Castagnoli), the checksum of every segment and of the header.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ksz::container {
// CRC-32C of size bytes, continuing from crc (0 to start). Uses the CPU's
// crc32 instruction where it has one; crc32c_portable is the table reference.
// From 2 kCrcThreadBytes on, pieces of at least kCrcThreadBytes run on up to
// kCrcMaxThreads threads (the streams' segments are hundreds of MB: one
// thread took 42-44 ms for 212 MiB on an H200 host).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
constexpr std::size_t kCrcThreadBytes = std::size_t(8) << 20, kCrcMaxThreads = 4;
// crc32c on at most `threads` threads (the tests' way to pick a count).
std::uint32_t crc32c_threads(const void* data, std::size_t size, std::uint32_t crc, std::size_t threads);
std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc = 0);
}
