// Golden streams pin format v1 and the encoder: they must decode to the
// pinned bytes, and compressing the same input must reproduce them byte for
// byte on every backend. Regenerate (only with a format/encoder change that
// FORMAT.md documents) with KSZ_UPDATE_GOLDEN=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "src/api/ksz.hpp"
#include "src/container/checksum.hpp"
#include "tests/common/backends.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

struct Golden {
  const char* file;
  DType dtype;
  std::vector<std::uint64_t> dims;
  ErrorMode mode;
  double bound;
  std::uint32_t decoded_crc;  // CRC-32C of the decompressed bytes
  LosslessId lossless;        // pass on the Huffman bitstream (streams from before format 1.1: none)
  std::uint32_t subchunk;     // Huffman sub-chunk (streams from before format 1.2: 0, none)
};

// Inputs from integer arithmetic and exact double operations only, so they
// are the same on every machine.
template <class T>
std::vector<T> golden_input(const Dims& d) {
  std::vector<T> v(d.count());
  for (std::uint64_t i = 0; i < v.size(); ++i) {
    const std::int64_t x = i % d.n[0], y = i / d.n[0] % d.n[1], z = i / (d.n[0] * d.n[1]);
    const std::int64_t h = (x * 7919 + y * 104729 + z * 1299709) % 1013;
    v[i] = T(0.01 * double(x * y) - 0.003 * double(z * z) + 0.5 * double(x) + 1e-4 * double(h));
  }
  v[3] = std::numeric_limits<T>::quiet_NaN();  // a verbatim element
  return v;
}

const std::vector<Golden> kGolden = {
    {"lorenzo_f32_3d.ksz", DType::F32, {24, 16, 8}, ErrorMode::REL, 1e-3, 0x77245E0Cu, LosslessId::None, 0},
    {"lorenzo_f64_1d.ksz", DType::F64, {3000}, ErrorMode::ABS, 1e-6, 0x823DB6EBu, LosslessId::None, 0},
    {"lorenzo_f32_4d.ksz", DType::F32, {6, 5, 4, 3}, ErrorMode::ABS, 0.05, 0xEE16CC06u, LosslessId::None, 0},
    // Format 1.1: the zero-byte elimination pass on the Huffman bitstream.
    {"lorenzo_f32_3d_zbe.ksz", DType::F32, {64, 64, 16}, ErrorMode::REL, 1e-2, 0x0FFA0827u, LosslessId::ZeroBytes, 0},
    // Format 1.2: Huffman sub-chunks (key 7, segment 8), with the lossless pass; the default options.
    {"lorenzo_f32_3d_runs.ksz", DType::F32, {64, 64, 16}, ErrorMode::REL, 1e-2, 0x0FFA0827u, LosslessId::ZeroBytes,
     512},
};

std::vector<std::uint8_t> input_bytes(const Golden& g) {
  const Dims d = dims_of(g.dims);
  std::vector<std::uint8_t> b(d.count() * dtype_size(g.dtype));
  if (g.dtype == DType::F64) {
    auto v = golden_input<double>(d);
    std::memcpy(b.data(), v.data(), b.size());
  } else {
    auto v = golden_input<float>(d);
    std::memcpy(b.data(), v.data(), b.size());
  }
  return b;
}

Bytes compress_golden(const Golden& g, Backend b) {
  Options opt;
  opt.mode = g.mode;
  opt.bound = g.bound;
  opt.backend = b;
  opt.lossless = g.lossless;
  opt.huffman_subchunk = g.subchunk;
  const auto in = input_bytes(g);
  return compress(in.data(), g.dtype, dims_of(g.dims), opt);
}

std::string golden_path(const Golden& g) { return std::string(KSZ_SOURCE_DIR) + "/tests/golden/" + g.file; }

Bytes read_golden(const Golden& g) {
  std::ifstream f(golden_path(g), std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Golden, Update) {
  if (!std::getenv("KSZ_UPDATE_GOLDEN")) GTEST_SKIP() << "set KSZ_UPDATE_GOLDEN=1 to rewrite tests/golden";
  for (const auto& g : kGolden) {
    const auto s = compress_golden(g, Backend::Serial);
    std::ofstream(golden_path(g), std::ios::binary).write(reinterpret_cast<const char*>(s.data()), s.size());
    const Field f = decompress(s.data(), s.size(), Backend::Serial);
    std::printf("%s: %zu bytes, decoded crc 0x%08X\n", g.file, s.size(),
                container::crc32c(f.bytes.data(), f.bytes.size()));
  }
}

template <class Space>
class GoldenStreams : public ::testing::Test {};
TYPED_TEST_SUITE(GoldenStreams, ExecSpaces, ExecSpaceName);

TYPED_TEST(GoldenStreams, DecodeToPinnedBytes) {
  for (const auto& g : kGolden) {
    const auto s = read_golden(g);
    ASSERT_FALSE(s.empty()) << golden_path(g);
    const Field f = decompress(s.data(), s.size(), backend_of<TypeParam>());
    EXPECT_EQ(container::crc32c(f.bytes.data(), f.bytes.size()), g.decoded_crc) << g.file;
    const auto in = input_bytes(g);
    const StreamInfo info = inspect(s.data(), s.size());
    EXPECT_EQ(info.lossless, g.lossless) << g.file;  // the pass is stored only where it shrinks the bitstream
    if (g.dtype == DType::F64)
      EXPECT_TRUE(within_bound(reinterpret_cast<const double*>(in.data()),
                               reinterpret_cast<const double*>(f.bytes.data()), f.dims.count(), info.abs_bound));
    else
      EXPECT_TRUE(within_bound(reinterpret_cast<const float*>(in.data()),
                               reinterpret_cast<const float*>(f.bytes.data()), f.dims.count(), info.abs_bound));
  }
}

TYPED_TEST(GoldenStreams, EncoderReproducesThem) {
  for (const auto& g : kGolden)
    EXPECT_TRUE(compress_golden(g, backend_of<TypeParam>()) == read_golden(g)) << g.file;
}

}  // namespace
}  // namespace ksz::test
