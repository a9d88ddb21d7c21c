# Writes OUT (ksz_perf_git.hpp) with the source tree's git revision, "-dirty"
# when tracked files differ from it; rewrites it only when that changes, so an
# unchanged tree does not recompile the benchmarks. Run at every build.
execute_process(COMMAND git -C ${SRC} rev-parse --short HEAD OUTPUT_VARIABLE rev
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rev)
  set(rev unknown)
else()
  execute_process(COMMAND git -C ${SRC} status --porcelain --untracked-files=no OUTPUT_VARIABLE dirty
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(dirty)
    set(rev "${rev}-dirty")
  endif()
endif()
set(text "#define KSZ_PERF_GIT \"${rev}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
