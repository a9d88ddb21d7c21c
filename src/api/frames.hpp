// Files bigger than memory: compress and decompress raw files frame by frame
// (src/container/FORMAT.md "Framed files"). A frame is an ordinary ksz stream
// of a slab of whole slices along the slowest dimension, compressed and
// decompressed with the public API (ksz.hpp), so every backend, predictor
// and bound works as it does on a whole array; the bound is the whole
// array's (REL resolves over the whole file's value range, found by a first
// pass over it). The next frame is read, and the last one written, while one
// is compressed or decompressed: two frames' values and two frames' streams
// are held at a time, whatever the file's size. Outputs are
// written beside their name and renamed when whole, so a failed run leaves
// nothing behind.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "src/api/ksz.hpp"

namespace ksz {

struct FrameOptions {
  // Raw bytes a frame at most, rounded down to whole slices (at least one; for
  // SZx to whole blocks where a frame holds several). 0: automatic: the array
  // as one ordinary stream where it takes at most a quarter of the memory
  // budget (memory_budget), else frames of an eighth of it, 1 GiB at most.
  std::uint64_t frame_bytes = 0;
  // After each frame: what is running ("file value range", "compressing",
  // "decompressing"), frames done, frames in all.
  std::function<void(const char* what, std::uint64_t done, std::uint64_t total)> progress;
  // compress_file: each frame's raw values and stream once it is compressed
  // (the CLI's --report decompresses and checks them there).
  std::function<void(const void* raw, const Bytes& stream, const Dims& frame_dims, std::uint64_t first_element)>
      on_frame;
};

struct FileResult {
  bool framed = false;            // false: one ordinary stream
  std::uint64_t frames = 1;
  std::uint64_t frame_bytes = 0;  // raw bytes of a whole frame (the whole array when not framed)
  std::uint64_t file_bytes = 0;   // the output's size
  double abs_bound = 0;           // compress: the whole array's resolved bound
  double value_min = 0, value_max = 0;  // compress: over the whole array's finite values (0 if none)
};

// Compresses the raw little-endian file `in` (dims.count() values of dtype)
// to `out`. Throws InvalidInput for bad arguments or a file of the wrong size
// before anything is written. report (optional): the frames' stages summed,
// plus "read file" and "write file" (waits on the file system), "file value
// range" (REL's first pass); total_seconds the whole call.
FileResult compress_file(const std::string& in, const std::string& out, DType dtype, const Dims& dims,
                         const Options& opt, const FrameOptions& frames = {}, Report* report = nullptr);

// Decompresses `in`, an ordinary stream or a framed file, to the raw file
// `out`, a frame at a time. Throws CorruptStream for anything not a valid
// stream or whose frames disagree with its footer; never leaves `out` behind
// half written.
FileResult decompress_file(const std::string& in, const std::string& out, Backend backend = Backend::Default,
                           const FrameOptions& frames = {}, Report* report = nullptr);

// A framed file written from a stream of slices whose count is not known
// before (an instrument's images, a simulation's time steps): each frame of
// frame_dims is compressed as soon as it fills and written while the next
// fills. Under ABS or PW_REL only (a REL bound needs the whole array's range
// first: compress_file). Unfinished (an error, or never finish()ed), it
// removes what it wrote.
class FrameWriter {
 public:
  // frame_dims: a frame's extents, the slowest one the slices it holds (the
  // array's slowest extent grows by append; the last frame may hold fewer).
  // Throws InvalidInput for bad arguments, before anything is written.
  FrameWriter(const std::string& path, DType dtype, const Dims& frame_dims, const Options& opt,
              const FrameOptions& frames = {});
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;
  ~FrameWriter();
  // Appends `slices` whole slices: slices x (frame_dims' other extents)
  // values of dtype at data (copied where they do not fill a frame alone).
  void append(const void* data, std::uint64_t slices);
  // Writes the last frame and the footer and puts the file in place. At
  // least one slice must have been appended.
  FileResult finish(Report* report = nullptr);

 private:
  struct State;
  static void append_slices(State& st, const void* data, std::uint64_t slices);
  State* m_state;
};

// inspect() of a file: a framed file's footer and first frame only are read
// (frames: the frame count, 0 for an ordinary stream; slab: slices a frame).
struct FileInfo {
  StreamInfo info;
  std::uint64_t frames = 0, slab = 0;
  std::uint64_t file_bytes = 0;
};
FileInfo inspect_file(const std::string& path);

// Adds a frame's report into a file's: stages summed by name (in the order
// first seen), counts summed.
void merge_report(Report& into, const Report& frame);

// Bytes a compression may plan to hold: the host's physical memory, and on
// CUDA the device's if smaller; at most KSZ_MEMORY_MB MiB where that is set.
std::uint64_t memory_budget(Backend backend);

}  // namespace ksz
