// The 3D product against serial matmul: on a q×q×q world, Y = X·W and both gradients
// (dX = dY·Wᵀ, dW = Xᵀ·dY), each rank's pieces gathered into whole matrices, equal the serial
// core::matmul / matmul_backward on the full matrices (every rank computes those, they are small);
// one call sends exactly what src/tp3d/product.h says, under MPI and on a meta cube of 16³ ranks;
// sizes that do not divide are refused before any communication.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "comm/grid.h"
#include "comm/meta_communicator.h"
#include "compare.h"
#include "core/errors.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "cube_pieces.h"
#include "tp3d/product.h"

using namespace optimus;
using comm::CommOp;
using core::Trans;
using equivalence::gather_pieces;
using equivalence::Operand;
using equivalence::piece_of;
using equivalence::rel_error;
using equivalence::report;
using equivalence::sent_as_said;

namespace {

std::vector<float> normal(int64_t n, int salt) {  // the same full matrix on every rank
  return equivalence::normal_data(n, 1.0f, {5u, 0x3d00u + static_cast<uint32_t>(salt)});
}

struct Shapes {  // Y (N, M) = X (N, K) · W (K, M), the full matrices
  int N, M, K;
};

// Forward and both gradients on the cube, gathered, against the serial ones, within 1e-5.
void check_against_serial(const Shapes& s, const std::string& what) {
  auto& world = mpi_test::world();
  comm::Grid3D cube(world.comm());
  const auto ctx = core::cpu_context();
  const auto X = normal(int64_t{s.N} * s.K, 1), W = normal(int64_t{s.K} * s.M, 2);
  const auto dY = normal(int64_t{s.N} * s.M, 3);
  // Gradients start non-zero, to see that the backward accumulates.
  auto dX = normal(int64_t{s.N} * s.K, 4), dW = normal(int64_t{s.K} * s.M, 5);

  const auto X_p = piece_of(X, s.N, s.K, Operand::X, cube), W_p = piece_of(W, s.K, s.M, Operand::W, cube);
  const auto dY_p = piece_of(dY, s.N, s.M, Operand::Y, cube);
  auto dX_p = piece_of(dX, s.N, s.K, Operand::X, cube), dW_p = piece_of(dW, s.K, s.M, Operand::W, cube);
  std::vector<float> Y_p(dY_p.size(), -1.0f);  // garbage: the product overwrites
  tp3d::product_3d(ctx, cube, Y_p.data(), X_p.data(), W_p.data(), s.N, s.M, s.K);
  // Each gradient on its own (the other nullptr): both "not needed" and accumulation are exercised.
  tp3d::product_3d_backward(ctx, cube, dX_p.data(), nullptr, dY_p.data(), X_p.data(), W_p.data(), s.N, s.M, s.K);
  tp3d::product_3d_backward(ctx, cube, nullptr, dW_p.data(), dY_p.data(), X_p.data(), W_p.data(), s.N, s.M, s.K);

  std::vector<float> Y(static_cast<size_t>(s.N) * s.M);  // serial, full
  core::matmul(ctx, Y.data(), X.data(), W.data(), s.N, s.M, s.K, Trans::no, Trans::no);
  core::matmul_backward(ctx, dX.data(), dW.data(), dY.data(), X.data(), W.data(), s.N, s.M, s.K, Trans::no, Trans::no);
  const double e_y = rel_error(gather_pieces(cube, Y_p, s.N, s.M, Operand::Y), Y);
  const double e_dx = rel_error(gather_pieces(cube, dX_p, s.N, s.K, Operand::X), dX);
  const double e_dw = rel_error(gather_pieces(cube, dW_p, s.K, s.M, Operand::W), dW);
  const std::string tag = what + " q=" + std::to_string(cube.q()) + " (N, M, K) = (" + std::to_string(s.N) + ", " +
                          std::to_string(s.M) + ", " + std::to_string(s.K) + ")";
  report(tag + " Y relative error", equivalence::worst_over_ranks(e_y));
  report(tag + " dX relative error", equivalence::worst_over_ranks(e_dx));
  report(tag + " dW relative error", equivalence::worst_over_ranks(e_dw));
  MPI_REQUIRE(e_y <= 1e-5);
  MPI_REQUIRE(e_dx <= 1e-5);
  MPI_REQUIRE(e_dw <= 1e-5);
}

// Forward, then both gradients at once, on `cube` over buffers that hold the rank's pieces (on the
// meta device: that hold nothing); each pass's communication against product.h's formula. True
// when every count matches.
bool communication_as_said(const core::Context& ctx, const comm::Grid3D& cube, const Shapes& s,
                           const std::string& tag) {
  const int q = cube.q();
  const int64_t x_block = int64_t{s.N / q} * (s.K / q) * 4, w_block = int64_t{s.K / q} * (s.M / q) * 4,
                y_block = int64_t{s.N / q} * (s.M / q) * 4;  // bytes of X_ij, W_jk, Y_ik
  auto buffer = [&](Operand o) {
    const int64_t rows = o == Operand::W ? s.K : s.N, cols = o == Operand::X ? s.K : s.M;
    return core::Buffer(*ctx.ledger, core::MemoryCategory::activations, {rows / (q * q), cols / q}, ctx.device,
                        core::Fill::zero);
  };
  const core::Buffer X = buffer(Operand::X), W = buffer(Operand::W), Y = buffer(Operand::Y);
  const core::Buffer dX = buffer(Operand::X), dW = buffer(Operand::W), dY = buffer(Operand::Y);
  auto& ledger = cube.world().ledger();

  auto before = ledger.snapshot();
  tp3d::product_3d(ctx, cube, Y.data(), X.data(), W.data(), s.N, s.M, s.K);
  auto sent = ledger.since(before);
  bool ok = sent.calls() == 3;
  ok = sent_as_said(sent, "cube_depth", CommOp::all_gather, 1, x_block, "forward all_gather" + tag) && ok;
  ok = sent_as_said(sent, "cube_col", CommOp::all_gather, 1, w_block, "forward all_gather" + tag) && ok;
  ok = sent_as_said(sent, "cube_row", CommOp::reduce_scatter, 1, y_block, "forward reduce_scatter" + tag) && ok;

  before = ledger.snapshot();
  tp3d::product_3d_backward(ctx, cube, dX.data(), dW.data(), dY.data(), X.data(), W.data(), s.N, s.M, s.K);
  sent = ledger.since(before);
  ok = sent.calls() == 5 && ok;
  ok = sent_as_said(sent, "cube_row", CommOp::all_gather, 1, y_block, "backward all_gather" + tag) && ok;
  ok = sent_as_said(sent, "cube_col", CommOp::all_gather, 1, w_block, "backward all_gather" + tag) && ok;
  ok = sent_as_said(sent, "cube_depth", CommOp::reduce_scatter, 1, x_block, "backward reduce_scatter" + tag) && ok;
  ok = sent_as_said(sent, "cube_depth", CommOp::all_gather, 1, x_block, "backward all_gather" + tag) && ok;
  ok = sent_as_said(sent, "cube_col", CommOp::reduce_scatter, 1, w_block, "backward reduce_scatter" + tag) && ok;
  return ok;
}

}  // namespace

TEST_CASE("3D product equals serial matmul, forward and both gradients", "[product_3d]") {
  const int q = comm::Grid3D::side(mpi_test::world().size());
  check_against_serial({6 * q * q, 4 * q * q, 2 * q * q}, "3D product");
  // The least that divides: one row per piece of X and Y, one of W; M a multiple of q, not of q².
  check_against_serial({q * q, q * (q + 1), q * q}, "3D product, smallest shapes");
}

TEST_CASE("3D product sends what product.h says: three collectives forward, five backward", "[product_3d]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  const int q = cube.q();
  MPI_REQUIRE(
      communication_as_said(core::cpu_context(), cube, {6 * q * q, 4 * q * q, 2 * q * q}, " q=" + std::to_string(q)));
}

TEST_CASE("3D product's scratch: the gathered blocks and partial sums of one pass, none kept between passes",
          "[product_3d]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  const int q = cube.q();
  const Shapes s{6 * q * q, 4 * q * q, 2 * q * q};
  const size_t Nb = s.N / q, Mb = s.M / q, Kb = s.K / q, f = sizeof(float);
  const auto X = normal(int64_t{s.N} * s.K / (q * q * q), 1), W = normal(int64_t{s.K} * s.M / (q * q * q), 2);
  std::vector<float> Y(Nb / q * Mb), dX(X.size()), dW(W.size());
  core::MemoryLedger forward, backward;
  tp3d::product_3d(core::cpu_context(forward), cube, Y.data(), X.data(), W.data(), s.N, s.M, s.K);
  tp3d::product_3d_backward(core::cpu_context(backward), cube, dX.data(), dW.data(), Y.data(), X.data(), W.data(), s.N,
                            s.M, s.K);
  // Forward: X_ij, W_jk and the partial Y_ik at once. Backward: dY_ik, and then for dX W_jk, the
  // partial (N/q, K/q) and the reduced piece (N/q², K/q); for dW X_ij, the partial (K/q, M/q) and
  // its piece (K/q², M/q).
  const size_t forward_peak = (Nb * Kb + Kb * Mb + Nb * Mb) * f;
  const size_t backward_peak =
      (Nb * Mb + std::max(Kb * Mb + Nb * Kb + Nb / q * Kb, Nb * Kb + Kb * Mb + Kb / q * Mb)) * f;
  const auto c = core::MemoryCategory::communication;
  equivalence::report_count("forward communication scratch q=" + std::to_string(q),
                            static_cast<int64_t>(forward.peak(c)), static_cast<int64_t>(forward_peak));
  equivalence::report_count("backward communication scratch q=" + std::to_string(q),
                            static_cast<int64_t>(backward.peak(c)), static_cast<int64_t>(backward_peak));
  MPI_REQUIRE(forward.peak(c) == forward_peak);
  MPI_REQUIRE(backward.peak(c) == backward_peak);
  MPI_REQUIRE((forward.current(c) == 0 && backward.current(c) == 0));
}

TEST_CASE("3D product on a meta cube of 16³ ranks sends what product.h says", "[product_3d_meta]") {
  // One simulated rank of 4096, far from the corners: (i, j, k) = (3, 9, 14).
  const int q = 16;
  comm::CommLedger ledger;
  auto world = comm::MetaCommunicator::world(q * q * q, (3 * q + 9) * q + 14,
                                             {{"cube_row", q}, {"cube_col", q}, {"cube_depth", q}}, ledger);
  const comm::Grid3D cube(*world);
  MPI_REQUIRE((cube.i() == 3 && cube.j() == 9 && cube.k() == 14));
  core::MemoryLedger memory;
  // A GPT-3-sized linear: 2048 tokens of width 12288 into 4·12288.
  MPI_REQUIRE(communication_as_said(core::meta_context(memory), cube, {2048, 4 * 12288, 12288}, " meta q=16"));
}

TEST_CASE("3D product refuses sizes that do not divide, on every rank, before communicating", "[product_3d]") {
  const comm::Grid3D cube(mpi_test::world().comm());
  const int q = cube.q();
  if (q == 1) return;  // every size divides
  const auto ctx = core::cpu_context();
  std::vector<float> x(64);
  auto& ledger = cube.world().ledger();
  const auto before = ledger.snapshot();
  std::string message;
  try {
    tp3d::product_3d(ctx, cube, x.data(), x.data(), x.data(), q * q + q, q, q * q);
  } catch (const core::ConfigError& e) {
    message = e.what();
  }
  const int N = q * q + q;
  MPI_REQUIRE(message == "the 3D product needs N (the rows of X and Y) = " + std::to_string(N) +
                             " to be a positive multiple of q² = " + std::to_string(q * q) +
                             ", since they are cut into q² row pieces; pad the matrices or choose another cube");
  MPI_REQUIRE_THROWS_AS(tp3d::product_3d(ctx, cube, x.data(), x.data(), x.data(), q * q, q, q), core::ConfigError);
  MPI_REQUIRE_THROWS_AS(tp3d::product_3d(ctx, cube, x.data(), x.data(), x.data(), q * q, q + 1, q * q),
                        core::ConfigError);
  MPI_REQUIRE_THROWS_AS(
      tp3d::product_3d_backward(ctx, cube, x.data(), x.data(), x.data(), x.data(), x.data(), q * q, 0, q * q),
      core::ConfigError);
  MPI_REQUIRE(ledger.since(before).calls() == 0);
}
