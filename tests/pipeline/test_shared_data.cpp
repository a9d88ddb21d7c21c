// Every real field in ../shared/data (when present): the bound on every
// element at REL 1e-2, 1e-3, 1e-4. Skipped, not failed, without the folder.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "src/api/ksz.hpp"
#include "tests/common/fields.hpp"

namespace ksz::test {
namespace {

struct Entry {
  std::string path;
  DType dtype;
  Dims dims;
};

std::vector<Entry> manifest() {
  std::vector<Entry> out;
  std::ifstream f(std::string(KSZ_SHARED_DATA_DIR) + "/MANIFEST.tsv");
  std::string line;
  std::getline(f, line);  // column names
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::string path, bytes, dtype, dims;
    std::getline(ls, path, '\t');
    std::getline(ls, bytes, '\t');
    std::getline(ls, dtype, '\t');
    std::getline(ls, dims, '\t');
    std::vector<std::uint64_t> ext;  // slowest..fastest in the manifest
    std::istringstream ds(dims);
    std::string tok;
    while (std::getline(ds, tok, 'x')) ext.insert(ext.begin(), std::stoull(tok));
    out.push_back({std::string(KSZ_SHARED_DATA_DIR) + "/" + path, dtype == "f64" ? DType::F64 : DType::F32,
                   dims_of(ext)});
  }
  return out;
}

template <class T>
void check(const Entry& e, const std::vector<char>& raw) {
  const T* in = reinterpret_cast<const T*>(raw.data());
  for (double rel : {1e-2, 1e-3, 1e-4}) {
    Options opt;
    opt.bound = rel;
    Report rep;
    const auto s = compress(in, e.dtype, e.dims, opt, &rep);
    const Field f = decompress(s.data(), s.size());
    EXPECT_TRUE(within_bound(in, reinterpret_cast<const T*>(f.bytes.data()), e.dims.count(), rep.abs_bound))
        << e.path << " REL " << rel;
  }
}

TEST(SharedData, BoundOnEveryElementOfEveryField) {
  const auto entries = manifest();
  if (entries.empty()) GTEST_SKIP() << "no ../shared/data beside the checkout";
  for (const auto& e : entries) {
    std::ifstream f(e.path, std::ios::binary);
    ASSERT_TRUE(f) << e.path;
    std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_EQ(raw.size(), e.dims.count() * dtype_size(e.dtype)) << e.path;
    if (e.dtype == DType::F64) check<double>(e, raw);
    else check<float>(e, raw);
  }
}

}  // namespace
}  // namespace ksz::test
