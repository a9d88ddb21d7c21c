// Lossless-pass designs on real Huffman output, data resident in the backend's memory.
//   bench_lossless [--input field.f32 --type f32 | --kind turbulent] --dims 256,256,256
//                  [--rel 1e-3] [--predictor lorenzo|interp] [--reps 5] [--backend openmp] [--json out.json]
//                  [--tsv rows.tsv (appends one row per design)] [--dump bitstream.bin] [--label name]
//                  [--log2-block 11,12,13 (zbe and zwe at these block sizes instead of the four designs)]
// Compresses the field with the pass off, takes the Huffman bitstream (segment
// 3) and times, per design, encode and decode of that buffer on the device
// (median of reps, device fenced inside the timed region; GB/s over the
// bitstream's bytes). Designs:
//   zbe       hierarchical zero-byte elimination (portable/lossless, the default)
//   zwe       the same with 32-bit words at level 0 (portable/lossless)
//   bp32+zbe  32x32 bit-plane transpose of each 32-word group, then zbe (here only)
//   rle       byte zero-run / literal-run coding, one thread per 8 KiB block (here only)
// Every design's decode is checked against the input, untimed.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "perf/common/harness.hpp"
#include "portable/generate/field.hpp"
#include "portable/lossless/lossless.hpp"
#include "src/api/ksz.hpp"
#include "src/container/container.hpp"

namespace {

using namespace ksz;
using u8 = std::uint8_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

struct Args {
  std::vector<u64> dims{256, 256, 256};
  double rel = 1e-3;
  int reps = 5;
  std::string backend = "default", kind = "turbulent", input, type = "f32", predictor = "lorenzo", json, label, tsv,
      dump;
  std::vector<int> log2_blocks;  // empty: the four designs at the default block size
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dims") a.dims = ksz::perf::Args::numbers(v);
    else if (k == "--rel") a.rel = std::stod(v);
    else if (k == "--reps") a.reps = std::stoi(v);
    else if (k == "--backend") a.backend = v;
    else if (k == "--kind") a.kind = v;
    else if (k == "--input") a.input = v;
    else if (k == "--type") a.type = v;
    else if (k == "--predictor") a.predictor = v;
    else if (k == "--json") a.json = v;
    else if (k == "--label") a.label = v;
    else if (k == "--tsv") a.tsv = v;
    else if (k == "--dump") a.dump = v;
    else if (k == "--log2-block")
      for (const u64 l : ksz::perf::Args::numbers(v)) a.log2_blocks.push_back(static_cast<int>(l));
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- bp32: 32x32 bit transpose of each whole 32-word group (an involution) ----
KOKKOS_INLINE_FUNCTION void transpose32(u32* a) {  // Hacker's Delight 7-3
  u32 m = 0x0000FFFFu;
  for (int j = 16; j != 0; j >>= 1, m ^= (m << j))
    for (int k = 0; k < 32; k = (k + j + 1) & ~j) {
      const u32 t = (a[k] ^ (a[k + j] >> j)) & m;
      a[k] ^= t;
      a[k + j] ^= t << j;
    }
}

template <class Space>
void bitplanes(const Space& space, Kokkos::View<u32*, typename Space::memory_space> w) {
  Kokkos::parallel_for(
      "bench::transpose32", Kokkos::RangePolicy<Space>(space, 0, w.extent(0) / 32), KOKKOS_LAMBDA(const u64 g) {
        u32 a[32];
        for (int i = 0; i < 32; ++i) a[i] = w(32 * g + i);
        transpose32(a);
        for (int i = 0; i < 32; ++i) w(32 * g + i) = a[i];
      });
}

// ---- rle: token c < 128: c + 1 literal bytes follow; c >= 128: c - 127 zero bytes ----
constexpr u64 kRleBlock = 8192;

template <class Space>
struct RleEncoded {
  Kokkos::View<u8*, typename Space::memory_space> bytes;  // blocks back to back
  Kokkos::View<u64*, typename Space::memory_space> offsets;  // nb + 1; a block of full length is raw
  u64 size;
};

template <class Space>
RleEncoded<Space> rle_encode(const Space& space, Kokkos::View<const u8*, typename Space::memory_space> in) {
  using Mem = typename Space::memory_space;
  const u64 n = in.extent(0), nb = (n + kRleBlock - 1) / kRleBlock;
  Kokkos::View<u8*, Mem> staging("bench::rle_staging", nb * kRleBlock);
  Kokkos::View<u64*, Mem> off("bench::rle_offsets", nb + 1);
  Kokkos::parallel_for(
      "bench::rle_encode", Kokkos::RangePolicy<Space>(space, 0, nb), KOKKOS_LAMBDA(const u64 b) {
        const u64 begin = b * kRleBlock, len = n - begin < kRleBlock ? n - begin : kRleBlock;
        const u8* p = in.data() + begin;
        u8* o = staging.data() + begin;
        u64 i = 0, k = 0;
        bool raw = false;
        while (i < len && !raw) {
          u64 r = 0;
          if (p[i] == 0) {
            while (i + r < len && r < 128 && p[i + r] == 0) ++r;
            if (k + 1 > len) raw = true;
            else o[k++] = static_cast<u8>(127 + r);
          } else {
            while (i + r < len && r < 128 && !(p[i + r] == 0 && i + r + 1 < len && p[i + r + 1] == 0)) ++r;
            if (k + 1 + r > len) raw = true;
            else {
              o[k++] = static_cast<u8>(r - 1);
              for (u64 j = 0; j < r; ++j) o[k++] = p[i + j];
            }
          }
          i += r;
        }
        off(b) = raw || k >= len ? len : k;
      });
  Kokkos::parallel_scan(
      "bench::rle_scan", Kokkos::RangePolicy<Space>(space, 0, nb + 1),
      KOKKOS_LAMBDA(const u64 b, u64& acc, const bool final) {
        const u64 s = b < nb ? off(b) : 0;
        if (final) off(b) = acc;
        acc += s;
      });
  u64 total = 0;
  Kokkos::deep_copy(space, total, Kokkos::subview(off, nb));
  space.fence();
  RleEncoded<Space> r{Kokkos::View<u8*, Mem>("bench::rle", total), off, total + 4 * nb};
  const auto bytes = r.bytes;
  Kokkos::parallel_for(
      "bench::rle_gather", Kokkos::RangePolicy<Space>(space, 0, nb), KOKKOS_LAMBDA(const u64 b) {
        const u64 begin = b * kRleBlock, len = n - begin < kRleBlock ? n - begin : kRleBlock;
        const u64 s = off(b + 1) - off(b);
        const u8* src = (s == len ? in.data() : staging.data()) + begin;
        for (u64 j = 0; j < s; ++j) bytes(off(b) + j) = src[j];
      });
  return r;
}

template <class Space>
void rle_decode(const Space& space, const RleEncoded<Space>& e, Kokkos::View<u8*, typename Space::memory_space> out) {
  const u64 n = out.extent(0), nb = (n + kRleBlock - 1) / kRleBlock;
  const auto bytes = e.bytes;
  const auto off = e.offsets;
  Kokkos::parallel_for(
      "bench::rle_decode", Kokkos::RangePolicy<Space>(space, 0, nb), KOKKOS_LAMBDA(const u64 b) {
        const u64 begin = b * kRleBlock, len = n - begin < kRleBlock ? n - begin : kRleBlock;
        const u64 s = off(b + 1) - off(b);
        const u8* p = bytes.data() + off(b);
        u8* o = out.data() + begin;
        if (s == len) {
          for (u64 j = 0; j < len; ++j) o[j] = p[j];
          return;
        }
        u64 i = 0, k = 0;
        while (i < s && k < len) {
          const u8 c = p[i++];
          if (c >= 128) {
            for (u64 j = 0; j < u64(c) - 127 && k < len; ++j) o[k++] = 0;
          } else {
            for (u64 j = 0; j <= c && k < len && i < s; ++j) o[k++] = p[i++];
          }
        }
      });
}

struct Result {
  std::string name;
  u64 bytes;
  double enc_s, dec_s;
  bool ok;
};

template <class Space>
Result run_design(const Space& space, const std::string& name, Kokkos::View<u32*, typename Space::memory_space> words,
                  int reps, int log2_block = lossless::kLog2BlockDefault) {
  using Mem = typename Space::memory_space;
  const u64 nbytes = words.extent(0) * 4;
  Kokkos::View<const u8*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> in(reinterpret_cast<const u8*>(words.data()),
                                                                            nbytes);
  Kokkos::View<u32*, Mem> work("bench::work", words.extent(0));
  Kokkos::View<u32*, Mem> back("bench::back", words.extent(0));
  Kokkos::View<const u8*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> work_b(
      reinterpret_cast<const u8*>(work.data()), nbytes);
  Kokkos::View<u8*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> back_b(reinterpret_cast<u8*>(back.data()), nbytes);
  std::vector<double> te, td;
  u64 size = 0;
  using Clock = std::chrono::steady_clock;
  for (int r = 0; r < reps + 1; ++r) {  // first rep is warm-up
    space.fence();
    auto t0 = Clock::now();
    if (name == "rle") {
      const auto e = rle_encode<Space>(space, in);
      space.fence();
      te.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      size = e.size;
      t0 = Clock::now();
      rle_decode<Space>(space, e, back_b);
      space.fence();
      td.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      continue;
    }
    lossless::Encoded<Space> e;
    if (name == "bp32+zbe") {
      Kokkos::deep_copy(space, work, words);
      bitplanes<Space>(space, work);
      e = lossless::encode<Space>(space, work_b, lossless::Method::ZeroBytes);
    } else {
      e = lossless::encode<Space>(space, in, name.rfind("zwe", 0) == 0 ? lossless::Method::ZeroWords : lossless::Method::ZeroBytes,
                                  log2_block);
    }
    space.fence();
    te.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    size = e.size;
    t0 = Clock::now();
    lossless::decode<Space>(space, e.bytes, back_b);
    if (name == "bp32+zbe") bitplanes<Space>(space, back);
    space.fence();
    td.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  te.erase(te.begin());
  td.erase(td.begin());
  // Untimed: the decode gives the input back.
  auto h_in = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), words);
  auto h_back = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), back);
  const bool ok = std::equal(h_in.data(), h_in.data() + h_in.extent(0), h_back.data());
  return {name, size, median(te), median(td), ok};
}

template <class Space>
int bench(const Space& space, const Args& a) {
  using Mem = typename Space::memory_space;
  Dims d;
  d.rank = int(a.dims.size());
  for (std::size_t i = 0; i < a.dims.size(); ++i) d.n[i] = a.dims[i];
  const DType dtype = a.type == "f64" ? DType::F64 : DType::F32;
  const u64 n = d.count(), in_bytes = n * dtype_size(dtype);
  std::vector<u8> field;
  std::string data = a.label;
  if (!a.input.empty()) {
    std::ifstream f(a.input, std::ios::binary);
    field.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (field.size() != in_bytes) {
      std::fprintf(stderr, "bench_lossless: %s has %zu bytes, expected %llu\n", a.input.c_str(), field.size(),
                   (unsigned long long)in_bytes);
      return 1;
    }
    if (data.empty()) data = a.input;
  } else {
    const Shape3 s = effective_shape(d);
    generate::FieldSpec spec{a.kind == "smooth" ? generate::Kind::Smooth : generate::Kind::Turbulent, 1, s.n[0],
                             s.n[1], s.n[2]};
    Kokkos::View<float*, Mem> g("field", n);
    generate::fill<Space, float>(space, spec, g);
    field.resize(n * 4);
    Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
        reinterpret_cast<float*>(field.data()), n);
    Kokkos::deep_copy(h, g);
    if (data.empty()) data = "generated " + a.kind;
  }
  Options opt;
  opt.bound = a.rel;
  opt.predictor = a.predictor == "interp" ? PredictorId::Interp : PredictorId::Lorenzo;
  opt.lossless = LosslessId::None;
  opt.backend = parse_backend(a.backend);
  const auto stream = compress(field.data(), dtype, d, opt);
  const auto parsed = container::read(stream.data(), stream.size());
  const auto& seg = parsed.require(container::SegmentId::HuffmanWords);
  Kokkos::View<u32*, Mem> words("bench::words", seg.size / 4);
  {
    Kokkos::View<u32*, Kokkos::HostSpace> h("bench::words_host", seg.size / 4);
    std::memcpy(h.data(), seg.data, seg.size);
    Kokkos::deep_copy(words, h);
  }
  if (!a.dump.empty()) std::ofstream(a.dump, std::ios::binary).write(reinterpret_cast<const char*>(seg.data), seg.size);
  const double ratio0 = double(in_bytes) / double(stream.size());
  std::printf("%s  %s  %s REL %g  %s  backend %s x%d  Huffman bitstream %llu bytes, stream ratio %.3f\n",
              data.c_str(), d.str().c_str(), a.type.c_str(), a.rel, a.predictor.c_str(), Space::name(),
              int(Space::concurrency()), (unsigned long long)seg.size, ratio0);
  std::vector<Result> res;
  bool all_ok = true;
  std::vector<std::pair<std::string, int>> designs;
  for (const char* name : {"zbe", "zwe", "bp32+zbe", "rle"}) designs.push_back({name, lossless::kLog2BlockDefault});
  if (!a.log2_blocks.empty()) {
    designs.clear();
    for (const int l : a.log2_blocks)
      for (const char* name : {"zbe", "zwe"}) designs.push_back({std::string(name) + "@" + std::to_string(l), l});
  }
  for (const auto& [name, log2_block] : designs) {
    const Result r = run_design(space, name, words, a.reps, log2_block);
    const double ratio = double(in_bytes) / double(stream.size() - seg.size + r.bytes);
    std::printf("  %-9s gain %7.3f  stream ratio %8.3f  encode %8.1f MB/s  decode %8.1f MB/s  %s\n", name.c_str(),
                double(seg.size) / double(r.bytes), ratio, seg.size / r.enc_s / 1e6, seg.size / r.dec_s / 1e6,
                r.ok ? "round trip ok" : "ROUND TRIP FAILED");
    all_ok = all_ok && r.ok;
    res.push_back(r);
  }
  if (!a.tsv.empty()) {  // data, predictor, rel, threads, design, input, stream, bitstream, coded bytes, enc s, dec s
    std::ofstream t(a.tsv, std::ios::app);
    for (const auto& r : res)
      t << data << '\t' << a.predictor << '\t' << a.rel << '\t' << Space::concurrency() << '\t' << r.name << '\t'
        << in_bytes << '\t' << stream.size() << '\t' << seg.size << '\t' << r.bytes << '\t' << r.enc_s << '\t'
        << r.dec_s << '\n';
  }
  if (!a.json.empty()) {
    std::ofstream j(a.json);
    j << "{\"bench\":\"lossless\",\"data\":\"" << data << "\",\"dims\":\"" << d.str() << "\",\"type\":\"" << a.type
      << "\",\"rel\":" << a.rel << ",\"predictor\":\"" << a.predictor << "\",\"backend\":\"" << Space::name()
      << "\",\"concurrency\":" << Space::concurrency() << ",\"version\":\"" << version_string()
      << "\",\"input_bytes\":" << in_bytes << ",\"stream_bytes\":" << stream.size()
      << ",\"bitstream_bytes\":" << seg.size << ",\"designs\":[";
    for (std::size_t i = 0; i < res.size(); ++i) {
      const auto& r = res[i];
      j << (i ? "," : "") << "{\"name\":\"" << r.name << "\",\"bytes\":" << r.bytes
        << ",\"gain\":" << double(seg.size) / double(r.bytes)
        << ",\"stream_ratio\":" << double(in_bytes) / double(stream.size() - seg.size + r.bytes)
        << ",\"encode_s\":" << r.enc_s << ",\"decode_s\":" << r.dec_s
        << ",\"encode_gbps\":" << seg.size / r.enc_s / 1e9 << ",\"decode_gbps\":" << seg.size / r.dec_s / 1e9
        << ",\"round_trip\":" << (r.ok ? "true" : "false") << "}";
    }
    j << "]}\n";
  }
  return all_ok ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  Kokkos::ScopeGuard g(argc, argv);
  try {
    return with_backend(parse_backend(a.backend), [&](auto space) { return bench(space, a); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_lossless: %s\n", e.what());
    return 1;
  }
}
