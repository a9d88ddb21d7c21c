#!/usr/bin/env bash
# Source checks the compilers cannot make. Run by cmake/dev.sh test.
#  - Every Kokkos::parallel_reduce over a range or team policy takes a named
#    functor: nvcc's host-device lambda wrapper calls a null pointer when a
#    template holding such a lambda is instantiated in two translation units
#    (seen with CUDA 13 on an H100). Nested TeamThreadRange reductions are fine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bad=$(grep -rn -A3 --include='*.hpp' --include='*.cpp' --include='*.cu' 'parallel_reduce(' portable src cuda_specializations perf tests 2>/dev/null \
  | grep -B3 'KOKKOS_LAMBDA' | grep 'parallel_reduce(' | grep -v 'TeamThreadRange\|ThreadVectorRange' || true)
if [ -n "$bad" ]; then
  echo "lint: parallel_reduce with KOKKOS_LAMBDA (use a named functor; see portable/predict/lorenzo/lorenzo.hpp):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "lint: ok"
