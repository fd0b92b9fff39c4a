// Data parallelism's pieces of a training step, for every command that runs one (the benchmark,
// the planner's meta step; chapter 6): the check that a world of processes holds D copies of a
// layout at a batch, a copy's share of the step's gradients in micro-batches, and their sum over
// the copies during the backward pass. The groups themselves (world rank r = d·P + t) are train::DataParallel.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "comm/scalar.h"
#include "core/errors.h"
#include "model/activation_block.h"
#include "model/gradient_bucket.h"
#include "train/layouts.h"

namespace optimus::train {

/// Throws core::ConfigError, on every rank alike, unless `processes` can run D copies of `layout`
/// on a batch of B sequences (B > 0) of T tokens, each copy's B / D sequences in `grad_accum`
/// micro-batches: D divides the processes, one copy's processes / D ranks fit the layout, D > 1
/// only on the CPU, grad_accum divides B and D·grad_accum divides B, and the layout can split a
/// micro-batch (require_batch_fits). Called before any collective.
inline void require_data_parallel_fits(const std::string& layout, int processes, int D, int B, int grad_accum, int T,
                                       bool sequence_parallel, const std::string& device) {
  if (D < 1 || processes % D != 0) {
    throw core::ConfigError("--data-parallel " + std::to_string(D) + " must be 1 or more and divide the " +
                            std::to_string(processes) + " processes (each model copy runs on processes / " +
                            "data-parallel of them)");
  }
  const int P = processes / D;  // the ranks of one model copy
  require_ranks_fit(layout, P, D);
  if (D > 1 && device != "cpu") {
    throw core::ConfigError("--data-parallel runs on the CPU so far; use --device cpu or --data-parallel 1");
  }
  if (grad_accum < 1 || B % grad_accum != 0) {
    throw core::ConfigError("--grad-accum " + std::to_string(grad_accum) + " must be 1 or more and divide --batch " +
                            std::to_string(B) + " (each micro-batch is batch / grad-accum sequences)");
  }
  if (B % (D * grad_accum) != 0) {
    throw core::ConfigError("--batch " + std::to_string(B) + " must be a multiple of --data-parallel " +
                            std::to_string(D) + " x --grad-accum " + std::to_string(grad_accum) +
                            " (each model copy runs batch / data-parallel sequences, in grad-accum micro-batches)");
  }
  require_batch_fits(layout, B / D, P, T, sequence_parallel, grad_accum,
                     D == 1 ? ""
                            : "a copy's share (--batch " + std::to_string(B) + " / --data-parallel " +
                                  std::to_string(D) + " = " + std::to_string(B / D) + ")");
}

/// --overlap hides 2D's SUMMA communication and data parallelism's gradient sums; asked of a run
/// that has neither (serial or 1d with D = 1), it changes nothing, and rank 0 says so on stderr (a
/// note, not an error: a sweep over layouts may pass it to every run).
inline void note_unused_overlap(const comm::World& world, bool overlap, const std::string& layout, int D) {
  if (!overlap || layout == "2d" || D > 1 || world.rank() != 0) return;
  std::fprintf(stderr,
               "note: --overlap changes nothing in this run (--layout %s, --data-parallel 1): it hides 2d's SUMMA "
               "communication and data parallelism's gradient sums, and the run has neither\n",
               layout.c_str());
  std::fflush(stderr);
}

/// A copy's share of one step's gradients. Copy d of D takes the sequences [d·B/D, (d+1)·B/D) of
/// the step's batch (inputs, targets: B sequences of T tokens) and runs them as grad_accum
/// micro-batches of Bm = B / (D·grad_accum); every micro-batch is a part of the batch
/// (model::BatchSlice), so its dropout masks are the whole batch's and its loss is its share of the
/// whole batch's mean. The gradients add up over the micro-batches. Returns this copy's part of
/// the loss. The caller zeroes the gradients first.
template <typename Model>
double accumulate_gradients(Model& gpt, const DataParallel& dp, const int* inputs, const int* targets, int B, int T,
                            int grad_accum, int step) {
  const int share = B / dp.replicas, Bm = share / grad_accum;
  double loss = 0.0;
  for (int k = 0; k < grad_accum; ++k) {
    const int64_t b0 = int64_t{dp.replica} * share + int64_t{k} * Bm, row = b0 * T;
    loss += gpt.forward(inputs + row, targets + row, Bm, T, static_cast<uint32_t>(step), true,
                        model::BatchSlice{.global = B, .b0 = b0, .last = k + 1 == grad_accum});
    gpt.backward();
  }
  return loss;
}

/// While it lives, `gpt`'s gradients are summed over the copies as its backward pass completes them,
/// block by block (model::GradientSum as the model's listener; with `overlap` the sums stay in flight
/// while the pass goes on). Nothing with D = 1. blocked_ms() is the time the backward pass spent in
/// those sums since the last call: starting them, and waiting for them.
template <typename Model>
class SumOverCopies {
 public:
  SumOverCopies(Model& gpt, const DataParallel& dp, bool overlap) : gpt_(gpt) {
    if (dp.data == nullptr) return;
    sum_.emplace(gpt.params(), *dp.data, overlap);
    gpt.set_gradient_listener(&*sum_);
  }
  ~SumOverCopies() { gpt_.set_gradient_listener(nullptr); }
  SumOverCopies(const SumOverCopies&) = delete;
  SumOverCopies& operator=(const SumOverCopies&) = delete;

  double blocked_ms() { return sum_ ? sum_->take_blocked_ms() : 0.0; }

 private:
  Model& gpt_;
  std::optional<model::GradientSum> sum_;
};

/// The copies' parts of a step's loss summed, so every rank ends with the whole batch's (with D = 1,
/// `loss`). Collective over the data group.
template <typename Model>
double loss_over_copies(Model& gpt, const DataParallel& dp, double loss) {
  if (dp.data == nullptr) return loss;
  return comm::all_reduce_scalar(*dp.data, gpt.context(), loss);
}

}  // namespace optimus::train
