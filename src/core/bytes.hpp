// ksz::Bytes: the byte buffers of streams and fields that the library hands
// to its callers. A std::vector whose resize leaves new bytes as they are
// (default-initialized, not zeroed): every one of them is written next, and
// on an H200 host std::vector's zeroing of a 212 MiB stream took 21 ms on one
// thread, as long as the copy from the device that overwrote it
// (perf/probe/gather_host.cu). Everything else is std::vector's.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace ksz {

template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  // resize(n) and vector(n): default-initialized (for bytes: left as they are).
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
template <class T, class U>
bool operator==(const UninitAllocator<T>&, const UninitAllocator<U>&) noexcept {
  return true;
}
template <class T, class U>
bool operator!=(const UninitAllocator<T>&, const UninitAllocator<U>&) noexcept {
  return false;
}

using Bytes = std::vector<std::uint8_t, UninitAllocator<std::uint8_t>>;

}  // namespace ksz
