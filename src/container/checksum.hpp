// CRC-32C (Castagnoli), the checksum of every segment and of the header.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ksz::container {
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
}
