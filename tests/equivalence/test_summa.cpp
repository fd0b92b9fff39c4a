// The SUMMA products against serial matmul (chapter 3): on a q×q world, C = A·B,
// A·Bᵀ and Aᵀ·B, and both gradients of each, equal the serial core::matmul / matmul_backward on the
// full matrices (every rank computes those, they are small); and one call sends exactly what the
// header of src/tp2d/summa.h says. Shapes are non-square: M = 6q, N = 4q, K = 10q. With the grid's
// overlap (chapter 6) every product and gradient is bitwise the same, sent by the same calls, with
// twice the communication scratch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "comm/grid.h"
#include "compare.h"
#include "core/ops.h"
#include "tp2d/summa.h"

using namespace optimus;
using core::Trans;
using equivalence::rel_error;
using equivalence::report;

namespace {

std::vector<float> normal(int64_t n, int salt) {  // the same full matrix on every rank
  return equivalence::normal_data(n, 1.0f, {5u, 0x5a00u + static_cast<uint32_t>(salt)});
}

struct Shapes {  // stored shapes (rows, cols) of A, B, C for one product
  int a_rows, a_cols, b_rows, b_cols;
  Trans ta, tb;
};

enum class Product { ab, abt, atb };

const char* name_of(Product p) {
  return p == Product::ab ? "ab" : p == Product::abt ? "abt" : "atb";
}

Shapes shapes_of(Product p, int M, int N, int K) {
  switch (p) {
    case Product::ab:
      return {M, K, K, N, Trans::no, Trans::no};
    case Product::abt:
      return {M, K, N, K, Trans::no, Trans::yes};
    case Product::atb:
      return {K, M, K, N, Trans::yes, Trans::no};
  }
  return {};
}

void forward(Product p, const core::Context& ctx, const comm::Grid2D& g, float* C, const float* A, const float* B,
             int M, int N, int K) {
  switch (p) {
    case Product::ab:
      return tp2d::summa_ab(ctx, g, C, A, B, M, N, K);
    case Product::abt:
      return tp2d::summa_abt(ctx, g, C, A, B, M, N, K);
    case Product::atb:
      return tp2d::summa_atb(ctx, g, C, A, B, M, N, K);
  }
}

void backward(Product p, const core::Context& ctx, const comm::Grid2D& g, float* dA, float* dB, const float* dC,
              const float* A, const float* B, int M, int N, int K) {
  switch (p) {
    case Product::ab:
      return tp2d::summa_ab_backward(ctx, g, dA, dB, dC, A, B, M, N, K);
    case Product::abt:
      return tp2d::summa_abt_backward(ctx, g, dA, dB, dC, A, B, M, N, K);
    case Product::atb:
      return tp2d::summa_atb_backward(ctx, g, dA, dB, dC, A, B, M, N, K);
  }
}

// Forward and both gradients of one product against the serial ones, within 1e-5.
void check_product(Product p) {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  const auto ctx = core::cpu_context();
  const int q = g.q(), M = 6 * q, N = 4 * q, K = 10 * q;
  const Shapes s = shapes_of(p, M, N, K);
  const std::string what = std::string("SUMMA ") + name_of(p) + " q=" + std::to_string(q);

  const auto A = normal(int64_t{s.a_rows} * s.a_cols, 1), B = normal(int64_t{s.b_rows} * s.b_cols, 2);
  const auto dC = normal(int64_t{M} * N, 3);
  // Gradients start non-zero, to see that the backward accumulates.
  auto dA = normal(int64_t{s.a_rows} * s.a_cols, 4), dB = normal(int64_t{s.b_rows} * s.b_cols, 5);

  std::vector<float> C(static_cast<size_t>(M) * N);  // serial, full
  core::matmul(ctx, C.data(), A.data(), B.data(), M, N, K, s.ta, s.tb);
  const auto A_ij = equivalence::grid_block(A, s.a_rows, s.a_cols, g),
             B_ij = equivalence::grid_block(B, s.b_rows, s.b_cols, g);
  const auto dC_ij = equivalence::grid_block(dC, M, N, g);
  auto dA_ij = equivalence::grid_block(dA, s.a_rows, s.a_cols, g),
       dB_ij = equivalence::grid_block(dB, s.b_rows, s.b_cols, g);
  core::matmul_backward(ctx, dA.data(), dB.data(), dC.data(), A.data(), B.data(), M, N, K, s.ta, s.tb);

  std::vector<float> C_ij(static_cast<size_t>(M / q) * (N / q), -1.0f);  // garbage: the product overwrites
  forward(p, ctx, g, C_ij.data(), A_ij.data(), B_ij.data(), M, N, K);
  // Each gradient on its own (the other nullptr): both "not needed" and accumulation are exercised.
  backward(p, ctx, g, dA_ij.data(), nullptr, dC_ij.data(), A_ij.data(), B_ij.data(), M, N, K);
  backward(p, ctx, g, nullptr, dB_ij.data(), dC_ij.data(), A_ij.data(), B_ij.data(), M, N, K);

  const double e_c = rel_error(C_ij, equivalence::grid_block(C, M, N, g));
  const double e_da = rel_error(dA_ij, equivalence::grid_block(dA, s.a_rows, s.a_cols, g));
  const double e_db = rel_error(dB_ij, equivalence::grid_block(dB, s.b_rows, s.b_cols, g));
  report(what + " worst relative error", equivalence::worst_over_ranks(e_c));
  report(what + " backward dA worst relative error", equivalence::worst_over_ranks(e_da));
  report(what + " backward dB worst relative error", equivalence::worst_over_ranks(e_db));
  MPI_REQUIRE(e_c <= 1e-5);
  MPI_REQUIRE(e_da <= 1e-5);
  MPI_REQUIRE(e_db <= 1e-5);
}

}  // namespace

TEST_CASE("SUMMA A·B equals serial matmul, forward and both gradients", "[summa]") {
  check_product(Product::ab);
}

TEST_CASE("SUMMA A·Bᵀ equals serial matmul, forward and both gradients", "[summa]") {
  check_product(Product::abt);
}

TEST_CASE("SUMMA Aᵀ·B equals serial matmul, forward and both gradients", "[summa]") {
  check_product(Product::atb);
}

TEST_CASE("SUMMA sends what summa.h says: q broadcasts and reduces of one block each", "[summa]") {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  core::MemoryLedger memory;
  const auto ctx = core::cpu_context(memory);
  const int q = g.q(), M = 6 * q, N = 4 * q, K = 10 * q, Mb = M / q, Nb = N / q, Kb = K / q;
  const int64_t f = sizeof(float);
  std::vector<float> C(static_cast<size_t>(Mb) * Nb);
  // Every product's A block is (M/q)·(K/q) numbers and its B block (K/q)·(N/q), whatever the layout.
  const auto A = normal(int64_t{Mb} * Kb, 6), B = normal(int64_t{Kb} * Nb, 7);
  auto& ledger = g.row_comm().ledger();
  const std::string tag = " q=" + std::to_string(q);

  auto before = ledger.snapshot();
  tp2d::summa_ab(ctx, g, C.data(), A.data(), B.data(), M, N, K);
  auto sent = ledger.since(before);
  equivalence::report_count("summa_ab row broadcasts" + tag, sent.calls("row", comm::CommOp::broadcast), q);
  equivalence::report_count("summa_ab row broadcast bytes" + tag, sent.bytes("row", comm::CommOp::broadcast),
                            q * Mb * Kb * f);
  equivalence::report_count("summa_ab col broadcasts" + tag, sent.calls("col", comm::CommOp::broadcast), q);
  equivalence::report_count("summa_ab col broadcast bytes" + tag, sent.bytes("col", comm::CommOp::broadcast),
                            q * Kb * Nb * f);
  MPI_REQUIRE(sent.calls() == 2 * q);
  MPI_REQUIRE(sent.calls("row", comm::CommOp::broadcast) == q);
  MPI_REQUIRE(sent.calls("col", comm::CommOp::broadcast) == q);
  MPI_REQUIRE(sent.bytes("row", comm::CommOp::broadcast) == q * Mb * Kb * f);
  MPI_REQUIRE(sent.bytes("col", comm::CommOp::broadcast) == q * Kb * Nb * f);
  MPI_REQUIRE(memory.peak(core::MemoryCategory::communication) == static_cast<size_t>((Mb * Kb + Kb * Nb) * f));
  MPI_REQUIRE(memory.current(core::MemoryCategory::communication) == 0);

  before = ledger.snapshot();
  tp2d::summa_abt(ctx, g, C.data(), A.data(), B.data(), M, N, K);  // B stored (N, K)
  sent = ledger.since(before);
  equivalence::report_count("summa_abt col broadcasts" + tag, sent.calls("col", comm::CommOp::broadcast), q);
  equivalence::report_count("summa_abt row reduces" + tag, sent.calls("row", comm::CommOp::reduce), q);
  MPI_REQUIRE(sent.calls() == 2 * q);
  MPI_REQUIRE(sent.bytes("col", comm::CommOp::broadcast) == q * Nb * Kb * f);
  MPI_REQUIRE(sent.bytes("row", comm::CommOp::reduce) == q * Mb * Nb * f);

  before = ledger.snapshot();
  tp2d::summa_atb(ctx, g, C.data(), A.data(), B.data(), M, N, K);  // A stored (K, M)
  sent = ledger.since(before);
  equivalence::report_count("summa_atb row broadcasts" + tag, sent.calls("row", comm::CommOp::broadcast), q);
  equivalence::report_count("summa_atb col reduces" + tag, sent.calls("col", comm::CommOp::reduce), q);
  MPI_REQUIRE(sent.calls() == 2 * q);
  MPI_REQUIRE(sent.bytes("row", comm::CommOp::broadcast) == q * Kb * Mb * f);
  MPI_REQUIRE(sent.bytes("col", comm::CommOp::reduce) == q * Mb * Nb * f);
}

namespace {

// One product's forward and both gradients on grid g; its communication scratch peak in `peak`.
struct Results {
  std::vector<float> C, dA, dB;
  size_t peak = 0;
  comm::CommLedger sent;
};

Results run_product(Product p, const comm::Grid2D& g) {
  core::MemoryLedger memory;
  const auto ctx = core::cpu_context(memory);
  const int q = g.q(), M = 6 * q, N = 4 * q, K = 10 * q;
  const Shapes s = shapes_of(p, M, N, K);
  const auto A_ij = equivalence::grid_block(normal(int64_t{s.a_rows} * s.a_cols, 1), s.a_rows, s.a_cols, g);
  const auto B_ij = equivalence::grid_block(normal(int64_t{s.b_rows} * s.b_cols, 2), s.b_rows, s.b_cols, g);
  const auto dC_ij = equivalence::grid_block(normal(int64_t{M} * N, 3), M, N, g);
  Results r{std::vector<float>(static_cast<size_t>(M / q) * (N / q)),
            equivalence::grid_block(normal(int64_t{s.a_rows} * s.a_cols, 4), s.a_rows, s.a_cols, g),
            equivalence::grid_block(normal(int64_t{s.b_rows} * s.b_cols, 5), s.b_rows, s.b_cols, g), 0, {}};
  auto& ledger = g.row_comm().ledger();
  const auto before = ledger.snapshot();
  forward(p, ctx, g, r.C.data(), A_ij.data(), B_ij.data(), M, N, K);
  r.peak = memory.peak(core::MemoryCategory::communication);
  backward(p, ctx, g, r.dA.data(), r.dB.data(), dC_ij.data(), A_ij.data(), B_ij.data(), M, N, K);
  r.sent = ledger.since(before);
  return r;
}

bool bitwise(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
}

}  // namespace

TEST_CASE("SUMMA with overlap: bitwise the same, the same calls, twice the scratch", "[summa]") {
  auto& world = mpi_test::world();
  const comm::Grid2D waits(world.comm()), overlaps(world.comm(), /*overlap=*/true);
  const int q = waits.q(), M = 6 * q, N = 4 * q, K = 10 * q, Mb = M / q, Nb = N / q, Kb = K / q;
  const std::string tag = " q=" + std::to_string(q);
  // The forward pass's scratch: one block of each operand it receives or reduces (summa.h).
  const size_t f = sizeof(float);
  const size_t blocks[] = {(size_t(Mb) * Kb + size_t(Kb) * Nb) * f, (size_t(Nb) * Kb + size_t(Mb) * Nb) * f,
                           (size_t(Kb) * Mb + size_t(Mb) * Nb) * f};
  for (Product p : {Product::ab, Product::abt, Product::atb}) {
    const Results off = run_product(p, waits), on = run_product(p, overlaps);
    const bool same = bitwise(off.C, on.C) && bitwise(off.dA, on.dA) && bitwise(off.dB, on.dB);
    const bool everywhere = equivalence::worst_over_ranks(same ? 0.0 : 1.0) == 0.0;
    report(std::string("SUMMA ") + name_of(p) + tag + ": overlap on = off, forward and gradients bitwise (1 = yes)",
           everywhere ? 1.0 : 0.0);
    MPI_REQUIRE(same);
    MPI_REQUIRE(on.sent.calls() == off.sent.calls());
    MPI_REQUIRE(on.sent.bytes() == off.sent.bytes());
    const size_t block = blocks[static_cast<int>(p)];
    equivalence::report_count(std::string("summa_") + name_of(p) + " communication scratch, overlap off" + tag,
                              static_cast<int64_t>(off.peak), static_cast<int64_t>(block));
    equivalence::report_count(std::string("summa_") + name_of(p) + " communication scratch, overlap on" + tag,
                              static_cast<int64_t>(on.peak), static_cast<int64_t>(2 * block));
    MPI_REQUIRE(off.peak == block);
    MPI_REQUIRE(on.peak == 2 * block);
  }
}

TEST_CASE("SUMMA rejects sizes that are not multiples of q, on every rank", "[summa]") {
  auto& world = mpi_test::world();
  comm::Grid2D g(world.comm());
  const auto ctx = core::cpu_context();
  std::vector<float> x(64);
  if (g.q() > 1) {
    MPI_REQUIRE_THROWS_AS(tp2d::summa_ab(ctx, g, x.data(), x.data(), x.data(), g.q() + 1, g.q(), g.q()),
                          std::invalid_argument);
  }
}
