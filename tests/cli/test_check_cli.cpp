// `ksz check`: a table on stdout, JSON and SVG files written, bad input refused
// with one line and no output file.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/common/fields.hpp"

#ifdef KSZ_CLI_PATH
namespace {

struct CheckCli : ::testing::Test {
  void SetUp() override {
    char tmpl[] = "/tmp/ksz-check-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string path(const std::string& n) const { return dir + "/" + n; }
  int run(const std::string& args) const {
    const std::string cmd = std::string(KSZ_CLI_PATH) + " --backend serial check " + args + " >'" + path("out.txt") +
                            "' 2>'" + path("err.txt") + "'";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::string slurp(const std::string& n) const {
    std::ifstream f(path(n));
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  template <class T>
  void write(const std::string& n, const std::vector<T>& v) const {
    std::ofstream(path(n), std::ios::binary).write(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string dir;
};

TEST_F(CheckCli, TableJsonAndPlots) {
  const ksz::Dims d = ksz::test::dims_of({24, 20, 10});
  auto a = ksz::test::make_field<float>(ksz::test::Pattern::Noisy, d);
  auto b = a;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] += float((i % 7) * 1e-4);
  write("a.f32", a);
  write("b.f32", b);
  ASSERT_EQ(run("-a " + path("a.f32") + " -b " + path("b.f32") + " -t f32 -d 24,20,10 --json " + path("q.json") +
                " --svg " + path("plot") + " --window 4"),
            0)
      << slurp("err.txt");
  const std::string out = slurp("out.txt"), js = slurp("q.json");
  EXPECT_NE(out.find("PSNR (dB)"), std::string::npos) << out;
  EXPECT_NE(out.find("SSIM mean"), std::string::npos) << out;
  EXPECT_NE(js.find("\"psnr_db\": "), std::string::npos);
  EXPECT_NE(js.find("\"autocorr\": ["), std::string::npos);
  EXPECT_NE(slurp("plot_err_pdf.svg").find("</svg>"), std::string::npos);
  EXPECT_NE(slurp("plot_autocorr.svg").find("</svg>"), std::string::npos);
  // pattern 1 only: no stencil or SSIM sections.
  ASSERT_EQ(run("-a " + path("a.f32") + " -b " + path("a.f32") + " -d 24,20,10 --metrics pattern1"), 0);
  EXPECT_EQ(slurp("out.txt").find("SSIM"), std::string::npos);
  EXPECT_NE(slurp("out.txt").find("reconstruction is exact"), std::string::npos);
}

TEST_F(CheckCli, BadInputRefused) {
  write("a.f32", std::vector<float>(100, 1.f));
  EXPECT_EQ(run("-a " + path("a.f32") + " -b " + path("a.f32") + " -d 10,11 --json " + path("q.json")), 1);
  EXPECT_NE(slurp("err.txt").find("ksz: error: "), std::string::npos);
  EXPECT_NE(::access(path("q.json").c_str(), F_OK), 0);
  EXPECT_EQ(run("-a " + path("a.f32") + " -b " + path("a.f32") + " -d 10,10 --metrics bogus"), 1);
  EXPECT_EQ(run("-a " + path("a.f32") + " -b " + path("a.f32") + " -d 10,10 --lags 99"), 1);
}

TEST_F(CheckCli, CompressReportQuality) {
  const ksz::Dims d = ksz::test::dims_of({30, 20, 8});
  write("a.f32", ksz::test::make_field<float>(ksz::test::Pattern::Smooth, d));
  const std::string cmd = std::string(KSZ_CLI_PATH) + " --backend serial compress -i " + path("a.f32") + " -o " +
                          path("a.ksz") + " -d 30,20,8 -e 1e-3 --report quality >'" + path("out.txt") + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp("out.txt");
  const std::string out = slurp("out.txt");
  EXPECT_NE(out.find("error bound respected on every element: yes"), std::string::npos) << out;
  EXPECT_NE(out.find("SSIM mean"), std::string::npos) << out;
  EXPECT_NE(out.find("Laplacian err max"), std::string::npos) << out;
}

}  // namespace
#endif
