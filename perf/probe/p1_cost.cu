// Probe: what bounds the checker's pattern-1 kernel (cuda_specializations/
// metrics_cuda.cpp) on 512^3 float32. Variant "cur" repeats the product
// kernel's per-element work; the other variants drop one group of metrics
// each, so the cost of every group shows (H200: all 0.594 ms, without the
// relative error 0.324, nothing but the reads 0.279, reads alone 0.239).
// "opt" was a first rewrite (per-thread thresholds, a float reciprocal
// refined in double) that did not help (0.613 ms): per-thread filters fire
// too often and the extremes' selects remained; the product kernel filters
// per warp instead. Read-only roofline: "read" sums both arrays.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o p1_cost perf/probe/p1_cost.cu
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

constexpr int kThreads = 256, kUnroll = 4;
using u64 = std::uint64_t;

struct Acc {
  u64 cnt, excl, npwr, imax;
  double min_e, max_e, sum_e, sum_abs, max_abs, sum_e2, min_p, max_p, sum_p;
  float min_a, max_a, min_b, max_b;
  double sa, sb, saa, sbb, sab;
};

enum : unsigned { kErr = 1, kPwr = 2, kRange = 4, kPear = 8, kAll = 15 };

template <unsigned G>
struct Cur {
  Acc v;
  float fill_le;
  double shift;
  __device__ void init(float f, double s) {
    fill_le = f;
    shift = s;
    v.cnt = v.excl = v.npwr = 0;
    v.imax = ~u64(0);
    v.min_e = v.min_p = DBL_MAX;
    v.max_e = v.max_p = -DBL_MAX;
    v.max_abs = -1;
    v.sum_e = v.sum_abs = v.sum_e2 = v.sum_p = v.sa = v.sb = v.saa = v.sbb = v.sab = 0;
    v.min_a = v.min_b = FLT_MAX;
    v.max_a = v.max_b = -FLT_MAX;
  }
  __device__ __forceinline__ void add(u64 i, float x, float y) {
    const bool ok = x - x == 0.f && fabsf(x) <= fill_le;
    if (!(ok && y - y == 0.f)) {
      ++v.excl;
      return;
    }
    const double xd = x, yd = y, e = yd - xd, ae = fabs(e);
    ++v.cnt;
    if (G & kErr) {
      if (ae > v.max_abs) {
        v.max_abs = ae;
        v.imax = i;
      }
      if (e < v.min_e) v.min_e = e;
      if (e > v.max_e) v.max_e = e;
      v.sum_e += e;
      v.sum_abs += ae;
      v.sum_e2 += e * e;
    }
    if ((G & kPwr) && x != 0.f) {
      const double p = ae / fabs(xd);
      ++v.npwr;
      if (p < v.min_p) v.min_p = p;
      if (p > v.max_p) v.max_p = p;
      v.sum_p += p;
    }
    if (G & kRange) {
      v.min_a = fminf(v.min_a, x);
      v.max_a = fmaxf(v.max_a, x);
      v.min_b = fminf(v.min_b, y);
      v.max_b = fmaxf(v.max_b, y);
    }
    if (G & kPear) {
      const double xs = xd - shift, ys = yd - shift;
      v.sa += xs;
      v.sb += ys;
      v.saa += xs * xs;
      v.sbb += ys * ys;
      v.sab += xs * ys;
    }
  }
  __device__ Acc finish(u64) const { return v; }
};

// The rewrite: validity by two compares (|x| <= fill_le, finite by itself;
// |y| <= FLT_MAX); counts from the visit count (only exclusions counted);
// the extremes as rare branches; the max |e| and its index from the extremes
// of e; the relative error through a float reciprocal refined once in double,
// exact division only where it may set an extreme; Pearson from sa, saa and
// sum(xs * e) (sb = sa + sum_e, sbb = saa + 2 sxe + sum_e2, sab = saa + sxe).
struct Opt {
  double min_e, max_e, sum_e, sum_abs, sum_e2, min_p, max_p, sum_p, thr_lo, thr_hi;
  double sa, saa, sxe;
  float min_a, max_a, min_b, max_b, fill_le;
  double shift;
  u64 imin, imaxe;
  unsigned excl, zeros, visits;
  __device__ void init(float f, double s) {
    fill_le = f;
    shift = s;
    min_e = min_p = thr_lo = DBL_MAX;
    max_e = max_p = thr_hi = -DBL_MAX;
    sum_e = sum_abs = sum_e2 = sum_p = sa = saa = sxe = 0;
    min_a = min_b = FLT_MAX;
    max_a = max_b = -FLT_MAX;
    imin = imaxe = ~u64(0);
    excl = zeros = visits = 0;
  }
  __device__ __forceinline__ void add(u64 i, float x, float y) {
    ++visits;
    if (!(fabsf(x) <= fill_le && fabsf(y) <= FLT_MAX)) {
      ++excl;
      return;
    }
    const double xd = x, yd = y, e = yd - xd, ae = fabs(e);
    if (e < min_e) {
      min_e = e;
      imin = i;
    }
    if (e > max_e) {
      max_e = e;
      imaxe = i;
    }
    sum_e += e;
    sum_abs += ae;
    sum_e2 = fma(e, e, sum_e2);
    const float ax = fabsf(x);
    if (ax >= FLT_MIN) {
      double r = double(__frcp_rn(ax));  // (float reciprocal: ax normal, so r finite)
      const double axd = ax;
      r = fma(r, fma(-axd, r, 1.0), r);  // one Newton step: relative error < 2^-44
      const double q = ae * r;
      sum_p += q;
      if (q <= thr_lo || q >= thr_hi) {
        const double p = ae / axd;
        if (p < min_p) {
          min_p = p;
          thr_lo = p * (1 + 1e-12);
        }
        if (p > max_p) {
          max_p = p;
          thr_hi = p * (1 - 1e-12);
        }
      }
    } else if (x != 0.f) {
      const double p = ae / fabs(xd);
      sum_p += p;
      if (p < min_p) min_p = p, thr_lo = p * (1 + 1e-12);
      if (p > max_p) max_p = p, thr_hi = p * (1 - 1e-12);
    } else {
      ++zeros;
    }
    min_a = fminf(min_a, x);
    max_a = fmaxf(max_a, x);
    min_b = fminf(min_b, y);
    max_b = fmaxf(max_b, y);
    const double xs = xd - shift;
    sa += xs;
    saa = fma(xs, xs, saa);
    sxe = fma(xs, e, sxe);
  }
  __device__ Acc finish(u64) const {
    Acc v;
    v.excl = excl;
    v.cnt = u64(visits) - excl;
    v.npwr = v.cnt - zeros;
    v.min_e = min_e;
    v.max_e = max_e;
    v.max_abs = v.cnt ? fmax(-min_e, max_e) : -1;
    v.imax = -min_e > max_e ? imin : max_e > -min_e ? imaxe : (imin < imaxe ? imin : imaxe);
    v.sum_e = sum_e;
    v.sum_abs = sum_abs;
    v.sum_e2 = sum_e2;
    v.min_p = min_p;
    v.max_p = max_p;
    v.sum_p = sum_p;
    v.min_a = min_a;
    v.max_a = max_a;
    v.min_b = min_b;
    v.max_b = max_b;
    v.sa = sa;
    v.sb = sa + sum_e;
    v.saa = saa;
    v.sbb = saa + 2 * sxe + sum_e2;
    v.sab = saa + sxe;
    return v;
  }
};

__device__ void merge(Acc& d, const Acc& s) {
  d.cnt += s.cnt;
  d.excl += s.excl;
  d.npwr += s.npwr;
  if (s.max_abs > d.max_abs || (s.max_abs == d.max_abs && s.imax < d.imax)) d.max_abs = s.max_abs, d.imax = s.imax;
  d.min_e = fmin(d.min_e, s.min_e);
  d.max_e = fmax(d.max_e, s.max_e);
  d.min_p = fmin(d.min_p, s.min_p);
  d.max_p = fmax(d.max_p, s.max_p);
  d.min_a = fminf(d.min_a, s.min_a);
  d.max_a = fmaxf(d.max_a, s.max_a);
  d.min_b = fminf(d.min_b, s.min_b);
  d.max_b = fmaxf(d.max_b, s.max_b);
  d.sum_e += s.sum_e;
  d.sum_abs += s.sum_abs;
  d.sum_e2 += s.sum_e2;
  d.sum_p += s.sum_p;
  d.sa += s.sa;
  d.sb += s.sb;
  d.saa += s.saa;
  d.sbb += s.sbb;
  d.sab += s.sab;
}

template <class L, int MinBlocks>
__global__ void __launch_bounds__(kThreads, MinBlocks) p1(const float* a, const float* b, u64 n, float fill_le,
                                                          double shift, Acc* parts) {
  L acc;
  acc.init(fill_le, shift);
  const u64 nvec = n / 4, stride = u64(gridDim.x) * kThreads, tid = u64(blockIdx.x) * kThreads + threadIdx.x;
  const float4* va = reinterpret_cast<const float4*>(a);
  const float4* vb = reinterpret_cast<const float4*>(b);
  u64 k = tid;
  for (; k + (kUnroll - 1) * stride < nvec; k += kUnroll * stride) {
    float4 ra[kUnroll], rb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      ra[u] = __ldg(va + k + u * stride);
      rb[u] = __ldg(vb + k + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const u64 i0 = (k + u * stride) * 4;
      acc.add(i0, ra[u].x, rb[u].x);
      acc.add(i0 + 1, ra[u].y, rb[u].y);
      acc.add(i0 + 2, ra[u].z, rb[u].z);
      acc.add(i0 + 3, ra[u].w, rb[u].w);
    }
  }
  for (; k < nvec; k += stride) {
    const float4 x = __ldg(va + k), y = __ldg(vb + k);
    acc.add(k * 4, x.x, y.x);
    acc.add(k * 4 + 1, x.y, y.y);
    acc.add(k * 4 + 2, x.z, y.z);
    acc.add(k * 4 + 3, x.w, y.w);
  }
  // No block reduction here (both variants would pay the same): every thread
  // writes its partial, which also keeps the compiler from dropping work.
  parts[tid] = acc.finish(0);
}

__global__ void read_only(const float4* a, const float4* b, u64 nvec, float* out) {
  float s = 0;
  const u64 stride = u64(gridDim.x) * blockDim.x;
  for (u64 k = blockIdx.x * u64(blockDim.x) + threadIdx.x; k < nvec; k += stride) {
    const float4 x = __ldg(a + k), y = __ldg(b + k);
    s += x.x + x.y + x.z + x.w + y.x + y.y + y.z + y.w;
  }
  if (s == 12345.f) *out = s;
}

__global__ void gen(float* a, float* b, u64 n) {
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n; i += u64(gridDim.x) * blockDim.x) {
    u64 h = i * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    const float x = float(std::sin(double(i % 9973) * 1e-3)) * 10 + float(h % 1000) * 1e-3f;
    a[i] = (i % 1000 == 0) ? 0.f : x;
    b[i] = x + float(double(h % 2001) * 1e-7 - 1e-4);
  }
}

template <class K>
float best_ms(K k) {
  cudaEvent_t x, y;
  cudaEventCreate(&x);
  cudaEventCreate(&y);
  float best = 1e9;
  for (int r = 0; r < 6; ++r) {
    cudaEventRecord(x);
    k();
    cudaEventRecord(y);
    cudaEventSynchronize(y);
    float ms;
    cudaEventElapsedTime(&ms, x, y);
    if (r && ms < best) best = ms;
  }
  return best;
}

template <class K>
int blocks_of(K kern) {
  int sms, per;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, kThreads, 0);
  return sms * per;
}

Acc host_fold(const std::vector<Acc>& v) {
  Acc d = v[0];
  for (size_t i = 1; i < v.size(); ++i) {
    const Acc& s = v[i];
    d.cnt += s.cnt, d.excl += s.excl, d.npwr += s.npwr;
    if (s.max_abs > d.max_abs || (s.max_abs == d.max_abs && s.imax < d.imax)) d.max_abs = s.max_abs, d.imax = s.imax;
    d.min_e = std::fmin(d.min_e, s.min_e), d.max_e = std::fmax(d.max_e, s.max_e);
    d.min_p = std::fmin(d.min_p, s.min_p), d.max_p = std::fmax(d.max_p, s.max_p);
    d.min_a = std::fmin(d.min_a, s.min_a), d.max_a = std::fmax(d.max_a, s.max_a);
    d.min_b = std::fmin(d.min_b, s.min_b), d.max_b = std::fmax(d.max_b, s.max_b);
    d.sum_e += s.sum_e, d.sum_abs += s.sum_abs, d.sum_e2 += s.sum_e2, d.sum_p += s.sum_p;
    d.sa += s.sa, d.sb += s.sb, d.saa += s.saa, d.sbb += s.sbb, d.sab += s.sab;
  }
  return d;
}

int main() {
  const u64 n = u64(512) * 512 * 512;
  float *a, *b, *o;
  Acc* parts;
  cudaMalloc(&a, n * 4);
  cudaMalloc(&b, n * 4);
  cudaMalloc(&o, 4);
  cudaMalloc(&parts, sizeof(Acc) * 132 * 2048);
  gen<<<132 * 8, 256>>>(a, b, n);
  const double bytes = 2.0 * n * 4, shift = 3.0;
  const float fill_le = FLT_MAX;
  auto report = [&](const char* name, float ms) {
    std::printf("%-22s %8.3f ms %8.0f GB/s\n", name, ms, bytes / ms / 1e6);
  };
  report("read both", best_ms([&] { read_only<<<132 * 8, 256>>>((const float4*)a, (const float4*)b, n / 4, o); }));
  std::vector<Acc> hc, ho;
  auto run = [&](const char* name, auto kern, std::vector<Acc>* keep) {
    const int g = blocks_of(kern);
    const float ms = best_ms([&] { kern<<<g, kThreads>>>(a, b, n, fill_le, shift, parts); });
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s (%d blk)", name, g);
    report(buf, ms);
    if (keep) {
      keep->resize(size_t(g) * kThreads);
      cudaMemcpy(keep->data(), parts, sizeof(Acc) * keep->size(), cudaMemcpyDeviceToHost);
    }
  };
  run("cur all", p1<Cur<kAll>, 2>, &hc);
  run("cur -err", p1<Cur<kAll & ~kErr>, 2>, nullptr);
  run("cur -pwr", p1<Cur<kAll & ~kPwr>, 2>, nullptr);
  run("cur -range", p1<Cur<kAll & ~kRange>, 2>, nullptr);
  run("cur -pearson", p1<Cur<kAll & ~kPear>, 2>, nullptr);
  run("cur none", p1<Cur<0>, 2>, nullptr);
  run("opt lb2", p1<Opt, 2>, &ho);
  run("opt lb3", p1<Opt, 3>, nullptr);
  run("opt lb4", p1<Opt, 4>, nullptr);
  const Acc c = host_fold(hc), p = host_fold(ho);
  auto rel = [](double x, double y) { return std::fabs(x - y) / std::fmax(std::fabs(x), 1e-300); };
  std::printf("cnt %llu/%llu npwr %llu/%llu imax %llu/%llu max_abs %s min_e %s max_e %s min_p %s max_p %s ranges %s\n",
              (unsigned long long)c.cnt, (unsigned long long)p.cnt, (unsigned long long)c.npwr,
              (unsigned long long)p.npwr, (unsigned long long)c.imax, (unsigned long long)p.imax,
              c.max_abs == p.max_abs ? "=" : "DIFF", c.min_e == p.min_e ? "=" : "DIFF",
              c.max_e == p.max_e ? "=" : "DIFF", c.min_p == p.min_p ? "=" : "DIFF", c.max_p == p.max_p ? "=" : "DIFF",
              c.min_a == p.min_a && c.max_a == p.max_a && c.min_b == p.min_b && c.max_b == p.max_b ? "=" : "DIFF");
  std::printf("rel diffs: sum_e %.2e sum_abs %.2e sum_e2 %.2e sum_p %.2e sa %.2e sb %.2e saa %.2e sbb %.2e sab %.2e\n",
              rel(c.sum_e, p.sum_e), rel(c.sum_abs, p.sum_abs), rel(c.sum_e2, p.sum_e2), rel(c.sum_p, p.sum_p),
              rel(c.sa, p.sa), rel(c.sb, p.sb), rel(c.saa, p.saa), rel(c.sbb, p.sbb), rel(c.sab, p.sab));
  const double cn = double(c.cnt);
  auto pearson = [&](const Acc& v) {
    const double cov = v.sab / cn - (v.sa / cn) * (v.sb / cn);
    return cov / std::sqrt((v.saa / cn - (v.sa / cn) * (v.sa / cn)) * (v.sbb / cn - (v.sb / cn) * (v.sb / cn)));
  };
  std::printf("pearson %.17g vs %.17g\n", pearson(c), pearson(p));
  return cudaGetLastError() != cudaSuccess;
}
