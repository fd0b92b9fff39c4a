// Sizes checked before anything is allocated: a model, a batch or a data file that cannot fit in
// this machine's memory is refused in one sentence, instead of an allocation failure on some rank
// or a silent kill by the kernel's out-of-memory handler.
#pragma once

#include <cstdint>
#include <string>

#include "comm/world.h"
#include "model/config.h"

namespace optimus::train {

/// The memory the ranks on this machine may still allocate together: /proc/meminfo's MemAvailable,
/// or less where this process's memory cgroup leaves less (memory_limits.h; `limit` then names it).
struct AvailableMemory {
  uint64_t bytes = 0;  // 0: nothing readable
  std::string limit;   // empty: MemAvailable decided
};
AvailableMemory available_memory();

/// What a run does with the model, for step_bytes_lower_bound.
enum class ModelUse { train, evaluate };

/// A lower bound of one rank's bytes for a step of `config` at batch B, with the work split over
/// `ranks` ranks: per parameter 16 bytes to train (values, gradients, the two AdamW moments) or 8 to
/// evaluate (values, and the canonical copy read from the checkpoint); and the activations: every
/// block's input (N·C floats each, N = B·T) and one block's working set (15·N·C + NH·B·T²) — what a
/// run with --recompute block keeps at least; without it every block keeps its working set, 16·N·C
/// + NH·B·T² a block — plus the logits (N·V floats); all divided by `ranks`. The stages need more
/// (1D replicates some activations, every stage has workspace), so a run this bound refuses could
/// never fit, whether or not it recomputes.
double step_bytes_lower_bound(const model::GPTConfig& config, int B, int ranks, ModelUse use);

/// Collective: throws core::ConfigError on every rank if `bytes_per_rank` times the number of
/// ranks on some machine exceeds that machine's available memory, or `bytes_per_rank` exceeds what
/// some process's address-space limit (ulimit -v) leaves it. `what` names the need ("training this
/// model at --batch 8"), `fix` says what to change; the message gives the sizes in GiB and the limit.
void require_memory(comm::World& world, double bytes_per_rank, const std::string& what, const std::string& fix);

/// Collective: the largest data file each process may load, a fifth of its share of the available
/// memory, or of what its address-space limit leaves (a byte is read, then held as a 4-byte token).
uint64_t data_bytes_per_process(comm::World& world);

}  // namespace optimus::train
