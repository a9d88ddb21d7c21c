// Probe: device-memory write patterns of a 16^3-chunked layout (512^3 f32 =
// 512 MiB). Rows of a chunk are 16 floats (64 B) and n0*4 = 2 KiB apart.
#include <cstdio>
#include <cuda_runtime.h>
constexpr size_t N0 = 512, N = N0 * N0 * N0;
// A: plain coalesced float4.
__global__ void a(float4* p) { for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < N / 4; i += size_t(gridDim.x) * blockDim.x) p[i] = make_float4(1, 2, 3, i); }
// rows: r = global row id of a 16-wide row (N/16 rows); row start = r*16 (rows of consecutive chunks along y are 2 KiB apart when mapped via chunk order)
__device__ size_t row_base(size_t r) {  // row r in chunk order: chunk c, row (ly,lz) inside
  size_t c = r / 256, t = r % 256; size_t cx = c % 32, cy = (c / 32) % 32, cz = c / 1024;
  return cx * 16 + N0 * ((cy * 16 + (t & 15)) + N0 * (cz * 16 + (t >> 4)));
}
// B: half-warps write 64 B contiguous (scalar 4-B stores), thread per element.
__global__ void b(float* p) { for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < N; e += size_t(gridDim.x) * blockDim.x) p[row_base(e / 16) + e % 16] = 1.f; }
// C: thread per row, 4 x float4 (the former CUDA inverse3d vector path).
__global__ void c(float* p) { for (size_t r = blockIdx.x * size_t(blockDim.x) + threadIdx.x; r < N / 16; r += size_t(gridDim.x) * blockDim.x) { float4* q = reinterpret_cast<float4*>(p + row_base(r)); for (int k = 0; k < 4; ++k) q[k] = make_float4(1, 2, 3, 4); } }
// D: thread per row, 16 scalar stores.
__global__ void d(float* p) { for (size_t r = blockIdx.x * size_t(blockDim.x) + threadIdx.x; r < N / 16; r += size_t(gridDim.x) * blockDim.x) { float* q = p + row_base(r); for (int k = 0; k < 16; ++k) q[k] = 1.f; } }
// E: quarter-warps write a row as 4 x float4 each lane one float4 (64 B a row, 8 rows an instruction).
__global__ void e(float* p) { for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < N / 4; i += size_t(gridDim.x) * blockDim.x) reinterpret_cast<float4*>(p + row_base(i / 4))[i % 4] = make_float4(1, 2, 3, 4); }
// F: 128-B rows (two chunks side by side): 8 lanes a row of 32 floats.
__device__ size_t row_base2(size_t r) { size_t c = r / 256, t = r % 256; size_t cx = c % 16, cy = (c / 16) % 32, cz = c / 512; return cx * 32 + N0 * ((cy * 16 + (t & 15)) + N0 * (cz * 16 + (t >> 4))); }
__global__ void f(float* p) { for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < N / 4; i += size_t(gridDim.x) * blockDim.x) reinterpret_cast<float4*>(p + row_base2(i / 8))[i % 8] = make_float4(1, 2, 3, 4); }
template <class K> float t(K k, void* p) {
  cudaEvent_t x, y; cudaEventCreate(&x); cudaEventCreate(&y); float best = 1e9;
  for (int r = 0; r < 3; ++r) { cudaEventRecord(x); k(p); cudaEventRecord(y); cudaEventSynchronize(y); float ms; cudaEventElapsedTime(&ms, x, y); best = ms < best ? ms : best; }
  return best;
}
int main() {
  void* p; cudaMalloc(&p, N * 4); const int G = 132 * 8, B = 256;
  std::printf("A coalesced float4          %.3f ms\n", t([&](void* q) { a<<<G, B>>>((float4*)q); }, p));
  std::printf("B half-warp 64B rows        %.3f ms\n", t([&](void* q) { b<<<G, B>>>((float*)q); }, p));
  std::printf("C thread/row 4xfloat4       %.3f ms\n", t([&](void* q) { c<<<G, B>>>((float*)q); }, p));
  std::printf("D thread/row 16 scalars     %.3f ms\n", t([&](void* q) { d<<<G, B>>>((float*)q); }, p));
  std::printf("E quarter-warp 64B rows f4  %.3f ms\n", t([&](void* q) { e<<<G, B>>>((float*)q); }, p));
  std::printf("F 8 lanes a 128B row f4     %.3f ms\n", t([&](void* q) { f<<<G, B>>>((float*)q); }, p));
  return cudaGetLastError() != cudaSuccess;
}
