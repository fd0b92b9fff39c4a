// Shard specs: segment arithmetic.
#include "model/shard.h"

#include <algorithm>
#include <stdexcept>

namespace optimus::model {

ShardSpec ShardSpec::whole(const core::Shape& canonical) {
  ShardSpec s;
  s.canonical = canonical;
  for (int d = 0; d < canonical.rank(); ++d) s.dims.push_back({Segment{0, canonical[d]}});
  return s;
}

ShardSpec ShardSpec::block(const core::Shape& canonical, const std::vector<int64_t>& parts,
                           const std::vector<int64_t>& index) {
  if (static_cast<int>(parts.size()) != canonical.rank() || parts.size() != index.size()) {
    throw std::invalid_argument("ShardSpec::block: one part count and index per dimension of " + canonical.str());
  }
  ShardSpec s;
  s.canonical = canonical;
  for (int d = 0; d < canonical.rank(); ++d) {
    if (canonical[d] % parts[d] != 0) {
      throw std::invalid_argument("ShardSpec::block: dimension " + std::to_string(d) + " of " + canonical.str() +
                                  " is not divisible by " + std::to_string(parts[d]));
    }
    const int64_t len = canonical[d] / parts[d];
    s.dims.push_back({Segment{index[d] * len, len}});
  }
  return s;
}

std::vector<Segment> qkv_group_columns(int64_t width, int64_t groups, int64_t group) {
  const int64_t C = width / 3, columns = C / groups;
  std::vector<Segment> segments;
  for (int64_t part = 0; part < 3; ++part) segments.push_back({part * C + group * columns, columns});
  return segments;
}

std::vector<Segment> padded_part(int64_t n, int64_t parts, int64_t index) {
  const int64_t len = padded_size(n, parts) / parts, start = index * len;
  const int64_t real = std::clamp<int64_t>(n - start, 0, len);
  std::vector<Segment> segs;
  if (real > 0) segs.push_back({start, real});
  if (real < len) segs.push_back({kPadding, len - real});
  return segs;
}

core::Shape ShardSpec::local_shape() const {
  std::vector<int64_t> shape;
  for (const auto& segs : dims) {
    int64_t n = 0;
    for (const auto& seg : segs) n += seg.length;
    shape.push_back(n);
  }
  return core::Shape(shape);
}

int64_t ShardSpec::real_numel() const {
  int64_t n = 1;
  for (const auto& segs : dims) {
    int64_t along = 0;
    for (const auto& seg : segs) along += seg.start == kPadding ? 0 : seg.length;
    n *= along;
  }
  return n;
}

// The canonical index along one dimension of local index k along it (kPadding in padding).
static int64_t canonical_along(const std::vector<Segment>& segs, int64_t k) {
  for (const auto& seg : segs) {
    if (k < seg.length) return seg.start == kPadding ? kPadding : seg.start + k;
    k -= seg.length;
  }
  throw std::out_of_range("ShardSpec: local index outside the shard");
}

int64_t ShardSpec::global_index(int64_t k) const {
  const core::Shape local = local_shape();
  int64_t global = 0, stride = 1, rest = k;
  for (int d = local.rank() - 1; d >= 0; --d) {
    const int64_t local_index = rest % local[d];
    rest /= local[d];
    const int64_t along = canonical_along(dims[static_cast<size_t>(d)], local_index);
    if (along == kPadding) return kPadding;
    global += along * stride;
    stride *= canonical[d];
  }
  return global;
}

void scatter_from_canonical(float* local, const float* canonical_data, const ShardSpec& spec) {
  const int64_t n = spec.local_numel();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t g = spec.global_index(k);
    local[k] = g == kPadding ? 0.0f : canonical_data[g];
  }
}

void place_in_canonical(float* canonical_data, const float* local, const ShardSpec& spec) {
  const int64_t n = spec.local_numel();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t g = spec.global_index(k);
    if (g != kPadding) canonical_data[g] = local[k];
  }
}

}  // namespace optimus::model
