// Distortion of a reconstruction against its original, on the host in double.
#pragma once
#include <cstdint>

#include "src/core/types.hpp"

namespace ksz::cli {

struct Quality {
  double max_abs_error = 0;
  double mse = 0;
  double psnr = 0;          // dB over the original's finite value range; inf when exact
  double nrmse = 0;
  double value_range = 0;
  double value_min = 0, value_max = 0;  // of the original's finite values (when compared > 0)
  std::uint64_t over_bound = 0;      // elements whose error exceeds the bound
  std::uint64_t nonfinite_mismatch = 0;  // NaN/Inf not reproduced exactly
  std::uint64_t compared = 0;
};

Quality assess(const void* orig, const void* recon, DType dtype, std::uint64_t n, double abs_bound);

// The quality of two parts of one array (frames) as of the whole.
Quality combine(const Quality& a, const Quality& b);

}  // namespace ksz::cli
