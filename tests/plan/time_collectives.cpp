// Times each collective of the project's own MpiCommunicator (the world of the job) at a list of
// sizes, for scripts/calibrate, which runs it under mpiexec at several rank counts and fits
// t = a + n·b per operation. Sizes n are the bytes the communication ledger records for the call:
// the buffer for all_reduce, broadcast and reduce, the whole gathered (or scattered) buffer for
// all_gather and reduce_scatter, so a fit applies directly to a ledger's counts.
//
// Usage: mpiexec -np P time_collectives REPEATS BYTES...
// Prints on rank 0, one line per (operation, size): "op ranks bytes median_seconds".
// A call's time is the slowest rank's, from a barrier to its return; the median of REPEATS calls
// after one unrecorded warm-up call.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "comm/world.h"

using optimus::comm::Communicator;
using optimus::comm::ReduceOp;
using optimus::comm::World;

namespace {

// One call of `op` as the slowest rank saw it, in seconds.
double time_call(Communicator& comm, const std::function<void()>& op) {
  comm.barrier();
  double t = MPI_Wtime();
  op();
  t = MPI_Wtime() - t;
  comm.all_reduce(&t, 1, ReduceOp::max);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int main(int argc, char** argv) {
  return optimus::comm::run_main(argc, argv, [&](World& world) {
    if (argc < 3) world.fail("usage: time_collectives REPEATS BYTES...");
    const int repeats = std::atoi(argv[1]);
    if (repeats < 1) world.fail("REPEATS must be at least 1");
    Communicator& comm = world.comm();
    const int64_t p = comm.size();

    for (int a = 2; a < argc; ++a) {
      const int64_t bytes = std::atoll(argv[a]);
      const int64_t n = bytes / 4;                        // floats in a whole buffer
      const int64_t block = std::max<int64_t>(n / p, 1);  // floats per rank (all_gather, reduce_scatter)
      std::vector<float> buf(n, 1.0f), whole(block * p, 1.0f), part(block, 1.0f);

      const std::vector<std::pair<std::string, std::function<void()>>> ops = {
          {"all_reduce", [&] { comm.all_reduce(buf.data(), n); }},
          {"broadcast", [&] { comm.broadcast(buf.data(), n, 0); }},
          {"reduce", [&] { comm.reduce(buf.data(), n, 0); }},
          {"all_gather", [&] { comm.all_gather(whole.data(), part.data(), block); }},
          {"reduce_scatter", [&] { comm.reduce_scatter(part.data(), whole.data(), block); }},
      };
      for (const auto& [name, op] : ops) {
        const int64_t recorded = (name == "all_gather" || name == "reduce_scatter") ? 4 * block * p : 4 * n;
        time_call(comm, op);  // warm-up: first-touch of the buffers, connection set-up
        std::vector<double> times;
        for (int r = 0; r < repeats; ++r) times.push_back(time_call(comm, op));
        world.print0("%s %lld %lld %.9e\n", name.c_str(), (long long)p, (long long)recorded, median(times));
      }
    }
    return 0;
  });
}
