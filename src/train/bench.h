// The benchmark of a stage (DESIGN §12; `optimus bench`): median training-step time (forward,
// backward, clipping, AdamW) and forward-only time over several steps after a warm-up, tokens/s,
// model FLOP/s by the formula (6N + 6·L·C·T) FLOPs per token, the fraction of this machine's
// measured matrix-product rate, and the ledger's peak memory by category. One JSON line per run.
#pragma once

#include <string>

#include "model/config.h"

namespace optimus::train {

struct BenchOptions {
  std::string model = "tiny";  // a named configuration (GPTConfig::named)
  int batch = 8;
  int steps = 7;   // measured steps (the median is reported)
  int warmup = 2;  // steps run first and not measured
};

/// Runs the serial benchmark and returns its JSON line.
std::string bench_serial(const BenchOptions& options);

/// The sgemm rate of this machine in GFLOP/s: the median of 5 products of 1024×1024 matrices.
double measure_matmul_gflops();

}  // namespace optimus::train
