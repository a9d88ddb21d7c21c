#include "src/core/types.hpp"

#include <vector>

namespace ksz {

const char* to_string(DType t) { return t == DType::F64 ? "f64" : "f32"; }
const char* to_string(ErrorMode m) {
  switch (m) {
    case ErrorMode::ABS: return "abs";
    case ErrorMode::REL: return "rel";
    case ErrorMode::PW_REL: return "pwrel";
  }
  return "?";
}
const char* to_string(PredictorId p) {
  switch (p) {
    case PredictorId::Auto: return "auto";
    case PredictorId::Lorenzo: return "lorenzo";
    case PredictorId::Interp: return "interp";
    case PredictorId::SZx: return "szx";
    case PredictorId::ClassicLorenzo: return "classic";
  }
  return "?";
}

const char* to_string(LosslessId l) {
  switch (l) {
    case LosslessId::None: return "none";
    case LosslessId::ZeroBytes: return "zbe";
    case LosslessId::ZeroWords: return "zwe";
  }
  return "?";
}

std::string Dims::str() const {
  std::string s;
  for (int i = 0; i < rank; ++i) {
    if (i) s += "x";
    s += std::to_string(n[i]);
  }
  return s;
}

Shape3 effective_shape(const Dims& d) {
  std::vector<std::uint64_t> ext;
  for (int i = 0; i < 4; ++i)
    if (d.n[i] > 1) ext.push_back(d.n[i]);
  if (ext.empty()) ext.push_back(1);
  if (ext.size() == 4) {  // fold the two slowest extents
    ext[2] *= ext[3];
    ext.pop_back();
  }
  Shape3 s;
  s.rank = static_cast<int>(ext.size());
  for (int i = 0; i < s.rank; ++i) s.n[i] = ext[i];
  return s;
}

}  // namespace ksz
