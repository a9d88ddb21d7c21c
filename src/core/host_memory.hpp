// Large host buffers written for the first time. Each 4 KiB page costs a
// fault on first touch, and under a hypervisor a fault costs microseconds: on
// the dev VM appending 200 MiB to a fresh std::vector took 209-624 ms. Where
// the kernel leaves transparent huge pages to madvise (a common default),
// asking for them before the first touch makes the faults 2 MiB ones (44-333
// ms for the same append). A hint only: nothing changes where it is refused.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/core/bytes.hpp"

namespace ksz {

// Huge pages for the whole 2 MiB pages inside [p, p + bytes), where the
// system offers them (Linux); a no-op for smaller ranges and elsewhere.
void advise_huge_pages(void* p, std::size_t bytes);

// The pages of [p, p + bytes) faulted in now (zeroed by the kernel), by four
// threads for 32 MiB and more, so that the first writes to them do not fault
// one page at a time on one thread: 200 MiB fresh took 86-96 ms to zero on
// the dev VM, 50-71 ms populated first (Linux 5.14's MADV_POPULATE_WRITE; a
// no-op elsewhere and for smaller ranges). For storage allocated but not yet
// written: a kernel call, not an access.
void prefault(void* p, std::size_t bytes);

// v resized to `size` (new bytes zeroed for a std::vector, not for Bytes), huge pages asked for
// where its storage is new, and its pages faulted in first where `populate`
// (for a writer that fills it on one thread, as a file read does; writers on
// several threads fault their own pages faster: perf/probe/gather_host.cu).
template <class A>
void resize_huge(std::vector<std::uint8_t, A>& v, std::size_t size, bool populate = true) {
  if (size > v.capacity()) {
    std::vector<std::uint8_t, A> fresh;
    fresh.reserve(size);
    advise_huge_pages(fresh.data(), size);
    if (populate) prefault(fresh.data(), size);
    fresh.assign(v.begin(), v.end());
    v.swap(fresh);
  }
  v.resize(size);
}
// `size` bytes, not zeroed, as resize_huge leaves them.
inline Bytes huge_page_bytes(std::size_t size, bool populate = true) {
  Bytes v;
  resize_huge(v, size, populate);
  return v;
}

}  // namespace ksz
