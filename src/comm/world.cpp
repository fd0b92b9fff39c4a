// World: MPI initialisation and finalisation, printing on rank 0, agreeing on a failure, and the two
// error exits.
#include "comm/world.h"

#include <mpi.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "comm/mpi_communicator.h"
#include "core/errors.h"

namespace optimus::comm {

World::World(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) throw std::logic_error("World: MPI is already initialised; create one World, first thing in main");
  // Open MPI runs a started all-reduce (MPI_Iallreduce, the data-parallel sums) in its libnbc
  // component, whose default for an in-place call is a binomial tree: the whole buffer up to one
  // rank, then the whole sum back, one direction of each link after the other. Its ring (1) sends
  // as many bytes with both directions busy at once, half the time on a link (chapter 6). Open MPI
  // reads OMPI_MCA_* from each process's environment at MPI_Init; a value the user set is kept,
  // and other MPI libraries ignore the variable.
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
  int provided = 0;
  OPTIMUS_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
  // MPI's default handler aborts inside MPI with its own message; returning codes lets
  // OPTIMUS_MPI_CHECK say which of our calls failed. Split communicators inherit the handler.
  OPTIMUS_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  comm_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, "world");
  OPTIMUS_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &failure_comm_));
  if (provided < MPI_THREAD_FUNNELED) {
    fail("this MPI library offers thread level " + std::to_string(provided) +
         ", below MPI_THREAD_FUNNELED; use an MPI built with thread support (Debian's openmpi-bin has it)");
  }
}

World::~World() {
  comm_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (failure_comm_ != MPI_COMM_NULL) MPI_Comm_free(&failure_comm_);
  MPI_Finalize();
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

void World::agree_on(const std::function<void()>& check) {
  std::string message;
  try {
    check();
  } catch (const core::ConfigError& e) {
    message = e.what();
  }
  // The lowest failing rank (size() if none) tells every rank its message.
  int first = message.empty() ? size() : rank();
  OPTIMUS_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, failure_comm_));
  if (first == size()) return;
  int length = static_cast<int>(message.size());
  OPTIMUS_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, first, failure_comm_));
  message.resize(static_cast<size_t>(length));
  OPTIMUS_MPI_CHECK(MPI_Bcast(message.data(), length, MPI_CHAR, first, failure_comm_));
  throw core::ConfigError(first == 0 ? message : "on rank " + std::to_string(first) + ": " + message);
}

namespace {

// How long fail() waits for the other ranks before it concludes that they are not failing.
constexpr auto kFailGrace = std::chrono::seconds(15);

}  // namespace

void World::fail(const std::string& message) {
  // Every failing rank enters this barrier; a rank that is not failing never will.
  MPI_Request barrier = MPI_REQUEST_NULL;
  int everyone = 0;
  if (MPI_Ibarrier(failure_comm_, &barrier) == MPI_SUCCESS) {
    const auto deadline = std::chrono::steady_clock::now() + kFailGrace;
    while (!everyone && std::chrono::steady_clock::now() < deadline) {
      if (MPI_Test(&barrier, &everyone, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
      if (!everyone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!everyone) abort(message);  // some rank is elsewhere, maybe in a collective: end the job
  if (rank() == 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
  }
  comm_.reset();
  MPI_Comm_free(&failure_comm_);
  MPI_Finalize();  // every rank arrives here, so finalize's own synchronisation completes
  std::exit(1);
}

void World::abort(const std::string& message) {
  abort_world(message);
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
