// L1: each collective on integer-valued data, for float, double and int32, both
// reduce ops, every root, counts 0, 1 and odd. Rank s's element k is value(s, k), so every rank
// knows every input and the expected result is exact; results are compared with ==.
#include <algorithm>
#include <chrono>
#include <climits>
#include <stdexcept>
#include <thread>

#include "comm/mpi_communicator.h"
#include "mpi_test.h"

using mpi_test::equal;
using mpi_test::world;
using optimus::comm::Communicator;
using optimus::comm::ReduceOp;

namespace {

// Small integers of both signs (exact in float), different per rank, so that the sum and the max
// of element k each depend on several ranks.
int value(int s, int64_t k) {
  return static_cast<int>(((s + 1) * (k + 3)) % 17) - 8;
}

template <typename T>
std::vector<T> input(int s, int64_t n) {
  std::vector<T> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(k)] = static_cast<T>(value(s, k));
  return x;
}

// Element k of the reduction over ranks 0..p-1 of value(s, k).
int reduced(int p, int64_t k, ReduceOp op) {
  int acc = value(0, k);
  for (int s = 1; s < p; ++s) acc = op == ReduceOp::sum ? acc + value(s, k) : std::max(acc, value(s, k));
  return acc;
}

template <typename T>
std::vector<T> reduced(int p, int64_t n, ReduceOp op) {
  std::vector<T> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(k)] = static_cast<T>(reduced(p, k, op));
  return x;
}

const char* op_name(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : "max";
}

}  // namespace

TEMPLATE_TEST_CASE("all_reduce gives every rank the exact sum or max", "[all_reduce]", float, double, int32_t) {
  Communicator& comm = world().comm();
  const ReduceOp op = GENERATE(ReduceOp::sum, ReduceOp::max);
  const int64_t n = GENERATE(0, 1, 7, 1001);
  CAPTURE(op_name(op), n);

  std::vector<TestType> buf = input<TestType>(comm.rank(), n);
  comm.all_reduce(buf.data(), n, op);
  MPI_REQUIRE(equal(buf, reduced<TestType>(comm.size(), n, op)));
}

TEMPLATE_TEST_CASE("broadcast copies the root's buffer to every rank, for every root", "[broadcast]", float, double,
                   int32_t) {
  Communicator& comm = world().comm();
  const int64_t n = GENERATE(0, 1, 7, 1001);
  for (int root = 0; root < comm.size(); ++root) {
    CAPTURE(n, root);
    std::vector<TestType> buf =
        comm.rank() == root ? input<TestType>(root, n) : std::vector<TestType>(static_cast<size_t>(n), TestType(-99));
    comm.broadcast(buf.data(), n, root);
    MPI_REQUIRE(equal(buf, input<TestType>(root, n)));
  }
}

TEMPLATE_TEST_CASE("reduce leaves the exact sum or max on the root, for every root", "[reduce]", float, double,
                   int32_t) {
  Communicator& comm = world().comm();
  const ReduceOp op = GENERATE(ReduceOp::sum, ReduceOp::max);
  const int64_t n = GENERATE(0, 1, 7, 1001);
  for (int root = 0; root < comm.size(); ++root) {
    CAPTURE(op_name(op), n, root);
    std::vector<TestType> buf = input<TestType>(comm.rank(), n);
    comm.reduce(buf.data(), n, root, op);
    // Only the root's result is defined.
    MPI_REQUIRE(comm.rank() != root || equal(buf, reduced<TestType>(comm.size(), n, op)));
  }
}

TEMPLATE_TEST_CASE("all_gather puts rank k's block at k*n on every rank", "[all_gather]", float, double, int32_t) {
  Communicator& comm = world().comm();
  const int p = comm.size();
  const int64_t n = GENERATE(0, 1, 7, 1001);
  CAPTURE(n);

  std::vector<TestType> want(static_cast<size_t>(p * n));
  for (int s = 0; s < p; ++s) {
    for (int64_t k = 0; k < n; ++k) want[static_cast<size_t>(s * n + k)] = static_cast<TestType>(value(s, k));
  }
  std::vector<TestType> recv(static_cast<size_t>(p * n), TestType(-99));

  SECTION("separate send buffer") {
    const std::vector<TestType> send = input<TestType>(comm.rank(), n);
    comm.all_gather(recv.data(), send.data(), n);
    MPI_REQUIRE(equal(recv, want));
  }
  SECTION("in place: send is this rank's block of recv") {
    const std::vector<TestType> mine = input<TestType>(comm.rank(), n);
    std::copy(mine.begin(), mine.end(), recv.begin() + comm.rank() * n);
    comm.all_gather(recv.data(), recv.data() + comm.rank() * n, n);
    MPI_REQUIRE(equal(recv, want));
  }
}

TEMPLATE_TEST_CASE("reduce_scatter gives rank r block r of the exact sum or max", "[reduce_scatter]", float, double,
                   int32_t) {
  Communicator& comm = world().comm();
  const int p = comm.size();
  const ReduceOp op = GENERATE(ReduceOp::sum, ReduceOp::max);
  const int64_t n = GENERATE(0, 1, 7, 1001);
  CAPTURE(op_name(op), n);

  const std::vector<TestType> send = input<TestType>(comm.rank(), p * n);  // (p, n)
  std::vector<TestType> recv(static_cast<size_t>(n), TestType(-99));
  comm.reduce_scatter(recv.data(), send.data(), n, op);

  std::vector<TestType> want(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    want[static_cast<size_t>(k)] = static_cast<TestType>(reduced(p, comm.rank() * n + k, op));
  MPI_REQUIRE(equal(recv, want));
}

TEST_CASE("World::all_agree is a logical AND over the world", "[all_reduce]") {
  MPI_REQUIRE(world().all_agree(true));
  MPI_REQUIRE(!world().all_agree(world().rank() != 0));
  MPI_REQUIRE(!world().all_agree(world().rank() != world().size() - 1));
}

TEST_CASE("bad counts and roots are refused before any communication, and not recorded",
          "[all_reduce][broadcast][reduce][all_gather][reduce_scatter]") {
  optimus::comm::CommLedger ledger;
  optimus::comm::MpiCommunicator comm(MPI_COMM_WORLD, "checked", ledger);
  const int64_t too_many = int64_t{INT_MAX} + 1;  // null buffers: nothing may be touched
  float* none = nullptr;

  MPI_REQUIRE_THROWS_AS(comm.all_reduce(none, too_many), std::length_error);
  MPI_REQUIRE_THROWS_AS(comm.broadcast(none, too_many, 0), std::length_error);
  MPI_REQUIRE_THROWS_AS(comm.reduce(none, too_many, 0), std::length_error);
  MPI_REQUIRE_THROWS_AS(comm.all_gather(none, none, too_many), std::length_error);
  MPI_REQUIRE_THROWS_AS(comm.reduce_scatter(none, none, too_many), std::length_error);
  MPI_REQUIRE_THROWS_AS(comm.all_reduce(none, -1), std::invalid_argument);
  MPI_REQUIRE_THROWS_AS(comm.broadcast(none, 1, comm.size()), std::invalid_argument);
  MPI_REQUIRE_THROWS_AS(comm.reduce(none, 1, -1), std::invalid_argument);
  MPI_REQUIRE(ledger.calls() == 0);
}

TEST_CASE("barrier: no rank leaves before the last one enters", "[barrier]") {
  Communicator& comm = world().comm();
  using clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one clock for all ranks on one host
  auto micros = [] {
    return static_cast<double>(
        std::chrono::duration_cast<std::chrono::microseconds>(clock::now().time_since_epoch()).count());
  };
  for (int late = 0; late < comm.size(); ++late) {
    CAPTURE(late);
    if (comm.rank() == late) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double enter = micros();
    comm.barrier();
    const double leave = micros();

    std::vector<double> enters(static_cast<size_t>(comm.size())), leaves(enters.size());
    comm.all_gather(enters.data(), &enter, 1);
    comm.all_gather(leaves.data(), &leave, 1);
    const double last_enter = *std::max_element(enters.begin(), enters.end());
    const double first_leave = *std::min_element(leaves.begin(), leaves.end());
    CAPTURE(last_enter, first_leave);
    MPI_REQUIRE(last_enter <= first_leave);
  }
}

TEST_CASE("split groups ranks by color, orders them by key, and the child communicates", "[split]") {
  Communicator& comm = world().comm();
  const int p = comm.size();
  const int r = comm.rank();

  SECTION("by parity, in reverse order of world rank") {
    auto child = comm.split(r % 2, -r, "parity");
    std::vector<int32_t> members;  // world ranks of my color, in the child's order (descending)
    for (int s = p - 1; s >= 0; --s) {
      if (s % 2 == r % 2) members.push_back(s);
    }
    const auto index = std::find(members.begin(), members.end(), r) - members.begin();
    MPI_REQUIRE(child->name() == "parity");
    MPI_REQUIRE(child->size() == static_cast<int>(members.size()));
    MPI_REQUIRE(child->rank() == index);

    std::vector<int32_t> gathered(members.size());
    const int32_t me = r;
    child->all_gather(gathered.data(), &me, 1);
    MPI_REQUIRE(equal(gathered, members));

    int32_t sum = r;
    child->all_reduce(&sum, 1);
    int32_t want = 0;
    for (int32_t s : members) want += s;
    MPI_REQUIRE(sum == want);
  }
  SECTION("equal keys keep the parent's order; a split of a split works") {
    auto all = comm.split(0, 0, "all");
    MPI_REQUIRE(all->size() == p);
    MPI_REQUIRE(all->rank() == r);
    auto alone = all->split(r, 0, "alone");
    MPI_REQUIRE(alone->size() == 1);
    MPI_REQUIRE(alone->rank() == 0);
    int32_t x = r;
    alone->all_reduce(&x, 1);
    MPI_REQUIRE(x == r);
  }
}
