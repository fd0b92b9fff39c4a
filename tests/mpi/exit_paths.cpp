// A program that ends through one of World's error exits, for the exit tests in CMakeLists.txt:
// `mpi_exit_paths fail|abort|config-error|exception|config-error-on-one-rank|agree-on|
// request-fails-in-unwinding`. In the one-rank cases the other ranks wait in a barrier, which would
// hang forever if the failing rank left them there.
#include <cstring>
#include <memory>
#include <stdexcept>

#include "comm/communicator.h"
#include "comm/grid.h"
#include "comm/world.h"
#include "core/errors.h"

using optimus::comm::World;

namespace {

// A started collective whose completion fails, as a device error would surface in wait().
class FailingPending : public optimus::comm::Pending {
 public:
  void wait() override { throw std::runtime_error("the transfer failed on rank 1"); }
  bool test() override { return false; }
};

}  // namespace

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
    } else if (std::strcmp(mode, "config-error-on-one-rank") == 0) {
      // A ConfigError meant for every rank, raised on one: fail() must not wait forever for the rest.
      if (world.rank() == 1) throw optimus::core::ConfigError("rank 1 alone cannot read its file");
      world.comm().barrier();
    } else if (std::strcmp(mode, "agree-on") == 0) {
      // The same check, failing on rank 2 only, agreed: every rank raises rank 2's message.
      world.agree_on([&] {
        if (world.rank() == 2) throw optimus::core::ConfigError("the file is missing on rank 2's node");
      });
      world.comm().barrier();
    } else if (std::strcmp(mode, "request-fails-in-unwinding") == 0) {
      // An exception unwinds past a Request still in flight whose wait fails: its destructor
      // must report that failure and end the job, not throw a second exception (terminate, no
      // message) nor swallow it (the peers may be waiting in the same collective).
      if (world.rank() == 1) {
        optimus::comm::Request in_flight(std::make_unique<FailingPending>());
        throw std::runtime_error("thrown on rank 1 while a collective is in flight");
      }
      world.comm().barrier();
    } else {
      world.fail(std::string("unknown mode '") + mode +
                 "'; use fail, abort, config-error, exception, config-error-on-one-rank, agree-on or "
                 "request-fails-in-unwinding");
    }
    return 0;  // not reached in the modes: each ends through fail or abort
  });
}
