// Stage 4 against stages 1 and 3 (chapter 7): the 3D GPT on a q×q×q world equals the serial GPT
// — parameters bitwise at initialisation (L3), loss, logits and every gradient after one step with
// dropout on (L4), the loss trajectory and weights over five AdamW steps with clipping (L5),
// recomputation bitwise — and its communication and activation memory per rank equal the chapter's
// formulas. Every rank also runs the serial model.
// The model: L = 2, NH = q² heads, C = 8q² (so q² divides C, as the 3D product needs), F = 4C,
// T = 16, B = 2q² (two sequences a row piece) and the byte vocabulary V = 256, which q = 3 pads to
// 9·⌈256/9⌉ = 261 rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "comm/grid.h"
#include "comm_formula.h"
#include "compare.h"
#include "core/memory_ledger.h"
#include "cube_pieces.h"
#include "serial/gpt.h"
#include "tp3d/gpt.h"
#include "tp3d/vocabulary.h"
#include "train/optimizer.h"

using namespace optimus;
using equivalence::copy;
using equivalence::make_batch;
using equivalence::Operand;
using equivalence::rel_error;
using equivalence::report;

namespace {

model::GPTConfig config_for(int q, float dropout) {
  model::GPTConfig c;
  c.n_layer = 2, c.n_head = q * q, c.n_embd = 8 * q * q, c.n_positions = 16, c.vocab_size = 256, c.dropout = dropout;
  return c;
}

// The world as a cube, the model for its q, and the batch size: what every test case starts from.
struct Cube {
  comm::Grid3D cube{mpi_test::world().comm()};
  int q = cube.q();
  model::GPTConfig cfg;
  int B = 2 * q * q, T = 16;

  explicit Cube(float dropout) : cfg(config_for(q, dropout)) {}
  std::string tag(const std::string& what) const { return what + " q=" + std::to_string(q); }
};

double relative(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

auto grads = [](const model::ParamTensor& t) { return t.grad.data(); };
auto values = [](const model::ParamTensor& t) { return t.value.data(); };

}  // namespace

TEST_CASE("3D initial parameters, gathered, are bitwise equal to serial", "[tp3d]") {
  auto& world = mpi_test::world();
  const Cube c(0.0f);
  const auto& [cube, q, cfg, B, T] = c;
  tp3d::GPT par(cfg, core::cpu_context(), 42, cube);
  serial::GPT ser(cfg, core::cpu_context(), 42);
  bool equal = true;
  for (size_t k = 0; k < par.params().tensors.size(); ++k) {
    const auto& t = par.params().tensors[k];
    const auto& s = ser.params().tensors[k];
    equal = equal && model::gather_canonical(t, t.value.data(), world.comm(), par.spec_of()) ==
                         copy(s.value.data(), s.value.numel());
  }
  report(c.tag("L3 3D initial parameters bitwise equal to serial (1 = yes)"), equal ? 1.0 : 0.0);
  MPI_REQUIRE(equal);
}

TEST_CASE("3D one step with dropout equals serial: loss, logits and every gradient", "[tp3d]") {
  auto& world = mpi_test::world();
  const Cube c(0.1f);
  const auto& [cube, q, cfg, B, T] = c;
  const int N = B * T, V = cfg.vocab_size, Vp = tp3d::vocab_piece(cfg, q) * q * q;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 1);
  tp3d::GPT par(cfg, core::cpu_context(), 7, cube);
  serial::GPT ser(cfg, core::cpu_context(), 7);
  par.params().zero_grads(), ser.params().zero_grads();
  const float l3 = par.forward(in.data(), tg.data(), B, T, 3), ls = ser.forward(in.data(), tg.data(), B, T, 3);
  par.backward(), ser.backward();

  const double loss_err = relative(l3, ls);
  report(c.tag("L4 loss relative error, 3D vs serial"), loss_err);
  // The logits pieces (N/q², Vp/q) are a product's Y: rows piece i·q + j, vocabulary block k.
  const auto& logits_piece = par.activations().logits;
  const auto logits = equivalence::first_columns(
      equivalence::gather_pieces(cube, copy(logits_piece.data(), logits_piece.numel()), N, Vp, Operand::Y), N, Vp, V);
  const double logit_err = rel_error(logits, copy(ser.activations().logits.data(), int64_t{N} * V));
  report(c.tag("L4 logits relative error, 3D vs serial"), logit_err);
  const double grad_err = equivalence::worst_param_error(par.params(), ser.params(), world.comm(), par.spec_of(), grads,
                                                         c.tag("L4 gradient relative error, 3D vs serial"));
  const float n3 = par.clip_gradients(0.0f), ns = ser.clip_gradients(0.0f);
  report(c.tag("L4 gradient norm relative error, 3D vs serial"), relative(n3, ns));
  MPI_REQUIRE(loss_err <= 1e-5);
  MPI_REQUIRE(logit_err <= 1e-5);
  MPI_REQUIRE(grad_err <= 1e-4);
  MPI_REQUIRE(relative(n3, ns) <= 1e-5);
}

TEST_CASE("3D five AdamW steps with dropout and clipping equal serial: losses and weights", "[tp3d]") {
  auto& world = mpi_test::world();
  const Cube c(0.1f);
  const auto& [cube, q, cfg, B, T] = c;
  tp3d::GPT par(cfg, core::cpu_context(), 5, cube);
  serial::GPT ser(cfg, core::cpu_context(), 5);
  train::AdamWOptions ao;
  train::AdamW opt3(par.params(), core::cpu_context(), ao), opts(ser.params(), core::cpu_context(), ao);
  double worst = 0.0;
  std::vector<int> in, tg;
  for (int step = 0; step < 5; ++step) {
    make_batch(in, tg, B, T, step);
    const auto s = static_cast<uint32_t>(step);
    par.params().zero_grads(), ser.params().zero_grads();
    const float l3 = par.forward(in.data(), tg.data(), B, T, s), ls = ser.forward(in.data(), tg.data(), B, T, s);
    worst = equivalence::worse(worst, relative(l3, ls));
    par.backward(), ser.backward();
    par.clip_gradients(0.5f), ser.clip_gradients(0.5f);
    opt3.update(par.params(), 3e-3f), opts.update(ser.params(), 3e-3f);
  }
  report(c.tag("L5 worst loss relative error over 5 steps, 3D vs serial"), worst);
  const double w_err = equivalence::worst_param_error(par.params(), ser.params(), world.comm(), par.spec_of(), values,
                                                      c.tag("L5 weight relative error, 3D vs serial"));
  MPI_REQUIRE(worst <= 1e-4);
  MPI_REQUIRE(w_err <= 1e-4);
}

TEST_CASE("3D recomputation is bitwise the run without it: loss and every gradient", "[tp3d]") {
  const Cube c(0.1f);
  const auto& [cube, q, cfg, B, T] = c;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 6);
  tp3d::GPT kept(cfg, core::cpu_context(), 9, cube, {.recompute = model::Recompute::none});
  tp3d::GPT redone(cfg, core::cpu_context(), 9, cube, {.recompute = model::Recompute::block});
  kept.params().zero_grads(), redone.params().zero_grads();
  const float lk = kept.forward(in.data(), tg.data(), B, T, 2), lr = redone.forward(in.data(), tg.data(), B, T, 2);
  kept.backward(), redone.backward();
  bool same = lk == lr;
  for (size_t t = 0; t < kept.params().tensors.size(); ++t) {
    const auto& a = kept.params().tensors[t].grad;
    same = same && copy(a.data(), a.numel()) == copy(redone.params().tensors[t].grad.data(), a.numel());
  }
  report(c.tag("recompute: loss and gradients bitwise equal (1 = yes)"), same ? 1.0 : 0.0);
  MPI_REQUIRE(same);
}

namespace {

// Chapter 7, "Communication per step": per rank and training step (forward, backward, clipping), in
// floats of 4 bytes unless marked; an all-gather or reduce-scatter counts its whole block. q = cube
// side, N = B·T, F = 4C, Vp = q²·⌈V/q²⌉, L layers. A 3D product of X (N, K) and W (K, M), forward
// and backward, costs per rank (tp3d/product.h):
//   on `out` (depth for a standard product, row for an exchanged one): 2 all-gathers and 1
//     reduce-scatter of (N/q)(K/q)
//   on `in` (row for standard, depth for exchanged): 1 reduce-scatter and 1 all-gather of (N/q)(M/q)
//   on col: 2 all-gathers and 1 reduce-scatter of (K/q)(M/q)
// A block has c_attn (K, M) = (C, 3C) and c_fc (C, F) standard, the projections (C, C) and (F, C)
// exchanged; the LM head is a standard product with (K, M) = (C, Vp). Summed, with the embedding's
// reduce-scatters (forward) and all-gathers (backward) of N·C/q on col and (N/q)(C/q) on depth:
//   depth all-gather:      6L + 3 calls, (6L + 3)·N·C/q² floats; reduce-scatter 4L + 2, (4L + 2)·N·C/q²
//   row all-gather:        6L + 1 calls, (N/q²)·(L·(5C + 3F) + Vp); reduce-scatter 4L + 1, (N/q²)·(L·(4C + 2F) + Vp)
//   col all-gather:        8L + 3 calls, 2·(L·(4C² + 2CF) + C·Vp)/q² + N·C/q; reduce-scatter 4L + 2, half
//                          the first term + N·C/q
// All-reduces: on row, 2 per LayerNorm forward (N/q² each) and 1 per backward (2N/q²), 2L + 1
// LayerNorms; the loss's sum (one double); the bucket of the branch biases shared by (i, j), L·(3C
// + F)/q. On depth, the loss's 3 (N/q² each) and the bucket of the residual stream's parameters
// shared by (i, k), (T_max·C + 6L·C + 2C)/q. On col, the loss's sum (one double) and the bucket of
// every replicated parameter, (T_max·C + 13L·C + 2C)/q. On world, the squared gradient norm (one double).
std::vector<equivalence::ExpectedComm> expected_comm(const model::GPTConfig& c, int q, int B, int T) {
  const int64_t L = c.n_layer, C = c.n_embd, F = c.ffn(), N = int64_t{B} * T, q2 = int64_t{q} * q, f = 4;
  const int64_t Vp = int64_t{tp3d::vocab_piece(c, q)} * q2, Nl = N / q2, Tm = c.n_positions;
  const int64_t col_gemm = (L * (4 * C * C + 2 * C * F) + C * Vp) / q2;
  return {
      {"cube_depth", comm::CommOp::all_gather, 6 * L + 3, f * (6 * L + 3) * N * C / q2},
      {"cube_depth", comm::CommOp::reduce_scatter, 4 * L + 2, f * (4 * L + 2) * N * C / q2},
      {"cube_row", comm::CommOp::all_gather, 6 * L + 1, f * Nl * (L * (5 * C + 3 * F) + Vp)},
      {"cube_row", comm::CommOp::reduce_scatter, 4 * L + 1, f * Nl * (L * (4 * C + 2 * F) + Vp)},
      {"cube_col", comm::CommOp::all_gather, 8 * L + 3, f * (2 * col_gemm + N * C / q)},
      {"cube_col", comm::CommOp::reduce_scatter, 4 * L + 2, f * (col_gemm + N * C / q)},
      {"cube_row", comm::CommOp::all_reduce, 3 * (2 * L + 1) + 2,
       f * (2 * L + 1) * 4 * Nl + 8 + f * L * (3 * C + F) / q},
      {"cube_depth", comm::CommOp::all_reduce, 4, f * 3 * Nl + f * (Tm * C + 6 * L * C + 2 * C) / q},
      {"cube_col", comm::CommOp::all_reduce, 2, 8 + f * (Tm * C + 13 * L * C + 2 * C) / q},
      {"world", comm::CommOp::all_reduce, 1, 8},
  };
}

}  // namespace

TEST_CASE("3D communication per training step equals the chapter's formula, per operation and communicator", "[tp3d]") {
  auto& world = mpi_test::world();
  const Cube c(0.1f);
  const auto& [cube, q, cfg, B, T] = c;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 2);
  tp3d::GPT par(cfg, core::cpu_context(), 1, cube);
  const auto step = equivalence::step_communication(par, world.comm(), in, tg, B, T);
  MPI_REQUIRE(equivalence::ledger_matches(step, expected_comm(cfg, q, B, T), " q=" + std::to_string(q)));
}

namespace {

// Chapter 7, "Memory per rank": the floats the 3D stage keeps for backward (the ledger's
// activations), per rank, for a batch (B, T). Every (N, ·) activation is a cube piece, 1/q³ of it;
// the per-row statistics (LayerNorm mean and rstd, the loss's four numbers per row) are divided by
// the q² row pieces only; the attention probabilities by the q² sequence pieces and the q head groups.
int64_t activations_3d(const model::GPTConfig& c, int q, int B, int T) {
  const int64_t L = c.n_layer, C = c.n_embd, F = c.ffn(), NH = c.n_head, N = int64_t{B} * T, q2 = int64_t{q} * q;
  const int64_t q3 = q2 * q, Nl = N / q2, Vp = int64_t{tp3d::vocab_piece(c, q)} * q2;
  // per block: ln1, qkv (3), atty, res1, ln2, the output and fch, fch_gelu as pieces; att; 4 statistics a row
  const int64_t block = (8 * N * C + 2 * N * F) / q3 + (B / q2) * (NH / q) * T * T + 4 * Nl;
  return L * block + 2 * N * C / q3 /*encoded, lnf*/ + 2 * Nl + N * Vp / q3 /*logits*/ + 4 * Nl /*loss*/;
}

}  // namespace

TEST_CASE("3D activation memory per rank equals the chapter's formula", "[tp3d]") {
  const Cube c(0.1f);
  const auto& [cube, q, cfg, B, T] = c;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 4);
  core::MemoryLedger ledger;
  tp3d::GPT par(cfg, core::cpu_context(ledger), 1, cube);
  par.forward(in.data(), tg.data(), B, T, 0);
  const int64_t got = static_cast<int64_t>(ledger.peak(core::MemoryCategory::activations));
  const int64_t want = 4 * activations_3d(cfg, q, B, T);
  equivalence::report_count(c.tag("ledger: 3D activation bytes per rank"), got, want);
  MPI_REQUIRE(got == want);
}
