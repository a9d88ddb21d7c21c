// The ksz command line: a full round trip, and bad input answered by a clear
// one-line error, a non-zero exit and no output file.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tests/common/fields.hpp"

#ifdef KSZ_CLI_PATH
namespace ksz::test {
namespace {

struct CliResult {
  int code;
  std::string err, out;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ksz-cli-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    m_dir = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + m_dir + "'").c_str()); }
  std::string path(const std::string& name) const { return m_dir + "/" + name; }
  CliResult run_ksz(const std::string& args) const {
    const std::string err = path("stderr.txt"), out = path("stdout.txt");
    const std::string cmd =
        std::string(KSZ_CLI_PATH) + " --backend serial " + args + " >'" + out + "' 2>'" + err + "'";
    const int st = std::system(cmd.c_str());
    auto slurp = [](const std::string& p) {
      std::ifstream f(p);
      return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    };
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(err), slurp(out)};
  }
  static bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }
  void write(const std::string& name, const std::vector<std::uint8_t>& bytes) const {
    std::ofstream(path(name), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  std::vector<std::uint8_t> read(const std::string& name) const {
    std::ifstream f(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  // A clean failure: non-zero exit, one line naming the problem, no output.
  void expect_clean_failure(const CliResult& r, const std::string& output, const std::string& needle) const {
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("ksz: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(exists(output)) << output << " was left behind";
  }
  std::string m_dir;
};

TEST_F(Cli, GenCompressDecompressRoundTrip) {
  ASSERT_EQ(run_ksz("gen -o " + path("f.f32") + " -t f32 -d 48,32,16 --kind turbulent").code, 0);
  ASSERT_EQ(read("f.f32").size(), 48u * 32 * 16 * 4);
  ASSERT_EQ(run_ksz("compress -i " + path("f.f32") + " -o " + path("f.ksz") + " -t f32 -d 48,32,16 -m abs -e 1e-3 --report").code, 0);
  ASSERT_EQ(run_ksz("decompress -i " + path("f.ksz") + " -o " + path("g.f32")).code, 0);
  const CliResult info = run_ksz("info -i " + path("f.ksz"));
  ASSERT_EQ(info.code, 0);
  EXPECT_NE(info.out.find("Huffman chunk 4096 (sub-chunks of 512)"), std::string::npos) << info.out;
  ASSERT_EQ(run_ksz("compress -i " + path("f.f32") + " -o " + path("h.ksz") +
                    " -t f32 -d 48,32,16 -m abs -e 1e-3 --subchunk 0").code, 0);
  const CliResult plain = run_ksz("info -i " + path("h.ksz"));
  EXPECT_NE(plain.out.find("Huffman chunk 4096\n"), std::string::npos) << plain.out;
  EXPECT_LT(read("h.ksz").size(), read("f.ksz").size());  // the run lengths are gone
  const auto a = read("f.f32"), b = read("g.f32");
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(within_bound(reinterpret_cast<const float*>(a.data()), reinterpret_cast<const float*>(b.data()),
                           a.size() / 4, 1e-3));
}

TEST_F(Cli, LosslessPassChoices) {
  ASSERT_EQ(run_ksz("gen -o " + path("f.f32") + " -t f32 -d 64,48,32 --kind smooth").code, 0);
  const auto a = read("f.f32");
  for (const char* pass : {"zbe", "zwe", "none"}) {
    ASSERT_EQ(run_ksz("compress -i " + path("f.f32") + " -o " + path("f.ksz") + " -t f32 -d 64,48,32 -e 1e-2 " +
                      "--predictor interp --lossless " + pass)
                  .code,
              0)
        << pass;
    ASSERT_EQ(run_ksz("decompress -i " + path("f.ksz") + " -o " + path("g.f32")).code, 0) << pass;
    const auto s = read("f.ksz");
    const StreamInfo i = inspect(s.data(), s.size());
    EXPECT_STREQ(to_string(i.lossless), pass);
    const auto b = read("g.f32");
    ASSERT_EQ(a.size(), b.size());
    EXPECT_TRUE(within_bound(reinterpret_cast<const float*>(a.data()), reinterpret_cast<const float*>(b.data()),
                             a.size() / 4, i.abs_bound));
  }
}

TEST_F(Cli, RejectsBadArguments) {
  ASSERT_EQ(run_ksz("gen -o " + path("f.f32") + " -t f32 -d 10,10").code, 0);
  const std::string base = "compress -i " + path("f.f32") + " -o " + path("o.ksz");
  expect_clean_failure(run_ksz(base + " -t f32 -d 10,11"), path("o.ksz"), "bytes");
  expect_clean_failure(run_ksz(base + " -t f32 -d 10,10 -e 0"), path("o.ksz"), "bound");
  expect_clean_failure(run_ksz(base + " -t f32 -d 10,10 -e -1"), path("o.ksz"), "bound");
  expect_clean_failure(run_ksz(base + " -t f32 -d 10,10 -e nan"), path("o.ksz"), "bound");
  expect_clean_failure(run_ksz(base + " -t f16 -d 10,10"), path("o.ksz"), "dtype");
  expect_clean_failure(run_ksz(base + " -t f32 -d 10,10 -m foo"), path("o.ksz"), "mode");
  expect_clean_failure(run_ksz(base + " -t f32 -d 10,10 --lossless lz77"), path("o.ksz"), "lossless");
  expect_clean_failure(run_ksz(base + " -t f32 -d 0,10"), path("o.ksz"), "extent");
  expect_clean_failure(run_ksz(base + " -t f32 -d 10,10,10,10,10"), path("o.ksz"), "extents");
  expect_clean_failure(run_ksz("compress -i " + path("missing.f32") + " -o " + path("o.ksz") + " -t f32 -d 10"),
                       path("o.ksz"), "missing.f32");
  write("empty.f32", {});
  expect_clean_failure(run_ksz("compress -i " + path("empty.f32") + " -o " + path("o.ksz") + " -t f32 -d 10"),
                       path("o.ksz"), "bytes");
  expect_clean_failure(run_ksz("compress -i " + path("f.f32") + " -o " + m_dir + "/no/such/dir/o.ksz -t f32 -d 10,10"),
                       path("o.ksz"), "cannot write");
  expect_clean_failure(run_ksz("compress -i " + path("f.f32") + " -t f32 -d 10,10"), path("o.ksz"), "output");
  expect_clean_failure(run_ksz("frobnicate"), path("o.ksz"), "subcommand");
}

TEST_F(Cli, RejectsBadStreams) {
  ASSERT_EQ(run_ksz("gen -o " + path("f.f32") + " -t f64 -d 300").code, 0);
  ASSERT_EQ(run_ksz("compress -i " + path("f.f32") + " -o " + path("f.ksz") + " -t f64 -d 300 -e 1e-3").code, 0);
  const auto good = read("f.ksz");
  const std::string out = path("o.raw");
  for (std::size_t len : {std::size_t(0), std::size_t(7), std::size_t(20), good.size() / 2, good.size() - 1}) {
    write("t.ksz", std::vector<std::uint8_t>(good.begin(), good.begin() + len));
    expect_clean_failure(run_ksz("decompress -i " + path("t.ksz") + " -o " + out), out,
                         len == 0 || len == 7 ? "short" : "");
  }
  auto flipped = good;
  flipped[good.size() - 3] ^= 0x10;
  write("b.ksz", flipped);
  expect_clean_failure(run_ksz("decompress -i " + path("b.ksz") + " -o " + out), out, "checksum");
  write("x.ksz", read("f.f32"));
  expect_clean_failure(run_ksz("decompress -i " + path("x.ksz") + " -o " + out), out, "not a ksz stream");
}

// --frame-mb: a file compressed in frames, checked frame by frame (--report),
// described by info, decompressed within the bound; a damaged framed file
// answered as any bad stream is.
TEST_F(Cli, FramedFiles) {
  ASSERT_EQ(run_ksz("gen -o " + path("f.f32") + " -t f32 -d 128,128,40").code, 0);  // 2.5 MiB: 16 slices a MiB
  const std::string base = "compress -i " + path("f.f32") + " -o " + path("f.kszf") + " -t f32 -d 128,128,40 -e 1e-3";
  const CliResult c = run_ksz(base + " --frame-mb 1 --report");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("framed: 3 frames of 1.0 MiB"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("error bound respected on every element: yes"), std::string::npos) << c.out;
  const CliResult info = run_ksz("info -i " + path("f.kszf"));
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("dims 128x128x40"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("framed: 3 frames of 16 slices"), std::string::npos) << info.out;
  ASSERT_EQ(run_ksz("decompress -i " + path("f.kszf") + " -o " + path("g.f32")).code, 0);
  const auto a = read("f.f32"), b = read("g.f32");
  ASSERT_EQ(a.size(), b.size());
  const auto s = read("f.kszf");
  EXPECT_TRUE(within_bound(reinterpret_cast<const float*>(a.data()), reinterpret_cast<const float*>(b.data()),
                           a.size() / 4, inspect(s.data(), s.size()).abs_bound));
  write("t.kszf", std::vector<std::uint8_t>(s.begin(), s.end() - 5));
  expect_clean_failure(run_ksz("decompress -i " + path("t.kszf") + " -o " + path("o.raw")), path("o.raw"),
                       "framed file");
  expect_clean_failure(run_ksz("compress -i " + path("f.f32") + " -o " + path("q.kszf") +
                               " -t f32 -d 128,128,40 --frame-mb 1 --report quality"),
                       path("q.kszf"), "--frame-mb");
}

// `-i -`: values from standard input, compressed in frames as they come; a
// slowest extent of 0 takes as many slices as come, another must match.
TEST_F(Cli, CompressesStandardInput) {
  ASSERT_EQ(run_ksz("gen -o " + path("f.f32") + " -t f32 -d 128,128,40").code, 0);
  const std::string cat = "compress -i - -o " + path("s.kszf") + " -t f32 -m abs -e 1e-3 --frame-mb 1 ";
  const CliResult c = run_ksz(cat + "-d 128,128,0 --report <'" + path("f.f32") + "'");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("framed: 3 frames of 1.0 MiB"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("error bound respected on every element: yes"), std::string::npos) << c.out;
  const CliResult info = run_ksz("info -i " + path("s.kszf"));
  EXPECT_NE(info.out.find("dims 128x128x40"), std::string::npos) << info.out;
  ASSERT_EQ(run_ksz("decompress -i " + path("s.kszf") + " -o " + path("g.f32")).code, 0);
  const auto a = read("f.f32"), b = read("g.f32");
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(within_bound(reinterpret_cast<const float*>(a.data()), reinterpret_cast<const float*>(b.data()),
                           a.size() / 4, 1e-3));
  const auto first = read("s.kszf");
  ASSERT_EQ(run_ksz(cat + "-d 128,128,40 <'" + path("f.f32") + "'").code, 0);  // the count given: the same file
  EXPECT_EQ(read("s.kszf"), first);
  const std::string out = " -o " + path("t.kszf") + " -t f32 -m abs -e 1e-3 ";
  expect_clean_failure(run_ksz("compress -i -" + out + "-d 128,128,41 <'" + path("f.f32") + "'"), path("t.kszf"),
                       "held 40 slices");
  write("part.f32", std::vector<std::uint8_t>(a.begin(), a.begin() + 128 * 128 * 4 * 2 + 100));
  expect_clean_failure(run_ksz("compress -i -" + out + "-d 128,128,0 <'" + path("part.f32") + "'"), path("t.kszf"),
                       "inside a slice");
  expect_clean_failure(run_ksz("compress -i - -o " + path("t.kszf") + " -t f32 -m rel -d 128,128,0 </dev/null"),
                       path("t.kszf"), "REL");
  expect_clean_failure(run_ksz("compress -i -" + out + "-d 128,128,0 </dev/null"), path("t.kszf"), "no slices");
  expect_clean_failure(run_ksz("compress -i " + path("f.f32") + out + "-d 128,128,0"), path("t.kszf"), "extent");
}

}  // namespace
}  // namespace ksz::test
#endif
