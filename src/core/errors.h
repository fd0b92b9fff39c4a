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

}  // namespace optimus::core
