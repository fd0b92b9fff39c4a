// Chapter 6's "no allocation inside a training step": the trainer's step, repeated, and how many
// blocks the ledgers asked of the system (MemoryLedger::system_allocations) during each step. The
// first step allocates its scratch, communication buffers and AdamW's moments; every later step
// reuses the blocks its Buffers gave back to the ledger's pool, so asks for none.
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory_ledger.h"
#include "model/activation_block.h"
#include "train/optimizer.h"

namespace equivalence {

/// The system allocations of `ledgers` together.
inline int64_t system_allocations(const std::vector<const optimus::core::MemoryLedger*>& ledgers) {
  int64_t n = 0;
  for (const auto* ledger : ledgers) n += ledger->system_allocations();
  return n;
}

/// `steps` training steps of `gpt` with dropout on (zero the gradients; forward and backward over K
/// micro-batches of the batch (B, T); clip; AdamW), each on a batch of its own: the system
/// allocations of `ledgers` during each step. K must divide B.
template <typename Model>
std::vector<int64_t> allocations_per_step(Model& gpt, const std::vector<const optimus::core::MemoryLedger*>& ledgers,
                                          int steps, int B, int T, int K = 1) {
  using optimus::model::BatchSlice;
  optimus::train::AdamW opt(gpt.params(), gpt.context(), optimus::train::AdamWOptions{});
  std::vector<int64_t> per_step;
  std::vector<int> in, tg;
  const int Bm = B / K;
  for (int s = 0; s < steps; ++s) {
    const int64_t before = system_allocations(ledgers);
    in.assign(static_cast<size_t>(B) * T, 0), tg.assign(in.size(), 0);
    for (size_t k = 0; k < in.size(); ++k) {
      in[k] = static_cast<int>((k * 37 + 11 * s) % 256);
      tg[k] = static_cast<int>((k * 53 + 7 + s) % 256);
    }
    gpt.params().zero_grads();
    for (int k = 0; k < K; ++k) {
      const int64_t b0 = int64_t{k} * Bm;
      const BatchSlice slice = K == 1 ? BatchSlice{} : BatchSlice{.global = B, .b0 = b0, .last = k + 1 == K};
      gpt.forward(in.data() + b0 * T, tg.data() + b0 * T, Bm, T, static_cast<uint32_t>(s), true, slice);
      gpt.backward();
    }
    gpt.clip_gradients(0.5f);
    opt.update(gpt.params(), 3e-3f);
    per_step.push_back(system_allocations(ledgers) - before);
  }
  return per_step;
}

}  // namespace equivalence
