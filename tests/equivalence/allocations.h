// "No allocation inside a step" (the design notes, docs/README.md; the pool is chapter 6's): the
// trainer's step, repeated, and how many blocks the ledgers asked of the system
// (MemoryLedger::system_allocations) during each step. The first step allocates its scratch,
// communication buffers and AdamW's moments; every later step reuses the blocks its Buffers gave
// back to the ledger's pool, so asks for none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compare.h"
#include "core/memory_ledger.h"
#include "layouts.h"
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

/// Every layout of this world (and 2D with overlap), with and without recomputation, in one pass
/// and in 4 micro-batches: `build(layout, config, recompute, ledger, body)` makes the model, and 4
/// steps count the system allocations of its ledger and the process's host ledger. Prints one line
/// per configuration (prefixed by `what`: the most any rank asked for in steps 2 to 4, and in step 1)
/// and returns whether none asked for any after step 1. Collective over the world.
template <typename Build>
bool no_allocations_after_first_step(const std::string& what, Build&& build) {
  using namespace optimus;
  const int P = mpi_test::world().size();
  const auto cfg = config_for(P);
  const int T = 16, Bm = batch_for(P, T);
  auto layouts = layouts_of(P);
  if (is_square(P)) layouts.push_back({"2d", false, true});  // SUMMA's double buffers too
  bool none = true;
  for (const Layout& layout : layouts) {
    for (const model::Recompute recompute : {model::Recompute::none, model::Recompute::block}) {
      for (const int K : {1, 4}) {
        core::MemoryLedger ledger;
        std::vector<int64_t> per_step;
        build(layout, cfg, recompute, ledger, [&](auto& gpt) {
          per_step = allocations_per_step(gpt, {&ledger, &core::MemoryLedger::host()}, 4, K * Bm, T, K);
        });
        int first = static_cast<int>(per_step[0]), later = static_cast<int>(per_step[1] + per_step[2] + per_step[3]);
        mpi_test::world().comm().all_reduce(&first, 1, comm::ReduceOp::max);
        mpi_test::world().comm().all_reduce(&later, 1, comm::ReduceOp::max);
        report_count(what + "ledger: system allocations in steps 2-4, " + layout.name() + " P=" + std::to_string(P) +
                         ", recompute " + model::to_string(recompute) + ", K=" + std::to_string(K) +
                         " (step 1: " + std::to_string(first) + ")",
                     later, 0);
        none = none && later == 0;
      }
    }
  }
  return none;
}

}  // namespace equivalence
