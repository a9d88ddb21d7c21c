// File input and all-or-nothing file output for the CLI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/bytes.hpp"

namespace ksz::cli {

Bytes read_file(const std::string& path);  // throws InvalidInput

// Writes to a temporary name beside `path` and renames on success, so a
// failed run never leaves a half-written output behind.
void write_file_atomic(const std::string& path, const void* data, std::size_t size);

}  // namespace ksz::cli
