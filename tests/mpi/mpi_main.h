// What the mains of the MPI test binaries share (tests/mpi, tests/equivalence, tests/gpu): the Catch2
// session set up alike on every rank, and the verdict combined over the world. Include it, after
// `#define CATCH_CONFIG_RUNNER`, from a main only: Catch declares its Session there alone.
#pragma once

#include <string>

#include "mpi_test.h"

namespace mpi_test {

/// The Catch2 session of an MPI test main, set up alike on every rank (the same arguments, so a bad
/// command line ends every rank the same way): no colours (mpiexec gives every rank a terminal), a
/// tag that matches no test is an error. Returns the exit code when the program should stop here
/// (a bad command line, or a listing, which rank 0 prints), or -1 to run the tests.
inline int prepare_session(Catch::Session& session, int argc, char** argv) {
  session.configData().useColour = Catch::UseColour::No;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  Catch::ConfigData& config = session.configData();
  if (config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters) {
    if (world().rank() == 0) session.run();  // Catch returns the number listed: not a verdict
    return 0;
  }
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoTests);
  return -1;
}

/// Combines this rank's Catch result over the world; rank 0 prints "<what>: all N ranks passed" or
/// the ranks that failed. Returns the exit code (the same on every rank).
inline int combined_verdict(int local_failures, const std::string& what) {
  const std::string failed = failed_ranks(local_failures == 0);
  if (failed.empty()) {
    world().print0("%s: all %d ranks passed\n", what.c_str(), world().size());
  } else {
    world().print0("%s: FAILED on %s\n", what.c_str(), failed.c_str());
  }
  return failed.empty() ? 0 : 1;
}

}  // namespace mpi_test
