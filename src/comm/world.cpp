// World: MPI initialisation and finalisation, printing on rank 0, and the two error exits.
#include "comm/world.h"

#include <mpi.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "comm/mpi_communicator.h"
#include "core/errors.h"

namespace optimus::comm {

World::World(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) throw std::logic_error("World: MPI is already initialised; create one World, first thing in main");
  int provided = 0;
  OPTIMUS_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
  // MPI's default handler aborts inside MPI with its own message; returning codes lets
  // OPTIMUS_MPI_CHECK say which of our calls failed. Split communicators inherit the handler.
  OPTIMUS_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  comm_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, "world");
  if (provided < MPI_THREAD_FUNNELED) {
    fail("this MPI library offers thread level " + std::to_string(provided) +
         ", below MPI_THREAD_FUNNELED; use an MPI built with thread support (Debian's openmpi-bin has it)");
  }
}

World::~World() {
  comm_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void World::print0(const char* format, ...) const {
  if (rank() != 0) return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::fflush(stdout);
}

bool World::all_agree(bool ok) {
  int32_t failures = ok ? 0 : 1;
  comm_->all_reduce(&failures, 1, ReduceOp::sum);
  return failures == 0;
}

void World::fail(const std::string& message) {
  if (rank() == 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
  }
  comm_.reset();
  MPI_Finalize();  // every rank arrives here, so finalize's own synchronisation completes
  std::exit(1);
}

void World::abort(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "rank %d: error: %s\n", rank(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this tells the compiler so
}

int run_main(int argc, char** argv, const std::function<int(World&)>& body) {
  World world(argc, argv);
  try {
    return body(world);
  } catch (const core::ConfigError& e) {
    world.fail(e.what());
  } catch (const std::exception& e) {
    world.abort(e.what());
  } catch (...) {
    world.abort("an exception that is not a std::exception escaped");
  }
}

}  // namespace optimus::comm
