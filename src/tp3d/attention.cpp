// 3D attention: each rank runs the core attention ops on its own (sequences, head group), placed
// by its cube position (tp3d/attention.h), with no communication.
#include "tp3d/attention.h"

#include <stdexcept>
#include <string>

#include "tp3d/shared.h"

namespace optimus::tp3d {

namespace {

// My pairs, after the size checks; with dropout, the mask's block must be theirs, so every rank
// drops its own canonical probabilities, not copies of one another's: my Bl sequences and my head
// group. Its sequences may sit further down a larger batch (model::BatchSlice: the pass is a part
// of the step's batch), so only their count is checked, and the heads' place.
AttentionPairs checked_pairs(const comm::Grid3D& cube, int B, int NH, const core::DropoutSpec& drop) {
  const int q = cube.q();
  const std::string who = "3D attention";
  check_multiple(who, "B (the sequences)", B, q * q, "q²", "each of qkv's q² row pieces must be whole sequences");
  check_multiple(who, "NH (the heads)", NH, q, "q", "each of qkv's q column blocks is a group of whole heads");
  const AttentionPairs mine = attention_pairs_3d(cube, B, NH);
  const core::GlobalBlock& g = drop.block;
  if (drop.p == 0.0f ||
      (g.dim[0] == mine.Bl && g.dim[1] == mine.NHl && g.offset[1] == mine.h0 && g.global_dim[1] == NH))
    return mine;
  throw std::invalid_argument("3D attention: drop.block must be " + std::to_string(mine.Bl) +
                              " sequences by the heads [" + std::to_string(mine.h0) + ", " +
                              std::to_string(mine.h0 + mine.NHl) + ") of " + std::to_string(NH) +
                              "; use attention_pairs_3d");
}

}  // namespace

AttentionPairs attention_pairs_3d(const comm::Grid3D& cube, int B, int NH) {
  const int q = cube.q();
  const int Bl = B / (q * q), NHl = NH / q;
  return {.b0 = (cube.i() * q + cube.j()) * Bl, .Bl = Bl, .h0 = cube.k() * NHl, .NHl = NHl};
}

model::ShardSpec qkv_spec_3d(const core::Shape& canonical, int q, int i, int j, int k) {
  model::ShardSpec s = model::ShardSpec::whole(canonical);
  s.dims.back() = model::qkv_group_columns(canonical[canonical.rank() - 1], q, k);  // head group k
  if (canonical.rank() == 2) {
    const int64_t rows = canonical[0] / (int64_t{q} * q);
    s.dims.front() = {model::Segment{(j * q + i) * rows, rows}};  // W's row piece j·q + i
  } else {
    s.owner = i == 0 && j == 0;  // the bias, replicated over the ranks sharing k
  }
  return s;
}

void attention_3d_forward(const core::Context& ctx, const comm::Grid3D& cube, float* out, float* att, const float* qkv,
                          int B, int T, int C, int NH, const core::DropoutSpec& drop) {
  const AttentionPairs mine = checked_pairs(cube, B, NH, drop);
  core::attention_forward(ctx, out, att, qkv, mine.Bl, T, C / cube.q(), mine.NHl, drop);
}

void attention_3d_backward(const core::Context& ctx, const comm::Grid3D& cube, float* dqkv, float* datt,
                           const float* dout, const float* qkv, const float* att, int B, int T, int C, int NH,
                           const core::DropoutSpec& drop) {
  const AttentionPairs mine = checked_pairs(cube, B, NH, drop);
  core::attention_backward(ctx, dqkv, datt, dout, qkv, att, mine.Bl, T, C / cube.q(), mine.NHl, drop);
}

}  // namespace optimus::tp3d
