// Data parallelism's pieces of a training step (chapter 6): the groups of D copies of a layout, the
// check that a world of processes holds them at a batch, a copy's share of the step's gradients in
// micro-batches, and their sum over the copies during the backward pass.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "comm/world.h"
#include "model/gradient_bucket.h"
#include "model/model.h"
#include "train/layout.h"

namespace optimus::train {

/// The groups of a run with D copies of the model (data parallelism): world rank r = d·P + t, where
/// P = world / D is the ranks of one copy's layout and t the rank inside the copy. A copy occupies
/// consecutive ranks, so its tensor-parallel traffic stays on one node when P fits a node; the
/// data-parallel group of t is {t, P + t, 2P + t, …}: the ranks that hold the same shard in every
/// copy, whose gradients are summed. With D = 1 nothing is split: the copy is the world.
struct DataParallel {
  int replicas = 1;                          // D
  int replica = 0;                           // d: my copy
  comm::Communicator* model = nullptr;       // my copy's P ranks
  std::unique_ptr<comm::Communicator> data;  // my shard's D ranks (none when D = 1)

  /// Collective over `world`; world.size() must be a multiple of D (checked before). The keys are
  /// the ranks inside the new groups (t in the copy, d in the data group), the order MPI would give
  /// by world rank; a meta world (the planner's) splits by them as they are.
  DataParallel(comm::Communicator& world, int D);
  DataParallel(comm::World& world, int D) : DataParallel(world.comm(), D) {}

 private:
  std::unique_ptr<comm::Communicator> model_owned_;
};

/// Throws core::ConfigError, on every rank alike, unless `processes` can run D copies of `layout`
/// on a batch of B sequences (B > 0) of T tokens, each copy's B / D sequences in `grad_accum`
/// micro-batches: D divides the processes, one copy's processes / D ranks fit the layout with
/// `options` (require_fits), D > 1 only on the CPU, grad_accum divides B and D·grad_accum divides
/// B, and the layout can split a micro-batch (require_batch_fits). Called before any collective.
void require_data_parallel_fits(Layout layout, int processes, int D, int B, int grad_accum, int T,
                                const model::StageOptions& options, const std::string& device);

/// --overlap hides 2D's SUMMA communication and data parallelism's gradient sums; asked of a run
/// that has neither (serial or 1d with D = 1), it changes nothing, and rank 0 says so on stderr (a
/// note, not an error: a sweep over layouts may pass it to every run).
void note_unused_overlap(const comm::World& world, bool overlap, Layout layout, int D);

/// A copy's share of one step's gradients. Copy d of D takes the sequences [d·B/D, (d+1)·B/D) of
/// the step's batch (inputs, targets: B sequences of T tokens) and runs them as grad_accum
/// micro-batches of Bm = B / (D·grad_accum); every micro-batch is a part of the batch
/// (model::BatchSlice), so its dropout masks are the whole batch's and its loss is its share of the
/// whole batch's mean. The gradients add up over the micro-batches. Returns this copy's part of
/// the loss. The caller zeroes the gradients first.
double accumulate_gradients(model::Model& gpt, const DataParallel& dp, const int* inputs, const int* targets, int B,
                            int T, int grad_accum, int step);

/// While it lives, `gpt`'s gradients are summed over the copies as its backward pass completes them,
/// block by block (model::GradientSum as the model's listener; with `overlap` the sums stay in flight
/// while the pass goes on). Nothing with D = 1. blocked_ms() is the time the backward pass spent in
/// those sums since the last call: starting them, and waiting for them.
class SumOverCopies {
 public:
  SumOverCopies(model::Model& gpt, const DataParallel& dp, bool overlap);
  ~SumOverCopies();
  SumOverCopies(const SumOverCopies&) = delete;
  SumOverCopies& operator=(const SumOverCopies&) = delete;

  double blocked_ms() { return sum_ ? sum_->take_blocked_ms() : 0.0; }

 private:
  model::Model& gpt_;
  std::optional<model::GradientSum> sum_;
};

/// The copies' parts of a step's loss summed, so every rank ends with the whole batch's (with D = 1,
/// `loss`). Collective over the data group.
double loss_over_copies(const model::Model& gpt, const DataParallel& dp, double loss);

}  // namespace optimus::train
