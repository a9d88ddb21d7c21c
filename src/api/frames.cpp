#include "src/api/frames.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>
#include <limits>
#include <numeric>
#include <thread>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "src/api/internal.hpp"
#include "src/container/frames.hpp"
#include "src/core/host_memory.hpp"
#include "src/core/split_threads.hpp"
#include "src/pipeline/pipeline_common.hpp"

namespace ksz {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr std::uint64_t kMaxAutoFrameBytes = std::uint64_t(1) << 30;

constexpr std::uint64_t kIoPiece = std::uint64_t(32) << 20;
constexpr std::size_t kIoThreads = 8;

// The host's hardware threads (at least 1), read once.
std::size_t host_threads() {
  static const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  return hw;
}

// f(at, len) over [0, n) in pieces of at least kIoPiece, on up to `threads`
// threads; the first error is rethrown once all are done.
template <class F>
void split_io(std::uint64_t n, F f, std::size_t threads = kIoThreads) {
  const std::uint64_t pieces = std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, n / kIoPiece));
  if (pieces == 1) return f(0, n);
  std::vector<std::exception_ptr> errors(pieces);
  split_threads(pieces, [&](std::size_t k) {
    const std::uint64_t a = n * k / pieces, b = n * (k + 1) / pieces;
    try {
      f(a, b - a);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  });
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void pread_all(int fd, std::uint8_t* p, std::uint64_t offset, std::uint64_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, static_cast<std::size_t>(std::min<std::uint64_t>(n, 1u << 30)),
                                static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw InvalidInput(impl::concat("cannot read '", path, "': ", got < 0 ? std::strerror(errno) : "it ended early"));
    p += got, offset += static_cast<std::uint64_t>(got), n -= static_cast<std::uint64_t>(got);
  }
}

// A regular file read by offset (pread), so a prefetch thread and the caller
// never share a file position.
class InFile {
 public:
  explicit InFile(const std::string& path) : m_path(path) {
    m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    KSZ_EXPECTS(m_fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
    struct stat st {};
    if (::fstat(m_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(m_fd);
      throw InvalidInput(impl::concat("'", path, "' is not a regular file"));
    }
    m_size = static_cast<std::uint64_t>(st.st_size);
  }
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;
  ~InFile() { ::close(m_fd); }
  std::uint64_t size() const { return m_size; }
  // Large reads in pieces on up to kIoThreads threads (one thread copies
  // about 4-5 GB/s out of the H200 host's page cache).
  void read_at(void* dst, std::uint64_t offset, std::uint64_t n) const {
    auto* p = static_cast<std::uint8_t*>(dst);
    split_io(n, [&](std::uint64_t at, std::uint64_t len) { pread_all(m_fd, p + at, offset + at, len, m_path); });
  }

 private:
  std::string m_path;
  int m_fd = -1;
  std::uint64_t m_size = 0;
};

// An output written under a temporary name beside its own and renamed when
// whole (commit); destroyed uncommitted, it removes what it wrote.
// Appended to in order. Where the caller knows the size (from kMapBytes) and
// the file system reserves it (fallocate: a full disk fails here, before a
// byte is written), each append is copied in through mappings of its range
// (kMapWindow at a time) by up to kMapThreads threads, each unmapped after
// its copy: buffered write(2)s to one file hold its inode's lock, so one
// thread's 3.6 GB/s was the most that pieces on 4 or 16 threads reached on
// the H200 host, where 16 threads' copies into a mapping ran at 12 GB/s
// (perf/probe/file_writes.cpp). The blocks being reserved, the mapping's page
// faults allocate nothing on disk; unmapped, the written pages count as page
// cache (as a write's do), not as the process's resident memory. Elsewhere
// (a size not known, file systems without fallocate) it writes.
class OutFile {
 public:
  static constexpr std::uint64_t kMapBytes = std::uint64_t(64) << 20;
  static constexpr std::size_t kMapThreads = 16;
  static constexpr std::size_t kMapWindow = std::size_t(512) << 20;
  explicit OutFile(const std::string& path, std::uint64_t size = 0)
      : m_path(path), m_tmp(path + ".ksz-partial-" + std::to_string(::getpid())) {
    m_fd = ::open(m_tmp.c_str(), (size >= kMapBytes ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (m_fd < 0) fail(errno);
    if (size >= kMapBytes) reserve(size);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  ~OutFile() {
    if (m_fd < 0) return;
    ::close(m_fd);
    ::unlink(m_tmp.c_str());
  }
  void write(const void* p, std::size_t n) {
    const auto* q = static_cast<const std::uint8_t*>(p);
    if (m_reserved > 0 && n > 0) {
      while (n > 0 && m_bytes + n <= m_reserved) {
        const std::size_t w = std::min<std::size_t>(n, kMapWindow);
        if (!copy_in(q, w)) break;
        q += w, n -= w;
      }
      if (n == 0) return;
      if (::lseek(m_fd, static_cast<off_t>(m_bytes), SEEK_SET) < 0) fail(errno);  // written on from there
    }
    while (n > 0) {
      const ssize_t put = ::write(m_fd, q, std::min<std::size_t>(n, std::size_t(1) << 30));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) fail(put < 0 ? errno : ENOSPC);
      q += put, n -= static_cast<std::size_t>(put), m_bytes += static_cast<std::uint64_t>(put);
    }
  }
  std::uint64_t bytes() const { return m_bytes; }
  void commit() {
    if (m_reserved > m_bytes && ::ftruncate(m_fd, static_cast<off_t>(m_bytes)) != 0) fail(errno);
    const bool closed = ::close(m_fd) == 0;
    m_fd = -1;
    if (!closed || std::rename(m_tmp.c_str(), m_path.c_str()) != 0) {
      const int e = errno;
      ::unlink(m_tmp.c_str());
      fail(e);
    }
  }

 private:
  [[noreturn]] void fail(int e) const {
    throw InvalidInput(impl::concat("cannot write '", m_path, "': ", std::strerror(e)));
  }
  void reserve(std::uint64_t size) {
    if (::fallocate(m_fd, 0, 0, static_cast<off_t>(size)) == 0) {
      m_reserved = size;
      return;
    }
    if (errno == ENOSPC || errno == EFBIG || errno == EDQUOT) fail(errno);
    // No fallocate here (EOPNOTSUPP and the like): written.
  }
  // The next n bytes through a mapping of their pages; false (nothing
  // copied) where the mapping cannot be made.
  bool copy_in(const std::uint8_t* src, std::size_t n) {
    static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t from = m_bytes / page * page, len = m_bytes + n - from;
    void* m = ::mmap(nullptr, static_cast<std::size_t>(len), PROT_READ | PROT_WRITE, MAP_SHARED, m_fd,
                     static_cast<off_t>(from));
    if (m == MAP_FAILED) return false;
    std::uint8_t* const dst = static_cast<std::uint8_t*>(m) + (m_bytes - from);
    split_io(n, [&](std::uint64_t at, std::uint64_t l) { std::memcpy(dst + at, src + at, l); },
             std::min(kMapThreads, host_threads()));
    if (::munmap(m, static_cast<std::size_t>(len)) != 0) fail(errno);
    m_bytes += n;
    return true;
  }
  std::string m_path, m_tmp;
  int m_fd = -1;
  std::uint64_t m_bytes = 0, m_reserved = 0;  // m_reserved: the size fallocate reserved (0: none)
};

// Two buffers of a size, faulted in once (fresh pages cost the dev VM 2-5 ms
// a MiB under its hypervisor) and kept for every pass over a file.
struct FrameBuffers {
  explicit FrameBuffers(std::uint64_t bytes) {
    for (auto& b : buf) b = huge_page_bytes(static_cast<std::size_t>(bytes));
  }
  Bytes buf[2];
};

// Item i + 1 read into one buffer while the caller works on item i in the
// other. fill(i, buf) writes item i (at most the buffers' size) into buf.
class Prefetcher {
 public:
  using Fill = std::function<void(std::uint64_t, std::uint8_t*)>;
  Prefetcher(std::uint64_t count, FrameBuffers& buffers, Fill fill)
      : m_count(count), m_fill(std::move(fill)), m_buf(buffers.buf) {
    if (m_count > 0) launch(0);
  }
  ~Prefetcher() {
    if (m_pending.valid()) m_pending.wait();
  }
  // The next item (in order), once read; waited: seconds spent waiting.
  const std::uint8_t* next(double& waited) {
    const auto t = Clock::now();
    m_pending.get();  // rethrows the read's error
    waited += since(t);
    const std::uint64_t i = m_next++;
    if (m_next < m_count) launch(m_next);
    return m_buf[i % 2].data();
  }

 private:
  void launch(std::uint64_t i) {
    m_pending = std::async(std::launch::async, [this, i] { m_fill(i, m_buf[i % 2].data()); });
  }
  std::uint64_t m_count, m_next = 0;
  Fill m_fill;
  Bytes* m_buf;
  std::future<void> m_pending;
};

// An OutFile written one buffer at a time on a thread of its own, in order,
// while the caller goes on with the next frame.
class WriteBehind {
 public:
  explicit WriteBehind(OutFile& o) : m_out(o) {}
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;
  ~WriteBehind() {
    if (m_pending.valid()) m_pending.wait();
  }
  // Waits for the write before (rethrowing its error), then starts this one.
  void write(Bytes data, double& waited) {
    finish(waited);
    m_pending = std::async(std::launch::async, [this, d = std::move(data)] { m_out.write(d.data(), d.size()); });
  }
  void finish(double& waited) {
    if (!m_pending.valid()) return;
    const auto t = Clock::now();
    m_pending.get();
    waited += since(t);
  }

 private:
  OutFile& m_out;
  std::future<void> m_pending;
};

using pipeline::impl::Range;

Range merge(const Range& a, const Range& b) {
  if (!a.any_finite) return b;
  if (!b.any_finite) return a;
  return {std::min(a.min, b.min), std::max(a.max, b.max), true};
}

// The finite values' extremes as the pipelines' host value-range pass finds
// them (finite_min_max in T over pieces, range_of_extremes), a piece of 2 Mi
// values and more a thread.
template <class T>
Range finite_range_t(const T* p, std::uint64_t n) {
  const std::uint64_t pieces = std::max<std::uint64_t>(1, std::min<std::uint64_t>({n >> 21, host_threads(), 16}));
  std::vector<Range> part(pieces);
  split_threads(pieces, [&](std::size_t k) {
    T mn = std::numeric_limits<T>::infinity(), mx = -mn;
    const std::uint64_t lo = n * k / pieces, hi = n * (k + 1) / pieces;
    pipeline::impl::finite_min_max(p + lo, hi - lo, mn, mx);
    part[k] = pipeline::impl::range_of_extremes(mn, mx);
  });
  Range r = part[0];
  for (std::uint64_t k = 1; k < pieces; ++k) r = merge(r, part[k]);
  return r;
}

Range finite_range(const void* p, DType t, std::uint64_t n) {
  return t == DType::F64 ? finite_range_t(static_cast<const double*>(p), n)
                         : finite_range_t(static_cast<const float*>(p), n);
}

void add_stage(Report& r, const std::string& name, double seconds) {
  for (auto& s : r.stages)
    if (s.name == name) {
      s.seconds += seconds;
      return;
    }
  r.stages.push_back({name, seconds});
}

}  // namespace

void merge_report(Report& into, const Report& r) {
  for (const auto& s : r.stages) add_stage(into, s.name, s.seconds);
  into.backend = r.backend;
  into.device_seconds += r.device_seconds;
  into.total_seconds += r.total_seconds;
  into.output_bytes += r.output_bytes;
  into.elements += r.elements;
  into.input_bytes += r.input_bytes;
  into.outliers += r.outliers;
  into.verbatim += r.verbatim;
  into.radius = std::max(into.radius, r.radius);
  into.huffman_bytes += r.huffman_bytes;
  into.lossless_bytes += r.lossless_bytes;
  if (r.lossless != LosslessId::None) into.lossless = r.lossless;
  if (into.predictor == PredictorId::Auto) into.predictor = r.predictor;
  into.auto_lorenzo_bytes += r.auto_lorenzo_bytes;
  into.auto_interp_bytes += r.auto_interp_bytes;
}

namespace {

// The frames of `frame_bytes` (whole slices; SZx: whole blocks where a frame
// holds several) for an array.
container::FrameIndex plan_frames(DType dtype, const Dims& dims, const Options& opt, std::uint64_t frame_bytes) {
  container::FrameIndex idx;
  idx.dtype = dtype;
  idx.dims = dims;
  idx.mode = opt.mode;
  idx.user_bound = opt.bound;
  const std::uint64_t slice = idx.slice_elements(), last = dims.n[dims.rank - 1];
  std::uint64_t slab = std::min(last, std::max<std::uint64_t>(1, frame_bytes / (slice * dtype_size(dtype))));
  if (opt.predictor == PredictorId::SZx && slab < last) {  // frames' blocks where the whole array's are
    const std::uint64_t q = opt.szx_block / std::gcd<std::uint64_t>(opt.szx_block, slice);
    if (slab >= q) slab -= slab % q;
  }
  idx.slab = slab;
  KSZ_EXPECTS(idx.frames() <= container::kMaxFrames, "frames of ", frame_bytes, " bytes cut ", dims.str(),
              " into ", idx.frames(), " frames, more than 2^24: give larger frames");
  return idx;
}

// A frame's header against its file's footer: its place's extents, and a
// bound no looser than the file's.
void check_frame(const container::Header& h, const container::FrameIndex& idx, std::uint64_t i) {
  const Dims d = idx.frame_dims(i);
  bool same = h.dtype == idx.dtype && h.dims.rank == d.rank;
  for (int k = 0; k < 4; ++k) same = same && h.dims.n[k] == d.n[k];
  KSZ_STREAM_CHECK(same, "framed file: frame ", i, " holds ", h.dims.str(), " ", to_string(h.dtype),
                   ", its footer says ", d.str(), " ", to_string(idx.dtype));
  bool mode = false;
  switch (idx.mode) {
    case ErrorMode::ABS:
    case ErrorMode::PW_REL: mode = h.mode == idx.mode && h.user_bound == idx.user_bound; break;
    case ErrorMode::REL:  // the whole file's bound as ABS, or REL where that was 0
      mode = (h.mode == ErrorMode::ABS && h.user_bound == idx.abs_bound) ||
             (h.mode == ErrorMode::REL && h.user_bound == idx.user_bound);
      break;
  }
  KSZ_STREAM_CHECK(mode && h.abs_bound <= idx.abs_bound, "framed file: frame ", i, "'s bound (", to_string(h.mode),
                   " ", h.user_bound, ", absolute ", h.abs_bound, ") is not the file's (", to_string(idx.mode), " ",
                   idx.user_bound, ", absolute ", idx.abs_bound, ")");
  KSZ_STREAM_CHECK(idx.predictor == PredictorId::Auto || h.predictor == idx.predictor, "framed file: frame ", i,
                   " predicted by ", to_string(h.predictor), ", its footer says ", to_string(idx.predictor));
}

// The file's facts from its footer, the rest (codec parameters) from frame 0.
StreamInfo framed_info(const container::FrameIndex& idx, const container::Parsed& first) {
  StreamInfo i = impl::info_of(first);
  i.dtype = idx.dtype;
  i.dims = idx.dims;
  i.mode = idx.mode;
  i.predictor = idx.predictor;
  i.user_bound = idx.user_bound;
  i.abs_bound = idx.abs_bound;
  i.value_min = idx.value_min;
  i.value_max = idx.value_max;
  i.outliers = idx.outliers;
  i.verbatim = idx.verbatim;
  const std::string frames = impl::concat("framed: ", idx.frames(), " frames of ", idx.slab, " slices");
  i.detail = i.detail.empty() ? frames : frames + "; frame 0: " + i.detail;
  return i;
}

// (footer_length checks the size too, but only once the trailer is read.)
container::FrameIndex footer_of(const std::uint8_t* data, std::size_t size) {
  KSZ_STREAM_CHECK(size >= container::kFramedMinBytes, "framed file truncated: ", size, " bytes");
  const std::uint32_t len = container::footer_length(data + size - container::kFramedTrailerBytes, size);
  const std::size_t tail = len + container::kFramedTrailerBytes;
  return container::read_footer(data + size - tail, tail, size);
}

container::FrameIndex footer_of(const InFile& f) {
  KSZ_STREAM_CHECK(f.size() >= container::kFramedMinBytes, "framed file truncated: ", f.size(), " bytes");
  std::uint8_t trailer[container::kFramedTrailerBytes];
  f.read_at(trailer, f.size() - sizeof trailer, sizeof trailer);
  const std::size_t tail = container::footer_length(trailer, f.size()) + container::kFramedTrailerBytes;
  Bytes b(tail);
  f.read_at(b.data(), f.size() - tail, tail);
  return container::read_footer(b.data(), tail, f.size());
}

// Frame i's stream (its footer's length at p), parsed and checked against the
// footer.
container::Parsed parse_frame(const std::uint8_t* p, const container::FrameIndex& idx, std::uint64_t i) {
  container::Parsed parsed = container::read(p, idx.lengths[i]);
  check_frame(parsed.header, idx, i);
  return parsed;
}

// A framed decompression's report, its frames' merged: the file's totals.
void finish_decode_report(Report& total, const container::FrameIndex& idx, std::uint64_t file_bytes,
                          Clock::time_point t0, Report* report) {
  if (!report) return;
  total.elements = idx.dims.count();
  total.input_bytes = idx.dims.count() * dtype_size(idx.dtype);
  total.output_bytes = file_bytes;
  total.abs_bound = idx.abs_bound;
  total.value_min = idx.value_min, total.value_max = idx.value_max;
  total.total_seconds = since(t0);
  *report = std::move(total);
}

bool starts_framed(const InFile& f) {
  if (f.size() < container::kFramedMagicBytes) return false;
  std::uint8_t head[container::kFramedMagicBytes];
  f.read_at(head, 0, sizeof head);
  return container::is_framed(head, sizeof head);
}

// A framed file being written: frames in order (each compressed under fopt
// and handed to a writing thread), then the footer.
class FrameSink {
 public:
  // idx: the file's footer so far (dtype, extents, mode, bound, slab);
  // expected: its frame count where known (progress), else 0.
  FrameSink(const std::string& out, const container::FrameIndex& idx, const Options& opt, const Options& fopt,
            const FrameOptions& fo, std::uint64_t expected)
      : m_out(out), m_writer(m_out), m_idx(idx), m_opt(opt), m_fopt(fopt), m_fo(fo), m_expected(expected) {
    m_out.write(container::kFramedMagic, container::kFramedMagicBytes);
    m_total.backend = resolve_backend(opt.backend);
  }
  Report& report() { return m_total; }
  void add_range(const Range& r) { m_range = merge(m_range, r); }
  std::uint64_t frames() const { return m_idx.lengths.size(); }
  // The next frame: `slices` slices (the slab, or fewer for the last).
  void add(const void* raw, std::uint64_t slices) {
    const std::uint64_t i = frames();
    Dims d = m_idx.dims;
    d.n[d.rank - 1] = slices;
    Report r;
    Bytes stream = compress(raw, m_idx.dtype, d, m_fopt, &r);
    merge_report(m_total, r);
    m_frame_bound = std::max(m_frame_bound, r.abs_bound);
    // The stream's predictor (the classic pipeline's reports name none).
    const PredictorId p = m_opt.classic || m_opt.predictor == PredictorId::ClassicLorenzo
                              ? PredictorId::ClassicLorenzo
                              : r.predictor;
    if (i == 0) m_idx.predictor = p;
    m_one_predictor = m_one_predictor && p == m_idx.predictor;
    m_idx.outliers += r.outliers;
    m_idx.verbatim += r.verbatim;
    if (m_fo.on_frame) m_fo.on_frame(raw, stream, d, m_idx.frame_first_element(i));
    m_idx.lengths.push_back(stream.size());
    m_writer.write(std::move(stream), m_write_s);
    if (m_fo.progress) m_fo.progress("compressing", i + 1, m_expected);
  }
  // The footer, the array's slowest extent now `slices`; the file put in
  // place. read_s: the caller's waits on its input file (negative: it has
  // none); t0: the call's start.
  FileResult finish(std::uint64_t slices, double read_s, Clock::time_point t0, Report* report) {
    m_idx.dims.n[m_idx.dims.rank - 1] = slices;
    if (!m_one_predictor) m_idx.predictor = PredictorId::Auto;
    m_idx.value_min = m_range.min, m_idx.value_max = m_range.max;  // 0 where none is finite
    m_idx.abs_bound = m_opt.mode == ErrorMode::ABS     ? m_opt.bound
                      : m_fopt.mode == ErrorMode::ABS ? m_fopt.bound
                                                      : m_frame_bound;
    KSZ_EXPECTS(std::isfinite(m_idx.abs_bound), "the resolved bound overflows (value range [", m_range.min, ", ",
                m_range.max, "]): use an absolute bound");
    const Bytes footer = container::write_footer(m_idx);
    m_writer.finish(m_write_s);
    const auto tw = Clock::now();
    m_out.write(footer.data(), footer.size());
    m_out.commit();
    m_write_s += since(tw);
    FileResult res;
    res.framed = true;
    res.frames = frames();
    res.frame_bytes = m_idx.slab * m_idx.slice_elements() * dtype_size(m_idx.dtype);
    res.file_bytes = m_out.bytes();
    res.abs_bound = m_idx.abs_bound;
    res.value_min = m_idx.value_min, res.value_max = m_idx.value_max;
    if (report) {
      if (read_s >= 0) m_total.stages.insert(m_total.stages.begin(), {"read file", read_s});
      add_stage(m_total, "write file", m_write_s);
      m_total.output_bytes = res.file_bytes;
      m_total.abs_bound = m_idx.abs_bound;
      m_total.value_min = m_idx.value_min, m_total.value_max = m_idx.value_max;
      if (!m_one_predictor) m_total.predictor = PredictorId::Auto;
      m_total.total_seconds = since(t0);
      *report = std::move(m_total);
    }
    return res;
  }

 private:
  OutFile m_out;
  WriteBehind m_writer;  // (after m_out: done with it before it goes)
  container::FrameIndex m_idx;
  Options m_opt, m_fopt;
  const FrameOptions& m_fo;
  std::uint64_t m_expected;
  Report m_total;
  Range m_range{0, 0, false};
  double m_write_s = 0, m_frame_bound = 0;
  bool m_one_predictor = true;
};

// An unframed call's output, written whole, and its report: the call's stages
// between the file's read and write.
void write_whole(const std::string& out, const Bytes& data, const Report& r, double read_s, Clock::time_point t0,
                 Report* report) {
  const auto tw = Clock::now();
  OutFile o(out, data.size());
  o.write(data.data(), data.size());
  o.commit();
  if (!report) return;
  *report = r;
  report->stages.insert(report->stages.begin(), {"read file", read_s});
  report->stages.push_back({"write file", since(tw)});
  report->total_seconds = since(t0);
}

FileResult compress_whole(const InFile& f, const std::string& out, DType dtype, const Dims& dims, const Options& opt,
                          const FrameOptions& fo, Report* report) {
  const auto t0 = Clock::now();
  Bytes raw = huge_page_bytes(static_cast<std::size_t>(f.size()));
  f.read_at(raw.data(), 0, raw.size());
  const double read_s = since(t0);
  Report r;
  const Bytes stream = compress(raw.data(), dtype, dims, opt, &r);
  if (fo.on_frame) fo.on_frame(raw.data(), stream, dims, 0);
  write_whole(out, stream, r, read_s, t0, report);
  if (fo.progress) fo.progress("compressing", 1, 1);
  FileResult res;
  res.frame_bytes = f.size();
  res.file_bytes = stream.size();
  res.abs_bound = r.abs_bound;
  res.value_min = r.value_min, res.value_max = r.value_max;
  return res;
}

}  // namespace

std::uint64_t memory_budget(Backend backend) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t budget =
      pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : std::uint64_t(8) << 30;
#ifdef KOKKOS_ENABLE_CUDA
  if (resolve_backend(backend) == Backend::Cuda) {
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && total > 0) budget = std::min<std::uint64_t>(budget, total);
  }
#else
  (void)backend;
#endif
  // A share of a node (or a test) may set less.
  if (const char* env = std::getenv("KSZ_MEMORY_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    KSZ_EXPECTS(end != env && *end == '\0' && mb > 0 && mb < (1ull << 44), "KSZ_MEMORY_MB must be a positive "
                "number of MiB, got '", env, "'");
    budget = std::min<std::uint64_t>(budget, std::uint64_t(mb) << 20);
  }
  return budget;
}

FileResult compress_file(const std::string& in, const std::string& out, DType dtype, const Dims& dims,
                         const Options& opt, const FrameOptions& fo, Report* report) {
  const auto t0 = Clock::now();
  validate(dtype, dims, opt);
  const InFile f(in);
  const std::uint64_t ds = dtype_size(dtype), bytes = dims.count() * ds;
  KSZ_EXPECTS(f.size() == bytes, "'", in, "' has ", f.size(), " bytes; ", dims.str(), " ", to_string(dtype),
              " needs ", bytes);
  std::uint64_t frame_bytes = fo.frame_bytes;
  if (frame_bytes == 0) {
    const std::uint64_t budget = memory_budget(opt.backend);
    if (bytes <= budget / 4) return compress_whole(f, out, dtype, dims, opt, fo, report);
    frame_bytes = std::min(budget / 8, kMaxAutoFrameBytes);
  }
  container::FrameIndex idx = plan_frames(dtype, dims, opt, frame_bytes);
  const std::uint64_t frames = idx.frames(), slice_bytes = idx.slice_elements() * ds;
  const std::uint64_t full = idx.slab * slice_bytes;
  const auto read = [&](std::uint64_t i, std::uint8_t* buf) {
    f.read_at(buf, idx.frame_first_element(i) * ds, idx.frame_dims(i).count() * ds);
  };
  // Outside REL the range is the footer's alone: found by the reading thread,
  // beside the compression.
  Range ranges[2] = {};  // the prefetched frames' (by buffer)
  const auto read_and_range = [&](std::uint64_t i, std::uint8_t* buf) {
    read(i, buf);
    ranges[i % 2] = finite_range(buf, dtype, idx.frame_dims(i).count());
  };
  double read_s = 0;
  Range range{0, 0, false};
  Options fopt = opt;
  FrameBuffers buffers(full);
  double range_s = 0;
  const bool rel = opt.mode == ErrorMode::REL;
  if (rel) {  // the whole file's range first: the bound every frame codes under
    const auto tr = Clock::now();
    Prefetcher pass(frames, buffers, read);  // frame i + 1 read while frame i's range is found
    double ignored = 0;
    for (std::uint64_t i = 0; i < frames; ++i) {
      const std::uint8_t* raw = pass.next(ignored);
      range = merge(range, finite_range(raw, dtype, idx.frame_dims(i).count()));
      if (fo.progress) fo.progress("file value range", i + 1, frames);
    }
    const double e = opt.bound * (range.max - range.min);  // 0 where none is finite
    if (std::isfinite(e) && e > 0) fopt.mode = ErrorMode::ABS, fopt.bound = e;  // else each frame resolves to 0
    range_s = since(tr);
  }
  FrameSink sink(out, idx, opt, fopt, fo, frames);
  if (rel) {
    add_stage(sink.report(), "file value range", range_s);  // not a pipeline stage of that name
    sink.add_range(range);
  }
  Prefetcher reader(frames, buffers, rel ? Prefetcher::Fill(read) : Prefetcher::Fill(read_and_range));
  for (std::uint64_t i = 0; i < frames; ++i) {
    const std::uint8_t* raw = reader.next(read_s);
    if (!rel) sink.add_range(ranges[i % 2]);
    sink.add(raw, idx.frame_dims(i).n[dims.rank - 1]);
  }
  return sink.finish(dims.n[dims.rank - 1], read_s, t0, report);
}

struct FrameWriter::State {
  State(const std::string& path, const container::FrameIndex& idx, const Options& opt, const FrameOptions& fo)
      : fo(fo),
        buffer(huge_page_bytes(static_cast<std::size_t>(idx.slab * idx.slice_elements() * dtype_size(idx.dtype)),
                               false)),  // faulted in as it fills (a short stream: only what it holds)
        sink(path, idx, opt, opt, this->fo, 0), idx(idx) {}
  // The frame at raw (buffered or the caller's).
  void add(const void* raw, std::uint64_t slices) {
    sink.add_range(finite_range(raw, idx.dtype, slices * idx.slice_elements()));
    sink.add(raw, slices);
  }
  FrameOptions fo;
  Bytes buffer;
  FrameSink sink;
  container::FrameIndex idx;
  std::uint64_t filled = 0, total = 0;  // slices in the buffer, appended in all
  Clock::time_point t0 = Clock::now();
  bool done = false;
};

FrameWriter::FrameWriter(const std::string& path, DType dtype, const Dims& frame_dims, const Options& opt,
                         const FrameOptions& fo)
    : m_state(nullptr) {
  validate(dtype, frame_dims, opt);
  KSZ_EXPECTS(opt.mode != ErrorMode::REL, "a stream of slices cannot be compressed under a REL bound (it needs the "
              "whole array's value range first): give an ABS or PW_REL bound, or compress the file (compress_file)");
  container::FrameIndex idx;
  idx.dtype = dtype;
  idx.dims = frame_dims;
  idx.mode = opt.mode;
  idx.user_bound = opt.bound;
  idx.slab = frame_dims.n[frame_dims.rank - 1];
  m_state = new State(path, idx, opt, fo);
}

FrameWriter::~FrameWriter() { delete m_state; }  // unfinished: the sink's file removes itself

void FrameWriter::append(const void* data, std::uint64_t slices) {
  State& st = *m_state;
  KSZ_EXPECTS(!st.done, "append after finish (or after an append that failed)");
  KSZ_EXPECTS(data != nullptr || slices == 0, "null slices");
  try {
    append_slices(st, data, slices);
  } catch (...) {
    st.done = true;  // the file stays unfinished, removed when the writer goes
    throw;
  }
}

void FrameWriter::append_slices(State& st, const void* data, std::uint64_t slices) {
  const std::uint64_t slice = st.idx.slice_elements(), slab = st.idx.slab, ds = dtype_size(st.idx.dtype);
  KSZ_EXPECTS(slices <= (container::kMaxElements / slice) - st.total, "more than 2^40 elements appended");
  KSZ_EXPECTS((st.total + slices + slab - 1) / slab <= container::kMaxFrames, "more than 2^24 frames appended");
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (slices > 0) {
    if (st.filled == 0 && slices >= slab) {  // a whole frame of the caller's: no copy
      st.add(p, slab);
      p += slab * slice * ds, slices -= slab, st.total += slab;
      continue;
    }
    const std::uint64_t take = std::min(slices, slab - st.filled);
    std::memcpy(st.buffer.data() + st.filled * slice * ds, p, take * slice * ds);
    st.filled += take, st.total += take, p += take * slice * ds, slices -= take;
    if (st.filled == slab) st.add(st.buffer.data(), slab), st.filled = 0;
  }
}

FileResult FrameWriter::finish(Report* report) {
  State& st = *m_state;
  KSZ_EXPECTS(!st.done, "finish after finish (or after an append that failed)");
  KSZ_EXPECTS(st.total > 0, "no slices appended: an array needs at least one");
  st.done = true;
  if (st.filled > 0) st.add(st.buffer.data(), st.filled);
  return st.sink.finish(st.total, -1, st.t0, report);
}

FileResult decompress_file(const std::string& in, const std::string& out, Backend backend, const FrameOptions& fo,
                           Report* report) {
  const auto t0 = Clock::now();
  const InFile f(in);
  FileResult res;
  if (!starts_framed(f)) {
    Bytes stream = huge_page_bytes(static_cast<std::size_t>(f.size()));
    f.read_at(stream.data(), 0, stream.size());
    const double read_s = since(t0);
    Report r;
    const Field field = decompress(stream.data(), stream.size(), backend, &r);
    write_whole(out, field.bytes, r, read_s, t0, report);
    if (fo.progress) fo.progress("decompressing", 1, 1);
    res.frame_bytes = field.bytes.size();
    res.file_bytes = field.bytes.size();
    return res;
  }
  const container::FrameIndex idx = footer_of(f);
  const std::uint64_t frames = idx.frames();
  const std::vector<std::uint64_t> offsets = idx.frame_offsets();
  const std::uint64_t longest = *std::max_element(idx.lengths.begin(), idx.lengths.end());
  Report total;
  total.backend = resolve_backend(backend);
  double read_s = 0, write_s = 0;
  OutFile o(out, idx.dims.count() * dtype_size(idx.dtype));
  WriteBehind writer(o);
  FrameBuffers buffers(longest);
  Prefetcher reader(frames, buffers, [&](std::uint64_t i, std::uint8_t* buf) {
    f.read_at(buf, offsets[i], idx.lengths[i]);
  });
  for (std::uint64_t i = 0; i < frames; ++i) {
    const container::Parsed parsed = parse_frame(reader.next(read_s), idx, i);
    Report r;
    Field field = impl::decompress_parsed(parsed, idx.lengths[i], backend, &r);
    merge_report(total, r);
    writer.write(std::move(field.bytes), write_s);
    if (fo.progress) fo.progress("decompressing", i + 1, frames);
  }
  writer.finish(write_s);
  const auto tw = Clock::now();
  o.commit();
  write_s += since(tw);
  res.framed = true;
  res.frames = frames;
  res.frame_bytes = idx.slab * idx.slice_elements() * dtype_size(idx.dtype);
  res.file_bytes = o.bytes();
  total.stages.insert(total.stages.begin(), {"read file", read_s});
  add_stage(total, "write file", write_s);
  finish_decode_report(total, idx, f.size(), t0, report);
  return res;
}

FileInfo inspect_file(const std::string& path) {
  const InFile f(path);
  FileInfo fi;
  fi.file_bytes = f.size();
  if (!starts_framed(f)) {
    Bytes stream = huge_page_bytes(static_cast<std::size_t>(f.size()));
    f.read_at(stream.data(), 0, stream.size());
    fi.info = inspect(stream.data(), stream.size());
    return fi;
  }
  const container::FrameIndex idx = footer_of(f);
  Bytes first(static_cast<std::size_t>(idx.lengths[0]));
  f.read_at(first.data(), container::kFramedMagicBytes, first.size());
  fi.info = framed_info(idx, parse_frame(first.data(), idx, 0));
  fi.frames = idx.frames();
  fi.slab = idx.slab;
  return fi;
}

namespace impl {

Field decompress_framed(const std::uint8_t* data, std::size_t size, Backend backend, Report* report) {
  const auto t0 = Clock::now();
  const container::FrameIndex idx = footer_of(data, size);
  const std::uint64_t ds = dtype_size(idx.dtype);
  Field field;
  field.dtype = idx.dtype;
  field.dims = idx.dims;
  resize_huge(field.bytes, static_cast<std::size_t>(idx.dims.count() * ds));
  Report total;
  total.backend = resolve_backend(backend);
  const std::vector<std::uint64_t> offsets = idx.frame_offsets();
  for (std::uint64_t i = 0; i < idx.frames(); ++i) {
    Report r;
    const Field part = decompress_parsed(parse_frame(data + offsets[i], idx, i), idx.lengths[i], backend, &r);
    merge_report(total, r);
    std::memcpy(field.bytes.data() + idx.frame_first_element(i) * ds, part.bytes.data(), part.bytes.size());
  }
  finish_decode_report(total, idx, size, t0, report);
  return field;
}

StreamInfo inspect_framed(const std::uint8_t* data, std::size_t size) {
  const container::FrameIndex idx = footer_of(data, size);
  const std::vector<std::uint64_t> offsets = idx.frame_offsets();
  const StreamInfo info = framed_info(idx, parse_frame(data + offsets[0], idx, 0));
  // Every frame validated, as inspect() promises.
  for (std::uint64_t i = 1; i < idx.frames(); ++i) parse_frame(data + offsets[i], idx, i);
  return info;
}

}  // namespace impl
}  // namespace ksz
