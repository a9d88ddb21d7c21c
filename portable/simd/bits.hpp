// Bit counting for device and host code (the CUDA intrinsics in device code,
// portable C++ elsewhere: no -mpopcnt needed on x86-64's baseline), a native
// 64-bit atomic add, and division by a divisor fixed on the host.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace ksz {

// Four 32-bit words (eight 16-bit codes or symbols): one 16-byte load or store.
struct alignas(16) Words4 {
  std::uint32_t w[4];
};

KOKKOS_INLINE_FUNCTION int popcount32(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  return static_cast<int>((((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
#endif
}

KOKKOS_INLINE_FUNCTION int lowest_bit(std::uint32_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __ffs(x) - 1;
#else
  return __builtin_ctz(x);
#endif
}

// *p += v, atomically. As unsigned long long: Kokkos 3.4 maps that type to
// CUDA's native 64-bit atomic add, std::uint64_t (unsigned long on LP64) to
// a compare-and-swap loop, which contended addresses turn into a crawl.
KOKKOS_INLINE_FUNCTION void atomic_add_u64(std::uint64_t* p, std::uint64_t v) {
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t), "64-bit unsigned long long");
  Kokkos::atomic_add(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// Unsigned 32-bit division by a divisor fixed on the host: a multiply-high,
// a subtract and two shifts (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994, Fig. 4.1), exact for every 32-bit
// dividend. A GPU's 64-bit division costs some 70 instructions; a pass's
// point index needed two divisions and two remainders per point.
struct FastDiv {
  std::uint32_t d = 1, m = 1, sh1 = 0, sh2 = 0;
  FastDiv() = default;
  explicit FastDiv(std::uint32_t div) : d(div) {
    std::uint32_t l = 0;
    while (l < 32 && (std::uint64_t(1) << l) < div) ++l;  // l = ceil(log2 d)
    m = static_cast<std::uint32_t>((std::uint64_t(1) << 32) * ((std::uint64_t(1) << l) - div) / div + 1);
    sh1 = l < 1 ? l : 1;
    sh2 = l > 1 ? l - 1 : 0;
  }
  KOKKOS_INLINE_FUNCTION std::uint32_t div(std::uint32_t n) const {
    const std::uint32_t t = static_cast<std::uint32_t>((static_cast<std::uint64_t>(m) * n) >> 32);
    return (t + ((n - t) >> sh1)) >> sh2;
  }
};

}  // namespace ksz
