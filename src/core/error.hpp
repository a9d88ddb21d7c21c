// Error handling shared by every stage. Host code throws; device code never
// aborts on data (it sets bits in a status word the host checks after a fence).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace ksz {

// Bad input from the caller (arguments, files, streams). Message is one line.
class InvalidInput : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A compressed stream that is truncated, corrupted or not ours.
class CorruptStream : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace impl {
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace impl
}  // namespace ksz

// Precondition on caller-provided input: throws ksz::InvalidInput.
#define KSZ_EXPECTS(cond, ...)                                          \
  do {                                                                  \
    if (!(cond)) throw ::ksz::InvalidInput(::ksz::impl::concat(__VA_ARGS__)); \
  } while (0)

// Consistency check on a stream being decoded: throws ksz::CorruptStream.
#define KSZ_STREAM_CHECK(cond, ...)                                     \
  do {                                                                  \
    if (!(cond)) throw ::ksz::CorruptStream(::ksz::impl::concat("corrupt stream: ", __VA_ARGS__)); \
  } while (0)
