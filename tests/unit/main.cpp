// The unit tests' main: Catch2's own.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
