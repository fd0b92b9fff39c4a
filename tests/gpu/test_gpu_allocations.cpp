// No allocation inside a training step, on the GPU (label gpu; with --cpu-stand-in, label mpi): the
// test of equivalence/test_allocations.cpp with the models' Buffers in GPU memory and their
// collectives through the host-staged communicator. After the first step, steps 2 to 4 ask the
// system for no block: neither the device ledger (cudaMalloc) nor the host ledger (the staged
// communicator's buffer), in every layout this world runs, with recomputation and with 4
// micro-batches, dropout on.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "allocations.h"
#include "comm/grid.h"
#include "compare.h"
#include "gpu_test.h"
#include "layouts.h"
#include "serial/gpt.h"
#include "stage_test.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"

using namespace optimus;

namespace {

// Builds `layout`'s model over the device communicator (seed 11, memory on `ledger`, on the test
// main's GPU and stream) and returns body(model).
template <typename Body>
void with_gpu_layout(const equivalence::Layout& layout, const model::GPTConfig& cfg, model::Recompute recompute,
                     core::MemoryLedger& ledger, Body&& body) {
  const model::StageOptions memory{
      .recompute = recompute, .sequence_parallel = layout.sequence_parallel, .overlap = layout.overlap};
  core::Context ctx = gpu_test::cuda();
  ctx.ledger = &ledger;
  if (layout.stage == "serial") {
    serial::GPT gpt(cfg, ctx, 11, memory);
    body(gpt);
  } else if (layout.stage == "1d") {
    comm::Grid1D grid(stage_test::device_world());
    tp1d::GPT gpt(cfg, ctx, 11, grid, memory);
    body(gpt);
  } else {
    comm::Grid2D grid(stage_test::device_world());
    tp2d::GPT gpt(cfg, ctx, 11, grid, memory);
    body(gpt);
  }
}

}  // namespace

TEST_CASE("on the GPU, after the first step a training step allocates nothing, in every layout", "[allocations]") {
  const int P = mpi_test::world().size();
  const auto cfg = equivalence::config_for(P);
  const int T = 16, Bm = equivalence::batch_for(P, T);
  const std::string device = gpu_test::cuda().device == core::Device::cuda ? "gpu " : "cpu stand-in ";
  auto layouts = equivalence::layouts_of(P);
  if (equivalence::is_square(P)) layouts.push_back({"2d", false, true});  // SUMMA's double buffers too
  bool none = true;
  for (const equivalence::Layout& layout : layouts) {
    for (const model::Recompute recompute : {model::Recompute::none, model::Recompute::block}) {
      for (const int K : {1, 4}) {
        core::MemoryLedger ledger;
        std::vector<int64_t> per_step;
        with_gpu_layout(layout, cfg, recompute, ledger, [&](auto& gpt) {
          per_step = equivalence::allocations_per_step(gpt, {&ledger, &core::MemoryLedger::host()}, 4, K * Bm, T, K);
        });
        int first = static_cast<int>(per_step[0]), later = static_cast<int>(per_step[1] + per_step[2] + per_step[3]);
        mpi_test::world().comm().all_reduce(&first, 1, comm::ReduceOp::max);
        mpi_test::world().comm().all_reduce(&later, 1, comm::ReduceOp::max);
        equivalence::report_count(device + "ledger: system allocations in steps 2-4, " + layout.name() +
                                      " P=" + std::to_string(P) + ", recompute " + model::to_string(recompute) +
                                      ", K=" + std::to_string(K) + " (step 1: " + std::to_string(first) + ")",
                                  later, 0);
        none = none && later == 0;
      }
    }
  }
  MPI_REQUIRE(none);
}
