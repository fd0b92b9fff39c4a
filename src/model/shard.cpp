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

// The length of a dimension: the sum of its segments.
static int64_t local_length(const std::vector<Segment>& segs) {
  int64_t n = 0;
  for (const auto& seg : segs) n += seg.length;
  return n;
}

int64_t ShardSpec::global_index(int64_t k) const {
  int64_t global = 0, stride = 1, rest = k;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    const auto& segs = dims[static_cast<size_t>(d)];
    const int64_t n = local_length(segs);
    const int64_t along = canonical_along(segs, rest % n);
    rest /= n;
    if (along == kPadding) return kPadding;
    global += along * stride;
    stride *= canonical[d];
  }
  return global;
}

core::Shape ShardSpec::local_shape() const {
  std::vector<int64_t> shape;
  for (const auto& segs : dims) shape.push_back(local_length(segs));
  return core::Shape(shape);
}

ShardRows::ShardRows(const ShardSpec& spec) : spec_(&spec) {
  if (spec.dims.empty()) throw std::invalid_argument("ShardRows: the spec has no dimensions");
  columns_ = &spec.dims.back();
  for (const auto& segs : spec.dims) local_dims_.push_back(local_length(segs));
  row_length_ = local_dims_.back();
  rows_ = 1;
  for (size_t d = 0; d + 1 < local_dims_.size(); ++d) rows_ *= local_dims_[d];
}

int64_t ShardRows::canonical_row_start(int64_t r) const {
  const int last = static_cast<int>(local_dims_.size()) - 1;
  int64_t global = 0, stride = spec_->canonical[last], rest = r;
  for (int d = last - 1; d >= 0; --d) {
    const int64_t along =
        canonical_along(spec_->dims[static_cast<size_t>(d)], rest % local_dims_[static_cast<size_t>(d)]);
    rest /= local_dims_[static_cast<size_t>(d)];
    if (along == kPadding) return kPadding;
    global += along * stride;
    stride *= spec_->canonical[d];
  }
  return global;
}

// Both copies run row by row, the rows in parallel: a run is a copy of side-by-side floats.
void scatter_from_canonical(float* local, const float* canonical_data, const ShardSpec& spec) {
  const ShardRows rows(spec);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows.rows(); ++r) {
    rows.for_each_run(r, [&](int64_t l, int64_t g, int64_t n) {
      if (g == kPadding) {
        std::fill_n(local + l, n, 0.0f);
      } else {
        std::copy_n(canonical_data + g, n, local + l);
      }
    });
  }
}

void place_in_canonical(float* canonical_data, const float* local, const ShardSpec& spec) {
  const ShardRows rows(spec);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows.rows(); ++r) {
    rows.for_each_run(r, [&](int64_t l, int64_t g, int64_t n) {
      if (g != kPadding) std::copy_n(local + l, n, canonical_data + g);
    });
  }
}

}  // namespace optimus::model
