// For the gpu tests written as scripts: prints the number of usable GPUs and exits 0, or says why
// there is none and exits 77 (gpu_test::kSkip), which ctest reports as skipped.
#include <cstdio>

#include "core/context.h"

int main() {
  const int gpus = optimus::core::cuda_device_count();
  if (gpus == 0) {
    std::printf("skipped: %s\n", optimus::core::cuda_device_report().c_str());
    return 77;
  }
  std::printf("%d\n", gpus);
  return 0;
}
