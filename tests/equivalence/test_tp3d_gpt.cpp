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

std::string tag(const comm::Grid3D& cube, const std::string& what) {
  return what + " q=" + std::to_string(cube.q());
}

double relative(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

auto grads = [](const model::ParamTensor& t) { return t.grad.data(); };
auto values = [](const model::ParamTensor& t) { return t.value.data(); };

}  // namespace

TEST_CASE("3D initial parameters, gathered, are bitwise equal to serial", "[tp3d]") {
  auto& world = mpi_test::world();
  comm::Grid3D cube(world.comm());
  const auto cfg = config_for(cube.q(), 0.0f);
  tp3d::GPT par(cfg, core::cpu_context(), 42, cube);
  serial::GPT ser(cfg, core::cpu_context(), 42);
  bool equal = true;
  for (size_t k = 0; k < par.params().tensors.size(); ++k) {
    const auto& t = par.params().tensors[k];
    const auto& s = ser.params().tensors[k];
    equal = equal && model::gather_canonical(t, t.value.data(), world.comm(), par.spec_of()) ==
                         copy(s.value.data(), s.value.numel());
  }
  report(tag(cube, "L3 3D initial parameters bitwise equal to serial (1 = yes)"), equal ? 1.0 : 0.0);
  MPI_REQUIRE(equal);
}

TEST_CASE("3D one step with dropout equals serial: loss, logits and every gradient", "[tp3d]") {
  auto& world = mpi_test::world();
  comm::Grid3D cube(world.comm());
  const int q = cube.q();
  const auto cfg = config_for(q, 0.1f);
  const int B = 2 * q * q, T = 16, N = B * T, V = cfg.vocab_size, Vp = tp3d::vocab_piece(cfg, q) * q * q;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 1);
  tp3d::GPT par(cfg, core::cpu_context(), 7, cube);
  serial::GPT ser(cfg, core::cpu_context(), 7);
  par.params().zero_grads(), ser.params().zero_grads();
  const float l3 = par.forward(in.data(), tg.data(), B, T, 3), ls = ser.forward(in.data(), tg.data(), B, T, 3);
  par.backward(), ser.backward();

  const double loss_err = relative(l3, ls);
  report(tag(cube, "L4 loss relative error, 3D vs serial"), loss_err);
  // The logits pieces (N/q², Vp/q) are a product's Y: rows piece i·q + j, vocabulary block k.
  const auto& logits_piece = par.activations().logits;
  const auto logits = equivalence::first_columns(
      equivalence::gather_pieces(cube, copy(logits_piece.data(), logits_piece.numel()), N, Vp, Operand::Y), N, Vp, V);
  const double logit_err = rel_error(logits, copy(ser.activations().logits.data(), int64_t{N} * V));
  report(tag(cube, "L4 logits relative error, 3D vs serial"), logit_err);
  const double grad_err = equivalence::worst_param_error(par.params(), ser.params(), world.comm(), par.spec_of(),
                                                         grads, tag(cube, "L4 gradient relative error, 3D vs serial"));
  const float n3 = par.clip_gradients(0.0f), ns = ser.clip_gradients(0.0f);
  report(tag(cube, "L4 gradient norm relative error, 3D vs serial"), relative(n3, ns));
  MPI_REQUIRE(loss_err <= 1e-5);
  MPI_REQUIRE(logit_err <= 1e-5);
  MPI_REQUIRE(grad_err <= 1e-4);
  MPI_REQUIRE(relative(n3, ns) <= 1e-5);
}

TEST_CASE("3D five AdamW steps with dropout and clipping equal serial: losses and weights", "[tp3d]") {
  auto& world = mpi_test::world();
  comm::Grid3D cube(world.comm());
  const int q = cube.q();
  const auto cfg = config_for(q, 0.1f);
  const int B = 2 * q * q, T = 16;
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
  report(tag(cube, "L5 worst loss relative error over 5 steps, 3D vs serial"), worst);
  const double w_err = equivalence::worst_param_error(par.params(), ser.params(), world.comm(), par.spec_of(), values,
                                                      tag(cube, "L5 weight relative error, 3D vs serial"));
  MPI_REQUIRE(worst <= 1e-4);
  MPI_REQUIRE(w_err <= 1e-4);
}

TEST_CASE("3D recomputation is bitwise the run without it: loss and every gradient", "[tp3d]") {
  auto& world = mpi_test::world();
  comm::Grid3D cube(world.comm());
  const int q = cube.q();
  const auto cfg = config_for(q, 0.1f);
  const int B = 2 * q * q, T = 16;
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
  report(tag(cube, "recompute: loss and gradients bitwise equal (1 = yes)"), same ? 1.0 : 0.0);
  MPI_REQUIRE(same);
}
