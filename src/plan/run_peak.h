// A run's memory need, measured: the trainer's, eval's, bench's and sample's memory check
// (train/memory_check.h) asks the planner for one rank's peak, and the planner runs that rank's
// step — the stages' own code, with the run's layout, copies, micro-batches and techniques — on
// the meta device, where its memory ledger records every Buffer as the CPU's would.
#pragma once

#include "train/memory_check.h"

namespace optimus::plan {

/// The peak bytes of rank `shape.rank`'s memory ledger, model building included, over one training
/// step (ModelUse::train: plan::run_training_step, gradients summed over the copies, shape.grad_accum
/// micro-batches) or one forward pass in evaluation mode (ModelUse::evaluate: run_forward_pass) of
/// `shape`, on the meta device with shape.threads threads' CPU scratch. No collective: each rank
/// measures its own rank in a meta world of shape.world_size ranks. A layout or shape that does not
/// fit is a core::ConfigError, as the real run's would be. Fits train::StepPeak.
double step_peak_bytes(const train::RunShape& shape);

}  // namespace optimus::plan
