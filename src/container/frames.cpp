#include "src/container/frames.hpp"

#include <cmath>
#include <cstring>

#include "src/container/checksum.hpp"
#include "src/container/container.hpp"
#include "src/core/error.hpp"

namespace ksz::container {
namespace {

// Writes into a buffer sized first (vector inserts of a few bytes draw
// g++ 12's -Wstringop-overflow false positives).
class Cursor {
 public:
  explicit Cursor(std::uint8_t* p) : m_p(p) {}
  template <class T>
  void put(T v) {
    std::memcpy(m_p, &v, sizeof(T));  // little-endian hosts only, as container.cpp
    m_p += sizeof(T);
  }
  void bytes(const void* src, std::size_t n) {
    std::memcpy(m_p, src, n);
    m_p += n;
  }

 private:
  std::uint8_t* m_p;
};

template <class T>
T get(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

std::uint64_t FrameIndex::slice_elements() const {
  std::uint64_t s = 1;
  for (int d = 0; d + 1 < dims.rank; ++d) s *= dims.n[d];
  return s;
}

std::uint64_t FrameIndex::frames() const {
  const std::uint64_t last = dims.n[dims.rank - 1];
  return last / slab + (last % slab != 0);
}

Dims FrameIndex::frame_dims(std::uint64_t i) const {
  Dims d = dims;
  const std::uint64_t last = dims.n[dims.rank - 1], first = i * slab;
  d.n[dims.rank - 1] = last - first < slab ? last - first : slab;
  return d;
}

std::uint64_t FrameIndex::frame_first_element(std::uint64_t i) const { return i * slab * slice_elements(); }

std::vector<std::uint64_t> FrameIndex::frame_offsets() const {
  std::vector<std::uint64_t> at(lengths.size());
  std::uint64_t o = kFramedMagicBytes;
  for (std::size_t i = 0; i < lengths.size(); ++i) at[i] = o, o += lengths[i];
  return at;
}

bool is_framed(const std::uint8_t* data, std::size_t size) {
  return size >= kFramedMagicBytes && std::memcmp(data, kFramedMagic, kFramedMagicBytes) == 0;
}

Bytes write_footer(const FrameIndex& idx) {
  KSZ_EXPECTS(idx.lengths.size() == idx.frames(), "framed file: ", idx.lengths.size(), " frames written, ",
              idx.frames(), " expected");
  const std::size_t length = kFramedFixedFooterBytes + 8 * idx.lengths.size();
  Bytes b(length + kFramedTrailerBytes);
  Cursor c(b.data());
  c.put<std::uint16_t>(kFramedMajor);
  c.put<std::uint16_t>(kFramedMinor);
  c.put<std::uint8_t>(static_cast<std::uint8_t>(idx.dtype));
  c.put<std::uint8_t>(static_cast<std::uint8_t>(idx.dims.rank));
  c.put<std::uint8_t>(static_cast<std::uint8_t>(idx.mode));
  c.put<std::uint8_t>(static_cast<std::uint8_t>(idx.predictor));
  for (int d = 0; d < 4; ++d) c.put<std::uint64_t>(idx.dims.n[d]);
  c.put<double>(idx.user_bound);
  c.put<double>(idx.abs_bound);
  c.put<double>(idx.value_min);
  c.put<double>(idx.value_max);
  c.put<std::uint64_t>(idx.outliers);
  c.put<std::uint64_t>(idx.verbatim);
  c.put<std::uint64_t>(idx.slab);
  c.put<std::uint64_t>(idx.lengths.size());
  for (std::uint64_t len : idx.lengths) c.put<std::uint64_t>(len);
  c.put<std::uint32_t>(static_cast<std::uint32_t>(length));
  c.put<std::uint32_t>(crc32c(b.data(), length));
  c.bytes(kFramedEndMagic, sizeof kFramedEndMagic);
  return b;
}

std::uint32_t footer_length(const std::uint8_t* trailer, std::uint64_t file_size) {
  KSZ_STREAM_CHECK(file_size >= kFramedMinBytes, "framed file truncated: ", file_size, " bytes");
  KSZ_STREAM_CHECK(std::memcmp(trailer + 8, kFramedEndMagic, 8) == 0,
                   "framed file truncated or damaged: no end marker in its last bytes");
  const std::uint32_t length = get<std::uint32_t>(trailer);
  KSZ_STREAM_CHECK(length >= kFramedFixedFooterBytes &&
                       length <= file_size - kFramedMagicBytes - kFramedTrailerBytes,
                   "framed file: footer length ", length, " does not fit a ", file_size, "-byte file");
  return length;
}

FrameIndex read_footer(const std::uint8_t* p, std::size_t size, std::uint64_t file_size) {
  KSZ_STREAM_CHECK(size >= kFramedTrailerBytes, "framed file: footer truncated");
  const std::uint32_t length = footer_length(p + size - kFramedTrailerBytes, file_size);
  KSZ_STREAM_CHECK(size == length + kFramedTrailerBytes, "framed file: footer of ", size - kFramedTrailerBytes,
                   " bytes, its trailer says ", length);
  KSZ_STREAM_CHECK(crc32c(p, length) == get<std::uint32_t>(p + length + 4), "framed file: footer checksum mismatch");
  KSZ_STREAM_CHECK(get<std::uint16_t>(p) == kFramedMajor, "framed file: unsupported major version ",
                   get<std::uint16_t>(p));
  FrameIndex idx;
  const std::uint8_t dtype = p[4], rank = p[5], mode = p[6], predictor = p[7];
  KSZ_STREAM_CHECK(dtype == 1 || dtype == 2, "framed file: unknown dtype id ", int(dtype));
  KSZ_STREAM_CHECK(rank >= 1 && rank <= 4, "framed file: rank ", int(rank), " outside 1..4");
  KSZ_STREAM_CHECK(mode >= 1 && mode <= 3, "framed file: unknown error-bound mode id ", int(mode));
  KSZ_STREAM_CHECK(predictor <= 4, "framed file: unknown predictor id ", int(predictor));
  idx.dtype = static_cast<DType>(dtype);
  idx.dims.rank = rank;
  idx.mode = static_cast<ErrorMode>(mode);
  idx.predictor = static_cast<PredictorId>(predictor);
  std::uint64_t count = 1;
  for (int d = 0; d < 4; ++d) {
    const std::uint64_t e = get<std::uint64_t>(p + 8 + 8 * d);
    KSZ_STREAM_CHECK(e >= 1 && (d < rank || e == 1) && e <= kMaxElements / count, "framed file: extent ", d,
                     " is ", e);
    count *= e;
    idx.dims.n[d] = e;
  }
  idx.user_bound = get<double>(p + 40);
  idx.abs_bound = get<double>(p + 48);
  idx.value_min = get<double>(p + 56);
  idx.value_max = get<double>(p + 64);
  KSZ_STREAM_CHECK(std::isfinite(idx.user_bound) && idx.user_bound > 0, "framed file: bad bound ", idx.user_bound);
  KSZ_STREAM_CHECK(std::isfinite(idx.abs_bound) && idx.abs_bound >= 0, "framed file: bad resolved bound ",
                   idx.abs_bound);
  KSZ_STREAM_CHECK(std::isfinite(idx.value_min) && std::isfinite(idx.value_max) && idx.value_min <= idx.value_max,
                   "framed file: bad value range");
  idx.outliers = get<std::uint64_t>(p + 72);
  idx.verbatim = get<std::uint64_t>(p + 80);
  idx.slab = get<std::uint64_t>(p + 88);
  const std::uint64_t frames = get<std::uint64_t>(p + 96);
  KSZ_STREAM_CHECK(idx.slab >= 1 && idx.slab <= idx.dims.n[rank - 1], "framed file: ", idx.slab,
                   " slices a frame of ", idx.dims.n[rank - 1]);
  KSZ_STREAM_CHECK(frames == idx.frames() && frames <= kMaxFrames, "framed file: ", frames, " frames, its extents ",
                   "and slab make ", idx.frames());
  KSZ_STREAM_CHECK(length == kFramedFixedFooterBytes + 8 * frames, "framed file: footer of ", length,
                   " bytes for ", frames, " frames");
  idx.lengths.resize(frames);
  std::uint64_t sum = 0;
  const std::uint64_t room = file_size - kFramedMagicBytes - length - kFramedTrailerBytes;
  for (std::uint64_t i = 0; i < frames; ++i) {
    const std::uint64_t len = get<std::uint64_t>(p + kFramedFixedFooterBytes + 8 * i);
    KSZ_STREAM_CHECK(len >= 1 && len <= room - sum, "framed file: frame ", i, " of ", len,
                     " bytes runs past the frames' room");
    sum += len;
    idx.lengths[i] = len;
  }
  KSZ_STREAM_CHECK(sum == room, "framed file: frames take ", sum, " bytes, the file holds ", room);
  return idx;
}

}  // namespace ksz::container
