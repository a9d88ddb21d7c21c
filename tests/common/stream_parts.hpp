// A ksz stream taken apart into its header and segment payloads, to edit
// (hostile-stream tests) and write back with fresh checksums.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/container/container.hpp"

namespace ksz::test {

struct Parts {
  container::Header h;
  std::vector<std::pair<container::SegmentId, std::vector<std::uint8_t>>> segs;
  Bytes write() const {
    std::vector<container::Segment> v;
    for (const auto& s : segs) v.push_back({s.first, s.second.data(), s.second.size()});
    return container::write(h, v);
  }
  bool has(container::SegmentId id) const {
    for (const auto& s : segs)
      if (s.first == id) return true;
    return false;
  }
  const std::vector<std::uint8_t>& seg(container::SegmentId id) const {
    for (const auto& s : segs)
      if (s.first == id) return s.second;
    throw std::logic_error("no segment");
  }
  std::vector<std::uint8_t>& seg(container::SegmentId id) {
    return const_cast<std::vector<std::uint8_t>&>(std::as_const(*this).seg(id));
  }
  void erase(container::SegmentId id) {
    for (auto it = segs.begin(); it != segs.end(); ++it)
      if (it->first == id) {
        segs.erase(it);
        return;
      }
    throw std::logic_error("no segment");
  }
};

template <class Stream>  // a std::vector or Bytes
Parts split(const Stream& s) {
  const auto p = container::read(s.data(), s.size());
  Parts out{p.header, {}};
  for (const auto& seg : p.segments)
    out.segs.push_back({seg.id, std::vector<std::uint8_t>(seg.data, seg.data + seg.size)});
  return out;
}

}  // namespace ksz::test
