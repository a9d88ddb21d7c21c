// ksz public C++ API: compress and decompress host buffers on any built
// backend. Device-resident use goes through src/pipeline/lorenzo_pipeline.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/backends.hpp"
#include "src/core/bytes.hpp"
#include "src/core/error.hpp"
#include "src/core/types.hpp"

namespace ksz {

struct Options {
  ErrorMode mode = ErrorMode::REL;           // how `bound` is read
  double bound = 1e-4;                       // > 0; relative to the value range for REL
  PredictorId predictor = PredictorId::Lorenzo;
  // Quantization radius: 2*radius Huffman symbols. 0 = automatic: 512
  // (kDefaultRadius) for Lorenzo, chosen from the residuals for interp.
  std::uint32_t radius = 0;
  std::uint32_t huffman_chunk = 4096;        // symbols per independently decodable chunk
  // Sub-chunk (format 1.2): the bit length of every run of this many symbols
  // is stored so decoders start a thread per run. 0 = none; at most 2730
  // (huffman::kMaxSubchunk). Where those lengths would be over 1/32 of the
  // rest of the stream (high ratios), the writer stores runs of the smallest
  // multiple of it that brings them under (or of the fewest runs a chunk
  // allows), where GPU decoders keep enough runs: pipeline_common.hpp,
  // writer_subchunk.
  std::uint32_t huffman_subchunk = 512;
  Backend backend = Backend::Default;        // where the pipeline runs
  // Pass on the Huffman bitstream (--lossless): zbe by default, none or zwe.
  // Stored only where it shrinks the bitstream; SZx streams ignore it.
  LosslessId lossless = LosslessId::ZeroBytes;
  std::uint32_t szx_block = 128;             // SZx block size (--block)
  bool classic = false;                      // ParaSZ classic pipeline on reconstructed values (--pipeline classic)
  std::uint32_t check_width = 384;           // ParaSZ progress-control batch (--check-width)
  std::uint32_t threads = 0;                 // classic pipeline workers; 0 = OMP_NUM_THREADS, else all cores
};

constexpr std::uint32_t kDefaultRadius = 512;
// The radius of a pipeline that does not choose one itself.
inline std::uint32_t fixed_radius(const Options& o) { return o.radius ? o.radius : kDefaultRadius; }

struct StageTime {
  std::string name;
  double seconds = 0;
};

// What a run measured. GB/s figures divide the uncompressed size by time.
struct Report {
  Backend backend = Backend::Default;
  std::vector<StageTime> stages;   // in pipeline order, device fenced in each
  double total_seconds = 0;        // whole call, host<->device copies included
  double device_seconds = 0;       // stages only (data already on the device)
  std::uint64_t elements = 0;
  std::uint64_t input_bytes = 0;   // uncompressed
  std::uint64_t output_bytes = 0;  // compressed
  std::uint64_t outliers = 0;      // residuals beyond the radius
  std::uint64_t verbatim = 0;      // elements stored exactly (NaN, Inf, huge, rounding)
  std::uint32_t radius = 0;        // compress: quantization radius used (0: no Huffman stage)
  std::uint64_t huffman_bytes = 0;   // compress: Huffman bitstream before the lossless pass (0: no Huffman)
  std::uint64_t lossless_bytes = 0;  // compress: the same segment as stored
  LosslessId lossless = LosslessId::None;  // compress: the pass stored (none when it did not shrink the bitstream)
  PredictorId predictor = PredictorId::Auto;  // compress: the stream's predictor (what --predictor auto chose)
  std::uint64_t auto_lorenzo_bytes = 0, auto_interp_bytes = 0;  // compress with auto: both candidates' sizes
  double abs_bound = 0;            // the resolved absolute bound
  double value_min = 0, value_max = 0;
};

// Compresses `data` (dims.count() elements of dtype, fastest dimension first).
// Throws InvalidInput for bad arguments, before any work.
Bytes compress(const void* data, DType dtype, const Dims& dims, const Options& opt, Report* report = nullptr);

struct Field {
  DType dtype = DType::F32;
  Dims dims;
  Bytes bytes;  // dims.count() * dtype_size(dtype)
};

// Decompresses a whole stream, or a framed file held in memory (frames.hpp).
// Throws CorruptStream for anything not a valid ksz stream; never returns a
// partial field.
Field decompress(const std::uint8_t* stream, std::size_t size, Backend backend = Backend::Default,
                 Report* report = nullptr);

// Header facts without decompressing (validates the header and checksums; of
// a framed file, the footer's facts and every frame's checksums).
struct StreamInfo {
  DType dtype;
  Dims dims;
  ErrorMode mode;
  PredictorId predictor;
  double user_bound, abs_bound;
  double value_min, value_max;
  std::uint64_t outliers, verbatim;
  LosslessId lossless;  // the pass on the Huffman bitstream (PW_REL: the inner stream's)
  std::uint32_t radius = 0;  // quantization radius (0: no Huffman stage)
  std::uint32_t huffman_chunk = 0, huffman_subchunk = 0;  // codes a chunk, a stored run (0: none); PW_REL: inner
  std::string detail;        // predictor choices, e.g. interp's splines and pass order
};
StreamInfo inspect(const std::uint8_t* stream, std::size_t size);

// Checks caller arguments as compress() does (dims vs. element count, bound).
void validate(DType dtype, const Dims& dims, const Options& opt);

std::string version_string();  // "0.1.0 (git abc123, Kokkos 3.4.1, backends: openmp serial)"

}  // namespace ksz
