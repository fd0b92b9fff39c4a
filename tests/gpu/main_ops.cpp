// The GPU op tests' main: Catch2's session, run only where there is a GPU. Without one it prints
// why and exits 77, which ctest reports as skipped (never as passed). Listing the tests (what
// catch_discover_tests does at build time) needs no GPU.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <optional>

#include "core/context.h"
#include "gpu_test.h"

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const Catch::ConfigData& config = session.configData();
  if (config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters) return session.run();

  if (optimus::core::cuda_device_count() == 0) {
    std::printf("skipped: no GPU to test the CUDA ops on (%s)\n", optimus::core::cuda_device_report().c_str());
    return gpu_test::kSkip;
  }
  std::printf("%s\n", optimus::core::cuda_device_report().c_str());
  optimus::core::MemoryLedger ledger;  // the GPU's memory
  gpu_test::the_cuda = optimus::core::cuda_context(ledger, 0);
  const int failed = session.run();
  gpu_test::the_cuda.reset();  // the stream and cuBLAS handle go before main returns, not at static destruction
  return failed == 0 ? 0 : 1;  // never 77 by accident
}
