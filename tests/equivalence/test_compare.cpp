// The comparison helpers themselves (compare.h): a NaN in either tensor, at any position of any
// aggregation, must come out as a failing error, never as a smaller number.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "compare.h"

namespace {

constexpr double kBar = 1e-4;  // any bar: NaN <= bar is false, whatever bar is

}  // namespace

TEST_CASE("rel_error is NaN when either tensor holds a NaN, and 0 for equal tensors", "[compare]") {
  const std::vector<float> a{1.0f, 2.0f, 3.0f}, nan_a{1.0f, NAN, 3.0f};
  MPI_REQUIRE(equivalence::rel_error(a, a) == 0.0);
  MPI_REQUIRE(std::isnan(equivalence::rel_error(nan_a, a)));
  MPI_REQUIRE(std::isnan(equivalence::rel_error(a, nan_a)));
  MPI_REQUIRE(!(equivalence::rel_error(nan_a, a) <= kBar));
}

TEST_CASE("worse and worst_of keep a NaN wherever it comes", "[compare]") {
  MPI_REQUIRE(equivalence::worse(1e-7, 2e-7) == 2e-7);
  MPI_REQUIRE(std::isnan(equivalence::worse(1e-7, NAN)));
  MPI_REQUIRE(std::isnan(equivalence::worse(NAN, 1e-7)));
  MPI_REQUIRE(std::isnan(equivalence::worst_of({NAN, 1e-7, 2e-7})));
  MPI_REQUIRE(std::isnan(equivalence::worst_of({1e-7, NAN, 2e-7})));
  MPI_REQUIRE(std::isnan(equivalence::worst_of({1e-7, 2e-7, NAN})));
  MPI_REQUIRE(equivalence::worst_of({1e-7, 3e-7, 2e-7}) == 3e-7);
  // What the helpers replace: std::max drops a NaN that does not come first.
  MPI_REQUIRE(!std::isnan(std::max(1e-7, static_cast<double>(NAN))));
}

TEST_CASE("WorstError keeps the first NaN and its name, at any position", "[compare]") {
  const char* names[] = {"t0", "t1", "t2"};
  for (int at = 0; at < 3; ++at) {
    equivalence::WorstError w;
    for (int k = 0; k < 3; ++k) w.add(k == at ? NAN : 1e-7 * (k + 1), names[k]);
    MPI_REQUIRE(std::isnan(w.value));
    MPI_REQUIRE(w.name == names[at]);
    MPI_REQUIRE(!(w.value <= kBar));
  }
  equivalence::WorstError w;
  w.add(1e-7, "a"), w.add(5e-7, "b"), w.add(2e-7, "c");
  MPI_REQUIRE((w.value == 5e-7 && w.name == "b"));
}

TEST_CASE("worst_over_ranks is NaN on every rank when one rank's error is NaN", "[compare]") {
  const int r = mpi_test::world().rank();
  MPI_REQUIRE(equivalence::worst_over_ranks(1e-7 * (r + 1)) == 1e-7 * mpi_test::world().size());
  MPI_REQUIRE(std::isnan(equivalence::worst_over_ranks(r == mpi_test::world().size() - 1 ? NAN : 1e-7)));
}
