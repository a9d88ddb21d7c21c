// Framed files (FORMAT.md "Framed files"): an array too big to hold in memory,
// compressed as frames, each an ordinary ksz stream of a slab of whole slices
// along the slowest dimension, and a footer that indexes them. The footer
// comes last because the frames' sizes are known only once they are written.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/core/bytes.hpp"
#include "src/core/types.hpp"

namespace ksz::container {

constexpr std::uint8_t kFramedMagic[8] = {0x89, 'K', 'Z', 'F', 0x0D, 0x0A, 0x1A, 0x0A};
constexpr std::uint8_t kFramedEndMagic[8] = {'K', 'Z', 'F', ' ', 'E', 'N', 'D', 0x0A};
constexpr std::uint16_t kFramedMajor = 1, kFramedMinor = 0;
constexpr std::size_t kFramedMagicBytes = 8;
constexpr std::size_t kFramedTrailerBytes = 16;  // u32 footer length, u32 its CRC-32C, end magic
constexpr std::size_t kFramedFixedFooterBytes = 104;
constexpr std::uint64_t kMaxFrames = std::uint64_t(1) << 24;
// The least a framed file can be: magic, a footer of no frames, trailer.
constexpr std::uint64_t kFramedMinBytes = kFramedMagicBytes + kFramedFixedFooterBytes + kFramedTrailerBytes;

struct FrameIndex {
  DType dtype = DType::F32;
  Dims dims;                                   // the whole array
  ErrorMode mode = ErrorMode::ABS;
  PredictorId predictor = PredictorId::Lorenzo;  // as requested (Auto: each frame chose)
  double user_bound = 0;
  double abs_bound = 0;  // resolved over the whole array: every frame's bound is at most this
  double value_min = 0, value_max = 0;  // over the whole array's finite values (0 if none)
  std::uint64_t outliers = 0, verbatim = 0;  // summed over the frames
  std::uint64_t slab = 1;                    // slices of the slowest dimension a frame (the last fewer)
  std::vector<std::uint64_t> lengths;        // each frame's stream bytes, in order

  std::uint64_t frames() const;  // ceil(slowest extent / slab)
  std::uint64_t slice_elements() const;  // elements of one slice of the slowest dimension
  Dims frame_dims(std::uint64_t i) const;
  std::uint64_t frame_first_element(std::uint64_t i) const;
  std::vector<std::uint64_t> frame_offsets() const;  // each frame's first byte in the file
};

// Whether the bytes start a framed file (at least its magic).
bool is_framed(const std::uint8_t* data, std::size_t size);

// The footer and trailer that end a framed file whose frames are idx.lengths.
Bytes write_footer(const FrameIndex& idx);

// The footer's length from a file's last kFramedTrailerBytes (checked against
// the file's size: CorruptStream for a trailer that is not ksz's).
std::uint32_t footer_length(const std::uint8_t* trailer, std::uint64_t file_size);

// Parses and validates the footer (footer_length bytes, then the trailer) of a
// framed file of file_size bytes: checksum, fields, frame count and that the
// frames fill the file exactly. Throws CorruptStream with a one-line reason.
FrameIndex read_footer(const std::uint8_t* footer_and_trailer, std::size_t size, std::uint64_t file_size);

}  // namespace ksz::container
