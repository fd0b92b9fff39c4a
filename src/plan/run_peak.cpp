// One rank's step of a run on the meta device, for the run's own memory check.
#include "plan/run_peak.h"

#include <algorithm>
#include <vector>

#include "comm/comm_ledger.h"
#include "core/context.h"
#include "core/memory_ledger.h"
#include "plan/step.h"
#include "train/data_parallel.h"

namespace optimus::plan {

namespace {

// MPI's own scratch for reductions: Open MPI's reduce, all-reduce and reduce-scatter receive a
// peer's part into a temporary of up to the message's size, and its reduce-scatter of two ranks
// reduces the whole buffer on the group's first rank (a temporary) before it scatters: about two
// of the largest reduction message (its bytes per call, the ledger's mean over the calls of each
// communicator and operation) on the ranks that take part.
double reduction_scratch_bytes(const comm::CommLedger& step) {
  double largest = 0;
  for (const std::string& name : step.communicators()) {
    if (step.group_size(name) < 2) continue;
    for (comm::CommOp op : {comm::CommOp::all_reduce, comm::CommOp::reduce, comm::CommOp::reduce_scatter}) {
      const int64_t calls = step.calls(name, op);
      if (calls > 0) largest = std::max(largest, static_cast<double>(step.bytes(name, op)) / calls);
    }
  }
  return 2 * largest;
}

}  // namespace

double step_peak_bytes(const train::RunShape& shape) {
  StepOptions step;
  step.B = shape.B, step.T = shape.T, step.grad_accum = shape.grad_accum, step.stage = shape.stage;
  // The trainer's dropout keys and the batch's token ids do not change a Buffer's size; meta reads none.
  const std::vector<int> tokens(static_cast<size_t>(shape.B) * static_cast<size_t>(shape.T), 0);
  core::MemoryLedger memory;
  comm::CommLedger comm;
  const int P = shape.world_size / shape.data_parallel;
  auto world = train::meta_world(shape.layout, P, shape.rank, comm, shape.data_parallel);
  const train::DataParallel dp(*world, shape.data_parallel);
  if (shape.data_parallel > 1) step.data_parallel = &dp;
  const core::Context ctx = core::meta_context(memory, /*ops=*/nullptr, shape.threads);
  auto run = shape.use == train::ModelUse::train ? &run_training_step : &run_forward_pass;
  run(shape.layout, shape.config, ctx, *dp.model, step, tokens.data(), tokens.data());
  // What the CPU's pool would hold at most: the Buffers' peak, plus the free blocks of sizes that no
  // later Buffer takes again (core::BlockPool keeps blocks by exact size).
  double buffers = static_cast<double>(std::max(memory.peak_total(), memory.pool().peak_counted_bytes()));
  // A model that only evaluates never writes its gradients, held from the build on: their blocks are
  // zero pages (core::Fill::zero_lazy) that take no memory.
  if (shape.use == train::ModelUse::evaluate)
    buffers -= static_cast<double>(memory.current(core::MemoryCategory::gradients));
  return buffers + reduction_scratch_bytes(comm);
}

}  // namespace optimus::plan
