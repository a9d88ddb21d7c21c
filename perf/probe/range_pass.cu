// Probe: how fast a finite min/max pass over a 512^3 float32 field can read
// (the value range ahead of SZx's REL compressor, Lorenzo's and interp's;
// perf/NOTES.md, "twenty-sixth round"). Variants of the library's
// minmax_kernel (cuda_specializations/lorenzo_cuda.cpp): its grid-stride loop
// with four 16-byte loads in flight a thread, eight, contiguous spans a CTA,
// and loads with Hopper's L2 256-byte prefetch hint; a plain read as the
// ceiling. L2 is flushed before each pass: by a 128 MiB memset (dirty
// lines, as after a kernel that wrote its output) or by a 128 MiB read;
// median of 21 passes. Last, the bench's order (a 512 MiB field written, then
// the host away 0, 5 or 40 ms with the GPU idle), for the 20 us that the
// range pass takes longer in the bench than here ("twenty-seventh round").
//   nvcc -O3 -arch=sm_90 -std=c++17 -o range_pass perf/probe/range_pass.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <thread>
#include <vector>

static void check(cudaError_t e, const char* w) {
  if (e != cudaSuccess) std::printf("CUDA error %s: %s\n", w, cudaGetErrorString(e)), std::exit(1);
}

__device__ __forceinline__ float4 load_plain(const float4* p) { return __ldg(p); }
__device__ __forceinline__ float4 load_hint(const float4* p) {
  float4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ void add(float v, float& mn, float& mx) {
  if (v - v == 0.f) mn = v < mn ? v : mn, mx = v > mx ? v : mx;
}
__device__ __forceinline__ void add4(float4 r, float& mn, float& mx) {
  add(r.x, mn, mx), add(r.y, mn, mx), add(r.z, mn, mx), add(r.w, mn, mx);
}

// The block's pair folded and stored; the last block folds all (as the library's).
__device__ void finish(float mn, float mx, float* parts, unsigned* done, float* out) {
  __shared__ float smn[32], smx[32];
  __shared__ bool last;
  for (int o = 16; o; o >>= 1)
    mn = fminf(mn, __shfl_xor_sync(~0u, mn, o)), mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, o));
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
  if (lane == 0) smn[w] = mn, smx[w] = mx;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int k = 1; k < nw; ++k) mn = fminf(mn, smn[k]), mx = fmaxf(mx, smx[k]);
    parts[2 * blockIdx.x] = mn, parts[2 * blockIdx.x + 1] = mx;
    __threadfence();
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  mn = FLT_MAX, mx = -FLT_MAX;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
    mn = fminf(mn, __ldcg(parts + 2 * b)), mx = fmaxf(mx, __ldcg(parts + 2 * b + 1));
  for (int o = 16; o; o >>= 1)
    mn = fminf(mn, __shfl_xor_sync(~0u, mn, o)), mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, o));
  __syncthreads();
  if (lane == 0) smn[w] = mn, smx[w] = mx;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int k = 1; k < nw; ++k) mn = fminf(mn, smn[k]), mx = fmaxf(mx, smx[k]);
  out[0] = mn, out[1] = mx;
  *done = 0;
}

// Grid-stride, U loads in flight a thread.
template <int U, bool Hint>
__global__ void __launch_bounds__(256) stride_kernel(const float4* __restrict__ in, std::uint64_t nvec, float* parts,
                                                     unsigned* done, float* out) {
  float mn = FLT_MAX, mx = -FLT_MAX;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  std::uint64_t k = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; k + (U - 1) * stride < nvec; k += U * stride) {
    float4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = Hint ? load_hint(in + k + u * stride) : load_plain(in + k + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) add4(r[u], mn, mx);
  }
  for (; k < nvec; k += stride) add4(load_plain(in + k), mn, mx);
  finish(mn, mx, parts, done, out);
}

// Each CTA a contiguous span, U loads in flight a thread.
template <int U, bool Hint>
__global__ void __launch_bounds__(256) span_kernel(const float4* __restrict__ in, std::uint64_t nvec, float* parts,
                                                   unsigned* done, float* out) {
  float mn = FLT_MAX, mx = -FLT_MAX;
  const std::uint64_t per = (nvec + gridDim.x - 1) / gridDim.x;
  const std::uint64_t b = blockIdx.x * per, e = nvec < b + per ? nvec : b + per;
  std::uint64_t k = b + threadIdx.x;
  for (; k + (U - 1) * 256 < e; k += U * 256) {
    float4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = Hint ? load_hint(in + k + u * 256) : load_plain(in + k + u * 256);
#pragma unroll
    for (int u = 0; u < U; ++u) add4(r[u], mn, mx);
  }
  for (; k < e; k += 256) add4(load_plain(in + k), mn, mx);
  finish(mn, mx, parts, done, out);
}

// The ceiling: every word read, one xor kept.
template <int U>
__global__ void __launch_bounds__(256) read_kernel(const uint4* __restrict__ in, std::uint64_t nvec, unsigned* sink) {
  unsigned x = 0;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  std::uint64_t k = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; k + (U - 1) * stride < nvec; k += U * stride) {
    uint4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = __ldg(in + k + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) x ^= r[u].x ^ r[u].y ^ r[u].z ^ r[u].w;
  }
  if (x == 0x12345678u) *sink = x;
}

int main() {
  const std::uint64_t n = 512ull * 512 * 512, nvec = n / 4;
  std::vector<float> h(n);
  std::uint64_t s = 88172645463325252ull;
  for (auto& v : h) s ^= s << 13, s ^= s >> 7, s ^= s << 17, v = float(std::int64_t(s % 2000001) - 1000000) * 1e-6f;
  float *in, *parts, *out;
  unsigned *done, *sink;
  void* flush;
  check(cudaMalloc(&in, n * 4), "in");
  check(cudaMalloc(&parts, 2 * 8192 * 4), "parts");
  check(cudaMalloc(&out, 8), "out");
  check(cudaMalloc(&done, 4), "done");
  check(cudaMalloc(&sink, 4), "sink");
  check(cudaMalloc(&flush, std::size_t(512) << 20), "flush");
  check(cudaMemcpy(in, h.data(), n * 4, cudaMemcpyHostToDevice), "copy");
  check(cudaMemset(done, 0, 4), "done");
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "sms");
  const float want_mn = *std::min_element(h.begin(), h.end()), want_mx = *std::max_element(h.begin(), h.end());
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  bool dirty = true;  // L2 left full of written lines (a memset), else of read ones
  std::size_t flush_bytes = std::size_t(128) << 20;  // pass 3 on: 512 MiB, as the field a decoder wrote
  int pause_ms = 0;                                   // pass 4: the host away this long first, the GPU idle
  auto time = [&](const char* name, auto launch, bool checked) {
    std::vector<float> us;
    for (int r = 0; r < 22; ++r) {
      if (dirty) check(cudaMemsetAsync(flush, r, flush_bytes), "flush");
      else read_kernel<4><<<8 * sms, 256>>>(reinterpret_cast<const uint4*>(flush), flush_bytes / 16, sink);
      if (pause_ms) {
        check(cudaDeviceSynchronize(), "pause");
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      }
      cudaEventRecord(a);
      launch();
      cudaEventRecord(b);
      check(cudaEventSynchronize(b), name);
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      if (r) us.push_back(ms * 1000);
    }
    std::sort(us.begin(), us.end());
    float o[2] = {0, 0};
    cudaMemcpy(o, out, 8, cudaMemcpyDeviceToHost);
    const bool ok = !checked || (o[0] == want_mn && o[1] == want_mx);
    std::printf("%-34s %7.1f us (min %7.1f)  %5.2f TB/s  %s\n", name, us[us.size() / 2], us[0],
                n * 4 / (us[us.size() / 2] * 1e-6) / 1e12, ok ? "" : "WRONG RESULT");
    cudaMemset(out, 0, 8);
  };
  const auto v4 = reinterpret_cast<const float4*>(in);
  for (int pass = 0; pass < 2; ++pass) {
    dirty = pass == 0;
    std::printf("-- pass %d (%d SMs): L2 holds %s\n", pass + 1, sms, dirty ? "written lines (a 128 MiB memset)" : "read lines (a 128 MiB read)");
    time("library: stride, 4 loads, 8 CTAs/SM", [&] { stride_kernel<4, false><<<8 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("stride, 8 loads, 8 CTAs/SM", [&] { stride_kernel<8, false><<<8 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("stride, 4 loads, hint", [&] { stride_kernel<4, true><<<8 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("stride, 8 loads, hint", [&] { stride_kernel<8, true><<<8 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("stride, 4 loads, 16 CTAs/SM", [&] { stride_kernel<4, false><<<16 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("span, 4 loads, 8 CTAs/SM", [&] { span_kernel<4, false><<<8 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("span, 8 loads, hint", [&] { span_kernel<8, true><<<8 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("span, 4 loads, 32 CTAs/SM", [&] { span_kernel<4, false><<<32 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("plain read, 4 loads (ceiling)", [&] { read_kernel<4><<<8 * sms, 256>>>(reinterpret_cast<const uint4*>(in), nvec, sink); }, false);
    time("plain read, 8 loads (ceiling)", [&] { read_kernel<8><<<8 * sms, 256>>>(reinterpret_cast<const uint4*>(in), nvec, sink); }, false);
  }
  // The bench's order: a decode that wrote a 512 MiB field, then (pass 4)
  // tens of milliseconds of host work with the GPU idle, then the range.
  dirty = true;
  flush_bytes = std::size_t(512) << 20;
  for (int pause : {0, 5, 40}) {
    pause_ms = pause;
    std::printf("-- L2 and the TLBs after a 512 MiB memset, the host away %d ms first\n", pause);
    time("library: stride, 4 loads, 8 CTAs/SM", [&] { stride_kernel<4, false><<<8 * sms, 256>>>(v4, nvec, parts, done, out); }, true);
    time("plain read, 4 loads (ceiling)", [&] { read_kernel<4><<<8 * sms, 256>>>(reinterpret_cast<const uint4*>(in), nvec, sink); }, false);
  }
  return 0;
}
