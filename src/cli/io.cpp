#include "src/cli/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/error.hpp"
#include "src/core/host_memory.hpp"

namespace ksz::cli {

Bytes read_file(const std::string& path) {
  struct stat st {};
  KSZ_EXPECTS(::stat(path.c_str(), &st) == 0, "cannot open '", path, "': ", std::strerror(errno));
  KSZ_EXPECTS(S_ISREG(st.st_mode), "'", path, "' is not a regular file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  KSZ_EXPECTS(f != nullptr, "cannot open '", path, "': ", std::strerror(errno));
  Bytes buf = huge_page_bytes(static_cast<std::size_t>(st.st_size));
  const std::size_t got = buf.empty() ? 0 : std::fread(buf.data(), 1, buf.size(), f);
  const bool err = std::ferror(f);
  std::fclose(f);
  KSZ_EXPECTS(!err && got == buf.size(), "cannot read '", path, "'");
  return buf;
}

void write_file_atomic(const std::string& path, const void* data, std::size_t size) {
  const std::string tmp = path + ".ksz-partial-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  KSZ_EXPECTS(f != nullptr, "cannot write '", path, "': ", std::strerror(errno));
  const std::size_t put = size ? std::fwrite(data, 1, size, f) : 0;
  const bool ok = put == size && std::fflush(f) == 0 && !std::ferror(f);
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    KSZ_EXPECTS(false, "cannot write '", path, "': ", std::strerror(e));
  }
}

}  // namespace ksz::cli
