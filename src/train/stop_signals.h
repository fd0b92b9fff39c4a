// Pre-emption: a scheduler that wants its machines back sends SIGTERM (Slurm, at the end of a job's
// time or with --signal) or SIGUSR1 (which mpirun forwards to every rank). The trainer does not stop
// mid-step: the signal only raises a flag; at the end of each step the ranks agree whether any of
// them was signalled, and if so they all save a step checkpoint and exit with kExitStopped, from
// which --resume continues as if the run had never stopped. A sample (train --sample, optimus
// sample) is one process's work: it reads the flag itself before each token and stops at once.
#pragma once

#include "comm/world.h"

namespace optimus::train {

/// The exit code of a run stopped by a signal after saving its checkpoint (sysexits.h's
/// EX_TEMPFAIL: "try again later", which is what a requeued job does).
inline constexpr int kExitStopped = 75;

/// From its construction on, SIGTERM and SIGUSR1 set a flag instead of ending the process, until
/// the process ends: a signal that arrives as the last step ends, after the loop has stopped
/// asking, must not kill a run that has finished (only a sample reads the flag then). SIGINT is
/// left as it is (Ctrl-C ends the process at once). Constructing another one clears the flag.
class StopSignals {
 public:
  StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// Collective over the world: the signal any rank has received so far (the largest number when
  /// several), or 0. Every rank gets the same answer.
  int agreed(comm::World& world) const;

  /// The signal this process has received so far, or 0, without asking the other ranks: for work
  /// one process does alone (a sample), which stops at once.
  int received() const;

  /// "SIGTERM", "SIGUSR1" (or "a stop signal").
  static const char* name(int signal);
};

}  // namespace optimus::train
