// Sizes checked before anything is allocated: a model, a batch or a data file that cannot fit in
// this machine's memory is refused in one sentence, instead of an allocation failure on some rank
// or a silent kill by the kernel's out-of-memory handler. A run's need is measured, not estimated:
// the planner runs the run's own step on the meta device (plan/run_peak.h) and reads its memory
// ledger's peak; the trainer and the benchmark, below the planner, receive that measurement as a
// function (StepPeak) from the command that calls them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "comm/world.h"
#include "model/activation_block.h"
#include "model/config.h"
#include "train/layout.h"

namespace optimus::train {

/// The memory the ranks on this machine may still allocate together: /proc/meminfo's MemAvailable,
/// or less where this process's memory cgroup leaves less (memory_limits.h; `limit` then names it).
struct AvailableMemory {
  uint64_t bytes = 0;  // 0: nothing readable
  std::string limit;   // empty: MemAvailable decided
};
AvailableMemory available_memory();

/// This process's resident memory now (VmRSS of /proc/self/status): its libraries, MPI's buffers,
/// the data read so far; 0 if it cannot be read.
double resident_bytes();

/// What a run does with the model: a training step, or a forward pass (eval, sample).
enum class ModelUse { train, evaluate };

/// Everything that decides the buffers of one rank of a run: what a memory check measures.
struct RunShape {
  Layout layout = Layout::serial;
  int world_size = 1;           // D·P ranks: D copies of the layout on P ranks each
  int rank = 0;                 // the rank measured (world rank d·P + t)
  int data_parallel = 1;        // D
  int grad_accum = 1;           // micro-batches per step, each B / (D·grad_accum) sequences
  model::GPTConfig config{};    // the model (its n_positions rows of wpe)
  int B = 1, T = 1;             // the whole step's sequences, and their length (at most n_positions)
  model::StageOptions stage{};  // recomputation, sequence parallelism, overlap
  ModelUse use = ModelUse::train;
  int threads = 1;  // CPU threads whose per-thread scratch the ops hold (core::scratch_threads)
};

/// What `optimus sample` runs, and `train --sample` at the end: the serial model of `config` on one
/// process, a forward pass of one sequence of n_positions tokens.
RunShape sampling_shape(const model::GPTConfig& config);

/// The peak bytes of rank `shape.rank`'s memory ledger over one step (or forward pass) of `shape`,
/// model building included. The command passes plan::step_peak_bytes, which runs the stages' own
/// code on the meta device; train/ cannot call it itself (the planner sits above it).
using StepPeak = std::function<double(const RunShape&)>;

/// A lower bound of one rank's bytes for a step of `config` at batch B, with the work split over
/// `ranks` ranks: per parameter 16 bytes to train (values, gradients, the two AdamW moments) or 4 to
/// evaluate (values: the checkpoint's pages are the page cache's); and the activations: every
/// block's input (N·C floats each, N = B·T) and one block's working set (15·N·C + NH·B·T²) — what a
/// run with --recompute block keeps at least; without it every block keeps its working set, 16·N·C
/// + NH·B·T² a block — plus the logits (N·V floats); all divided by `ranks`. The stages need more
/// (1D replicates some activations, every stage has workspace), so a run this bound refuses could
/// never fit, whether or not it recomputes. require_run_memory screens with it before the meta step,
/// whose own time and bookkeeping grow with the layers and the batch.
double step_bytes_lower_bound(const model::GPTConfig& config, int B, int ranks, ModelUse use);

/// Collective: throws core::ConfigError on every rank if `bytes_per_rank` times the number of
/// ranks on some machine exceeds that machine's available memory, or `bytes_per_rank` exceeds what
/// some process's address-space limit (ulimit -v) leaves it. `what` names the need ("training this
/// model at --batch 8"), `fix` says what to change; the message says "needs at least" (a bound) and
/// gives the sizes in GiB and the limit.
void require_memory(comm::World& world, double bytes_per_rank, const std::string& what, const std::string& fix);

/// Collective: the exact check of a run before it allocates anything. Every rank measures its own
/// step: `step_peak(shape)` with shape.rank its world rank (after the lower-bound screen above).
/// Refused on every rank, in one sentence naming the need, when the ranks of some machine together
/// need more than its available memory (each process's resident memory is already counted there),
/// or a rank's step needs more than its address-space limit leaves it. With OPTIMUS_MEMORY_REPORT
/// set in the environment, every rank writes its numbers to stderr in one line ("memory check: rank
/// 0 of 4: ...") whether or not the run fits. `shape.rank` is overwritten with this rank's.
void require_run_memory(comm::World& world, RunShape shape, const StepPeak& step_peak, const std::string& what,
                        const std::string& fix);

/// Collective: the largest data file each process may load, a fifth of its share of the available
/// memory, or of what its address-space limit leaves (a byte is read, then held as a 4-byte token).
uint64_t data_bytes_per_process(comm::World& world);

}  // namespace optimus::train
