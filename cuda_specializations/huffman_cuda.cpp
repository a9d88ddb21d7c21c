// CUDA specializations of the chunked canonical Huffman coder
// (portable/encode/huffman/huffman.hpp is the reference: same words, same
// offsets, same decoded symbols, same status bits).
#include <cuda_runtime.h>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/warp.hpp"
#include "portable/encode/huffman/codebook.hpp"
#include "portable/encode/huffman/huffman.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {


void check(cudaError_t e, const char* what) {
  KSZ_EXPECTS(e == cudaSuccess, "CUDA error in ", what, ": ", cudaGetErrorString(e));
}


// Encoding: a block of kEncThreads per chunk; thread t owns the contiguous
// run of SPT symbols starting at t*SPT (read as 16-byte vectors where the run
// is whole and aligned), so its codes form one contiguous bit range.
constexpr int kEncThreads = 128;

template <int SPT>
struct Run {
  std::uint32_t w[SPT / 2];  // two symbols a word, the earlier in the low half
  int m;                     // symbols in the run
  __device__ __forceinline__ std::uint32_t sym(int j) const { return (w[j >> 1] >> (16 * (j & 1))) & 0xFFFFu; }
};

template <int SPT>
__device__ __forceinline__ Run<SPT> load_run(const std::uint16_t* __restrict__ sym, std::uint64_t a, std::uint64_t s1,
                                             bool vec) {
  Run<SPT> r;
  const std::uint64_t b = a + SPT < s1 ? a + SPT : s1;
  r.m = a < b ? static_cast<int>(b - a) : 0;
  if (vec && r.m == SPT) {
    const uint4* p = reinterpret_cast<const uint4*>(sym + a);
#pragma unroll
    for (int k = 0; k < SPT / 8; ++k) {
      const uint4 u = __ldg(p + k);
      r.w[4 * k] = u.x, r.w[4 * k + 1] = u.y, r.w[4 * k + 2] = u.z, r.w[4 * k + 3] = u.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < SPT / 2; ++k) {
      const std::uint32_t lo = 2 * k < r.m ? sym[a + 2 * k] : 0u, hi = 2 * k + 1 < r.m ? sym[a + 2 * k + 1] : 0u;
      r.w[k] = lo | hi << 16;
    }
  }
  return r;
}

// Exclusive block scan of v (kEncThreads threads); total to all.
__device__ __forceinline__ std::uint32_t block_scan(std::uint32_t v, std::uint32_t& total) {
  __shared__ std::uint32_t ws[kEncThreads / 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const std::uint32_t incl = warp::scan_inclusive(v);
  __syncthreads();  // ws reuse across calls
  if (lane == 31) ws[w] = incl;
  __syncthreads();
  std::uint32_t before = 0;
  total = 0;
#pragma unroll
  for (int k = 0; k < kEncThreads / 32; ++k) {
    before += k < w ? ws[k] : 0u;
    total += ws[k];
  }
  return before + incl - v;
}

template <int SPT>
__global__ void __launch_bounds__(kEncThreads)
    chunk_bits_kernel(const std::uint16_t* __restrict__ sym, std::uint64_t n, std::uint32_t cs, bool vec,
                      const std::uint32_t* __restrict__ enc, std::uint32_t nsym, std::uint64_t nchunks,
                      std::uint64_t* __restrict__ offsets, std::uint32_t* __restrict__ status) {
  for (std::uint64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
    const std::uint64_t s0 = c * cs, s1 = s0 + cs < n ? s0 + cs : n;
    const Run<SPT> r = load_run<SPT>(sym, s0 + std::uint64_t(threadIdx.x) * SPT, s1, vec);
    std::uint32_t bits = 0, bad = 0;
#pragma unroll
    for (int j = 0; j < SPT; ++j) {
      if (j >= r.m) break;
      const std::uint32_t s = r.sym(j);
      const std::uint32_t len = s < nsym ? __ldg(&enc[s]) >> 24 : 0u;
      bad |= len == 0;
      bits += len;
    }
    std::uint32_t total;
    block_scan(bits, total);  // chunk bits < 2^32: cs <= 8192 symbols of <= 24 bits
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0) {
      offsets[c] = (total + 31) / 32;
      if (bad) atomicOr(status, std::uint32_t(huffman::impl::kBadSymbol));
    }
  }
}

template <int SPT>
__global__ void __launch_bounds__(kEncThreads)
    deflate_kernel(const std::uint16_t* __restrict__ sym, std::uint64_t n, std::uint32_t cs, bool vec,
                   const std::uint32_t* __restrict__ enc, std::uint64_t nchunks,
                   const std::uint64_t* __restrict__ offsets, std::uint32_t* __restrict__ words) {
  extern __shared__ std::uint32_t stage[];  // the chunk's words
  for (std::uint64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
    const std::uint64_t s0 = c * cs, s1 = s0 + cs < n ? s0 + cs : n;
    const Run<SPT> r = load_run<SPT>(sym, s0 + std::uint64_t(threadIdx.x) * SPT, s1, vec);
    std::uint32_t e[SPT];
    std::uint32_t bits = 0;
#pragma unroll
    for (int j = 0; j < SPT; ++j) {
      e[j] = j < r.m ? __ldg(&enc[r.sym(j)]) : 0u;
      bits += e[j] >> 24;
    }
    std::uint32_t total;
    const std::uint32_t start = block_scan(bits, total);
    const std::uint32_t nw = (total + 31) / 32;
    for (std::uint32_t i = threadIdx.x; i < nw; i += blockDim.x) stage[i] = 0;
    __syncthreads();
    // Leading bits of the first word belong to earlier threads: zeros here, merged by OR.
    std::uint32_t w = start / 32;
    int nbits = static_cast<int>(start % 32);
    std::uint64_t acc = 0;
#pragma unroll
    for (int j = 0; j < SPT; ++j) {
      const int len = static_cast<int>(e[j] >> 24);
      acc = (acc << len) | (e[j] & 0xFFFFFFu);
      nbits += len;
      if (nbits >= 32) {
        nbits -= 32;
        atomicOr(&stage[w++], static_cast<std::uint32_t>(acc >> nbits));
      }
    }
    if (nbits > 0 && bits > 0) atomicOr(&stage[w], static_cast<std::uint32_t>(acc << (32 - nbits)));
    __syncthreads();
    std::uint32_t* dst = words + offsets[c];
    for (std::uint32_t i = threadIdx.x; i < nw; i += blockDim.x) dst[i] = stage[i];
    __syncthreads();  // stage is reused by the next chunk
  }
}

int enc_blocks(std::uint64_t nchunks) {
  return static_cast<int>(nchunks < 0x7FFFFFFFull ? nchunks : 0x7FFFFFFFull);
}

constexpr int kLut = 1 << huffman::kLutBits;
constexpr int kInflateThreads = 128;

struct Tables {
  const std::uint32_t *limit, *first, *offset;
  const std::uint16_t* symbols;
};

// As huffman::impl::DecodeTables::decode_one.
__device__ __forceinline__ int decode_one(const std::uint32_t* lut, const Tables& t, std::uint64_t buf,
                                          std::uint32_t& sym) {
  const std::uint32_t e = lut[static_cast<std::uint32_t>(buf >> (64 - huffman::kLutBits))];
  if (e >> 16) {
    sym = e & 0xFFFFu;
    return static_cast<int>(e >> 16);
  }
  const std::uint32_t v = static_cast<std::uint32_t>(buf >> (64 - huffman::kMaxCodeLength));
  for (int l = huffman::kLutBits + 1; l <= huffman::kMaxCodeLength; ++l) {
    if (v < __ldg(&t.limit[l])) {
      sym = t.symbols[t.offset[l] + (v >> (huffman::kMaxCodeLength - l)) - t.first[l]];
      return l;
    }
  }
  return 0;
}

// Multi-symbol decode table: for each 12-bit window, up to three whole codes
// it holds (a code is whole when it ends inside the window; a canonical
// code's single-symbol LUT entry is the same for every extension of it).
// Entry: sym0 | sym1 << 16 | sym2 << 32 | end0 << 48 | end1 << 52 | end2 << 56
// | count << 60, end_k the window bits used through code k. Count 0: the first
// code is longer than the window (the per-length search decodes it).
__global__ void build_multi_lut(const std::uint32_t* __restrict__ lut, unsigned long long* __restrict__ mlut) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= kLut) return;
  unsigned long long m = 0;
  int used = 0, count = 0;
  for (int k = 0; k < 3; ++k) {
    const std::uint32_t ent = lut[(static_cast<std::uint32_t>(e) << used) & (kLut - 1)];
    const int l = static_cast<int>(ent >> 16);
    if (l == 0 || l > huffman::kLutBits - used) break;
    used += l;
    m |= static_cast<unsigned long long>(ent & 0xFFFFu) << (16 * k);
    m |= static_cast<unsigned long long>(used) << (48 + 4 * k);
    ++count;
  }
  mlut[e] = m | static_cast<unsigned long long>(count) << 60;
}

// A thread per chunk, as the portable decoder, taking up to three symbols a
// step from the multi-symbol table (a step is one dependent shared-memory
// lookup; the chunk's chain of steps is what bounds this kernel). Symbols are
// staged 32 a lane (64 bytes) in shared memory and leave in warp-cooperative
// stores, four lanes to a lane's 64 bytes: a thread-private 16-byte store per
// 8 symbols, chunks 8 KiB apart, costs about 6x as much store bandwidth
// (perf/probe/store_patterns.cu). Errors take the single-symbol path, so the
// status bits are the portable decoder's.
constexpr int kStage = 32;  // symbols a lane stages between stores

__global__ void __launch_bounds__(kInflateThreads)
    inflate_kernel(const std::uint32_t* __restrict__ words, std::uint64_t nwords,
                   const std::uint64_t* __restrict__ chunk_offsets, std::uint32_t cs, bool vec,
                   const std::uint32_t* gl_lut, const unsigned long long* gl_mlut, Tables t,
                   std::uint16_t* __restrict__ out, std::uint64_t n, std::uint64_t nchunks,
                   std::uint32_t* __restrict__ status) {
  // The single-symbol LUT serves only the rare slow path: it stays in global memory (L1).
  const std::uint32_t* lut = gl_lut;
  __shared__ unsigned long long mlut[kLut];
  __shared__ uint4 stage[kInflateThreads][kStage / 8];
  for (int i = threadIdx.x; i < kLut; i += blockDim.x) mlut[i] = gl_mlut[i];
  __syncthreads();
  const int lane = threadIdx.x & 31, wbase = threadIdx.x & ~31;
  std::uint16_t* mine = reinterpret_cast<std::uint16_t*>(stage[threadIdx.x]);
  const std::uint64_t c = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  bool ok = c < nchunks;
  std::uint64_t begin = 0, end = 0, s0 = 0, len = 0;
  if (ok) {
    begin = chunk_offsets[c], end = chunk_offsets[c + 1];
    if (begin > end || end > nwords || (c == 0 && begin != 0)) {
      atomicOr(status, std::uint32_t(huffman::impl::kBadOffsets));
      ok = false;
    } else {
      s0 = c * cs;
      len = (s0 + cs < n ? s0 + cs : n) - s0;
    }
  }
  std::uint64_t rounds = ok ? (len + kStage - 1) / kStage : 0;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const std::uint64_t u = __shfl_xor_sync(warp::kFull, rounds, o);
    rounds = u > rounds ? u : rounds;
  }
  std::uint64_t buf = 0;
  int avail = 0;
  std::uint64_t pos = begin;
  // The next four words of the chunk (0 past its end), loaded three refills
  // before they are used: each refill would otherwise wait out a full load latency.
  std::uint32_t q0 = pos < end ? __ldg(&words[pos]) : 0u, q1 = pos + 1 < end ? __ldg(&words[pos + 1]) : 0u;
  std::uint32_t q2 = pos + 2 < end ? __ldg(&words[pos + 2]) : 0u, q3 = pos + 3 < end ? __ldg(&words[pos + 3]) : 0u;
  for (std::uint64_t r = 0; r < rounds; ++r) {
    const std::uint64_t i0 = r * kStage;
    const int want = ok && i0 < len ? static_cast<int>(len - i0 < kStage ? len - i0 : kStage) : 0;
    int got = 0;
    while (got < want) {
      if (avail <= 32 && pos < end) {
        buf |= static_cast<std::uint64_t>(q0) << (32 - avail);
        avail += 32;
        ++pos;
        q0 = q1, q1 = q2, q2 = q3;
        q3 = pos + 3 < end ? __ldg(&words[pos + 3]) : 0u;
      }
      const unsigned long long m = mlut[static_cast<std::uint32_t>(buf >> (64 - huffman::kLutBits))];
      int take = static_cast<int>(m >> 60);
      if (take > want - got) take = want - got;
      while (take > 0 && static_cast<int>((m >> (44 + 4 * take)) & 15u) > avail) --take;
      if (take > 0) {
        const int bits = static_cast<int>((m >> (44 + 4 * take)) & 15u);
        for (int k = 0; k < take; ++k) mine[got + k] = static_cast<std::uint16_t>(m >> (16 * k));
        got += take;
        buf <<= bits;
        avail -= bits;
        continue;
      }
      std::uint32_t sym = 0;
      const int l = decode_one(lut, t, buf, sym);
      if (l == 0 || l > avail) {
        atomicOr(status, std::uint32_t(l == 0 ? huffman::impl::kBadCode : huffman::impl::kOverrun));
        ok = false;  // as the portable decoder, stop this chunk (the caller throws)
        len = 0;
        break;
      }
      mine[got++] = static_cast<std::uint16_t>(sym);
      buf <<= l;
      avail -= l;
    }
    __syncwarp();
    // Lane l writes 16-byte piece (l & 3) of the staged symbols of lane 8m + (l >> 2).
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int src = 8 * m + (lane >> 2), piece = lane & 3;
      const std::uint64_t src_s0 = __shfl_sync(warp::kFull, s0, src);
      const std::uint64_t src_len = __shfl_sync(warp::kFull, len, src);
      const std::uint64_t first = i0 + 8 * piece;  // symbol index in the chunk
      if (first >= src_len) continue;
      const uint4 v = stage[wbase + src][piece];
      std::uint16_t* dst = out + src_s0 + first;
      if (vec && first + 8 <= src_len) {
        *reinterpret_cast<uint4*>(dst) = v;
      } else {
        const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
        for (std::uint64_t k = 0; k < 8 && first + k < src_len; ++k)
          dst[k] = static_cast<std::uint16_t>(w[k >> 1] >> (16 * (k & 1)));
      }
    }
    __syncwarp();
  }
  if (ok && (pos != end || avail >= 32 || buf != 0)) atomicOr(status, std::uint32_t(huffman::impl::kTrailing));
}

// Symbols per thread for a chunk size, 0 when the specialization does not
// take it (the staged chunk must fit shared memory: <= 8192 symbols).
int spt_for(std::uint32_t cs) {
  if (cs % 8 != 0 || cs > 8192) return 0;
  const std::uint32_t per = (cs + kEncThreads - 1) / kEncThreads;
  return per <= 8 ? 8 : per <= 16 ? 16 : per <= 32 ? 32 : 64;
}

}  // namespace

bool huffman_chunk_bits(const Kokkos::Cuda& space, const std::uint16_t* symbols, std::uint64_t n,
                        std::uint32_t cs, const std::uint32_t* enc, std::uint32_t nsym, std::uint64_t* offsets,
                        std::uint32_t* status) {
  const int spt = spt_for(cs);
  if (!enabled() || n == 0 || spt == 0) return false;
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  const bool vec = reinterpret_cast<std::uintptr_t>(symbols) % 16 == 0;
  const int blocks = enc_blocks(nchunks);
  cudaStream_t st = space.cuda_stream();
  switch (spt) {
    case 8: chunk_bits_kernel<8><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status); break;
    case 16: chunk_bits_kernel<16><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status); break;
    case 32: chunk_bits_kernel<32><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status); break;
    default: chunk_bits_kernel<64><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status); break;
  }
  check(cudaGetLastError(), "huffman chunk_bits_kernel");
  return true;
}

bool huffman_deflate(const Kokkos::Cuda& space, const std::uint16_t* symbols, std::uint64_t n, std::uint32_t cs,
                     const std::uint32_t* enc, const std::uint64_t* offsets, std::uint32_t* words,
                     std::uint64_t /*n_words*/) {
  const int spt = spt_for(cs);
  if (!enabled() || n == 0 || spt == 0) return false;
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  const bool vec = reinterpret_cast<std::uintptr_t>(symbols) % 16 == 0;
  const int blocks = enc_blocks(nchunks);
  // A chunk's codes: at most cs codes of kMaxCodeLength bits.
  const std::size_t shmem = (std::size_t(cs) * huffman::kMaxCodeLength + 31) / 32 * sizeof(std::uint32_t);
  cudaStream_t st = space.cuda_stream();
  switch (spt) {
    case 8: deflate_kernel<8><<<blocks, kEncThreads, shmem, st>>>(symbols, n, cs, vec, enc, nchunks, offsets, words); break;
    case 16: deflate_kernel<16><<<blocks, kEncThreads, shmem, st>>>(symbols, n, cs, vec, enc, nchunks, offsets, words); break;
    case 32: deflate_kernel<32><<<blocks, kEncThreads, shmem, st>>>(symbols, n, cs, vec, enc, nchunks, offsets, words); break;
    default: deflate_kernel<64><<<blocks, kEncThreads, shmem, st>>>(symbols, n, cs, vec, enc, nchunks, offsets, words); break;
  }
  check(cudaGetLastError(), "huffman deflate_kernel");
  return true;
}

bool huffman_inflate(const Kokkos::Cuda& space, const std::uint32_t* words, std::uint64_t n_words,
                     const std::uint64_t* chunk_offsets, std::uint32_t cs, const InflateTables& t,
                     std::uint16_t* out, std::uint64_t n, std::uint32_t* status) {
  if (!enabled() || n == 0 || cs == 0) return false;
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  const std::uint64_t blocks = (nchunks + kInflateThreads - 1) / kInflateThreads;
  if (blocks > 0x7FFFFFFFull) return false;
  // 16-byte stores need 16-byte aligned chunk starts.
  const bool vec = cs % 8 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  Kokkos::View<unsigned long long*, Kokkos::CudaSpace> mlut(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("ksz::huffman::multi_lut")), kLut);
  build_multi_lut<<<kLut / 256, 256, 0, space.cuda_stream()>>>(t.lut, mlut.data());
  check(cudaGetLastError(), "huffman build_multi_lut");
  inflate_kernel<<<static_cast<unsigned>(blocks), kInflateThreads, 0, space.cuda_stream()>>>(
      words, n_words, chunk_offsets, cs, vec, t.lut, mlut.data(), Tables{t.limit, t.first, t.offset, t.symbols}, out,
      n, nchunks, status);
  check(cudaGetLastError(), "huffman inflate_kernel");
  return true;
}

}  // namespace ksz::cuda_spec
