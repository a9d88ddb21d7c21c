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

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

void check(cudaError_t e, const char* what) {
  KSZ_EXPECTS(e == cudaSuccess, "CUDA error in ", what, ": ", cudaGetErrorString(e));
}

int blocks_for(std::uint64_t warps_wanted) {
  const std::uint64_t b = (warps_wanted + kWarps - 1) / kWarps;
  return static_cast<int>(b < 65535u * 16 ? b : 65535u * 16);
}

// A warp per chunk: lanes read consecutive symbols.
__global__ void __launch_bounds__(kThreads)
    chunk_bits_kernel(const std::uint16_t* __restrict__ sym, std::uint64_t n, std::uint32_t cs,
                      const std::uint32_t* __restrict__ enc, std::uint32_t nsym, std::uint64_t nchunks,
                      std::uint64_t* __restrict__ offsets, std::uint32_t* __restrict__ status) {
  const int lane = threadIdx.x & 31;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * kWarps;
  for (std::uint64_t c = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; c < nchunks; c += warps) {
    const std::uint64_t s0 = c * cs, s1 = s0 + cs < n ? s0 + cs : n;
    std::uint64_t bits = 0;
    std::uint32_t bad = 0;
    for (std::uint64_t i = s0 + lane; i < s1; i += 32) {
      const std::uint32_t s = sym[i];
      const std::uint32_t len = s < nsym ? __ldg(&enc[s]) >> 24 : 0u;
      bad |= len == 0;
      bits += len;
    }
    bits = warp::reduce_add(bits);
    bad = __any_sync(warp::kFull, bad);
    if (lane == 0) {
      offsets[c] = (bits + 31) / 32;
      if (bad) atomicOr(status, std::uint32_t(huffman::impl::kBadSymbol));
    }
  }
}

// A warp per chunk; lane l packs a contiguous run of the chunk's symbols,
// starting at the bit offset the warp scan gives it. Words shared by two
// lanes are merged by atomicOr into a zeroed bitstream; the rest are stores.
__global__ void __launch_bounds__(kThreads)
    deflate_kernel(const std::uint16_t* __restrict__ sym, std::uint64_t n, std::uint32_t cs,
                   const std::uint32_t* __restrict__ enc, std::uint64_t nchunks,
                   const std::uint64_t* __restrict__ offsets, std::uint32_t* __restrict__ words) {
  const int lane = threadIdx.x & 31;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * kWarps;
  for (std::uint64_t c = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; c < nchunks; c += warps) {
    const std::uint64_t s0 = c * cs, s1 = s0 + cs < n ? s0 + cs : n;
    const std::uint64_t per = (s1 - s0 + 31) / 32;
    const std::uint64_t a0 = s0 + lane * per;
    const std::uint64_t a = a0 < s1 ? a0 : s1, b = a + per < s1 ? a + per : s1;
    std::uint64_t bits = 0;
    for (std::uint64_t i = a; i < b; ++i) bits += __ldg(&enc[sym[i]]) >> 24;
    const std::uint64_t start = warp::scan_inclusive(bits) - bits;  // bit offset in the chunk
    if (a == b) continue;
    std::uint64_t w = offsets[c] + start / 32;
    int nbits = static_cast<int>(start % 32);  // leading bits belong to earlier lanes: zeros here
    bool shared_first = nbits != 0;
    std::uint64_t acc = 0;
    for (std::uint64_t i = a; i < b; ++i) {
      const std::uint32_t e = __ldg(&enc[sym[i]]);
      const int len = static_cast<int>(e >> 24);
      acc = (acc << len) | (e & 0xFFFFFFu);
      nbits += len;
      if (nbits >= 32) {
        nbits -= 32;
        const std::uint32_t word = static_cast<std::uint32_t>(acc >> nbits);
        if (shared_first)
          atomicOr(&words[w], word);
        else
          words[w] = word;
        shared_first = false;
        ++w;
      }
    }
    if (nbits > 0) atomicOr(&words[w], static_cast<std::uint32_t>(acc << (32 - nbits)));
  }
}

constexpr int kLut = 1 << huffman::kLutBits;
constexpr int kInflateThreads = 128;

struct Tables {
  const std::uint32_t *limit, *first, *offset;
  const std::uint16_t* symbols;
};

// As huffman::impl::DecodeTables::decode_one, with the LUT in shared memory.
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

// A thread per chunk, as the portable decoder; symbols leave in 16-byte
// stores of 8 when the chunk start is 16-byte aligned (cs % 8 == 0).
__global__ void __launch_bounds__(kInflateThreads)
    inflate_kernel(const std::uint32_t* __restrict__ words, std::uint64_t nwords,
                   const std::uint64_t* __restrict__ chunk_offsets, std::uint32_t cs, const std::uint32_t* gl_lut,
                   Tables t, std::uint16_t* __restrict__ out, std::uint64_t n, std::uint64_t nchunks,
                   std::uint32_t* __restrict__ status) {
  __shared__ std::uint32_t lut[kLut];
  for (int i = threadIdx.x; i < kLut; i += blockDim.x) lut[i] = gl_lut[i];
  __syncthreads();
  const std::uint64_t c = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= nchunks) return;
  const std::uint64_t begin = chunk_offsets[c], end = chunk_offsets[c + 1];
  if (begin > end || end > nwords || (c == 0 && begin != 0)) {
    atomicOr(status, std::uint32_t(huffman::impl::kBadOffsets));
    return;
  }
  const std::uint64_t s0 = c * cs, s1 = s0 + cs < n ? s0 + cs : n;
  const bool vec = cs % 8 == 0;
  std::uint32_t pack[4] = {0, 0, 0, 0};
  std::uint64_t buf = 0;
  int avail = 0;
  std::uint64_t pos = begin;
  for (std::uint64_t i = s0; i < s1; ++i) {
    if (avail <= 32 && pos < end) {
      buf |= static_cast<std::uint64_t>(__ldg(&words[pos++])) << (32 - avail);
      avail += 32;
    }
    std::uint32_t sym = 0;
    const int len = decode_one(lut, t, buf, sym);
    if (len == 0 || len > avail) {
      atomicOr(status, std::uint32_t(len == 0 ? huffman::impl::kBadCode : huffman::impl::kOverrun));
      return;
    }
    buf <<= len;
    avail -= len;
    if (vec) {
      const unsigned k = static_cast<unsigned>(i - s0) & 7u;
      pack[k >> 1] |= sym << (16 * (k & 1));  // little-endian: the earlier symbol in the low half
      if (k == 7) {
        *reinterpret_cast<uint4*>(out + (i - 7)) = make_uint4(pack[0], pack[1], pack[2], pack[3]);
        pack[0] = pack[1] = pack[2] = pack[3] = 0;
      }
    } else {
      out[i] = static_cast<std::uint16_t>(sym);
    }
  }
  if (vec) {  // the tail of a short last chunk
    const std::uint64_t tail = (s1 - s0) & 7u;
    for (std::uint64_t k = 0; k < tail; ++k)
      out[s1 - tail + k] = static_cast<std::uint16_t>(pack[k >> 1] >> (16 * (k & 1)));
  }
  if (pos != end || avail >= 32 || buf != 0) atomicOr(status, std::uint32_t(huffman::impl::kTrailing));
}

}  // namespace

bool huffman_chunk_bits(const Kokkos::Cuda& space, const std::uint16_t* symbols, std::uint64_t n,
                        std::uint32_t cs, const std::uint32_t* enc, std::uint32_t nsym, std::uint64_t* offsets,
                        std::uint32_t* status) {
  if (!enabled() || n == 0 || cs == 0) return false;
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  chunk_bits_kernel<<<blocks_for(nchunks), kThreads, 0, space.cuda_stream()>>>(symbols, n, cs, enc, nsym, nchunks,
                                                                               offsets, status);
  check(cudaGetLastError(), "huffman chunk_bits_kernel");
  return true;
}

bool huffman_deflate(const Kokkos::Cuda& space, const std::uint16_t* symbols, std::uint64_t n, std::uint32_t cs,
                     const std::uint32_t* enc, const std::uint64_t* offsets, std::uint32_t* words,
                     std::uint64_t n_words) {
  if (!enabled() || n == 0 || cs == 0) return false;
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  check(cudaMemsetAsync(words, 0, n_words * sizeof(std::uint32_t), space.cuda_stream()), "bitstream reset");
  deflate_kernel<<<blocks_for(nchunks), kThreads, 0, space.cuda_stream()>>>(symbols, n, cs, enc, nchunks, offsets,
                                                                            words);
  check(cudaGetLastError(), "huffman deflate_kernel");
  return true;
}

bool huffman_inflate(const Kokkos::Cuda& space, const std::uint32_t* words, std::uint64_t n_words,
                     const std::uint64_t* chunk_offsets, std::uint32_t cs, const InflateTables& t,
                     std::uint16_t* out, std::uint64_t n, std::uint32_t* status) {
  if (!enabled() || n == 0 || cs == 0) return false;
  // 16-byte stores need a 16-byte aligned output.
  const bool aligned = reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  const std::uint64_t nchunks = huffman::chunk_count(n, cs);
  const std::uint64_t blocks = (nchunks + kInflateThreads - 1) / kInflateThreads;
  if (blocks > 0x7FFFFFFFull) return false;
  const std::uint32_t eff_cs = cs;
  if (!aligned && cs % 8 == 0) return false;  // keep one kernel simple: let the portable path run
  inflate_kernel<<<static_cast<unsigned>(blocks), kInflateThreads, 0, space.cuda_stream()>>>(
      words, n_words, chunk_offsets, eff_cs, t.lut, Tables{t.limit, t.first, t.offset, t.symbols}, out, n, nchunks,
      status);
  check(cudaGetLastError(), "huffman inflate_kernel");
  return true;
}

}  // namespace ksz::cuda_spec
