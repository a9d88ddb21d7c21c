#include "src/container/container.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "src/container/checksum.hpp"
#include "src/core/error.hpp"
#include "src/core/host_memory.hpp"

namespace ksz::container {
namespace {

constexpr std::size_t kPrefixBytes = 16;      // magic, major, minor, header size
constexpr std::size_t kFixedHeaderBytes = 72;  // see FORMAT.md
constexpr std::size_t kSegmentEntryBytes = 32;
constexpr std::uint32_t kMaxHeaderBytes = 1u << 20;
constexpr std::uint32_t kMaxSegments = 4096;

class Writer {
 public:
  Bytes buf;
  template <class T>
  void put(T v) {
    std::uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (static_assert in read)
    buf.insert(buf.end(), b, b + sizeof(T));
  }
  void bytes(const void* p, std::size_t n) {
    auto* c = static_cast<const std::uint8_t*>(p);
    buf.insert(buf.end(), c, c + n);
  }
};

class Reader {
 public:
  Reader(const std::uint8_t* p, std::size_t n, const char* what) : m_p(p), m_n(n), m_what(what) {}
  template <class T>
  T get() {
    KSZ_STREAM_CHECK(m_pos + sizeof(T) <= m_n, m_what, " truncated");
    T v;
    std::memcpy(&v, m_p + m_pos, sizeof(T));
    m_pos += sizeof(T);
    return v;
  }
  const std::uint8_t* take(std::size_t n) {
    KSZ_STREAM_CHECK(n <= m_n - m_pos, m_what, " truncated");
    const std::uint8_t* r = m_p + m_pos;
    m_pos += n;
    return r;
  }
  std::size_t pos() const { return m_pos; }
  std::size_t left() const { return m_n - m_pos; }

 private:
  const std::uint8_t* m_p;
  std::size_t m_n;
  std::size_t m_pos = 0;
  const char* m_what;
};

template <class T>
std::vector<std::uint8_t> to_bytes(const T* v, std::size_t n) {
  std::vector<std::uint8_t> b(n * sizeof(T));
  std::memcpy(b.data(), v, b.size());
  return b;
}

void encode_header_body(Writer& w, const Header& h) {
  w.put<std::uint8_t>(static_cast<std::uint8_t>(h.dtype));
  w.put<std::uint8_t>(static_cast<std::uint8_t>(h.dims.rank));
  w.put<std::uint8_t>(static_cast<std::uint8_t>(h.mode));
  w.put<std::uint8_t>(static_cast<std::uint8_t>(h.predictor));
  w.put<std::uint8_t>(static_cast<std::uint8_t>(h.codec));
  w.put<std::uint8_t>(static_cast<std::uint8_t>(h.lossless));
  w.put<std::uint16_t>(0);
  for (auto e : h.dims.n) w.put<std::uint64_t>(e);
  w.put<double>(h.user_bound);
  w.put<double>(h.abs_bound);
  w.put<double>(h.value_min);
  w.put<double>(h.value_max);
  for (const auto& [key, val] : h.params) {
    w.put<std::uint16_t>(key);
    w.put<std::uint16_t>(static_cast<std::uint16_t>(val.size()));
    w.bytes(val.data(), val.size());
  }
}

Header decode_header_body(const std::uint8_t* p, std::size_t n) {
  Reader r(p, n, "header");
  Header h;
  auto dtype = r.get<std::uint8_t>();
  KSZ_STREAM_CHECK(dtype == 1 || dtype == 2, "unknown dtype id ", int(dtype));
  h.dtype = static_cast<DType>(dtype);
  auto rank = r.get<std::uint8_t>();
  KSZ_STREAM_CHECK(rank >= 1 && rank <= 4, "rank ", int(rank), " out of range");
  h.dims.rank = rank;
  auto mode = r.get<std::uint8_t>();
  KSZ_STREAM_CHECK(mode >= 1 && mode <= 3, "unknown error-bound mode id ", int(mode));
  h.mode = static_cast<ErrorMode>(mode);
  auto pred = r.get<std::uint8_t>();
  KSZ_STREAM_CHECK(pred >= 1 && pred <= 4, "unknown predictor id ", int(pred));
  h.predictor = static_cast<PredictorId>(pred);
  auto codec = r.get<std::uint8_t>();
  KSZ_STREAM_CHECK(codec <= 1, "unknown codec id ", int(codec));
  h.codec = static_cast<CodecId>(codec);
  auto lossless = r.get<std::uint8_t>();
  KSZ_STREAM_CHECK(lossless <= 2, "unknown lossless pass id ", int(lossless),
                   " (this ksz reads 0 = none, 1 = zbe, 2 = zwe)");
  h.lossless = static_cast<LosslessId>(lossless);
  r.get<std::uint16_t>();
  std::uint64_t count = 1;
  for (int i = 0; i < 4; ++i) {
    auto e = r.get<std::uint64_t>();
    KSZ_STREAM_CHECK(e >= 1 && e <= kMaxElements, "extent ", i, " = ", e, " out of range");
    KSZ_STREAM_CHECK(i < rank || e == 1, "extent beyond rank is not 1");
    KSZ_STREAM_CHECK(count <= kMaxElements / e, "element count exceeds 2^40");
    count *= e;
    h.dims.n[i] = e;
  }
  h.user_bound = r.get<double>();
  h.abs_bound = r.get<double>();
  h.value_min = r.get<double>();
  h.value_max = r.get<double>();
  KSZ_STREAM_CHECK(std::isfinite(h.user_bound) && h.user_bound > 0, "bound is not a positive number");
  KSZ_STREAM_CHECK(std::isfinite(h.abs_bound) && h.abs_bound >= 0, "resolved bound is not a number >= 0");
  while (r.left() > 0) {
    auto key = r.get<std::uint16_t>();
    auto len = r.get<std::uint16_t>();
    const std::uint8_t* v = r.take(len);
    KSZ_STREAM_CHECK(h.params.count(key) == 0, "header parameter ", key, " repeated");
    h.params[key] = std::vector<std::uint8_t>(v, v + len);
  }
  return h;
}

}  // namespace

void Header::set_u32(Param k, std::uint32_t v) { params[std::uint16_t(k)] = to_bytes(&v, 1); }
void Header::set_u64(Param k, std::uint64_t v) { params[std::uint16_t(k)] = to_bytes(&v, 1); }
void Header::set_f64(Param k, double v) { params[std::uint16_t(k)] = to_bytes(&v, 1); }
void Header::set_u32s(Param k, const std::vector<std::uint32_t>& v) {
  params[std::uint16_t(k)] = to_bytes(v.data(), v.size());
}

namespace {
const std::vector<std::uint8_t>& param_bytes(const Header& h, Param k, std::size_t size) {
  auto it = h.params.find(std::uint16_t(k));
  KSZ_STREAM_CHECK(it != h.params.end(), "header parameter ", std::uint16_t(k), " missing");
  KSZ_STREAM_CHECK(it->second.size() == size, "header parameter ", std::uint16_t(k), " has size ",
                   it->second.size(), ", expected ", size);
  return it->second;
}
template <class T>
T param_value(const Header& h, Param k) {
  T v;
  std::memcpy(&v, param_bytes(h, k, sizeof(T)).data(), sizeof(T));
  return v;
}
}  // namespace

std::uint32_t Header::u32(Param k) const { return param_value<std::uint32_t>(*this, k); }
std::uint64_t Header::u64(Param k) const { return param_value<std::uint64_t>(*this, k); }
double Header::f64(Param k) const { return param_value<double>(*this, k); }
std::vector<std::uint32_t> Header::u32s(Param k, std::size_t count) const {
  const auto& b = param_bytes(*this, k, count * 4);
  std::vector<std::uint32_t> v(count);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

Bytes write(const Header& h, const std::vector<Segment>& segments) {
  Writer body;
  encode_header_body(body, h);
  KSZ_EXPECTS(body.buf.size() <= kMaxHeaderBytes, "header too large");
  KSZ_EXPECTS(segments.size() <= kMaxSegments, "too many segments");

  std::uint64_t offset = kPrefixBytes + body.buf.size() + 4 + kSegmentEntryBytes * segments.size() + 4;
  std::uint64_t total = offset;
  for (const auto& s : segments) total += s.size;

  // Minor 1 added the lossless pass (header byte 5); a nested stream (PW_REL's
  // segment 56) needs what its own header says.
  std::uint16_t minor = h.lossless == LosslessId::None ? 0 : 1;
  for (const auto& s : segments) {
    if (s.id != SegmentId::PwInnerStream || s.size < kPrefixBytes) continue;
    std::uint16_t m;
    std::memcpy(&m, s.data + 10, 2);
    if (m > minor && m <= kFormatMinor) minor = m;
  }

  Writer w;
  w.buf.reserve(total);
  advise_huge_pages(w.buf.data(), total);  // a stream of hundreds of MiB: its page faults were most of this call
  w.bytes(kMagic, sizeof kMagic);
  w.put<std::uint16_t>(kFormatMajor);
  w.put<std::uint16_t>(minor);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(body.buf.size()));
  w.bytes(body.buf.data(), body.buf.size());
  w.put<std::uint32_t>(static_cast<std::uint32_t>(segments.size()));
  // The checksums are known once the bytes are in place (each segment's is
  // worked out as it is copied or filled): the table's entries, then the
  // header's checksum, are patched after the data.
  std::vector<std::size_t> crc_at;  // each segment's checksum's place in the table
  for (const auto& s : segments) {
    w.put<std::uint16_t>(static_cast<std::uint16_t>(s.id));
    w.put<std::uint16_t>(0);
    crc_at.push_back(w.buf.size());
    w.put<std::uint32_t>(0u);
    w.put<std::uint64_t>(offset);
    w.put<std::uint64_t>(s.size);
    w.put<std::uint64_t>(0);
    offset += s.size;
  }
  const std::size_t head = w.buf.size();
  w.put<std::uint32_t>(0u);
  // The segments' bytes are not zeroed first (Bytes): each is written once,
  // its pages faulted in by the threads that write it.
  std::size_t at = w.buf.size();
  w.buf.resize(total);
  for (std::size_t k = 0; k < segments.size(); ++k) {
    const Segment& s = segments[k];
    std::uint32_t c = 0;
    if (s.size > 0) c = s.fill ? s.fill(w.buf.data() + at) : copy_crc32c(w.buf.data() + at, s.data, s.size);
    std::memcpy(w.buf.data() + crc_at[k], &c, sizeof c);
    at += s.size;
  }
  const std::uint32_t c = crc32c(w.buf.data(), head);
  std::memcpy(w.buf.data() + head, &c, sizeof c);
  return std::move(w.buf);
}

Parsed read(const std::uint8_t* data, std::size_t size) {
  static_assert(sizeof(double) == 8, "IEEE double expected");
  KSZ_STREAM_CHECK(data != nullptr || size == 0, "null buffer");
  KSZ_STREAM_CHECK(size >= kPrefixBytes, "stream of ", size, " bytes is too short to be a ksz stream");
  KSZ_STREAM_CHECK(std::memcmp(data, kMagic, sizeof kMagic) == 0, "not a ksz stream (bad magic)");
  Reader r(data, size, "stream");
  r.take(sizeof kMagic);
  auto major = r.get<std::uint16_t>();
  auto minor = r.get<std::uint16_t>();
  KSZ_STREAM_CHECK(major == kFormatMajor, "format version ", major, ".", minor,
                   " is not supported by this ksz (reads ", kFormatMajor, ".x)");
  auto hbytes = r.get<std::uint32_t>();
  KSZ_STREAM_CHECK(hbytes >= kFixedHeaderBytes && hbytes <= kMaxHeaderBytes, "header size ", hbytes,
                   " out of range");
  const std::uint8_t* hp = r.take(hbytes);
  auto nseg = r.get<std::uint32_t>();
  KSZ_STREAM_CHECK(nseg <= kMaxSegments, "segment count ", nseg, " out of range");
  const std::uint8_t* table = r.take(std::size_t(nseg) * kSegmentEntryBytes);
  std::size_t table_end = r.pos();
  auto stored_crc = r.get<std::uint32_t>();
  KSZ_STREAM_CHECK(crc32c(data, table_end) == stored_crc, "header checksum mismatch");

  Parsed out;
  out.header = decode_header_body(hp, hbytes);
  Reader t(table, std::size_t(nseg) * kSegmentEntryBytes, "segment table");
  std::uint64_t expect = r.pos();
  for (std::uint32_t i = 0; i < nseg; ++i) {
    auto id = t.get<std::uint16_t>();
    t.get<std::uint16_t>();
    auto crc = t.get<std::uint32_t>();
    auto off = t.get<std::uint64_t>();
    auto len = t.get<std::uint64_t>();
    t.get<std::uint64_t>();
    KSZ_STREAM_CHECK(off == expect, "segment ", i, " offset ", off, " is not where the previous one ends");
    KSZ_STREAM_CHECK(off <= size && len <= size - off, "segment ", i, " (id ", id,
                     ") runs past the end of the stream (truncated?)");
    KSZ_STREAM_CHECK(crc32c(data + off, len) == crc, "segment ", i, " (id ", id, ") checksum mismatch");
    for (const auto& s : out.segments)
      KSZ_STREAM_CHECK(std::uint16_t(s.id) != id, "segment id ", id, " repeated");
    out.segments.push_back({static_cast<SegmentId>(id), data + off, len});
    expect = off + len;
  }
  KSZ_STREAM_CHECK(expect == size, "stream has ", size - expect, " trailing bytes (", size, " total)");
  return out;
}

const Segment* Parsed::find(SegmentId id) const {
  for (const auto& s : segments)
    if (s.id == id) return &s;
  return nullptr;
}

const Segment& Parsed::require(SegmentId id) const {
  const Segment* s = find(id);
  KSZ_STREAM_CHECK(s != nullptr, "required segment ", std::uint16_t(id), " missing");
  return *s;
}

}  // namespace ksz::container
