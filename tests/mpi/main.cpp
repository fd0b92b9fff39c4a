// The MPI tests' main: one Catch2 session per rank, then every rank's verdict is combined, so the
// job exits non-zero on every rank if any rank failed, and rank 0 says which ranks failed.
// Run as: mpiexec -np N test_mpi "[tag]"   (a tag that matches no test is an error).
#define CATCH_CONFIG_RUNNER
#include "mpi_main.h"

namespace {
optimus::comm::World* the_world = nullptr;
}

optimus::comm::World& mpi_test::world() {
  return *the_world;
}

int main(int argc, char** argv) {
  optimus::comm::World world(argc, argv);
  the_world = &world;
  Catch::Session session;
  if (const int rc = mpi_test::prepare_session(session, argc, argv); rc >= 0) return rc;
  const int verdict = mpi_test::combined_verdict(session.run(), "mpi tests");
  the_world = nullptr;
  return verdict;
}
