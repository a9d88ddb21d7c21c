// Between the API's translation units (ksz.cpp, frames.cpp); not installed.
#pragma once
#include <cstddef>
#include <cstdint>

#include "src/api/ksz.hpp"
#include "src/container/container.hpp"

namespace ksz::impl {

// decompress() of a stream already parsed (and validated) by container::read.
Field decompress_parsed(const container::Parsed& parsed, std::size_t size, Backend backend, Report* report);
// inspect() of a parsed stream.
StreamInfo info_of(const container::Parsed& parsed);

// decompress() and inspect() of a framed file held in memory (frames.cpp).
Field decompress_framed(const std::uint8_t* data, std::size_t size, Backend backend, Report* report);
StreamInfo inspect_framed(const std::uint8_t* data, std::size_t size);

}  // namespace ksz::impl
