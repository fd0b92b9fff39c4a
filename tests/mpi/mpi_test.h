// Assertions for tests that run on every rank of an MPI job. MPI_REQUIRE(expr)
// combines all ranks' verdicts before asserting, so when expr is false on one rank, every rank
// fails that assertion together and leaves the test case — nobody is left waiting in a later
// collective. Use only these in tests/mpi, and call them on every rank of the world.
#pragma once

#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"  // OPTIMUS_MPI_CHECK
#include "comm/world.h"

namespace mpi_test {

/// The World that tests/mpi/main.cpp created.
optimus::comm::World& world();

/// Collective over the world: "" if ok on every rank, else e.g. "ranks 0, 2 (of 4)". Goes to MPI
/// directly, so the process's communication ledger sees only what the tests themselves send.
inline std::string failed_ranks(bool ok) {
  const int p = world().size();
  const int mine = ok ? 0 : 1;
  std::vector<int> failed(static_cast<size_t>(p));
  OPTIMUS_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, failed.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::string list;
  int count = 0;
  for (int r = 0; r < p; ++r) {
    if (!failed[static_cast<size_t>(r)]) continue;
    list += (count++ ? ", " : "") + std::to_string(r);
  }
  if (count == 0) return "";
  return (count == 1 ? "rank " : "ranks ") + list + " (of " + std::to_string(p) + ")";
}

/// Evaluates a test expression; an exception counts as false (and is reported) instead of
/// escaping on one rank and leaving the others in the next collective.
template <typename F>
bool evaluate(F&& expr) {
  try {
    return static_cast<bool>(expr());
  } catch (const std::exception& e) {
    UNSCOPED_INFO("rank " << world().rank() << ": exception: " << e.what());
  } catch (...) {
    UNSCOPED_INFO("rank " << world().rank() << ": an exception that is not a std::exception");
  }
  return false;
}

/// Runs `body`, in which every rank makes the same collective calls (building a model, a forward or
/// backward pass, a gather). An exception there on one rank cannot be combined with the others'
/// verdicts, as MPI_REQUIRE does: they may be waiting in a collective inside the call that this
/// rank has left. So the rank reports it in one line and ends the whole job (MPI_Abort), which
/// fails the test in seconds instead of hanging it. Catch's own assertion failures (not
/// std::exception) pass through: MPI_REQUIRE raises them on every rank alike.
template <typename F>
decltype(auto) or_abort(F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    optimus::comm::abort_world(std::string("a collective call failed on this rank alone: ") + e.what());
  }
}

/// Exact element-wise equality; on mismatch, this rank reports the first differing element.
template <typename T>
bool equal(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    UNSCOPED_INFO("rank " << world().rank() << ": got " << got.size() << " elements, want " << want.size());
    return false;
  }
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k] != want[k]) {
      UNSCOPED_INFO("rank " << world().rank() << ": first difference at [" << k << "]: got " << got[k] << ", want "
                            << want[k]);
      return false;
    }
  }
  return true;
}

/// True if f() throws an E; otherwise this rank reports what happened instead.
template <typename E, typename F>
bool throws(F&& f) {
  try {
    f();
  } catch (const E&) {
    return true;
  } catch (const std::exception& e) {
    UNSCOPED_INFO("rank " << world().rank() << ": threw another exception: " << e.what());
    return false;
  } catch (...) {
    UNSCOPED_INFO("rank " << world().rank() << ": threw an exception that is not a std::exception");
    return false;
  }
  UNSCOPED_INFO("rank " << world().rank() << ": threw nothing");
  return false;
}

}  // namespace mpi_test

// Evaluate locally; on a failing rank note the rank and the expression; combine over the world;
// then every rank passes, or every rank fails with the list of ranks where it was false.
#define OPTIMUS_MPI_ASSERT(on_failure, text, ...)                                                           \
  do {                                                                                                      \
    const bool mpi_test_ok_ = ::mpi_test::evaluate([&] { return static_cast<bool>(__VA_ARGS__); });         \
    if (!mpi_test_ok_) UNSCOPED_INFO("rank " << ::mpi_test::world().rank() << ": " << text << " is false"); \
    const std::string mpi_test_failed_ = ::mpi_test::failed_ranks(mpi_test_ok_);                            \
    if (mpi_test_failed_.empty()) {                                                                         \
      SUCCEED(text);                                                                                        \
    } else {                                                                                                \
      on_failure(text << " is false on " << mpi_test_failed_);                                              \
    }                                                                                                       \
  } while (false)

/// Like REQUIRE, on every rank at once: a failure anywhere ends the test case everywhere.
#define MPI_REQUIRE(...) OPTIMUS_MPI_ASSERT(FAIL, #__VA_ARGS__, __VA_ARGS__)
/// Like CHECK, on every rank at once: a failure anywhere is recorded everywhere, and all go on.
#define MPI_CHECK(...) OPTIMUS_MPI_ASSERT(FAIL_CHECK, #__VA_ARGS__, __VA_ARGS__)
/// Like REQUIRE_THROWS_AS, on every rank at once.
#define MPI_REQUIRE_THROWS_AS(expr, type) \
  OPTIMUS_MPI_ASSERT(FAIL, #expr " throws " #type, ::mpi_test::throws<type>([&] { (void)(expr); }))
