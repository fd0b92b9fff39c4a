// No allocation inside a training step (the design notes, docs/README.md; the pool is chapter 6's):
// after the first step, the trainer's step asks the system for no memory — every scratch,
// communication and gradient buffer of steps 2 to 4 is a block the ledger's pool kept from step 1 —
// in every layout, with recomputation, with gradient accumulation over micro-batches and in 2D with
// overlap, dropout on. Counted by the ledgers' system_allocations(): the model's ledger and the
// process's host ledger (where a staged communicator keeps its buffer).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "allocations.h"
#include "compare.h"
#include "layouts.h"

using namespace optimus;

TEST_CASE("after the first step, a training step allocates nothing, in every layout", "[allocations]") {
  MPI_REQUIRE(
      equivalence::no_allocations_after_first_step("", [](auto&&... args) { equivalence::with_layout(args...); }));
}
