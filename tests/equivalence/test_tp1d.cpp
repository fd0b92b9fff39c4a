// Stage 2 against stage 1 (chapter 2): the Megatron 1D GPT on p ranks (the world)
// equals the serial GPT — parameters bitwise at initialisation (L3), loss and every gradient after
// one step with dropout on (L4), the loss trajectory and weights over five AdamW steps (L5) — and
// each parallel layer equals its serial layer (L2). L3 to L5 run twice: as chapter 2 built it, and
// with sequence parallelism (chapter 5), whose communication has its own formula below. Every rank
// also runs the serial model, which is small, so the comparison needs no file.
#include <catch2/catch.hpp>

#include <vector>

#include "comm/grid.h"
#include "compare.h"
#include "core/ops.h"
#include "model/vocab_parallel_loss.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp1d/layers.h"
#include "train/optimizer.h"

using namespace optimus;
using equivalence::copy;
using equivalence::make_batch;
using equivalence::rel_error;
using equivalence::report;

namespace {

model::GPTConfig small_config(float dropout) {
  model::GPTConfig c;
  c.n_layer = 2, c.n_embd = 32, c.n_head = 4, c.n_positions = 16, c.vocab_size = 256, c.dropout = dropout;
  return c;
}

std::vector<float> ramp(int64_t n, float scale, int salt) {  // deterministic test data
  return equivalence::normal_data(n, scale, {3u, 0x7200u + static_cast<uint32_t>(salt)});
}

std::string tag(const std::string& what, bool sequence_parallel = false) {
  return what + " p=" + std::to_string(mpi_test::world().size()) + (sequence_parallel ? " sequence-parallel" : "");
}

// Chapter 2's 1D, or chapter 5's 1D with sequence parallelism; both run every L3-L5 test.
model::StageOptions layout_1d(bool sequence_parallel) {
  return {.recompute = model::Recompute::none, .sequence_parallel = sequence_parallel};
}

}  // namespace

TEST_CASE("1D initial parameters, gathered, are bitwise equal to serial", "[tp1d]") {
  auto& world = mpi_test::world();
  comm::Grid1D grid(world.comm());
  const auto cfg = small_config(0.0f);
  const bool sp = GENERATE(false, true);
  tp1d::GPT par(cfg, core::cpu_context(), 42, grid, layout_1d(sp));
  serial::GPT ser(cfg, core::cpu_context(), 42);
  bool all_equal = true;
  for (size_t i = 0; i < par.params().tensors.size(); ++i) {
    const auto& t = par.params().tensors[i];
    const auto full = model::gather_canonical(t, t.value.data(), world.comm(), par.spec_of());
    const auto& s = ser.params().tensors[i];
    all_equal = all_equal && full == copy(s.value.data(), s.value.numel());
  }
  report(tag("L3 initial parameters bitwise equal (1 = yes)", sp), all_equal ? 1.0 : 0.0);
  MPI_REQUIRE(all_equal);
}

TEST_CASE("1D one step with dropout equals serial: loss, logits and every gradient", "[tp1d]") {
  auto& world = mpi_test::world();
  comm::Grid1D grid(world.comm());
  const auto cfg = small_config(0.1f);
  const int B = 4, T = 16, N = B * T;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 1);
  const bool sp = GENERATE(false, true);
  tp1d::GPT par(cfg, core::cpu_context(), 7, grid, layout_1d(sp));
  serial::GPT ser(cfg, core::cpu_context(), 7);
  par.params().zero_grads(), ser.params().zero_grads();
  const float lp = par.forward(in.data(), tg.data(), B, T, 3), ls = ser.forward(in.data(), tg.data(), B, T, 3);
  par.backward(), ser.backward();

  const double loss_err = std::abs(static_cast<double>(lp) - ls) / std::abs(static_cast<double>(ls));
  report(tag("L4 loss relative error", sp), loss_err);
  const auto logits =
      equivalence::gather_columns(world.comm(), par.activations().logits.data(), N, cfg.vocab_size / world.size());
  const double logit_err = rel_error(logits, copy(ser.activations().logits.data(), int64_t{N} * cfg.vocab_size));
  report(tag("L4 logits relative error", sp), logit_err);
  const double grad_err = equivalence::worst_param_error(
      par.params(), ser.params(), world.comm(), par.spec_of(),
      [](const model::ParamTensor& t) { return t.grad.data(); }, tag("L4 gradient relative error", sp));
  const float norm_p = par.clip_gradients(0.0f), norm_s = ser.clip_gradients(0.0f);
  report(tag("L4 gradient norm relative error", sp), std::abs(norm_p - norm_s) / norm_s);
  MPI_REQUIRE(loss_err <= 1e-5);
  MPI_REQUIRE(logit_err <= 1e-5);
  MPI_REQUIRE(grad_err <= 1e-4);
  MPI_REQUIRE(std::abs(norm_p - norm_s) / norm_s <= 1e-5);
}

TEST_CASE("1D five AdamW steps with dropout and clipping equal serial: losses and weights", "[tp1d]") {
  auto& world = mpi_test::world();
  comm::Grid1D grid(world.comm());
  const auto cfg = small_config(0.1f);
  const int B = 4, T = 16;
  const bool sp = GENERATE(false, true);
  tp1d::GPT par(cfg, core::cpu_context(), 5, grid, layout_1d(sp));
  serial::GPT ser(cfg, core::cpu_context(), 5);
  train::AdamWOptions ao;
  train::AdamW opt_p(par.params(), core::cpu_context(), ao), opt_s(ser.params(), core::cpu_context(), ao);
  double worst_loss = 0.0;
  std::vector<int> in, tg;
  for (int step = 0; step < 5; ++step) {
    make_batch(in, tg, B, T, step);
    par.params().zero_grads(), ser.params().zero_grads();
    const float lp = par.forward(in.data(), tg.data(), B, T, static_cast<uint32_t>(step));
    const float ls = ser.forward(in.data(), tg.data(), B, T, static_cast<uint32_t>(step));
    worst_loss =
        equivalence::worse(worst_loss, std::abs(static_cast<double>(lp) - ls) / std::abs(static_cast<double>(ls)));
    par.backward(), ser.backward();
    par.clip_gradients(0.5f), ser.clip_gradients(0.5f);
    opt_p.update(par.params(), 3e-3f), opt_s.update(ser.params(), 3e-3f);
  }
  report(tag("L5 worst loss relative error over 5 steps", sp), worst_loss);
  const double w_err = equivalence::worst_param_error(
      par.params(), ser.params(), world.comm(), par.spec_of(),
      [](const model::ParamTensor& t) { return t.value.data(); }, tag("L5 weight relative error after 5 steps", sp));
  MPI_REQUIRE(worst_loss <= 1e-4);
  MPI_REQUIRE(w_err <= 1e-4);
}

TEST_CASE("1D column- and row-parallel linears equal the serial linear (L2)", "[tp1d]") {
  auto& world = mpi_test::world();
  const int p = world.size(), r = world.rank(), N = 6, C = 8, OC = 12;
  const auto ctx = core::cpu_context();
  const auto x = ramp(int64_t{N} * C, 1.0f, 1), w = ramp(int64_t{C} * OC, 0.3f, 2), b = ramp(OC, 0.1f, 3),
             dy = ramp(int64_t{N} * OC, 1.0f, 4);
  // Serial reference: y = x·w + b and its gradients.
  std::vector<float> y(static_cast<size_t>(N) * OC), dx(static_cast<size_t>(N) * C, 0.0f), dw(w.size(), 0.0f),
      db(b.size(), 0.0f);
  core::linear_forward(ctx, y.data(), x.data(), w.data(), b.data(), N, C, OC);
  core::linear_backward(ctx, {.dinp = dx.data(), .dweight = dw.data(), .dbias = db.data()}, dy.data(), x.data(),
                        w.data(), N, C, OC);

  // Column-parallel: my OC/p columns of w, b, y and dy.
  const int OCp = OC / p;
  auto cols = [&](const std::vector<float>& m, int rows, int width, int c0, int count) {
    std::vector<float> out;
    for (int i = 0; i < rows; ++i)
      out.insert(out.end(), m.begin() + i * width + c0, m.begin() + i * width + c0 + count);
    return out;
  };
  const auto w_c = cols(w, C, OC, r * OCp, OCp), b_c = cols(b, 1, OC, r * OCp, OCp),
             dy_c = cols(dy, N, OC, r * OCp, OCp);
  std::vector<float> y_c(static_cast<size_t>(N) * OCp), dx_c(static_cast<size_t>(N) * C, 0.0f), dw_c(w_c.size(), 0.0f),
      db_c(b_c.size(), 0.0f);
  tp1d::Region region(world.comm(), /*sequence_parallel=*/false);
  tp1d::column_parallel_linear_forward(ctx, region, y_c.data(), x.data(), w_c.data(), b_c.data(), N, C, OC);
  tp1d::column_parallel_linear_backward(ctx, region,
                                        {.dinp = dx_c.data(), .dweight = dw_c.data(), .dbias = db_c.data()},
                                        dy_c.data(), x.data(), w_c.data(), N, C, OC);
  const double col_y = rel_error(y_c, cols(y, N, OC, r * OCp, OCp)), col_dx = rel_error(dx_c, dx),
               col_dw = rel_error(dw_c, cols(dw, C, OC, r * OCp, OCp)),
               col_db = rel_error(db_c, cols(db, 1, OC, r * OCp, OCp));

  // Row-parallel: my C/p rows of w, my C/p columns of x; the bias whole.
  const int Cp = C / p;
  const auto x_r = cols(x, N, C, r * Cp, Cp);
  const std::vector<float> w_r(w.begin() + r * Cp * OC, w.begin() + (r + 1) * Cp * OC);
  std::vector<float> y_r(static_cast<size_t>(N) * OC), dx_r(x_r.size(), 0.0f), dw_r(w_r.size(), 0.0f),
      db_r(b.size(), 0.0f);
  tp1d::row_parallel_linear_forward(ctx, region, y_r.data(), x_r.data(), w_r.data(), b.data(), N, C, OC);
  tp1d::row_parallel_linear_backward(ctx, region, {.dinp = dx_r.data(), .dweight = dw_r.data(), .dbias = db_r.data()},
                                     dy.data(), x_r.data(), w_r.data(), N, C, OC);
  const double row_y = rel_error(y_r, y), row_dx = rel_error(dx_r, cols(dx, N, C, r * Cp, Cp)),
               row_dw = rel_error(dw_r, std::vector<float>(dw.begin() + r * Cp * OC, dw.begin() + (r + 1) * Cp * OC)),
               row_db = rel_error(db_r, db);
  const double worst = equivalence::worst_of({col_y, col_dx, col_dw, col_db, row_y, row_dx, row_dw, row_db});
  report(tag("L2 column-parallel linear: worst of y, dx, dw, db"),
         equivalence::worst_of({col_y, col_dx, col_dw, col_db}));
  report(tag("L2 row-parallel linear: worst of y, dx, dw, db"), equivalence::worst_of({row_y, row_dx, row_dw, row_db}));
  MPI_REQUIRE(worst <= 1e-5);
}

TEST_CASE("1D vocab-parallel embedding and cross-entropy equal the serial ones (L2)", "[tp1d]") {
  auto& world = mpi_test::world();
  const int p = world.size(), r = world.rank(), N = 10, C = 6, V = 16, Vp = V / p, v0 = r * Vp;
  const auto ctx = core::cpu_context();
  std::vector<int> tokens(N);
  for (int n = 0; n < N; ++n) tokens[static_cast<size_t>(n)] = (n * 7 + 3) % V;
  const auto wte = ramp(int64_t{V} * C, 0.5f, 5), dout = ramp(int64_t{N} * C, 1.0f, 6);
  std::vector<float> e(static_cast<size_t>(N) * C), dwte(wte.size(), 0.0f);
  core::embedding_forward(ctx, e.data(), tokens.data(), wte.data(), N, C, 0, V);
  core::embedding_backward(ctx, dwte.data(), dout.data(), tokens.data(), N, C, 0, V);
  const std::vector<float> wte_p(wte.begin() + v0 * C, wte.begin() + (v0 + Vp) * C);
  std::vector<float> e_p(e.size()), dwte_p(wte_p.size(), 0.0f);
  tp1d::vocab_parallel_embedding_forward(ctx, world.comm(), e_p.data(), tokens.data(), wte_p.data(), N, C, V);
  tp1d::vocab_parallel_embedding_backward(ctx, world.comm(), dwte_p.data(), dout.data(), tokens.data(), N, C, V);
  const double emb = equivalence::worse(
      rel_error(e_p, e), rel_error(dwte_p, std::vector<float>(dwte.begin() + v0 * C, dwte.begin() + (v0 + Vp) * C)));
  report(tag("L2 vocab-parallel embedding: worst of out, dwte"), emb);

  const auto logits = ramp(int64_t{N} * V, 2.0f, 7);
  std::vector<float> losses(N), mx(N), se(N), dlog(logits.size(), 0.0f);
  core::crossentropy_forward(ctx, losses.data(), mx.data(), se.data(), logits.data(), tokens.data(), N, V, V);
  core::crossentropy_backward(ctx, dlog.data(), logits.data(), mx.data(), se.data(), tokens.data(), 1.0f / N, N, V, 0,
                              V);
  std::vector<float> lp;
  for (int n = 0; n < N; ++n) lp.insert(lp.end(), logits.begin() + n * V + v0, logits.begin() + n * V + v0 + Vp);
  std::vector<float> losses_p(N), mx_p(N), se_p(N), tl_p(N), dlog_p(lp.size(), 0.0f), dlog_ref;
  model::vocab_parallel_cross_entropy_forward(ctx, world.comm(), losses_p.data(), mx_p.data(), se_p.data(), tl_p.data(),
                                              lp.data(), tokens.data(), N, Vp, v0, V);
  core::crossentropy_backward(ctx, dlog_p.data(), lp.data(), mx_p.data(), se_p.data(), tokens.data(), 1.0f / N, N, Vp,
                              v0, V);
  for (int n = 0; n < N; ++n)
    dlog_ref.insert(dlog_ref.end(), dlog.begin() + n * V + v0, dlog.begin() + n * V + v0 + Vp);
  const double ce = equivalence::worse(rel_error(losses_p, losses), rel_error(dlog_p, dlog_ref));
  report(tag("L2 vocab-parallel cross-entropy: worst of losses, dlogits"), ce);
  MPI_REQUIRE(emb <= 1e-5);
  MPI_REQUIRE(ce <= 1e-5);
}

TEST_CASE("1D communication per training step equals the chapter's formula", "[tp1d]") {
  // Chapter 2, "Communication per step": with N = B·T, per rank and step, all on the tensor-parallel
  // group, all all-reduces:
  //   forward:  1 (embedding g) + 2L (attention and MLP g) of N·C floats, 3 of N floats (loss);
  //   backward: 1 (LM head f) + 2L (attention and MLP f) of N·C floats;
  //   clipping: 1 of one double (the squared gradient norm).
  //   calls = 4L + 6;  bytes = 4·N·C·(4L + 2) + 4·3N + 8.
  auto& world = mpi_test::world();
  comm::Grid1D grid(world.comm());
  const auto cfg = small_config(0.1f);
  const int B = 4, T = 16, N = B * T, L = cfg.n_layer, C = cfg.n_embd;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 2);
  tp1d::GPT par(cfg, core::cpu_context(), 1, grid);
  const auto step = equivalence::step_communication(par, world.comm(), in, tg, B, T);
  const int64_t want_calls = 4 * L + 6;
  const int64_t want_bytes = int64_t{4} * N * C * (4 * L + 2) + int64_t{4} * 3 * N + 8;
  const std::string name = world.comm().name();
  equivalence::report_count(tag("ledger: all-reduce calls per step"), step.calls(name, comm::CommOp::all_reduce),
                            want_calls);
  equivalence::report_count(tag("ledger: all-reduce bytes per step"), step.bytes(name, comm::CommOp::all_reduce),
                            want_bytes);
  MPI_REQUIRE(step.calls(name, comm::CommOp::all_reduce) == want_calls);
  MPI_REQUIRE(step.bytes(name, comm::CommOp::all_reduce) == want_bytes);
  MPI_REQUIRE(step.calls() == want_calls);  // and nothing but all-reduces
  MPI_REQUIRE(step.bytes() == want_bytes);
}

TEST_CASE("1D with sequence parallelism: communication per training step equals the chapter's formula", "[tp1d]") {
  // Chapter 5, "Sequence parallelism": with N = B·T, per rank and step, all on the tensor-parallel
  // group. Each f becomes an all-gather and each g a reduce-scatter of N·C floats (the ledger counts
  // the whole gathered or reduced size), in both directions, and a column-parallel linear's
  // backward gathers its input again (it was kept as this rank's rows only):
  //   all-gather:     forward 2L + 1 (ln_1, ln_2, ln_f into the parallel regions);
  //                   backward 2L (g_sp of the two row-parallel outputs' gradients) + 2L + 1 (the
  //                   inputs again, ln_f's too) + 1 (the embedding's output gradient): 6L + 3 calls;
  //   reduce-scatter: forward 1 (embedding) + 2L (row-parallel outputs); backward 1 (LM head) + 2L:
  //                   4L + 2 calls;
  //   all-reduce:     3 of N floats (loss), 1 of the LayerNorms' gradients (2·(2L + 1)·C floats),
  //                   1 of one double (the squared gradient norm).
  auto& world = mpi_test::world();
  comm::Grid1D grid(world.comm());
  const auto cfg = small_config(0.1f);
  const int B = 4, T = 16, L = cfg.n_layer, C = cfg.n_embd;
  const int64_t N = int64_t{B} * T, f = 4;
  std::vector<int> in, tg;
  make_batch(in, tg, B, T, 2);
  tp1d::GPT par(cfg, core::cpu_context(), 1, grid, layout_1d(true));
  const auto step = equivalence::step_communication(par, world.comm(), in, tg, B, T);
  const std::string name = world.comm().name();
  struct Want {
    const char* what;
    comm::CommOp op;
    int64_t calls, bytes;
  };
  const Want wants[] = {
      {"all-gather", comm::CommOp::all_gather, 6 * L + 3, f * (6 * L + 3) * N * C},
      {"reduce-scatter", comm::CommOp::reduce_scatter, 4 * L + 2, f * (4 * L + 2) * N * C},
      {"all-reduce", comm::CommOp::all_reduce, 5, f * (3 * N + 2 * (2 * L + 1) * C) + 8},
  };
  bool all_equal = true;
  int64_t want_calls = 0, want_bytes = 0;
  for (const Want& w : wants) {
    equivalence::report_count(tag(std::string("ledger: ") + w.what + " calls per step", true), step.calls(name, w.op),
                              w.calls);
    equivalence::report_count(tag(std::string("ledger: ") + w.what + " bytes per step", true), step.bytes(name, w.op),
                              w.bytes);
    all_equal = all_equal && step.calls(name, w.op) == w.calls && step.bytes(name, w.op) == w.bytes;
    want_calls += w.calls, want_bytes += w.bytes;
  }
  MPI_REQUIRE(all_equal);
  MPI_REQUIRE(step.calls() == want_calls);  // and nothing else
  MPI_REQUIRE(step.bytes() == want_bytes);
}
