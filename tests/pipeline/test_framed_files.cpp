// Files compressed in frames (src/api/frames.hpp) on every backend: the bound
// on every element of the whole array, the whole array's REL bound in every
// frame, decoded values equal to the unframed file's where the method makes
// them so, and hostile framed files rejected with no output left behind.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "src/api/frames.hpp"
#include "src/container/frames.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ksz-frames-XXXXXX";
    if (::mkdtemp(tmpl)) m_dir = tmpl;
  }
  ~TempDir() {
    if (!m_dir.empty()) std::system(("rm -rf '" + m_dir + "'").c_str());
  }
  std::string path(const std::string& name) const { return m_dir + "/" + name; }

 private:
  std::string m_dir;
};

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

Bytes slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> v((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return Bytes(v.begin(), v.end());
}

template <class V>
void spill(const std::string& p, const V& v) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(v[0])));
}

template <class T>
std::vector<T> as_values(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

template <class Space>
Options options_of(PredictorId predictor, ErrorMode mode, double bound) {
  Options opt;
  opt.backend = backend_of<Space>();
  opt.predictor = predictor;
  opt.mode = mode;
  opt.bound = bound;
  return opt;
}

template <class Space>
class FramedFiles : public ::testing::Test {};
TYPED_TEST_SUITE(FramedFiles, ExecSpaces, ExecSpaceName);

// |x - x'| <= e |x| on every finite element (PW_REL), non-finite exact.
template <class T>
::testing::AssertionResult within_pointwise(const std::vector<T>& a, const std::vector<T>& b, double e) {
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool ok = std::isfinite(a[i])
                        ? std::fabs(static_cast<long double>(a[i]) - b[i]) <= e * std::fabs(static_cast<long double>(a[i]))
                        : std::memcmp(&a[i], &b[i], sizeof(T)) == 0;
    bad += !ok;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << a.size() << " elements over the point-wise bound";
}

template <class T, class Space>
void expect_framed_round_trip(PredictorId predictor, ErrorMode mode, double bound, Pattern pattern) {
  TempDir dir;
  const Dims d = dims_of({40, 24, 37});
  auto in = make_field<T>(pattern, d, 11);
  if (pattern == Pattern::Fill) {  // non-finite values, kept exactly, outside the value range REL resolves over
    in[5] = std::numeric_limits<T>::quiet_NaN();
    in[in.size() / 2] = std::numeric_limits<T>::infinity();
    in[in.size() - 1] = -std::numeric_limits<T>::infinity();
  }
  spill(dir.path("in.raw"), in);
  const Options opt = options_of<Space>(predictor, mode, bound);
  FrameOptions fo;
  // 7 slices a frame: five frames of 7, one of 2 (SZx, whole blocks of 128:
  // 6 slices, six frames of 6 and one of 1).
  fo.frame_bytes = 40 * 24 * 7 * sizeof(T) + 5;
  std::uint64_t last_done = 0, seen_total = 0;
  fo.progress = [&](const char* what, std::uint64_t done, std::uint64_t total) {
    if (std::string(what) == "compressing") last_done = done, seen_total = total;
  };
  const DType t = sizeof(T) == 8 ? DType::F64 : DType::F32;
  Report rc;
  const FileResult res = compress_file(dir.path("in.raw"), dir.path("f.kszf"), t, d, opt, fo, &rc);
  const std::string what = std::string(to_string(predictor)) + " " + to_string(mode) + " " + name(pattern);
  ASSERT_TRUE(res.framed) << what;
  EXPECT_EQ(res.frames, predictor == PredictorId::SZx ? 7u : 6u) << what;
  EXPECT_EQ(last_done, res.frames);
  EXPECT_EQ(seen_total, res.frames);
  const Bytes file = slurp(dir.path("f.kszf"));
  ASSERT_EQ(file.size(), res.file_bytes);
  EXPECT_EQ(rc.output_bytes, res.file_bytes);
  EXPECT_EQ(rc.input_bytes, in.size() * sizeof(T));
  ASSERT_TRUE(container::is_framed(file.data(), file.size()));

  // The whole array's bound: under REL the value range of every frame together.
  double lo = INFINITY, hi = -INFINITY;
  for (T v : in)
    if (std::isfinite(v)) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
  if (mode == ErrorMode::REL) EXPECT_EQ(res.abs_bound, bound * (hi - lo)) << what;
  if (mode == ErrorMode::ABS) EXPECT_EQ(res.abs_bound, bound) << what;
  EXPECT_EQ(res.value_min, lo);
  EXPECT_EQ(res.value_max, hi);

  ASSERT_NO_THROW(decompress_file(dir.path("f.kszf"), dir.path("out.raw"), opt.backend)) << what;
  const auto out = as_values<T>(slurp(dir.path("out.raw")));
  ASSERT_EQ(out.size(), in.size());
  if (mode == ErrorMode::PW_REL)
    EXPECT_TRUE(within_pointwise(in, out, bound)) << what;
  else
    EXPECT_TRUE(within_bound(in.data(), out.data(), in.size(), res.abs_bound)) << what;

  // In memory: decompress() and inspect() of the framed bytes.
  const Field f = decompress(file.data(), file.size(), opt.backend);
  ASSERT_EQ(f.bytes.size(), out.size() * sizeof(T));
  EXPECT_EQ(std::memcmp(f.bytes.data(), out.data(), f.bytes.size()), 0) << what;
  const StreamInfo info = inspect(file.data(), file.size());
  EXPECT_EQ(info.dims.n, d.n);
  EXPECT_EQ(info.mode, mode);
  EXPECT_EQ(info.abs_bound, res.abs_bound);
  EXPECT_NE(info.detail.find("framed: " + std::to_string(res.frames) + " frames"), std::string::npos) << info.detail;
  const FileInfo fi = inspect_file(dir.path("f.kszf"));
  EXPECT_EQ(fi.frames, res.frames);
  EXPECT_EQ(fi.info.abs_bound, res.abs_bound);
  if (predictor != PredictorId::Auto) EXPECT_EQ(fi.info.predictor, predictor) << what;  // the footer names it
}

TYPED_TEST(FramedFiles, BoundOnEveryElement) {
  using S = TypeParam;
  for (Pattern p : {Pattern::Noisy, Pattern::Fill}) {
    expect_framed_round_trip<float, S>(PredictorId::Lorenzo, ErrorMode::REL, 1e-3, p);
    expect_framed_round_trip<float, S>(PredictorId::SZx, ErrorMode::REL, 1e-3, p);
    expect_framed_round_trip<double, S>(PredictorId::SZx, ErrorMode::ABS, 1e-4, p);
  }
  expect_framed_round_trip<float, S>(PredictorId::Interp, ErrorMode::REL, 1e-4, Pattern::Smooth);
  expect_framed_round_trip<double, S>(PredictorId::Lorenzo, ErrorMode::ABS, 1e-6, Pattern::Spiky);
  expect_framed_round_trip<float, S>(PredictorId::Lorenzo, ErrorMode::PW_REL, 1e-2, Pattern::Noisy);
  expect_framed_round_trip<double, S>(PredictorId::ClassicLorenzo, ErrorMode::REL, 1e-4, Pattern::Smooth);
  expect_framed_round_trip<float, S>(PredictorId::Auto, ErrorMode::REL, 1e-3, Pattern::Noisy);
}

// Lorenzo's dual quantization and SZx's blocks (frames of whole blocks)
// reconstruct each value from the bound alone: under the whole array's bound
// the frames decode to the unframed stream's values, bit for bit.
template <class T, class Space>
void expect_same_values_as_unframed(PredictorId predictor, const Dims& d, std::uint64_t frame_bytes) {
  TempDir dir;
  const auto in = make_field<T>(Pattern::Noisy, d, 5);
  spill(dir.path("in.raw"), in);
  Options opt;
  opt.backend = backend_of<Space>();
  opt.predictor = predictor;
  opt.bound = 1e-3;
  const DType t = sizeof(T) == 8 ? DType::F64 : DType::F32;
  FrameOptions framed;
  framed.frame_bytes = frame_bytes;
  ASSERT_TRUE(compress_file(dir.path("in.raw"), dir.path("f.kszf"), t, d, opt, framed).framed);
  const FileResult whole = compress_file(dir.path("in.raw"), dir.path("w.ksz"), t, d, opt);
  ASSERT_FALSE(whole.framed);  // automatic: a small file is one ordinary stream
  const Bytes w = slurp(dir.path("w.ksz"));
  EXPECT_EQ(w, compress(in.data(), t, d, opt));  // and the stream compress() writes
  decompress_file(dir.path("f.kszf"), dir.path("f.raw"), opt.backend);
  decompress_file(dir.path("w.ksz"), dir.path("w.raw"), opt.backend);
  EXPECT_EQ(slurp(dir.path("f.raw")), slurp(dir.path("w.raw"))) << to_string(predictor);
}

TYPED_TEST(FramedFiles, DecodeAsTheWholeArray) {
  using S = TypeParam;
  expect_same_values_as_unframed<float, S>(PredictorId::Lorenzo, dims_of({33, 20, 29}), 33 * 20 * 4 * 6);
  expect_same_values_as_unframed<double, S>(PredictorId::Lorenzo, dims_of({45, 31}), 45 * 8 * 5);
  // 1D: frames of 1000 values, rounded down to 896 (whole blocks of 128).
  expect_same_values_as_unframed<float, S>(PredictorId::SZx, dims_of({10007}), 4000);
  // 2D rows of 50: blocks of 128 need frames of 64 rows (3200 values).
  expect_same_values_as_unframed<double, S>(PredictorId::SZx, dims_of({50, 300}), 50 * 8 * 70);
}

// Outputs from OutFile::kMapBytes (64 MiB) on are written through a mapping
// where the file system reserves their size: a 67.5 MB array decoded whole
// and from frames of 16 MiB to the bytes decompress() gives, the temporary
// file renamed away.
TYPED_TEST(FramedFiles, LargeOutputsAreWrittenWhole) {
  TempDir dir;
  const Dims d = dims_of({128, 128, 1030});  // 67,502,080 bytes of f32
  const auto in = make_field<float>(Pattern::Smooth, d, 3);
  spill(dir.path("in.raw"), in);
  const Options opt = options_of<TypeParam>(PredictorId::SZx, ErrorMode::ABS, 1e-2);
  FrameOptions framed;
  framed.frame_bytes = std::uint64_t(16) << 20;
  ASSERT_TRUE(compress_file(dir.path("in.raw"), dir.path("f.kszf"), DType::F32, d, opt, framed).framed);
  ASSERT_FALSE(compress_file(dir.path("in.raw"), dir.path("w.ksz"), DType::F32, d, opt).framed);
  const Bytes w = slurp(dir.path("w.ksz"));
  const Field want = decompress(w.data(), w.size(), opt.backend);
  ASSERT_EQ(want.bytes.size(), in.size() * sizeof(float));
  decompress_file(dir.path("f.kszf"), dir.path("f.raw"), opt.backend);
  decompress_file(dir.path("w.ksz"), dir.path("w.raw"), opt.backend);
  EXPECT_TRUE(slurp(dir.path("f.raw")) == want.bytes);
  EXPECT_TRUE(slurp(dir.path("w.raw")) == want.bytes);
  const std::vector<float> out = as_values<float>(want.bytes);
  EXPECT_TRUE(within_bound(in.data(), out.data(), in.size(), 1e-2));
  EXPECT_FALSE(exists(dir.path("f.raw.ksz-partial-" + std::to_string(::getpid()))));
}

// Under REL a constant array has a resolved bound of 0: every frame keeps it
// exactly; a frame that is constant inside a varying array codes under the
// array's bound.
TYPED_TEST(FramedFiles, ConstantArraysAndFramesUnderRel) {
  using S = TypeParam;
  TempDir dir;
  const Dims d = dims_of({64, 30});
  std::vector<float> in(d.count(), 3.25f);
  spill(dir.path("c.raw"), in);
  Options opt;
  opt.backend = backend_of<S>();
  FrameOptions fo;
  fo.frame_bytes = 64 * 4 * 8;
  for (PredictorId p : {PredictorId::Lorenzo, PredictorId::SZx}) {
    opt.predictor = p;
    const FileResult r = compress_file(dir.path("c.raw"), dir.path("c.kszf"), DType::F32, d, opt, fo);
    EXPECT_EQ(r.abs_bound, 0.0);
    decompress_file(dir.path("c.kszf"), dir.path("c.out"), opt.backend);
    EXPECT_EQ(as_values<float>(slurp(dir.path("c.out"))), in) << to_string(p);
  }
  for (std::size_t i = 0; i < 64 * 8; ++i) in[i] = float(i % 17) * 0.5f;  // the first frame varies
  spill(dir.path("v.raw"), in);
  opt.predictor = PredictorId::SZx;
  const FileResult r = compress_file(dir.path("v.raw"), dir.path("v.kszf"), DType::F32, d, opt, fo);
  EXPECT_EQ(r.abs_bound, 1e-4 * 8.0);
  decompress_file(dir.path("v.kszf"), dir.path("v.out"), opt.backend);
  const auto out = as_values<float>(slurp(dir.path("v.out")));
  EXPECT_TRUE(within_bound(in.data(), out.data(), in.size(), r.abs_bound));
}

// Hostile framed files: a clear CorruptStream, and no output file.
TYPED_TEST(FramedFiles, RejectsHostileFiles) {
  using S = TypeParam;
  TempDir dir;
  const Dims d = dims_of({32, 16, 12});
  const auto in = make_field<float>(Pattern::Noisy, d, 3);
  spill(dir.path("in.raw"), in);
  Options opt;
  opt.backend = backend_of<S>();
  opt.predictor = PredictorId::SZx;
  FrameOptions fo;
  fo.frame_bytes = 32 * 16 * 4 * 4;  // frames of 4 slices: 3 frames
  ASSERT_EQ(compress_file(dir.path("in.raw"), dir.path("f.kszf"), DType::F32, d, opt, fo).frames, 3u);
  const Bytes good = slurp(dir.path("f.kszf"));
  const auto rejects = [&](const Bytes& bad, const char* what) {
    spill(dir.path("bad.kszf"), bad);
    EXPECT_THROW(decompress_file(dir.path("bad.kszf"), dir.path("bad.raw"), opt.backend), CorruptStream) << what;
    EXPECT_FALSE(exists(dir.path("bad.raw"))) << what << ": output left behind";
    EXPECT_THROW(decompress(bad.data(), bad.size(), opt.backend), CorruptStream) << what;
  };
  // Any byte flipped, anywhere (magic, frames, footer, trailer): checksums
  // and markers catch every one.
  for (std::size_t at = 0; at < good.size(); at += 13) {
    Bytes bad = good;
    bad[at] ^= 0x20;
    EXPECT_THROW(decompress(bad.data(), bad.size(), opt.backend), CorruptStream) << "byte " << at;
  }
  rejects(Bytes(good.begin(), good.end() - 1), "truncated by a byte");
  rejects(Bytes(good.begin(), good.begin() + good.size() / 2), "truncated by half");
  rejects(Bytes(good.begin(), good.begin() + 9), "the magic and a byte");
  Bytes flipped = good;
  flipped[good.size() / 3] ^= 0x04;  // inside a frame: its checksum
  rejects(flipped, "a frame's byte flipped");
  // A valid footer over frames of another array: frame 1 holds other extents.
  const Dims d2 = dims_of({32, 16, 13});
  const auto in2 = make_field<float>(Pattern::Noisy, d2, 3);
  spill(dir.path("in2.raw"), in2);
  ASSERT_EQ(compress_file(dir.path("in2.raw"), dir.path("g.kszf"), DType::F32, d2, opt, fo).frames, 4u);
  const Bytes other = slurp(dir.path("g.kszf"));
  const auto footer_of = [](const Bytes& f) {
    const std::uint32_t len = container::footer_length(f.data() + f.size() - 16, f.size());
    return container::read_footer(f.data() + f.size() - len - 16, len + 16, f.size());
  };
  const container::FrameIndex gi = footer_of(good), oi = footer_of(other);
  Bytes spliced(good.begin(), good.begin() + 8 + gi.lengths[0]);  // frame 0 of the good file
  const std::size_t o3 = 8 + oi.lengths[0] + oi.lengths[1] + oi.lengths[2];
  spliced.insert(spliced.end(), other.begin() + o3, other.begin() + o3 + oi.lengths[3]);  // other's last: 1 slice
  const std::size_t g2 = 8 + gi.lengths[0] + gi.lengths[1];
  spliced.insert(spliced.end(), good.begin() + g2, good.begin() + g2 + gi.lengths[2]);
  container::FrameIndex si = gi;
  si.lengths = {gi.lengths[0], oi.lengths[3], gi.lengths[2]};
  const Bytes foot = container::write_footer(si);
  spliced.insert(spliced.end(), foot.begin(), foot.end());
  rejects(spliced, "a frame of other extents");
  // The right extents under a looser bound than the footer's.
  opt.mode = ErrorMode::ABS;
  opt.bound = 1.0;
  ASSERT_EQ(compress_file(dir.path("in.raw"), dir.path("h.kszf"), DType::F32, d, opt, fo).frames, 3u);
  const Bytes loose = slurp(dir.path("h.kszf"));
  const container::FrameIndex li = footer_of(loose);
  Bytes mixed(good.begin(), good.begin() + 8 + gi.lengths[0]);
  mixed.insert(mixed.end(), loose.begin() + 8 + li.lengths[0], loose.begin() + 8 + li.lengths[0] + li.lengths[1]);
  mixed.insert(mixed.end(), good.begin() + g2, good.begin() + g2 + gi.lengths[2]);
  si.lengths = {gi.lengths[0], li.lengths[1], gi.lengths[2]};
  const Bytes foot2 = container::write_footer(si);
  mixed.insert(mixed.end(), foot2.begin(), foot2.end());
  rejects(mixed, "a frame under another bound");
}

// Automatic frames: a file over a quarter of the memory budget (here
// KSZ_MEMORY_MB) is framed, in frames of an eighth of it.
TYPED_TEST(FramedFiles, AutomaticFramesFollowTheMemoryBudget) {
  using S = TypeParam;
  TempDir dir;
  const Dims d = dims_of({64, 64, 64});  // 1 MiB
  const auto in = make_field<float>(Pattern::Smooth, d, 2);
  spill(dir.path("in.raw"), in);
  Options opt;
  opt.backend = backend_of<S>();
  opt.predictor = PredictorId::SZx;
  struct Env {
    ~Env() { ::unsetenv("KSZ_MEMORY_MB"); }
  } env;
  ::setenv("KSZ_MEMORY_MB", "4", 1);  // a quarter: the whole MiB
  EXPECT_FALSE(compress_file(dir.path("in.raw"), dir.path("a.ksz"), DType::F32, d, opt).framed);
  ::setenv("KSZ_MEMORY_MB", "2", 1);  // frames of 256 KiB: 16 slices
  const FileResult r = compress_file(dir.path("in.raw"), dir.path("b.ksz"), DType::F32, d, opt);
  EXPECT_TRUE(r.framed);
  EXPECT_EQ(r.frames, 4u);
  EXPECT_EQ(r.frame_bytes, 256u << 10);
  decompress_file(dir.path("b.ksz"), dir.path("b.raw"), opt.backend);
  decompress_file(dir.path("a.ksz"), dir.path("a.raw"), opt.backend);
  EXPECT_EQ(slurp(dir.path("a.raw")), slurp(dir.path("b.raw")));
  ::setenv("KSZ_MEMORY_MB", "lots", 1);
  EXPECT_THROW(compress_file(dir.path("in.raw"), dir.path("c.ksz"), DType::F32, d, opt), InvalidInput);
  EXPECT_FALSE(exists(dir.path("c.ksz")));
}

// FrameWriter: slices appended in pieces of any size make the file that
// compress_file makes of the same array and frames, byte for byte.
template <class T, class Space>
void expect_writer_writes_the_files_bytes(PredictorId predictor, ErrorMode mode, double bound) {
  TempDir dir;
  const Dims d = dims_of({40, 24, 37});
  const auto in = make_field<T>(Pattern::Fill, d, 9);
  spill(dir.path("in.raw"), in);
  const Options opt = options_of<Space>(predictor, mode, bound);
  FrameOptions fo;
  fo.frame_bytes = 40 * 24 * 7 * sizeof(T);
  const DType t = sizeof(T) == 8 ? DType::F64 : DType::F32;
  const FileResult want = compress_file(dir.path("in.raw"), dir.path("want.kszf"), t, d, opt, fo);
  ASSERT_TRUE(want.framed);
  const std::uint64_t slice = 40 * 24, slab = want.frame_bytes / (slice * sizeof(T));
  Dims fd = d;
  fd.n[2] = slab;
  std::uint64_t seen = 0;
  FrameOptions wo;
  wo.progress = [&](const char*, std::uint64_t done, std::uint64_t) { seen = done; };
  FrameWriter w(dir.path("got.kszf"), t, fd, opt, wo);
  std::uint64_t at = 0;
  for (std::uint64_t n : {1, 3, 10, 7, 16}) {  // 37 slices
    w.append(in.data() + at * slice, n);
    at += n;
  }
  const FileResult got = w.finish();
  const std::string what = std::string(to_string(predictor)) + " " + to_string(mode);
  EXPECT_EQ(got.frames, want.frames) << what;
  EXPECT_EQ(seen, want.frames) << what;
  EXPECT_EQ(slurp(dir.path("got.kszf")), slurp(dir.path("want.kszf"))) << what;
}

TYPED_TEST(FramedFiles, WriterWritesTheFilesBytes) {
  using S = TypeParam;
  expect_writer_writes_the_files_bytes<float, S>(PredictorId::SZx, ErrorMode::ABS, 1e-3);
  expect_writer_writes_the_files_bytes<double, S>(PredictorId::Lorenzo, ErrorMode::ABS, 1e-5);
  expect_writer_writes_the_files_bytes<float, S>(PredictorId::Lorenzo, ErrorMode::PW_REL, 1e-3);
}

TYPED_TEST(FramedFiles, WriterRefusesWhatItCannotWrite) {
  using S = TypeParam;
  TempDir dir;
  Options opt;
  opt.backend = backend_of<S>();
  opt.mode = ErrorMode::ABS;
  const Dims fd = dims_of({16, 4});
  const std::vector<float> slices(16 * 5, 1.5f);
  opt.mode = ErrorMode::REL;
  EXPECT_THROW(FrameWriter(dir.path("a.kszf"), DType::F32, fd, opt), InvalidInput);
  opt.mode = ErrorMode::ABS;
  {
    FrameWriter w(dir.path("b.kszf"), DType::F32, fd, opt);
    EXPECT_THROW(w.finish(), InvalidInput);  // nothing appended
  }
  EXPECT_FALSE(exists(dir.path("b.kszf")));
  {
    FrameWriter w(dir.path("c.kszf"), DType::F32, fd, opt);
    w.append(slices.data(), 5);  // one whole frame written, one slice waiting
  }  // never finished: nothing left behind
  EXPECT_FALSE(exists(dir.path("c.kszf")));
  FrameWriter w(dir.path("d.kszf"), DType::F32, fd, opt);
  w.append(slices.data(), 5);
  EXPECT_EQ(w.finish().frames, 2u);
  EXPECT_THROW(w.append(slices.data(), 1), InvalidInput);
  decompress_file(dir.path("d.kszf"), dir.path("d.raw"), opt.backend);
  const auto out = as_values<float>(slurp(dir.path("d.raw")));
  EXPECT_EQ(out.size(), 16u * 5);
  EXPECT_TRUE(within_bound(slices.data(), out.data(), out.size(), opt.bound));
  EXPECT_EQ(inspect_file(dir.path("d.kszf")).info.dims.n[1], 5u);
}

TYPED_TEST(FramedFiles, RejectsBadInputBeforeWriting) {
  using S = TypeParam;
  TempDir dir;
  const std::vector<float> in(100, 1.0f);
  spill(dir.path("in.raw"), in);
  Options opt;
  opt.backend = backend_of<S>();
  FrameOptions fo;
  fo.frame_bytes = 64;
  EXPECT_THROW(compress_file(dir.path("in.raw"), dir.path("o.kszf"), DType::F32, dims_of({101}), opt, fo),
               InvalidInput);
  EXPECT_THROW(compress_file(dir.path("missing.raw"), dir.path("o.kszf"), DType::F32, dims_of({100}), opt, fo),
               InvalidInput);
  EXPECT_THROW(compress_file(dir.path("in.raw"), dir.path("no/such/o.kszf"), DType::F32, dims_of({100}), opt, fo),
               InvalidInput);
  EXPECT_FALSE(exists(dir.path("o.kszf")));
  spill(dir.path("empty.kszf"), std::vector<char>{});
  EXPECT_THROW(decompress_file(dir.path("empty.kszf"), dir.path("o.raw"), opt.backend), CorruptStream);
  EXPECT_FALSE(exists(dir.path("o.raw")));
}

}  // namespace
}  // namespace ksz::test
