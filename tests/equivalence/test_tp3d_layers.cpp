// The first 3D layers against the serial ops (L2), on a q×q×q world, in both orientations of
// tp3d/product.h: LayerNorm, the linear layer, and an MLP whose two linears alternate the
// orientation. Every rank computes the serial result on the full tensors (they are small); the
// pieces are gathered into full tensors and compared; 1-D parameter gradients, of which a layer
// adds only its rows' share, are summed here over the q² ranks holding the same block, as the
// model will do once per step. Each call's collectives are checked against src/tp3d/layers.h, and
// sizes that do not divide are refused before any communication.
// Shapes: N = 2q² rows, C = 3q², OC = 3q, F = 4C (blocks of inp, w and out of three sizes).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "comm/grid.h"
#include "compare.h"
#include "core/errors.h"
#include "core/ops.h"
#include "cube_pieces.h"
#include "serial_layers.h"
#include "tp3d/layers.h"

using namespace optimus;
using comm::CommOp;
using equivalence::gather_pieces;
using equivalence::Operand;
using equivalence::part;
using equivalence::piece_of;
using equivalence::piece_position;
using equivalence::sent_as_said;
using equivalence::summed_over;
using tp3d::Orientation;

namespace {

std::vector<float> normal(int64_t n, float scale, int salt) {  // the same full tensor on every rank
  return equivalence::normal_data(n, scale, {9u, 0x3e00u + static_cast<uint32_t>(salt)});
}

const char* name(Orientation o) {
  return o == Orientation::standard ? "standard" : "exchanged";
}

// Reports one comparison under "3D <what> <orientation> q=<q>" and returns this rank's error.
double check(const comm::Grid3D& cube, Orientation o, const std::string& what, const std::vector<float>& got,
             const std::vector<float>& want) {
  const double e = equivalence::rel_error(got, want);
  equivalence::report("L2 3D " + what + " " + name(o) + " q=" + std::to_string(cube.q()),
                      equivalence::worst_over_ranks(e));
  return e;
}

struct Sizes {
  int q, N, C, OC, F;
  explicit Sizes(int q_) : q(q_), N(2 * q_ * q_), C(3 * q_ * q_), OC(3 * q_), F(12 * q_ * q_) {}
};

// The ledger names of the lines a product in orientation o sums along (`in`) and splits its output
// along (`out`).
std::string in_name(Orientation o) {
  return o == Orientation::standard ? "cube_row" : "cube_depth";
}
std::string out_name(Orientation o) {
  return o == Orientation::standard ? "cube_depth" : "cube_row";
}

// LayerNorm in orientation o against serial, and its collectives against layers.h. True when all agree.
bool layernorm_as_serial(const comm::Grid3D& cube, Orientation o) {
  const auto ctx = core::cpu_context();
  const Sizes s(cube.q());
  const int q = s.q, N = s.N, C = s.C, Nr = N / (q * q);
  const float eps = 0.25f;  // not GPT-2's 1e-5: the 3D pieces must pass the caller's eps on
  const auto inp = normal(int64_t{N} * C, 2.0f, 1), w = normal(C, 1.0f, 2), b = normal(C, 1.0f, 3);
  const auto dout = normal(int64_t{N} * C, 1.0f, 4);
  const auto serial = equivalence::serial_layernorm(inp, w, b, dout, N, C, eps);

  // My rows are X's row piece, my columns X's column block: that block of the weight and bias.
  const auto [rows, cols] = piece_position(Operand::X, o, q, cube.i(), cube.j(), cube.k());
  const auto inp_p = piece_of(inp, N, C, Operand::X, cube, o), dout_p = piece_of(dout, N, C, Operand::X, cube, o);
  const auto w_p = part(w, q, cols), b_p = part(b, q, cols);
  std::vector<float> out_p(inp_p.size()), mean_p(Nr), rstd_p(Nr), dinp_p(inp_p.size(), 0.0f);
  std::vector<float> dw_p(w_p.size(), 0.0f), db_p(b_p.size(), 0.0f);
  auto& ledger = cube.world().ledger();
  auto before = ledger.snapshot();
  tp3d::layernorm_3d_forward(ctx, cube, out_p.data(), mean_p.data(), rstd_p.data(), inp_p.data(), w_p.data(),
                             b_p.data(), N, C, eps, o);
  const auto forward = ledger.since(before);
  before = ledger.snapshot();
  tp3d::layernorm_3d_backward(ctx, cube, {.dinp = dinp_p.data(), .dweight = dw_p.data(), .dbias = db_p.data()},
                              dout_p.data(), inp_p.data(), w_p.data(), mean_p.data(), rstd_p.data(), N, C, o);
  const auto backward = ledger.since(before);

  const auto line = tp3d::lines(cube, o);  // the weight's block is held along `out` and `rows`
  const double e = equivalence::worst_of(
      {check(cube, o, "LayerNorm out", gather_pieces(cube, out_p, N, C, Operand::X, o), serial.out),
       check(cube, o, "LayerNorm mean", mean_p, part(serial.mean, q * q, rows)),
       check(cube, o, "LayerNorm rstd", rstd_p, part(serial.rstd, q * q, rows)),
       check(cube, o, "LayerNorm dinp", gather_pieces(cube, dinp_p, N, C, Operand::X, o), serial.dinp),
       check(cube, o, "LayerNorm dweight (summed)", summed_over(line.out, line.rows, dw_p),
             part(serial.dweight, q, cols)),
       check(cube, o, "LayerNorm dbias (summed)", summed_over(line.out, line.rows, db_p),
             part(serial.dbias, q, cols))});
  const std::string tag = std::string(" LayerNorm ") + name(o) + " q=" + std::to_string(q);
  bool ok = forward.calls() == 2 && backward.calls() == 1;
  ok = sent_as_said(forward, in_name(o), CommOp::all_reduce, 2, 2 * int64_t{Nr} * 4, "forward" + tag) && ok;
  ok = sent_as_said(backward, in_name(o), CommOp::all_reduce, 1, 2 * int64_t{Nr} * 4, "backward" + tag) && ok;
  return e <= 1e-5 && ok;
}

// The linear layer in orientation o against serial, and its collectives against layers.h (the
// product's, product.h). True when all agree.
bool linear_as_serial(const comm::Grid3D& cube, Orientation o) {
  const auto ctx = core::cpu_context();
  const Sizes s(cube.q());
  const int q = s.q, N = s.N, C = s.C, OC = s.OC;
  const auto inp = normal(int64_t{N} * C, 1.0f, 5), w = normal(int64_t{C} * OC, 0.5f, 6), b = normal(OC, 1.0f, 7);
  const auto dout = normal(int64_t{N} * OC, 1.0f, 8);
  const auto serial = equivalence::serial_linear(inp, w, b, dout, N, C, OC);

  // The bias block is out's column block.
  const int cols = piece_position(Operand::Y, o, q, cube.i(), cube.j(), cube.k()).second;
  const auto inp_p = piece_of(inp, N, C, Operand::X, cube, o), w_p = piece_of(w, C, OC, Operand::W, cube, o),
             dout_p = piece_of(dout, N, OC, Operand::Y, cube, o), b_p = part(b, q, cols);
  std::vector<float> out_p(dout_p.size(), -1.0f);  // garbage: the forward overwrites
  std::vector<float> dinp_p(inp_p.size(), 0.0f), dw_p(w_p.size(), 0.0f), db_p(b_p.size(), 0.0f);
  auto& ledger = cube.world().ledger();
  auto before = ledger.snapshot();
  tp3d::linear_3d_forward(ctx, cube, out_p.data(), inp_p.data(), w_p.data(), b_p.data(), N, C, OC, o);
  const auto forward = ledger.since(before);
  before = ledger.snapshot();
  tp3d::linear_3d_backward(ctx, cube, {.dinp = dinp_p.data(), .dweight = dw_p.data(), .dbias = db_p.data()},
                           dout_p.data(), inp_p.data(), w_p.data(), N, C, OC, o);
  const auto backward = ledger.since(before);

  const auto line = tp3d::lines(cube, o);  // the bias block is held along `in` and `rows`
  const double e = equivalence::worst_of(
      {check(cube, o, "linear out", gather_pieces(cube, out_p, N, OC, Operand::Y, o), serial.out),
       check(cube, o, "linear dinp", gather_pieces(cube, dinp_p, N, C, Operand::X, o), serial.dinp),
       check(cube, o, "linear dW", gather_pieces(cube, dw_p, C, OC, Operand::W, o), serial.dweight),
       check(cube, o, "linear dbias (summed)", summed_over(line.in, line.rows, db_p), part(serial.dbias, q, cols))});
  const int64_t x_block = int64_t{N / q} * (C / q) * 4, w_block = int64_t{C / q} * (OC / q) * 4,
                y_block = int64_t{N / q} * (OC / q) * 4;  // bytes of the blocks of inp, w and out
  const std::string tag = std::string(" linear ") + name(o) + " q=" + std::to_string(q);
  bool ok = forward.calls() == 3 && backward.calls() == 5;
  ok = sent_as_said(forward, out_name(o), CommOp::all_gather, 1, x_block, "forward" + tag) && ok;
  ok = sent_as_said(forward, "cube_col", CommOp::all_gather, 1, w_block, "forward" + tag) && ok;
  ok = sent_as_said(forward, in_name(o), CommOp::reduce_scatter, 1, y_block, "forward" + tag) && ok;
  ok = sent_as_said(backward, in_name(o), CommOp::all_gather, 1, y_block, "backward" + tag) && ok;
  ok = sent_as_said(backward, "cube_col", CommOp::all_gather, 1, w_block, "backward" + tag) && ok;
  ok = sent_as_said(backward, out_name(o), CommOp::reduce_scatter, 1, x_block, "backward" + tag) && ok;
  ok = sent_as_said(backward, out_name(o), CommOp::all_gather, 1, x_block, "backward" + tag) && ok;
  ok = sent_as_said(backward, "cube_col", CommOp::reduce_scatter, 1, w_block, "backward" + tag) && ok;
  return e <= 1e-5 && ok;
}

}  // namespace

TEST_CASE("3D LayerNorm equals serial LayerNorm in both orientations, its statistics all-reduced along one line",
          "[tp3d_layers]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  MPI_REQUIRE(layernorm_as_serial(cube, Orientation::standard));
  MPI_REQUIRE(layernorm_as_serial(cube, Orientation::exchanged));
}

TEST_CASE("3D linear equals the serial linear in both orientations: out, dinp, dW, dbias; the product's collectives",
          "[tp3d_layers]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  MPI_REQUIRE(linear_as_serial(cube, Orientation::standard));
  MPI_REQUIRE(linear_as_serial(cube, Orientation::exchanged));
}

TEST_CASE("3D MLP (c_fc standard, GELU on the piece, c_proj exchanged) equals the serial MLP, out laid out as inp",
          "[tp3d_layers]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  const auto ctx = core::cpu_context();
  const Sizes s(cube.q());
  const int q = s.q, N = s.N, C = s.C, F = s.F;
  const auto x = normal(int64_t{N} * C, 1.0f, 30), w_fc = normal(int64_t{C} * F, 0.4f, 31), b_fc = normal(F, 0.2f, 32),
             w_proj = normal(int64_t{F} * C, 0.2f, 33), b_proj = normal(C, 0.2f, 34),
             dy = normal(int64_t{N} * C, 1.0f, 35);
  const auto serial = equivalence::serial_mlp(x, w_fc, b_fc, w_proj, b_proj, dy, N, C, F);

  // c_fc reads x as a standard product's X and writes h as its Y, which c_proj, exchanged, reads as
  // its X; c_proj's Y is laid out as a standard X again: x's layout. Each bias is the block of its
  // linear's output columns.
  const auto std_ = Orientation::standard, exch = Orientation::exchanged;
  const int fc_cols = piece_position(Operand::Y, std_, q, cube.i(), cube.j(), cube.k()).second,
            proj_cols = piece_position(Operand::Y, exch, q, cube.i(), cube.j(), cube.k()).second;
  const auto x_p = piece_of(x, N, C, Operand::X, cube, std_), dy_p = piece_of(dy, N, C, Operand::X, cube, std_);
  const auto wf = piece_of(w_fc, C, F, Operand::W, cube, std_), wp = piece_of(w_proj, F, C, Operand::W, cube, exch);
  const auto bf = part(b_fc, q, fc_cols), bp = part(b_proj, q, proj_cols);
  const size_t h_piece = static_cast<size_t>(N / (q * q)) * (F / q);  // (N/q², F/q)
  std::vector<float> h_p(h_piece), hg_p(h_piece), y_p(x_p.size());
  tp3d::linear_3d_forward(ctx, cube, h_p.data(), x_p.data(), wf.data(), bf.data(), N, C, F, std_);
  core::gelu_forward(ctx, hg_p.data(), h_p.data(), static_cast<int64_t>(h_piece));
  tp3d::linear_3d_forward(ctx, cube, y_p.data(), hg_p.data(), wp.data(), bp.data(), N, F, C, exch);
  std::vector<float> dhg_p(h_piece, 0.0f), dh_p(h_piece, 0.0f), dx_p(x_p.size(), 0.0f), dwf(wf.size(), 0.0f),
      dbf(bf.size(), 0.0f), dwp(wp.size(), 0.0f), dbp(bp.size(), 0.0f);
  tp3d::linear_3d_backward(ctx, cube, {.dinp = dhg_p.data(), .dweight = dwp.data(), .dbias = dbp.data()}, dy_p.data(),
                           hg_p.data(), wp.data(), N, F, C, exch);
  core::gelu_backward(ctx, dh_p.data(), h_p.data(), dhg_p.data(), static_cast<int64_t>(h_piece));
  tp3d::linear_3d_backward(ctx, cube, {.dinp = dx_p.data(), .dweight = dwf.data(), .dbias = dbf.data()}, dh_p.data(),
                           x_p.data(), wf.data(), N, C, F, std_);

  const auto fc = tp3d::lines(cube, std_), proj = tp3d::lines(cube, exch);  // each bias is held along `in` and `rows`
  const double e = equivalence::worst_of(
      {check(cube, std_, "MLP out (as x)", gather_pieces(cube, y_p, N, C, Operand::X, std_), serial.out),
       check(cube, std_, "MLP dinp (as x)", gather_pieces(cube, dx_p, N, C, Operand::X, std_), serial.dinp),
       check(cube, std_, "MLP d c_fc.weight", gather_pieces(cube, dwf, C, F, Operand::W, std_), serial.dw_fc),
       check(cube, std_, "MLP d c_fc.bias (summed)", summed_over(fc.in, fc.rows, dbf), part(serial.db_fc, q, fc_cols)),
       check(cube, exch, "MLP d c_proj.weight", gather_pieces(cube, dwp, F, C, Operand::W, exch), serial.dw_proj),
       check(cube, exch, "MLP d c_proj.bias (summed)", summed_over(proj.in, proj.rows, dbp),
             part(serial.db_proj, q, proj_cols))});
  MPI_REQUIRE(e <= 1e-5);
}

TEST_CASE("3D LayerNorm and linear refuse sizes that do not divide, on every rank, before communicating",
          "[tp3d_layers]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  const int q = cube.q();
  if (q == 1) return;  // every size divides
  const auto ctx = core::cpu_context();
  std::vector<float> x(256);
  float* p = x.data();
  auto& ledger = cube.world().ledger();
  const auto before = ledger.snapshot();
  std::string message;
  try {
    tp3d::layernorm_3d_forward(ctx, cube, p, p, p, p, p, p, q * q, q + 1, 1e-5f);
  } catch (const core::ConfigError& e) {
    message = e.what();
  }
  MPI_REQUIRE(message == "3D LayerNorm needs C (the columns) = " + std::to_string(q + 1) +
                             " to be a positive multiple of q = " + std::to_string(q) +
                             ", since they are cut into q column blocks; pad the matrices or choose another cube");
  MPI_REQUIRE_THROWS_AS(
      tp3d::layernorm_3d_backward(ctx, cube, {.dinp = p}, p, p, p, p, p, q, q, Orientation::exchanged),
      core::ConfigError);
  MPI_REQUIRE_THROWS_AS(tp3d::linear_3d_forward(ctx, cube, p, p, p, p, q * q, q, q), core::ConfigError);
  MPI_REQUIRE_THROWS_AS(tp3d::linear_3d_backward(ctx, cube, {.dbias = p}, p, p, p, q * q, q * q, q + 1),
                        core::ConfigError);
  MPI_REQUIRE(ledger.since(before).calls() == 0);
}
