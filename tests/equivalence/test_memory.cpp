// Chapter 5's memory techniques against the formulas and against themselves. Recomputation only
// reorders work, so a run with --recompute block is bitwise the run without it — losses, every
// gradient and every weight over three AdamW steps with dropout — in serial, 1D, 1D with sequence
// parallelism and 2D (when the world is a square). And the activation memory each rank's ledger
// records equals the chapter's formula for every layout and recompute setting.
// The model: L = 3, NH = P heads (P = the world's size, so 1D splits them P ways and 2D √P ways),
// C = 8P, T = 16, B the smallest batch of at least 4 that every layout splits, the byte vocabulary V = 256 (padded
// where P does not divide it).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "comm/grid.h"
#include "compare.h"
#include "core/memory_ledger.h"
#include "layouts.h"
#include "model/activation_block.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp1d/shard_1d.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"
#include "train/optimizer.h"

using namespace optimus;
using equivalence::batch_for;
using equivalence::config_for;
using equivalence::Layout;
using equivalence::layouts_of;
using equivalence::make_batch;
using equivalence::report;
using equivalence::side;
using equivalence::with_layout;
using model::Recompute;

namespace {

// The trainer's step, `steps` times with dropout on: the losses.
template <typename Model>
std::vector<float> train_steps(Model& gpt, int steps, int B, int T) {
  train::AdamW opt(gpt.params(), gpt.context(), train::AdamWOptions{});
  std::vector<float> losses;
  std::vector<int> in, tg;
  for (int s = 0; s < steps; ++s) {
    make_batch(in, tg, B, T, s);
    gpt.params().zero_grads();
    losses.push_back(gpt.forward(in.data(), tg.data(), B, T, static_cast<uint32_t>(s)));
    gpt.backward();
    gpt.clip_gradients(0.5f);
    opt.update(gpt.params(), 3e-3f);
  }
  return losses;
}

// Whether this rank's shards of every value and gradient are the same bits in both models.
bool same_bits(const model::ParamSet& a, const model::ParamSet& b) {
  bool same = a.tensors.size() == b.tensors.size();
  for (size_t k = 0; same && k < a.tensors.size(); ++k) {
    const auto &x = a.tensors[k], &y = b.tensors[k];
    const auto bytes = static_cast<size_t>(x.value.numel()) * sizeof(float);
    same = x.value.numel() == y.value.numel() && std::memcmp(x.value.data(), y.value.data(), bytes) == 0 &&
           std::memcmp(x.grad.data(), y.grad.data(), bytes) == 0;
  }
  return same;
}

// Chapter 5, "What each rank keeps", in floats. Every stage keeps, per block, its output (R·Cr: R
// rows of the residual stream, Cr of its columns) and a working set: ln1, res1, ln2 (3·R·Cr), the
// two LayerNorms' mean and rstd (4·R), the parallel region's qkv, atty, fch, fch_gelu
// ((4·N·C + 2·N·F) / s, s the ways its columns are split) and the attention probabilities. Without
// recomputation there are L working sets, with it one. Outside the blocks: encoded and lnf (2·R·Cr),
// lnf's statistics (2·R), the logits and the loss's per-token values.
//   serial: R = N, Cr = C, s = 1;           att B·NH·T²;            logits N·V;       loss 3N
//   1d:     R = N (N/p with sequence        att B·(NH/p)·T²;        logits N·Vp;      loss 4N
//           parallelism), Cr = C, s = p;
//   2d:     R = N/q, Cr = C/q, s = q²;      att (B/q)·(NH/q)·T²;    logits (N/q)·Vb;  loss 4N/q
// 1D with recomputation and without sequence parallelism keeps Megatron's distributed checkpoints
// instead of encoded and the L outputs: each block's input as a piece of ⌈N·C/p⌉ floats, and two
// whole buffers of p pieces each that the blocks' inputs and outputs take in turn.
int64_t activation_floats(const Layout& layout, Recompute recompute, const model::GPTConfig& c, int P, int B, int T) {
  const int64_t L = c.n_layer, C = c.n_embd, F = c.ffn(), NH = c.n_head, N = int64_t{B} * T, TT = int64_t{T} * T;
  int64_t R = N, Cr = C, s = 1, att = B * NH * TT, logits = N * c.vocab_size, loss = 3 * N;
  if (layout.stage == "1d") {
    R = layout.sequence_parallel ? N / P : N, s = P, att = B * (NH / P) * TT;
    logits = N * tp1d::vocab_part(c, P), loss = 4 * N;
  } else if (layout.stage == "2d") {
    const int64_t q = side(P);
    R = N / q, Cr = C / q, s = q * q, att = (B / q) * (NH / q) * TT;
    logits = (N / q) * tp2d::vocab_block(c, static_cast<int>(q)), loss = 4 * N / q;
  }
  const int64_t working = 3 * R * Cr + 4 * R + (4 * N * C + 2 * N * F) / s + att;
  const int64_t sets = recompute == Recompute::block ? std::min<int64_t>(L, 1) : L;
  int64_t residual = (L + 1) * R * Cr;  // encoded and the L outputs
  if (layout.stage == "1d" && recompute == Recompute::block && !layout.sequence_parallel) {
    const int64_t piece = (N * C + P - 1) / P;
    residual = L * piece + 2 * P * piece;
  }
  return residual + sets * working + R * Cr + 2 * R + logits + loss;
}

}  // namespace

TEST_CASE("recomputation is bitwise the run without it, in every layout", "[memory]") {
  const int P = mpi_test::world().size();
  const auto cfg = config_for(P);
  const int T = 16, B = batch_for(P, T);
  for (const Layout& layout : layouts_of(P)) {
    core::MemoryLedger ledger_none, ledger_block;
    std::vector<float> losses_none, losses_block;
    bool same = false;
    with_layout(layout, cfg, Recompute::none, ledger_none, [&](auto& kept) {
      with_layout(layout, cfg, Recompute::block, ledger_block, [&](auto& recomputed) {
        losses_none = train_steps(kept, 3, B, T);
        losses_block = train_steps(recomputed, 3, B, T);
        same = same_bits(kept.params(), recomputed.params());
      });
    });
    const bool same_losses = std::memcmp(losses_none.data(), losses_block.data(), losses_none.size() * 4) == 0;
    report(layout.name() + " P=" + std::to_string(P) + ": recompute block = none, losses bitwise (1 = yes)",
           same_losses ? 1.0 : 0.0);
    report(layout.name() + " P=" + std::to_string(P) + ": recompute block = none, weights and gradients bitwise",
           same ? 1.0 : 0.0);
    const auto act = core::MemoryCategory::activations;
    report(layout.name() + " P=" + std::to_string(P) + ": activation memory, none / block",
           static_cast<double>(ledger_none.peak(act)) / static_cast<double>(ledger_block.peak(act)));
    MPI_REQUIRE(same_losses);
    MPI_REQUIRE(same);
    MPI_REQUIRE(ledger_block.peak(act) < ledger_none.peak(act));
  }
}

TEST_CASE("activation memory per rank equals the chapter's formula, for every layout and recompute setting",
          "[memory]") {
  const int P = mpi_test::world().size();
  const auto cfg = config_for(P);
  const int T = 16, B = batch_for(P, T);
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 4);
  bool all_equal = true;
  for (const Layout& layout : layouts_of(P)) {
    for (const Recompute recompute : {Recompute::none, Recompute::block}) {
      core::MemoryLedger ledger;  // this model's buffers only
      with_layout(layout, cfg, recompute, ledger, [&](auto& gpt) { gpt.forward(in.data(), tg.data(), B, T, 0); });
      const auto got = static_cast<int64_t>(ledger.peak(core::MemoryCategory::activations));
      const int64_t want = 4 * activation_floats(layout, recompute, cfg, P, B, T);
      equivalence::report_count("ledger: " + layout.name() + " recompute " + model::to_string(recompute) +
                                    " activation bytes per rank P=" + std::to_string(P),
                                got, want);
      all_equal = all_equal && got == want;
    }
  }
  MPI_REQUIRE(all_equal);
}
