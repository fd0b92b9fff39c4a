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
    comm::Grid2D grid(stage_test::device_world(), layout.overlap);
    tp2d::GPT gpt(cfg, ctx, 11, grid, memory);
    body(gpt);
  }
}

}  // namespace

TEST_CASE("on the GPU, after the first step a training step allocates nothing, in every layout", "[allocations]") {
  const std::string device = gpu_test::cuda().device == core::Device::cuda ? "gpu " : "cpu stand-in ";
  MPI_REQUIRE(equivalence::no_allocations_after_first_step(device, [](auto&&... args) { with_gpu_layout(args...); }));
}
