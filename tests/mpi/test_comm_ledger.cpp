// The communication ledger: after known calls, calls and bytes equal the definition in
// comm_ledger.h exactly; children of split() record into the parent's ledger under their own
// name; snapshot/since measures what happened in between (one training step, in the benchmarks).
#include <string>

#include "comm/mpi_communicator.h"
#include "mpi_test.h"

using mpi_test::world;
using optimus::comm::CommLedger;
using optimus::comm::CommOp;
using optimus::comm::MpiCommunicator;
using optimus::comm::ReduceOp;

TEST_CASE("CommLedger adds up calls and bytes per communicator and operation", "[ledger]") {
  CommLedger ledger;
  ledger.record("row", CommOp::all_reduce, 100, 3);
  ledger.record("row", CommOp::all_reduce, 20, 3);
  ledger.record("row", CommOp::broadcast, 8, 3);
  ledger.record("col", CommOp::reduce, 4, 2);
  ledger.record("col", CommOp::barrier, 0, 2);

  MPI_REQUIRE(ledger.calls("row", CommOp::all_reduce) == 2);
  MPI_REQUIRE(ledger.bytes("row", CommOp::all_reduce) == 120);
  MPI_REQUIRE(ledger.calls("row", CommOp::reduce) == 0);
  MPI_REQUIRE(ledger.calls("nobody", CommOp::reduce) == 0);
  MPI_REQUIRE((ledger.calls("row") == 3 && ledger.bytes("row") == 128));
  MPI_REQUIRE((ledger.calls("col") == 2 && ledger.bytes("col") == 4));
  MPI_REQUIRE((ledger.calls() == 5 && ledger.bytes() == 132));
  MPI_REQUIRE(ledger.communicators() == std::vector<std::string>{"col", "row"});
  MPI_REQUIRE((ledger.group_size("row") == 3 && ledger.group_size("col") == 2 && ledger.group_size("nobody") == 0));
  MPI_REQUIRE_THROWS_AS(ledger.record("row", CommOp::barrier, 0, 4), std::logic_error);  // one name, one group

  const std::string report = ledger.report();
  MPI_REQUIRE(report.find("all_reduce") != std::string::npos);
  MPI_REQUIRE(report.find("reduce_scatter") == std::string::npos);  // unused operations are left out
  MPI_REQUIRE(report.find("total") != std::string::npos);

  const CommLedger before = ledger.snapshot();
  ledger.record("row", CommOp::all_reduce, 40, 3);
  ledger.record("world", CommOp::all_gather, 64, 5);
  const CommLedger step = ledger.since(before);
  MPI_REQUIRE((step.calls("row", CommOp::all_reduce) == 1 && step.bytes("row", CommOp::all_reduce) == 40));
  MPI_REQUIRE((step.calls("world", CommOp::all_gather) == 1 && step.bytes("world") == 64));
  MPI_REQUIRE((step.calls() == 2 && step.bytes() == 104));
  MPI_REQUIRE((step.group_size("world") == 5 && step.group_size("row") == 3));
  MPI_REQUIRE((before.calls() == 5 && ledger.calls() == 7));      // a snapshot is a copy
  MPI_REQUIRE_THROWS_AS(before.since(ledger), std::logic_error);  // not an earlier snapshot

  ledger.reset();
  MPI_REQUIRE((ledger.calls() == 0 && ledger.bytes() == 0 && ledger.communicators().empty()));
  MPI_REQUIRE(ledger.group_size("row") == 0);
}

TEST_CASE("every collective records one call and the bytes of its full result buffer", "[ledger]") {
  CommLedger ledger;
  MpiCommunicator comm(MPI_COMM_WORLD, "t", ledger);
  const int64_t p = comm.size();
  std::vector<float> f(static_cast<size_t>(5 * p), 1.0f), g(static_cast<size_t>(5 * p));
  std::vector<double> d(static_cast<size_t>(3 * p), 1.0), e(static_cast<size_t>(3 * p));
  std::vector<int32_t> k(4, 1);

  comm.all_reduce(f.data(), 5);
  comm.all_reduce(f.data(), 5, ReduceOp::max);
  comm.broadcast(d.data(), 3, comm.size() - 1);
  comm.reduce(k.data(), 4, 0);
  comm.all_gather(g.data(), f.data(), 2);
  comm.reduce_scatter(e.data(), d.data(), 3);
  comm.barrier();

  MPI_REQUIRE((ledger.calls("t", CommOp::all_reduce) == 2 && ledger.bytes("t", CommOp::all_reduce) == 2 * 5 * 4));
  MPI_REQUIRE((ledger.calls("t", CommOp::broadcast) == 1 && ledger.bytes("t", CommOp::broadcast) == 3 * 8));
  MPI_REQUIRE((ledger.calls("t", CommOp::reduce) == 1 && ledger.bytes("t", CommOp::reduce) == 4 * 4));
  MPI_REQUIRE((ledger.calls("t", CommOp::all_gather) == 1 && ledger.bytes("t", CommOp::all_gather) == p * 2 * 4));
  MPI_REQUIRE(
      (ledger.calls("t", CommOp::reduce_scatter) == 1 && ledger.bytes("t", CommOp::reduce_scatter) == p * 3 * 8));
  MPI_REQUIRE((ledger.calls("t", CommOp::barrier) == 1 && ledger.bytes("t", CommOp::barrier) == 0));
  MPI_REQUIRE((ledger.calls() == 7 && ledger.bytes() == 40 + 24 + 16 + p * 8 + p * 24));

  SECTION("a child of split() records into the same ledger under its own name") {
    auto child = comm.split(comm.rank() % 2, comm.rank(), "half");
    child->all_reduce(k.data(), 4);
    MPI_REQUIRE((ledger.calls("t", CommOp::split) == 1 && ledger.bytes("t", CommOp::split) == 0));
    MPI_REQUIRE((ledger.calls("half", CommOp::all_reduce) == 1 && ledger.bytes("half", CommOp::all_reduce) == 16));
    MPI_REQUIRE(&child->ledger() == &ledger);
    MPI_REQUIRE((ledger.group_size("t") == p && ledger.group_size("half") == child->size()));
  }
}

TEST_CASE("the world records into the process ledger; snapshot and since measure one step", "[ledger]") {
  CommLedger& process = CommLedger::process();
  MPI_REQUIRE(&world().comm().ledger() == &process);
  const CommLedger before = process.snapshot();

  // "One step": what the test sends through the world's communicator.
  std::vector<float> x(10, 1.0f);
  world().comm().all_reduce(x.data(), 10);
  world().comm().barrier();
  const bool agreed = world().all_agree(true);  // one int32 all-reduce

  const CommLedger step = process.since(before);
  MPI_REQUIRE(agreed);
  MPI_REQUIRE((step.calls("world", CommOp::all_reduce) == 2 && step.bytes("world", CommOp::all_reduce) == 44));
  MPI_REQUIRE(step.calls("world", CommOp::barrier) == 1);
  MPI_REQUIRE((step.calls() == 3 && step.bytes() == 44));
}
