// Probe: how fast one process can put a large buffer into one file, by
// strategy (perf/NOTES.md, "Framed files": decompression's single-thread
// write(2) of 4 GiB ran at 3.5 GB/s on the H200 host, and eight threads'
// pwrite ran no faster). Each strategy writes the same prefaulted buffer to a
// new file in DIR, timed from open to close (no fsync: the page cache, as the
// CLI leaves it), three runs, the file removed between them:
//   write    one thread, write(2) of 1 GiB at a time (what OutFile does)
//   pwriteN  N threads, each pwrite(2) of its contiguous share
//   fallocN  posix_fallocate of the whole size first, then pwriteN
//   mmapN    posix_fallocate (which sets the size), mmap(MAP_SHARED), N
//            threads memcpy their shares, munmap
//   directN  O_DIRECT, N threads pwrite 8 MiB aligned pieces
//   g++ -O2 -std=c++17 -pthread -o file_writes perf/probe/file_writes.cpp
//   ./file_writes [GiB=4] [DIR=/tmp]
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;
static void die(const char* what) {
  std::perror(what);
  std::exit(1);
}
static void parallel(int n, const std::function<void(int)>& f) {
  std::vector<std::thread> t;
  for (int i = 0; i < n; ++i) t.emplace_back(f, i);
  for (auto& x : t) x.join();
}
static void pwrite_all(int fd, const char* p, size_t n, off_t at) {
  while (n > 0) {
    const ssize_t put = ::pwrite(fd, p, std::min<size_t>(n, size_t(1) << 30), at);
    if (put <= 0) die("pwrite");
    p += put, n -= size_t(put), at += put;
  }
}

int main(int argc, char** argv) {
  const size_t bytes = size_t((argc > 1 ? std::atof(argv[1]) : 4.0) * double(size_t(1) << 30)) / (1 << 21) * (1 << 21);
  const std::string path = std::string(argc > 2 ? argv[2] : "/tmp") + "/ksz-file-writes.tmp";
  char* buf = static_cast<char*>(std::aligned_alloc(1 << 21, bytes));
  if (!buf) die("alloc");
  for (size_t i = 0; i < bytes; i += 4096) buf[i] = char(i >> 12);
  const auto split = [&](int k, int n, size_t align) {
    const size_t units = (bytes + align - 1) / align;
    const size_t lo = std::min(bytes, units * k / n * align), hi = std::min(bytes, units * (k + 1) / n * align);
    return std::pair<size_t, size_t>(lo, hi);
  };
  struct Way {
    std::string name;
    std::function<void()> run;
  };
  std::vector<Way> ways;
  ways.push_back({"write", [&] {
                    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                    if (fd < 0) die("open");
                    const char* p = buf;
                    for (size_t n = bytes; n > 0;) {
                      const ssize_t put = ::write(fd, p, std::min<size_t>(n, size_t(1) << 30));
                      if (put <= 0) die("write");
                      p += put, n -= size_t(put);
                    }
                    ::close(fd);
                  }});
  for (int th : {4, 16}) {
    for (int fall = 0; fall < 2; ++fall)
      ways.push_back({std::string(fall ? "falloc" : "pwrite") + std::to_string(th), [&, th, fall] {
                        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                        if (fd < 0) die("open");
                        if (fall && ::posix_fallocate(fd, 0, off_t(bytes)) != 0) die("fallocate");
                        parallel(th, [&](int k) {
                          const auto [lo, hi] = split(k, th, 1 << 20);
                          pwrite_all(fd, buf + lo, hi - lo, off_t(lo));
                        });
                        ::close(fd);
                      }});
    ways.push_back({"mmap" + std::to_string(th), [&, th] {
                      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
                      if (fd < 0) die("open");
                      if (::posix_fallocate(fd, 0, off_t(bytes)) != 0) die("fallocate");
                      void* m = ::mmap(nullptr, bytes, PROT_WRITE, MAP_SHARED, fd, 0);
                      if (m == MAP_FAILED) die("mmap");
                      parallel(th, [&](int k) {
                        const auto [lo, hi] = split(k, th, 1 << 21);
                        std::memcpy(static_cast<char*>(m) + lo, buf + lo, hi - lo);
                      });
                      ::munmap(m, bytes);
                      ::close(fd);
                    }});
    ways.push_back({"direct" + std::to_string(th), [&, th] {
                      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
                      if (fd < 0) {
                        std::printf("  (O_DIRECT refused here)\n");
                        return;
                      }
                      parallel(th, [&](int k) {
                        const size_t piece = size_t(8) << 20;
                        for (size_t at = size_t(k) * piece; at < bytes; at += size_t(th) * piece)
                          pwrite_all(fd, buf + at, std::min(piece, bytes - at), off_t(at));
                      });
                      ::close(fd);
                    }});
  }
  std::printf("%.1f GiB into %s\n", double(bytes) / (1 << 30), path.c_str());
  for (auto& w : ways) {
    std::printf("%-9s", w.name.c_str());
    for (int r = 0; r < 3; ++r) {
      ::unlink(path.c_str());
      const auto t = Clock::now();
      w.run();
      const double s = std::chrono::duration<double>(Clock::now() - t).count();
      std::printf("  %6.3f s %5.2f GB/s", s, double(bytes) / s / 1e9);
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  ::unlink(path.c_str());
}
