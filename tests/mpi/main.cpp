// The MPI tests' main: one Catch2 session per rank, then every rank's verdict is combined, so the
// job exits non-zero on every rank if any rank failed, and rank 0 says which ranks failed.
// Run as: mpiexec -np N test_mpi "[tag]"   (a tag that matches no test is an error).
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "mpi_test.h"

namespace {
optimus::comm::World* the_world = nullptr;
}

namespace mpi_test {

optimus::comm::World& world() {
  return *the_world;
}

std::string failed_ranks(bool ok) {
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

}  // namespace mpi_test

int main(int argc, char** argv) {
  optimus::comm::World world(argc, argv);
  the_world = &world;

  Catch::Session session;
  // mpiexec gives every rank a terminal, so Catch would colour logs too; --use-colour yes restores it.
  session.configData().useColour = Catch::UseColour::No;
  // Same arguments on every rank, so a bad command line ends every rank the same way.
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  Catch::ConfigData& config = session.configData();
  if (config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters) {
    if (world.rank() == 0) session.run();  // Catch returns the number listed: not a verdict
    return 0;
  }
  // A tag with no tests would otherwise pass silently.
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoTests);
  const int local = session.run();

  const std::string failed = mpi_test::failed_ranks(local == 0);
  if (failed.empty()) {
    world.print0("mpi tests: all %d ranks passed\n", world.size());
  } else {
    world.print0("mpi tests: FAILED on %s\n", failed.c_str());
  }
  the_world = nullptr;
  return failed.empty() ? 0 : 1;
}
