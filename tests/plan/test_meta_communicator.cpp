// The MetaCommunicator on its own: it records what an MpiCommunicator records for the same calls
// (name, operation, bytes, group size) without touching its buffers, splits by the declared sizes
// (this rank's key as its rank) and refuses an undeclared name or a key outside the group, and a
// scalar all-reduce on a meta context gives NaN. One process: run at np 1.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

#include "comm/grid.h"
#include "comm/meta_communicator.h"
#include "comm/scalar.h"
#include "core/context.h"
#include "mpi_test.h"

using namespace optimus;
using comm::CommOp;

TEST_CASE("a meta world of 16 records its collectives as MPI would, touching no buffer", "[meta_comm]") {
  comm::CommLedger ledger;
  auto world = comm::MetaCommunicator::world(16, 5, {}, ledger);
  MPI_REQUIRE((world->rank() == 5 && world->size() == 16 && world->name() == "world"));
  float* nowhere = nullptr;  // a buffer it would fault on if it touched it (meta buffers fault too)
  world->all_reduce(nowhere, 10);
  world->broadcast(nowhere, 3, 15);
  world->all_gather(nowhere, nowhere, 2);
  world->reduce_scatter(nowhere, nowhere, 4);
  world->barrier();
  // The bytes of comm_ledger.h's definition: n·4, n·4, size·n·4, size·n·4, 0.
  MPI_REQUIRE(ledger.bytes("world", CommOp::all_reduce) == 40);
  MPI_REQUIRE(ledger.bytes("world", CommOp::broadcast) == 12);
  MPI_REQUIRE(ledger.bytes("world", CommOp::all_gather) == 16 * 2 * 4);
  MPI_REQUIRE(ledger.bytes("world", CommOp::reduce_scatter) == 16 * 4 * 4);
  MPI_REQUIRE((ledger.calls("world") == 5 && ledger.group_size("world") == 16));
  MPI_REQUIRE_THROWS_AS(world->broadcast(nowhere, 1, 16), std::invalid_argument);  // the base class's checks
  MPI_REQUIRE_THROWS_AS(comm::MetaCommunicator::world(4, 4), std::invalid_argument);
}

TEST_CASE("a meta world splits by declared sizes, the key being the rank, and names what it lacks", "[meta_comm]") {
  comm::CommLedger ledger;
  auto world = comm::MetaCommunicator::world(9, 7, {{"row", 3}, {"col", 3}}, ledger);
  comm::Grid2D grid(*world);  // rank 7 of a 3×3 grid: i = 2, j = 1
  MPI_REQUIRE((grid.i() == 2 && grid.j() == 1));
  MPI_REQUIRE((grid.row_comm().rank() == 1 && grid.row_comm().size() == 3 && grid.row_comm().name() == "row"));
  MPI_REQUIRE((grid.col_comm().rank() == 2 && grid.col_comm().size() == 3 && grid.col_comm().name() == "col"));
  MPI_REQUIRE((ledger.calls("world", CommOp::split) == 2 && ledger.group_size("world") == 9));

  std::string message;
  try {
    world->split(0, 0, "pipeline");
  } catch (const std::logic_error& e) {
    message = e.what();
  }
  MPI_REQUIRE(message.find("'pipeline'") != std::string::npos);
  MPI_REQUIRE_THROWS_AS(world->split(0, 3, "row"), std::logic_error);  // key 3 in a row of 3
}

TEST_CASE("a scalar all-reduce on a meta context is recorded and gives NaN", "[meta_comm]") {
  comm::CommLedger ledger;
  auto world = comm::MetaCommunicator::world(4, 0, {}, ledger);
  core::MemoryLedger memory;
  const double sum = comm::all_reduce_scalar(*world, core::meta_context(memory), 2.5);
  MPI_REQUIRE(std::isnan(sum));  // not the 2.5 it was given: the other ranks' values are unknown
  MPI_REQUIRE((ledger.calls("world", CommOp::all_reduce) == 1 && ledger.bytes("world", CommOp::all_reduce) == 8));
}
