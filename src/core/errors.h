// The project's error types. A ConfigError is bad input that every rank detects in
// the same way before any collective (a size not divisible, a world that is not a square, a file
// that does not fit): rank 0 reports its one-sentence message and every rank exits non-zero.
// Anything else that escapes on a single rank goes through World::abort, so no peer hangs.
#pragma once

#include <stdexcept>
#include <string>

namespace optimus::core {

/// Bad input or configuration: the message is one sentence naming the value and the fix.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws the message of a library call that failed (CUDA, cuBLAS, NCCL): which call, where, what
/// was expected, what came back, and what to do.
[[noreturn]] inline void call_failed(const std::string& library, const char* call, const char* file, int line,
                                     const char* expected, const std::string& got, const std::string& advice) {
  throw std::runtime_error(library + " call failed: " + call + " at " + file + ":" + std::to_string(line) +
                           ": expected " + expected + ", got " + got + "; " + advice);
}

}  // namespace optimus::core
