// Container v1: magic, version, size-prefixed header, segment table, payload.
// The byte layout is specified in FORMAT.md beside this file; keep them in step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/core/bytes.hpp"
#include "src/core/types.hpp"

namespace ksz::container {

constexpr std::uint16_t kFormatMajor = 1;
// The writer stamps the lowest minor version that can read the stream: 1 when
// a lossless pass is on (here or in a nested stream), else 0.
constexpr std::uint16_t kFormatMinor = 1;
constexpr std::uint8_t kMagic[8] = {0x89, 'K', 'S', 'Z', 0x0D, 0x0A, 0x1A, 0x0A};
// Hostile-header guards: no field may ask for more than this many elements.
constexpr std::uint64_t kMaxElements = std::uint64_t(1) << 40;

// Header parameter keys (TLV) and segment ids. Numeric values are part of the
// format. Ranges by method, so methods grow without colliding:
//   1-15 Lorenzo/Huffman, 16-31 SZx, 32-47 interpolation, 48-63 classic
//   pipeline and PW_REL, 64-79 lossless passes.
enum class Param : std::uint16_t {
  QuantStep = 1,       // f64: quantization step (2 x abs bound, except degenerate fields)
  Radius = 2,          // u32: quantization radius; codes are [0, 2*radius)
  LorenzoChunk = 3,    // u32[3]: prediction chunk extents, fastest first
  HuffmanChunk = 4,    // u32: symbols per independently decodable Huffman chunk
  OutlierCount = 5,    // u64
  VerbatimCount = 6,   // u64
  HuffmanSubchunk = 7, // u32: symbols per sub-chunk (format 1.2, with segment 8)
  // PW_REL (log transform), FORMAT.md "PW_REL"
  PwZeroThreshold = 56,  // f64: transformed values below it decode to 0
  PwSignMode = 57,       // u32: 0 all non-negative, 1 all negative, 2 sign bitmap segment
  PwLogBound = 58,       // f64: absolute bound of the transformed (log2) field
  // 32-47: interpolation (G-Interp), see FORMAT.md
  InterpAnchorStride = 32,  // u32: anchor grid stride S (power of two, 2..512)
  InterpAlpha = 33,         // f64: level-wise bound reduction alpha (>= 1)
  InterpOrder = 34,         // u32[3]: dimension pass order within a level
  InterpNatural = 35,       // u32[3]: spline per dimension: 0 = not-a-knot cubic, 1 = natural cubic, 2 = linear
  SzxBlock = 16,           // u32: SZx block size, 1..4096
  SzxConstantBlocks = 17,  // u64: informative
  SzxVerbatimBlocks = 18,  // u64: informative
};

// Segment ids. Numeric values are part of the format.
enum class SegmentId : std::uint16_t {
  HuffmanLengths = 1,       // u8 per symbol: canonical code lengths
  HuffmanChunkOffsets = 2,  // u64 per chunk + 1: word offsets into HuffmanWords
  HuffmanWords = 3,         // u32 words, MSB-first bit packing
  OutlierIndex = 4,         // u32 or u64 (u64 when elements > 2^32) per outlier, increasing
  OutlierValue = 5,         // i32 per outlier: the prediction residual
  VerbatimIndex = 6,        // as OutlierIndex
  VerbatimValue = 7,        // f32 or f64 per verbatim element: the exact input bits
  HuffmanRunBits = 8,       // u16 per sub-chunk but each chunk's last: its bit length (format 1.2)
  // Classic (ParaSZ) pipeline, FORMAT.md "Classic Lorenzo"
  ClassicUnpredictable = 48,  // f32 or f64 per code-0 element, in element order
  // PW_REL, FORMAT.md "PW_REL"
  PwInnerStream = 56,  // a whole ksz stream (ABS, f64) of the log2 field
  PwSignBits = 57,     // ceil(n/8) bytes, bit i%8 of byte i/8 = sign of element i
  SzxKinds = 16,            // u8 per block: 0 constant, 255 verbatim, else required bits
  SzxMedians = 17,          // f32 or f64 per block
  SzxLeadCodes = 18,        // 2 bits per value of coded blocks
  SzxMidBytes = 19,         // the committed bytes of coded blocks
  SzxVerbatim = 20,         // f32 or f64 per value of verbatim blocks
  SzxMidRuns = 21,          // optional (format 1.3): u16 mid-bytes per run of blocks
};

struct Header {
  DType dtype = DType::F32;
  Dims dims;
  ErrorMode mode = ErrorMode::ABS;
  PredictorId predictor = PredictorId::Lorenzo;
  CodecId codec = CodecId::Huffman;
  LosslessId lossless = LosslessId::None;
  double user_bound = 0;   // as the user gave it (relative for REL/PW_REL)
  double abs_bound = 0;    // resolved absolute bound: the contract every element meets
  double value_min = 0;    // over finite input values (0 if none)
  double value_max = 0;
  std::map<std::uint16_t, std::vector<std::uint8_t>> params;  // TLV, unknown keys kept

  void set_u32(Param k, std::uint32_t v);
  void set_u64(Param k, std::uint64_t v);
  void set_f64(Param k, double v);
  void set_u32s(Param k, const std::vector<std::uint32_t>& v);
  // Getters throw CorruptStream if a required key is missing or malformed.
  std::uint32_t u32(Param k) const;
  std::uint64_t u64(Param k) const;
  double f64(Param k) const;
  std::vector<std::uint32_t> u32s(Param k, std::size_t count) const;
};

// Writes a segment's size bytes at dst, its place in the stream being built,
// and returns their CRC-32C (crc32c): bytes that are not in host memory (a
// device's) go there with no host copy in between, checksummed as they land.
using SegmentFill = std::function<std::uint32_t(std::uint8_t* dst)>;

struct Segment {
  SegmentId id;
  const std::uint8_t* data;
  std::uint64_t size;
  SegmentFill fill = {};  // write() only: where set, it writes the bytes and data is not read
};

// Serializes header + segments into one stream.
Bytes write(const Header& h, const std::vector<Segment>& segments);

struct Parsed {
  Header header;
  std::vector<Segment> segments;  // pointing into the caller's buffer
  const Segment* find(SegmentId id) const;   // nullptr if absent
  const Segment& require(SegmentId id) const;  // throws CorruptStream if absent
};

// Validates magic, version, sizes, header fields and every checksum.
// Throws CorruptStream with a one-line reason; never reads outside [data, data+size).
Parsed read(const std::uint8_t* data, std::size_t size);

}  // namespace ksz::container
