#include "src/core/backends.hpp"

namespace ksz {

const char* to_string(Backend b) {
  switch (b) {
    case Backend::Default: return "default";
    case Backend::Serial: return "serial";
    case Backend::OpenMP: return "openmp";
    case Backend::Cuda: return "cuda";
  }
  return "?";
}

std::vector<Backend> available_backends() {
  std::vector<Backend> v;
#ifdef KOKKOS_ENABLE_CUDA
  v.push_back(Backend::Cuda);
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  v.push_back(Backend::OpenMP);
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  v.push_back(Backend::Serial);
#endif
  return v;
}

Backend resolve_backend(Backend b) {
  if (b != Backend::Default) return b;
  return available_backends().front();  // same order as Kokkos' default space
}

Backend parse_backend(const std::string& name) {
  for (Backend b : {Backend::Default, Backend::Serial, Backend::OpenMP, Backend::Cuda})
    if (name == to_string(b)) {
      if (b == Backend::Default) return b;
      for (Backend a : available_backends())
        if (a == b) return b;
      std::string have;
      for (Backend a : available_backends()) have += std::string(have.empty() ? "" : ", ") + to_string(a);
      throw InvalidInput(impl::concat("backend '", name, "' is not built in this ksz (built: ", have, ")"));
    }
  throw InvalidInput(impl::concat("unknown backend '", name, "' (serial, openmp, cuda)"));
}

}  // namespace ksz
