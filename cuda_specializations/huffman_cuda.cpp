// CUDA specializations of the chunked canonical Huffman coder
// (portable/encode/huffman/huffman.hpp is the reference: same words, same
// offsets, same decoded symbols, same status bits).
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "cuda_specializations/cuda_specializations.hpp"
#include "cuda_specializations/launch.hpp"
#include "cuda_specializations/lookback.hpp"
#include "cuda_specializations/warp.hpp"
#include "portable/encode/huffman/codebook.hpp"
#include "portable/encode/huffman/huffman.hpp"
#include "portable/quantize/byte_codes.hpp"
#include "src/core/error.hpp"

namespace ksz::cuda_spec {
namespace {


using launch::check;


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

// The codewords of a run of byte codes (quantize/byte_codes.hpp) into e
// (0 past the run), from btab (byte -> codeword; byte 0 -> the outlier
// symbol's) and, for the zero bytes of listed codes, table (symbol ->
// codeword). 8-byte loads where the run is whole (a run starts on 8 symbols:
// cs and SPT are multiples of 8). src.escapes holds the chunk's listed codes
// (staged in shared memory by the caller where they fit); a thread with zero
// bytes walks them from its run's first, in step with its zero bytes
// (outliers' among them find none).
template <int SPT>
__device__ __forceinline__ int byte_codewords(const SymbolSource& src, std::uint64_t a, std::uint64_t s1, bool vec,
                                              const std::uint32_t* btab, const std::uint32_t* table,
                                              std::uint32_t nsym, std::uint32_t (&e)[SPT]) {
  const std::uint64_t b = a + SPT < s1 ? a + SPT : s1;
  const int m = a < b ? static_cast<int>(b - a) : 0;
  std::uint32_t by[SPT / 4];  // four bytes a word, the earliest lowest
  if (vec && m == SPT) {
    const uint2* p = reinterpret_cast<const uint2*>(src.bytes + a);
#pragma unroll
    for (int k = 0; k < SPT / 8; ++k) {
      const uint2 u = __ldg(p + k);
      by[2 * k] = u.x, by[2 * k + 1] = u.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < SPT / 4; ++k) {
      by[k] = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (4 * k + j < m) by[k] |= std::uint32_t(src.bytes[a + 4 * k + j]) << (8 * j);
    }
  }
  bool any_zero = false;
#pragma unroll
  for (int j = 0; j < SPT; ++j) {
    const std::uint32_t byte = (by[j / 4] >> (8 * (j % 4))) & 0xFFu;
    e[j] = j < m ? btab[byte] : 0u;
    any_zero |= j < m && byte == 0;
  }
  if (any_zero) {  // rare
    std::uint64_t k = quantize::first_escape(src.escapes, src.n_escapes, a);
#pragma unroll
    for (int j = 0; j < SPT; ++j)
      if (j < m && ((by[j / 4] >> (8 * (j % 4))) & 0xFFu) == 0) {
        const std::uint64_t x = k < src.n_escapes ? src.escapes[k] : ~0ull;
        if ((x >> 16) == a + j) {
          const std::uint32_t code = static_cast<std::uint32_t>(x & 0xFFFFu);
          e[j] = code < nsym ? table[code] : 0u;
          ++k;
        }
      }
  }
  return m;
}

// The bit lengths of a chunk's runs of sub symbols (sub a multiple of SPT, so
// runs begin at thread boundaries) but its last, to out, from each thread's
// start bit. run_start (kEncThreads words of shared memory) is rewritten only
// after the next block scan's barriers. A block-collective.
template <int SPT>
__device__ __forceinline__ void store_run_bits(std::uint32_t* run_start, std::uint32_t start, std::uint32_t len,
                                               std::uint32_t sub, std::uint16_t* __restrict__ out) {
  const std::uint32_t first = threadIdx.x * SPT;
  if (first < len && first % sub == 0) run_start[first / sub] = start;
  __syncthreads();
  const std::uint32_t runs = (len - 1) / sub + 1;
  if (threadIdx.x + 1 < runs)
    out[threadIdx.x] = static_cast<std::uint16_t>(run_start[threadIdx.x + 1] - run_start[threadIdx.x]);
}

// Packs the thread's codes e (bits in all, from bit `start` of the chunk) into
// the chunk's nw words in shared memory, cleared first. The leading bits of a
// thread's first word belong to earlier threads: zeros here, merged by OR. A
// block-collective; stage is complete after the caller's next barrier.
template <int SPT>
__device__ __forceinline__ void pack_chunk(std::uint32_t* stage, std::uint32_t nw, const std::uint32_t (&e)[SPT],
                                           std::uint32_t start, std::uint32_t bits) {
  for (std::uint32_t i = threadIdx.x; i < nw; i += blockDim.x) stage[i] = 0;
  __syncthreads();
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
}

// With run_bits, the bit length of every run of sub symbols (sub a multiple
// of SPT, so runs begin at thread boundaries) but the chunk's last.
template <int SPT>
__global__ void __launch_bounds__(kEncThreads)
    chunk_bits_kernel(const std::uint16_t* __restrict__ sym, std::uint64_t n, std::uint32_t cs, bool vec,
                      const std::uint32_t* __restrict__ enc, std::uint32_t nsym, std::uint64_t nchunks,
                      std::uint64_t* __restrict__ offsets, std::uint32_t* __restrict__ status, std::uint32_t sub,
                      std::uint64_t per_chunk, std::uint16_t* __restrict__ run_bits) {
  __shared__ std::uint32_t run_start[kEncThreads];
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
    // Chunk bits < 2^32: cs <= 8192 symbols of <= 24 bits.
    const std::uint32_t start = warp::block_scan<kEncThreads>(bits, total);
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0) {
      offsets[c] = (total + 31) / 32;
      if (bad) atomicOr(status, std::uint32_t(huffman::impl::kBadSymbol));
    }
    if (run_bits)  // block-uniform
      store_run_bits<SPT>(run_start, start, static_cast<std::uint32_t>(s1 - s0), sub,
                          run_bits + c * (per_chunk - 1));
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
    const std::uint32_t start = warp::block_scan<kEncThreads>(bits, total);
    const std::uint32_t nw = (total + 31) / 32;
    pack_chunk<SPT>(stage, nw, e, start, bits);
    __syncthreads();
    std::uint32_t* dst = words + offsets[c];
    for (std::uint32_t i = threadIdx.x; i < nw; i += blockDim.x) dst[i] = stage[i];
    __syncthreads();  // stage is reused by the next chunk
  }
}

// Single-pass encoding (chunk_bits + scan + deflate in one kernel, the codes
// read once): blocks take chunks in order from a ticket, publish the chunk's
// word count as soon as their block scan has it, pack the chunk in shared
// memory, and learn where it starts by decoupled look-back over the chunks
// before it (lookback.hpp, warp 0). Same words and offsets as the two-pass
// path.
constexpr std::uint32_t kOverflow = 1u << 30;  // the bitstream would pass the words given (a bad bound)
// The code table is copied into shared memory (32 KiB at most, with 24 KiB of
// staged words for an 8192-symbol chunk); larger alphabets take the two passes.
constexpr std::uint32_t kMaxTableSymbols = 8192;
constexpr std::uint32_t kStagedEscapes = 256;  // a chunk's listed byte codes staged in shared memory

// The byte variant held to 64 registers (8 blocks an SM): it took 78.
// kNarrow: 16-bit codes read through sym.narrow (a template argument: the
// plain codes' loop stays as it was).
template <int SPT, bool kBytes, bool kNarrow = false>
__global__ void __launch_bounds__(kEncThreads, kBytes ? 8 : 1)
    encode_kernel(const SymbolSource sym, std::uint64_t n, std::uint32_t cs, bool vec,
                  const std::uint32_t* __restrict__ enc, std::uint32_t nsym, std::uint64_t nchunks,
                  unsigned long long* __restrict__ state, std::uint64_t* __restrict__ offsets,
                  std::uint32_t* __restrict__ words, std::uint64_t cap, std::uint32_t* __restrict__ status,
                  std::uint32_t sub, std::uint64_t per_chunk, std::uint16_t* __restrict__ run_bits,
                  std::uint32_t stage_words) {
  // The chunk's words (stage_words), the code table (nsym), with byte codes
  // the byte table (256).
  extern __shared__ std::uint32_t stage[];
  __shared__ std::uint32_t run_start[kEncThreads];
  __shared__ unsigned long long s_chunk, s_prefix;
  __shared__ std::uint64_t s_esc[kStagedEscapes];
  unsigned long long* ticket = state + nchunks;
  const int lane = threadIdx.x & 31;
  std::uint32_t* table = stage + stage_words;
  for (std::uint32_t s = threadIdx.x; s < nsym; s += blockDim.x) table[s] = __ldg(&enc[s]);  // read once a block
  std::uint32_t* btab = table + nsym;
  if (kBytes) {
    const std::uint32_t shift = sym.radius - 128u;
    for (std::uint32_t b = threadIdx.x; b < 256; b += blockDim.x) {
      const std::uint32_t s = b ? b + shift : 0u;  // byte 0: the outlier's, where not listed
      btab[b] = s < nsym ? __ldg(&enc[s]) : 0u;
    }
  }
  for (;;) {
    if (threadIdx.x == 0) s_chunk = atomicAdd(ticket, 1ull);
    __syncthreads();
    const std::uint64_t c = s_chunk;
    if (c >= nchunks) return;  // block-uniform
    const std::uint64_t s0 = c * cs, s1 = s0 + cs < n ? s0 + cs : n;
    const std::uint64_t a = s0 + std::uint64_t(threadIdx.x) * SPT;
    std::uint32_t e[SPT];
    int m;
    if constexpr (kBytes) {  // the chunk's listed codes only, in shared memory where they fit
      SymbolSource src = sym;
      const std::uint64_t e0 = src.chunk_escapes[c];
      src.n_escapes = src.chunk_escapes[c + 1] - e0;
      src.escapes += e0;
      if (src.n_escapes <= kStagedEscapes) {
        for (std::uint32_t i = threadIdx.x; i < src.n_escapes; i += blockDim.x) s_esc[i] = src.escapes[i];
        src.escapes = s_esc;
      }
      __syncthreads();
      m = byte_codewords<SPT>(src, a, s1, vec, btab, table, nsym, e);
    } else {
      const Run<SPT> r = load_run<SPT>(sym.codes, a, s1, vec);
      m = r.m;
#pragma unroll
      for (int j = 0; j < SPT; ++j) {
        const std::uint32_t s = kNarrow ? sym.narrow(r.sym(j)) : r.sym(j);
        e[j] = j < r.m && s < nsym ? table[s] : 0u;
      }
    }
    std::uint32_t bits = 0, bad = 0;
#pragma unroll
    for (int j = 0; j < SPT; ++j) {
      bad |= j < m && (e[j] >> 24) == 0;
      bits += e[j] >> 24;
    }
    std::uint32_t total;
    // Chunk bits < 2^32: cs <= 8192 symbols of <= 24 bits.
    const std::uint32_t start = warp::block_scan<kEncThreads>(bits, total);
    const std::uint32_t nw = (total + 31) / 32;
    if (threadIdx.x < 32) lookback::publish_aggregate(state, c, nw);
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0 && bad) atomicOr(status, std::uint32_t(huffman::impl::kBadSymbol));
    if (run_bits)  // block-uniform
      store_run_bits<SPT>(run_start, start, static_cast<std::uint32_t>(s1 - s0), sub,
                          run_bits + c * (per_chunk - 1));
    pack_chunk<SPT>(stage, nw, e, start, bits);
    if (threadIdx.x < 32) {  // the look-back
      const std::uint64_t prefix = lookback::resolve(state, c, nw);
      if (lane == 0) {
        offsets[c] = prefix;
        if (c + 1 == nchunks) offsets[nchunks] = prefix + nw;
        s_prefix = prefix;
      }
    }
    __syncthreads();
    const std::uint64_t prefix = s_prefix;
    if (prefix + nw <= cap) {
      std::uint32_t* dst = words + prefix;
      for (std::uint32_t i = threadIdx.x; i < nw; i += blockDim.x) dst[i] = stage[i];
    } else if (threadIdx.x == 0) {
      atomicOr(status, kOverflow);
    }
    __syncthreads();  // stage and s_chunk are reused by the next chunk
  }
}

// starts[c] = the first escape of chunk c (elements from c * cs), c <= nchunks.
__global__ void escape_starts_kernel(const std::uint64_t* __restrict__ escapes, std::uint64_t count, std::uint64_t n,
                                     std::uint32_t cs, std::uint64_t nchunks, std::uint64_t* __restrict__ starts) {
  const std::uint64_t c = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c <= nchunks) starts[c] = quantize::first_escape(escapes, count, c * cs < n ? c * cs : n);
}

int enc_blocks(std::uint64_t nchunks) {
  return static_cast<int>(nchunks < 0x7FFFFFFFull ? nchunks : 0x7FFFFFFFull);
}

constexpr int kLut = 1 << huffman::kLutBits;
constexpr int kL = huffman::kMaxCodeLength;

// Multi-symbol decode table: for each 12-bit window, up to three whole codes
// it holds (a code is whole when it ends inside the window; a canonical
// code's single-symbol LUT entry is the same for every extension of it).
// Entry: sym0 | sym1 << 16 | sym2 << 32 | end0 << 48 | end1 << 52 | end2 << 56
// | count << 60, end_k the window bits used through code k. Count 0: the first
// code is longer than the window (decode_long decodes it) or no code at all.
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

// A code longer than kLutBits at the top of buf, as the per-length search of
// huffman::impl::DecodeTables::decode_with: its length is the least l with
// v < limit[l] (limit does not decrease, and v >= limit[kLutBits] because the
// window held no shorter code), counted without branches from the limits in
// shared memory. Returns 0 when the bits are no codeword.
__device__ __forceinline__ int decode_long(const std::uint32_t* limit, const std::uint32_t* first,
                                           const std::uint32_t* offset, const std::uint16_t* __restrict__ symbols,
                                           std::uint64_t buf, std::uint32_t& sym) {
  const std::uint32_t v = static_cast<std::uint32_t>(buf >> (64 - kL));
  if (v >= limit[kL]) return 0;
  int l = huffman::kLutBits + 1;
#pragma unroll
  for (int j = huffman::kLutBits + 1; j < kL; ++j) l += v >= limit[j] ? 1 : 0;
  sym = __ldg(&symbols[offset[l] + (v >> (kL - l)) - first[l]]);
  return l;
}

// A thread per run (a whole chunk without sub-chunks), as the portable
// decoder, taking up to three symbols a step from the multi-symbol table (a
// step is one dependent shared-memory lookup; the run's chain of steps is
// what bounds this kernel, so runs of a few hundred symbols keep several
// times more chains in flight than 4096-symbol chunks). Symbols are staged
// kStage a lane in shared memory and leave in warp-cooperative stores, lanes
// taking consecutive 16-byte pieces of one lane's row: thread-private stores
// down runs a kilobyte apart cost several times the store bandwidth
// (perf/probe/store_patterns.cu).
// Grid-stride over runs, so the table is loaded once per resident block.
// Word positions are 32-bit and relative to the chunk (a chunk holds at most
// 2^24 codes of 24 bits). Errors take the single-symbol path, so the status
// bits are the portable decoder's.
//
// Shape, from H200 runs of 512^3 turbulent data with 512-code runs (decode
// stage, ms, REL 1e-4 / 1e-3): 256 threads staging 32 symbols, 56 registers,
// 4 blocks an SM: 0.65 / 0.43; staging 16: 0.65 / 0.48; the same held to 48
// registers for 5 blocks: 0.70 / 0.53; 512-thread blocks (40 registers, 3 an
// SM): 0.83 / 0.60; 128-thread blocks: 0.94 / 0.57.
constexpr int kInflateThreads = 256, kInflateBlocksPerSm = 4;
constexpr int kStage = 32;           // symbols a lane stages between stores
constexpr int kRow = kStage + 8;     // staged symbols a lane: a step may write 2 past kStage
constexpr std::size_t kInflateShared = sizeof(unsigned long long) * kLut +
                                       sizeof(std::uint16_t) * kRow * kInflateThreads +
                                       3 * sizeof(std::uint32_t) * (kL + 1);

__global__ void __launch_bounds__(kInflateThreads, kInflateBlocksPerSm)
    inflate_kernel(const std::uint32_t* __restrict__ words, std::uint64_t nwords,
                   const std::uint64_t* __restrict__ chunk_offsets, std::uint64_t cs, std::uint32_t step,
                   std::uint64_t per_chunk, std::uint64_t total, const std::uint16_t* __restrict__ run_bits, bool vec, InflateTables t, std::uint16_t* __restrict__ out,
                   std::uint64_t n, std::uint32_t* __restrict__ status) {
  extern __shared__ uint4 smem[];
  unsigned long long* mlut = reinterpret_cast<unsigned long long*>(smem);
  std::uint16_t* stage = reinterpret_cast<std::uint16_t*>(mlut + kLut);  // [kInflateThreads][kRow]
  std::uint32_t* limit = reinterpret_cast<std::uint32_t*>(stage + kRow * kInflateThreads);
  std::uint32_t *first = limit + kL + 1, *offset = first + kL + 1;
  for (int i = threadIdx.x; i < kLut; i += kInflateThreads) mlut[i] = t.multi[i];
  if (threadIdx.x <= kL) {
    limit[threadIdx.x] = t.limit[threadIdx.x];
    first[threadIdx.x] = t.first[threadIdx.x];
    offset[threadIdx.x] = t.offset[threadIdx.x];
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, wbase = threadIdx.x & ~31;
  std::uint16_t* mine = stage + kRow * threadIdx.x;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * kInflateThreads;
  for (std::uint64_t base = std::uint64_t(blockIdx.x) * kInflateThreads; base < total; base += stride) {
    const std::uint64_t u = base + threadIdx.x;
    bool ok = u < total, last = true;
    const std::uint32_t* w = words;  // the chunk's first word
    std::uint64_t s0 = 0;
    std::uint32_t end = 0, len = 0, start = 0, expect = 0;  // end: the chunk's words
    if (ok) {
      const std::uint64_t c = u / per_chunk, k = u - c * per_chunk;
      const std::uint64_t begin = chunk_offsets[c], stop = chunk_offsets[c + 1];
      if (begin > stop || stop > nwords || (c == 0 && begin != 0) || stop - begin > 0xFFFFFFFFull / 32) {
        atomicOr(status, std::uint32_t(huffman::impl::kBadOffsets));
        ok = false;
      } else {
        w = words + begin;
        end = static_cast<std::uint32_t>(stop - begin);
        const std::uint64_t c1 = c * cs + cs < n ? c * cs + cs : n;
        s0 = c * cs + k * step;
        const std::uint64_t s1 = s0 + step < c1 ? s0 + step : c1;
        len = static_cast<std::uint32_t>(s1 - s0);
        last = s1 == c1;
        const std::uint16_t* rb = run_bits + c * (per_chunk - 1);
        for (std::uint32_t j = 0; j < k; ++j) start += __ldg(&rb[j]);  // k < kMaxRuns runs of < 2^16 bits
        if (!last) expect = __ldg(&rb[k]);
        if (start > end * 32u) {
          atomicOr(status, std::uint32_t(huffman::impl::kBadRun));
          ok = false;
          len = 0;
        }
      }
    }
    std::uint32_t rounds = ok ? (len + kStage - 1) / kStage : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) rounds = max(rounds, __shfl_xor_sync(warp::kFull, rounds, o));
    std::uint64_t buf = 0;
    int avail = 0;
    std::uint32_t pos = start / 32;
    // The next four words of the chunk (0 past its end), loaded three refills
    // before they are used: each refill would otherwise wait out a full load latency.
    std::uint32_t q0 = pos < end ? __ldg(&w[pos]) : 0u, q1 = pos + 1 < end ? __ldg(&w[pos + 1]) : 0u;
    std::uint32_t q2 = pos + 2 < end ? __ldg(&w[pos + 2]) : 0u, q3 = pos + 3 < end ? __ldg(&w[pos + 3]) : 0u;
    const int skip = static_cast<int>(start % 32);
    if (ok && skip) {  // start < the chunk's bits, so the word exists
      buf = static_cast<std::uint64_t>(q0) << (32 + skip);
      avail = 32 - skip;
      ++pos;
      q0 = q1, q1 = q2, q2 = q3;
      q3 = pos + 3 < end ? __ldg(&w[pos + 3]) : 0u;
    }
    for (std::uint32_t r = 0; r < rounds; ++r) {
      const std::uint32_t i0 = r * kStage;
      const int want = ok && i0 < len ? static_cast<int>(len - i0 < kStage ? len - i0 : kStage) : 0;
      int got = 0;
      while (got < want) {
        if (avail <= 32 && pos < end) {
          buf |= static_cast<std::uint64_t>(q0) << (32 - avail);
          avail += 32;
          ++pos;
          q0 = q1, q1 = q2, q2 = q3;
          q3 = pos + 3 < end ? __ldg(&w[pos + 3]) : 0u;
        }
        const unsigned long long m = mlut[static_cast<std::uint32_t>(buf >> (64 - huffman::kLutBits))];
        const int count = static_cast<int>(m >> 60);
        int take = count < want - got ? count : want - got;
        if (avail < huffman::kLutBits)  // only at a chunk's end: whole codes may pass the valid bits
          while (take > 0 && static_cast<int>((m >> (44 + 4 * take)) & 15u) > avail) --take;
        if (take > 0) {
          const int bits = static_cast<int>((m >> (44 + 4 * take)) & 15u);
          // All three table symbols; those past take are overwritten or never stored.
          mine[got] = static_cast<std::uint16_t>(m);
          mine[got + 1] = static_cast<std::uint16_t>(m >> 16);
          mine[got + 2] = static_cast<std::uint16_t>(m >> 32);
          got += take;
          buf <<= bits;
          avail -= bits;
          continue;
        }
        // A code longer than the window, or a whole first code past the valid bits.
        std::uint32_t sym = static_cast<std::uint32_t>(m & 0xFFFFu);
        const int l = count ? static_cast<int>((m >> 48) & 15u)
                            : decode_long(limit, first, offset, t.symbols, buf, sym);
        if (l == 0 || l > avail) {
          atomicOr(status, std::uint32_t(l == 0 ? huffman::impl::kBadCode : huffman::impl::kOverrun));
          ok = false;  // as the portable decoder, stop this run (the caller throws)
          len = 0;
          break;
        }
        mine[got++] = static_cast<std::uint16_t>(sym);
        buf <<= l;
        avail -= l;
      }
      __syncwarp();
      // Piece p (8 symbols, 16 bytes) of lane s's staged symbols: lanes take
      // consecutive pieces of one lane's row, so a warp store covers whole sectors.
      constexpr int kPieces = kStage / 8;
#pragma unroll
      for (int m = 0; m < kPieces; ++m) {
        const int idx = 32 * m + lane, src = idx / kPieces, piece = idx % kPieces;
        const std::uint64_t src_s0 = __shfl_sync(warp::kFull, s0, src);
        const std::uint32_t src_len = __shfl_sync(warp::kFull, len, src);
        const std::uint32_t at = i0 + 8 * piece;  // symbol index in the run
        if (at >= src_len) continue;
        const std::uint16_t* from = stage + kRow * (wbase + src) + 8 * piece;
        std::uint16_t* dst = out + src_s0 + at;
        if (vec && at + 8 <= src_len) {
          *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(from);
        } else {
          for (std::uint32_t k = 0; k < 8 && at + k < src_len; ++k) dst[k] = from[k];
        }
      }
      __syncwarp();
    }
    if (ok) {
      if (!last) {  // the run must end where the next one begins
        if (pos * 32u - static_cast<std::uint32_t>(avail) - start != expect)
          atomicOr(status, std::uint32_t(huffman::impl::kBadRun));
      } else if (pos != end || avail >= 32 || buf != 0) {
        atomicOr(status, std::uint32_t(huffman::impl::kTrailing));
      }
    }
  }
}

void launch_inflate(const Kokkos::Cuda& space, const std::uint32_t* words, std::uint64_t n_words,
                    const std::uint64_t* chunk_offsets, std::uint32_t cs, std::uint32_t step, std::uint64_t per_chunk,
                    std::uint64_t total, const std::uint16_t* run_bits, bool vec, const InflateTables& t,
                    std::uint16_t* out, std::uint64_t n, std::uint32_t* status) {
  // Enough blocks to fill the device once; the kernel strides over the rest.
  static const int resident = [] {
    int dev = 0, sms = 0, per_sm = 0;
    check(cudaFuncSetAttribute(inflate_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kInflateShared)),
          "cudaFuncSetAttribute");
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, inflate_kernel, kInflateThreads, kInflateShared),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return sms * (per_sm > 0 ? per_sm : 1);
  }();
  const std::uint64_t need = (total + kInflateThreads - 1) / kInflateThreads;
  const unsigned blocks = static_cast<unsigned>(need < std::uint64_t(resident) ? need : resident);
  inflate_kernel<<<blocks, kInflateThreads, kInflateShared, space.cuda_stream()>>>(
      words, n_words, chunk_offsets, cs, step, per_chunk, total, run_bits, vec, t, out, n, status);
  check(cudaGetLastError(), "huffman inflate_kernel");
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
                        std::uint32_t* status, std::uint32_t sub, std::uint64_t per_chunk, std::uint16_t* run_bits) {
  const int spt = spt_for(cs);
  if (!enabled() || n == 0 || spt == 0) return false;
  if (sub == 0) run_bits = nullptr;
  if (run_bits && sub % spt != 0) return false;  // runs must begin at thread boundaries
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  const bool vec = reinterpret_cast<std::uintptr_t>(symbols) % 16 == 0;
  const int blocks = enc_blocks(nchunks);
  cudaStream_t st = space.cuda_stream();
  switch (spt) {
    case 8: chunk_bits_kernel<8><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status, sub, per_chunk, run_bits); break;
    case 16: chunk_bits_kernel<16><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status, sub, per_chunk, run_bits); break;
    case 32: chunk_bits_kernel<32><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status, sub, per_chunk, run_bits); break;
    default: chunk_bits_kernel<64><<<blocks, kEncThreads, 0, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, offsets, status, sub, per_chunk, run_bits); break;
  }
  check(cudaGetLastError(), "huffman chunk_bits_kernel");
  return true;
}

bool huffman_encode_single_pass(const Kokkos::Cuda& space, const SymbolSource& symbols, std::uint64_t n,
                                std::uint32_t cs, const std::uint32_t* enc, std::uint32_t nsym, std::uint64_t* offsets,
                                std::uint32_t* words, std::uint64_t cap, unsigned long long* state,
                                std::uint32_t sub, std::uint64_t per_chunk,
                                std::uint16_t* run_bits, std::uint64_t& n_words, std::uint32_t& status_out,
                                EncodeFollower* follow) {
  const int spt = spt_for(cs);
  if (!enabled() || n == 0 || spt == 0 || nsym > kMaxTableSymbols) return false;
  if (sub == 0) run_bits = nullptr;
  if (run_bits && sub % spt != 0) return false;  // runs must begin at thread boundaries
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  const bool vec = symbols.bytes ? reinterpret_cast<std::uintptr_t>(symbols.bytes) % 8 == 0
                                 : reinterpret_cast<std::uintptr_t>(symbols.codes) % 16 == 0;
  const std::uint32_t stage_words = (cs * huffman::kMaxCodeLength + 31) / 32;
  const std::size_t shmem = (std::size_t(stage_words) + nsym + (symbols.bytes ? 256 : 0)) * sizeof(std::uint32_t);
  cudaStream_t st = space.cuda_stream();
  // The states, the ticket and the status word zeroed at once (a launch of
  // its own for the status cost the host 5 us before the encoder's).
  const std::uint64_t state_words = huffman_encode_state_words(nchunks);
  std::uint32_t* const status = reinterpret_cast<std::uint32_t*>(state + state_words - 1);
  check(cudaMemsetAsync(state, 0, state_words * sizeof(unsigned long long), st), "huffman encode state");
  if (symbols.bytes) {
    escape_starts_kernel<<<static_cast<unsigned>((nchunks + 1 + kEncThreads - 1) / kEncThreads), kEncThreads, 0,
                           st>>>(symbols.escapes, symbols.n_escapes, n, cs, nchunks, symbols.chunk_escapes);
    check(cudaGetLastError(), "huffman escape_starts_kernel");
  }
  // Resident blocks only (they take chunks from the ticket until none is left).
  auto run = [&](auto kernel) {
    const std::uint64_t resident = std::uint64_t(launch::resident_blocks(kernel, kEncThreads, shmem));
    const int blocks = static_cast<int>(nchunks < resident ? nchunks : resident);
    kernel<<<blocks, kEncThreads, shmem, st>>>(symbols, n, cs, vec, enc, nsym, nchunks, state, offsets, words, cap,
                                               status, sub, per_chunk, run_bits, stage_words);
  };
  const bool b = symbols.bytes != nullptr, nar = !b && !symbols.narrow.identity();
  // The kernel variant for spt symbols a thread: byte codes, narrowed codes, plain codes.
  const auto variant = [&](auto spt_c) {
    constexpr int S = decltype(spt_c)::value;
    b ? run(encode_kernel<S, true>) : nar ? run(encode_kernel<S, false, true>) : run(encode_kernel<S, false>);
  };
  switch (spt) {
    case 8: variant(std::integral_constant<int, 8>{}); break;
    case 16: variant(std::integral_constant<int, 16>{}); break;
    case 32: variant(std::integral_constant<int, 32>{}); break;
    default: variant(std::integral_constant<int, 64>{}); break;
  }
  check(cudaGetLastError(), "huffman encode_kernel");
  const void* extra = follow ? follow->queue(words, offsets + nchunks) : nullptr;
  // The total, the status and the follower's result straight to the host (a
  // pinned slot, the parts one after the other), one synchronization.
  unsigned char back[20] = {};
  const void* src[3] = {offsets + nchunks, status, extra};
  const std::size_t bytes[3] = {8, 4, 8};
  KSZ_EXPECTS(copy_to_host(space, src, bytes, extra ? 3 : 2, back), "internal: huffman encode results not copied");
  std::memcpy(&n_words, back, 8);
  std::memcpy(&status_out, back + 8, 4);
  if (extra) {
    follow->queued = true;
    std::memcpy(&follow->result, back + 12, 8);
  }
  // A symbol without a code is the caller's error to report (and makes the bound meaningless).
  KSZ_EXPECTS((status_out & huffman::impl::kBadSymbol) || !(status_out & kOverflow),
              "internal: the Huffman bitstream exceeds its bound of ", cap, " words");
  status_out &= ~kOverflow;
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
                     std::uint16_t* out, std::uint64_t n, std::uint32_t* status, std::uint32_t step,
                     std::uint64_t per_chunk, std::uint64_t total, const std::uint16_t* run_bits) {
  if (!enabled() || n == 0 || cs == 0 || total == 0) return false;
  // 16-byte stores need 16-byte aligned run starts.
  const bool vec = cs % 8 == 0 && step % 8 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  build_multi_lut<<<kLut / 256, 256, 0, space.cuda_stream()>>>(t.lut, t.multi);
  check(cudaGetLastError(), "huffman build_multi_lut");
  launch_inflate(space, words, n_words, chunk_offsets, cs, step, per_chunk, total, run_bits, vec, t, out, n, status);
  return true;
}

}  // namespace ksz::cuda_spec
