// The benchmark of a stage in any layout (`optimus bench`): median training-step time (forward,
// backward, clipping, AdamW) and forward-only time over several steps after a warm-up, tokens/s,
// model FLOP/s by the formula (6N + 6·L·C·T) FLOPs per token, the fraction that is of the rate at
// which this machine runs the model's own matrix products (matmul_gflops: each rank's linear and
// LM-head products of a pass in the benched layout, train/gemm_reference.h, timed by every rank at
// the same time and summed over the ranks), the ledger's peak memory by category and the
// communication of one training step per rank (calls and bytes by operation); with --op-times also
// the step's time in each kind of op (core::OpClock). One JSON line per run.
// With --data-parallel D the world holds D copies of the layout (train::DataParallel), each timing
// its B / D sequences, and the step ends with the trainer's sum of the gradients over the copies,
// whose time is also reported alone; with --grad-accum K each copy runs its share in K passes.
// With --device cuda the same on the GPU: every timed region starts and ends with the stream
// synchronised, the products are timed through cuBLAS on that GPU (TF32 off, as the model
// computes), and the memory is the device ledger's.
#pragma once

#include <string>

#include "comm/world.h"
#include "core/context.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "train/device.h"
#include "train/layout.h"
#include "train/memory_check.h"

namespace optimus::train {

struct BenchOptions {
  Layout layout = Layout::serial;  // train/layout.h
  std::string model = "tiny";      // a named configuration (GPTConfig::named)
  int batch = 8;                   // B: the whole step's, split over the copies
  int data_parallel = 1;           // D copies of the layout, each on world / D ranks and B / D sequences
  int grad_accum = 1;              // micro-batches per step, each B / (D·grad_accum) sequences
  int steps = 7;                   // measured steps (the median is reported)
  int warmup = 2;                  // steps run first and not measured
  double budget_mib = 0;           // > 0: instead of timing, the largest batch that fits this per rank
  bool op_times = false;           // also time each kind of op in the training step (the CPU only)
  model::StageOptions stage;       // recomputation, sequence parallelism (chapter 5)
  DeviceOptions device;            // --device, --device-comm
};

/// Throws core::ConfigError, on every rank alike, for options no benchmark can use (a batch,
/// step count or budget out of range, a budget search with data parallelism or accumulation), and
/// for an unknown model.
void require_bench_options(const BenchOptions& options);

/// Runs the benchmark of options.layout on this world (collective) and returns its JSON line
/// (rank 0's timings; memory and communication per rank, which are the same on every rank here).
/// On the CPU, a step this machine cannot hold is refused first (require_run_memory, each rank's
/// step measured by `step_peak`: plan::step_peak_bytes from the command).
std::string bench(const BenchOptions& options, comm::World& world, const StepPeak& step_peak);

/// --max-batch-budget, after the planner found B, the largest batch whose training step fits
/// options.budget_mib per rank on the meta device (plan::largest_batch; 0: none does): one real
/// training step at B on this device, the budget enforced by the memory ledger (an allocation past
/// it throws), confirms it, and the JSON line reports B and the step's peak memory. A step that does
/// not fit is a core::ConfigError on every rank. On the CPU, a budget past what this machine can
/// hold is refused first (require_memory). Collective.
std::string step_under_budget(const BenchOptions& options, comm::World& world, int B, int batch_unit);

/// Throws core::ConfigError, on every rank alike, when this machine cannot hold the budget of
/// --max-batch-budget (the confirming step allocates up to it).
void require_budget_fits_machine(const BenchOptions& options, comm::World& world);

}  // namespace optimus::train
