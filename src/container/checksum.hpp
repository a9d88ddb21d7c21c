// CRC-32C (Castagnoli), the checksum of every segment and of the header.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ksz::container {
// CRC-32C of size bytes, continuing from crc (0 to start). Uses the CPU's
// crc32 instruction where it has one; crc32c_portable is the table reference.
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc = 0);
}
