// The stop flag and its handlers; the agreement is one all-reduce of an int per step.
#include "train/stop_signals.h"

#include <csignal>
#include <stdexcept>

namespace optimus::train {

namespace {

volatile std::sig_atomic_t received = 0;  // the last stop signal this process received, or 0
struct sigaction previous_term, previous_usr1;
bool installed = false;

extern "C" void on_stop_signal(int signal) {
  received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  if (installed) throw std::logic_error("StopSignals: one at a time per process");
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a signal must not fail a read or a collective half-way
  sigaction(SIGTERM, &action, &previous_term);
  sigaction(SIGUSR1, &action, &previous_usr1);
  installed = true;
  received = 0;
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &previous_term, nullptr);
  sigaction(SIGUSR1, &previous_usr1, nullptr);
  installed = false;
}

int StopSignals::agreed(comm::World& world) const {
  int signal = received;
  world.comm().all_reduce(&signal, 1, comm::ReduceOp::max);
  return signal;
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
