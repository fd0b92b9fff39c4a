// The Communicator front-end's argument checks, barrier and split (the typed collectives are
// templates in communicator.h), and the end of a job when one rank fails alone.
#include "comm/communicator.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

namespace optimus::comm {

void abort_world(const std::string& message) noexcept {
  int running = 0, finalized = 0, rank = -1;
  MPI_Initialized(&running);
  MPI_Finalized(&finalized);
  if (running && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fflush(stdout);
  std::fprintf(stderr, "rank %d: error: %s\n", rank, message.c_str());
  std::fflush(stderr);
  if (running && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; without MPI this ends the process
}

void Request::wait_or_abort() noexcept {
  try {
    wait();
  } catch (const std::exception& e) {
    abort_world(std::string("a started collective failed as its Request was destroyed: ") + e.what());
  } catch (...) {
    abort_world("a started collective failed as its Request was destroyed (an exception that is not a std::exception)");
  }
}

void Communicator::barrier() {
  do_barrier();
  record(CommOp::barrier, 0);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, std::string name) {
  if (color < 0) {
    throw std::invalid_argument("split of '" + name_ + "': color " + std::to_string(color) +
                                " is negative; colors must be 0 or more");
  }
  auto child = do_split(color, key, std::move(name));
  record(CommOp::split, 0);
  return child;
}

void Communicator::check_count(const char* op, int64_t n) const {
  if (n < 0) {
    throw std::invalid_argument(std::string(op) + " on '" + name_ + "': count " + std::to_string(n) +
                                " is negative; pass the number of elements (0 or more)");
  }
}

void Communicator::check_root(const char* op, int root) const {
  if (root < 0 || root >= size_) {
    throw std::invalid_argument(std::string(op) + " on '" + name_ + "': root " + std::to_string(root) +
                                " is not a rank of this group of " + std::to_string(size_) + "; pass a root in [0, " +
                                std::to_string(size_) + ")");
  }
}

}  // namespace optimus::comm
