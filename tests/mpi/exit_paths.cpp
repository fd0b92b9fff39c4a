// A program that ends through one of World's error exits, for the exit tests in
// CMakeLists.txt: `mpi_exit_paths fail|abort|config-error|exception`. In the one-rank cases the
// other ranks wait in a barrier, which would hang forever if the failing rank left them there.
#include <cstring>
#include <stdexcept>

#include "comm/grid.h"
#include "comm/world.h"

using optimus::comm::World;

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  return optimus::comm::run_main(argc, argv, [&](World& world) {
    if (std::strcmp(mode, "fail") == 0) {
      world.fail("every rank found this problem");
    } else if (std::strcmp(mode, "abort") == 0) {
      if (world.rank() == 1) world.abort("rank 1 alone found a problem");
      world.comm().barrier();
    } else if (std::strcmp(mode, "config-error") == 0) {
      optimus::comm::Grid2D grid(world.comm());
    } else if (std::strcmp(mode, "exception") == 0) {
      if (world.rank() == 2) throw std::runtime_error("thrown on rank 2 only");
      world.comm().barrier();
    } else {
      world.fail(std::string("unknown mode '") + mode + "'; use fail, abort, config-error or exception");
    }
    return 0;  // not reached in the four modes: each ends through fail or abort
  });
}
