// The stop flag and its handlers; the agreement is one all-reduce of an int per step.
#include "train/stop_signals.h"

#include <csignal>

namespace optimus::train {

namespace {

volatile std::sig_atomic_t received_signal = 0;  // the last stop signal this process received, or 0

extern "C" void on_stop_signal(int signal) {
  received_signal = signal;
}

}  // namespace

StopSignals::StopSignals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a signal must not fail a read or a collective half-way
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);
  received_signal = 0;
}

int StopSignals::agreed(comm::World& world) const {
  int signal = received_signal;
  world.comm().all_reduce(&signal, 1, comm::ReduceOp::max);
  return signal;
}

int StopSignals::received() const {
  return received_signal;
}

const char* StopSignals::name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "a stop signal";
  }
}

}  // namespace optimus::train
