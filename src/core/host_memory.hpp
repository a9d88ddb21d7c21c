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

// v resized to `size` (new bytes zeroed), huge pages asked for and the pages
// faulted in first where its storage is new.
inline void resize_huge(std::vector<std::uint8_t>& v, std::size_t size) {
  if (size > v.capacity()) {
    std::vector<std::uint8_t> fresh;
    fresh.reserve(size);
    advise_huge_pages(fresh.data(), size);
    prefault(fresh.data(), size);
    fresh.assign(v.begin(), v.end());
    v.swap(fresh);
  }
  v.resize(size);
}
// A byte vector of `size` zeroed bytes, huge pages asked for first.
inline std::vector<std::uint8_t> huge_page_bytes(std::size_t size) {
  std::vector<std::uint8_t> v;
  resize_huge(v, size);
  return v;
}

}  // namespace ksz
