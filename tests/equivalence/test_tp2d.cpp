// Stage 3 against stages 1 and 2 (chapter 3): the Optimus 2D GPT on a q×q world equals
// the serial GPT and the Megatron 1D GPT on the same p = q² ranks — parameters bitwise at
// initialisation (L3), loss, logits and every gradient after one step with dropout on (L4), the
// loss trajectory and weights over five AdamW steps with clipping (L5) — and its communication and
// activation memory per rank equal the chapter's formulas. Every rank also runs the serial model.
// The model: L = 2, NH = q² heads (so 1D splits them p ways), C = 8q², T = 16, B = 2q, and the byte
// vocabulary V = 256, which q = 3 and p = 9 pad (to 258 and 261 rows).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "comm/grid.h"
#include "comm_formula.h"
#include "compare.h"
#include "core/memory_ledger.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp1d/shard_1d.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"
#include "train/optimizer.h"

using namespace optimus;
using equivalence::copy;
using equivalence::make_batch;
using equivalence::rel_error;
using equivalence::report;

namespace {

model::GPTConfig config_for(int q, float dropout) {
  model::GPTConfig c;
  c.n_layer = 2, c.n_head = q * q, c.n_embd = 8 * q * q, c.n_positions = 16, c.vocab_size = 256, c.dropout = dropout;
  return c;
}

std::string tag(const comm::Grid2D& g, const std::string& what) {
  return what + " q=" + std::to_string(g.q());
}

double relative(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

auto grads = [](const model::ParamTensor& t) { return t.grad.data(); };
auto values = [](const model::ParamTensor& t) { return t.value.data(); };

}  // namespace

TEST_CASE("2D initial parameters, gathered, are bitwise equal to serial and to 1D", "[tp2d]") {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  comm::Grid1D g1(world.comm());
  const auto cfg = config_for(g.q(), 0.0f);
  tp2d::GPT par(cfg, core::cpu_context(), 42, g);
  tp1d::GPT one(cfg, core::cpu_context(), 42, g1);
  serial::GPT ser(cfg, core::cpu_context(), 42);
  bool equal_serial = true, equal_1d = true;
  for (size_t k = 0; k < par.params().tensors.size(); ++k) {
    const auto& t = par.params().tensors[k];
    const auto full = model::gather_canonical(t, t.value.data(), world.comm(), par.spec_of());
    const auto& s = ser.params().tensors[k];
    const auto& o = one.params().tensors[k];
    equal_serial = equal_serial && full == copy(s.value.data(), s.value.numel());
    equal_1d = equal_1d && full == model::gather_canonical(o, o.value.data(), world.comm(), one.spec_of());
  }
  report(tag(g, "L3 2D initial parameters bitwise equal to serial (1 = yes)"), equal_serial ? 1.0 : 0.0);
  report(tag(g, "L3 2D initial parameters bitwise equal to 1D (1 = yes)"), equal_1d ? 1.0 : 0.0);
  MPI_REQUIRE(equal_serial);
  MPI_REQUIRE(equal_1d);
}

TEST_CASE("2D one step with dropout equals serial and 1D: loss, logits and every gradient", "[tp2d]") {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  comm::Grid1D g1(world.comm());
  const int q = g.q();
  const auto cfg = config_for(q, 0.1f);
  const int B = 2 * q, T = 16, N = B * T, V = cfg.vocab_size, Vb = tp2d::vocab_block(cfg, q);
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 1);
  tp2d::GPT par(cfg, core::cpu_context(), 7, g);
  tp1d::GPT one(cfg, core::cpu_context(), 7, g1);
  serial::GPT ser(cfg, core::cpu_context(), 7);
  par.params().zero_grads(), one.params().zero_grads(), ser.params().zero_grads();
  const float l2 = par.forward(in.data(), tg.data(), B, T, 3), l1 = one.forward(in.data(), tg.data(), B, T, 3),
              ls = ser.forward(in.data(), tg.data(), B, T, 3);
  par.backward(), one.backward(), ser.backward();

  const double loss_serial = relative(l2, ls), loss_1d = relative(l2, l1);
  report(tag(g, "L4 loss relative error, 2D vs serial"), loss_serial);
  report(tag(g, "L4 loss relative error, 2D vs 1D"), loss_1d);
  // The logits tiles (N/q, Vb) of the padded (N, q·Vb), gathered, then the real vocabulary.
  const auto logits =
      equivalence::first_columns(equivalence::gather_grid(g, par.activations().logits.data(), N, q * Vb), N, q * Vb, V);
  const double logit_err = rel_error(logits, copy(ser.activations().logits.data(), int64_t{N} * V));
  report(tag(g, "L4 logits relative error, 2D vs serial"), logit_err);
  const double grad_serial = equivalence::worst_param_error(par.params(), ser.params(), world.comm(), par.spec_of(),
                                                            grads, tag(g, "L4 gradient relative error, 2D vs serial"));
  const double grad_1d =
      equivalence::worst_param_error_between(par.params(), par.spec_of(), one.params(), one.spec_of(), world.comm(),
                                             grads, tag(g, "L4 gradient relative error, 2D vs 1D"));
  const double key_bias = equivalence::key_bias_gradient_ratio(ser.params());
  report(tag(g, "L4 serial |grad key bias| / |grad c_attn.bias| (zero exactly)"), key_bias);
  const float n2 = par.clip_gradients(0.0f), n1 = one.clip_gradients(0.0f), ns = ser.clip_gradients(0.0f);
  report(tag(g, "L4 gradient norm relative error, 2D vs serial"), relative(n2, ns));
  report(tag(g, "L4 gradient norm relative error, 2D vs 1D"), relative(n2, n1));
  MPI_REQUIRE(loss_serial <= 1e-5);
  MPI_REQUIRE(loss_1d <= 1e-5);
  MPI_REQUIRE(logit_err <= 1e-5);
  MPI_REQUIRE(grad_serial <= 1e-4);
  MPI_REQUIRE(grad_1d <= 1e-4);
  MPI_REQUIRE(key_bias <= 1e-5);
  MPI_REQUIRE(relative(n2, ns) <= 1e-5);
  MPI_REQUIRE(relative(n2, n1) <= 1e-5);
}

TEST_CASE("2D five AdamW steps with dropout and clipping equal serial and 1D: losses and weights", "[tp2d]") {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  comm::Grid1D g1(world.comm());
  const int q = g.q();
  const auto cfg = config_for(q, 0.1f);
  const int B = 2 * q, T = 16;
  tp2d::GPT par(cfg, core::cpu_context(), 5, g);
  tp1d::GPT one(cfg, core::cpu_context(), 5, g1);
  serial::GPT ser(cfg, core::cpu_context(), 5);
  train::AdamWOptions ao;
  train::AdamW opt2(par.params(), core::cpu_context(), ao), opt1(one.params(), core::cpu_context(), ao),
      opts(ser.params(), core::cpu_context(), ao);
  double worst_serial = 0.0, worst_1d = 0.0;
  std::vector<int> in, tg;
  for (int step = 0; step < 5; ++step) {
    make_batch(in, tg, B, T, step);
    const auto s = static_cast<uint32_t>(step);
    par.params().zero_grads(), one.params().zero_grads(), ser.params().zero_grads();
    const float l2 = par.forward(in.data(), tg.data(), B, T, s), l1 = one.forward(in.data(), tg.data(), B, T, s),
                ls = ser.forward(in.data(), tg.data(), B, T, s);
    worst_serial = equivalence::worse(worst_serial, relative(l2, ls));
    worst_1d = equivalence::worse(worst_1d, relative(l2, l1));
    par.backward(), one.backward(), ser.backward();
    par.clip_gradients(0.5f), one.clip_gradients(0.5f), ser.clip_gradients(0.5f);
    opt2.update(par.params(), 3e-3f), opt1.update(one.params(), 3e-3f), opts.update(ser.params(), 3e-3f);
  }
  report(tag(g, "L5 worst loss relative error over 5 steps, 2D vs serial"), worst_serial);
  report(tag(g, "L5 worst loss relative error over 5 steps, 2D vs 1D"), worst_1d);
  const double w_serial = equivalence::worst_param_error(par.params(), ser.params(), world.comm(), par.spec_of(),
                                                         values, tag(g, "L5 weight relative error, 2D vs serial"));
  const double w_1d =
      equivalence::worst_param_error_between(par.params(), par.spec_of(), one.params(), one.spec_of(), world.comm(),
                                             values, tag(g, "L5 weight relative error, 2D vs 1D"));
  MPI_REQUIRE(worst_serial <= 1e-4);
  MPI_REQUIRE(worst_1d <= 1e-4);
  MPI_REQUIRE(w_serial <= 1e-4);
  MPI_REQUIRE(w_1d <= 1e-4);
}

namespace {

// Chapter 3, "Communication per step": per rank and training step (forward, backward, clipping), in
// floats of 4 bytes unless marked. q = grid side, Nb = N/q, Cb = C/q, Fb = F/q, Vb = ⌈V/q⌉, L layers.
// A 2D linear with input width K and output width M (weight K×M) costs, per rank:
//   forward  (summa_ab):            q broadcasts on row of Nb·K/q,  q broadcasts on col of K·M/q²
//   backward (summa_abt for dX):    q broadcasts on col of K·M/q²,  q reduces on row of Nb·K/q
//            (summa_atb for dW):    q broadcasts on row of Nb·K/q,  q reduces on col of K·M/q²
// The LM head (logits = lnf·wteᵀ, summa_abt, and its backward) costs the same as a linear with
// K = q·Vb (the padded vocabulary) and M = C. Summed over a block's four linears (K, M) = (C, 3C),
// (C, C), (C, F), (F, C) and the LM head:
//   row broadcast: (8L + 2)·q calls, 2·Nb·(L·(3C + F) + q·Vb) floats; row reduce: half the calls and floats;
//   col broadcast: (8L + 2)·q calls, 2·(L·(4C² + 2CF) + q·Vb·C)/q floats; col reduce: half of them.
// All-reduces: on row, 2 per LayerNorm forward (Nb each), 1 per backward (2·Nb), 2L + 1 LayerNorms,
// and 3 of the loss (Nb each); on col, the loss's global sum (one double) and the 1-D parameters'
// bucket ((T_max·C + 13·L·C + 2·C)/q floats: wpe, per block 2 LayerNorms' 4C and biases 3C + C +
// F + C = 9C, ln_f's 2C); on world, the squared gradient norm (one double).
// The embedding: one reduce-scatter and one all-gather on col of N·Cb floats each.
std::vector<equivalence::ExpectedComm> expected_comm(const model::GPTConfig& c, int q, int B, int T) {
  const int64_t L = c.n_layer, C = c.n_embd, F = c.ffn(), N = int64_t{B} * T, Nb = N / q, Cb = C / q;
  const int64_t Vq = int64_t{q} * tp2d::vocab_block(c, q), f = 4;
  const int64_t calls = (8 * L + 2) * q;
  const int64_t row_bcast = 2 * Nb * (L * (3 * C + F) + Vq);
  const int64_t col_bcast = 2 * (L * (4 * C * C + 2 * C * F) + Vq * C) / q;
  const int64_t bucket = (int64_t{c.n_positions} * C + 13 * L * C + 2 * C) / q;
  return {
      {"row", comm::CommOp::broadcast, calls, f * row_bcast},
      {"row", comm::CommOp::reduce, calls / 2, f * row_bcast / 2},
      {"col", comm::CommOp::broadcast, calls, f * col_bcast},
      {"col", comm::CommOp::reduce, calls / 2, f * col_bcast / 2},
      {"row", comm::CommOp::all_reduce, 3 * (2 * L + 1) + 3, f * ((2 * L + 1) * 4 * Nb + 3 * Nb)},
      {"col", comm::CommOp::all_reduce, 2, 8 + f * bucket},
      {"col", comm::CommOp::reduce_scatter, 1, f * N * Cb},
      {"col", comm::CommOp::all_gather, 1, f * N * Cb},
      {"world", comm::CommOp::all_reduce, 1, 8},
  };
}

}  // namespace

TEST_CASE("2D communication per training step equals the chapter's formula, per operation and communicator", "[tp2d]") {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  const int q = g.q();
  const auto cfg = config_for(q, 0.1f);
  const int B = 2 * q, T = 16;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 2);
  tp2d::GPT par(cfg, core::cpu_context(), 1, g);
  const auto step = equivalence::step_communication(par, world.comm(), in, tg, B, T);
  MPI_REQUIRE(equivalence::ledger_matches(step, expected_comm(cfg, q, B, T), " q=" + std::to_string(q)));
}

namespace {

// Chapter 3, "Memory per rank": the floats a layout keeps for backward (the ledger's activations),
// per rank, for a batch (B, T). Serial is 1D with p = 1; 2D is every (N, ·) tile divided by q in
// both directions, except the per-row statistics (LayerNorm mean and rstd, the loss's four
// numbers per row), which only the row split divides.
int64_t activations_1d(const model::GPTConfig& c, int p, int B, int T) {
  const int64_t L = c.n_layer, C = c.n_embd, F = c.ffn(), NH = c.n_head, N = int64_t{B} * T;
  const int64_t Vp = tp1d::vocab_part(c, p);
  // per block: ln1, res1, ln2, res2 whole; qkv, atty, fch, fch_gelu split; att split by heads
  const int64_t block = 4 * N * C + (3 * N * C + N * C + 2 * N * F) / p + int64_t{B} * (NH / p) * T * T + 4 * N;
  return L * block + N * C /*encoded*/ + N * C + 2 * N /*lnf*/ + N * Vp /*logits*/ + 4 * N /*loss*/;
}

int64_t activations_2d(const model::GPTConfig& c, int q, int B, int T) {
  const int64_t L = c.n_layer, C = c.n_embd, F = c.ffn(), NH = c.n_head, N = int64_t{B} * T, Nb = N / q;
  const int64_t Vb = tp2d::vocab_block(c, q);
  // per block: ln1, qkv (3), atty, res1, ln2, res2 and fch, fch_gelu as tiles; att split by batch and heads
  const int64_t block = (8 * N * C + 2 * N * F) / (q * q) + int64_t{B / q} * (NH / q) * T * T + 4 * Nb;
  return L * block + 2 * N * C / (q * q) /*encoded, lnf*/ + 2 * Nb + Nb * Vb /*logits*/ + 4 * Nb /*loss*/;
}

}  // namespace

TEST_CASE("2D activation memory per rank equals the chapter's formula, against 1D on the same ranks", "[tp2d]") {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  comm::Grid1D g1(world.comm());
  const int q = g.q(), p = q * q;
  const auto cfg = config_for(q, 0.1f);
  const int B = 2 * q, T = 16;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 4);
  core::MemoryLedger ledger2, ledger1;  // one ledger per model: each counts only its own buffers
  tp2d::GPT par(cfg, core::cpu_context(ledger2), 1, g);
  tp1d::GPT one(cfg, core::cpu_context(ledger1), 1, g1);
  par.forward(in.data(), tg.data(), B, T, 0);
  one.forward(in.data(), tg.data(), B, T, 0);
  const auto act = core::MemoryCategory::activations;
  const int64_t got2 = static_cast<int64_t>(ledger2.peak(act)), got1 = static_cast<int64_t>(ledger1.peak(act));
  const int64_t want2 = 4 * activations_2d(cfg, q, B, T), want1 = 4 * activations_1d(cfg, p, B, T);
  equivalence::report_count(tag(g, "ledger: 2D activation bytes per rank"), got2, want2);
  equivalence::report_count(tag(g, "ledger: 1D activation bytes per rank (p = q²)"), got1, want1);
  report(tag(g, "ledger: 1D / 2D activation memory per rank"), static_cast<double>(got1) / static_cast<double>(got2));
  MPI_REQUIRE(got2 == want2);
  MPI_REQUIRE(got1 == want1);
  MPI_REQUIRE(got2 < got1);
}
