// Shared benchmark harness for perf/<stage>/bench_*.cpp (header-only: the
// CMake glob builds every perf/*/*.cpp as its own benchmark).
//
//  - Args: "--key value" options, comma lists, dims lists; unknown keys are errors.
//  - RunInfo: machine, backend, Kokkos version and configuration, ksz revision,
//    date, whether the CUDA specializations were on (KSZ_PORTABLE_ONLY).
//  - MemoryTracker: live and peak bytes per Kokkos memory space, counted by
//    Kokkos Tools allocate/deallocate callbacks (no tool library needed).
//  - load_field / measure / Output: one configuration timed (median over reps
//    after a warm-up, the device fenced inside every timed region), its peak
//    device memory, the error bound checked on every element, and the result
//    as text, JSON and CSV rows (one per stage and per total; CSV appends so
//    runs on different machines land in one table).
#pragma once
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <unistd.h>

#include "cuda_specializations/cuda_specializations.hpp"
#include "portable/generate/field.hpp"
#include "src/api/ksz.hpp"
#include "src/container/container.hpp"
#include "src/pipeline/workspace.hpp"

#if __has_include("ksz_perf_git.hpp")
#include "ksz_perf_git.hpp"  // KSZ_PERF_GIT, written at build time by perf/CMakeLists.txt
#endif
#ifndef KSZ_PERF_GIT
#define KSZ_PERF_GIT "unknown"
#endif

namespace ksz::perf {

// ---------------------------------------------------------------- arguments

// "--key value" pairs and bare "--flag"s. Every key a benchmark reads is
// marked used; finish() rejects the rest, so a typo is an error, not a default.
class Args {
 public:
  Args(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string k = argv[i];
      if (k.rfind("--kokkos", 0) == 0) continue;  // Kokkos' own (--kokkos-threads=N)
      if (k.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + k + "'");
      k = k.substr(2);
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
        m_values[k] = argv[++i];
      else
        m_values[k] = "";
    }
  }
  bool has(const std::string& k) const {
    m_used.push_back(k);
    return m_values.count(k) != 0;
  }
  std::string str(const std::string& k, const std::string& def) const {
    return has(k) ? m_values.at(k) : def;
  }
  double num(const std::string& k, double def) const { return has(k) ? std::stod(m_values.at(k)) : def; }
  int integer(const std::string& k, int def) const { return has(k) ? std::stoi(m_values.at(k)) : def; }
  // Comma-separated values ("1e-2,1e-3").
  std::vector<std::string> list(const std::string& k, const std::string& def) const { return split(str(k, def), ','); }
  // Throws naming every key no benchmark code asked for.
  void finish(const std::string& usage) const {
    std::string bad;
    for (auto& [k, v] : m_values)
      if (std::find(m_used.begin(), m_used.end(), k) == m_used.end()) bad += " --" + k;
    if (!bad.empty()) throw std::invalid_argument("unknown option(s):" + bad + "\nusage: " + usage);
  }

  static std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::size_t p = 0;
    while (p <= s.size() && !s.empty()) {
      const std::size_t q = s.find(sep, p);
      out.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
      if (q == std::string::npos) break;
      p = q + 1;
    }
    return out;
  }
  // "1,2,4" -> numbers.
  static std::vector<std::uint64_t> numbers(const std::string& s) {
    std::vector<std::uint64_t> out;
    for (const auto& p : split(s, ',')) out.push_back(std::stoull(p));
    return out;
  }
  // "512,512,512" (fastest first, as the CLI takes them) -> Dims.
  static Dims parse_dims(const std::string& s) {
    const auto parts = split(s, ',');
    if (parts.empty() || parts.size() > 4) throw std::invalid_argument("dims '" + s + "': 1 to 4 extents");
    Dims d;
    d.rank = int(parts.size());
    for (std::size_t i = 0; i < parts.size(); ++i) d.n[i] = std::stoull(parts[i]);
    return d;
  }
  // "64,64,64/512,512/262144": several shapes, one process.
  static std::vector<Dims> parse_dims_list(const std::string& s) {
    std::vector<Dims> out;
    for (auto& p : split(s, '/')) out.push_back(parse_dims(p));
    return out;
  }

 private:
  std::map<std::string, std::string> m_values;
  mutable std::vector<std::string> m_used;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// ---------------------------------------------------------------- text helpers

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += c;
  }
  return o;
}
inline std::string jstr(const std::string& s) { return "\"" + json_escape(s) + "\""; }
// JSON has no inf/nan: null.
inline std::string jnum(double x) {
  if (!std::isfinite(x)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}
inline std::string bytes_str(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, ++i;
  char s[32];
  std::snprintf(s, sizeof s, "%.3g %s", b, u[i]);
  return s;
}

// ---------------------------------------------------------------- run metadata

struct RunInfo {
  std::string host, cpu_model;
  int cpu_threads = 0;                   // logical CPUs the OS reports
  std::string gpu_name;                  // empty unless the backend is CUDA
  std::uint64_t gpu_mem_total = 0, gpu_mem_free = 0;
  std::uint64_t host_mem_available = 0;  // /proc/meminfo MemAvailable
  std::string backend;                   // Kokkos execution space name
  int concurrency = 0;
  std::string omp_num_threads, omp_proc_bind;
  std::string kokkos_version, kokkos_devices, kokkos_arch;
  std::string ksz_version, git;          // version_string(); git revision of the benchmark build
  std::string date;                      // UTC, ISO 8601
  std::string specialized;               // "on"/"off" (CUDA specializations), "n/a" off CUDA

  // Free bytes where the benchmark's data lives (device or host memory).
  std::uint64_t free_bytes() const { return gpu_name.empty() ? host_mem_available : gpu_mem_free; }
  // Short label for plots and CSV: backend, specialization, threads.
  std::string series() const {
    if (!gpu_name.empty()) return backend + (specialized == "off" ? " portable" : " specialized");
    return backend + " " + std::to_string(concurrency) + " thr";
  }
};

namespace impl {
inline std::string read_first(const char* path, const std::string& key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) {
      auto p = line.find(':');
      if (p == std::string::npos) continue;
      p = line.find_first_not_of(" \t", p + 1);
      return p == std::string::npos ? "" : line.substr(p);
    }
  return "";
}
inline std::string env(const char* k) {
  const char* v = std::getenv(k);
  return v ? v : "";
}
}  // namespace impl

template <class Space>
RunInfo collect_run_info(const Space&) {
  RunInfo r;
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  r.host = h;
  r.cpu_model = impl::read_first("/proc/cpuinfo", "model name");
  r.cpu_threads = int(std::thread::hardware_concurrency());
  const std::string avail = impl::read_first("/proc/meminfo", "MemAvailable");
  if (!avail.empty()) r.host_mem_available = std::stoull(avail) * 1024;  // "123456 kB"
  r.backend = Space::name();
  r.concurrency = int(Space().concurrency());
  r.omp_num_threads = impl::env("OMP_NUM_THREADS");
  r.omp_proc_bind = impl::env("OMP_PROC_BIND");
  r.specialized = "n/a";
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Space, Kokkos::Cuda>) {
    const cudaDeviceProp& p = Kokkos::Cuda().cuda_device_prop();
    r.gpu_name = p.name;
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) r.gpu_mem_free = free, r.gpu_mem_total = total;
    else r.gpu_mem_total = p.totalGlobalMem;
    r.specialized = cuda_spec::enabled() ? "on" : "off";
  }
#endif
  r.kokkos_version = std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
                     "." + std::to_string(KOKKOS_VERSION % 100);
  std::string dev, arch;
#if defined(KOKKOS_ENABLE_CUDA)
  dev += " Cuda";
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  dev += " OpenMP";
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
  dev += " Serial";
#endif
  // The architectures ksz builds for (cmake/bootstrap_deps.sh, KSZ_CUDA_ARCH) and common host ones.
#define KSZ_PERF_ARCH(A) arch += " " #A;
#if defined(KOKKOS_ARCH_HOPPER90)
  KSZ_PERF_ARCH(HOPPER90)
#endif
#if defined(KOKKOS_ARCH_ADA89)
  KSZ_PERF_ARCH(ADA89)
#endif
#if defined(KOKKOS_ARCH_AMPERE80)
  KSZ_PERF_ARCH(AMPERE80)
#endif
#if defined(KOKKOS_ARCH_AMPERE86)
  KSZ_PERF_ARCH(AMPERE86)
#endif
#if defined(KOKKOS_ARCH_TURING75)
  KSZ_PERF_ARCH(TURING75)
#endif
#if defined(KOKKOS_ARCH_VOLTA70)
  KSZ_PERF_ARCH(VOLTA70)
#endif
#if defined(KOKKOS_ARCH_PASCAL60)
  KSZ_PERF_ARCH(PASCAL60)
#endif
#if defined(KOKKOS_ARCH_ZEN3)
  KSZ_PERF_ARCH(ZEN3)
#endif
#if defined(KOKKOS_ARCH_ZEN2)
  KSZ_PERF_ARCH(ZEN2)
#endif
#if defined(KOKKOS_ARCH_SKX)
  KSZ_PERF_ARCH(SKX)
#endif
#if defined(KOKKOS_ARCH_ARMV80) || defined(KOKKOS_ARCH_ARMV81) || defined(KOKKOS_ARCH_ARMV8_THUNDERX2)
  KSZ_PERF_ARCH(ARMV8)
#endif
#undef KSZ_PERF_ARCH
  r.kokkos_devices = dev.empty() ? "" : dev.substr(1);
  r.kokkos_arch = arch.empty() ? "generic" : arch.substr(1);
  r.ksz_version = version_string();
  r.git = KSZ_PERF_GIT;
  char d[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%SZ", &tm);
  r.date = d;
  return r;
}

inline std::string to_json(const RunInfo& r) {
  std::ostringstream o;
  o << "{\"host\":" << jstr(r.host) << ",\"cpu_model\":" << jstr(r.cpu_model) << ",\"cpu_threads\":" << r.cpu_threads
    << ",\"gpu_name\":" << jstr(r.gpu_name) << ",\"gpu_mem_total\":" << r.gpu_mem_total
    << ",\"gpu_mem_free\":" << r.gpu_mem_free << ",\"host_mem_available\":" << r.host_mem_available
    << ",\"free_bytes\":" << r.free_bytes() << ",\"backend\":" << jstr(r.backend)
    << ",\"concurrency\":" << r.concurrency << ",\"omp_num_threads\":" << jstr(r.omp_num_threads)
    << ",\"omp_proc_bind\":" << jstr(r.omp_proc_bind) << ",\"specialized\":" << jstr(r.specialized)
    << ",\"series\":" << jstr(r.series()) << ",\"kokkos_version\":" << jstr(r.kokkos_version)
    << ",\"kokkos_devices\":" << jstr(r.kokkos_devices) << ",\"kokkos_arch\":" << jstr(r.kokkos_arch)
    << ",\"ksz_version\":" << jstr(r.ksz_version) << ",\"git\":" << jstr(r.git) << ",\"date\":" << jstr(r.date)
    << "}";
  return o.str();
}

inline void print(const RunInfo& r) {
  std::printf("machine  %s: %s, %d CPU threads, %s available", r.host.c_str(), r.cpu_model.c_str(), r.cpu_threads,
              bytes_str(double(r.host_mem_available)).c_str());
  if (!r.gpu_name.empty())
    std::printf("; GPU %s, %s (%s free)", r.gpu_name.c_str(), bytes_str(double(r.gpu_mem_total)).c_str(),
                bytes_str(double(r.gpu_mem_free)).c_str());
  std::printf("\nbackend  %s, concurrency %d, CUDA specializations %s", r.backend.c_str(), r.concurrency,
              r.specialized.c_str());
  if (!r.omp_num_threads.empty() || !r.omp_proc_bind.empty())
    std::printf(", OMP_NUM_THREADS=%s OMP_PROC_BIND=%s", r.omp_num_threads.c_str(), r.omp_proc_bind.c_str());
  std::printf("\nsoftware ksz %s, bench git %s; Kokkos %s (%s; arch %s); %s\n", r.ksz_version.c_str(), r.git.c_str(),
              r.kokkos_version.c_str(), r.kokkos_devices.c_str(), r.kokkos_arch.c_str(), r.date.c_str());
}

// ---------------------------------------------------------------- peak memory

// Live and peak bytes per Kokkos memory space ("Host", "Cuda",
// "CudaHostPinned", ...) from the Kokkos Tools allocate/deallocate
// callbacks. Installing a callback makes Kokkos::Profiling::profileLibraryLoaded()
// true, so every allocation reports (Kokkos 3.4 and 4.x) without a tool
// library. Kept off during timed runs: with it on, each kernel launch also
// builds its profiling name. Counts only what Kokkos allocates (View data,
// its own scratch); ksz does no raw cudaMalloc. Sizes are the logical sizes
// Kokkos reports (the 128-byte allocation header excluded).
class MemoryTracker {
 public:
  // False when a Kokkos Tools library is loaded (its callbacks are kept).
  static bool start() {
    if (Kokkos::Profiling::profileLibraryLoaded()) return false;
    auto& s = state();
    {
      std::lock_guard<std::mutex> g(s.lock);
      s.live_ptrs.clear();
      s.spaces.clear();
      s.at_peak.clear();
    }
    Kokkos::Tools::Experimental::set_allocate_data_callback(&on_alloc);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(&on_dealloc);
    return true;
  }
  static void stop() {
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  }
  // From here, peak(space) counts bytes above what is live now.
  static void reset() {
    auto& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    for (auto& [k, c] : s.spaces) c.base = c.peak = c.live;
    s.at_peak.clear();
    s.reset_seq = s.seq;
  }
  // The buffers allocated since reset() and live at its high-water mark in
  // `space` (label, bytes), largest first: they add up to peak(space).
  static std::vector<std::pair<std::string, std::uint64_t>> at_peak(const std::string& space) {
    auto& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    auto it = s.at_peak.find(space);
    return it == s.at_peak.end() ? std::vector<std::pair<std::string, std::uint64_t>>{} : it->second;
  }
  // Highest live bytes in `space` since reset(), minus those live at reset().
  static std::uint64_t peak(const std::string& space) {
    auto& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    auto it = s.spaces.find(space);
    return it == s.spaces.end() ? 0 : it->second.peak - it->second.base;
  }
  static std::vector<std::pair<std::string, std::uint64_t>> peaks() {
    auto& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    std::vector<std::pair<std::string, std::uint64_t>> v;
    for (auto& [k, c] : s.spaces) v.emplace_back(k, c.peak - c.base);
    return v;
  }

 private:
  struct Counter {
    std::uint64_t live = 0, peak = 0, base = 0;
  };
  struct Live {
    std::string space, label;
    std::uint64_t bytes, seq;
  };
  struct State {
    std::mutex lock;
    std::unordered_map<const void*, Live> live_ptrs;
    std::map<std::string, Counter> spaces;
    std::map<std::string, std::vector<std::pair<std::string, std::uint64_t>>> at_peak;  // per space
    std::uint64_t seq = 0, reset_seq = 0;  // allocation count; its value at reset()
  };
  static State& state() {
    static State s;  // outlives Kokkos::finalize (function-local static)
    return s;
  }
  static void on_alloc(Kokkos::Tools::SpaceHandle h, const char* label, const void* ptr, std::uint64_t size) {
    auto& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    s.live_ptrs[ptr] = {h.name, label ? label : "", size, s.seq++};
    Counter& c = s.spaces[h.name];
    c.live += size;
    if (c.live > c.peak) {  // a new high-water mark: remember who holds it (tens of buffers)
      c.peak = c.live;
      auto& v = s.at_peak[h.name];
      v.clear();
      for (auto& [p, l] : s.live_ptrs)
        if (l.space == h.name && l.seq >= s.reset_seq) v.emplace_back(l.label, l.bytes);
      std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
    }
  }
  static void on_dealloc(Kokkos::Tools::SpaceHandle, const char*, const void* ptr, std::uint64_t) {
    auto& s = state();
    std::lock_guard<std::mutex> g(s.lock);
    auto it = s.live_ptrs.find(ptr);
    if (it == s.live_ptrs.end()) return;  // allocated before start()
    s.spaces[it->second.space].live -= it->second.bytes;
    s.live_ptrs.erase(it);
  }
};

// ---------------------------------------------------------------- data

template <class Space, class T>
struct Field {
  Kokkos::View<T*, typename Space::memory_space> data;
  Dims dims;
  std::string name;    // "turbulent", "smooth", or the input's name
  std::string source;  // "generated seed 1" or the file path
};

template <class T>
constexpr const char* dtype_name() {
  return sizeof(T) == 4 ? "f32" : "f64";
}

// Generated (kind turbulent|smooth|noise, seeded) on the device.
template <class Space, class T>
Field<Space, T> generate_field(const Space& space, const std::string& kind, const Dims& d, std::uint32_t seed) {
  generate::FieldSpec spec;
  if (kind == "turbulent") spec.kind = generate::Kind::Turbulent;
  else if (kind == "smooth") spec.kind = generate::Kind::Smooth;
  else if (kind == "noise") spec.kind = generate::Kind::Noise;
  else throw std::invalid_argument("--kind " + kind + ": turbulent, smooth or noise");
  const Shape3 s = effective_shape(d);
  spec.seed = seed, spec.n0 = s.n[0], spec.n1 = s.n[1], spec.n2 = s.n[2];
  Field<Space, T> f{Kokkos::View<T*, typename Space::memory_space>("bench::field", d.count()), d, kind,
                    "generated seed " + std::to_string(seed)};
  generate::fill<Space, T>(space, spec, f.data);
  space.fence();
  return f;
}

// A raw little-endian file of dims.count() values of T, copied to the device.
template <class Space, class T>
Field<Space, T> read_field(const Space& space, const std::string& path, const Dims& d, const std::string& name) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::invalid_argument("cannot open " + path);
  const std::uint64_t bytes = std::uint64_t(in.tellg());
  if (bytes != d.count() * sizeof(T))
    throw std::invalid_argument(path + ": " + std::to_string(bytes) + " bytes, dims " + d.str() + " need " +
                                std::to_string(d.count() * sizeof(T)));
  in.seekg(0);
  Field<Space, T> f{Kokkos::View<T*, typename Space::memory_space>("bench::field", d.count()), d,
                    name.empty() ? path : name, path};
  auto h = Kokkos::create_mirror_view(f.data);
  in.read(reinterpret_cast<char*>(h.data()), std::streamsize(bytes));
  Kokkos::deep_copy(space, f.data, h);
  space.fence();
  return f;
}

// ---------------------------------------------------------------- bound check

namespace impl {
// Named functors (not lambdas): see cmake/lint.sh. A pair of NaNs (stored
// verbatim) or equal values count as exact.
template <class T, class Mem>
struct AbsError {
  Kokkos::View<const T*, Mem> a, b;
  KOKKOS_INLINE_FUNCTION double err(std::uint64_t i) const {
    const double x = double(a(i)), y = double(b(i));
    if (x == y || (x != x && y != y)) return 0;
    return ::fabs(x - y);  // NaN when only one side is NaN
  }
};
template <class T, class Mem>
struct MaxError : AbsError<T, Mem> {
  KOKKOS_INLINE_FUNCTION void operator()(std::uint64_t i, double& m) const {
    const double e = this->err(i);
    if (e > m) m = e;
  }
};
template <class T, class Mem>
struct Violations : AbsError<T, Mem> {
  double bound;
  KOKKOS_INLINE_FUNCTION void operator()(std::uint64_t i, std::uint64_t& c) const {
    if (!(this->err(i) <= bound)) ++c;
  }
};
template <class T, class Mem>
struct SquaredError : AbsError<T, Mem> {
  KOKKOS_INLINE_FUNCTION void operator()(std::uint64_t i, double& s) const {
    const double e = this->err(i);
    if (e == e && e < 1e300) s += e * e;  // finite pairs only
  }
};
}  // namespace impl

struct BoundCheck {
  double max_abs_error = 0, abs_bound = 0, psnr = 0;
  std::uint64_t violations = 0;
  bool held() const { return violations == 0; }
};

// Every element of `b` against `a`; PSNR over the value range [lo, hi].
template <class Space, class T>
BoundCheck check_bound(const Space& space, Kokkos::View<const T*, typename Space::memory_space> a,
                       Kokkos::View<const T*, typename Space::memory_space> b, double abs_bound, double lo, double hi) {
  using Mem = typename Space::memory_space;
  BoundCheck r;
  r.abs_bound = abs_bound;
  const auto n = a.extent(0);
  if (b.extent(0) != n) {
    r.violations = n;
    return r;
  }
  const Kokkos::RangePolicy<Space> p(space, 0, n);
  Kokkos::parallel_reduce("bench::max_error", p, impl::MaxError<T, Mem>{{a, b}}, Kokkos::Max<double>(r.max_abs_error));
  Kokkos::parallel_reduce("bench::violations", p, impl::Violations<T, Mem>{{a, b}, abs_bound}, r.violations);
  double se = 0;
  Kokkos::parallel_reduce("bench::squared_error", p, impl::SquaredError<T, Mem>{{a, b}}, se);
  const double mse = se / double(n);
  r.psnr = mse > 0 ? 20 * std::log10(hi - lo) - 10 * std::log10(mse) : INFINITY;
  return r;
}

// ---------------------------------------------------------------- one configuration

struct StageStat {
  std::string name;
  double seconds = 0;  // median
};

struct OpResult {
  std::vector<StageStat> stages;  // pipeline order
  double kernels = 0, e2e = 0;    // medians, seconds
  std::uint64_t peak_device = 0;  // bytes, including the op's own input and output
  std::vector<std::pair<std::string, std::uint64_t>> peaks;  // bytes above the op's start, per space
  std::vector<std::pair<std::string, std::uint64_t>> at_peak;  // device buffers live at the peak (label, bytes)
};

struct Result {
  std::string bench, pipeline, data, source, dtype, mode, dims;
  int rank = 0;
  std::uint64_t elements = 0, input_bytes = 0, output_bytes = 0;
  double bound = 0, ratio = 0;
  int reps = 0;
  bool memory_tracked = false;
  BoundCheck check;
  OpResult c, d;
  std::vector<std::pair<std::string, std::string>> extra;  // bench-specific key/values (JSON-ready)

  double gbps(double s) const { return s > 0 ? double(input_bytes) / s / 1e9 : 0; }
  double peak_ratio(const OpResult& o) const { return double(o.peak_device) / double(input_bytes + output_bytes); }
};

namespace impl {
// Stage medians in the order stages first appear (the pipeline's order).
inline std::vector<StageStat> stage_medians(const std::vector<std::vector<StageTime>>& reps) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> t;
  for (auto& r : reps) {
    std::map<std::string, double> sum;  // a stage may end in several pieces (e.g. copy to device)
    for (auto& s : r) {
      if (!t.count(s.name) && !sum.count(s.name)) order.push_back(s.name);
      sum[s.name] += s.seconds;
    }
    for (auto& [name, sec] : sum) t[name].push_back(sec);
  }
  std::vector<StageStat> out;
  for (auto& n : order) out.push_back({n, median(t[n])});
  return out;
}
// Stages that are not kernels on resident data: the host stream's assembly
// (compress) and its copy to the device (decompress). "Kernels" is what cuSZ reports.
inline bool is_transfer_stage(const std::string& s) { return s == "gather+container" || s == "copy to device"; }
}  // namespace impl

// Times Pipeline (LorenzoPipeline<Space>, InterpPipeline<Space>, ...) on one
// field: a warm-up compress+decompress (memory tracked, untimed), then `reps`
// timed rounds. Kernels = sum of the pipeline's fenced stages minus the
// transfer stages; end to end = the whole call (device data -> host stream ->
// device data), fenced.
template <class Pipeline, class Space, class T>
Result measure(const Space& space, const Field<Space, T>& f, const Options& opt, int reps, bool track_memory,
               const std::string& bench, const std::string& pipeline) {
  using Mem = typename Space::memory_space;
  validate(sizeof(T) == 4 ? DType::F32 : DType::F64, f.dims, opt);
  Result r;
  r.bench = bench, r.pipeline = pipeline, r.data = f.name, r.source = f.source, r.dtype = dtype_name<T>();
  r.mode = opt.mode == ErrorMode::ABS ? "abs" : "rel";
  r.dims = f.dims.str(), r.rank = effective_shape(f.dims).rank;
  r.elements = f.dims.count(), r.input_bytes = r.elements * sizeof(T);
  r.bound = opt.bound, r.reps = reps;
  r.extra.push_back({"huffman_subchunk", std::to_string(opt.huffman_subchunk)});
  const Kokkos::View<const T*, Mem> in = f.data;
  Kokkos::View<T*, Mem> out;  // empty: the first decompress allocates it (and is counted)
  Bytes stream;
  Report rc0;

  // Warm-up, also the memory measurement: each call from a cold start, as the
  // first call in a process sees it (Kokkos' lazily grown scratch and the
  // pipeline's workspace included). The workspace outlives a call, so it is
  // released before each measured call; otherwise a call would reuse what an
  // earlier one (a larger field, or the other direction) left behind.
  using WS = pipeline::Workspace<Mem>;
  WS::release();
  r.memory_tracked = track_memory && MemoryTracker::start();
  MemoryTracker::reset();
  stream = Pipeline::template compress<T>(space, in, f.dims, opt, &rc0);
  space.fence();
  r.c.peak_device = r.input_bytes + MemoryTracker::peak(Mem::name());  // the input was resident before
  r.c.peaks = MemoryTracker::peaks();
  r.c.at_peak = MemoryTracker::at_peak(Mem::name());
  WS::release();
  MemoryTracker::reset();
  {
    Report rd0;
    const auto parsed = container::read(stream.data(), stream.size());
    Pipeline::template decompress<T>(space, parsed, out, &rd0);
    space.fence();
  }
  r.d.peak_device = MemoryTracker::peak(Mem::name());  // out allocated inside
  r.d.peaks = MemoryTracker::peaks();
  r.d.at_peak = MemoryTracker::at_peak(Mem::name());
  if (r.memory_tracked) MemoryTracker::stop();
  {  // Untimed: regrows the compress-only workspace buffers the release above freed.
    Report rw;
    stream = Pipeline::template compress<T>(space, in, f.dims, opt, &rw);
  }

  std::vector<std::vector<StageTime>> cst, dst;
  std::vector<double> ck, ce, dk, de;
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < reps; ++i) {
    Report rc, rd;
    space.fence();
    auto t0 = Clock::now();
    stream = Pipeline::template compress<T>(space, in, f.dims, opt, &rc);
    space.fence();
    ce.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    const auto parsed = container::read(stream.data(), stream.size());
    Pipeline::template decompress<T>(space, parsed, out, &rd);
    space.fence();
    de.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    double k = 0;
    for (auto& s : rc.stages) k += impl::is_transfer_stage(s.name) ? 0 : s.seconds;
    ck.push_back(k);
    k = 0;
    for (auto& s : rd.stages) k += impl::is_transfer_stage(s.name) ? 0 : s.seconds;
    dk.push_back(k);
    cst.push_back(rc.stages), dst.push_back(rd.stages);
  }
  r.c.stages = impl::stage_medians(cst), r.d.stages = impl::stage_medians(dst);
  r.c.kernels = median(ck), r.c.e2e = median(ce), r.d.kernels = median(dk), r.d.e2e = median(de);
  r.output_bytes = stream.size();
  r.ratio = double(r.input_bytes) / double(r.output_bytes);
  // Not timed: the bound on every element, so a fast wrong result cannot pass.
  r.check = check_bound<Space, T>(space, in, out, rc0.abs_bound, rc0.value_min, rc0.value_max);
  return r;
}

// ---------------------------------------------------------------- output

inline void print(const Result& r) {
  std::printf("\n== %s  %s %s %s (%s)  %s %g  reps %d\n", r.pipeline.c_str(), r.data.c_str(), r.dtype.c_str(),
              r.dims.c_str(), bytes_str(double(r.input_bytes)).c_str(), r.mode == "abs" ? "ABS" : "REL", r.bound,
              r.reps);
  std::printf("ratio %.3f  PSNR %.2f dB  max abs error %.6g  bound %.6g: %s\n", r.ratio, r.check.psnr,
              r.check.max_abs_error, r.check.abs_bound,
              r.check.held() ? "bound held on every element"
                             : ("BOUND VIOLATED on " + std::to_string(r.check.violations) + " elements").c_str());
  if (r.memory_tracked)
    std::printf("peak device memory: compress %s (%.2fx input+output), decompress %s (%.2fx)\n",
                bytes_str(double(r.c.peak_device)).c_str(), r.peak_ratio(r.c), bytes_str(double(r.d.peak_device)).c_str(),
                r.peak_ratio(r.d));
  else
    std::printf("peak device memory: not tracked (a Kokkos Tools library is loaded, or --no-memory)\n");
  auto held = [&](const char* op, const OpResult& o, const char* first) {
    std::printf("  %s peak holds: %s", op, first);
    std::size_t i = 0;
    for (; i < o.at_peak.size() && i < 6; ++i)
      std::printf("%s%s %s", i || *first ? ", " : "", o.at_peak[i].first.c_str(), bytes_str(double(o.at_peak[i].second)).c_str());
    if (i < o.at_peak.size()) std::printf(", %zu more", o.at_peak.size() - i);
    std::printf("\n");
  };
  if (r.memory_tracked) {
    const std::string in = "input (resident) " + bytes_str(double(r.input_bytes));
    held("compress", r.c, in.c_str());
    held("decompress", r.d, "");
  }
  auto row = [&](const std::string& what, double t) {
    std::printf("  %-40s %10.3f ms %9.2f GB/s\n", what.c_str(), t * 1e3, r.gbps(t));
  };
  std::printf("compress stages (median):\n");
  for (auto& s : r.c.stages) row(s.name, s.seconds);
  std::printf("decompress stages (median):\n");
  for (auto& s : r.d.stages) row(s.name, s.seconds);
  row("COMPRESS kernels (device-resident)", r.c.kernels);
  row("COMPRESS end to end (to host stream)", r.c.e2e);
  row("DECOMPRESS kernels (device-resident)", r.d.kernels);
  row("DECOMPRESS end to end (from host stream)", r.d.e2e);
  std::fflush(stdout);
}

inline std::string to_json(const Result& r) {
  std::ostringstream o;
  auto op = [&](const OpResult& x) {
    std::ostringstream s;
    s << "{\"stages\":[";
    for (std::size_t i = 0; i < x.stages.size(); ++i)
      s << (i ? "," : "") << "{\"name\":" << jstr(x.stages[i].name) << ",\"seconds\":" << jnum(x.stages[i].seconds)
        << ",\"gbps\":" << jnum(r.gbps(x.stages[i].seconds)) << "}";
    s << "],\"kernels_seconds\":" << jnum(x.kernels) << ",\"kernels_gbps\":" << jnum(r.gbps(x.kernels))
      << ",\"e2e_seconds\":" << jnum(x.e2e) << ",\"e2e_gbps\":" << jnum(r.gbps(x.e2e));
    if (r.memory_tracked) {
      s << ",\"peak_device_bytes\":" << x.peak_device << ",\"peak_ratio\":" << jnum(r.peak_ratio(x))
        << ",\"peak_above_start_by_space\":{";
      for (std::size_t i = 0; i < x.peaks.size(); ++i)
        s << (i ? "," : "") << jstr(x.peaks[i].first) << ":" << x.peaks[i].second;
      s << "},\"buffers_at_peak\":[";
      for (std::size_t i = 0; i < x.at_peak.size(); ++i)
        s << (i ? "," : "") << "{\"label\":" << jstr(x.at_peak[i].first) << ",\"bytes\":" << x.at_peak[i].second << "}";
      s << "]";
    }
    return s.str() + "}";
  };
  o << "{\"bench\":" << jstr(r.bench) << ",\"pipeline\":" << jstr(r.pipeline) << ",\"data\":" << jstr(r.data)
    << ",\"source\":" << jstr(r.source) << ",\"dtype\":" << jstr(r.dtype) << ",\"dims\":" << jstr(r.dims)
    << ",\"rank\":" << r.rank << ",\"elements\":" << r.elements << ",\"input_bytes\":" << r.input_bytes
    << ",\"output_bytes\":" << r.output_bytes << ",\"mode\":" << jstr(r.mode) << ",\"bound\":" << jnum(r.bound)
    << ",\"ratio\":" << jnum(r.ratio) << ",\"reps\":" << r.reps << ",\"abs_bound\":" << jnum(r.check.abs_bound)
    << ",\"max_abs_error\":" << jnum(r.check.max_abs_error) << ",\"violations\":" << r.check.violations
    << ",\"bound_held\":" << (r.check.held() ? "true" : "false") << ",\"psnr\":" << jnum(r.check.psnr);
  for (auto& [k, v] : r.extra) o << "," << jstr(k) << ":" << v;
  // Flat totals, as earlier perf/results/*.json carry them.
  o << ",\"compress_kernels_gbps\":" << jnum(r.gbps(r.c.kernels)) << ",\"compress_e2e_gbps\":" << jnum(r.gbps(r.c.e2e))
    << ",\"decompress_kernels_gbps\":" << jnum(r.gbps(r.d.kernels))
    << ",\"decompress_e2e_gbps\":" << jnum(r.gbps(r.d.e2e)) << ",\"compress\":" << op(r.c)
    << ",\"decompress\":" << op(r.d) << "}";
  return o.str();
}

inline const char* csv_header() {
  return "date,host,cpu,cpu_threads,gpu,backend,concurrency,series,specialized,kokkos,git,bench,pipeline,data,dtype,"
         "dims,rank,elements,input_bytes,output_bytes,mode,bound,ratio,abs_bound,max_abs_error,bound_held,psnr,reps,"
         "op,stage,seconds,gbps,peak_device_bytes,peak_ratio";
}

inline std::vector<std::string> csv_rows(const RunInfo& m, const Result& r) {
  std::vector<std::string> rows;
  char num[64];
  auto f = [&](double x) {
    std::snprintf(num, sizeof num, "%.6g", x);
    return std::string(std::isfinite(x) ? num : "");
  };
  const std::string head = csv_field(m.date) + "," + csv_field(m.host) + "," + csv_field(m.cpu_model) + "," +
                           std::to_string(m.cpu_threads) + "," + csv_field(m.gpu_name) + "," + m.backend + "," +
                           std::to_string(m.concurrency) + "," + csv_field(m.series()) + "," + m.specialized + "," +
                           m.kokkos_version + "," + csv_field(m.git) + "," + csv_field(r.bench) + "," +
                           csv_field(r.pipeline) + "," + csv_field(r.data) + "," + r.dtype + "," + r.dims + "," +
                           std::to_string(r.rank) + "," + std::to_string(r.elements) + "," +
                           std::to_string(r.input_bytes) + "," + std::to_string(r.output_bytes) + "," + r.mode + "," +
                           f(r.bound) + "," + f(r.ratio) + "," + f(r.check.abs_bound) + "," +
                           f(r.check.max_abs_error) + "," + (r.check.held() ? "1" : "0") + "," + f(r.check.psnr) +
                           "," + std::to_string(r.reps) + ",";
  auto add = [&](const char* op, const OpResult& o) {
    const std::string mem =
        r.memory_tracked ? std::to_string(o.peak_device) + "," + f(r.peak_ratio(o)) : std::string(",");
    for (auto& s : o.stages)
      rows.push_back(head + op + "," + csv_field(s.name) + "," + f(s.seconds) + "," + f(r.gbps(s.seconds)) + "," + mem);
    rows.push_back(head + op + ",TOTAL kernels," + f(o.kernels) + "," + f(r.gbps(o.kernels)) + "," + mem);
    rows.push_back(head + op + ",TOTAL end-to-end," + f(o.e2e) + "," + f(r.gbps(o.e2e)) + "," + mem);
  };
  add("compress", r.c);
  add("decompress", r.d);
  return rows;
}

// Collects results and writes each as it comes: text to stdout, its CSV rows
// appended (header when the file is new), the JSON document ({"meta":...,
// "runs":[...]}) rewritten, so a run that dies at a later configuration
// (out of memory at 1024^3) keeps what it measured.
class Output {
 public:
  Output(RunInfo meta, std::string json, std::string csv)
      : m_meta(std::move(meta)), m_json(std::move(json)), m_csv(std::move(csv)) {}
  // Prints the machine block before the first result (after the options were checked).
  void add(const Result& r) {
    if (m_runs.empty()) print(m_meta);
    print(r);
    m_runs.push_back(r);
    if (!m_csv.empty()) {
      bool fresh;
      {
        std::ifstream probe(m_csv);
        fresh = !probe || probe.peek() == std::ifstream::traits_type::eof();
      }
      std::ofstream c(m_csv, std::ios::app);
      if (fresh) c << csv_header() << "\n";
      for (auto& row : csv_rows(m_meta, r)) c << row << "\n";
      if (!c) throw std::runtime_error("cannot write " + m_csv);
    }
    if (!m_json.empty()) {
      std::ofstream j(m_json);
      j << "{\"schema\":\"ksz-perf/1\",\"meta\":" << to_json(m_meta) << ",\"runs\":[\n";
      for (std::size_t i = 0; i < m_runs.size(); ++i) j << (i ? ",\n" : "") << to_json(m_runs[i]);
      j << "\n]}\n";
      if (!j) throw std::runtime_error("cannot write " + m_json);
    }
  }
  bool all_held() const {
    for (auto& r : m_runs)
      if (!r.check.held()) return false;
    return true;
  }
  const RunInfo& meta() const { return m_meta; }

 private:
  RunInfo m_meta;
  std::string m_json, m_csv;
  std::vector<Result> m_runs;
};

// ---------------------------------------------------------------- common driver

// The options every pipeline benchmark shares. Data: generated fields (--kind
// list x --dims list) or one raw file (--input, --dims, --dtype, --name).
struct Common {
  std::string backend, json, csv, input, name, dtype;
  std::vector<std::string> kinds;
  std::vector<Dims> dims;
  std::vector<double> bounds;
  ErrorMode mode = ErrorMode::REL;
  int reps = 5;
  std::uint32_t seed = 1;
  std::uint32_t subchunk = Options{}.huffman_subchunk;
  bool track_memory = true, info = false;

  static constexpr const char* usage =
      "[--backend serial|openmp|cuda] [--dims 512,512,512[/4096,4096/...]] [--kind turbulent,smooth]\n"
      "  [--input FILE --dtype f32|f64 --dims X,Y,Z [--name NAME]] [--rel 1e-2,1e-3 | --abs 1e-3]\n"
      "  [--reps 5] [--seed 1] [--subchunk 512 (Huffman sub-chunk, 0 none)] [--json FILE] [--csv FILE (appended)]\n"
      "  [--no-memory] [--info]";

  Common(const Args& a, const std::string& default_dims, const std::string& default_rel) {
    backend = a.str("backend", "default");
    json = a.str("json", "");
    csv = a.str("csv", "");
    input = a.str("input", "");
    name = a.str("name", "");
    dtype = a.str("dtype", "f32");
    if (dtype != "f32" && dtype != "f64") throw std::invalid_argument("--dtype " + dtype + ": f32 or f64");
    kinds = a.list("kind", "turbulent");
    dims = Args::parse_dims_list(a.str("dims", default_dims));
    if (!input.empty() && dims.size() != 1) throw std::invalid_argument("--input takes one --dims");
    std::string b = a.str("rel", default_rel);
    if (a.has("abs")) {
      if (a.has("rel") && !a.str("rel", "").empty()) throw std::invalid_argument("--rel or --abs, not both");
      mode = ErrorMode::ABS, b = a.str("abs", "");
    }
    for (auto& s : Args::split(b, ',')) bounds.push_back(std::stod(s));
    reps = std::max(1, a.integer("reps", 5));
    seed = std::uint32_t(a.integer("seed", 1));
    subchunk = std::uint32_t(a.integer("subchunk", int(subchunk)));
    track_memory = !a.has("no-memory");
    info = a.has("info");
  }

  // Calls f(field) for every data set, f32 or f64 as --dtype says.
  template <class Space, class F>
  void for_each_field(const Space& space, F&& f) const {
    auto run = [&](auto tag) {
      using T = decltype(tag);
      if (!input.empty()) {
        f(read_field<Space, T>(space, input, dims[0], name));
        return;
      }
      for (auto& d : dims)
        for (auto& k : kinds) f(generate_field<Space, T>(space, k, d, seed));
    };
    if (dtype == "f64") run(double{});
    else run(float{});
  }
  Options options(double bound) const {
    Options o;
    o.mode = mode;
    o.bound = bound;
    o.huffman_subchunk = subchunk;
    return o;
  }
};

// main() for a benchmark: Kokkos, arguments, backend dispatch, errors.
// body(space, common, args, output) runs the configurations. Exit status 0,
// 1 on error, 3 when a bound was violated.
template <class Body>
int bench_main(int argc, char** argv, const char* name, const std::string& default_dims,
               const std::string& default_rel, Body&& body) {
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    const Args a(argc, argv);
    const Common c(a, default_dims, default_rel);
    return with_backend(parse_backend(c.backend), [&](auto space) {
      const RunInfo meta = collect_run_info(space);
      if (c.info) {  // metadata only, for scripts (perf/run.sh reads free_bytes)
        std::printf("%s\n", to_json(meta).c_str());
        return 0;
      }
      Output out(meta, c.json, c.csv);
      body(space, c, a, out);  // reads its own options, calls a.finish(), then runs
      return out.all_held() ? 0 : 3;
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace ksz::perf
