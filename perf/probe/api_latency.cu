// Probe: what a stage of API calls costs the host before the GPU has work, and
// whether one CUDA graph launch instead of the calls saves it (perf/NOTES.md,
// "twenty-fourth round": about 10 us a call on the H200 machine's host).
// Emulates the SZx decode stage (a cooperative offsets kernel of ~9 us, a
// programmatic-dependent decode kernel of ~300 us, a small result copy into
// pinned memory, a synchronization) and the REL compress stage (a memset, a
// ~130 us range kernel, a memset, a ~390 us kernel, the copy) with kernels that
// spin on %globaltimer, each stage timed from a device synchronization:
//   - "calls": the stage as the pipeline issues it;
//   - "graph": the same captured once, then one cudaGraphLaunch a stage (with
//     one kernel node's parameters set again first, as a new input would need).
// Prints the medians of 21 stages (microseconds above the kernels' spin) and
// the return time of each call in the "calls" stage; then all again with a
// 256 MiB pageable host-to-device copy before each stage.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o api_latency perf/probe/api_latency.cu
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void spin(unsigned long long ns, int* sink) {
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) *sink = 1;
}
__global__ void spin_dependent(unsigned long long ns, int* sink) {
#if __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
  const unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) *sink = 2;
}

using Clock = std::chrono::steady_clock;
static double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Bufs {
  int* sink;
  unsigned* counter;
  void* host;
  void* dev;
};

// The decode stage's calls; marks[i]: host time each call returned.
// coop false: the offsets kernel as a plain launch (its grid waits only on
// CTAs before it, as a look-back does).
static void decode_calls(cudaStream_t st, const Bufs& b, int ctas, std::vector<double>* marks, Clock::time_point t0,
                         bool coop = true) {
  unsigned long long ns1 = 9000, ns2 = 300000;
  int* sink = b.sink;
  void* args[] = {&ns1, &sink};
  if (coop) check(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(spin), ctas, 256, args, 0, st), "coop");
  else spin<<<ctas, 256, 0, st>>>(ns1, sink);
  if (marks) marks->push_back(us(t0, Clock::now()));
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(132 * 4);
  cfg.blockDim = dim3(256);
  cfg.stream = st;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  check(cudaLaunchKernelEx(&cfg, spin_dependent, ns2, b.sink), "pdl");
  if (marks) marks->push_back(us(t0, Clock::now()));
  check(cudaMemcpyAsync(b.host, b.dev, 64, cudaMemcpyDefault, st), "copy");
  if (marks) marks->push_back(us(t0, Clock::now()));
}
// The REL compress stage's calls.
static void compress_calls(cudaStream_t st, const Bufs& b, std::vector<double>* marks, Clock::time_point t0) {
  check(cudaMemsetAsync(b.counter, 0, 4, st), "memset");
  if (marks) marks->push_back(us(t0, Clock::now()));
  spin<<<132 * 8, 256, 0, st>>>(130000, b.sink);
  if (marks) marks->push_back(us(t0, Clock::now()));
  check(cudaMemsetAsync(b.dev, 0, 256 * 1024, st), "memset state");
  if (marks) marks->push_back(us(t0, Clock::now()));
  spin<<<132 * 4, 256, 0, st>>>(390000, b.sink);
  if (marks) marks->push_back(us(t0, Clock::now()));
  check(cudaMemcpyAsync(b.host, b.dev, 64, cudaMemcpyDefault, st), "copy");
  if (marks) marks->push_back(us(t0, Clock::now()));
}

// Host work before each stage where set: a pageable copy of 256 MiB to the
// device (as the decode stage's copy stage does), which leaves the host's
// caches full of the stream.
static char* g_pageable = nullptr;
static void* g_dst = nullptr;
static const size_t kPageable = size_t(256) << 20;
static int g_settle = 0;  // after the copy: 0 nothing, 1 a 200 us host wait, 2 an empty launch
static int* g_sink = nullptr;
template <class Issue>
static void measure(const char* name, double spin_us, cudaStream_t st, Issue&& issue) {
  std::vector<double> t;
  std::vector<std::vector<double>> marks;
  for (int r = 0; r < 22; ++r) {
    if (g_pageable) check(cudaMemcpy(g_dst, g_pageable, kPageable, cudaMemcpyHostToDevice), "pageable copy");
    check(cudaDeviceSynchronize(), "sync");
    if (g_pageable && g_settle == 1) {  // a host wait of 200 us
      const auto w = Clock::now();
      while (us(w, Clock::now()) < 200) {
      }
    }
    if (g_pageable && g_settle == 2) {  // one empty launch and a synchronization
      spin<<<1, 32, 0, st>>>(0, g_sink);
      check(cudaDeviceSynchronize(), "settle");
    }
    const auto t0 = Clock::now();
    std::vector<double> m;
    issue(&m, t0);
    check(cudaStreamSynchronize(st), "stream sync");
    check(cudaDeviceSynchronize(), "fence");
    if (r > 0) t.push_back(us(t0, Clock::now()) - spin_us), marks.push_back(m);
  }
  std::vector<double> s = t;
  std::sort(s.begin(), s.end());
  std::printf("%-28s above the kernels: median %6.1f us (min %6.1f, max %6.1f); calls returned at", name, s[s.size() / 2],
              s.front(), s.back());
  for (std::size_t i = 0; i < marks[0].size(); ++i) {
    std::vector<double> c;
    for (auto& m : marks) c.push_back(m[i]);
    std::sort(c.begin(), c.end());
    std::printf(" %.1f", c[c.size() / 2]);
  }
  std::printf(" us\n");
}

int main() {
  check(cudaFree(0), "init");
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
  Bufs b{};
  check(cudaMalloc(&b.sink, 4), "sink");
  check(cudaMalloc(&b.counter, 4), "counter");
  check(cudaMalloc(&b.dev, 256 * 1024), "dev");
  check(cudaMallocHost(&b.host, 64), "host");
  int per_sm = 0, sms = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spin, 256, 0), "occupancy");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "sms");
  const int ctas = std::min(per_sm, 2) * sms;

  g_sink = b.sink;
  for (int pass = 0; pass < 4; ++pass) {
  g_settle = pass >= 2 ? pass - 1 : 0;
  if (pass >= 2) std::printf("the same, then %s:\n", g_settle == 1 ? "a 200 us host wait" : "an empty launch and a synchronization");
  if (pass == 1) {
    g_pageable = static_cast<char*>(std::malloc(kPageable));
    for (size_t i = 0; i < kPageable; i += 64) g_pageable[i] = char(i);
    check(cudaMalloc(&g_dst, kPageable), "dst");
    std::printf("after a 256 MiB pageable copy to the device:\n");
  }
  measure("decode stage, calls", 309, st, [&](std::vector<double>* m, Clock::time_point t0) { decode_calls(st, b, ctas, m, t0); });
  measure("decode stage, plain launch", 309, st,
          [&](std::vector<double>* m, Clock::time_point t0) { decode_calls(st, b, ctas, m, t0, false); });
  measure("compress stage, calls", 524, st, [&](std::vector<double>* m, Clock::time_point t0) { compress_calls(st, b, m, t0); });

  // The same stages as graphs, captured once.
  for (int which = 0; which < 2; ++which) {
    cudaGraph_t g;
    check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "capture");
    if (which == 0) decode_calls(st, b, ctas, nullptr, Clock::now());
    else compress_calls(st, b, nullptr, Clock::now());
    const cudaError_t ce = cudaStreamEndCapture(st, &g);
    if (ce != cudaSuccess) {
      std::printf("%s stage: capture failed: %s\n", which == 0 ? "decode" : "compress", cudaGetErrorString(ce));
      (void)cudaGetLastError();
      continue;
    }
    cudaGraphExec_t ex;
    check(cudaGraphInstantiate(&ex, g, 0), "instantiate");
    // A kernel node to set again each stage (a new input pointer would).
    size_t count = 0;
    check(cudaGraphGetNodes(g, nullptr, &count), "nodes");
    std::vector<cudaGraphNode_t> nodes(count);
    check(cudaGraphGetNodes(g, nodes.data(), &count), "nodes");
    cudaGraphNode_t kn = nullptr;
    cudaKernelNodeParams kp{};
    for (auto nd : nodes) {
      cudaGraphNodeType ty;
      check(cudaGraphNodeGetType(nd, &ty), "type");
      if (ty == cudaGraphNodeTypeKernel && !kn) kn = nd, check(cudaGraphKernelNodeGetParams(nd, &kp), "params");
    }
    measure(which == 0 ? "decode stage, graph" : "compress stage, graph", which == 0 ? 309 : 524, st,
            [&](std::vector<double>* m, Clock::time_point t0) {
              if (kn) check(cudaGraphExecKernelNodeSetParams(ex, kn, &kp), "set params");
              m->push_back(us(t0, Clock::now()));
              check(cudaGraphLaunch(ex, st), "graph launch");
              m->push_back(us(t0, Clock::now()));
            });
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
  }
  }
  return 0;
}
