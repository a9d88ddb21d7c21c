// The command line for the ParaSZ work: `--pipeline classic --threads N` and
// `-m pwrel`, end to end through files; the stream is the same for any N.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/common/fields.hpp"

#ifdef KSZ_CLI_PATH
namespace ksz::test {
namespace {

std::vector<std::uint8_t> slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

int ksz_cli(const std::string& args) {
  const int st = std::system((std::string(KSZ_CLI_PATH) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(CliParasz, ClassicPwrelRoundTripAnyThreadCount) {
  char tmpl[] = "/tmp/ksz-parasz-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const Dims d = dims_of({45, 33, 7});
  auto in = make_field<float>(Pattern::Noisy, d);
  for (std::size_t i = 0; i < in.size(); i += 17) in[i] = -in[i];
  in[5] = 0.0f;
  std::ofstream(dir + "/in.f32", std::ios::binary)
      .write(reinterpret_cast<const char*>(in.data()), std::streamsize(in.size() * 4));
  const std::string common = "compress -i " + dir + "/in.f32 -t f32 -d 45,33,7 -m pwrel -e 1e-3 --pipeline classic";
  ASSERT_EQ(ksz_cli(common + " --threads 1 -o " + dir + "/a.ksz"), 0);
  ASSERT_EQ(ksz_cli(common + " --threads 4 --check-width 16 -o " + dir + "/b.ksz --report"), 0);
  EXPECT_TRUE(slurp(dir + "/a.ksz") == slurp(dir + "/b.ksz"));
  ASSERT_EQ(ksz_cli("decompress --threads 3 -i " + dir + "/b.ksz -o " + dir + "/out.f32"), 0);
  const auto out = slurp(dir + "/out.f32");
  ASSERT_EQ(out.size(), in.size() * 4);
  const float* o = reinterpret_cast<const float*>(out.data());
  for (std::size_t i = 0; i < in.size(); ++i)
    ASSERT_LE(std::fabs(double(in[i]) - double(o[i])), 1e-3 * std::fabs(double(in[i]))) << i;
  EXPECT_EQ(o[5], 0.0f);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace ksz::test
#endif
