// Shard specs: how a rank holds a canonical tensor. Along each dimension the local
// indices are a concatenation of segments of canonical indices; e.g. a 1D rank r of 4 holds the
// c_attn columns {Q of its heads, K of its heads, V of its heads} = three segments of C/4 columns.
// One spec type drives initialisation (draw the canonical element's value), gather (place local
// elements in the canonical tensor) and scatter (take them out), which walk a shard in runs of
// elements that lie side by side in both tensors (ShardRows). Serial uses the whole-tensor spec.
// A segment may be padding: local elements with no canonical element (the vocabulary rows that
// round V up to a multiple of the split), held as zeros and left out of gathers.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace optimus::model {

/// Canonical indices [start, start + length) along one dimension, or, with start = kPadding,
/// `length` local indices that stand for no canonical element.
struct Segment {
  int64_t start = 0;
  int64_t length = 0;
};
inline constexpr int64_t kPadding = -1;

/// Part `index` of an n-long dimension cut in `parts` equal parts of ⌈n / parts⌉: its canonical
/// indices, then padding up to the part's length (the last parts are padded when parts ∤ n).
std::vector<Segment> padded_part(int64_t n, int64_t parts, int64_t index);
/// Head group `group` of `groups` in the columns of a fused qkv, 3C wide (width = 3C): its Q
/// columns, then its K columns, then its V columns, each C / groups wide.
std::vector<Segment> qkv_group_columns(int64_t width, int64_t groups, int64_t group);
/// ⌈n / parts⌉ · parts: the padded length of a dimension cut that way.
inline int64_t padded_size(int64_t n, int64_t parts) {
  return (n + parts - 1) / parts * parts;
}

struct ShardSpec {
  core::Shape canonical;                   // the canonical tensor's shape (1-D or 2-D)
  std::vector<std::vector<Segment>> dims;  // per dimension, the local index → canonical segments
  /// Whether this rank is the one that counts this shard in whole-model sums (the gradient norm)
  /// and writes it when gathering: replicated shards have exactly one owner among their copies.
  bool owner = true;

  /// The whole tensor, held by one rank (stage 1).
  static ShardSpec whole(const core::Shape& canonical);
  /// A contiguous block: along dimension d, `parts[d]` equal parts of which this rank holds `index[d]`.
  static ShardSpec block(const core::Shape& canonical, const std::vector<int64_t>& parts,
                         const std::vector<int64_t>& index);

  core::Shape local_shape() const;
  int64_t local_numel() const { return local_shape().numel(); }
  /// How many local elements stand for a canonical element (local_numel() less the padding).
  int64_t real_numel() const;
  /// The canonical flat index of local flat index k, or kPadding for a padding element (one
  /// element at a time, for tests; bulk work walks ShardRows).
  int64_t global_index(int64_t k) const;
};

/// A shard as rows of runs, its shapes computed once. The local tensor is rows() rows (every
/// dimension but the last, flattened) of row_length() elements; along the last dimension each
/// segment of the spec is a run: local elements side by side that stand for canonical elements side
/// by side. Rows are independent, so the walks over them run in parallel. For specs of rank ≥ 1;
/// the spec must outlive it.
class ShardRows {
 public:
  explicit ShardRows(const ShardSpec& spec);

  int64_t rows() const { return rows_; }
  int64_t row_length() const { return row_length_; }
  /// Calls run(local, global, length) for each run of local row r: the `length` local elements from
  /// flat index `local` stand for the canonical elements from flat index `global`, or for none
  /// (global = kPadding).
  template <class Run>
  void for_each_run(int64_t r, Run&& run) const {
    const int64_t start = canonical_row_start(r);
    int64_t local = r * row_length_;
    for (const Segment& seg : *columns_) {
      const bool padding = start == kPadding || seg.start == kPadding;
      run(local, padding ? kPadding : start + seg.start, seg.length);
      local += seg.length;
    }
  }

 private:
  /// The canonical flat index of column 0 of the canonical row that local row r is, or kPadding.
  int64_t canonical_row_start(int64_t r) const;

  const ShardSpec* spec_;
  const std::vector<Segment>* columns_;  // the last dimension's segments
  std::vector<int64_t> local_dims_;      // the local shape
  int64_t rows_ = 0, row_length_ = 0;
};

/// local = the elements of `canonical_data` (the full canonical tensor) that the spec holds; 0 in padding.
void scatter_from_canonical(float* local, const float* canonical_data, const ShardSpec& spec);
/// Writes the spec's local elements into their places in the full canonical tensor (not padding).
void place_in_canonical(float* canonical_data, const float* local, const ShardSpec& spec);

}  // namespace optimus::model
