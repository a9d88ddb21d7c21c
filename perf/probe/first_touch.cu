// Probe: cost of the first write to freshly cudaMalloc'd memory versus a
// rewrite of the same buffer (perf/NOTES.md, "fresh allocations").
#include <cstdio>
#include <cuda_runtime.h>
__global__ void fill(float4* p, size_t n4) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x)
    p[i] = make_float4(1.f, 2.f, 3.f, float(i));
}
static float run(float4* p, size_t n4) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a); fill<<<132 * 16, 256>>>(p, n4); cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b); return ms;
}
int main() {
  const size_t bytes = size_t(512) << 20, n4 = bytes / 16;
  float4* p; cudaFree(0);
  for (int r = 0; r < 3; ++r) {
    cudaMalloc(&p, bytes);
    const float t1 = run(p, n4), t2 = run(p, n4);
    std::printf("fresh cudaMalloc: first write %.3f ms (%.0f GB/s), rewrite %.3f ms (%.0f GB/s)\n", t1, bytes / t1 / 1e6, t2, bytes / t2 / 1e6);
    cudaFree(p);
  }
  return cudaGetLastError() != cudaSuccess;
}
