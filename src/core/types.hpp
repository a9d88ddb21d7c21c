// Value types shared by the container, the pipelines and the CLI.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ksz {

// Numeric ids are written into the container: never renumber.
enum class DType : std::uint8_t { F32 = 1, F64 = 2 };
enum class ErrorMode : std::uint8_t { ABS = 1, REL = 2, PW_REL = 3 };
// Auto (API and CLI only, never in a stream): Lorenzo and Interp both run, the
// smaller stream is kept.
enum class PredictorId : std::uint8_t { Auto = 0, Lorenzo = 1, Interp = 2, SZx = 3, ClassicLorenzo = 4 };
enum class CodecId : std::uint8_t { None = 0, Huffman = 1 };
// Lossless pass after the codec (portable/lossless): hierarchical elimination
// of zero bytes (zbe) or zero 32-bit words (zwe) in the Huffman bitstream.
enum class LosslessId : std::uint8_t { None = 0, ZeroBytes = 1, ZeroWords = 2 };

inline std::size_t dtype_size(DType t) { return t == DType::F64 ? 8 : 4; }
const char* to_string(DType t);
const char* to_string(ErrorMode m);
const char* to_string(PredictorId p);
const char* to_string(LosslessId l);  // "none", "zbe", "zwe"

// Extents listed fastest-varying first (x, y, z, w), as SZ3 and cuSZ users
// write them. Unused trailing extents are 1.
struct Dims {
  std::array<std::uint64_t, 4> n{1, 1, 1, 1};
  int rank = 1;  // number of extents the user gave, 1..4

  std::uint64_t count() const { return n[0] * n[1] * n[2] * n[3]; }
  std::string str() const;  // "512x512x512"
};

// Extents a predictor works on: extents of 1 removed, 4D folded into 3D by
// merging the two slowest extents. Fastest first; rank 1..3.
struct Shape3 {
  std::array<std::uint64_t, 3> n{1, 1, 1};
  int rank = 1;
  std::uint64_t count() const { return n[0] * n[1] * n[2]; }
};
Shape3 effective_shape(const Dims& d);

}  // namespace ksz
