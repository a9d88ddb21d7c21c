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

// v resized to `size` (new bytes zeroed), huge pages asked for first where
// its storage is new.
inline void resize_huge(std::vector<std::uint8_t>& v, std::size_t size) {
  if (size > v.capacity()) {
    std::vector<std::uint8_t> fresh;
    fresh.reserve(size);
    advise_huge_pages(fresh.data(), size);
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
