// No allocation inside a training step (chapter 6): after the first step, the trainer's step asks
// the system for no memory — every scratch, communication and gradient buffer of steps 2 to 4 is a
// block the ledger's pool kept from step 1 — in every layout, with recomputation, with gradient
// accumulation over micro-batches and in 2D with overlap, dropout on. Counted by the ledgers'
// system_allocations(): the model's ledger and the process's host ledger (where a staged
// communicator keeps its buffer).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "allocations.h"
#include "compare.h"
#include "layouts.h"

using namespace optimus;

TEST_CASE("after the first step, a training step allocates nothing, in every layout", "[allocations]") {
  const int P = mpi_test::world().size();
  const auto cfg = equivalence::config_for(P);
  const int T = 16, Bm = equivalence::batch_for(P, T);
  auto layouts = equivalence::layouts_of(P);
  if (equivalence::is_square(P)) layouts.push_back({"2d", false, true});  // SUMMA's double buffers too
  bool none = true;
  for (const equivalence::Layout& layout : layouts) {
    for (const model::Recompute recompute : {model::Recompute::none, model::Recompute::block}) {
      for (const int K : {1, 4}) {
        core::MemoryLedger ledger;
        std::vector<int64_t> per_step;
        equivalence::with_layout(layout, cfg, recompute, ledger, [&](auto& gpt) {
          per_step = equivalence::allocations_per_step(gpt, {&ledger, &core::MemoryLedger::host()}, 4, K * Bm, T, K);
        });
        // The most any rank asked for: in step 1, and in steps 2 to 4 together.
        int first = static_cast<int>(per_step[0]), later = static_cast<int>(per_step[1] + per_step[2] + per_step[3]);
        mpi_test::world().comm().all_reduce(&first, 1, comm::ReduceOp::max);
        mpi_test::world().comm().all_reduce(&later, 1, comm::ReduceOp::max);
        equivalence::report_count("ledger: system allocations in steps 2-4, " + layout.name() +
                                      " P=" + std::to_string(P) + ", recompute " + model::to_string(recompute) +
                                      ", K=" + std::to_string(K) + " (step 1: " + std::to_string(first) + ")",
                                  later, 0);
        none = none && later == 0;
      }
    }
  }
  MPI_REQUIRE(none);
}
