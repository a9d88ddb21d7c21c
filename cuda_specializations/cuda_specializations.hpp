// Hand-tuned CUDA for the hot stages of the Lorenzo pipeline, chosen at
// compile time when Kokkos has CUDA (KSZ_HAVE_CUDA) and at run time by
// enabled(). Each one's portable twin in portable/ is the reference: same
// inputs, same bytes out (tests/cuda_spec asserts it on the GPU).
//
//  - finite_minmax: value range by warp-shuffle reductions, many elements per
//    thread (the portable range reduction runs 64-thread blocks).
//  - lorenzo_fused_compress: pre-quantization, Lorenzo prediction, quantization
//    and the histogram in one pass: a block per chunk stages the chunk's q in
//    shared memory (prediction never crosses a chunk), counts the hot bins
//    around the center in registers and the rest in a shared histogram
//    (cusz-i section VI-A), one flush per block. The q array disappears.
//  - lorenzo_fused_compress3d: the 3D shape of the above, a thread per quad of
//    four x-neighbours of a 16^3 chunk.
//  - huffman_chunk_bits / huffman_deflate: a block per chunk, each thread a
//    contiguous run of symbols read with 16-byte loads, bit offsets by a block
//    scan, the chunk assembled in shared memory and written out coalesced;
//    huffman_encode_single_pass: the two in one pass with decoupled look-back.
//  - huffman_inflate: a thread per run of a chunk (sub-chunks, format 1.2),
//    the multi-symbol decode table in shared memory, a prefetch queue of
//    bitstream words, warp-cooperative 16-byte stores of decoded symbols.
//  - lossless_coded_bytes: the lossless pass's skip test, a block per 8 KiB
//    block of the bitstream, one integer atomic each.
//  - lossless_encode: the lossless pass's encoder, a block per 8 KiB block
//    (its bitmaps, scans and stored bytes in shared memory), written straight
//    to the payload at an offset from decoupled look-back.
//
// Every function returns false when it does not handle the case (shape, sizes,
// disabled); the caller then runs the portable path.
#pragma once
#include <Kokkos_Core.hpp>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>

#include "portable/encode/huffman/narrow.hpp"
#include "portable/quantize/prequant.hpp"
#include "src/pipeline/workspace.hpp"

namespace ksz::cuda_spec {

// True unless turned off by set_enabled(false) or KSZ_PORTABLE_ONLY=1 in the
// environment (read once). Benchmarks and tests compare both paths with it.
namespace impl {
inline std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{[] {
    const char* e = std::getenv("KSZ_PORTABLE_ONLY");
    return !(e && std::strcmp(e, "1") == 0);
  }()};
  return flag;
}
}  // namespace impl
inline bool enabled() { return impl::enabled_flag().load(std::memory_order_relaxed); }
inline void set_enabled(bool on) { impl::enabled_flag().store(on, std::memory_order_relaxed); }

// zero_offsets_from_classes's tiles of compaction blocks, and the look-back
// states it needs for nblocks of them (a tile's, the ticket).
constexpr std::uint64_t kZeroOffsetsTile = 1024;
inline std::uint64_t zero_offsets_state_words(std::uint64_t nblocks) { return nblocks / kZeroOffsetsTile + 2; }

// Work a caller queues right behind the Huffman encoder's single pass (CUDA),
// before the encoder's results come back, so that one synchronization serves
// both: queue(words, n_words) gets the bitstream and the device address of
// its length in words, queues its kernels and returns the device address of
// an 8-byte result (null: nothing queued), which comes back into `result`.
// Paths without the single pass never call it (queued stays false).
struct EncodeFollower {
  std::function<const void*(const std::uint32_t* words, const std::uint64_t* n_words)> queue;
  bool queued = false;
  std::uint64_t result = 0;
};

// KSZ_WIDE_CODES=1 (read once): the CUDA 3D Lorenzo compressor keeps 16-bit
// codes instead of byte codes (peak memory 1.50x instead of 1.24x input +
// output at 512^3, compression about 8% faster; the same stream).
inline bool wide_codes() {
  static const bool wide = [] {
    const char* e = std::getenv("KSZ_WIDE_CODES");
    return e && std::strcmp(e, "1") == 0;
  }();
  return wide;
}

// Device memory that copy_bytes_to_device / copy_bytes_to_host serve (none
// without CUDA): callers branch on it at compile time.
template <class Mem>
#if defined(KSZ_HAVE_CUDA)
constexpr bool kBulkCopyMem = std::is_same<Mem, Kokkos::CudaSpace>::value;
#else
constexpr bool kBulkCopyMem = false;
#endif

#if defined(KSZ_HAVE_CUDA)

// The device arrays src[k] of bytes[k] bytes, one after the other, into
// host memory at dst, through a pinned slot (HostResult): one
// synchronization of space, no pageable staging. False (nothing done) when
// switched off or over the slot's size in all.
bool copy_to_host(const Kokkos::Cuda& space, const void* const* src, const std::size_t* bytes, int parts, void* dst);

// Bulk copies between pageable host memory and device memory (transfer.cpp):
// to the device through pinned chunks that several host threads fill while
// the copy engine moves the ones before (the driver's pageable copy stages
// with one thread); to the host the same way, each thread copying its
// chunks out (into fresh memory the driver's one thread also paid the page
// faults). Ordered on
// space's stream after the work queued there; both return once the bytes are
// at dst. Neither pointer needs any alignment.
void copy_bytes_to_device(const Kokkos::Cuda& space, void* dst, const void* src, std::size_t bytes);
// crc (where given): the CRC-32C of the bytes copied, worked out as they land.
void copy_bytes_to_host(const Kokkos::Cuda& space, void* dst, const void* src, std::size_t bytes,
                        std::uint32_t* crc = nullptr);

// copy_to_host in two halves: start() queues the copies and the slot's event
// after them; finish() waits for that event alone and reads the slot, so
// kernels queued on the stream in between run while the host waits and
// works. The slot is held from start() to finish() (or destruction).
class PendingCopy {
 public:
  PendingCopy();
  ~PendingCopy();
  PendingCopy(const PendingCopy&) = delete;
  PendingCopy& operator=(const PendingCopy&) = delete;
  // False (nothing queued) as copy_to_host.
  bool start(const Kokkos::Cuda& space, const void* const* src, const std::size_t* bytes, int parts);
  void finish(void* dst);

 private:
  struct State;
  std::unique_ptr<State> m_state;
};

// Min and max of the finite values; any_finite false (and mn > mx) when none.
template <class T>
bool finite_minmax(const Kokkos::Cuda& space, const T* in, std::uint64_t n, double& mn, double& mx);
// The same two values (mn > mx when none is finite: T's extremes) left in
// device memory at buf[0], buf[1], nothing awaited: for work queued behind
// it that needs them before the host does. buf: kMinmaxBufDoubles of device
// memory (the rest is the reduction's scratch), the caller's until the
// stream has run the kernel. After every call, launched or refused, the
// counter in buf is zero once the stream gets there (the kernel leaves it so),
// so a caller that hands the same buffer back (counter_zeroed: it has held
// nothing else since) saves the memset ahead of the launch, an API call on
// the host before the GPU has any work (about 11 us on the H200 machine's
// host, 2% of an SZx REL compression). pipeline::impl::queue_value_range
// keeps that for the workspace's slot.
constexpr std::size_t kMinmaxBufDoubles = 4 + 2 * 4000;
template <class T>
bool finite_minmax_to(const Kokkos::Cuda& space, const T* in, std::uint64_t n, double* buf,
                      bool counter_zeroed = false);

struct LorenzoShape {
  std::uint64_t n0, n1, n2;  // extents, fastest first
  std::uint32_t c0, c1, c2;  // chunk extents
};

// codes[i] and hist (2*radius bins, overwritten) as lorenzo::prequantize +
// predict_quantize + histogram::histogram compute them; n_verbatim as
// prequantize's return value.
template <class T>
bool lorenzo_fused_compress(const Kokkos::Cuda& space, const T* in, const LorenzoShape& shape,
                            const quantize::QuantParams& qp, std::uint32_t radius, std::uint16_t* codes,
                            std::uint64_t* hist, std::uint64_t& n_verbatim);

// Sparse lists the 3D fused kernel emits directly (sorted increasing, as the
// portable compaction returns them); valid false when they overflowed their
// capacity (the caller compacts instead, or with byte codes codes again in 16
// bits; the counts are exact either way).
struct FusedLists {
  Kokkos::View<std::uint64_t*, Kokkos::CudaSpace> outlier_idx, verbatim_idx;
  // With byte codes: the elements whose byte is 0 (their indices only: the
  // caller adds the codes, quantize/byte_codes.hpp, and finds the outliers).
  Kokkos::View<std::uint64_t*, Kokkos::CudaSpace> escape_idx;
  std::uint64_t n_outliers = 0, n_verbatim = 0;
  bool valid = false;
  // The histogram (2 * radius counts), copied to the host with the counts.
  Kokkos::View<std::uint64_t*, Kokkos::HostSpace> hist_host;
  // Owners of the buffers above when they were allocated for this call (a
  // workspace lease not granted); empty when the workspace owns them.
  Kokkos::View<std::uint64_t*, Kokkos::CudaSpace> keep[6];
};

// The 3D fast path of lorenzo_fused_compress (16^3 chunks, radius <= 2048):
// 256 threads a chunk, four quads of x each, vector loads and stores, the hot
// histogram bins in registers, outlier and verbatim indices emitted in the
// same pass; the histogram comes back to the host with the list counts.
// Its buffers come from ws (held by the caller until the lists are consumed).
// C = std::uint8_t (radius >= quantize::kByteCodesMinRadius, else false):
// codes as quantize::code_byte (n bytes instead of 2n), the elements whose
// byte is 0 (outliers and the codes a byte cannot hold) in lists.escape_idx,
// lists.outlier_idx empty; the lists' capacity is then n / 512 (at least
// 65,536), and lists.valid false means the bytes are unusable.
// on_histogram runs as soon as lists.hist_host, the counts and valid are
// set, before the lists' sorts are launched (so that host work there, the
// caller's codebook, overlaps them).
// Whether lorenzo_fused_compress3d takes the case (else it returns false).
bool lorenzo_fused3d_takes(const LorenzoShape& shape, std::uint32_t radius);
template <class T, class C>
bool lorenzo_fused_compress3d(const Kokkos::Cuda& space, const T* in, const LorenzoShape& shape,
                              const quantize::QuantParams& qp, std::uint32_t radius, C* codes,
                              std::uint64_t* hist, FusedLists& lists,
                              pipeline::Workspace<Kokkos::CudaSpace>::Lease& ws,
                              const std::function<void()>& on_histogram);

// The outliers among byte codes' escapes (entries (i << 16) | code,
// increasing; quantize/byte_codes.hpp): the i of the n_outliers entries of
// code 0 into out, in order. Asynchronous (no count comes back: the caller
// knows it from the histogram).
bool byte_code_outliers(const Kokkos::Cuda& space, const std::uint64_t* escapes, std::uint64_t count,
                        std::uint64_t* out, std::uint64_t n_outliers,
                        pipeline::Workspace<Kokkos::CudaSpace>::Lease& ws);

// offsets[c] = words of chunk c; status |= 1 on a symbol without code. With
// sub > 0 (huffman::Runs::step when runs are stored), run_bits gets the bit
// length of every run of sub symbols but each chunk's last, as huffman::encode.
// The histogram of n codes below nbins (<= 8192) into hist (nbins counts, on
// the device), the same counts as histogram::histogram; false (nothing done)
// when switched off, nbins is out of range or codes is not 16-byte aligned.
// items > 1: as many runs of n codes one after the other, their histograms
// side by side in hist, in one launch (n a multiple of 8, else false).
bool code_histogram(const Kokkos::Cuda& space, const std::uint16_t* codes, std::uint64_t n, std::uint32_t nbins,
                    std::uint32_t center, std::uint64_t* hist, std::uint32_t items = 1);

// code_histogram of n codes of radius center (2 * center bins), and each
// block's magnitude classes (histogram::histogram_classes) into classes.
// False (nothing done) when switched off, center is not 4096 (code 0 is then
// no magnitude class) or codes is not 16-byte aligned.
// offsets[b] = the code-0 positions, at a radius whose first counted class
// is `first`, of the compaction blocks before b (b <= nblocks), from their
// magnitude classes (code_histogram_classes): spline::count_outliers_from_
// classes and the exclusive scan of outliers::compact_known in one kernel
// (decoupled look-back over tiles of kZeroOffsetsTile blocks). state:
// zero_offsets_state_words(nblocks) words of scratch, zeroed here.
// Asynchronous.
bool zero_offsets_from_classes(const Kokkos::Cuda& space, const std::uint32_t* classes, std::uint64_t nblocks,
                               std::uint32_t first, std::uint64_t* offsets, unsigned long long* state);
bool code_histogram_classes(const Kokkos::Cuda& space, const std::uint16_t* codes, std::uint64_t n,
                            std::uint32_t center, std::uint64_t* hist, std::uint32_t* classes);

bool huffman_chunk_bits(const Kokkos::Cuda& space, const std::uint16_t* symbols, std::uint64_t n,
                        std::uint32_t chunk_symbols, const std::uint32_t* enc, std::uint32_t nsym,
                        std::uint64_t* offsets, std::uint32_t* status, std::uint32_t sub, std::uint64_t per_chunk,
                        std::uint16_t* run_bits);

// words (n_words, from the scanned offsets) as huffman::encode's deflate writes them.
bool huffman_deflate(const Kokkos::Cuda& space, const std::uint16_t* symbols, std::uint64_t n,
                     std::uint32_t chunk_symbols, const std::uint32_t* enc, const std::uint64_t* offsets,
                     std::uint32_t* words, std::uint64_t n_words);

// chunk_bits + scan + deflate in one pass over the symbols (decoupled
// look-back for the chunks' word offsets): the same offsets (nchunks + 1),
// words, run lengths and status bits. words holds cap words, a bound the
// caller knows (from the histogram); state holds
// huffman_encode_state_words(nchunks) words of scratch, zeroed here by one
// memset. Blocks until n_words and the status are on the host.
// The symbols it reads: 16-bit codes, or where bytes is set byte codes and
// their listed codes (portable/quantize/byte_codes.hpp).
struct SymbolSource {
  const std::uint16_t* codes = nullptr;
  const std::uint8_t* bytes = nullptr;
  const std::uint64_t* escapes = nullptr;  // (i << 16) | code, increasing
  std::uint64_t n_escapes = 0;
  // nchunks + 1 words of scratch the one pass fills with each chunk's first
  // escape: chunk c's are [chunk_escapes[c], chunk_escapes[c + 1]).
  std::uint64_t* chunk_escapes = nullptr;
  std::uint32_t radius = 0;
  huffman::Narrow narrow;  // how 16-bit codes are read (not byte codes)
};
// The single pass's state words for nchunks chunks: the chunks' look-back
// states, the ticket, then the status word (the low half of the last).
inline std::uint64_t huffman_encode_state_words(std::uint64_t nchunks) { return nchunks + 2; }
bool huffman_encode_single_pass(const Kokkos::Cuda& space, const SymbolSource& symbols, std::uint64_t n,
                                std::uint32_t chunk_symbols, const std::uint32_t* enc, std::uint32_t nsym,
                                std::uint64_t* offsets, std::uint32_t* words, std::uint64_t cap,
                                unsigned long long* state, std::uint32_t sub, std::uint64_t per_chunk,
                                std::uint16_t* run_bits, std::uint64_t& n_words, std::uint32_t& status_out,
                                EncodeFollower* follow = nullptr);

// Sum over the blocks of 2^log2_block bytes of words of the least bytes the
// lossless pass can code each in (lossless::coded_lower_bound's sum, without
// its header and size table): min(nz * unit + ceil(nz / 8), length), nz the
// nonzero bytes (bytes) or words. Blocks until coded is on the host.
bool lossless_coded_bytes(const Kokkos::Cuda& space, const std::uint32_t* words, std::uint64_t n_words, bool bytes,
                          int log2_block, std::uint64_t& coded);

// lossless::encode of n bytes at `in` (bytes: ZeroBytes, else ZeroWords) for
// blocks of 8 KiB (log2_block 13; other sizes return false), in one kernel
// with decoupled look-back. payload gets a buffer (from ws when given, else
// fresh) holding the whole payload in its first `size` bytes; blocks until
// size is on the host.
bool lossless_encode(const Kokkos::Cuda& space, const std::uint8_t* in, std::uint64_t n, bool bytes, int log2_block,
                     pipeline::Workspace<Kokkos::CudaSpace>::Lease* ws,
                     Kokkos::View<std::uint8_t*, Kokkos::CudaSpace>& payload, std::uint64_t& size);
// The same encoder queued on a Huffman bitstream whose length in words a
// kernel before it leaves at *n_words (at most max_words), nothing awaited:
// the payload's data bytes are left at *total (device memory in ws), and
// lossless::payload_bytes gives the payload's length once both are known.
bool lossless_encode_words_queued(const Kokkos::Cuda& space, const std::uint32_t* words, const std::uint64_t* n_words,
                                  std::uint64_t max_words, bool bytes,
                                  pipeline::Workspace<Kokkos::CudaSpace>::Lease* ws,
                                  Kokkos::View<std::uint8_t*, Kokkos::CudaSpace>& payload,
                                  const unsigned long long*& total);

struct InflateTables {
  const std::uint32_t *lut, *limit, *first, *offset;
  const std::uint16_t* symbols;
  unsigned long long* multi;  // 2^kLutBits entries the inflate fills (DeviceCodebook::scratch_table)
};

// out and status exactly as huffman::decode's inflate leaves them: a thread
// per run (huffman::Runs: step symbols, per_chunk runs a chunk, total runs,
// their stored lengths in run_bits).
bool huffman_inflate(const Kokkos::Cuda& space, const std::uint32_t* words, std::uint64_t n_words,
                     const std::uint64_t* chunk_offsets, std::uint32_t chunk_symbols, const InflateTables& t,
                     std::uint16_t* out, std::uint64_t n, std::uint32_t* status, std::uint32_t step,
                     std::uint64_t per_chunk, std::uint64_t total, const std::uint16_t* run_bits);

// SZx (szx-ultrafast section V-B) with a warp per block: each lane owns 4
// consecutive values per 128-value chunk (one 16-byte load, one leading-code
// byte), min/max and the verbatim test by warp shuffles, mid-byte offsets by
// a warp scan. Two paths: szx_compress_onepass / szx_decode_groups (block
// sizes 128 * C; compression finds its block offsets by decoupled look-back
// inside the kernel, decompression by group sums and scans before it) and
// the two-pass szx_plan / szx_encode / szx_decode_offsets / szx_decode (any
// block size, block offsets by device scans). Same bytes as szx::plan /
// szx::encode / szx::decode; false when the case is not handled (the caller
// runs the next path).
struct SzxOffsets {
  std::uint64_t lead, mid, verb;  // bytes (lead, mid) and values (verb) before a block
};
// kinds, medians (nb each) and offs (nb + 1, exclusive; offs[nb] = totals).
template <class T>
bool szx_plan(const Kokkos::Cuda& space, const T* in, std::uint64_t n, std::uint32_t block, double bound,
              std::uint8_t* kinds, T* medians, SzxOffsets* offs, SzxOffsets& totals);
template <class T>
bool szx_encode(const Kokkos::Cuda& space, const T* in, std::uint64_t n, std::uint32_t block,
                const std::uint8_t* kinds, const T* medians, const SzxOffsets* offs, std::uint8_t* lead,
                std::uint8_t* mid, T* verb);
// Decompression offsets: bad_kinds / bad_codes count the blocks whose kind
// byte or leading codes are impossible (codes are read only if the lead
// total matches lead_size). offs as szx_plan's.
template <class T>
bool szx_decode_offsets(const Kokkos::Cuda& space, std::uint64_t n, std::uint32_t block, const std::uint8_t* kinds,
                        const std::uint8_t* lead, std::uint64_t lead_size, SzxOffsets* offs, SzxOffsets& totals,
                        std::uint64_t& bad_kinds, std::uint64_t& bad_codes);
template <class T>
bool szx_decode(const Kokkos::Cuda& space, std::uint64_t n, std::uint32_t block, const std::uint8_t* kinds,
                const T* medians, const SzxOffsets* offs, const std::uint8_t* lead, const std::uint8_t* mid,
                std::uint64_t mid_size, const T* verb, T* out);

// One pass for block sizes 128 * C (C = 1, 2, 4 for float, 1, 2 for double):
// plan, offsets and encode in one kernel (decoupled look-back over groups of
// blocks), the input read once. Writes kinds, medians, the leading codes
// (lead: room for every block coded, nb * block / 4 bytes), the mid-bytes
// from the start of payload and the verbatim values from its end backwards,
// block by block (the last verbatim block first), and each run's mid-byte
// count to runs (segment 21: a run is a group); totals as in szx_plan.
// fits is false when mid-bytes and verbatim values did not both fit in
// payload_bytes (never when payload_bytes >= n * sizeof(T)); the caller then
// takes the two-pass path.
// state: device memory of szx_onepass_state_bytes(..., true) (0: the case is
// not handled), the groups' look-back states (zeroed here) and, for float, the
// whole blocks' extremes that the REL value-range pass leaves there
// (decompression's state, szx_onepass_state_bytes(..., false), has no room
// for them).
// The bound: `bound` itself where range is null; else the kernel works it out
// from the extremes finite_minmax_to leaves at range[0], range[1] (queued
// before, not awaited) as the pipeline would (rel: bound times the finite
// values' span, 0 where none is finite; else bound), so no round trip to the
// host separates the two kernels. It returns those extremes and the bound it
// used in mn, mx and used. find_range (where range is null): the kernel finds
// the finite values' extremes itself, as it reads them, and returns them in
// mn, mx (mn > mx where none is finite), so a bound that does not depend on
// them (ABS) needs no pass over the input before. range_buf (where range is
// null): the value-range pass is queued here, into range_buf, ahead of the
// kernel, or under REL a sample's range there (szx_speculation).
struct SzxBound {
  double bound = 0;
  const double* range = nullptr;
  bool rel = false;
  bool find_range = false;
  // REL with no range given: the one-pass path runs the value-range pass
  // into this kMinmaxBufDoubles slot (finite_minmax_to's; its counter
  // already zero where range_counter_zeroed), float's with the block
  // extremes that the compressor then does not work out again.
  double* range_buf = nullptr;
  bool range_counter_zeroed = false;
  double mn = 0, mx = 0, used = 0;
};
template <class T>
std::size_t szx_onepass_state_bytes(std::uint64_t n, std::uint32_t block, bool compression);
template <class T>
bool szx_compress_onepass(const Kokkos::Cuda& space, const T* in, std::uint64_t n, std::uint32_t block, SzxBound& bound,
                          std::uint8_t* kinds, T* medians, std::uint16_t* runs, std::uint8_t* lead,
                          std::uint8_t* payload, std::uint64_t payload_bytes, void* state, std::size_t state_bytes,
                          SzxOffsets& totals, bool& fits);
// Decompression: each group's offsets from the kinds and the runs' mid-byte
// counts (segment 21; where runs is null, from the leading codes), in one
// cooperative kernel (false where the device cannot launch one), then one
// decoding kernel; every read bounded by its segment's size. The caller
// checks what the stream claims against totals (lead bytes, mid-bytes,
// verbatim values the kinds and codes imply) and the three flags (bad_runs:
// a run's count is not its codes') before using out.
template <class T>
bool szx_decode_groups(const Kokkos::Cuda& space, std::uint64_t n, std::uint32_t block, const std::uint8_t* kinds,
                       const T* medians, const std::uint8_t* lead, std::uint64_t lead_size, const std::uint8_t* mid,
                       std::uint64_t mid_size, const T* verb, std::uint64_t verb_values, const std::uint16_t* runs,
                       T* out, void* state, std::size_t state_bytes, SzxOffsets& totals, bool& bad_kinds,
                       bool& bad_codes, bool& bad_runs);
// For tests: at most `ctas` CTAs for szx_decode_groups' offsets (0: as many
// as are resident), so that a small field gives each thousands of groups.
void szx_limit_offset_ctas(unsigned ctas);
// REL (float or double, 16-byte aligned) in szx_compress_onepass: instead of the
// value-range pass, the compressor codes under the bound of a sample's range
// while it finds the field's, and keeps the bytes where they are provably
// the field's bound's (else codes again under it): the stream is the same
// either way. mode 0 never, 1 always, 2 (default) from 4 Mi values and not
// for 8 calls after a miss (16, 32, ... up to 256 after further misses in a
// row; 8 again after a kept one). Setting a mode ends any rest. counts: the
// speculative calls and those that kept their bytes, since the process
// started.
struct SzxSpeculation {
  unsigned long long tried = 0, held = 0;
};
void szx_speculation(int mode);
SzxSpeculation szx_speculation_counts();

#endif  // KSZ_HAVE_CUDA

}  // namespace ksz::cuda_spec
