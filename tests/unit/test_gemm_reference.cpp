// The bench's matrix-product reference (train/gemm_reference.h) lists the products a rank runs:
// its FLOPs equal what the op ledger records as matmul in the stage's own pass — the serial GPT on
// the CPU, and each rank of Megatron 1D and Optimus 2D on the meta device. The ledger's matmul kind
// holds exactly the linears and the LM head (attention records its per-head products as attention,
// core/cpu/attention.cpp), so equality is exact. Nothing here is timed, beyond the rate being a
// positive number.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <vector>

#include "comm/comm_ledger.h"
#include "core/context.h"
#include "core/memory_ledger.h"
#include "core/op_ledger.h"
#include "plan/step.h"
#include "serial/gpt.h"
#include "train/gemm_reference.h"
#include "train/layout.h"
#include "unit/check.h"

namespace {

using namespace optimus;
using core::OpKind;
using train::Layout;

model::GPTConfig small_config() {
  model::GPTConfig cfg;
  cfg.n_layer = 2, cfg.n_embd = 32, cfg.n_head = 4, cfg.n_positions = 16, cfg.vocab_size = 96;
  cfg.dropout = 0.1f;
  return cfg;
}

int64_t calls(const std::vector<train::GemmProduct>& products) {
  int64_t n = 0;
  for (const auto& p : products) n += p.count;
  return n;
}

// FLOPs by smallest dimension, as the op ledger keeps them: the shapes, not only their sum.
std::map<int64_t, int64_t> flops_by_min_dim(const std::vector<train::GemmProduct>& products) {
  std::map<int64_t, int64_t> by;
  for (const auto& p : products) by[std::min({p.M, p.N, p.K})] += p.flops() * p.count;
  return by;
}

// The matmul ops of one training step of `layout` on world rank `rank` of `ranks`, on meta.
core::OpLedger::Totals meta_step_matmuls(Layout layout, const model::GPTConfig& cfg, int ranks, int rank, int B,
                                         const model::StageOptions& stage) {
  core::MemoryLedger memory;
  core::OpLedger ops;
  comm::CommLedger comm;
  auto world = train::meta_world(layout, ranks, rank, comm);
  plan::StepOptions step;
  step.B = B, step.T = cfg.n_positions, step.stage = stage;
  const std::vector<int> tokens(static_cast<size_t>(B) * static_cast<size_t>(cfg.n_positions), 0);
  const plan::StepResult r = plan::run_training_step(layout, cfg, core::meta_context(memory, &ops), *world, step,
                                                     tokens.data(), tokens.data());
  return r.ops.of(OpKind::matmul);
}

}  // namespace

TEST_CASE("gemm reference: the serial products' FLOPs, calls and shapes are the CPU pass's matmul ledger", "[gemm]") {
  const model::GPTConfig cfg = small_config();
  const int B = 3, T = cfg.n_positions;
  for (const auto recompute : {model::Recompute::none, model::Recompute::block}) {
    core::MemoryLedger memory;
    core::OpLedger ops;
    serial::GPT gpt(cfg, core::cpu_context(memory, &ops), 7, {.recompute = recompute});
    const auto inputs = testing::random_ints(int64_t{B} * T, cfg.vocab_size, 1);
    const auto targets = testing::random_ints(int64_t{B} * T, cfg.vocab_size, 2);
    gpt.forward(inputs.data(), targets.data(), B, T, /*step=*/1, /*train=*/true);
    gpt.backward();
    const auto products = train::pass_products(cfg, Layout::serial, 1, B * T, recompute);
    const core::OpLedger::Totals& recorded = ops.of(OpKind::matmul);
    INFO("recompute " << model::to_string(recompute));
    CHECK(train::total_flops(products) == recorded.flops);
    CHECK(calls(products) == recorded.calls);
    CHECK(flops_by_min_dim(products) == recorded.flops_by_min_dim);
  }
}

TEST_CASE("gemm reference: each 1d rank's products are its meta step's matmul ledger (p = 2, 3; sp, recompute)",
          "[gemm]") {
  struct Case {
    const char* model;
    int p, B;
    model::StageOptions stage;
  };
  // tiny9's vocabulary of 256 splits into parts of ⌈256/3⌉ = 86 rows, the last padded.
  const Case cases[] = {{"tiny", 2, 2, {}},
                        {"tiny", 2, 2, {.recompute = model::Recompute::block, .sequence_parallel = true}},
                        {"tiny9", 3, 3, {}}};
  for (const Case& c : cases) {
    const model::GPTConfig cfg = model::GPTConfig::named(c.model);
    const auto products = train::pass_products(cfg, Layout::tp1d, c.p, c.B * cfg.n_positions, c.stage.recompute);
    for (int rank = 0; rank < c.p; ++rank) {
      const auto recorded = meta_step_matmuls(Layout::tp1d, cfg, c.p, rank, c.B, c.stage);
      INFO(c.model << " p=" << c.p << " rank " << rank << " sp " << c.stage.sequence_parallel);
      CHECK(train::total_flops(products) == recorded.flops);
      CHECK(calls(products) == recorded.calls);
      CHECK(flops_by_min_dim(products) == recorded.flops_by_min_dim);
    }
  }
}

// On the CPU (and so on meta) SUMMA computes each block product in row panels, to poll its
// transfers between them (tp2d/summa.cpp's block_product): the same FLOPs in more calls of fewer
// rows, so the FLOPs are compared, not the calls or the smallest dimensions.
TEST_CASE("gemm reference: each 2d rank's block products have its meta step's matmul FLOPs (q = 2, 3)", "[gemm]") {
  struct Case {
    const char* model;
    int q, B;
    model::StageOptions stage;
  };
  // tiny9's vocabulary of 256 pads to 3·86 = 258 for the 3×3 grid.
  const Case cases[] = {
      {"tiny", 2, 2, {}}, {"tiny", 2, 2, {.recompute = model::Recompute::block}}, {"tiny9", 3, 3, {}}};
  for (const Case& c : cases) {
    const model::GPTConfig cfg = model::GPTConfig::named(c.model);
    const auto products = train::pass_products(cfg, Layout::tp2d, c.q * c.q, c.B * cfg.n_positions, c.stage.recompute);
    for (int rank = 0; rank < c.q * c.q; ++rank) {
      const auto recorded = meta_step_matmuls(Layout::tp2d, cfg, c.q * c.q, rank, c.B, c.stage);
      INFO(c.model << " q=" << c.q << " rank " << rank);
      CHECK(train::total_flops(products) == recorded.flops);
    }
  }
}

TEST_CASE("gemm reference: a 2d layout on a non-square number of ranks is refused", "[gemm]") {
  CHECK_THROWS_WITH(train::pass_products(small_config(), Layout::tp2d, 3, 64, model::Recompute::none),
                    Catch::Contains("square number of ranks"));
}

TEST_CASE("gemm reference: the measured rate of the serial products is a positive number on the CPU", "[gemm]") {
  const model::GPTConfig cfg = small_config();
  core::MemoryLedger memory;
  const core::Context ctx = core::cpu_context(memory);
  const double gflops = train::measure_products_gflops(
      ctx, train::pass_products(cfg, Layout::serial, 1, 2 * cfg.n_positions, model::Recompute::none), 3);
  CHECK(gflops > 0.0);
  CHECK(memory.peak_total() == 0);  // the products' buffers are on a ledger of their own
}
