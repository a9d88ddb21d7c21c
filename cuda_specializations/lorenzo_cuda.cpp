// CUDA specializations of the Lorenzo compressor's front end: value range and
// fused pre-quantization + prediction + quantization + histogram. See
// cuda_specializations.hpp for the contract (same results as portable/).
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/cub.cuh>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/host_result.hpp"
#include "cuda_specializations/launch.hpp"
#include "cuda_specializations/lookback.hpp"
#include "cuda_specializations/warp.hpp"
#include "portable/histogram/histogram.hpp"
#include "portable/quantize/byte_codes.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {

constexpr int kThreads = 256;

// ---------------------------------------------------------------- value range

// 16-byte vectors of T.
template <class T>
struct Vec16;
template <>
struct Vec16<float> {
  using type = float4;
  static constexpr int width = 4;
  __device__ static void unpack(const float4& v, float* o) { o[0] = v.x, o[1] = v.y, o[2] = v.z, o[3] = v.w; }
};
template <>
struct Vec16<double> {
  using type = double2;
  static constexpr int width = 2;
  __device__ static void unpack(const double2& v, double* o) { o[0] = v.x, o[1] = v.y; }
};

template <class T>
__device__ __forceinline__ void minmax_add(T v, T& mn, T& mx) {
  if (v - v == T(0)) {  // finite
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
}

// Min/max of a type's values equal those of the values widened to double, so
// compare in T and widen once. `head` scalars, then `nvec` 16-byte vectors
// (four in flight per thread), then the tail. Each block leaves its pair in
// parts; the last to finish (count in *done, zero at launch) folds them and
// writes the doubles to out (host-mapped), leaving *done at zero.
template <class T>
__global__ void __launch_bounds__(kThreads)
    minmax_kernel(const T* __restrict__ in, std::uint64_t n, std::uint64_t head, std::uint64_t nvec,
                  T* __restrict__ parts, unsigned* __restrict__ done, double* __restrict__ out) {
  using V = Vec16<T>;
  constexpr int W = V::width;
  T mn = std::numeric_limits<T>::max(), mx = std::numeric_limits<T>::lowest();
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  const std::uint64_t tid = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::uint64_t i = tid; i < head; i += stride) minmax_add(in[i], mn, mx);
  const auto* vin = reinterpret_cast<const typename V::type*>(in + head);
  std::uint64_t k = tid;
  for (; k + 3 * stride < nvec; k += 4 * stride) {
    typename V::type r[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) r[u] = __ldg(vin + k + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      T v[W];
      V::unpack(r[u], v);
#pragma unroll
      for (int j = 0; j < W; ++j) minmax_add(v[j], mn, mx);
    }
  }
  for (; k < nvec; k += stride) {
    T v[W];
    V::unpack(__ldg(vin + k), v);
#pragma unroll
    for (int j = 0; j < W; ++j) minmax_add(v[j], mn, mx);
  }
  for (std::uint64_t i = head + nvec * W + tid; i < n; i += stride) minmax_add(in[i], mn, mx);

  launch::finish_range<kThreads>(mn, mx, parts, done, out);
}

using launch::sm_count;

using launch::check;

}  // namespace

namespace {
// minmax_kernel's launch, its two values to out (device or mapped memory),
// its counter and block partials in scratch (device memory). The kernel
// leaves the counter zeroed; counter_zeroed: it is already (no memset).
constexpr std::uint64_t kMinmaxMaxBlocks = 4000;
template <class T>
void launch_minmax(const Kokkos::Cuda& space, const T* in, std::uint64_t n, void* scratch, double* out,
                   bool counter_zeroed = false) {
  // Scalars up to the first 16-byte boundary (none when in is not T-aligned there: all scalar).
  const auto addr = reinterpret_cast<std::uintptr_t>(in);
  std::uint64_t head = n, nvec = 0;
  if (addr % sizeof(T) == 0) {
    head = std::min<std::uint64_t>(n, ((16 - addr % 16) % 16) / sizeof(T));
    nvec = (n - head) / (16 / sizeof(T));
  }
  const std::uint64_t want = (n + kThreads * 16 - 1) / (kThreads * 16);
  const int blocks = static_cast<int>(std::min({want, std::uint64_t(sm_count()) * 8, kMinmaxMaxBlocks}));
  auto* done = static_cast<unsigned*>(scratch);
  T* parts = reinterpret_cast<T*>(static_cast<char*>(scratch) + 16);
  if (!counter_zeroed) check(cudaMemsetAsync(done, 0, sizeof(unsigned), space.cuda_stream()), "minmax count");
  minmax_kernel<T><<<blocks, kThreads, 0, space.cuda_stream()>>>(in, n, head, nvec, parts, done, out);
  check(cudaGetLastError(), "minmax_kernel");
}
}  // namespace

// Counter and partials fit either scratch: the slot's, and buf past its
// result and a 16-byte aligned counter.
static_assert(16 + 2 * sizeof(double) * kMinmaxMaxBlocks <= HostResult::kScratchBytes, "minmax scratch");
static_assert(16 + 2 * sizeof(double) * kMinmaxMaxBlocks <= (kMinmaxBufDoubles - 2) * sizeof(double),
              "minmax buffer");

template <class T>
bool finite_minmax_to(const Kokkos::Cuda& space, const T* in, std::uint64_t n, double* buf, bool counter_zeroed) {
  if (!enabled() || n == 0) {  // refused: the counter zeroed all the same, as a launch leaves it
    if (!counter_zeroed) check(cudaMemsetAsync(buf + 2, 0, sizeof(unsigned), space.cuda_stream()), "minmax count");
    return false;
  }
  launch_minmax(space, in, n, buf + 2, buf, counter_zeroed);
  return true;
}

template <class T>
bool finite_minmax(const Kokkos::Cuda& space, const T* in, std::uint64_t n, double& mn, double& mx) {
  if (!enabled() || n == 0) return false;
  const HostResult slot;
  launch_minmax(space, in, n, slot.scratch(), slot.device<double>());
  check(cudaStreamSynchronize(space.cuda_stream()), "minmax sync");
  mn = slot.host<double>()[0];
  mx = slot.host<double>()[1];
  if (mn > mx) {  // no finite value: T's extremes came back; the portable reduction's identity
    mn = std::numeric_limits<double>::max();
    mx = std::numeric_limits<double>::lowest();
  }
  return true;
}

// ------------------------------------------- fused prequant/predict/histogram

namespace {

constexpr int kMaxChunk = 4096;         // q of a chunk staged in shared memory (16 KiB)
constexpr std::uint32_t kMaxBins = 8192;  // shared histogram (32 KiB)
constexpr std::uint32_t kHot = 32;        // bins around the center counted in registers

struct FusedGeo {
  std::uint64_t n0, n1, n2;
  std::uint32_t l0, l1, l2;     // log2 of the chunk extents
  std::uint64_t k0, k1, k2;     // chunks along each dimension
};

template <class T>
__global__ void __launch_bounds__(kThreads)
    fused_kernel(const T* __restrict__ in, FusedGeo g, quantize::QuantParams qp, std::uint32_t radius,
                 std::uint16_t* __restrict__ codes, unsigned long long* __restrict__ hist,
                 unsigned long long* __restrict__ verbatim) {
  extern __shared__ std::int32_t smem[];
  std::int32_t* q = smem;
  std::uint32_t* lh = reinterpret_cast<std::uint32_t*>(smem + kMaxChunk);
  const std::uint32_t nbins = 2 * radius;
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x) lh[b] = 0;
  const std::uint32_t lo = radius >= kHot / 2 ? radius - kHot / 2 : 0;
  std::uint32_t hot[kHot];
#pragma unroll
  for (std::uint32_t k = 0; k < kHot; ++k) hot[k] = 0;
  std::uint32_t verb = 0;

  const std::uint32_t c0 = 1u << g.l0, c1 = 1u << g.l1;
  const std::uint32_t m0 = c0 - 1, m1 = c1 - 1;
  const std::uint32_t elems = 1u << (g.l0 + g.l1 + g.l2);
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  const std::uint64_t s1 = g.n0, s2 = g.n0 * g.n1;
  const std::int64_t r = radius;
  for (std::uint64_t ch = blockIdx.x; ch < nchunks; ch += gridDim.x) {
    const std::uint64_t cx = ch % g.k0, t = ch / g.k0, cy = t % g.k1, cz = t / g.k1;
    const std::uint64_t x0 = cx << g.l0, y0 = cy << g.l1, z0 = cz << g.l2;
    __syncthreads();  // the previous chunk's q is consumed
    for (std::uint32_t e = threadIdx.x; e < elems; e += blockDim.x) {
      const std::uint64_t x = x0 + (e & m0), y = y0 + ((e >> g.l0) & m1), z = z0 + (e >> (g.l0 + g.l1));
      std::int32_t v = 0;
      if (x < g.n0 && y < g.n1 && z < g.n2) verb += quantize::prequantize<T>(in[x + y * s1 + z * s2], qp, v) ? 0 : 1;
      q[e] = v;
    }
    __syncthreads();
    for (std::uint32_t e = threadIdx.x; e < elems; e += blockDim.x) {
      const std::uint32_t lx = e & m0, ly = (e >> g.l0) & m1, lz = e >> (g.l0 + g.l1);
      const std::uint64_t x = x0 + lx, y = y0 + ly, z = z0 + lz;
      if (!(x < g.n0 && y < g.n1 && z < g.n2)) continue;
      // lorenzo::residual on the staged chunk: wrapping uint32 arithmetic.
      const bool hx = lx != 0, hy = ly != 0, hz = lz != 0;
      const std::uint32_t sx = 1, sy = c0, sz = c0 * c1;
      auto at = [&](bool ok, std::uint32_t off) -> std::uint32_t {
        return ok ? static_cast<std::uint32_t>(q[e - off]) : 0u;
      };
      std::uint32_t d = static_cast<std::uint32_t>(q[e]);
      d -= at(hx, sx) + at(hy, sy) + at(hz, sz);
      d += at(hx && hy, sx + sy) + at(hx && hz, sx + sz) + at(hy && hz, sy + sz);
      d -= at(hx && hy && hz, sx + sy + sz);
      const std::int32_t ds = static_cast<std::int32_t>(d);
      const std::uint32_t c = (ds > -r && ds < r) ? static_cast<std::uint32_t>(ds + r) : 0u;
      codes[x + y * s1 + z * s2] = static_cast<std::uint16_t>(c);
      const std::uint32_t dh = c - lo;  // wraps for c < lo
      if (dh < kHot) {
#pragma unroll
        for (std::uint32_t k = 0; k < kHot; ++k) hot[k] += dh == k ? 1u : 0u;
      } else {
        atomicAdd(&lh[c], 1u);
      }
    }
  }
  // Registers -> shared (one atomic per warp and hot bin) -> global.
#pragma unroll
  for (std::uint32_t k = 0; k < kHot; ++k) {
    const std::uint32_t s = warp::reduce_add(hot[k]);
    if ((threadIdx.x & 31) == 0 && s && lo + k < nbins) atomicAdd(&lh[lo + k], s);
  }
  const std::uint32_t vs = warp::reduce_add(verb);
  if ((threadIdx.x & 31) == 0 && vs) atomicAdd(verbatim, static_cast<unsigned long long>(vs));
  __syncthreads();
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x)
    if (lh[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(lh[b]));
}

int log2_exact(std::uint32_t c) {  // -1 unless c is a power of two
  if (c == 0 || (c & (c - 1))) return -1;
  int l = 0;
  while ((1u << l) < c) ++l;
  return l;
}

}  // namespace

template <class T>
bool lorenzo_fused_compress(const Kokkos::Cuda& space, const T* in, const LorenzoShape& s,
                            const quantize::QuantParams& qp, std::uint32_t radius, std::uint16_t* codes,
                            std::uint64_t* hist, std::uint64_t& n_verbatim) {
  if (!enabled()) return false;
  const int l0 = log2_exact(s.c0), l1 = log2_exact(s.c1), l2 = log2_exact(s.c2);
  if (l0 < 0 || l1 < 0 || l2 < 0 || (1u << (l0 + l1 + l2)) > unsigned(kMaxChunk)) return false;
  if (radius < 1 || 2 * std::uint64_t(radius) > kMaxBins) return false;
  const std::uint64_t n = s.n0 * s.n1 * s.n2;
  if (n == 0) return false;
  FusedGeo g{s.n0, s.n1, s.n2, std::uint32_t(l0), std::uint32_t(l1), std::uint32_t(l2),
             (s.n0 + s.c0 - 1) / s.c0, (s.n1 + s.c1 - 1) / s.c1, (s.n2 + s.c2 - 1) / s.c2};
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  const std::size_t shmem = kMaxChunk * sizeof(std::int32_t) + 2 * std::size_t(radius) * sizeof(std::uint32_t);
  // Enough resident blocks to fill the GPU; each walks several chunks and
  // flushes its histogram once.
  const std::uint64_t cap = std::uint64_t(sm_count()) * 8;
  const int blocks = static_cast<int>(nchunks < cap ? nchunks : cap);
  Kokkos::View<unsigned long long*, Kokkos::CudaSpace> verb(std::string("ksz::fused_verbatim"), 1);
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(hist, 0, 2 * std::size_t(radius) * sizeof(std::uint64_t), st), "histogram reset");
  fused_kernel<T><<<blocks, kThreads, shmem, st>>>(in, g, qp, radius, codes,
                                                   reinterpret_cast<unsigned long long*>(hist), verb.data());
  check(cudaGetLastError(), "fused_kernel");
  unsigned long long hv = 0;
  check(cudaMemcpyAsync(&hv, verb.data(), sizeof(hv), cudaMemcpyDeviceToHost, st), "verbatim count copy");
  check(cudaStreamSynchronize(st), "fused sync");
  n_verbatim = hv;
  return true;
}

// ------------------------------------------------ 3D fast path (16^3 chunks)
//
// 256 threads a 16^3 chunk. Global memory is touched in quads: four
// consecutive elements of an x-row per lane, four lanes a row, so one warp
// instruction covers eight whole 64-byte rows (measured on an H200 for
// 512 MiB of stores: 0.18 ms this way, 1.07 ms with a thread per row and
// 2.06 ms with scalar stores down a row: perf/probe/store_patterns.cu).
// The x-direction of the predictor is done in the quad and across the four
// lanes by shuffles; y and z go through a shared tile (16-word rows with a
// zero border, 16-byte accesses). Prediction identity: with r = q - q(x-1)
// the x-differences, the 3D Lorenzo residual is r - r(y-1) - r(z-1) +
// r(y-1,z-1), all mod 2^32, equal to lorenzo::residual term by term. The
// decompressor's inverse has no specialization: the portable
// lorenzo::impl::ReconstructQuads, in the same quad shape, measured faster
// than the kernel that was here (0.53 against 0.62 ms at 512^3 on an H200).

namespace {

constexpr int kRowLen = 16;
constexpr int kRows = 256;                 // threads a chunk, and rows of a chunk
constexpr std::uint32_t kMaxBins3 = 4096;  // shared histogram of the 3D path (16 KiB)

struct Geo3 {
  std::uint64_t n0, n1, n2;
  std::uint64_t k0, k1, k2;  // chunks along each dimension
};

// A chunk's origin, decomposed once per chunk (64-bit div/mod is dozens of
// instructions: per quad it was about two per element).
struct ChunkAt {
  std::uint64_t x0, y0, z0;
};

__device__ __forceinline__ ChunkAt chunk_at(const Geo3& g, std::uint64_t ch) {
  const std::uint64_t t = ch / g.k0, cz = t / g.k1;
  return ChunkAt{(ch - t * g.k0) * kRowLen, (t - cz * g.k1) * kRowLen, cz * kRowLen};
}

// Appends the flagged elements to list with one atomic a warp: bit 4 m + i of
// mask is the thread's quad m, element i, at base + m step + i. Past cap only
// the count grows (the caller then falls back). A warp-collective: every lane
// calls it.
__device__ __forceinline__ void append_flagged(std::uint32_t mask, std::uint64_t base, std::uint64_t step,
                                               unsigned long long* counter, std::uint64_t* list, std::uint64_t cap) {
  if (!__any_sync(warp::kFull, mask != 0)) return;  // the common case: one vote instead of a scan
  const std::uint32_t cnt = __popc(mask);
  const std::uint32_t incl = warp::scan_inclusive(cnt);
  const std::uint32_t total = __shfl_sync(warp::kFull, incl, 31);
  unsigned long long start = 0;
  if ((threadIdx.x & 31) == 31) start = atomicAdd(counter, static_cast<unsigned long long>(total));
  start = __shfl_sync(warp::kFull, start, 31);
  std::uint64_t at = start + incl - cnt;
  while (mask) {
    const int k = __ffs(mask) - 1;
    mask &= mask - 1;
    if (at < cap) list[at] = base + (k >> 2) * step + (k & 3);
    ++at;
  }
}

// The 3D kernel's histogram: the 8 codes from hot0 (radius - 4: 81% of the
// codes at REL 1e-4 on a turbulent field, 97% at 1e-3) count in 8-bit fields
// of one register per thread, added into the block's shared histogram every
// kHotFlush chunks (16 elements a thread a chunk: at most 240 a field); the
// rest by shared atomics. __match_any_sync per element, which aggregated equal
// codes before, made the kernel MIO-bound, as it did the checker's PDF pass.
constexpr int kHotBins = 8, kHotFlush = 15;

// Adds the warp's hot counts to lh and clears them. A warp-collective.
__device__ __forceinline__ void flush_hot(unsigned long long& acc, std::uint32_t* lh, std::uint32_t hot0,
                                          std::uint32_t nbins) {
  // Fields of 16 bits for the sum over 32 lanes (at most 7,680): even and odd bins apart.
  unsigned long long even = acc & 0x00FF00FF00FF00FFull, odd = (acc >> 8) & 0x00FF00FF00FF00FFull;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    even += __shfl_xor_sync(warp::kFull, even, o);
    odd += __shfl_xor_sync(warp::kFull, odd, o);
  }
  const int b = threadIdx.x & 31;
  if (b < kHotBins) {
    const std::uint32_t cnt = static_cast<std::uint32_t>(((b & 1) ? odd : even) >> (16 * (b >> 1))) & 0xFFFFu;
    if (cnt && hot0 + b < nbins) atomicAdd(&lh[hot0 + b], cnt);
  }
  acc = 0;
}

// x << s with PTX's clamp: an amount of 64 or more gives 0 (C++ leaves it undefined).
__device__ __forceinline__ unsigned long long shl_clamped(unsigned long long x, std::uint32_t s) {
  unsigned long long r;
  asm("shl.b64 %0, %1, %2;" : "=l"(r) : "l"(x), "r"(s));
  return r;
}

// Code c into the 8-bit hot fields of acc where it is one of the kHotBins
// from hot0 (a clamped shift: any other code adds 0, no select), else into
// the block's shared histogram lh; true where it went there. Codes past
// nbins are not counted. (8 (c - hot0) wraps to 2^32 - 8 d for c = hot0 - d,
// d <= 65535: never below 64.)
__device__ __forceinline__ bool count_code(std::uint32_t c, unsigned long long& acc, std::uint32_t* lh,
                                           std::uint32_t hot0, std::uint32_t nbins) {
  const std::uint32_t h = c - hot0;
  acc += shl_clamped(1ull, 8u * h);
  const bool shared = h >= std::uint32_t(kHotBins) && c < nbins;
  if (shared) atomicAdd(&lh[c], 1u);
  return shared;
}

// The block's shared histogram into the global one (after a barrier).
__device__ __forceinline__ void add_block_histogram(const std::uint32_t* lh, std::uint32_t nbins,
                                                    unsigned long long* __restrict__ hist) {
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x)
    if (lh[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(lh[b]));
}

// prequantize() of portable/quantize/prequant.hpp with three conversions
// instead of six (F2F and F2I run at a quarter of the FP64 rate on Hopper;
// six an element bounded the fused kernel): floor(h) from the nearest integer
// that adding 1.5 * 2^52 leaves in the low word, stepped down where it went
// up, and the reconstruction from that floor as a double (equal to the int's
// conversion). The same q and the same verdict for every x.
template <class T>
__device__ __forceinline__ bool prequantize_fast(T x, const quantize::QuantParams& p, std::int32_t& q) {
  constexpr double kMagic = 0x1.8p52;  // |h| < 2^30 + 1: h + kMagic in [2^52, 2^53), an integer
  const double xd = static_cast<double>(x);
  const double v = __dmul_rn(xd, p.inv_step);
  const bool in = ::fabs(v) < quantize::kMaxPrequant;  // NaN: false
  const double h = __dadd_rn(in ? v : 0.0, 0.5);
  const double s = __dadd_rn(h, kMagic);
  double f = __dsub_rn(s, kMagic);  // nearest integer of h
  const bool up = f > h;
  f = up ? __dsub_rn(f, 1.0) : f;                                   // floor(h), exact
  const std::int32_t r = __double2loint(s) - static_cast<std::int32_t>(up);  // the same, as an int
  const T rec = static_cast<T>(__dmul_rn(f, p.step));               // reconstruct<T>(r, step)
  const bool ok = in && ::fabs(xd - static_cast<double>(rec)) <= p.bound;
  q = ok ? r : 0;
  return ok;
}

// The shared tile of the 3D kernels' x-differences: [17 z][17 y][16 x]
// words, the plane z = -1 and the rows y = -1 left zero (the predictor's
// outside), so neighbours need no tests. A row is 16 words: a quad is one
// 16-byte access, and the eight lanes of a phase (four quads of two rows)
// cover the 32 banks once.
constexpr int kTileSide = kRowLen + 1;
constexpr int kTileWords = kTileSide * kTileSide * kRowLen;

__device__ __forceinline__ int tile_row(int y, int z) { return (z + 1) * kTileSide + (y + 1); }

// Thread t's m-th quad of the chunk at c: x = 4 (t & 3), y = (t >> 2) & 15,
// z = (t >> 6) + 4 m (quad_of's j = t + 256 m), so its index is the chunk's
// base plus the thread's offset plus m times four planes.
struct ThreadQuads {
  int q, y, z;              // in the chunk (z of m = 0)
  std::uint64_t off, step;  // index offset of m = 0 from the chunk base; of m + 1 from m
};

__device__ __forceinline__ ThreadQuads thread_quads(const Geo3& g, int t) {
  ThreadQuads tq;
  tq.q = t & 3;
  tq.y = (t >> 2) & 15;
  tq.z = t >> 6;
  const std::uint64_t plane = g.n0 * g.n1;
  tq.off = 4 * std::uint64_t(tq.q) + g.n0 * std::uint64_t(tq.y) + plane * std::uint64_t(tq.z);
  tq.step = 4 * plane;
  return tq;
}

// Elements of the quad inside the field, 0..4 (4 in an interior chunk).
__device__ __forceinline__ int quad_valid(const Geo3& g, const ChunkAt& c, const ThreadQuads& tq, int m) {
  const std::uint64_t x = c.x0 + 4 * tq.q, y = c.y0 + tq.y, z = c.z0 + tq.z + 4 * m;
  return (y < g.n1 && z < g.n2 && x < g.n0) ? static_cast<int>(g.n0 - x < 4 ? g.n0 - x : 4) : 0;
}

template <class T>
__device__ __forceinline__ void load_quad_at(const T* __restrict__ in, std::uint64_t base, int valid, bool vec,
                                             T v[4]) {
  if (vec && valid == 4) {
    if constexpr (sizeof(T) == 4) {
      const float4 f = __ldg(reinterpret_cast<const float4*>(in + base));
      v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    } else {
      const double2 a = __ldg(reinterpret_cast<const double2*>(in + base));
      const double2 b = __ldg(reinterpret_cast<const double2*>(in + base) + 1);
      v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = i < valid ? in[base + i] : T(0);
  }
}

// kVec: both arrays 16-byte aligned and n0 % 4 == 0, so every quad of 4 valid
// elements starts on a 16-byte boundary of the input and 4 sizeof(C) of the
// codes. Interior chunks (all of them but the field's last layer) take a body
// in which every quad is whole, so the element tests compile away; the hot
// histogram bins are counted without a branch. C = std::uint8_t (radius >=
// 128): codes as quantize::code_byte, the elements of byte 0 (outliers and
// the codes a byte cannot hold) listed in esc_list instead of out_list.
template <class T, bool kVec, class C>
__global__ void __launch_bounds__(kRows)
    fused3d_kernel(const T* __restrict__ in, Geo3 g, quantize::QuantParams qp, std::uint32_t radius,
                   C* __restrict__ codes, unsigned long long* __restrict__ hist,
                   unsigned long long* __restrict__ counters, std::uint64_t* __restrict__ out_list,
                   std::uint64_t* __restrict__ verb_list, std::uint64_t* __restrict__ esc_list, std::uint64_t cap) {
  constexpr bool kBytes = sizeof(C) == 1;
  __shared__ __align__(16) std::uint32_t tile[kTileWords];
  extern __shared__ std::uint32_t lh[];
  const std::uint32_t nbins = 2 * radius;
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x) lh[b] = 0;
  for (int k = threadIdx.x; k < kTileWords; k += kRows) tile[k] = 0;
  const int t = threadIdx.x;
  const ThreadQuads tq = thread_quads(g, t);
  const std::int32_t R = static_cast<std::int32_t>(radius);
  const std::uint32_t hot0 = radius > kHotBins / 2 ? radius - kHotBins / 2 : 0u;
  unsigned long long hot = 0;
  int since_flush = 0;
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;

  auto chunk = [&](const ChunkAt& cpos, auto interior_tag) {
    constexpr bool kInterior = decltype(interior_tag)::value;
    const std::uint64_t base0 = cpos.x0 + g.n0 * (cpos.y0 + g.n1 * cpos.z0) + tq.off;
    std::uint32_t r[4][4];
    std::uint32_t flags = 0;   // verbatim: bit 4m + i; outliers: bit 16 + 4m + i
    std::uint32_t eflags = 0;  // zero bytes (kBytes; outliers among them): bit 4m + i
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int valid = kInterior ? 4 : quad_valid(g, cpos, tq, m);
      T v[4];
      load_quad_at<T>(in, base0 + m * tq.step, valid, kVec, v);
      std::uint32_t qv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        std::int32_t qi = 0;
        const bool ok = prequantize_fast<T>(v[i], qp, qi);
        flags |= static_cast<std::uint32_t>(!ok && i < valid) << (4 * m + i);
        qv[i] = static_cast<std::uint32_t>(qi);
      }
      // The element before the quad's first: the last of the lane before, 0 at the row start.
      std::uint32_t prev = __shfl_up_sync(warp::kFull, qv[3], 1, 4);
      if (tq.q == 0) prev = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        r[m][i] = qv[i] - prev;
        prev = qv[i];
      }
    }
    __syncthreads();  // the previous chunk's tile is consumed
#pragma unroll
    for (int m = 0; m < 4; ++m)
      *reinterpret_cast<uint4*>(&tile[tile_row(tq.y, tq.z + 4 * m) * kRowLen + 4 * tq.q]) =
          make_uint4(r[m][0], r[m][1], r[m][2], r[m][3]);
    __syncthreads();
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int valid = kInterior ? 4 : quad_valid(g, cpos, tq, m);
      const std::uint64_t base = base0 + m * tq.step;
      const int at = tile_row(tq.y, tq.z + 4 * m) * kRowLen + 4 * tq.q;
      const uint4 ry = *reinterpret_cast<const uint4*>(&tile[at - kRowLen]);
      const uint4 rz = *reinterpret_cast<const uint4*>(&tile[at - kTileSide * kRowLen]);
      const uint4 ryz = *reinterpret_cast<const uint4*>(&tile[at - (kTileSide + 1) * kRowLen]);
      const std::uint32_t dy[4] = {ry.x, ry.y, ry.z, ry.w}, dz[4] = {rz.x, rz.y, rz.z, rz.w},
                          dyz[4] = {ryz.x, ryz.y, ryz.z, ryz.w};
      std::uint32_t c[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::int32_t ds = static_cast<std::int32_t>(r[m][i] - dy[i] - dz[i] + dyz[i]);
        c[i] = (ds > -R && ds < R) ? static_cast<std::uint32_t>(ds + R) : 0u;
        if (!kBytes) flags |= static_cast<std::uint32_t>(c[i] == 0 && i < valid) << (16 + 4 * m + i);
      }
      if constexpr (kBytes) {
        std::uint32_t b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) b[i] = quantize::code_byte(c[i], radius);
        const std::uint32_t word = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24;
        if ((word - 0x01010101u) & ~word & 0x80808080u) {  // a zero byte (rare)
#pragma unroll
          for (int i = 0; i < 4; ++i) eflags |= static_cast<std::uint32_t>(b[i] == 0 && i < valid) << (4 * m + i);
        }
        if (kVec && valid == 4) {
          *reinterpret_cast<std::uint32_t*>(codes + base) = word;
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i)
            if (i < valid) codes[base + i] = static_cast<C>(b[i]);
        }
      } else if (kVec && valid == 4) {
        *reinterpret_cast<uint2*>(codes + base) = make_uint2(c[0] | c[1] << 16, c[2] | c[3] << 16);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (i < valid) codes[base + i] = static_cast<C>(c[i]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (!kInterior && i >= valid) continue;
        count_code(c[i], hot, lh, hot0, nbins);
      }
    }
    // Outliers and verbatim elements are rare: one vote a chunk, in the common case.
    if (__any_sync(warp::kFull, (flags | eflags) != 0)) {
      if (!kBytes) append_flagged(flags >> 16, base0, tq.step, &counters[1], out_list, cap);
      append_flagged(flags & 0xFFFFu, base0, tq.step, &counters[0], verb_list, cap);
      if (kBytes) append_flagged(eflags, base0, tq.step, &counters[2], esc_list, cap);
    }
  };

  for (std::uint64_t ch = blockIdx.x; ch < nchunks; ch += gridDim.x) {
    if (since_flush++ == kHotFlush) {  // block-uniform
      flush_hot(hot, lh, hot0, nbins);
      since_flush = 1;
    }
    const ChunkAt cpos = chunk_at(g, ch);
    if (cpos.x0 + kRowLen <= g.n0 && cpos.y0 + kRowLen <= g.n1 && cpos.z0 + kRowLen <= g.n2)  // block-uniform
      chunk(cpos, std::true_type{});
    else
      chunk(cpos, std::false_type{});
  }
  flush_hot(hot, lh, hot0, nbins);
  __syncthreads();
  add_block_histogram(lh, nbins, hist);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

using WS = pipeline::Workspace<Kokkos::CudaSpace>;

// Sorting the fused lists. The fused kernel appends entries (distinct
// element indices below n) in whatever order its blocks finish. All lists of
// a call are sorted together: bucketed on the index's high bits (buckets of
// 2^kBucketLog indices, list by list: a count, a scan and a scatter), then
// each bucket ordered through a bitmap of its indices. Five calls on the
// host for every list: CUB's radix sort spent 50-150 us of host time a list
// on the H200 hosts, with the device waiting.
constexpr int kBucketLog = 14;
constexpr std::uint32_t kBucketWords = (1u << kBucketLog) / 32;  // a bucket's bitmap
constexpr int kOrderWarps = 8;                                  // buckets a block of bucket_order_kernel
constexpr std::uint32_t kScanThreads = 1024, kScanPer = 32, kScanTile = kScanThreads * kScanPer;
constexpr int kMaxSortLists = 3;

// Lists sorted together: list k's entries are [first[k], first[k + 1]) of
// the concatenation, its buckets [k nb, (k + 1) nb) of the scan.
struct SortLists {
  const std::uint64_t* in[kMaxSortLists];
  std::uint64_t* out[kMaxSortLists];
  std::uint32_t first[kMaxSortLists + 1];
  int m;
  std::uint64_t nb;  // buckets a list

  __device__ int list_of(std::uint32_t j) const {
    int k = 0;
    while (k + 1 < m && j >= first[k + 1]) ++k;
    return k;
  }
  // Entry j of the concatenation (of list k) and its bucket in the scan.
  __device__ std::uint64_t key(std::uint32_t j, int k) const { return in[k][j - first[k]]; }
  __device__ std::uint64_t bucket(std::uint64_t key, int k) const { return k * nb + (key >> kBucketLog); }
};

__global__ void bucket_count_kernel(const SortLists l, std::uint32_t* __restrict__ cnt) {
  const std::uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= l.first[l.m]) return;
  const int k = l.list_of(j);
  atomicAdd(&cnt[l.bucket(l.key(j, k), k)], 1u);
}

// Exclusive scan of cnt[0, tiles kScanTile) in place by one block: per tile,
// each thread's kScanPer consecutive counts (16-byte loads, all in flight at
// once), a block scan of their sums, and the tiles' carry.
__global__ void __launch_bounds__(kScanThreads) bucket_scan_kernel(std::uint32_t* __restrict__ cnt, std::uint64_t tiles) {
  __shared__ std::uint32_t warp_before[32], tile_total;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  std::uint32_t carry = 0;
  for (std::uint64_t t = 0; t < tiles; ++t) {
    uint4* p = reinterpret_cast<uint4*>(cnt + t * kScanTile + threadIdx.x * kScanPer);
    uint4 v[kScanPer / 4];
#pragma unroll
    for (std::uint32_t k = 0; k < kScanPer / 4; ++k) v[k] = p[k];
    std::uint32_t sum = 0;
#pragma unroll
    for (std::uint32_t k = 0; k < kScanPer / 4; ++k) sum += v[k].x + v[k].y + v[k].z + v[k].w;
    const std::uint32_t incl = warp::scan_inclusive(sum);
    if (lane == 31) warp_before[w] = incl;
    __syncthreads();
    if (w == 0) {
      const std::uint32_t x = warp_before[lane], xi = warp::scan_inclusive(x);
      warp_before[lane] = xi - x;
      if (lane == 31) tile_total = xi;
    }
    __syncthreads();
    std::uint32_t run = carry + warp_before[w] + incl - sum;
#pragma unroll
    for (std::uint32_t k = 0; k < kScanPer / 4; ++k) {
      uint4 o;
      o.x = run, run += v[k].x;
      o.y = run, run += v[k].y;
      o.z = run, run += v[k].z;
      o.w = run, run += v[k].w;
      p[k] = o;
    }
    carry += tile_total;
    __syncthreads();  // warp_before and tile_total are rewritten by the next tile
  }
}

// Each entry to the next free place of its bucket: cursor (the scan's
// starts) ends as each bucket's end.
__global__ void bucket_scatter_kernel(const SortLists l, std::uint32_t* __restrict__ cursor) {
  const std::uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= l.first[l.m]) return;
  const int k = l.list_of(j);
  const std::uint64_t key = l.key(j, k);
  l.out[k][atomicAdd(&cursor[l.bucket(key, k)], 1u) - l.first[k]] = key;
}

// A warp a bucket: its entries into a bitmap, then written back in bit order.
__global__ void __launch_bounds__(32 * kOrderWarps)
    bucket_order_kernel(const SortLists l, const std::uint32_t* __restrict__ end) {
  __shared__ std::uint32_t bitmaps[kOrderWarps][kBucketWords];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const std::uint64_t vb = std::uint64_t(blockIdx.x) * kOrderWarps + w;
  if (vb >= l.m * l.nb) return;  // warp-uniform, as below: no block barrier follows
  const std::uint32_t s = vb ? end[vb - 1] : 0u, e = end[vb];
  if (e - s < 2) return;
  const int k = static_cast<int>(vb / l.nb);
  std::uint64_t* keys = l.out[k] - l.first[k];  // indexed by concatenated positions
  std::uint32_t* bm = bitmaps[w];
  for (std::uint32_t i = lane; i < kBucketWords; i += 32) bm[i] = 0;
  __syncwarp();
  constexpr std::uint32_t kMask = (1u << kBucketLog) - 1;
  for (std::uint32_t i = s + lane; i < e; i += 32) {
    const std::uint32_t x = static_cast<std::uint32_t>(keys[i]) & kMask;
    atomicOr(&bm[x >> 5], 1u << (x & 31));
  }
  __syncwarp();
  constexpr std::uint32_t kPerLane = kBucketWords / 32;
  std::uint32_t words[kPerLane], c = 0;
#pragma unroll
  for (std::uint32_t q = 0; q < kPerLane; ++q) {
    words[q] = bm[kPerLane * lane + q];
    c += __popc(words[q]);
  }
  std::uint32_t pos = s + warp::scan_inclusive(c) - c;
  const std::uint64_t base = (vb % l.nb) << kBucketLog;
#pragma unroll
  for (std::uint32_t q = 0; q < kPerLane; ++q)
    for (std::uint32_t v = words[q]; v; v &= v - 1)
      keys[pos++] = base + 32 * (kPerLane * lane + q) + (__ffs(v) - 1);
}
static_assert(kBucketWords % 32 == 0, "bucket bitmap words a lane");

// A list to sort: count keys (distinct, below n) in `in`, sorted into `out`
// (another buffer of count entries).
struct ListToSort {
  std::uint64_t* in;
  std::uint64_t* out;
  std::uint64_t count;
  std::uint64_t* sorted = nullptr;  // set by sort_lists: out, or in for a list of fewer than two entries
};

// Sorts the lists (their total below 2^32) on space; keys below n.
void sort_lists(const Kokkos::Cuda& space, ListToSort (&lists)[kMaxSortLists], std::uint64_t n, WS::Lease& ws) {
  SortLists l{};
  l.nb = (n + (1u << kBucketLog) - 1) >> kBucketLog;
  std::uint64_t total = 0;
  for (ListToSort& x : lists) {
    x.sorted = x.count < 2 ? x.in : x.out;
    if (x.count < 2) continue;
    l.in[l.m] = x.in, l.out[l.m] = x.out, l.first[l.m] = static_cast<std::uint32_t>(total);
    total += x.count;
    ++l.m;
  }
  if (l.m == 0) return;
  KSZ_EXPECTS(total < (std::uint64_t(1) << 32), "internal: ", total, " list entries to sort");
  l.first[l.m] = static_cast<std::uint32_t>(total);
  const std::uint64_t tiles = (l.m * l.nb + kScanTile - 1) / kScanTile;
  auto cnt = ws.get<std::uint32_t>(WS::kSortTemp, tiles * kScanTile, "ksz::sort_buckets");
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(cnt.data(), 0, tiles * kScanTile * sizeof(std::uint32_t), st), "sort buckets reset");
  const unsigned grid = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  bucket_count_kernel<<<grid, kThreads, 0, st>>>(l, cnt.data());
  bucket_scan_kernel<<<1, kScanThreads, 0, st>>>(cnt.data(), tiles);
  bucket_scatter_kernel<<<grid, kThreads, 0, st>>>(l, cnt.data());
  bucket_order_kernel<<<static_cast<unsigned>((l.m * l.nb + kOrderWarps - 1) / kOrderWarps), 32 * kOrderWarps, 0,
                        st>>>(l, cnt.data());
  check(cudaGetLastError(), "bucket sort");
}

}  // namespace

bool lorenzo_fused3d_takes(const LorenzoShape& s, std::uint32_t radius) {
  const std::uint64_t n = s.n0 * s.n1 * s.n2;
  return enabled() && s.c0 == kRowLen && s.c1 == kRowLen && s.c2 == kRowLen && radius >= 1 &&
         2 * std::uint64_t(radius) <= kMaxBins3 && n > 0 && n <= (std::uint64_t(1) << 31) * 64;
}

template <class T, class C>
bool lorenzo_fused_compress3d(const Kokkos::Cuda& space, const T* in, const LorenzoShape& s,
                              const quantize::QuantParams& qp, std::uint32_t radius, C* codes,
                              std::uint64_t* hist, FusedLists& lists, WS::Lease& ws,
                              const std::function<void()>& on_histogram) {
  constexpr bool kBytes = sizeof(C) == 1;
  if (!lorenzo_fused3d_takes(s, radius) || (kBytes && radius < quantize::kByteCodesMinRadius)) return false;
  const std::uint64_t n = s.n0 * s.n1 * s.n2;
  const Geo3 g{s.n0, s.n1, s.n2, (s.n0 + 15) / 16, (s.n1 + 15) / 16, (s.n2 + 15) / 16};
  const std::uint64_t nchunks = g.k0 * g.k1 * g.k2;
  // Lists sized for the usual case; a field with more outliers than this
  // takes the compaction path (the count is still exact). With byte codes the
  // lists are smaller (they count towards the peak the byte codes lower;
  // 2 MiB each at 512^3), and past them the caller codes in 16 bits instead.
  // Their sort counts in 32 bits (three lists).
  const std::uint64_t cap =
      std::min<std::uint64_t>({std::max<std::uint64_t>(65536, kBytes ? n / 512 : n / 64), n, 0x3FFFFFFFull});
  auto ol = ws.get<std::uint64_t>(WS::kOutliers, cap, "ksz::outlier_index");
  auto vl = ws.get<std::uint64_t>(WS::kVerbatim, cap, "ksz::verbatim_index");
  auto el = ws.get<std::uint64_t>(WS::kEscapes, kBytes ? cap : 0, "ksz::escape_index");
  auto counters = ws.get<unsigned long long>(WS::kCounters, 3, "ksz::fused_counters");
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(counters.data(), 0, 3 * sizeof(unsigned long long), st), "counters reset");
  check(cudaMemsetAsync(hist, 0, 2 * std::size_t(radius) * sizeof(std::uint64_t), st), "histogram reset");
  const std::uint64_t blocks_cap = std::uint64_t(sm_count()) * 8;
  const int blocks = static_cast<int>(nchunks < blocks_cap ? nchunks : blocks_cap);
  const bool vec = aligned16(in) && aligned16(codes) && g.n0 % 4 == 0;
  const std::size_t lh_bytes = 2 * std::size_t(radius) * sizeof(std::uint32_t);
  auto* h64 = reinterpret_cast<unsigned long long*>(hist);
  if (vec)
    fused3d_kernel<T, true, C><<<blocks, kRows, lh_bytes, st>>>(in, g, qp, radius, codes, h64, counters.data(),
                                                                ol.data(), vl.data(), el.data(), cap);
  else
    fused3d_kernel<T, false, C><<<blocks, kRows, lh_bytes, st>>>(in, g, qp, radius, codes, h64, counters.data(),
                                                                 ol.data(), vl.data(), el.data(), cap);
  check(cudaGetLastError(), "fused3d_kernel");
  // The counts and the histogram, pinned: the copies go straight to the host.
  static_assert((3 + 2 * kMaxBins3) * sizeof(std::uint64_t) <= HostResult::kBytes, "result slot");
  const HostResult slot;
  check(cudaMemcpyAsync(slot.device<unsigned long long>(), counters.data(), 3 * sizeof(unsigned long long),
                        cudaMemcpyDefault, st),
        "fused counters copy");
  check(cudaMemcpyAsync(slot.device<std::uint64_t>() + 3, hist, 2 * std::size_t(radius) * sizeof(std::uint64_t),
                        cudaMemcpyDefault, st),
        "histogram copy");
  check(cudaStreamSynchronize(st), "fused3d sync");
  const unsigned long long hc[3] = {slot.host<unsigned long long>()[0], slot.host<unsigned long long>()[1],
                                    slot.host<unsigned long long>()[2]};
  lists.hist_host = Kokkos::View<std::uint64_t*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::hist_host")), 2 * std::size_t(radius));
  std::memcpy(lists.hist_host.data(), slot.host<std::uint64_t>() + 3, 2 * std::size_t(radius) * sizeof(std::uint64_t));
  lists.n_verbatim = hc[0];
  lists.n_outliers = hc[1];
  lists.valid = hc[0] <= cap && hc[1] <= cap && hc[2] <= cap;
  if (on_histogram) on_histogram();
  if (lists.valid) {
    auto oa = ws.get<std::uint64_t>(WS::kOutliersAlt, hc[1], "ksz::outlier_alt");
    auto va = ws.get<std::uint64_t>(WS::kVerbatimAlt, hc[0], "ksz::verbatim_alt");
    auto ea = ws.get<std::uint64_t>(WS::kEscapesAlt, hc[2], "ksz::escape_alt");
    ListToSort sorts[kMaxSortLists] = {
        {ol.data(), oa.data(), hc[1]}, {vl.data(), va.data(), hc[0]}, {el.data(), ea.data(), hc[2]}};
    sort_lists(space, sorts, n, ws);
    lists.keep[0] = ol, lists.keep[1] = vl, lists.keep[2] = oa, lists.keep[3] = va, lists.keep[4] = el,
    lists.keep[5] = ea;
    lists.outlier_idx = Kokkos::View<std::uint64_t*, Kokkos::CudaSpace>(sorts[0].sorted, hc[1]);
    lists.verbatim_idx = Kokkos::View<std::uint64_t*, Kokkos::CudaSpace>(sorts[1].sorted, hc[0]);
    lists.escape_idx = Kokkos::View<std::uint64_t*, Kokkos::CudaSpace>(sorts[2].sorted, hc[2]);
  }
  return true;
}

namespace {
struct OutlierEntry {  // an escape entry of code 0
  __device__ bool operator()(std::uint64_t e) const { return (e & 0xFFFFu) == 0; }
};
__global__ void entry_indices(std::uint64_t* __restrict__ e, std::uint64_t count) {
  const std::uint64_t k = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) e[k] >>= 16;
}
}  // namespace

bool byte_code_outliers(const Kokkos::Cuda& space, const std::uint64_t* escapes, std::uint64_t count,
                        std::uint64_t* out, std::uint64_t n_outliers, WS::Lease& ws) {
  if (!enabled() || count > 0x7FFFFFFFull || n_outliers > count) return false;
  if (n_outliers == 0) return true;
  cudaStream_t st = space.cuda_stream();
  auto selected = ws.get<int>(WS::kScalar, 1, "ksz::selected");
  std::size_t temp_bytes = 0;
  check(cub::DeviceSelect::If(nullptr, temp_bytes, escapes, out, selected.data(), static_cast<int>(count),
                              OutlierEntry{}, st),
        "select size");
  auto temp = ws.get<unsigned char>(WS::kSortTemp, temp_bytes, "ksz::select_temp");
  check(cub::DeviceSelect::If(temp.data(), temp_bytes, escapes, out, selected.data(), static_cast<int>(count),
                              OutlierEntry{}, st),
        "select");
  entry_indices<<<static_cast<unsigned>((n_outliers + kThreads - 1) / kThreads), kThreads, 0, st>>>(out, n_outliers);
  check(cudaGetLastError(), "entry_indices");
  return true;
}

#define KSZ_FUSED3D(T, C)                                                                                        \
  template bool lorenzo_fused_compress3d<T, C>(const Kokkos::Cuda&, const T*, const LorenzoShape&,             \
                                               const quantize::QuantParams&, std::uint32_t, C*, std::uint64_t*, \
                                               FusedLists&, WS::Lease&, const std::function<void()>&);
KSZ_FUSED3D(float, std::uint16_t)
KSZ_FUSED3D(double, std::uint16_t)
KSZ_FUSED3D(float, std::uint8_t)
KSZ_FUSED3D(double, std::uint8_t)
#undef KSZ_FUSED3D

// ------------------------------------------- histogram of a code array
//
// histogram::histogram's twin for the interp pipeline's codes (same counts):
// eight codes a thread per 16-byte load, the 8 bins from hot0 counted in the
// 8-bit fields of one register (as the fused kernels do) and flushed into the
// block's shared histogram every kHotFlush rounds, the rest by shared atomics;
// the block adds its histogram to the global one once. The portable version
// counts its hot window by a select per bin and code.
namespace {
__global__ void __launch_bounds__(kThreads)
    code_histogram_kernel(const uint4* __restrict__ vec, std::uint64_t nvec, const std::uint16_t* __restrict__ tail,
                          std::uint32_t ntail, std::uint32_t nbins, std::uint32_t hot0,
                          unsigned long long* __restrict__ hist) {
  // Item blockIdx.y: its codes follow the previous item's, its histogram too
  // (items > 1 only when n is a multiple of 8: no tail).
  vec += blockIdx.y * nvec;
  hist += std::uint64_t(blockIdx.y) * nbins;
  extern __shared__ std::uint32_t lh[];
  for (std::uint32_t b = threadIdx.x; b < nbins; b += blockDim.x) lh[b] = 0;
  __syncthreads();
  unsigned long long hot = 0;
  const auto count = [&](std::uint32_t c) { count_code(c, hot, lh, hot0, nbins); };
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  int since_flush = 0;
  // Block-uniform rounds (flush_hot is a warp collective).
  for (std::uint64_t base = std::uint64_t(blockIdx.x) * blockDim.x; base < nvec; base += stride) {
    const std::uint64_t v = base + threadIdx.x;
    if (v < nvec) {
      const uint4 w = vec[v];
      const std::uint32_t x[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        count(x[k] & 0xFFFFu);
        count(x[k] >> 16);
      }
    }
    if (++since_flush == kHotFlush) {  // at most 8 a field a round
      flush_hot(hot, lh, hot0, nbins);
      since_flush = 0;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < ntail) count(tail[threadIdx.x]);
  flush_hot(hot, lh, hot0, nbins);
  __syncthreads();
  add_block_histogram(lh, nbins, hist);
}
}  // namespace

bool code_histogram(const Kokkos::Cuda& space, const std::uint16_t* codes, std::uint64_t n, std::uint32_t nbins,
                    std::uint32_t center, std::uint64_t* hist, std::uint32_t items) {
  if (!enabled() || nbins == 0 || nbins > kMaxBins || (reinterpret_cast<std::uintptr_t>(codes) & 15) != 0) return false;
  if (items < 1 || items > 64 || (items > 1 && n % 8 != 0)) return false;
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(hist, 0, std::size_t(items) * nbins * sizeof(std::uint64_t), st), "histogram reset");
  if (n == 0) return true;
  const std::uint64_t nvec = n / 8;
  const std::size_t shmem = std::size_t(nbins) * sizeof(std::uint32_t);
  const std::uint64_t want = (nvec + kThreads - 1) / kThreads;
  const std::uint64_t cap = std::uint64_t(launch::resident_blocks(code_histogram_kernel, kThreads, shmem)) / items;
  const unsigned blocks = static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(want, cap)));
  const std::uint32_t hot0 = center >= kHotBins / 2 ? center - kHotBins / 2 : 0;
  code_histogram_kernel<<<dim3(blocks, items), kThreads, shmem, st>>>(reinterpret_cast<const uint4*>(codes), nvec,
                                                         codes + nvec * 8, static_cast<std::uint32_t>(n - nvec * 8),
                                                         nbins, hot0, reinterpret_cast<unsigned long long*>(hist));
  check(cudaGetLastError(), "code_histogram_kernel");
  return true;
}

// ------------------------------------- histogram and magnitude classes
//
// code_histogram's counts, and for every block of kClassBlock codes the
// counts of its magnitude classes (|c - center| in [2^(k+4), 2^(k+5)), k <
// 8) and of its code-0 positions (class 8: |0 - center| = 2^12): a warp a
// block (16 loads of 16 bytes a lane). The classes cost nothing on the
// common path: a code in a class is never one of the hot bins, so it is
// counted where count_code takes the shared atomic, by a second one into the
// warp's class counts in shared memory (rare at the bounds the radius choice
// serves). The interp pipeline's outlier counts at any candidate radius then
// need no further read of the codes (spline::count_outliers's 150 us at
// 512^3).
namespace {
using histogram::kClassBlock;
using histogram::kCodeClasses;
__global__ void __launch_bounds__(kThreads)
    code_classes_kernel(const std::uint16_t* __restrict__ codes, std::uint64_t n, std::uint32_t nbins,
                        std::uint32_t center, std::uint32_t hot0, unsigned long long* __restrict__ hist,
                        std::uint32_t* __restrict__ classes) {
  extern __shared__ std::uint32_t lh[];  // nbins bins, then kCodeClasses counts a warp
  const int lane = threadIdx.x & 31;
  std::uint32_t* const wc = lh + nbins + (threadIdx.x / 32) * kCodeClasses;
  for (std::uint32_t b = threadIdx.x; b < nbins + (blockDim.x / 32) * kCodeClasses; b += blockDim.x) lh[b] = 0;
  __syncthreads();
  unsigned long long hot = 0;
  // Class k = floor(log2 a) - 4 = 27 - clz(a) for a = |c - center| >= 16;
  // a <= 2^12 for the codes below nbins = 2 center, 2^12 for code 0 alone.
  const auto count = [&](std::uint32_t c) {
    if (count_code(c, hot, lh, hot0, nbins)) {
      const std::uint32_t a = c >= center ? c - center : center - c;
      if (a >= 16u) atomicAdd(&wc[27 - __clz(a)], 1u);
    }
  };
  const std::uint64_t nblk = (n + kClassBlock - 1) / kClassBlock;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / 32);
  for (std::uint64_t blk = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; blk < nblk; blk += warps) {
    const std::uint64_t begin = blk * kClassBlock;
    if (begin + kClassBlock <= n) {
      const uint4* v = reinterpret_cast<const uint4*>(codes + begin);
#pragma unroll 4
      for (int k = 0; k < int(kClassBlock / 8 / 32); ++k) {
        const uint4 w = __ldg(v + 32 * k + lane);
        const std::uint32_t x[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          count(x[j] & 0xFFFFu);
          count(x[j] >> 16);
        }
      }
    } else {
      for (std::uint64_t i = begin + lane; i < n; i += 32) count(codes[i]);
    }
    flush_hot(hot, lh, hot0, nbins);  // at most 128 a field
    __syncwarp();
    if (lane < kCodeClasses) {
      classes[blk * kCodeClasses + lane] = wc[lane];
      wc[lane] = 0;
    }
    __syncwarp();
  }
  __syncthreads();
  add_block_histogram(lh, nbins, hist);
}
}  // namespace

bool code_histogram_classes(const Kokkos::Cuda& space, const std::uint16_t* codes, std::uint64_t n,
                            std::uint32_t center, std::uint64_t* hist, std::uint32_t* classes) {
  const std::uint32_t nbins = 2 * center;
  if (!enabled() || center != 4096 || (reinterpret_cast<std::uintptr_t>(codes) & 15) != 0)
    return false;
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(hist, 0, std::size_t(nbins) * sizeof(std::uint64_t), st), "histogram reset");
  if (n == 0) return true;
  const std::size_t shmem = (std::size_t(nbins) + kThreads / 32 * kCodeClasses) * sizeof(std::uint32_t);
  const std::uint64_t nblk = (n + kClassBlock - 1) / kClassBlock;
  const std::uint64_t want = (nblk + kThreads / 32 - 1) / (kThreads / 32);
  const std::uint64_t cap = std::uint64_t(launch::resident_blocks(code_classes_kernel, kThreads, shmem));
  const int blocks = static_cast<int>(std::max<std::uint64_t>(1, std::min(want, cap)));
  const std::uint32_t hot0 = center >= kHotBins / 2 ? center - kHotBins / 2 : 0;
  code_classes_kernel<<<blocks, kThreads, shmem, st>>>(codes, n, nbins, center, hot0,
                                                       reinterpret_cast<unsigned long long*>(hist), classes);
  check(cudaGetLastError(), "code_classes_kernel");
  return true;
}

// ------------------------------- code-0 offsets from magnitude classes
namespace {
constexpr std::uint32_t kOffPerThread = 4, kOffTile = kThreads * kOffPerThread;  // compaction blocks a tile
static_assert(kOffTile == kZeroOffsetsTile, "the tile zero_offsets_state_words counts");

__global__ void __launch_bounds__(kThreads)
    zero_offsets_kernel(const std::uint32_t* __restrict__ classes, std::uint64_t nblocks, std::uint32_t first,
                        std::uint64_t ntiles, unsigned long long* __restrict__ state,
                        std::uint64_t* __restrict__ offsets) {
  constexpr std::uint32_t C = histogram::kCodeClasses;
  __shared__ unsigned long long s_tile;
  unsigned long long* ticket = state + ntiles;
  for (;;) {
    if (threadIdx.x == 0) s_tile = atomicAdd(ticket, 1ull);
    __syncthreads();
    const std::uint64_t t = s_tile;
    if (t >= ntiles) return;  // block-uniform
    const std::uint64_t b0 = t * kOffTile + std::uint64_t(threadIdx.x) * kOffPerThread;
    std::uint32_t c[kOffPerThread], sum = 0;  // a block's count <= 4096, a tile's < 2^23
#pragma unroll
    for (std::uint32_t j = 0; j < kOffPerThread; ++j) {
      const std::uint64_t b = b0 + j;
      c[j] = b < nblocks ? histogram::zeros_of_classes(classes + b * C, static_cast<int>(first)) : 0u;
      sum += c[j];
    }
    std::uint64_t at = lookback::exclusive_across_tiles<kThreads>(state, t, sum);
#pragma unroll
    for (std::uint32_t j = 0; j < kOffPerThread; ++j) {
      const std::uint64_t b = b0 + j;
      if (b <= nblocks) offsets[b] = at;
      at += c[j];
    }
    __syncthreads();  // s_tile is reused
  }
}
}  // namespace

bool zero_offsets_from_classes(const Kokkos::Cuda& space, const std::uint32_t* classes, std::uint64_t nblocks,
                               std::uint32_t first, std::uint64_t* offsets, unsigned long long* state) {
  if (!enabled() || first >= histogram::kCodeClasses) return false;
  const std::uint64_t ntiles = zero_offsets_state_words(nblocks) - 1;  // entry nblocks (the total) included
  cudaStream_t st = space.cuda_stream();
  check(cudaMemsetAsync(state, 0, (ntiles + 1) * sizeof(unsigned long long), st), "zero offsets states");
  const std::uint64_t resident = std::uint64_t(launch::resident_blocks(zero_offsets_kernel, kThreads, 0));
  const unsigned blocks = static_cast<unsigned>(ntiles < resident ? ntiles : resident);
  zero_offsets_kernel<<<blocks, kThreads, 0, st>>>(classes, nblocks, first, ntiles, state, offsets);
  check(cudaGetLastError(), "zero_offsets_kernel");
  return true;
}

struct PendingCopy::State {
  HostResult slot;
  std::size_t total = 0;
  bool waited = false;
};

PendingCopy::PendingCopy() = default;
PendingCopy::~PendingCopy() {
  // The copy must not land in a slot handed to another call.
  if (m_state && !m_state->waited) cudaEventSynchronize(m_state->slot.event());
}

bool PendingCopy::start(const Kokkos::Cuda& space, const void* const* src, const std::size_t* bytes, int parts) {
  std::size_t total = 0;
  for (int k = 0; k < parts; ++k) total += bytes[k];
  if (!enabled() || total > HostResult::kBytes || m_state) return false;
  m_state = std::make_unique<State>();
  m_state->total = total;
  cudaStream_t st = space.cuda_stream();
  std::size_t at = 0;
  for (int k = 0; k < parts; ++k) {
    check(cudaMemcpyAsync(m_state->slot.device<char>() + at, src[k], bytes[k], cudaMemcpyDefault, st),
          "copy to host");
    at += bytes[k];
  }
  check(cudaEventRecord(m_state->slot.event(), st), "copy event record");
  return true;
}

void PendingCopy::finish(void* dst) {
  KSZ_EXPECTS(m_state && !m_state->waited, "internal: no copy started");
  check(cudaEventSynchronize(m_state->slot.event()), "copy to host wait");
  m_state->waited = true;
  std::memcpy(dst, m_state->slot.host<char>(), m_state->total);
}

bool copy_to_host(const Kokkos::Cuda& space, const void* const* src, const std::size_t* bytes, int parts, void* dst) {
  PendingCopy copy;
  if (!copy.start(space, src, bytes, parts)) return false;
  copy.finish(dst);
  return true;
}

template bool finite_minmax<float>(const Kokkos::Cuda&, const float*, std::uint64_t, double&, double&);
template bool finite_minmax<double>(const Kokkos::Cuda&, const double*, std::uint64_t, double&, double&);
template bool finite_minmax_to<float>(const Kokkos::Cuda&, const float*, std::uint64_t, double*, bool);
template bool finite_minmax_to<double>(const Kokkos::Cuda&, const double*, std::uint64_t, double*, bool);
template bool lorenzo_fused_compress<float>(const Kokkos::Cuda&, const float*, const LorenzoShape&,
                                            const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                            std::uint64_t*, std::uint64_t&);
template bool lorenzo_fused_compress<double>(const Kokkos::Cuda&, const double*, const LorenzoShape&,
                                             const quantize::QuantParams&, std::uint32_t, std::uint16_t*,
                                             std::uint64_t*, std::uint64_t&);

}  // namespace ksz::cuda_spec
