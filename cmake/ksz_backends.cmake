# Which Kokkos execution spaces this build instantiates the pipelines for.
# KSZ_BACKEND_DEFINITIONS carries KSZ_HAVE_<SPACE> for the sources.
set(KSZ_BACKEND_DEFINITIONS "")
set(KSZ_HAVE_CUDA OFF)
foreach(space SERIAL OPENMP CUDA)
  kokkos_check(DEVICES ${space} RETURN_VALUE _ksz_has_${space})
  if(_ksz_has_${space})
    list(APPEND KSZ_BACKEND_DEFINITIONS KSZ_HAVE_${space}=1)
    if(space STREQUAL "CUDA")
      set(KSZ_HAVE_CUDA ON)
    endif()
  endif()
endforeach()
message(STATUS "ksz backends: ${KSZ_BACKEND_DEFINITIONS}")
