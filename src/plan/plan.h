// `optimus plan`: what one training step of a layout costs each rank, read from the meta device in
// one process, for a world of any size — memory by category, FLOPs and bytes by kind of op, and each
// communicator's collectives (calls, bytes, group size). Given a hardware profile, also the time
// model's seconds (plan/time_model.h) for the step and for a forward pass, and the largest batch
// whose step fits a device's memory. Every rank of a layout holds blocks of about the same size,
// so a few ranks stand for all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/activation_block.h"
#include "model/config.h"
#include "plan/precision.h"
#include "train/layout.h"

namespace optimus::plan {

struct PlanOptions {
  train::Layout layout = train::Layout::serial;
  int ranks = 1;              // P: 1, p, or q·q (one model copy)
  int data_parallel = 1;      // D copies of the layout: a world of D·P ranks, r = d·P + t
  model::GPTConfig config;    // the model's shapes (dropout as given)
  int batch = 1;              // B sequences of config.n_positions tokens, the whole step's (B / D a copy's)
  bool json = false;          // one JSON object instead of tables
  std::string hardware;       // a profile's name or path; empty: no time model
  int ranks_per_node = 0;     // 0: the profile's devices_per_node
  int threads = 1;            // CPU threads per rank (time model; the meta run's per-thread scratch)
  model::StageOptions stage;  // recomputation, sequence parallelism (chapter 5), overlap (chapter 6: SUMMA's
                              // communication behind its products, data parallelism's gradient all-reduce
                              // behind the backward pass), placement (chapter 4)
  /// The bytes per element and product rates accounted (plan/precision.h); the kernels run fp32.
  Precision precision = Precision::fp32;
};

/// The largest B (up to `limit`) whose training step's peak memory on the meta device is at most
/// `bytes` on the first and the last rank (whose blocks are the largest and the smallest of every
/// kind); 0 if not even the smallest batch does. B is a multiple of the layout's batch unit
/// (train::batch_unit: 2D's q, the rows that split the batch; with D copies, of D times that).
/// Only batches whose sizes pass model::require_step_sizes are tried. The benchmark's
/// --max-batch-budget is this search, confirmed by one real step.
int largest_batch(const PlanOptions& options, int64_t bytes, int limit);

/// The ranks a plan runs: every rank when P <= 16, else the first and the last; with D > 1
/// copies, those of the first copy and the same ranks of the last (world ranks d·P + t).
std::vector<int> ranks_to_run(int P, int D = 1);

/// Throws core::ConfigError for options no plan can run: a count below 1, a world D·P or ranks per
/// node past 2^24, a model that is not valid (model::GPTConfig::validate), a step whose sizes do not
/// fit their types (model::require_step_sizes), a layout or a batch the ranks and copies do not split.
void require_valid(const PlanOptions& options);

/// A lower bound of this machine's memory a plan holds while it runs: the meta device holds no
/// numbers, but each block of the model is still a handful of Buffers with names and ledger records
/// (8 KiB counted per block), and the batch's token ids are a real array (4·B·T bytes).
double host_bytes_lower_bound(const PlanOptions& options);

/// Runs one training step of each rank of ranks_to_run on meta and returns the report: per rank,
/// memory by category (peak, and held between steps) and the communication ledger, both at the
/// options' precision, and the op ledger as the float32 kernels record it,
/// then the busiest rank (the largest peak memory; ties go to the lowest rank). With a hardware
/// profile, per rank the predicted time of the step and of a forward pass, the slowest rank, and
/// the largest batch that fits. A layout, world, batch or profile that does not fit is a
/// core::ConfigError (require_valid first).
std::string plan_report(const PlanOptions& options);

}  // namespace optimus::plan
