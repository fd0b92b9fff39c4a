// The model tests' main (checkpoint I/O): Catch2's own, in its own executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
